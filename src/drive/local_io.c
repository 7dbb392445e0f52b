/* drive/local_io: the local drive's records and data files, and the file primitives
 * under them. A write puts its data files in its tmp folder (create_file), then
 * rename_data writes the record into a pool or tmp file and renames data folder and
 * record into the key's place (FORMAT.md §2), retrying when a concurrent delete removes
 * the parent folders in between; its folders and record are made durable by the drive's
 * sync (local_sync.c). Reads take whole records (read_file_at: open, read, close, never
 * held open: local_pool.c POOL-2) or, in drive.h's no-wait mode, only what the page cache
 * holds. A deleted record goes to the pool (local_pool.c), its previous record first.
 * Every local*.c file turns errno into cn_err through map_errno, which logs the
 * unexpected ones. */
#include "drive/local_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/openat2.h>

struct cn_drive_file {
	local_drive *d;
	int fd;
	char path[256];
};

struct cn_drive_rfile {
	int fd;
	int64_t size;
};

/* Maps errno of a failed action on path to cn_err, logging the unexpected ones. */
cn_err cn_local__map_errno(local_drive *d, int e, const char *action, const char *path)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
		cn_log(CN_LOG_WARN, NULL, "drive %s: %s %s: no space", d->base.endpoint, action, path);
		return CN_ERR_NOSPACE;
	case ENOMEM:
		return CN_ERR_NOMEM;
	case ENAMETOOLONG:
		return CN_ERR_BAD_KEY;
	default:
		cn_log(CN_LOG_ERROR, NULL, "drive %s: %s %s: %s", d->base.endpoint, action, path,
		       strerror(e));
		return CN_ERR_IO;
	}
}

cn_err cn_local__write_all(local_drive *d, int fd, const void *p, size_t len, const char *path)
{
	const char *c = p;
	while (len > 0) {
		ssize_t n = write(fd, c, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return cn_local__map_errno(d, errno, "writing", path);
		}
		c += n;
		len -= (size_t)n;
	}
	return CN_OK;
}

/* Reads the whole file at path into out (at most max bytes). ENOENT/ENOTDIR -> notfound.
 * A record of up to 64 KiB costs open, one read, close (a read that returns less than
 * asked is the end of a regular file; this is on every uncached GET's path, once per
 * drive read); a larger one an fstat and one more read. A folder at path fails the read
 * with EISDIR -> CN_ERR_CORRUPT. */
cn_err cn_local__read_file_at(local_drive *d, const char *path, size_t max, cn_buf *out,
                              cn_err notfound)
{
	out->len = 0;
	int fd = openat(d->root_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return notfound;
		return cn_local__map_errno(d, errno, "opening", path);
	}
	/* The first read goes to the stack: a record that fits (a small object's, an
	 * erasure-coded 64 KiB object's shard, any object's metadata) then gets an allocation
	 * of its exact size and one copy, and costs open, read, close. Reading into a 64 KiB
	 * allocation trimmed afterwards would leave a free remainder behind on every read.
	 * (64 KiB: worker stacks are 1 MiB; a 16 KiB buffer would cost records of 16-64 KiB
	 * an fstat and a second read.) */
	char first[65536];
	ssize_t n0;
	while ((n0 = read(fd, first, sizeof first)) < 0 && errno == EINTR)
		;
	if (n0 < 0) {
		cn_err e = errno == EISDIR ? CN_ERR_CORRUPT
		                           : cn_local__map_errno(d, errno, "reading", path);
		close(fd);
		return e;
	}
	/* want: what is left to read (0: the first read had the whole file). Larger: fstat
	 * tells the rest, read into an exact buffer (doubling would grow a 65 KiB record's buffer
	 * to 128 KiB); 64 KiB steps when the size is unknown or the file grows meanwhile. */
	size_t want = 0;
	struct stat st;
	if ((size_t)n0 == sizeof first)
		want = fstat(fd, &st) == 0 && st.st_size >= n0 && (uint64_t)st.st_size < max
		               ? (size_t)st.st_size - (size_t)n0 + 1
		               : 64 * 1024;
	cn_err e = (size_t)n0 > max ? CN_ERR_TOO_LARGE : cn_buf_reserve_exact(out, (size_t)n0 + want);
	if (!e) {
		memcpy(out->p, first, (size_t)n0);
		out->len = (size_t)n0;
	}
	while (!e && want > 0) {
		if (want > max + 1 - out->len)
			want = max + 1 - out->len;
		if (want == 0) {
			e = CN_ERR_TOO_LARGE;
			break;
		}
		if ((e = cn_buf_reserve_exact(out, want)))
			break;
		ssize_t n = read(fd, out->p + out->len, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = errno == EISDIR ? CN_ERR_CORRUPT
			                    : cn_local__map_errno(d, errno, "reading", path);
			break;
		}
		out->len += (size_t)n;
		if ((size_t)n < want)
			break; /* end of file */
		want = out->len; /* grew since the fstat: grow geometrically */
	}
	if (!e && out->len > max)
		e = CN_ERR_TOO_LARGE;
	if (!e)
		out->p[out->len] = 0;
	close(fd);
	return e;
}

