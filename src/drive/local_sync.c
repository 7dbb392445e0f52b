/* drive/local_sync: the local drive's durability. By default a sync() is a group commit
 * per filesystem (DESIGN.md §4): after its renames a request calls sync(); one leader
 * runs syncfs(root_fd), which on ext4/xfs commits file data, inodes and directory entries
 * of the whole filesystem; the others sleep on a futex word. With CAIRN_SYNC=fsync each
 * request fsyncs only what it changed (FSYNC-1, below).
 * Invariants:
 *  SYNC-1. started/completed count flushes; only one flush runs at a time.
 *  SYNC-2. A caller needs a flush that STARTED after it entered sync() (its renames are
 *      complete then), i.e. generation target = started + 1 read under the mutex; it
 *      returns once completed >= target.
 *  SYNC-3. A failed flush marks failed_gen; every caller whose target <= failed_gen fails
 *      (conservative: it may blame a caller whose own flush succeeded).
 *  SYNC-5. Waiters sleep on wake[target & 1]: outstanding targets are only completed + 1 and
 *      completed + 2, so the two words never mix generations. A finished flush wakes its
 *      own generation's waiters (they return without taking the mutex) and, when the next
 *      generation has waiters, exactly one of them, which leads it. (A condition
 *      broadcast would wake every waiter of both generations, all queueing for the
 *      mutex: ~2.6 context switches per durable PUT in the group commit instead of ~1,
 *      docs/PERF.md.)
 * Measured (tests/unit/object/bench_put.c): 32 threads of 4 KiB puts on
 * a 2-core VM (ext4, virtio): 4462 puts/s without the barrier, 1642 puts/s with it. */
#include "drive/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t groups_mu = PTHREAD_MUTEX_INITIALIZER;
static syncgroup *groups;

syncgroup *cn_local__group_get(dev_t dev)
{
	pthread_mutex_lock(&groups_mu);
	syncgroup *g = groups;
	while (g && g->dev != dev)
		g = g->next;
	if (!g && (g = calloc(1, sizeof *g))) {
		g->dev = dev;
		pthread_mutex_init(&g->mu, NULL);
		g->next = groups;
		groups = g;
	}
	if (g)
		g->refs++;
	pthread_mutex_unlock(&groups_mu);
	return g;
}

void cn_local__group_put(syncgroup *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&groups_mu);
	if (--g->refs == 0) {
		syncgroup **pp = &groups;
		while (*pp != g)
			pp = &(*pp)->next;
		*pp = g->next;
		pthread_mutex_destroy(&g->mu);
		free(g);
	}
	pthread_mutex_unlock(&groups_mu);
}

