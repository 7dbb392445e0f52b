/* drive: the drive API (DESIGN.md §3) — everything the erasure layer may ask of one drive,
 * behind a vtable so that the local implementation (files under a mounted folder, local*.c),
 * a remote one (RPC to the node owning the drive) and a fault-injecting one share one shape.
 * The erasure layer never touches a filesystem; it sees drives only through these calls.
 *
 * Names: a "vol" is a bucket folder name (S3 bucket rules, never starts with '.'); a "key"
 * is an object key (1..1024 bytes of UTF-8, already checked by the object layer); the drive
 * maps keys to its own layout (docs/FORMAT.md) and refuses keys it cannot store with
 * CN_ERR_BAD_KEY. Metadata records are opaque bytes here: the erasure layer encodes them.
 * A "tmp id" names a folder of the drive's tmp area holding one write in progress; a
 * "data id" names the folder holding one version's shard files (e.g. "%d.<uuid>").
 *
 * Errors: CN_ERR_NO_BUCKET (vol missing), CN_ERR_NO_KEY (record or data missing),
 * CN_ERR_NOSPACE, CN_ERR_IO (logged with path and action), CN_ERR_CORRUPT, CN_ERR_OFFLINE,
 * CN_ERR_BAD_KEY. Thread rules: every call may block; all are safe concurrently, except
 * that calls on one cn_drive_file / cn_drive_rfile come from one thread at a time. */
#ifndef CN_DRIVE_H
#define CN_DRIVE_H

#include "util/util.h"

#define CN_DRIVE_ID_MAX 48     /* tmp ids and data ids: at most this many bytes + NUL */

typedef struct cn_drive cn_drive;
typedef struct cn_drive_file cn_drive_file;   /* a shard file being written in tmp */
typedef struct cn_drive_rfile cn_drive_rfile; /* an open shard file for reading */

typedef struct cn_drive_info {
	uint64_t total, free, used; /* bytes */
	bool online;
	uint64_t outages; /* times the health wrapper took the drive offline (0 without one):
	                     a change tells that it was away, however briefly */
	uint64_t refused; /* calls the health wrapper turned away while others were late
	                     (health.c HEALTH-8; 0 without one) */
	/* The filesystem the drive's folder lies on and the one its parent folder lies on
	 * (they differ when the folder is a mounted disk's root): a drive on the filesystem
	 * that holds the other drives' mount points is a disk not mounted. 0: unknown. */
	uint64_t fs_id, parent_fs_id;
} cn_drive_info;

typedef struct cn_drive_vol {
	char name[64];
	int64_t created_ms;
} cn_drive_vol;

/* Walk callback: key (NUL-terminated, keylen bytes) is an object when is_prefix is false
 * (rec/reclen = its raw metadata record, valid only during the call) or a common prefix
 * ending in '/' when is_prefix is true (rec NULL). has_prev: the object also has a
 * previous record on this drive (prev_keep below: a commit of it in progress or cut
 * short).
 * Returning anything but CN_OK stops the walk, and the walk returns that value. */
typedef cn_err (*cn_drive_walk_fn)(void *ctx, const char *key, size_t keylen, bool is_prefix,
                                   const void *rec, size_t reclen, bool has_prev);

/* data_keys callback: key (NUL-terminated, keylen bytes). Returning anything but CN_OK
 * stops the listing, which returns that value. */
typedef cn_err (*cn_drive_key_fn)(void *ctx, const char *key, size_t keylen);

