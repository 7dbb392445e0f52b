/* drive/local: the drive API (drive.h) over a folder of a mounted filesystem. Layout and
 * key escaping are documented in docs/FORMAT.md §2-3: bucket folders at the root, one
 * folder per key component (escaped when it is "", ".", ".." or starts with '%'), the
 * record "%meta" and data folders "%d.<id>" inside the key's folder, and .cairn.sys/
 * (format, bucket files, tmp/) beside the buckets. Every path is resolved relative to the
 * drive's root fd, so a long drive path does not eat into PATH_MAX. */
#include "drive/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#define MP_DIR ".cairn.sys/multipart"

/* ".cairn.sys/multipart/<vol>[/<upload_id>[/<name>]]" into out; false on a bad name. */
static bool upload_path(char *out, size_t cap, const char *vol, const char *upload_id,
                        const char *name)
{
	if (!cn_local__vol_ok(vol) || (upload_id && !cn_local__id_ok(upload_id)) ||
	    (name && !cn_local__id_ok(name)))
		return false;
	int n;
	if (!upload_id)
		n = snprintf(out, cap, MP_DIR "/%s", vol);
	else if (!name)
		n = snprintf(out, cap, MP_DIR "/%s/%s", vol, upload_id);
	else
		n = snprintf(out, cap, MP_DIR "/%s/%s/%s", vol, upload_id, name);
	return n > 0 && (size_t)n < cap;
}

cn_err cn_local__upload_write(cn_drive *dd, const char *vol, const char *upload_id,
                              const char *name, bool create, const void *p, size_t len)
{
	local_drive *d = L(dd);
	char dir[PATH_CAP], path[PATH_CAP], tmp[PATH_CAP + 48], id[33];
	if (!upload_path(dir, sizeof dir, vol, upload_id, NULL) ||
	    !upload_path(path, sizeof path, vol, upload_id, name))
		return CN_ERR_INVALID;
	if (create) {
		char parent[PATH_CAP];
		upload_path(parent, sizeof parent, vol, NULL, NULL);
		if (mkdirat(d->root_fd, MP_DIR, 0755) < 0 && errno != EEXIST)
			return cn_local__map_errno(d, errno, "creating folder", MP_DIR);
		if (mkdirat(d->root_fd, parent, 0755) < 0 && errno != EEXIST)
			return cn_local__map_errno(d, errno, "creating folder", parent);
		if (mkdirat(d->root_fd, dir, 0755) < 0 && errno != EEXIST)
			return cn_local__map_errno(d, errno, "creating folder", dir);
		cn_local__pending_full(d); /* new folders: rare (one per upload) */
	}
	/* the tmp file sits in the upload folder itself: a rename within one folder, and an
	 * upload that is gone makes the create fail instead of resurrecting it */
	cn_drive_random_id(id);
	snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, id);
	int fd = openat(d->root_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return errno == ENOENT ? CN_ERR_NOT_FOUND
		                       : cn_local__map_errno(d, errno, "creating", tmp);
	cn_err e = cn_local__write_all(d, fd, p, len, tmp);
	if (!e)
		e = cn_local__sync_fd(d, fd, tmp);
	if (close(fd) < 0 && !e)
		e = cn_local__map_errno(d, errno, "closing", tmp);
	if (!e && renameat(d->root_fd, tmp, d->root_fd, path) < 0)
		e = errno == ENOENT ? CN_ERR_NOT_FOUND
		                    : cn_local__map_errno(d, errno, "renaming into", path);
	if (e)
		unlinkat(d->root_fd, tmp, 0);
	else
		cn_local__pending_dir(d, dir, strlen(dir));
	return e;
}

cn_err cn_local__upload_read(cn_drive *dd, const char *vol, const char *upload_id,
                             const char *name, size_t max, cn_buf *out)
{
	char path[PATH_CAP];
	if (!upload_path(path, sizeof path, vol, upload_id, name))
		return CN_ERR_NOT_FOUND;
	return cn_local__read_file_at(L(dd), path, max, out, CN_ERR_NOT_FOUND);
}

cn_err cn_local__upload_list(cn_drive *dd, const char *vol, const char *upload_id,
                             char ***names, size_t *n)
{
	char path[PATH_CAP];
	*names = NULL;
	*n = 0;
	if (!upload_path(path, sizeof path, vol, upload_id, NULL))
		return upload_id ? CN_ERR_NOT_FOUND : CN_OK;
	bool *isdir;
	char **all;
	size_t na;
	cn_err e = cn_local__list_dir(L(dd), path, &all, &isdir, &na);
	if (e == CN_ERR_NOT_FOUND && !upload_id)
		return CN_OK;
	if (e)
		return e;
	/* uploads are folders, files are files; hidden names are in-flight tmp files */
	size_t k = 0;
	for (size_t i = 0; i < na; i++) {
		if (all[i][0] == '.' || isdir[i] != (upload_id == NULL)) {
			free(all[i]);
			continue;
		}
		all[k++] = all[i];
	}
	free(isdir);
	*names = all;
	*n = k;
	return CN_OK;
}

