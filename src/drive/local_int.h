/* drive/local_int.h: private to the local drive's files (local*.c). The drive's state
 * (local_drive), its on-disk names (docs/FORMAT.md §2-3), and the functions its files
 * share, grouped by the file that defines them:
 *   local.c          the vtable, open, close, reopen of a replaced folder
 *   local_path.c     keys and ids to paths (FORMAT.md §3), the tmp area's names
 *   local_io.c       errno mapping, whole-file reads and writes, folder listing and
 *                    removal; the record and data operations (the per-request hot path)
 *   local_pool.c     the pool of freed record files (POOL-1..POOL-4)
 *   local_sync.c     durability: targeted fsyncs (FSYNC-1), the syncfs group commit
 *                    (SYNC-1..SYNC-5)
 *   local_vol.c      volumes and system files
 *   local_version.c  noncurrent versions and data folders
 *   local_walk.c     listing walks: objects (walk), keys with data and no record
 *   local_upload.c   multipart upload folders, trees removed off the request path
 * Every path is relative to the drive's root fd. */
#ifndef CN_DRIVE_LOCAL_INT_H
#define CN_DRIVE_LOCAL_INT_H

#include "drive/drive.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>

#define SYS_DIR ".cairn.sys"
#define TMP_DIR ".cairn.sys/tmp"
#define REC_NAME "%meta"    /* the record of a key whose leaf is longer than FLAT_MAX */
#define PREV_NAME "%prev"   /* the previous record beside a long leaf's REC_NAME */
#define FLAT_PREFIX "%m."  /* "%m.<leaf>": a key's current record, beside its folder */
#define FLAT_MAX (255 - 3) /* longest leaf stored as FLAT_PREFIX + leaf (NAME_MAX) */
#define PATH_CAP 4096

/* The tmp area is spread over TMP_SHARDS folders (tmp/00 .. tmp/3f) chosen by the tmp id,
 * so that concurrent writers do not all serialise on one folder's lock (with a single tmp
 * folder the kernel's directory rwsem is the top cost of small PUTs: perf). */
#define TMP_SHARDS 64
/* A write's files in its tmp shard, named by its tmp id (32 hex, cn_drive_random_id):
 * <tmp id>.d, the version's data folder (create_file; renamed into the key's folder as
 * <data id> by rename_data or move_data), and <tmp id>.rec, its record until renamed over
 * the key's. No folder per write: one made and removed per drive and PUT would cost a
 * mkdir, an rmdir and a freed inode (which ext4 without a journal then skips, with a
 * lookup, on every allocation for minutes: docs/PERF.md). */
#define TMP_DATA ".d"
#define TMP_REC ".rec"

/* One syncfs group commit per filesystem (local_sync.c SYNC-1..SYNC-3): drives that are folders of
 * one filesystem share it, since one syncfs flushes all of them (SYNC-4). */
typedef struct syncgroup {
	dev_t dev;
	int refs;
	pthread_mutex_t mu;          /* started, running, want_next, the counters */
	uint64_t started;            /* SYNC-1 */
	_Atomic uint64_t completed;  /* SYNC-1, read without the mutex by woken waiters */
	_Atomic uint64_t failed_gen; /* SYNC-3 */
	_Atomic uint32_t wake[2];    /* SYNC-5: futex words, bumped to wake a generation */
	bool want_next[2];           /* SYNC-5: a waiter sleeps for generation started + 1 */
	bool running;
	uint64_t barriers, flushes;
	struct syncgroup *next;
} syncgroup;

/* Record files freed by deletes, kept for the next small write (local_pool.c). */
#define POOL_MAX 4096
#define POOL_KEEP_BYTES 4096  /* larger pool files are truncated when pooled (POOL-4) */
typedef struct rec_pool {
	pthread_mutex_t mu;
	uint32_t next;           /* pool file names handed out so far: tmp/<n % 64>/p<n> */
	uint32_t n;
	uint32_t ids[POOL_MAX];  /* a stack: the most recently freed is reused first */
} rec_pool;

