/* object_int.h: private to the object module — the store's state (pools of erasure sets)
 * and what its files share: store.c (open, close, barrier), format.c (drive format
 * records), monitor.c (drives that come back), place.c (which set holds a key), names.c
 * (bucket and key rules), bucket.c (buckets and bucket-wide system files), commit.c (key
 * locks, previous records, readers' pins), object.c (put, get, delete), list.c (listing),
 * multipart.c (uploads, metadata updates, bucket configuration), versions.c and heal.c.
 * The commit rules OBJ-1..OBJ-5 (object.c) and OBJ-6, OBJ-7 (commit.c) hold for all of them. */
#ifndef CN_OBJECT_INT_H
#define CN_OBJECT_INT_H

#include "erasure/erasure.h"
#include "object/object.h"

#include <pthread.h>

#define OBJ_IO_BUF (1u << 20)
#define OBJ_KEY_LOCKS 256
#define OBJ_PIN_STRIPES 64
#define OBJ_MAX_POOLS 64

/* --- open readers and removed data (commit.c, OBJ-6) ---------------------------------------
 * A version's data folder (shard files are opened lazily, part by part) is removed after an
 * overwrite, a delete or a version delete only once no reader that may still read it is
 * open. A reader pins its key before it reads the record and unpins when it closes;
 * cn_obj__drop_data removes the folder at once when no reader of the key (by hash) pinned
 * before it, else hands the removal to the newest such reader: it runs when that reader
 * and every older reader of the key have unpinned, in the thread of the last one. A
 * reader that pins after the drop reads the record after the commit that replaced the
 * version (the drop follows the commit and its barrier), so never the removed version.
 * Readers of other keys never delay a removal. A crash forgets deferred removals: their
 * folders stay, unreferenced (docs/FORMAT.md §2). */
typedef struct cn_obj__drop cn_obj__drop;
typedef struct cn_obj__pin {
	struct cn_obj__pin *prev, *next; /* its stripe's list, oldest first */
	uint64_t h;                       /* hash of bucket/key */
	cn_obj__drop *drops;              /* removals waiting for this reader and older ones */
} cn_obj__pin;
typedef struct cn_obj__pins {        /* one stripe of open readers */
	pthread_mutex_t mu;
	cn_obj__pin *head, *tail;
} cn_obj__pins;

/* One pool: nsets erasure sets of set_size drives (pointers into cn_obj_store.sets). */
typedef struct cn_obj__pool {
	cn_ec_set **sets;
	size_t nsets;
	size_t set_size;
} cn_obj__pool;

struct cn_obj_store {
	cn_obj__pool *pools;                       /* npools >= 1 */
	size_t npools;
	cn_ec_set **sets;                          /* every set: pool after pool (owned) */
	size_t nsets;
	cn_obj_config cfg;
	bool ready;
	char deployment[33];
	unsigned char dep_key[16];                 /* the deployment id's bytes: the routing key */
	pthread_rwlock_t ns_lock;                  /* OBJ-5 */
	pthread_mutex_t key_locks[OBJ_KEY_LOCKS];  /* OBJ-2 (also one upload's changes) */
	struct cn_obj__prevk *prevk[OBJ_KEY_LOCKS]; /* OBJ-7: previous records kept, newest first */
	cn_obj__pins pins[OBJ_PIN_STRIPES];        /* OBJ-6: open readers by key hash */
	/* versioning state per bucket (versions.c): a direct-mapped cache of the
	 * "versioning" bucket document; vs_gen counts changes (insert only if unchanged) */
	pthread_mutex_t vs_mu;
	uint64_t vs_gen;
	struct {
		char bucket[64];
		cn_versioning state;
		bool valid;
	} vs[256];
	/* background healing (heal.c); heal_at_start: format_all formatted an empty drive
	 * into an existing deployment, a scan starts at once */
	struct cn_obj_healer *healer;
	bool heal_at_start;
	/* background removal of stale multipart uploads (multipart.c) */
	cn_periodic janitor;
	/* drive monitor (monitor.c): drives removed, wiped or replaced and back are formatted
	 * into their slot; mon_suspended[at]: the slot's drive holds a foreign format and is
	 * suspended (cn_ec_set_suspend) until another folder is at its path */
	cn_periodic monitor;
	bool *mon_suspended;
	bool *mon_offline; /* the slot was offline at the last check */
	uint64_t *mon_outages; /* its drive's outage count at the last check (cn_drive_info) */
};

