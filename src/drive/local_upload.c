/* drive/local_upload: multipart uploads on the local drive (FORMAT.md §6): one folder
 * per upload, .cairn.sys/multipart/<vol>/<upload id>/, holding its parts' files and
 * metadata. A file is written to a hidden tmp name in the upload's folder and renamed
 * within it, so an upload removed meanwhile makes the write fail instead of bringing it
 * back. Removing an upload renames its folder into tmp at once; a detached thread then
 * deletes the tree off the request path. */
#include "drive/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