/* Writes a new file at path (truncating). */
cn_err cn_local__write_file_at(local_drive *d, const char *path, const void *p, size_t len,
                               bool sync)
{
	int fd = openat(d->root_fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return cn_local__map_errno(d, errno, "creating", path);
	cn_err e = cn_local__write_all(d, fd, p, len, path);
	if (!e && sync)
		e = cn_local__sync_fd(d, fd, path);
	if (close(fd) < 0 && !e)
		e = cn_local__map_errno(d, errno, "closing", path);
	return e;
}

/* Reads the names in folder path (excluding "." and ".."); *names malloc'd array of
 * malloc'd strings; is_dir[i] tells folders (may be NULL). */
cn_err cn_local__list_dir(local_drive *d, const char *path, char ***names, bool **is_dir, size_t *n)
{
	*names = NULL;
	if (is_dir)
		*is_dir = NULL;
	*n = 0;
	int fd = openat(d->root_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return CN_ERR_NOT_FOUND;
		return cn_local__map_errno(d, errno, "opening folder", path);
	}
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return CN_ERR_NOMEM;
	}
	size_t cap = 0;
	cn_err e = CN_OK;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(dir))) {
		const char *nm = de->d_name;
		if (nm[0] == '.' && (nm[1] == 0 || (nm[1] == '.' && nm[2] == 0)))
			continue;
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **nn = realloc(*names, nc * sizeof *nn);
			if (!nn) {
				e = CN_ERR_NOMEM;
				break;
			}
			*names = nn;
			if (is_dir) {
				bool *nd = realloc(*is_dir, nc * sizeof *nd);
				if (!nd) {
					e = CN_ERR_NOMEM;
					break;
				}
				*is_dir = nd;
			}
			cap = nc;
		}
		char *cp = strdup(nm);
		if (!cp) {
			e = CN_ERR_NOMEM;
			break;
		}
		if (is_dir) {
			bool isd = de->d_type == DT_DIR;
			if (de->d_type == DT_UNKNOWN) {
				struct stat st;
				isd = fstatat(dirfd(dir), nm, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				      S_ISDIR(st.st_mode);
			}
			(*is_dir)[*n] = isd;
		}
		(*names)[(*n)++] = cp;
		errno = 0;
	}
	if (!e && errno)
		e = cn_local__map_errno(d, errno, "reading folder", path);
	closedir(dir);
	return e;
}

void cn_local__free_names(char **names, bool *is_dir, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(is_dir);
}

void cn_drive_free_names(char **names, size_t n)
{
	cn_local__free_names(names, NULL, n);
}

/* rm -rf path (relative to root). Holds no fd across recursion, so depth is bounded only
 * by PATH_CAP. Missing path is fine. */