typedef struct local_drive {
	cn_drive base;
	int root_fd;
	bool durable;
	bool sync_mode_full;     /* default: every sync() is a syncfs group commit;
	                            CAIRN_SYNC=fsync: targeted fsyncs (local_sync.c) */
	syncgroup *sg;
	rec_pool pool;
	/* The folder in use (root_fd) and whether it was a mounted filesystem's root when
	 * opened (replaced, reopen: the drive monitor's thread only). */
	dev_t dev;
	ino_t ino;
	bool mount_root;
	bool warned_bare;        /* "nothing mounted at the path" logged since the last change */
	bool absent;            /* on a placeholder until reopen finds the folder (open_absent) */
	atomic_bool no_nowait;  /* its filesystem refused a no-wait read (EOPNOTSUPP) */
} local_drive;

static inline local_drive *L(cn_drive *d) { return (local_drive *)d; }

/* --- names (FORMAT.md §3) ------------------------------------------------------------ */

static inline bool cn_local__vol_ok(const char *vol)
{
	size_t n = strlen(vol);
	return n > 0 && n < 64 && vol[0] != '.' && !strchr(vol, '/');
}

static inline bool cn_local__id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > CN_DRIVE_ID_MAX || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (id[i] == '/')
			return false;
	return true;
}

/* Decodes an on-disk entry name into a key component; false for reserved names. */
static inline bool cn_local__decode_component(const char *name, const char **c)
{
	if (name[0] == '%') {
		if (name[1] != '=')
			return false;
		*c = name + 2;
		return true;
	}
	if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))
		return false;
	*c = name;
	return true;
}

/* True when a folder entry is a current record ("%m.<leaf>", rec_path); *leaf its leaf. */
static inline bool cn_local__flat_record(const char *name, bool is_dir, const char **leaf)
{
	if (is_dir || strncmp(name, FLAT_PREFIX, strlen(FLAT_PREFIX)) != 0)
		return false;
	*leaf = name + strlen(FLAT_PREFIX);
	return true;
}

/* local_path.c */
cn_err cn_local__key_path(cn_buf *b, const char *vol, const char *key);
cn_err cn_local__rec_path(cn_buf *b, const char *vol, const char *key, size_t *dir_len);
void cn_local__tmp_path(char *out, size_t cap, const char *tmp_id, const char *rest);

/* local_io.c: file and folder helpers */
cn_err cn_local__map_errno(local_drive *d, int e, const char *action, const char *path);
cn_err cn_local__write_all(local_drive *d, int fd, const void *p, size_t len, const char *path);
cn_err cn_local__read_file_at(local_drive *d, const char *path, size_t max, cn_buf *out,
                              cn_err notfound);
cn_err cn_local__read_file_nowait(local_drive *d, const char *path, size_t max, cn_buf *out,
                                  cn_err notfound);
cn_err cn_local__write_file_at(local_drive *d, const char *path, const void *p, size_t len,
                               bool sync);
cn_err cn_local__list_dir(local_drive *d, const char *path, char ***names, bool **is_dir,
                          size_t *n);
void cn_local__free_names(char **names, bool *is_dir, size_t n);
cn_err cn_local__remove_path(local_drive *d, const char *p);
cn_err cn_local__make_key_dirs(local_drive *d, char *path, size_t vol_len);
cn_err cn_local__make_key_dirs_n(local_drive *d, char *path, size_t len, size_t vol_len);
/* local_io.c: operations (drive.h) */
cn_err cn_local__create_file(cn_drive *dd, const char *tmp_id, const char *data_id,
                             const char *name, cn_drive_file **out);
cn_err cn_local__file_write(cn_drive_file *f, const void *p, size_t len);
cn_err cn_local__file_close(cn_drive_file *f, bool keep);
void cn_local__abort_tmp(cn_drive *dd, const char *tmp_id);
cn_err cn_local__rename_data(cn_drive *dd, const char *tmp_id, const char *data_id,
                             const char *vol, const char *key, const void *rec, size_t reclen);
cn_err cn_local__read_meta(cn_drive *dd, const char *vol, const char *key, size_t max,
                           cn_buf *out);
cn_err cn_local__delete_meta(cn_drive *dd, const char *vol, const char *key);
cn_err cn_local__prev_keep(cn_drive *dd, const char *vol, const char *key);
cn_err cn_local__prev_read(cn_drive *dd, const char *vol, const char *key, size_t max,
                           cn_buf *out);
cn_err cn_local__prev_drop(cn_drive *dd, const char *vol, const char *key);
cn_err cn_local__delete_data(cn_drive *dd, const char *vol, const char *key,
                             const char *data_id);