typedef struct cn_drive_ops {
	void (*close)(cn_drive *d);
	cn_err (*info)(cn_drive *d, cn_drive_info *out);
	/* info's `online` alone, without the capacity (no statvfs): asked per request, where a
	 * "not there" answer must come from a drive that is there. May be NULL (info is asked). */
	bool (*online)(cn_drive *d);
	/* After the drive's folder was removed and made again, wiped, or replaced (below):
	 * point the drive at what is at its path now and make its system folders; CN_OK when
	 * it is usable (its format is the caller's business), CN_ERR_OFFLINE when nothing is
	 * there. May be NULL (the op). */
	cn_err (*reopen)(cn_drive *d);
	/* True when reopen would switch the drive to another folder: the drive's path now
	 * names another usable folder than the one it works in (moved away and another made
	 * in its place; a disk mounted at the mount point after the old one was detached with
	 * umount -l), or the one in use was removed and a folder is at the path again. The
	 * bare mount point of a disk that was mounted there (a folder of the parent
	 * filesystem) is never such a folder. A stat or two, no I/O on the drive; asked by
	 * the drive monitor, one caller at a time with reopen. May be NULL (never). */
	bool (*replaced)(cn_drive *d);

	/* Small system files under the drive's system area (format, bucket config). name is
	 * a relative path of [a-z0-9._/-] chosen by cairn. write is atomic (tmp + rename)
	 * but not synced: call sync. read: CN_ERR_NOT_FOUND when absent; at most max bytes
	 * (CN_ERR_TOO_LARGE beyond). remove: CN_ERR_NOT_FOUND when absent. */
	cn_err (*read_sys)(cn_drive *d, const char *name, size_t max, cn_buf *out);
	cn_err (*write_sys)(cn_drive *d, const char *name, const void *p, size_t len);
	cn_err (*remove_sys)(cn_drive *d, const char *name);

	/* Volumes. make: CN_ERR_BUCKET_EXISTS. delete: refuses with CN_ERR_BUCKET_NOT_EMPTY
	 * when any object record exists below it (empty folders do not count); otherwise the
	 * folder disappears atomically and its leftovers are removed. list: every vol,
	 * unsorted, *out malloc'd. */
	cn_err (*make_vol)(cn_drive *d, const char *vol);
	cn_err (*stat_vol)(cn_drive *d, const char *vol, int64_t *mtime_ms);
	cn_err (*delete_vol)(cn_drive *d, const char *vol);
	/* purge_vol: removes the vol and everything in it, at once (renamed away, then
	 * removed): what a caller uses to remove a bucket folder that it found too few drives hold.
	 * CN_ERR_NO_BUCKET when absent. Optional (NULL: not done). */
	cn_err (*purge_vol)(cn_drive *d, const char *vol);
	cn_err (*list_vols)(cn_drive *d, cn_drive_vol **out, size_t *n);

	/* Writing: create_file makes <name> in the data folder of tmp_id (made as needed;
	 * one per tmp_id, which becomes the key's folder's <data_id> at the commit);
	 * write appends; close(keep=true) closes it, close(keep=false) discards it.
	 * abort_tmp removes whatever tmp_id has in tmp, its data folder and record (ignores
	 * missing ones; nothing is left after a successful rename_data or move_data). */
	cn_err (*create_file)(cn_drive *d, const char *tmp_id, const char *data_id,
	                      const char *name, cn_drive_file **out);
	cn_err (*file_write)(cn_drive_file *f, const void *p, size_t len);
	cn_err (*file_close)(cn_drive_file *f, bool keep);
	void (*abort_tmp)(cn_drive *d, const char *tmp_id);

	/* The commit step: makes the key's folders (retrying when a concurrent delete removes
	 * a parent), moves tmp_id's data folder into the key's folder as <data_id> (data_id
	 * NULL: inline version, no data folder; the local drive then makes no folder for the
	 * key itself), writes rec to a tmp file and renames it over the key's record, so
	 * readers see the old record or the new one. On success nothing of tmp_id is left in
	 * tmp; on failure it removes what there is (abort_tmp). Not synced: call sync.
	 * The previous version's data folder stays: remove it with delete_data. */
	cn_err (*rename_data)(cn_drive *d, const char *tmp_id, const char *data_id,
	                      const char *vol, const char *key, const void *rec, size_t reclen);

	/* The key's previous record (FORMAT.md §3 "%p.<leaf>"): a copy of the record
	 * a commit replaced, kept until the caller drops it. Optional: all three or none
	 * (NULL: the drive keeps none).
	 * prev_keep: makes the key's current record also its previous one (a hard link,
	 *   replacing any previous one); CN_ERR_NO_KEY when there is no current record (then
	 *   any previous record is removed: it would not be the current one's). Called just
	 *   before rename_data and not synced: the rename's sync makes both durable, in order.
	 * prev_read: at most max bytes; CN_ERR_NO_KEY when absent.
	 * prev_drop: removes it; absent is not an error. Not synced (one that comes back
	 *   after a crash is the caller's to ignore or drop).
	 * delete_meta removes the previous record too (before the current one). The data
	 * folder a previous record names is the caller's to keep. */
	cn_err (*prev_keep)(cn_drive *d, const char *vol, const char *key);
	cn_err (*prev_read)(cn_drive *d, const char *vol, const char *key, size_t max, cn_buf *out);
	cn_err (*prev_drop)(cn_drive *d, const char *vol, const char *key);

	/* Records. read_meta: at most max bytes; a record that is not there is told apart
	 * from a vol that is not there: CN_ERR_NO_KEY only when the vol exists on this drive
	 * (so the drive's folder exists too: the answer is about the key, not the drive), else
	 * CN_ERR_NO_BUCKET. delete_meta unlinks the record (CN_ERR_NO_KEY when absent). */
	cn_err (*read_meta)(cn_drive *d, const char *vol, const char *key, size_t max, cn_buf *out);
	cn_err (*delete_meta)(cn_drive *d, const char *vol, const char *key);
	/* Removes the key's data folder data_id (when not NULL), then the key's folder and
	 * its parents up to the vol when they are empty (a concurrent writer wins: non-empty
	 * folders stay). Missing things are not errors. */
	cn_err (*delete_data)(cn_drive *d, const char *vol, const char *key, const char *data_id);

	/* Reading a shard file: CN_ERR_NO_KEY when the data folder is gone (the version was
	 * replaced; re-read the record). read: fills up to len bytes at off, *got < len only
	 * at end of file. fd: a plain file descriptor for zero-copy sends, or -1. */
	cn_err (*open_data)(cn_drive *d, const char *vol, const char *key, const char *data_id,
	                    const char *name, cn_drive_rfile **out);
	cn_err (*rfile_read)(cn_drive_rfile *f, int64_t off, void *buf, size_t len, size_t *got);
	int (*rfile_fd)(cn_drive_rfile *f);
	int64_t (*rfile_size)(cn_drive_rfile *f);
	void (*rfile_close)(cn_drive_rfile *f);

	/* Walks the vol's keys that start with prefix and sort strictly after `after` (NULL
	 * for all) in binary key order, calling fn for each object. With slash_delim, a key
	 * holding '/' after the prefix is reported once as the common prefix up to and
	 * including that '/' (is_prefix), and its subtree is not walked. */
	cn_err (*walk)(cn_drive *d, const char *vol, const char *prefix, const char *after,
	               bool slash_delim, cn_drive_walk_fn fn, void *ctx);

	/* Versions: a key's noncurrent versions are records beside its current record
	 * ("%v.<vid>", FORMAT.md), vid following the id rules of this header. Their data
	 * folders sit in the key's folder like the current one's.
	 * version_keep: makes the current record also noncurrent version vid (a hard link:
	 *   atomic, and the current record stays until replaced); CN_ERR_NO_KEY without one.
	 * version_read: CN_ERR_NO_KEY when absent; at most max bytes.
	 * version_list: the vids of the key's noncurrent versions (none when the key has no
	 *   folder); *vids: malloc'd array of malloc'd strings (cn_drive_free_names).
	 * version_delete: unlinks it (CN_ERR_NO_KEY when absent).
	 * version_promote: makes version vid the current record (a hard link renamed over it:
	 *   atomic, readers see the old current or the promoted one) and keeps vid, which the
	 *   caller removes with version_delete once the change is durable (a crash between
	 *   leaves a version equal to the current one, FORMAT.md §5); CN_ERR_NO_KEY when
	 *   absent.
	 * Not synced: call sync (also version_write below). */
	cn_err (*version_keep)(cn_drive *d, const char *vol, const char *key, const char *vid);
	cn_err (*version_read)(cn_drive *d, const char *vol, const char *key, const char *vid,
	                       size_t max, cn_buf *out);
	cn_err (*version_list)(cn_drive *d, const char *vol, const char *key, char ***vids, size_t *n);
	cn_err (*version_delete)(cn_drive *d, const char *vol, const char *key, const char *vid);
	/* The data folders in the key's folder ("%d.<id>" names, whole; none when it has no
	 * folder), referenced by a record or not: what a crash or a lost deferred removal may
	 * leave behind (FORMAT.md §2). Optional (NULL: none known). Free: cn_drive_free_names. */
	cn_err (*data_list)(cn_drive *d, const char *vol, const char *key, char ***ids, size_t *n);
	/* The keys of vol starting with prefix whose folder holds data folders while this
	 * drive has no current record for the key: what a delete that crashed after its
	 * commit leaves (FORMAT.md §2), or a commit caught between its renames. Any order;
	 * fn as walk's. The caller decides, under each key's lock and from every drive
	 * (data_list, records), what is garbage. Optional (NULL: none known). */
	cn_err (*data_keys)(cn_drive *d, const char *vol, const char *prefix, cn_drive_key_fn fn,
	                    void *ctx);
	cn_err (*version_promote)(cn_drive *d, const char *vol, const char *key, const char *vid);
	/* version_write: writes noncurrent version vid's record (atomic: tmp + rename;
	 *   replaces or creates, making the key's folders as needed: callers hold the key's
	 *   lock and know the version exists on a quorum). */
	cn_err (*version_write)(cn_drive *d, const char *vol, const char *key, const char *vid,
	                        const void *rec, size_t reclen);
	/* move_data: moves tmp_id's data folder into the key's folder as <data_id> (made as
	 *   needed) without touching any record — healing a noncurrent version's data — and
	 *   removes what else tmp_id has in tmp. */
	cn_err (*move_data)(cn_drive *d, const char *tmp_id, const char *data_id, const char *vol,
	                    const char *key);

	/* Multipart uploads: one folder per upload in the drive's system area
	 * (.cairn.sys/multipart/<vol>/<upload_id>/, docs/FORMAT.md) holding small files and
	 * part shard files under names the erasure layer chooses (upload ids and names follow
	 * the id rules of this header).
	 * upload_write: writes the small file `name` atomically (tmp + rename, replacing);
	 *   create=true makes the upload folder first; create=false fails with
	 *   CN_ERR_NOT_FOUND when the upload is gone (aborted or completed: no resurrection).
	 * upload_read: CN_ERR_NOT_FOUND when the file or the upload is missing; at most max
	 *   bytes (CN_ERR_TOO_LARGE beyond).
	 * upload_list: upload_id NULL: the upload ids of vol (none when the vol has none);
	 *   otherwise the file names in that upload (CN_ERR_NOT_FOUND when it is gone).
	 *   *names: malloc'd array of malloc'd strings.
	 * upload_take: moves <src> of tmp_id's data folder (create_file) to the upload's
	 *   <dst> (replacing) and removes what tmp_id has in tmp; CN_ERR_NOT_FOUND when the
	 *   upload is gone.
	 * upload_link: makes <dst> in tmp_id's data folder (made as needed) share the
	 *   upload's file <src> (a hard link: no data copied); CN_ERR_NOT_FOUND when src or
	 *   the upload is missing.
	 * upload_remove: removes the upload and everything in it (upload_id NULL: every upload
	 *   of vol); a missing one is not an error.
	 * Not synced: call sync. */
	cn_err (*upload_write)(cn_drive *d, const char *vol, const char *upload_id, const char *name,
	                       bool create, const void *p, size_t len);
	cn_err (*upload_read)(cn_drive *d, const char *vol, const char *upload_id, const char *name,
	                      size_t max, cn_buf *out);
	cn_err (*upload_list)(cn_drive *d, const char *vol, const char *upload_id, char ***names,
	                      size_t *n);
	cn_err (*upload_take)(cn_drive *d, const char *tmp_id, const char *data_id, const char *src,
	                      const char *vol, const char *upload_id, const char *dst);
	cn_err (*upload_link)(cn_drive *d, const char *vol, const char *upload_id, const char *src,
	                      const char *tmp_id, const char *data_id, const char *dst);
	cn_err (*upload_remove)(cn_drive *d, const char *vol, const char *upload_id);

	/* Durability barrier: returns once everything this drive acknowledged before the call
	 * (file data, records, folder entries) is on stable storage. Group commit: concurrent
	 * callers share one flush. */
	cn_err (*sync)(cn_drive *d);
	/* Drives whose sync() calls share one flush (e.g. folders of one filesystem synced by
	 * syncfs) return the same non-NULL token: one sync of any of them makes the changes
	 * of all of them durable, so a caller syncing several drives syncs one per token.
	 * NULL or a unique token: sync each. May be NULL (the op). */
	const void *(*sync_group)(cn_drive *d);
} cn_drive_ops;