/* --- routing (place.c): which erasure set holds a key ----------------------------------
 * A key's set in a pool is SipHash-2-4 of the key keyed by the deployment id, mod the
 * pool's set count (MinIO's placement, DESIGN.md §9). With one pool there is no I/O. */
/* SipHash-2-4 of p[0..len) under the 16-byte key (64-bit result). */
uint64_t cn_obj__siphash(const unsigned char key[16], const void *p, size_t len);
/* The key's set in pool `pool` (no I/O). */
cn_ec_set *cn_obj__hashed_set(cn_obj_store *s, size_t pool, const char *key);
/* The set holding an existing key: with several pools, the first pool whose set has a
 * record of it (or cannot tell: offline, corrupt); the first pool's set when none has. */
cn_ec_set *cn_obj__key_set(cn_obj_store *s, const char *bucket, const char *key);
/* The set for writing bucket/key: its pool when the key exists in one, otherwise a pool
 * chosen at random weighted by the free space of the key's set in each pool (MinIO).
 * Errors: a pool that cannot tell whether it holds the key (CN_ERR_QUORUM ...). */
cn_err cn_obj__put_set(cn_obj_store *s, const char *bucket, const char *key, cn_ec_set **out);
/* The barrier of one set (OBJ-3); CN_OK at once when not durable. */
static inline cn_err cn_obj__barrier_set(cn_obj_store *s, cn_ec_set *set)
{
	return s->cfg.durable ? cn_ec_sync(set) : CN_OK;
}
/* Bucket-wide system files (bucket config): read from the first set whose drives give an
 * answer (CN_ERR_NOT_FOUND only when more drives than the set's parity say so, so a
 * wiped drive never hides a document); written / removed on every set. */
cn_err cn_obj__read_sys(cn_obj_store *s, const char *name, size_t max, cn_buf *out);
cn_err cn_obj__write_sys_every(cn_obj_store *s, const char *name, const void *p, size_t len);
cn_err cn_obj__remove_sys_every(cn_obj_store *s, const char *name);
/* The bucket's folder on every set: the first error (CN_ERR_NO_BUCKET ...). */
cn_err cn_obj__stat_bucket(cn_obj_store *s, const char *bucket);

/* Per-thread I/O buffer of OBJ_IO_BUF bytes: slot 0 for bodies being written, 1 for reads. */
unsigned char *cn_obj__tls_buf(int slot);
/* FNV-1a of bucket "/" key: the stripe of its key lock, previous records and pins. */
static inline uint64_t cn_obj__key_hash(const char *bucket, const char *key)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *p = bucket; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}
/* The striped lock of bucket/key (OBJ-2). */
static inline pthread_mutex_t *cn_obj__key_lock(cn_obj_store *s, const char *bucket,
                                                const char *key)
{
	return &s->key_locks[cn_obj__key_hash(bucket, key) % OBJ_KEY_LOCKS];
}
/* commit.c: the key locks (error-checking mutexes) and the pin stripes, made at open and
 * destroyed at close. */
void cn_obj__key_locks_init(cn_obj_store *s);
void cn_obj__key_locks_fini(cn_obj_store *s);
/* quorum.c EC-13 (cn_ec_set_split_wait, ctx: the store): waits, at most 100 ms, for a commit of
 * vol/key in progress; false when it timed out. */