cn_err cn_local__open_data(cn_drive *dd, const char *vol, const char *key, const char *data_id,
                           const char *name, cn_drive_rfile **out);
cn_err cn_local__rfile_read(cn_drive_rfile *f, int64_t off, void *buf, size_t len,
                            size_t *got);
int cn_local__rfile_fd(cn_drive_rfile *f);
int64_t cn_local__rfile_size(cn_drive_rfile *f);
void cn_local__rfile_close(cn_drive_rfile *f);

/* local_pool.c */
int cn_local__pool_open(local_drive *d, char *path, size_t cap);
cn_err cn_local__retire_record(local_drive *d, const char *path);
void cn_local__pool_clear(local_drive *d);

/* local_sync.c */
syncgroup *cn_local__group_get(dev_t dev);
void cn_local__group_put(syncgroup *g);
void cn_local__pending_dir(local_drive *d, const char *dir, size_t len);
void cn_local__pending_full(local_drive *d);
cn_err cn_local__sync_fd(local_drive *d, int fd, const char *path);
cn_err cn_local__sync(cn_drive *dd);
const void *cn_local__sync_group(cn_drive *dd);

/* local_vol.c */
cn_err cn_local__read_sys(cn_drive *dd, const char *name, size_t max, cn_buf *out);
cn_err cn_local__write_sys(cn_drive *dd, const char *name, const void *p, size_t len);
cn_err cn_local__remove_sys(cn_drive *dd, const char *name);
cn_err cn_local__make_vol(cn_drive *dd, const char *vol);
cn_err cn_local__stat_vol(cn_drive *dd, const char *vol, int64_t *mtime_ms);
cn_err cn_local__delete_vol(cn_drive *dd, const char *vol);
cn_err cn_local__purge_vol(cn_drive *dd, const char *vol);
cn_err cn_local__list_vols(cn_drive *dd, cn_drive_vol **out, size_t *nout);

/* local_version.c */
cn_err cn_local__version_keep(cn_drive *dd, const char *vol, const char *key, const char *vid);
cn_err cn_local__version_read(cn_drive *dd, const char *vol, const char *key, const char *vid,
                              size_t max, cn_buf *out);
cn_err cn_local__version_list(cn_drive *dd, const char *vol, const char *key, char ***vids,
                              size_t *n);
cn_err cn_local__data_list(cn_drive *dd, const char *vol, const char *key, char ***ids,
                           size_t *n);
cn_err cn_local__version_delete(cn_drive *dd, const char *vol, const char *key,
                                const char *vid);
cn_err cn_local__version_promote(cn_drive *dd, const char *vol, const char *key,
                                 const char *vid);
cn_err cn_local__version_write(cn_drive *dd, const char *vol, const char *key, const char *vid,
                               const void *rec, size_t reclen);
cn_err cn_local__move_data(cn_drive *dd, const char *tmp_id, const char *data_id,
                           const char *vol, const char *key);

/* local_walk.c */
cn_err cn_local__has_object_below(local_drive *d, char *path, size_t len, bool *found);
cn_err cn_local__walk(cn_drive *dd, const char *vol, const char *prefix, const char *after,
                      bool slash_delim, cn_drive_walk_fn fn, void *ctx);
cn_err cn_local__data_keys(cn_drive *dd, const char *vol, const char *prefix,
                           cn_drive_key_fn fn, void *ctx);

/* local_upload.c */
cn_err cn_local__upload_write(cn_drive *dd, const char *vol, const char *upload_id,
                              const char *name, bool create, const void *p, size_t len);
cn_err cn_local__upload_read(cn_drive *dd, const char *vol, const char *upload_id,
                             const char *name, size_t max, cn_buf *out);
cn_err cn_local__upload_list(cn_drive *dd, const char *vol, const char *upload_id,
                             char ***names, size_t *n);
cn_err cn_local__upload_take(cn_drive *dd, const char *tmp_id, const char *data_id,
                             const char *src, const char *vol, const char *upload_id,
                             const char *dst);
cn_err cn_local__upload_link(cn_drive *dd, const char *vol, const char *upload_id,
                             const char *src, const char *tmp_id, const char *data_id,
                             const char *dst);
cn_err cn_local__upload_remove(cn_drive *dd, const char *vol, const char *upload_id);

#endif
