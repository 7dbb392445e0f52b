/* drive/local_version: a key's noncurrent versions and data folders (FORMAT.md §5).
 * A version is a hard link of a record, "%v.<vid>" in the key's folder (version_keep),
 * or a record written there (version_write); promoting one links it into tmp and renames
 * that over the current record, so the version stays. The key's folder is made on demand:
 * a small object's current record sits beside it (local_path.c). move_data puts a
 * version's data folder in the key's folder without touching its record. */
#include "drive/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define VER_PREFIX "%v."

/* "<key folder>/%v.<vid>" into kp. */
static cn_err ver_path(cn_buf *kp, const char *vol, const char *key, const char *vid)
{
	if (!vid || !cn_local__id_ok(vid))
		return CN_ERR_NO_KEY;
	cn_err e = cn_local__key_path(kp, vol, key);
	if (!e)
		e = cn_buf_printf(kp, "/%%v.%s", vid);
	return e;
}

cn_err cn_local__version_keep(cn_drive *dd, const char *vol, const char *key, const char *vid)
{
	local_drive *d = L(dd);
	cn_buf cur, ver;
	size_t rdir;
	cn_buf_init(&cur);
	cn_buf_init(&ver);
	cn_err e = cn_local__rec_path(&cur, vol, key, &rdir);
	if (!e)
		e = ver_path(&ver, vol, key, vid);
	/* link(2) does not replace: an older copy of this vid (a crash between keep and the
	 * commit that follows it) goes first. The key's folder may not exist yet (a small
	 * object's record sits beside it): made on ENOENT when the record is there. */
	if (!e)
		unlinkat(d->root_fd, ver.p, 0);
	for (int tries = 0; !e; tries++) {
		if (linkat(d->root_fd, cur.p, d->root_fd, ver.p, 0) == 0)
			break;
		struct stat st;
		if ((errno != ENOENT && errno != ENOTDIR) || tries == 8) {
			e = cn_local__map_errno(d, errno, "keeping version", ver.p);
		} else if (fstatat(d->root_fd, cur.p, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			e = CN_ERR_NO_KEY;
		} else {
			e = cn_local__make_key_dirs_n(d, ver.p, (size_t)(strrchr(ver.p, '/') - ver.p),
			                              strlen(vol));
			if (e == CN_ERR_NOT_FOUND)
				e = CN_OK;
		}
	}
	if (!e)
		cn_local__pending_dir(d, ver.p, (size_t)(strrchr(ver.p, '/') - ver.p));
	cn_buf_fini(&cur);
	cn_buf_fini(&ver);
	return e;
}

cn_err cn_local__version_read(cn_drive *dd, const char *vol, const char *key, const char *vid,
                              size_t max, cn_buf *out)
{
	cn_buf kp;
	cn_buf_init(&kp);
	cn_err e = ver_path(&kp, vol, key, vid);
	if (!e)
		e = cn_drive_nowait()
		            ? cn_local__read_file_nowait(L(dd), kp.p, max, out, CN_ERR_NO_KEY)
		            : cn_local__read_file_at(L(dd), kp.p, max, out, CN_ERR_NO_KEY);
	cn_buf_fini(&kp);
	return e;
}

/* The entries of the key's folder (is_dir: which are folders; NULL: not asked); none
 * (CN_OK) when the key has no folder. */
static cn_err key_folder_list(local_drive *d, const char *vol, const char *key, char ***names,
                              bool **is_dir, size_t *n)
{
	*names = NULL;
	if (is_dir)
		*is_dir = NULL;
	*n = 0;
	cn_buf kp;
	cn_buf_init(&kp);
	cn_err e = cn_local__key_path(&kp, vol, key);
	if (!e)
		e = cn_local__list_dir(d, kp.p, names, is_dir, n);
	cn_buf_fini(&kp);
	return e == CN_ERR_NOT_FOUND ? CN_OK : e;
}

cn_err cn_local__version_list(cn_drive *dd, const char *vol, const char *key, char ***vids,
                              size_t *n)
{
	char **names;
	size_t nn;
	cn_err e = key_folder_list(L(dd), vol, key, &names, NULL, &nn);
	*vids = NULL;
	*n = 0;
	if (e)
		return e;
	size_t k = 0, pl = strlen(VER_PREFIX);
	for (size_t i = 0; i < nn; i++) {
		if (strncmp(names[i], VER_PREFIX, pl) == 0 && names[i][pl]) {
			memmove(names[i], names[i] + pl, strlen(names[i] + pl) + 1);
			names[k++] = names[i];
		} else {
			free(names[i]);
		}
	}
	*vids = names;
	*n = k;
	return CN_OK;
}

cn_err cn_local__data_list(cn_drive *dd, const char *vol, const char *key, char ***ids, size_t *n)
{
	char **names;
	bool *is_dir;
	size_t nn;
	cn_err e = key_folder_list(L(dd), vol, key, &names, &is_dir, &nn);
	*ids = NULL;
	*n = 0;
	if (e)
		return e;
	size_t k = 0;
	for (size_t i = 0; i < nn; i++) {
		if (is_dir[i] && strncmp(names[i], "%d.", 3) == 0 && cn_local__id_ok(names[i]))
			names[k++] = names[i];
		else
			free(names[i]);
	}
	free(is_dir);
	if (k == 0) {
		free(names);
		names = NULL;
	}
	*ids = names;
	*n = k;
	return CN_OK;
}

cn_err cn_local__version_delete(cn_drive *dd, const char *vol, const char *key, const char *vid)
{
	local_drive *d = L(dd);
	cn_buf kp;
	cn_buf_init(&kp);
	cn_err e = ver_path(&kp, vol, key, vid);
	if (!e && unlinkat(d->root_fd, kp.p, 0) < 0)
		e = (errno == ENOENT || errno == ENOTDIR)
		            ? CN_ERR_NO_KEY
		            : cn_local__map_errno(d, errno, "removing version", kp.p);
	if (!e)
		cn_local__pending_dir(d, kp.p, (size_t)(strrchr(kp.p, '/') - kp.p));
	cn_buf_fini(&kp);
	return e;
}

cn_err cn_local__version_promote(cn_drive *dd, const char *vol, const char *key, const char *vid)
{
	local_drive *d = L(dd);
	cn_buf cur, ver;
	size_t rdir;
	cn_buf_init(&cur);
	cn_buf_init(&ver);
	cn_err e = cn_local__rec_path(&cur, vol, key, &rdir);
	if (!e)
		e = ver_path(&ver, vol, key, vid);
	/* linked into tmp, then renamed over the current record: the version stays (drive.h) */
	char id[33], tmp[256];
	cn_drive_random_id(id);
	cn_local__tmp_path(tmp, sizeof tmp, id, TMP_REC);
	if (!e && linkat(d->root_fd, ver.p, d->root_fd, tmp, 0) < 0)
		e = (errno == ENOENT || errno == ENOTDIR)
		            ? CN_ERR_NO_KEY
		            : cn_local__map_errno(d, errno, "promoting version", ver.p);
	if (!e && renameat(d->root_fd, tmp, d->root_fd, cur.p) < 0)
		e = cn_local__map_errno(d, errno, "promoting version", cur.p);
	/* gone after the rename, unless the current record was already a link of the version
	 * (rename between two links of one inode does nothing) or the rename failed */
	unlinkat(d->root_fd, tmp, 0);
	if (!e)
		cn_local__pending_dir(d, cur.p, rdir);
	cn_buf_fini(&cur);
	cn_buf_fini(&ver);
	return e;
}

cn_err cn_local__version_write(cn_drive *dd, const char *vol, const char *key, const char *vid,
                               const void *rec, size_t reclen)
{
	local_drive *d = L(dd);
	cn_buf ver, tmp;
	cn_buf_init(&ver);
	cn_buf_init(&tmp);
	char id[33];
	cn_drive_random_id(id);
	cn_err e = ver_path(&ver, vol, key, vid);
	/* the tmp file beside it ("%t." never names a key component or a record) */
	/* the key's folder may not exist yet (a small current version has none) */
	if (!e && !(e = cn_local__key_path(&tmp, vol, key)) &&
	    (e = cn_local__make_key_dirs(d, tmp.p, strlen(vol))) == CN_ERR_NOT_FOUND)
		e = CN_ERR_NO_KEY; /* a concurrent delete emptied the key's parents */
	if (!e)
		e = cn_buf_printf(&tmp, "/%%t.%s", id);
	if (!e)
		e = cn_local__write_file_at(d, tmp.p, rec, reclen, true);
	if (!e && renameat(d->root_fd, tmp.p, d->root_fd, ver.p) < 0)
		e = cn_local__map_errno(d, errno, "renaming version record into", ver.p);
	if (e && tmp.len)
		unlinkat(d->root_fd, tmp.p, 0);
	if (!e)
		cn_local__pending_dir(d, ver.p, (size_t)(strrchr(ver.p, '/') - ver.p));
	cn_buf_fini(&ver);
	cn_buf_fini(&tmp);
	return e;
}

cn_err cn_local__move_data(cn_drive *dd, const char *tmp_id, const char *data_id, const char *vol,
                           const char *key)
{
	local_drive *d = L(dd);
	char src[256];
	cn_buf kp;
	if (!cn_local__id_ok(tmp_id) || !cn_local__id_ok(data_id))
		return CN_ERR_INVALID;
	cn_buf_init(&kp);
	cn_err e = cn_local__key_path(&kp, vol, key);
	size_t klen = kp.len, vol_len = strlen(vol);
	cn_local__tmp_path(src, sizeof src, tmp_id, TMP_DATA);
	for (int tries = 0; !e; tries++) {
		if (tries == 8) {
			e = cn_local__map_errno(d, ENOENT, "moving data into", kp.p);
			break;
		}
		kp.p[klen] = 0;
		kp.len = klen;
		e = cn_local__make_key_dirs(d, kp.p, vol_len);
		if (e == CN_ERR_NOT_FOUND) {
			e = CN_OK;
			continue;
		}
		if (e)
			break;
		if ((e = cn_buf_printf(&kp, "/%s", data_id)))
			break;
		if (renameat(d->root_fd, src, d->root_fd, kp.p) == 0) {
			cn_local__pending_dir(d, kp.p, klen);
			cn_local__pending_dir(d, kp.p, kp.len);
			break;
		}
		if (errno != ENOENT) {
			e = cn_local__map_errno(d, errno, "moving data into", kp.p);
			break;
		}
	}
	cn_local__abort_tmp(dd, tmp_id);
	cn_buf_fini(&kp);
	return e;
}
