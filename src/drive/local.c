/* drive/local: the drive API (drive.h) over a folder of a mounted filesystem: the vtable,
 * open, close, and reopen when the folder at the drive's path is replaced. Layout and key
 * escaping are documented in docs/FORMAT.md §2-3: bucket folders at the root, one folder
 * per key component (escaped when it is "", ".", ".." or starts with '%'), a key's record
 * "%m.<leaf>" beside its folder (or "%meta" inside it) and data folders "%d.<id>" inside
 * it, and .cairn.sys/ (format, bucket files, tmp/) beside the buckets. Every path is
 * resolved relative to the drive's root fd, so a long drive path does not eat into
 * PATH_MAX; reopen swaps the folder behind that same descriptor number. The operations
 * live in the local_*.c files by concern (local_int.h lists them). */
#include "drive/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* The system folders under the root (made where missing); clean: empty tmp first,
 * everything in it is garbage from a crash (FORMAT.md §2). */
static cn_err init_root(local_drive *d, bool clean)
{
	cn_err e = CN_OK;
	static const char *const dirs[] = { SYS_DIR, TMP_DIR, SYS_DIR "/buckets" };
	for (size_t i = 0; i < 3 && !e; i++)
		if (mkdirat(d->root_fd, dirs[i], 0755) < 0 && errno != EEXIST)
			e = cn_local__map_errno(d, errno, "creating folder", dirs[i]);
	if (!e && clean) {
		cn_local__pool_clear(d);
		char **names;
		size_t n;
		e = cn_local__list_dir(d, TMP_DIR, &names, NULL, &n);
		for (size_t i = 0; i < n && !e; i++) {
			char p[PATH_CAP];
			snprintf(p, sizeof p, TMP_DIR "/%s", names[i]);
			e = cn_local__remove_path(d, p);
		}
		if (n || names)
			cn_local__free_names(names, NULL, n);
	}
	for (int i = 0; i < TMP_SHARDS && !e; i++) {
		char p[64];
		snprintf(p, sizeof p, TMP_DIR "/%02x", i);
		if (mkdirat(d->root_fd, p, 0755) < 0 && errno != EEXIST)
			e = cn_local__map_errno(d, errno, "creating folder", p);
	}
	return e;
}

/* Whether the folder open as fd (stat st) is the root of a mounted filesystem: its parent
 * ("..", which crosses the mount) lies on another device. */
static bool is_mount_root(int fd, const struct stat *st)
{
	struct stat up;
	return fstatat(fd, "..", &up, 0) == 0 && up.st_dev != st->st_dev;
}

static void note_root(local_drive *d, int fd, const struct stat *st)
{
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->mount_root = is_mount_root(fd, st);
	d->warned_bare = false;
}

/* What the drive's path names now, against the folder in use (*st: the path's stat). */
enum { PATH_SAME, PATH_OTHER, PATH_NONE };
static int path_now(local_drive *d, struct stat *st)
{
	if (stat(d->base.endpoint, st) < 0 || !S_ISDIR(st->st_mode))
		return PATH_NONE; /* not there (a missing mount stays missing: never created here) */
	if (st->st_dev == d->dev && st->st_ino == d->ino)
		return PATH_SAME;
	if (d->mount_root) {
		/* the drive was a disk's root: a folder of the parent filesystem at its path is
		 * the mount point with nothing mounted on it, never a drive */
		char up[sizeof d->base.endpoint + 4];
		struct stat ust;
		snprintf(up, sizeof up, "%s/..", d->base.endpoint);
		if (stat(up, &ust) < 0 || ust.st_dev == st->st_dev) {
			if (!d->warned_bare)
				cn_log(CN_LOG_ERROR, NULL, "drive %s: its disk is no longer mounted there (the "
				       "path is a folder of the parent filesystem now); not used in its place",
				       d->base.endpoint);
			d->warned_bare = true;
			return PATH_NONE;
		}
	}
	return PATH_OTHER;
}

/* Whether reopen would switch folders (below). */
static bool local_replaced(cn_drive *dd)
{
	local_drive *d = L(dd);
	struct stat st, now;
	bool alive = fstat(d->root_fd, &st) == 0 && st.st_nlink > 0;
	int what = path_now(d, &now);
	return what == PATH_OTHER || (!alive && what == PATH_SAME);
}