bool cn_obj__split_wait(void *ctx, const char *vol, const char *key);
/* Bucket heal (erasure.h EC-9): every bucket a set lists (at least K of its drives hold
 * it) is made on the set's drives that lack it — a drive that was offline when the
 * bucket was made, so that writes and heal reach it. At start, when a drive comes back
 * (drive monitor) and before each heal run; callers hold ns_lock exclusively (OBJ-5) or run
 * before requests are served. */
void cn_obj__heal_buckets(cn_obj_store *s);
/* EC-11 (vols.c) for the whole store, under the namespace write lock: bucket folders that no
 * set holds on enough drives to be a bucket (deleted while those drives were away) are
 * removed with what they hold (dry_run: only counted). Nothing when any set cannot list
 * its buckets (no whole view). Returns how many folders (bucket x set) were found. */
size_t cn_obj__purge_dangling_buckets(cn_obj_store *s, bool dry_run);
/* Bucket name and key rules: CN_ERR_NO_BUCKET, CN_ERR_BAD_KEY, CN_ERR_KEY_TOO_LONG. */
cn_err cn_obj__check_names(const char *bucket, const char *key);
/* The durability barrier of every set (OBJ-3); CN_OK at once when not durable. Commits of one
 * key use cn_obj__barrier_set of its set. */
cn_err cn_obj__barrier(cn_obj_store *s);
/* Deep copy of n pairs (*out NULL when n == 0). */
cn_err cn_obj__copy_kvs(const cn_kv *src, size_t n, cn_kv **out);
/* Moves the record's fields into info (info's previous content is released). */
void cn_obj__info_from_meta(cn_obj_info *info, cn_ec_meta *m);

/* Streams body through MD5 into buf-sized chunks. When allow_inline and the whole body
 * fits the first chunk and is at most inline_max, it stays in buf (*inline_data true, no
 * writer); otherwise the bytes go to a new writer on set for bucket/key with the parity of
 * storage_class (*w, abort it on any later failure).
 * A body longer than max (or than expect when expect >= 0) gives CN_ERR_TOO_LARGE /
 * CN_ERR_INVALID, a shorter one than expect CN_ERR_CLOSED; reader errors are mapped as
 * cn_obj_put documents. */
cn_err cn_obj__recv(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                    const char *storage_class, cn_reader *body, int64_t expect, int64_t max,
                    bool allow_inline, unsigned char *buf, cn_ec_writer **w, int64_t *total,
                    unsigned char md5[16], bool *inline_data);

/* object.c: a new object reader of bucket/key with the key pinned (OBJ-6): the caller then
 * opens the version's erasure reader and attaches it. cn_obj_reader_close releases it,
 * attached or not. CN_ERR_NOMEM only. */
cn_err cn_obj__reader_new(cn_obj_store *s, const char *bucket, const char *key,
                          cn_obj_reader **out);
/* Attaches er, open on version m (already checked), to r; fills info (may be NULL) from m
 * (moves m's meta). A version without a data folder (inline) unpins the key at once. */
void cn_obj__reader_attach(cn_obj_reader *r, cn_ec_reader *er, cn_ec_meta *m, cn_obj_info *info);
/* OBJ-6: pins bucket/key for a reader (p is linked into the store until cn_obj__unpin, which
 * runs the removals p was the last reader for). */
void cn_obj__pin_key(cn_obj_store *s, const char *bucket, const char *key, cn_obj__pin *p);
void cn_obj__unpin(cn_obj_store *s, cn_obj__pin *p);
/* OBJ-6: cn_ec_delete_data(set, bucket, key, data_id) now, or when the readers of the key
 * that pinned before this call have closed (data_id NULL: at once; it only removes empty
 * folders). */
void cn_obj__drop_data(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                       const char *data_id);

/* --- store, format and drive monitor (store.c, format.c, monitor.c) -------------------
 * Drives are numbered over the whole store, pool after pool, set after set, slot after
 * slot ("at"): the index of open_err and of the monitor's arrays. */