static cn_err remove_tree(local_drive *d, char *path, size_t len, size_t cap)
{
	if (unlinkat(d->root_fd, path, 0) == 0 || errno == ENOENT)
		return CN_OK;
	if (errno != EISDIR && errno != EPERM)
		return cn_local__map_errno(d, errno, "removing", path);
	char **names;
	size_t n;
	cn_err e = cn_local__list_dir(d, path, &names, NULL, &n);
	if (e == CN_ERR_NOT_FOUND)
		return CN_OK;
	if (e)
		return e;
	for (size_t i = 0; i < n && !e; i++) {
		size_t nl = strlen(names[i]);
		if (len + 1 + nl + 1 > cap) {
			e = CN_ERR_TOO_LARGE;
			break;
		}
		path[len] = '/';
		memcpy(path + len + 1, names[i], nl + 1);
		e = remove_tree(d, path, len + 1 + nl, cap);
		path[len] = 0;
	}
	cn_local__free_names(names, NULL, n);
	if (!e && unlinkat(d->root_fd, path, AT_REMOVEDIR) < 0 && errno != ENOENT)
		e = cn_local__map_errno(d, errno, "removing folder", path);
	return e;
}

cn_err cn_local__remove_path(local_drive *d, const char *p)
{
	char path[PATH_CAP];
	size_t len = strlen(p);
	if (len >= sizeof path)
		return CN_ERR_TOO_LARGE;
	memcpy(path, p, len + 1);
	return remove_tree(d, path, len, sizeof path);
}

