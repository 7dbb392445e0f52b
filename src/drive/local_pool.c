/* drive/local_pool: the pool of freed record files, reused by the next small write.
 * ext4 without a journal (these machines' disks) does not reuse an inode freed in the last
 * minute (five while its inode-table block is dirty), and every allocation scans past each
 * such inode from the start of its group (fs/ext4/ialloc.c, find_inode_bit ->
 * recently_deleted): after many deletes, each new record file costs a long walk of inode
 * tables (perf: 28 % of all samples of 4 KiB PUTs on 16 drives after a DELETE phase). So a
 * deleted current record is renamed into tmp as a pool file rather than unlinked, and the
 * next small write reuses it (open + truncate + write + rename: no inode allocated or
 * freed; any filesystem saves the inode churn).
 *  POOL-1. Only a file with one link is pooled: a record also linked as a noncurrent version
 *      (version_keep) is unlinked, never rewritten.
 *  POOL-2. Record files are never held open past cn_local__read_file_at (read whole, then
 *      closed), so no reader sees a pooled inode rewritten under it.
 *  POOL-3. Pool files are tmp garbage: lost on a crash (tmp is emptied at open) and forgotten
 *      when tmp is; a pool name whose file is gone (a wiped drive) fails to open and the
 *      write creates its file as usual.
 *  POOL-4. The pool holds at most POOL_MAX files of at most POOL_KEEP_BYTES each (a larger
 *      record is truncated as it is pooled): deleting objects frees their space but for
 *      at most 16 MiB per drive. */
#include "drive/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static void pool_path(char *out, size_t cap, uint32_t id)
{
	int n = snprintf(out, cap, TMP_DIR "/%02x/p%u", id % TMP_SHARDS, id);
	CN_ASSERT(n > 0 && (size_t)n < cap);
}

/* A pool file to reuse, or false when the pool is empty. */
static bool pool_take(local_drive *d, uint32_t *id)
{
	pthread_mutex_lock(&d->pool.mu);
	bool ok = d->pool.n > 0;
	if (ok)
		*id = d->pool.ids[--d->pool.n];
	pthread_mutex_unlock(&d->pool.mu);
	return ok;
}

/* A new pool name for a record about to be freed, or false when the pool is full. */
static bool pool_name(local_drive *d, uint32_t *id)
{
	pthread_mutex_lock(&d->pool.mu);
	bool ok = d->pool.n < POOL_MAX;
	if (ok)
		*id = d->pool.next++;
	pthread_mutex_unlock(&d->pool.mu);
	return ok;
}

/* Puts the file renamed to pool name id into the pool (unlinked when it filled meanwhile). */
static void pool_give(local_drive *d, uint32_t id)
{
	pthread_mutex_lock(&d->pool.mu);
	bool ok = d->pool.n < POOL_MAX;
	if (ok)
		d->pool.ids[d->pool.n++] = id;
	pthread_mutex_unlock(&d->pool.mu);
	if (!ok) {
		char p[64];
		pool_path(p, sizeof p, id);
		unlinkat(d->root_fd, p, 0);
	}
}

/* A pool file opened for writing a new record (truncated), its path in path[0..cap); -1
 * when the pool is empty or none of its files opens (POOL-3: a wiped drive). */
int cn_local__pool_open(local_drive *d, char *path, size_t cap)
{
	uint32_t id;
	while (pool_take(d, &id)) {
		pool_path(path, cap, id);
		int fd = openat(d->root_fd, path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* Removes the record file at path: into the pool when it has no other link (POOL-1), else
 * unlinked. CN_ERR_NO_KEY when absent. */
cn_err cn_local__retire_record(local_drive *d, const char *path)
{
	struct stat st;
	uint32_t id;
	char pp[64];
	if (fstatat(d->root_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_nlink == 1 && pool_name(d, &id)) {
		pool_path(pp, sizeof pp, id);
		if (renameat(d->root_fd, path, d->root_fd, pp) == 0) {
			if (st.st_size > POOL_KEEP_BYTES) { /* its blocks are freed now (POOL-4) */
				int fd = openat(d->root_fd, pp, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
				if (fd >= 0)
					close(fd);
			}
			pool_give(d, id);
			return CN_OK;
		}
	}
	if (unlinkat(d->root_fd, path, 0) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return CN_ERR_NO_KEY;
		return cn_local__map_errno(d, errno, "removing record", path);
	}
	return CN_OK;
}

/* Forgets every pool file: their files go with tmp when it is emptied (POOL-3). */
void cn_local__pool_clear(local_drive *d)
{
	pthread_mutex_lock(&d->pool.mu);
	d->pool.n = 0;
	pthread_mutex_unlock(&d->pool.mu);
}