static inline size_t cn_obj__total_drives(const cn_obj_store *s)
{
	size_t total = 0;
	for (size_t i = 0; i < s->nsets; i++)
		total += cn_ec_set_ndrives(s->sets[i]);
	return total;
}
/* format.c: reads, checks and writes the format record of every drive (open_err[at]: the
 * drive could not be opened), refusing drives that belong elsewhere; then checks that
 * every set has quorum (CN_ERR_QUORUM or the reason a drive was refused). A drive
 * formatted into an existing deployment gets the buckets and sets s->heal_at_start. */
cn_err cn_obj__format_all(cn_obj_store *s, const cn_err *open_err);
/* format.c: drive d of set's format record, read into b (CN_ERR_NOT_FOUND: none). */
cn_err cn_obj__format_read(cn_ec_set *set, size_t d, cn_buf *b);
/* format.c: writes the format record of slot (pool, idx, slot). */
cn_err cn_obj__format_write(cn_obj_store *s, cn_ec_set *set, size_t pool, size_t idx,
                            size_t slot);
/* format.c: slot (p, k, d)'s format record, read into b (unless !read: b holds it) and
 * checked: CN_ERR_INVALID when it names another slot or deployment; read errors. */
cn_err cn_obj__format_check(cn_obj_store *s, cn_ec_set *set, size_t p, size_t k, size_t d,
                            cn_buf *b, bool read);
/* format.c: whether empty drive d of set looks like the mount point of a disk that is not
 * mounted (formatting it would put the slot's data on the parent filesystem). */
bool cn_obj__looks_unmounted(cn_ec_set *set, size_t d);
/* format.c: logs that drive d (slot at) is such a mount point and suspends it
 * (cn_obj__suspend_slot). */
void cn_obj__suspend_unmounted(cn_obj_store *s, cn_ec_set *set, size_t p, size_t k, size_t d,
                               size_t at);
/* monitor.c: suspends slot at (set, d) for the drive monitor to look at again
 * (mon_suspended), or, without a monitor, refuses it for good. */
void cn_obj__suspend_slot(cn_obj_store *s, cn_ec_set *set, size_t d, size_t at);
/* monitor.c: the monitor's state, made before cn_obj__format_all (which may suspend a
 * slot): none when the monitor is off or every set has one drive. start: checks every
 * drive_check_ms from then on; stop: joins the check in progress and frees the state. */
void cn_obj__monitor_alloc(cn_obj_store *s);
void cn_obj__monitor_start(cn_obj_store *s);
void cn_obj__monitor_stop(cn_obj_store *s);
/* bucket.c: the buckets onto the drives formatted into an existing deployment (is_new[at]):
 * their folders on every set and their system files copied from another drive. Callers
 * hold ns_lock exclusively (OBJ-5) or run before requests are served. */
void cn_obj__restore_buckets(cn_obj_store *s, const bool *is_new);

/* heal.c: the background healer (queue + scanner threads), started and stopped with the
 * store; enqueue copies the reader's object name (never blocks: a full queue drops it, the
 * scanner finds it later). */
void cn_obj__heal_start(cn_obj_store *s);
void cn_obj__heal_stop(cn_obj_store *s);
void cn_obj__heal_enqueue(cn_obj_store *s, const cn_ec_reader *r);
/* Starts a background scan now (a drive was formatted into its slot); no-op when the
 * scanner is off. */
void cn_obj__heal_scan_now(cn_obj_store *s);
/* For tests: the heals waiting in the queue (not the one in progress), and whether the
 * healer was told to stop (cn_obj_store_close). Both 0/false without a healer. */
void cn_obj__heal_queue_state(cn_obj_store *s, size_t *waiting, bool *stopping);

/* OBJ-7 (commit.c): a commit's previous records, from cn_obj__prev_keep to cn_obj__prev_drop:
 * the caller's storage, on its key lock's list meanwhile. */