cn_err cn_local__create_file(cn_drive *dd, const char *tmp_id, const char *data_id,
                             const char *name, cn_drive_file **out)
{
	local_drive *d = L(dd);
	char path[256];
	if (!cn_local__id_ok(tmp_id) || !cn_local__id_ok(data_id) || !cn_local__id_ok(name))
		return CN_ERR_INVALID;
	char rest[256];
	cn_local__tmp_path(path, sizeof path, tmp_id, TMP_DATA);
	if (mkdirat(d->root_fd, path, 0755) < 0 && errno != EEXIST)
		return cn_local__map_errno(d, errno, "creating folder", path);
	snprintf(rest, sizeof rest, TMP_DATA "/%s", name);
	cn_local__tmp_path(path, sizeof path, tmp_id, rest);
	cn_drive_file *f = calloc(1, sizeof *f);
	if (!f)
		return CN_ERR_NOMEM;
	f->fd = openat(d->root_fd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (f->fd < 0) {
		cn_err e = cn_local__map_errno(d, errno, "creating", path);
		free(f);
		return e;
	}
	f->d = d;
	snprintf(f->path, sizeof f->path, "%s", path);
	*out = f;
	return CN_OK;
}

cn_err cn_local__file_write(cn_drive_file *f, const void *p, size_t len)
{
	return cn_local__write_all(f->d, f->fd, p, len, f->path);
}

cn_err cn_local__file_close(cn_drive_file *f, bool keep)
{
	cn_err e = CN_OK;
	if (keep)
		e = cn_local__sync_fd(f->d, f->fd, f->path);
	if (close(f->fd) < 0 && !e)
		e = cn_local__map_errno(f->d, errno, "closing", f->path);
	if (!keep || e)
		unlinkat(f->d->root_fd, f->path, 0);
	free(f);
	return e;
}

void cn_local__abort_tmp(cn_drive *dd, const char *tmp_id)
{
	char path[256];
	if (!cn_local__id_ok(tmp_id))
		return;
	cn_local__tmp_path(path, sizeof path, tmp_id, TMP_DATA);
	cn_local__remove_path(L(dd), path);
	cn_local__tmp_path(path, sizeof path, tmp_id, TMP_REC);
	unlinkat(L(dd)->root_fd, path, 0);
}

/* mkdir -p of the key folder below the vol (which must exist: CN_ERR_NO_BUCKET otherwise).
 * The common case costs one mkdirat: the key's parent folders exist and only its own is
 * new (or it exists too). Otherwise the path is made from the vol down. */
cn_err cn_local__make_key_dirs(local_drive *d, char *path, size_t vol_len)
{
	if (mkdirat(d->root_fd, path, 0755) == 0) {
		cn_local__pending_dir(d, path, (size_t)(strrchr(path, '/') - path));
		return CN_OK;
	}
	if (errno == EEXIST)
		return CN_OK;
	bool first = true; /* the component right below the vol */
	for (char *p = path + vol_len + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char saved = *p;
		*p = 0;
		int rc = mkdirat(d->root_fd, path, 0755);
		int err = errno;
		if (rc == 0) /* a new entry in the parent folder */
			cn_local__pending_dir(d, path, (size_t)(strrchr(path, '/') - path));
		*p = saved;
		if (rc < 0 && err != EEXIST) {
			if (first && (err == ENOENT || err == ENOTDIR))
				return CN_ERR_NO_BUCKET; /* no vol folder */
			if (err == ENOENT)
				return CN_ERR_NOT_FOUND; /* a parent vanished: caller retries */
			return cn_local__map_errno(d, err, "creating folder", path);
		}
		if (saved == 0)
			return CN_OK;
		first = false;
	}
}

/* cn_local__make_key_dirs of the folder path[0..len) (path is restored before returning). */
cn_err cn_local__make_key_dirs_n(local_drive *d, char *path, size_t len, size_t vol_len)
{
	char saved = path[len];
	path[len] = 0;
	cn_err e = cn_local__make_key_dirs(d, path, vol_len);
	path[len] = saved;
	return e;
}

/* What rename_data moves into the key's place. */
typedef struct placing {
	const char *data_src; /* the version's data folder in tmp; NULL: only the record moves */
	const char *key_dir;  /* the key's folder, which data_src moves into ... */
	const char *data_id;  /* ... as data_id */
	const char *rec_src;  /* the record's file (tmp or pool) */
	const char *rec_dst;  /* its place (cn_local__rec_path) ... */
	size_t rec_dir_len;   /* ... in the folder rec_dst[0..rec_dir_len) */
	char *mk;             /* the folder to make, mk[0..mk_len) (restored after) */
	size_t mk_len, vol_len;
} placing;

/* Renames the data folder (if any), then the record, into place. A concurrent delete may
 * rmdir our parents between mkdir and rename (it only removes empty folders): retry the
 * whole mkdir -p + rename a few times. The first attempt renames without making anything
 * when only the record moves: its folder is there unless this is the first key below a
 * new prefix (or the vol is gone). */
static cn_err place(local_drive *d, const placing *p)
{
	char dst[PATH_CAP];
	bool data_moved = p->data_src == NULL;
	bool try_first = p->data_src == NULL;
	for (int tries = 0;; tries++) {
		if (tries == 8)
			return cn_local__map_errno(d, ENOENT, "committing", p->rec_dst);
		if (!try_first && p->mk_len > p->vol_len) {
			cn_err e = cn_local__make_key_dirs_n(d, p->mk, p->mk_len, p->vol_len);
			if (e == CN_ERR_NOT_FOUND)
				continue;
			if (e)
				return e;
		}
		try_first = false;
		if (!data_moved) {
			snprintf(dst, sizeof dst, "%s/%s", p->key_dir, p->data_id);
			if (renameat(d->root_fd, p->data_src, d->root_fd, dst) < 0) {
				if (errno == ENOENT)
					continue;
				return cn_local__map_errno(d, errno, "renaming data into", dst);
			}
			data_moved = true;
		}
		if (renameat(d->root_fd, p->rec_src, d->root_fd, p->rec_dst) == 0)
			return CN_OK;
		if ((errno == ENOENT || errno == ENOTDIR) && p->rec_dir_len == p->vol_len)
			return CN_ERR_NO_BUCKET; /* the record goes straight into the vol */
		if (errno != ENOENT && errno != ENOTDIR)
			return cn_local__map_errno(d, errno, "renaming record into", p->rec_dst);
	}
}

cn_err cn_local__rename_data(cn_drive *dd, const char *tmp_id, const char *data_id,
                             const char *vol, const char *key, const void *rec, size_t reclen)
{
	local_drive *d = L(dd);
	char src[256], recsrc[256], dst[PATH_CAP];
	cn_buf kp, rp;
	cn_err e;
	int recfd = -1;
	if (!cn_local__id_ok(tmp_id) || (data_id && !cn_local__id_ok(data_id)))
		return CN_ERR_INVALID;
	cn_buf_init(&kp);
	cn_buf_init(&rp);
	size_t rdir; /* rp.p[0..rdir): the folder the record goes into */
	if ((e = cn_local__rec_path(&rp, vol, key, &rdir)) ||
	    (data_id && (e = cn_local__key_path(&kp, vol, key))))
		goto out;
	if (data_id) /* the version's data folder (create_file), moved into the key's folder */
		cn_local__tmp_path(src, sizeof src, tmp_id, TMP_DATA);
	/* the record: one file in tmp, a pool file when there is one (POOL-1..POOL-3) */
	recfd = cn_local__pool_open(d, recsrc, sizeof recsrc);
	if (recfd < 0)
		cn_local__tmp_path(recsrc, sizeof recsrc, tmp_id, TMP_REC);
	/* The record's fd stays open until after the renames: one fdatasync then commits the
	 * file, the new folders and the renames in a single journal transaction, and the
	 * folder fsyncs in sync() find it committed already (one commit per put, shared by
	 * concurrent puts, instead of one before and one after the renames). */
	if (recfd < 0)
		recfd = openat(d->root_fd, recsrc, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		               0644);
	if (recfd < 0) {
		e = cn_local__map_errno(d, errno, "creating", recsrc);
		goto out;
	}
	if ((e = cn_local__write_all(d, recfd, rec, reclen, recsrc)))
		goto out;
	/* The folder to make: the key's own when a data folder moves into it (its parent
	 * holds the record), else the record's. A small object's record usually lands in a
	 * folder that exists (the vol, or a prefix shared with other keys): nothing to make. */
	placing pl = { .data_src = data_id ? src : NULL, .key_dir = kp.p, .data_id = data_id,
	               .rec_src = recsrc, .rec_dst = rp.p, .rec_dir_len = rdir,
	               .mk = data_id ? kp.p : rp.p, .mk_len = data_id ? kp.len : rdir,
	               .vol_len = strlen(vol) };
	if ((e = place(d, &pl)))
		goto out;
	cn_local__pending_dir(d, rp.p, rdir);
	if (data_id) {
		cn_local__pending_dir(d, kp.p, kp.len);
		snprintf(dst, sizeof dst, "%s/%s", kp.p, data_id);
		cn_local__pending_dir(d, dst, strlen(dst));
	}
	e = cn_local__sync_fd(d, recfd, rp.p);
	close(recfd);
	cn_buf_fini(&kp);
	cn_buf_fini(&rp);
	return e;
out:
	if (recfd >= 0) {
		close(recfd);
		unlinkat(d->root_fd, recsrc, 0); /* a pool file, or tmp/<tmp_id>.rec */
	}
	cn_local__abort_tmp(dd, tmp_id);
	cn_buf_fini(&kp);
	cn_buf_fini(&rp);
	return e;
}

/* drive.h's no-wait mode. A kernel without openat2's RESOLVE_CACHED (before 5.12, or a
 * seccomp filter) is remembered: every no-wait read then answers CN_ERR_BUSY at once. */
static atomic_bool nowait_missing;

/* The path resolved from the dentry cache alone: -1 with EAGAIN when that would need a
 * lookup on the device (or a revalidation). */
static int open_cached(local_drive *d, const char *path, uint64_t flags)
{
	struct open_how how = { .flags = flags | O_CLOEXEC | O_NOFOLLOW, .resolve = RESOLVE_CACHED };
	return (int)syscall(SYS_openat2, d->root_fd, path, &how, sizeof how);
}

/* cn_local__read_file_at without waiting: notfound when the cached path says there is no
 * such file, the bytes when the file is a regular one whose every page is cached,
 * CN_ERR_BUSY for anything else (not cached; not a regular file, such as a FIFO whose open
 * or read would block; an error, which the waiting path then meets and reports).
 * O_NONBLOCK keeps the open of a FIFO or device from blocking; O_NOATIME keeps the read
 * from updating the inode (a write to the device, on the first read of each new file
 * under relatime). */
cn_err cn_local__read_file_nowait(local_drive *d, const char *path, size_t max, cn_buf *out,
                                  cn_err notfound)
{
	out->len = 0;
	if (atomic_load_explicit(&nowait_missing, memory_order_relaxed) ||
	    atomic_load_explicit(&d->no_nowait, memory_order_relaxed))
		return CN_ERR_BUSY;
	int fd = open_cached(d, path, O_RDONLY | O_NONBLOCK | O_NOATIME);
	if (fd < 0 && errno == EPERM) /* O_NOATIME on a file of another owner */
		fd = open_cached(d, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return notfound;
		if (errno == ENOSYS || errno == EINVAL)
			atomic_store(&nowait_missing, true);
		return CN_ERR_BUSY;
	}
	struct stat st;
	cn_err e;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		e = CN_ERR_BUSY;
	else if ((uint64_t)st.st_size > max)
		e = CN_ERR_TOO_LARGE;
	else
		e = cn_buf_reserve_exact(out, (size_t)st.st_size + 1); /* + 1: sees it grow */
	while (!e) {
		struct iovec iov = { out->p + out->len, (size_t)st.st_size + 1 - out->len };
		ssize_t n = preadv2(fd, &iov, 1, (off_t)out->len, RWF_NOWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EOPNOTSUPP)
				atomic_store(&d->no_nowait, true);
			e = CN_ERR_BUSY; /* EAGAIN: a page is not cached */
			break;
		}
		if (n == 0)
			break; /* end of file */
		out->len += (size_t)n;
		if (out->len > (size_t)st.st_size)
			e = CN_ERR_BUSY; /* grew since the fstat: not a record being read */
	}
	close(fd);
	if (e)
		out->len = 0;
	return e;
}

