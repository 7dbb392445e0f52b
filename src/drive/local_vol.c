/* drive/local_vol: the local drive's volumes (bucket folders at the root) and system
 * files (.cairn.sys/: format, bucket files; FORMAT.md §2). A system file is written to
 * tmp and renamed into place; a volume is dropped by renaming it into tmp first, so it
 * disappears at once and what is left is tmp garbage. Both are rare, so they ask the
 * next sync() for a whole-filesystem flush (cn_local__pending_full). A volume holding an
 * object anywhere below it is not deleted (cn_local__has_object_below). */
#include "drive/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static bool sys_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 200 || name[0] == '.' || name[0] == '/')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-' || c == '/'))
			return false;
		if (c == '/' && name[i + 1] == '.')
			return false;
	}
	return strncmp(name, "tmp", 3) != 0 || (name[3] != '/' && name[3] != 0);
}

cn_err cn_local__read_sys(cn_drive *dd, const char *name, size_t max, cn_buf *out)
{
	char path[PATH_CAP];
	if (!sys_name_ok(name))
		return CN_ERR_INVALID;
	snprintf(path, sizeof path, SYS_DIR "/%s", name);
	return cn_local__read_file_at(L(dd), path, max, out, CN_ERR_NOT_FOUND);
}

cn_err cn_local__write_sys(cn_drive *dd, const char *name, const void *p, size_t len)
{
	local_drive *d = L(dd);
	char path[PATH_CAP], tmp[128], id[33];
	if (!sys_name_ok(name))
		return CN_ERR_INVALID;
	snprintf(path, sizeof path, SYS_DIR "/%s", name);
	cn_drive_random_id(id);
	snprintf(tmp, sizeof tmp, TMP_DIR "/%s.sys", id);
	cn_err e = cn_local__write_file_at(d, tmp, p, len, false);
	cn_local__pending_full(d);
	if (e)
		goto fail;
	for (int tries = 0;; tries++) {
		if (renameat(d->root_fd, tmp, d->root_fd, path) == 0)
			return CN_OK;
		if (errno != ENOENT || tries > 0) {
			e = cn_local__map_errno(d, errno, "renaming into", path);
			goto fail;
		}
		/* create the parent folder (one level, e.g. "buckets") */
		char *slash = strrchr(path, '/');
		*slash = 0;
		if (mkdirat(d->root_fd, path, 0755) < 0 && errno != EEXIST) {
			e = cn_local__map_errno(d, errno, "creating folder", path);
			goto fail;
		}
		*slash = '/';
	}
fail:
	unlinkat(d->root_fd, tmp, 0);
	return e;
}

cn_err cn_local__remove_sys(cn_drive *dd, const char *name)
{
	local_drive *d = L(dd);
	char path[PATH_CAP];
	if (!sys_name_ok(name))
		return CN_ERR_INVALID;
	snprintf(path, sizeof path, SYS_DIR "/%s", name);
	if (unlinkat(d->root_fd, path, 0) == 0) {
		cn_local__pending_full(d);
		return CN_OK;
	}
	if (errno == ENOENT)
		return CN_ERR_NOT_FOUND;
	return cn_local__map_errno(d, errno, "removing", path);
}

cn_err cn_local__make_vol(cn_drive *dd, const char *vol)
{
	local_drive *d = L(dd);
	if (!cn_local__vol_ok(vol))
		return CN_ERR_BAD_BUCKET_NAME;
	if (mkdirat(d->root_fd, vol, 0755) == 0) {
		cn_local__pending_full(d);
		return CN_OK;
	}
	if (errno == EEXIST)
		return CN_ERR_BUCKET_EXISTS;
	return cn_local__map_errno(d, errno, "creating bucket folder", vol);
}

cn_err cn_local__stat_vol(cn_drive *dd, const char *vol, int64_t *mtime_ms)
{
	local_drive *d = L(dd);
	struct stat st;
	if (!cn_local__vol_ok(vol))
		return CN_ERR_NO_BUCKET;
	if (fstatat(d->root_fd, vol, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return CN_ERR_NO_BUCKET;
		return cn_local__map_errno(d, errno, "stat", vol);
	}
	if (!S_ISDIR(st.st_mode))
		return CN_ERR_NO_BUCKET;
	if (mtime_ms)
		*mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	return CN_OK;
}

/* Rename away first: the bucket disappears atomically; leftovers are tmp garbage. */
static cn_err drop_vol(local_drive *d, const char *vol)
{
	char path[PATH_CAP];
	char id[33];
	cn_drive_random_id(id);
	snprintf(path, sizeof path, TMP_DIR "/%s.vol", id);
	if (renameat(d->root_fd, vol, d->root_fd, path) < 0) {
		if (errno == ENOENT)
			return CN_ERR_NO_BUCKET;
		return cn_local__map_errno(d, errno, "renaming bucket folder", vol);
	}
	cn_local__pending_full(d);
	cn_local__remove_path(d, path);
	return CN_OK;
}

cn_err cn_local__delete_vol(cn_drive *dd, const char *vol)
{
	local_drive *d = L(dd);
	char path[PATH_CAP];
	cn_err e = cn_local__stat_vol(dd, vol, NULL);
	if (e)
		return e;
	bool found;
	snprintf(path, sizeof path, "%s", vol);
	if ((e = cn_local__has_object_below(d, path, strlen(path), &found)))
		return e;
	if (found)
		return CN_ERR_BUCKET_NOT_EMPTY;
	return drop_vol(d, vol);
}

cn_err cn_local__purge_vol(cn_drive *dd, const char *vol)
{
	cn_err e = cn_local__stat_vol(dd, vol, NULL);
	return e ? e : drop_vol(L(dd), vol);
}

cn_err cn_local__list_vols(cn_drive *dd, cn_drive_vol **out, size_t *nout)
{
	local_drive *d = L(dd);
	char **names;
	bool *isdir;
	size_t n;
	*out = NULL;
	*nout = 0;
	cn_err e = cn_local__list_dir(d, ".", &names, &isdir, &n);
	if (e)
		return e == CN_ERR_NOT_FOUND ? CN_ERR_IO : e;
	cn_drive_vol *v = calloc(n ? n : 1, sizeof *v);
	if (!v) {
		cn_local__free_names(names, isdir, n);
		return CN_ERR_NOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdir[i] || !cn_local__vol_ok(names[i]))
			continue;
		int64_t ms = 0;
		if (cn_local__stat_vol(dd, names[i], &ms))
			continue;
		snprintf(v[k].name, sizeof v[k].name, "%s", names[i]);
		v[k].created_ms = ms;
		k++;
	}
	cn_local__free_names(names, isdir, n);
	*out = v;
	*nout = k;
	return CN_OK;
}