typedef struct cn_obj__prevk {
	struct cn_obj__prevk *next;
	uint64_t h;  /* the key's hash */
	bool kept;   /* on the list: cn_obj__prev_drop must follow */
	bool nodrop; /* a later commit of the key failed meanwhile: its drop must not drop */
} cn_obj__prevk;
/* Before a commit that replaces the current version old (read under the key's lock, which
 * the caller holds): keeps it as every drive's previous record and puts pk on the lock's
 * list. A version read from previous records (old->from_prev: a commit cut short) is
 * healed first and must then read at quorum from the current records (keeping now would
 * replace the previous records that hold it). Errors (nothing kept, pk->kept false):
 * CN_ERR_QUORUM, CN_ERR_IO: the commit must not go on.
 * cn_obj__prev_drop: after the commit's barrier (committed) or its failure, with or
 * without the key's lock held: takes pk off the list, and when committed drops the
 * previous records unless a later commit of the same key has kept its own (still on the
 * list: they must stay until its barrier) or failed (pk->nodrop: it may have renamed its
 * record onto some drives, and the previous records hold the version it replaced, which
 * may be acknowledged by then). A failed commit (!committed) drops nothing and marks the
 * earlier commits of the key still on the list nodrop. No-op when !pk->kept. stale_vid (NULL: none):
 * with the drop, also the noncurrent version of that id (a promoted version's copy, which
 * stays until the promotion is durable) while that version is still the current one. */
cn_err cn_obj__prev_keep(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                         const cn_ec_meta *old, cn_obj__prevk *pk);
void cn_obj__prev_drop(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                       cn_obj__prevk *pk, bool committed, const char *stale_vid);
/* Under the key's lock: whether a commit of bucket/key is between cn_obj__prev_keep and
 * cn_obj__prev_drop (its previous records must stay). */
bool cn_obj__prev_pending(cn_obj_store *s, const char *bucket, const char *key);

/* versions.c: committing a new current version under the bucket's versioning state.
 * Under the key's lock: vprep (reads the current version, picks the new version id into
 * m->version_id, raises m->mtime_ms above the current version's (VER-5), keeps the current
 * one as noncurrent when it must survive, notes what a replaced version leaves to
 * remove), then the caller's commit, then vpost (only after a
 * successful commit). After the barrier, vfinish removes the replaced data (only when
 * committed) and releases vc, whatever happened (also after a failed vprep). */
typedef struct cn_obj__vcommit {
	cn_ec_set *set;   /* the key's set (given to vprep) */
	cn_versioning v;
	cn_ec_meta old;   /* the version that was current (skip_inline), when old_ok */
	bool old_ok;
	bool drop_null;   /* suspended: the noncurrent "null" version goes after the commit */
	cn_obj__prevk pk; /* OBJ-7: the replaced record kept as the previous one */
	int ndrop;
	char drop[2][CN_DRIVE_ID_MAX + 1];
} cn_obj__vcommit;
cn_err cn_obj__versioning(cn_obj_store *s, const char *bucket, cn_versioning *v);
void cn_obj__versioning_forget(cn_obj_store *s, const char *bucket);
cn_err cn_obj__vprep(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                     cn_versioning v, cn_ec_meta *m, cn_obj__vcommit *vc);
void cn_obj__vpost(cn_obj_store *s, const char *bucket, const char *key, cn_obj__vcommit *vc);
void cn_obj__vfinish(cn_obj_store *s, const char *bucket, const char *key, cn_obj__vcommit *vc,
                     const char *new_data_id, bool committed);

/* multipart.c: drops the bucket's configuration documents and uploads (cn_obj_delete_bucket,
 * under the exclusive ns_lock, after the bucket folder is gone). */
void cn_obj__bucket_gone(cn_obj_store *s, const char *bucket);
/* multipart.c: the path of bucket configuration document i (0, 1, ...) of bucket in the
 * system area ("" when bucket is not a valid name); false past the last one. */
bool cn_obj__config_path_at(size_t i, const char *bucket, char *out, size_t cap);
/* multipart.c: starts / stops the stale-upload janitor (store open / close). */
void cn_obj__janitor_start(cn_obj_store *s);
void cn_obj__janitor_stop(cn_obj_store *s);

#endif