/* cn_local__stat_vol(d, vol, NULL) without waiting (as above). */
static cn_err stat_vol_nowait(local_drive *d, const char *vol)
{
	if (!cn_local__vol_ok(vol))
		return CN_ERR_NO_BUCKET;
	int fd = open_cached(d, vol, O_PATH | O_DIRECTORY);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? CN_ERR_NO_BUCKET : CN_ERR_BUSY;
	close(fd);
	return CN_OK;
}

cn_err cn_local__read_meta(cn_drive *dd, const char *vol, const char *key, size_t max,
                           cn_buf *out)
{
	cn_buf rp;
	size_t rdir;
	cn_buf_init(&rp);
	bool nowait = cn_drive_nowait();
	cn_err e = cn_local__rec_path(&rp, vol, key, &rdir);
	if (!e)
		e = nowait ? cn_local__read_file_nowait(L(dd), rp.p, max, out, CN_ERR_NO_KEY)
		           : cn_local__read_file_at(L(dd), rp.p, max, out, CN_ERR_NO_KEY);
	cn_buf_fini(&rp);
	/* no such record: is the vol there? (a folder removed under us holds no vol: a vol
	 * found proves the drive's folder lives, and the miss counts) */
	if (e == CN_ERR_NO_KEY) {
		cn_err ve = nowait ? stat_vol_nowait(L(dd), vol) : cn_local__stat_vol(dd, vol, NULL);
		if (ve)
			e = ve; /* NO_BUCKET, or what kept us from knowing */
	}
	return e;
}