struct cn_drive {
	const cn_drive_ops *ops;
	char endpoint[256];     /* for logs: the path or URL */
	bool writes_sync;       /* its writing calls wait for the device themselves (a local
	                           drive with CAIRN_SYNC=fsync: file_close(keep), rename_data,
	                           version_write, upload_write fdatasync), so
	                           their time grows with the load as sync's does: the health
	                           wrapper does not count them late (HEALTH-8); false by default */
};

/* Local drive over the folder `path` (created if missing). Creates .cairn.sys/ and its
 * tmp area, and empties tmp (crash garbage). durable=false makes sync a no-op. */
cn_err cn_drive_local_open(const char *path, bool durable, cn_drive **out);

/* A local drive for a path that cn_drive_local_open could not open (not a folder, no
 * permission, I/O error): it stands on a placeholder folder that no longer exists, so
 * every call fails and online() is false, until reopen finds a folder at path and moves
 * onto it (then as cn_drive_local_open: system folders made, tmp emptied). Lets a set hold
 * the slot offline and the drive monitor take the drive in when it appears, instead of
 * leaving the slot empty for the run. Errors: CN_ERR_NOMEM, or CN_ERR_IO when no
 * placeholder can be made (TMPDIR, else /tmp). */
cn_err cn_drive_local_open_absent(const char *path, bool durable, cn_drive **out);