/* A folder removed under us and made again at the same path (rm -rf + mkdir, a disk
 * swapped under its mount point), or another folder at the path while the old one lives
 * (replaced): dup3 puts the new folder behind the same descriptor number, so calls in
 * flight see the old folder or the new one, never a reused number. A live root still at
 * its path only gets its system folders back (contents wiped, folder kept). */
static cn_err local_reopen(cn_drive *dd)
{
	local_drive *d = L(dd);
	struct stat st, now;
	bool alive = fstat(d->root_fd, &st) == 0 && st.st_nlink > 0;
	int what = path_now(d, &now);
	if (alive && what != PATH_OTHER)
		return init_root(d, false);
	if (what == PATH_NONE)
		return CN_ERR_OFFLINE;
	int fd = open(d->base.endpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return CN_ERR_OFFLINE;
	syncgroup *g = NULL;
	if (fstat(fd, &st) < 0 || st.st_nlink == 0 || st.st_dev != now.st_dev ||
	    st.st_ino != now.st_ino || !(g = cn_local__group_get(st.st_dev))) {
		close(fd); /* gone, or changed again since the stat: the next check sees it */
		return g ? CN_ERR_OFFLINE : CN_ERR_NOMEM;
	}
	if (dup3(fd, d->root_fd, O_CLOEXEC) < 0) {
		cn_err e = cn_local__map_errno(d, errno, "re-opening", ".");
		close(fd);
		cn_local__group_put(g);
		return e;
	}
	note_root(d, fd, &st);
	close(fd);
	if (g == d->sg)
		cn_local__group_put(g); /* same filesystem: keep the one reference */
	else
		d->sg = g; /* another one: the old group stays (a sync may still be using it) */
	if (d->absent) {
		cn_log(CN_LOG_WARN, NULL, "drive %s: a folder is at its path now: opened", d->base.endpoint);
		d->absent = false;
	} else if (alive)
		cn_log(CN_LOG_WARN, NULL, "drive %s: another folder is at its path now (the old one was "
		       "moved away or its disk detached): re-opened there", d->base.endpoint);
	else
		cn_log(CN_LOG_WARN, NULL, "drive %s: the folder was removed and made again: re-opened",
		       d->base.endpoint);
	return init_root(d, true);
}

static cn_err local_info(cn_drive *dd, cn_drive_info *out)
{
	local_drive *d = L(dd);
	struct statvfs sv;
	memset(out, 0, sizeof *out);
	if (fstatvfs(d->root_fd, &sv) < 0)
		return cn_local__map_errno(d, errno, "statvfs", ".");
	out->total = (uint64_t)sv.f_blocks * sv.f_frsize;
	out->free = (uint64_t)sv.f_bavail * sv.f_frsize;
	out->used = out->total - (uint64_t)sv.f_bfree * sv.f_frsize;
	/* a drive folder removed under us (unmounted disk, rm -rf) is not a drive any more:
	 * its "no such key" answers must not count */
	struct stat st, up;
	out->online = fstat(d->root_fd, &st) == 0 && st.st_nlink > 0;
	if (out->online && fstatat(d->root_fd, "..", &up, 0) == 0) {
		out->fs_id = (uint64_t)st.st_dev + 1; /* never 0 ("unknown") */
		out->parent_fs_id = (uint64_t)up.st_dev + 1;
	}
	return CN_OK;
}

static bool local_online(cn_drive *dd)
{
	struct stat st;
	return fstat(L(dd)->root_fd, &st) == 0 && st.st_nlink > 0;
}

static void local_close(cn_drive *dd)
{
	local_drive *d = L(dd);
	close(d->root_fd);
	cn_local__group_put(d->sg);
	pthread_mutex_destroy(&d->pool.mu);
	free(d);
}

static const cn_drive_ops local_ops = {
	.close = local_close,
	.info = local_info,
	.online = local_online,
	.reopen = local_reopen,
	.replaced = local_replaced,
	.read_sys = cn_local__read_sys,
	.write_sys = cn_local__write_sys,
	.remove_sys = cn_local__remove_sys,
	.make_vol = cn_local__make_vol,
	.stat_vol = cn_local__stat_vol,
	.delete_vol = cn_local__delete_vol,
	.purge_vol = cn_local__purge_vol,
	.list_vols = cn_local__list_vols,
	.create_file = cn_local__create_file,
	.file_write = cn_local__file_write,
	.file_close = cn_local__file_close,
	.abort_tmp = cn_local__abort_tmp,
	.rename_data = cn_local__rename_data,
	.prev_keep = cn_local__prev_keep,
	.prev_read = cn_local__prev_read,
	.prev_drop = cn_local__prev_drop,
	.read_meta = cn_local__read_meta,
	.delete_meta = cn_local__delete_meta,
	.delete_data = cn_local__delete_data,
	.open_data = cn_local__open_data,
	.rfile_read = cn_local__rfile_read,
	.rfile_fd = cn_local__rfile_fd,
	.rfile_size = cn_local__rfile_size,
	.rfile_close = cn_local__rfile_close,
	.walk = cn_local__walk,
	.version_keep = cn_local__version_keep,
	.version_read = cn_local__version_read,
	.version_list = cn_local__version_list,
	.data_list = cn_local__data_list,
	.data_keys = cn_local__data_keys,
	.version_delete = cn_local__version_delete,
	.version_promote = cn_local__version_promote,
	.version_write = cn_local__version_write,
	.move_data = cn_local__move_data,
	.upload_write = cn_local__upload_write,
	.upload_read = cn_local__upload_read,
	.upload_list = cn_local__upload_list,
	.upload_take = cn_local__upload_take,
	.upload_link = cn_local__upload_link,
	.upload_remove = cn_local__upload_remove,
	.sync = cn_local__sync,
	.sync_group = cn_local__sync_group,
};

/* A local drive over the folder open as fd (its stat st), which it takes: NULL when out of
 * memory (fd closed then). */
static local_drive *local_new(const char *path, bool durable, int fd, const struct stat *st)
{
	local_drive *d = calloc(1, sizeof *d);
	if (!d) {
		close(fd);
		return NULL;
	}
	d->base.ops = &local_ops;
	snprintf(d->base.endpoint, sizeof d->base.endpoint, "%s", path);
	d->root_fd = fd;
	d->durable = durable;
	pthread_mutex_init(&d->pool.mu, NULL);
	/* syncfs group commit by default: measured faster than per-request fsyncs on these
	 * machines (docs/PERF.md); CAIRN_SYNC=fsync for drives shared with other busy
	 * programs, whose dirty data a syncfs would flush too. */
	const char *m = getenv("CAIRN_SYNC");
	d->sync_mode_full = !(m && strcmp(m, "fsync") == 0);
	d->base.writes_sync = durable && !d->sync_mode_full;
	d->sg = cn_local__group_get(st->st_dev);
	if (!d->sg) {
		close(fd);
		pthread_mutex_destroy(&d->pool.mu);
		free(d);
		return NULL;
	}
	note_root(d, fd, st);
	return d;
}

cn_err cn_drive_local_open_absent(const char *path, bool durable, cn_drive **out)
{
	*out = NULL;
	const char *dir = getenv("TMPDIR");
	char tmpl[PATH_CAP];
	snprintf(tmpl, sizeof tmpl, "%s/cairn-absent-XXXXXX", dir && *dir ? dir : "/tmp");
	if (!mkdtemp(tmpl))
		return CN_ERR_IO;
	int fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rmdir(tmpl); /* the placeholder no longer exists: nothing can be made in it */
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_nlink != 0) {
		if (fd >= 0)
			close(fd);
		return CN_ERR_IO;
	}
	local_drive *d = local_new(path, durable, fd, &st);
	if (!d)
		return CN_ERR_NOMEM;
	d->absent = true;
	*out = &d->base;
	return CN_OK;
}

cn_err cn_drive_local_open(const char *path, bool durable, cn_drive **out)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		cn_log(CN_LOG_ERROR, NULL, "drive %s: creating folder: %s", path, strerror(errno));
		return errno == ENOSPC ? CN_ERR_NOSPACE : CN_ERR_OFFLINE;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		cn_log(CN_LOG_ERROR, NULL, "drive %s: opening: %s", path, strerror(errno));
		return CN_ERR_OFFLINE;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return CN_ERR_NOMEM; /* no group without the folder's device */
	}
	local_drive *d = local_new(path, durable, fd, &st);
	if (!d)
		return CN_ERR_NOMEM;
	cn_err e = init_root(d, true);
	if (e) {
		local_close(&d->base);
		return e;
	}
	*out = &d->base;
	return CN_OK;
}