/* cn_local__rec_path's answer rp (its folder rp[0..rdir)) made the path of the key's
 * previous record (drive.h prev_keep; FORMAT.md §3): "%p.<leaf>" beside "%m.<leaf>", or
 * "%prev" beside a long leaf's "%meta" (the same lengths). */
static void prev_of(cn_buf *rp, size_t rdir)
{
	char *name = rp->p + rdir + 1;
	if (!strcmp(name, REC_NAME))
		memcpy(name, PREV_NAME, sizeof PREV_NAME);
	else
		name[1] = 'p'; /* FLAT_PREFIX "%m." -> "%p." */
}

/* prev_of undone. */
static void cur_of(cn_buf *rp, size_t rdir)
{
	char *name = rp->p + rdir + 1;
	if (!strcmp(name, PREV_NAME))
		memcpy(name, REC_NAME, sizeof REC_NAME);
	else
		name[1] = 'm';
}

cn_err cn_local__delete_meta(cn_drive *dd, const char *vol, const char *key)
{
	local_drive *d = L(dd);
	cn_buf rp;
	size_t rdir;
	cn_buf_init(&rp);
	cn_err e = cn_local__rec_path(&rp, vol, key, &rdir);
	if (!e) {
		/* the previous record first: none is left without its current one (drive.h) */
		prev_of(&rp, rdir);
		e = cn_local__retire_record(d, rp.p);
		cur_of(&rp, rdir);
		if (!e || e == CN_ERR_NO_KEY) /* else the current one stays too (drive.h) */
			e = cn_local__retire_record(d, rp.p);
	}
	if (!e)
		cn_local__pending_dir(d, rp.p, rdir);
	cn_buf_fini(&rp);
	return e;
}