/* Health decorator (drive/health.c): wraps any drive; a call that fails with CN_ERR_IO or
 * takes longer than stall_ms takes the drive offline — every call then answers
 * CN_ERR_OFFLINE at once (info: online = false) — and a background prober brings it back
 * once info plus a small system-file write and read succeed again within stall_ms. Takes
 * ownership of inner (closed with the wrapper). Calls already blocked in the inner drive
 * are not interrupted; the limit protects the requests that follow. While late_cap calls
 * (other than sync) have each run longer than late_ms, new calls answer CN_ERR_OFFLINE at
 * once without the drive being marked offline (health.c HEALTH-8: a hang holds few threads
 * before stall_ms decides). */
typedef struct cn_drive_health_cfg {
	int64_t stall_ms;   /* 0: 30000; < 0: no stall limit (and no late limit) */
	int64_t probe_ms;   /* 0: 5000 */
	int64_t late_ms;    /* 0: stall_ms / 10; < 0: no late limit */
	int late_cap;       /* 0: 4 */
} cn_drive_health_cfg;
cn_err cn_drive_health_wrap(cn_drive *inner, const cn_drive_health_cfg *cfg, cn_drive **out);
/* Refuses a health wrapper's drive (it holds another slot's or deployment's format), or
 * admits it again: while refused every call answers CN_ERR_OFFLINE at once (info: online =
 * false), as while offline, and no probe brings it back; reopen, replaced and read_sys of
 * "format" still reach it, so its owner can see whether it still has to be refused.
 * No-op on a drive that is not a health wrapper. */