cn_err cn_local__upload_take(cn_drive *dd, const char *tmp_id, const char *data_id,
                             const char *src, const char *vol, const char *upload_id,
                             const char *dst)
{
	local_drive *d = L(dd);
	char from[PATH_CAP], to[PATH_CAP], dir[PATH_CAP], rest[256];
	if (!cn_local__id_ok(tmp_id) || !cn_local__id_ok(data_id) || !cn_local__id_ok(src) ||
	    !upload_path(to, sizeof to, vol, upload_id, dst) ||
	    !upload_path(dir, sizeof dir, vol, upload_id, NULL))
		return CN_ERR_INVALID;
	snprintf(rest, sizeof rest, TMP_DATA "/%s", src);
	cn_local__tmp_path(from, sizeof from, tmp_id, rest);
	cn_err e = CN_OK;
	if (renameat(d->root_fd, from, d->root_fd, to) < 0)
		e = errno == ENOENT ? CN_ERR_NOT_FOUND
		                    : cn_local__map_errno(d, errno, "renaming part into", to);
	else
		cn_local__pending_dir(d, dir, strlen(dir));
	cn_local__abort_tmp(dd, tmp_id);
	return e;
}

cn_err cn_local__upload_link(cn_drive *dd, const char *vol, const char *upload_id,
                             const char *src, const char *tmp_id, const char *data_id,
                             const char *dst)
{
	local_drive *d = L(dd);
	char from[PATH_CAP], to[PATH_CAP], rest[256];
	if (!cn_local__id_ok(tmp_id) || !cn_local__id_ok(data_id) || !cn_local__id_ok(dst) ||
	    !upload_path(from, sizeof from, vol, upload_id, src))
		return CN_ERR_INVALID;
	cn_local__tmp_path(to, sizeof to, tmp_id, TMP_DATA);
	if (mkdirat(d->root_fd, to, 0755) < 0 && errno != EEXIST)
		return cn_local__map_errno(d, errno, "creating folder", to);
	snprintf(rest, sizeof rest, TMP_DATA "/%s", dst);
	cn_local__tmp_path(to, sizeof to, tmp_id, rest);
	if (linkat(d->root_fd, from, d->root_fd, to, 0) < 0) {
		if (errno == ENOENT)
			return CN_ERR_NOT_FOUND;
		return cn_local__map_errno(d, errno, "linking part", from);
	}
	return CN_OK;
}

/* Trees renamed into tmp (finished uploads) are removed off the request path: a detached
 * thread per tree, working through its own descriptor of the tmp folder (still valid when
 * the drive closes; a tree left by an exit is tmp garbage, removed at the next open). */
typedef struct trash {
	int fd;
	char name[64];
} trash;

static int trash_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	remove(p);
	return 0;
}

static void *trash_run(void *arg)
{
	trash *t = arg;
	char path[128];
	snprintf(path, sizeof path, "/proc/self/fd/%d/%s", t->fd, t->name);
	nftw(path, trash_rm, 16, FTW_DEPTH | FTW_PHYS);
	close(t->fd);
	free(t);
	return NULL;
}

/* tmp_rel: a name directly under TMP_DIR. */
static void trash_later(local_drive *d, const char *tmp_rel)
{
	trash *t = calloc(1, sizeof *t);
	pthread_t th;
	pthread_attr_t at;
	if (t && snprintf(t->name, sizeof t->name, "%s", tmp_rel) < (int)sizeof t->name &&
	    (t->fd = openat(d->root_fd, TMP_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		bool ok = cn_thread_create(&th, &at, trash_run, t) == 0;
		pthread_attr_destroy(&at);
		if (ok)
			return;
		close(t->fd);
	}
	free(t);
	char path[160];
	snprintf(path, sizeof path, TMP_DIR "/%s", tmp_rel);
	cn_local__remove_path(d, path); /* no thread: remove it now */
}

cn_err cn_local__upload_remove(cn_drive *dd, const char *vol, const char *upload_id)
{
	local_drive *d = L(dd);
	char path[PATH_CAP], tmp[128], id[33];
	if (!upload_path(path, sizeof path, vol, upload_id, NULL))
		return CN_OK;
	/* rename away first, so the upload disappears at once; the rest is tmp garbage */
	cn_drive_random_id(id);
	snprintf(tmp, sizeof tmp, TMP_DIR "/%s.mp", id);
	if (renameat(d->root_fd, path, d->root_fd, tmp) < 0) {
		if (errno == ENOENT)
			return CN_OK;
		return cn_local__map_errno(d, errno, "removing upload", path);
	}
	cn_local__pending_full(d);
	snprintf(tmp, sizeof tmp, "%s.mp", id);
	trash_later(d, tmp);
	return CN_OK;
}