cn_err cn_local__prev_keep(cn_drive *dd, const char *vol, const char *key)
{
	local_drive *d = L(dd);
	cn_buf cur, prev;
	size_t rdir;
	cn_buf_init(&cur);
	cn_buf_init(&prev);
	cn_err e = cn_local__rec_path(&cur, vol, key, &rdir);
	if (!e)
		e = cn_buf_append(&prev, cur.p, cur.len + 1);
	if (!e) {
		prev.len = cur.len;
		prev_of(&prev, rdir);
	}
	/* link(2) does not replace: a previous record left over (a crash before its drop)
	 * goes first, on EEXIST only (an overwrite's common case is one link) */
	for (int tries = 0; !e; tries++) {
		if (linkat(d->root_fd, cur.p, d->root_fd, prev.p, 0) == 0)
			break;
		if (errno == EEXIST && tries < 2) {
			unlinkat(d->root_fd, prev.p, 0);
			continue;
		}
		if (errno == ENOENT || errno == ENOTDIR) {
			unlinkat(d->root_fd, prev.p, 0); /* not the (missing) current one's */
			e = CN_ERR_NO_KEY;
		} else {
			e = cn_local__map_errno(d, errno, "keeping the previous record", prev.p);
		}
	}
	if (!e)
		cn_local__pending_dir(d, prev.p, rdir);
	cn_buf_fini(&cur);
	cn_buf_fini(&prev);
	return e;
}

/* The path of key's previous record into b (initialized by the caller; fini it). */
static cn_err prev_path(cn_buf *b, const char *vol, const char *key)
{
	size_t rdir;
	cn_err e = cn_local__rec_path(b, vol, key, &rdir);
	if (!e)
		prev_of(b, rdir);
	return e;
}