static void futex_wait_u32(_Atomic uint32_t *w, uint32_t seen)
{
	/* Returns on a wake, a changed word (EAGAIN), a signal or a spurious wake-up: callers
	 * re-check their condition. */
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake_u32(_Atomic uint32_t *w, int n)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* SYNC-4: one group per filesystem; its syncfs runs on the fd of whichever drive leads. SYNC-5:
 * who sleeps where and who is woken. */
static cn_err syncfs_group(local_drive *d)
{
	syncgroup *g = d->sg;
	pthread_mutex_lock(&g->mu);
	g->barriers++;
	uint64_t target = g->started + 1; /* SYNC-2 */
	int par = (int)(target & 1);
	while (atomic_load(&g->completed) < target) {
		if (g->running) {
			/* A flush runs: it is target - 1 (we need the next) or target itself (a
			 * waiter handed the lead, then someone else took it first). */
			if (target == g->started + 1)
				g->want_next[par] = true;
			uint32_t seen = atomic_load(&g->wake[par]);
			pthread_mutex_unlock(&g->mu);
			futex_wait_u32(&g->wake[par], seen);
			if (atomic_load(&g->completed) >= target)
				goto done; /* woken with our generation: no mutex needed */
			pthread_mutex_lock(&g->mu);
			continue;
		}
		/* No flush runs and ours has not completed: started == completed == target - 1
		 * (SYNC-1, SYNC-2), so the flush we start is ours. */
		g->running = true;
		uint64_t gen = ++g->started;
		g->want_next[par] = false;
		pthread_mutex_unlock(&g->mu);
		int rc = syncfs(d->root_fd);
		int err = errno;
		pthread_mutex_lock(&g->mu);
		g->running = false;
		g->flushes++;
		if (rc < 0) {
			atomic_store(&g->failed_gen, gen);
			cn_log(CN_LOG_ERROR, NULL, "drive %s: syncfs: %s", d->base.endpoint, strerror(err));
		}
		atomic_store(&g->completed, gen);
		int next = (int)((gen + 1) & 1);
		bool handoff = g->want_next[next];
		g->want_next[next] = false;
		/* Bumped under the mutex, so a waiter that read the word before sleeping either
		 * sleeps already (and is woken below) or finds it changed and does not sleep. */
		atomic_fetch_add(&g->wake[par], 1);
		if (handoff)
			atomic_fetch_add(&g->wake[next], 1);
		pthread_mutex_unlock(&g->mu);
		futex_wake_u32(&g->wake[par], INT32_MAX);
		if (handoff)
			futex_wake_u32(&g->wake[next], 1); /* one leader for the next generation */
		goto done;
	}
	pthread_mutex_unlock(&g->mu);
done:
	return atomic_load(&g->failed_gen) >= target ? CN_ERR_IO : CN_OK; /* SYNC-3 */
}

/* Targeted durability (CAIRN_SYNC=fsync). Instead of flushing the whole filesystem, each
 * request syncs exactly what it changed: file contents are fdatasync'ed when written
 * (file_close(keep), the record in rename_data), and the folders whose entries changed
 * are remembered per thread and fsync'ed by sync(). Concurrent requests' fsyncs share
 * ext4/xfs journal commits, which is the group commit; it also keeps one tenant's sync
 * from flushing everybody else's dirty data on a shared filesystem (a syncfs does:
 * docs/PERF.md). Operations that are rare and touch system files (volumes, format,
 * bucket files) set need_full, and sync() then runs the syncfs group commit above.
 *  FSYNC-1. An entry is added after the change it covers; sync() fsyncs every entry recorded
 *      by the calling thread for that drive and clears them, so a request's own changes
 *      are durable when its sync() returns CN_OK. */
#define PENDING_MAX 24
#define PENDING_DIR_CAP 1200   /* longer folder paths fall back to a syncfs */
#define PENDING_SLOTS 16       /* drives with unsynced changes per thread (a set's drives) */
typedef struct pending_slot {
	local_drive *d;
	bool need_full;
	int n;
	char dirs[PENDING_MAX][PENDING_DIR_CAP];
} pending_slot;
static __thread pending_slot pendings[PENDING_SLOTS];

static cn_err fsync_dir(local_drive *d, const char *path)
{
	int fd = openat(d->root_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return CN_OK; /* removed since (a delete won): nothing left to persist */
		return cn_local__map_errno(d, errno, "opening folder to sync", path);
	}
	cn_err e = CN_OK;
	if (fsync(fd) < 0)
		e = cn_local__map_errno(d, errno, "syncing folder", path);
	close(fd);
	return e;
}

/* Syncs and clears one slot (FSYNC-1). */
static cn_err pending_flush(pending_slot *p)
{
	cn_err e = CN_OK;
	/* deepest folders were recorded last; any order is correct */
	for (int i = p->n - 1; i >= 0; i--) {
		cn_err e2 = fsync_dir(p->d, p->dirs[i]);
		if (e2 && !e)
			e = e2;
	}
	p->n = 0;
	if (p->need_full) {
		p->need_full = false;
		cn_err e2 = syncfs_group(p->d);
		if (e2 && !e)
			e = e2;
	}
	return e;
}

/* The calling thread's slot for d; create: take a free one, else flush the oldest-used
 * other slot now (its changes become durable early, which is always allowed). NULL only
 * when !create and d has none. */
static pending_slot *pending_slot_of(local_drive *d, bool create)
{
	pending_slot *free_slot = NULL;
	for (int i = 0; i < PENDING_SLOTS; i++) {
		if (pendings[i].d == d)
			return &pendings[i];
		if (!free_slot && (!pendings[i].d || (!pendings[i].n && !pendings[i].need_full)))
			free_slot = &pendings[i];
	}
	if (!create)
		return NULL;
	if (!free_slot) {
		free_slot = &pendings[0];
		pending_flush(free_slot);
	}
	free_slot->d = d;
	free_slot->n = 0;
	free_slot->need_full = false;
	return free_slot;
}

void cn_local__pending_dir(local_drive *d, const char *dir, size_t len)
{
	if (!d->durable || d->sync_mode_full)
		return;
	pending_slot *p = pending_slot_of(d, true);
	for (int i = 0; i < p->n; i++)
		if (strlen(p->dirs[i]) == len && memcmp(p->dirs[i], dir, len) == 0)
			return;
	if (p->n == PENDING_MAX || len >= PENDING_DIR_CAP) {
		p->need_full = true;
		return;
	}
	memcpy(p->dirs[p->n], dir, len);
	p->dirs[p->n][len] = 0;
	p->n++;
}

void cn_local__pending_full(local_drive *d)
{
	if (!d->durable)
		return;
	pending_slot_of(d, true)->need_full = true;
}

cn_err cn_local__sync_fd(local_drive *d, int fd, const char *path)
{
	if (!d->durable || d->sync_mode_full)
		return CN_OK;
	if (fdatasync(fd) < 0)
		return cn_local__map_errno(d, errno, "syncing", path);
	return CN_OK;
}

cn_err cn_local__sync(cn_drive *dd)
{
	local_drive *d = L(dd);
	if (!d->durable)
		return CN_OK;
	if (d->sync_mode_full)
		return syncfs_group(d);
	pending_slot *p = pending_slot_of(d, false);
	cn_err e = p ? pending_flush(p) : CN_OK;
	if (p)
		p->d = NULL;
	return e;
}


/* What one sync() of this drive makes durable beyond itself: in syncfs mode the whole
 * filesystem (every drive of the group); in targeted mode only its own changes. */
const void *cn_local__sync_group(cn_drive *dd)
{
	local_drive *d = L(dd);
	return d->sync_mode_full ? (const void *)d->sg : (const void *)d;
}

void cn_drive_local_sync_gens(cn_drive *dd, uint64_t *started, uint64_t *completed)
{
	local_drive *d = L(dd);
	pthread_mutex_lock(&d->sg->mu);
	*started = d->sg->started;
	*completed = atomic_load(&d->sg->completed);
	pthread_mutex_unlock(&d->sg->mu);
}

void cn_drive_local_sync_stats(cn_drive *dd, uint64_t *barriers, uint64_t *flushes)
{
	local_drive *d = L(dd);
	pthread_mutex_lock(&d->sg->mu);
	*barriers = d->sg->barriers;
	*flushes = d->sg->flushes;
	pthread_mutex_unlock(&d->sg->mu);
}