void cn_drive_health_refuse(cn_drive *d, bool refuse);
/* Takes a health wrapper's drive offline now (logged with why), as a failed call would:
 * for a drive known to be unusable from the start (cn_drive_local_open_absent). */
void cn_drive_health_set_offline(cn_drive *d, const char *why);
/* True when d is a health wrapper whose drive is refused (above). */
bool cn_drive_health_refused(cn_drive *d);
/* True when d is a health wrapper that currently holds its drive offline. */
bool cn_drive_health_offline(cn_drive *d);
/* The calling thread must not wait for drives (the event loop serving a small read, net.h):
 * while set, every call through a health wrapper answers CN_ERR_BUSY at once without
 * touching the drive (info too; online answers from what is known), except read_meta and
 * version_read, which reach the drive in its no-wait mode (below) untimed; the caller
 * hands a request that met CN_ERR_BUSY to a thread that may wait. CN_ERR_BUSY says
 * nothing about the drive: it is never counted against it. Per thread; drives without a
 * health wrapper (one-drive sets: nothing to skip to) see the no-wait mode only.
 *
 * No-wait mode (cn_drive_nowait() true): a drive implementation answers read_meta and
 * version_read only with what it can tell without waiting for a device, a lock or
 * another process, and CN_ERR_BUSY otherwise. The local drive: the record's path
 * resolved from the kernel's dentry cache alone (openat2 RESOLVE_CACHED, O_NONBLOCK), a
 * regular file, its bytes read from the page cache alone (preadv2 RWF_NOWAIT); a
 * kernel without these answers CN_ERR_BUSY every time. A later implementation that
 * cannot tell (a remote drive) answers CN_ERR_BUSY. */
void cn_drive_no_io(bool on);
bool cn_drive_nowait(void);

/* Statistics of the local drive's group commit (for benchmarks). */
void cn_drive_local_sync_stats(cn_drive *d, uint64_t *barriers, uint64_t *flushes);
/* The group commit's generations (tests): flushes started, and completed (local_sync.c SYNC-1). */
void cn_drive_local_sync_gens(cn_drive *d, uint64_t *started, uint64_t *completed);

/* Convenience wrappers: d->ops->x(d, ...). */
static inline void cn_drive_close(cn_drive *d) { if (d) d->ops->close(d); }
static inline cn_err cn_drive_sync(cn_drive *d) { return d->ops->sync(d); }

/* Frees a names array returned by upload_list. */
void cn_drive_free_names(char **names, size_t n);

/* Random 128-bit identifier as 32 lowercase hex chars + NUL. */
void cn_drive_random_id(char out[33]);

#endif