cn_err cn_local__prev_read(cn_drive *dd, const char *vol, const char *key, size_t max,
                           cn_buf *out)
{
	cn_buf rp;
	cn_buf_init(&rp);
	cn_err e = prev_path(&rp, vol, key);
	if (!e)
		e = cn_drive_nowait()
		            ? cn_local__read_file_nowait(L(dd), rp.p, max, out, CN_ERR_NO_KEY)
		            : cn_local__read_file_at(L(dd), rp.p, max, out, CN_ERR_NO_KEY);
	cn_buf_fini(&rp);
	return e;
}

cn_err cn_local__prev_drop(cn_drive *dd, const char *vol, const char *key)
{
	cn_buf rp;
	cn_buf_init(&rp);
	cn_err e = prev_path(&rp, vol, key);
	if (!e && (e = cn_local__retire_record(L(dd), rp.p)) == CN_ERR_NO_KEY)
		e = CN_OK;
	cn_buf_fini(&rp);
	return e;
}

cn_err cn_local__delete_data(cn_drive *dd, const char *vol, const char *key, const char *data_id)
{
	local_drive *d = L(dd);
	cn_buf kp;
	cn_err e;
	if (data_id && !cn_local__id_ok(data_id))
		return CN_ERR_INVALID;
	cn_buf_init(&kp);
	if ((e = cn_local__key_path(&kp, vol, key)))
		goto out;
	size_t klen = kp.len;
	if (data_id) {
		if ((e = cn_buf_printf(&kp, "/%s", data_id)))
			goto out;
		if ((e = cn_local__remove_path(d, kp.p)))
			goto out;
		kp.p[klen] = 0;
		kp.len = klen;
	}
	/* rmdir the key folder and its parents while empty; ENOTEMPTY means a concurrent
	 * writer (or another key) owns it now. */
	size_t vol_len = strlen(vol);
	while (kp.len > vol_len) {
		if (unlinkat(d->root_fd, kp.p, AT_REMOVEDIR) < 0 && errno != ENOENT)
			break;
		char *slash = strrchr(kp.p, '/');
		*slash = 0;
		kp.len = (size_t)(slash - kp.p);
	}
out:
	cn_buf_fini(&kp);
	return e;
}

cn_err cn_local__open_data(cn_drive *dd, const char *vol, const char *key, const char *data_id,
                           const char *name, cn_drive_rfile **out)
{
	local_drive *d = L(dd);
	cn_buf kp;
	cn_err e;
	if (!cn_local__id_ok(data_id) || !cn_local__id_ok(name))
		return CN_ERR_INVALID;
	cn_buf_init(&kp);
	if ((e = cn_local__key_path(&kp, vol, key)) ||
	    (e = cn_buf_printf(&kp, "/%s/%s", data_id, name)))
		goto out;
	int fd = openat(d->root_fd, kp.p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		e = (errno == ENOENT || errno == ENOTDIR)
		            ? CN_ERR_NO_KEY
		            : cn_local__map_errno(d, errno, "opening", kp.p);
		goto out;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		e = CN_ERR_CORRUPT;
		goto out;
	}
	cn_drive_rfile *f = malloc(sizeof *f);
	if (!f) {
		close(fd);
		e = CN_ERR_NOMEM;
		goto out;
	}
	f->fd = fd;
	f->size = st.st_size;
	*out = f;
out:
	cn_buf_fini(&kp);
	return e;
}

cn_err cn_local__rfile_read(cn_drive_rfile *f, int64_t off, void *buf, size_t len, size_t *got)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + (int64_t)done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			cn_log(CN_LOG_ERROR, NULL, "drive: reading shard fd %d at %lld: %s", f->fd,
			       (long long)(off + (int64_t)done), strerror(errno));
			return errno == ENOMEM ? CN_ERR_NOMEM : CN_ERR_IO;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	*got = done;
	return CN_OK;
}

int cn_local__rfile_fd(cn_drive_rfile *f) { return f->fd; }
int64_t cn_local__rfile_size(cn_drive_rfile *f) { return f->size; }

void cn_local__rfile_close(cn_drive_rfile *f)
{
	if (f) {
		close(f->fd);
		free(f);
	}
}
