/* erasure: one erasure set — K data + M parity shards of every object spread over the set's
 * drives (ISA-L Reed-Solomon, codec.h), each shard block behind its bitrot hash, the
 * per-drive metadata record (its codec, docs/FORMAT.md §4), quorum over per-drive results,
 * healing, and the record cache. A set of one drive is K=1 M=0: data passes straight
 * through and the quorum is that drive's answer. The object layer calls only this layer;
 * this layer calls only the drive API (drive/drive.h). The rules are EC-1..EC-16 (their
 * files: set.c's header), CODEC-1..CODEC-4 (codec.c) and RCACHE-1..RCACHE-2 (erasure_int.h).
 *
 * Thread rules: all functions may block and are safe concurrently, except that one
 * cn_ec_writer / cn_ec_reader is used by one thread at a time. Callers serialize commits
 * of one key (the object layer's key locks); this layer does not lock. */
#ifndef CN_ERASURE_H
#define CN_ERASURE_H

#include "drive/drive.h"
#include "util/util.h"

#define CN_EC_RECORD_MAX (8u << 20)   /* largest metadata record accepted from disk */
#define CN_EC_INLINE_CAP (1u << 20)   /* inline data in a record never exceeds this */
#define CN_EC_BLOCK_SIZE (1u << 20)
#define CN_EC_MAX_DRIVES 16
_Static_assert(CN_EC_MAX_DRIVES <= 64, "slot masks (cn_ec_heal_result.current_slots) are 64 bits");
#define CN_EC_MAX_META 1024           /* kv pairs in a record */
#define CN_EC_MAX_PARTS 10000
#define CN_EC_VERSION_ID_MAX 36

typedef struct cn_ec_part {
	uint32_t number;
	int64_t size;
	char etag[72];
} cn_ec_part;

/* A record's bytes, shared by the record cache and by the metas decoded from them (whose
 * inline shard streams point into the record instead of being copied out). Immutable once
 * wrapped; freed by the last cn_ec_rec_unref, from any thread. */
typedef struct cn_ec_rec cn_ec_rec;
typedef struct cn_ec_meta cn_ec_meta; /* below */
/* Wraps a malloc'ed buffer of len bytes: the record takes it (refs = 1). NULL when out of
 * memory; p is then still the caller's. */
cn_ec_rec *cn_ec_rec_wrap(void *p, size_t len);
cn_ec_rec *cn_ec_rec_ref(cn_ec_rec *r); /* returns r */
void cn_ec_rec_unref(cn_ec_rec *r);     /* NULL: no-op */
const unsigned char *cn_ec_rec_bytes(const cn_ec_rec *r, size_t *len);
/* Bitrot checks of a shared record's inline shard stream, done once (EC-3): its bytes never
 * change, so a block whose hash matched once matches for every later reader (of the record
 * cache's copy). Blocks 0..63 are remembered (an inline stream has at most 2 blocks); a
 * failed check marks nothing, so every later read checks again. Thread-safe (relaxed
 * atomics: a reader that misses a mark only checks again). */
bool cn_ec_rec_block_checked(const cn_ec_rec *r, size_t block);
void cn_ec_rec_mark_checked(cn_ec_rec *r, size_t block);
/* The version identity (quorum.c's EC-2 hash) of the record, computed once by the read that
 * decoded it in full, and what cn_ec_meta_decode_rec_partial gives, taken from m (that
 * full decode of r's bytes, with or without its inline stream): set before the record is
 * shared (the record cache's insert), read by later hits so they need not decode the
 * record to compare versions. set: false (nothing set) when m does not match r's bytes.
 * get: false when never set. */
bool cn_ec_rec_set_ident(cn_ec_rec *r, uint64_t ident, const cn_ec_meta *m);
bool cn_ec_rec_get_ident(const cn_ec_rec *r, uint64_t *ident);

/* One version's metadata as stored in each drive's record. Strings are NUL-terminated;
 * meta, parts and inline_data are owned (cn_ec_meta_fini frees), except that inline_data
 * points into inline_rec when that is set (a reference the meta holds: read-only bytes). */
typedef struct cn_ec_meta {
	int64_t size;
	int64_t mtime_ms;
	char etag[72];
	char storage_class[24];
	cn_kv *meta;
	size_t nmeta;
	/* erasure parameters and distribution */
	uint8_t k, m;
	uint32_t block_size;
	uint8_t index;                 /* this drive's shard index (0-based) */
	uint8_t ndist;
	uint8_t dist[CN_EC_MAX_DRIVES]; /* shard order over the set's drives */
	char data_id[CN_DRIVE_ID_MAX + 1]; /* "" when the data is inline */
	cn_ec_part *parts;
	size_t nparts;
	unsigned char *inline_data;    /* this drive's shard bytes when inline */
	cn_ec_rec *inline_rec;         /* set: inline_data lies in this shared record */
	size_t inline_len;
	bool has_inline;
	/* versioning: "" = the null version of a never-versioned bucket, "null" = the null
	 * version, else the version id; a delete marker has no data (inline, empty) */
	char version_id[CN_EC_VERSION_ID_MAX + 1];
	bool delete_marker;
	/* decoded by cn_ec_meta_decode_rec_partial: meta and parts left out (NULL, 0), the
	 * strings empty */
	bool partial;
	/* not stored: set by a quorum read (cn_ec_read_meta) whose version some drives hold
	 * only as their previous record (quorum.c EC-15): heal it before replacing it */
	bool from_prev;
	/* not stored: set by a listing (cn_ec_walk, cn_ec_walk_all) when a walked drive also
	 * holds a previous record of the key (EC-15: a commit in progress, or a leftover) */
	bool prev_seen;
} cn_ec_meta;

void cn_ec_meta_init(cn_ec_meta *m);
void cn_ec_meta_fini(cn_ec_meta *m);
/* Encodes m as a record (FORMAT.md §4) appended to out. */
cn_err cn_ec_meta_encode(const cn_ec_meta *m, cn_buf *out);
/* Decodes a record; CN_ERR_CORRUPT for anything malformed (bad magic, version, length,
 * checksum, field). skip_inline leaves inline_data NULL (listing). Never reads outside
 * p[0..len). On error m is left initialized and empty. */
cn_err cn_ec_meta_decode(const void *p, size_t len, bool skip_inline, cn_ec_meta *m);
/* The same for a record whose checksum was verified when it was read and that has stayed
 * in memory since (the record cache): the CRC is not computed again (every other check is
 * made; inline shard hashes are the reader's). */
cn_err cn_ec_meta_decode_verified(const void *p, size_t len, bool skip_inline, cn_ec_meta *m);
/* Decodes a shared record (its checksum checked unless verified, as above) without
 * copying its inline stream: m->inline_data then points into r and m holds a reference
 * to r (m->inline_rec) until cn_ec_meta_fini or cn_ec_meta_drop_inline. */
cn_err cn_ec_meta_decode_rec(cn_ec_rec *r, bool skip_inline, bool verified, cn_ec_meta *m);
/* What a quorum read needs of a record it only compares (by cn_ec_rec_get_ident) and
 * takes the inline stream of, from what cn_ec_rec_set_ident kept (CN_ERR_INVALID when
 * nothing was): size, mtime, the erasure fields, delete_marker and the inline stream (a
 * reference, as above) — no user metadata or parts, and the strings (etag, storage class,
 * data id, version id) empty. No byte of the record is read and nothing allocated.
 * m->partial is set; the record is decoded in full where m is to be returned. */
cn_err cn_ec_meta_decode_rec_partial(cn_ec_rec *r, bool skip_inline, cn_ec_meta *m);
/* Releases m's inline bytes (freed, or its reference to the shared record dropped);
 * inline_data becomes NULL, has_inline and inline_len stay. */
void cn_ec_meta_drop_inline(cn_ec_meta *m);

/* --- the set -------------------------------------------------------------------------- */
typedef struct cn_ec_set cn_ec_set;

/* A set of n drives (1..16) storing each object as K = n - M data and M parity shards
 * (M = parity for STANDARD objects, parity_rrs for REDUCED_REDUNDANCY; M <= n/2, M = 0
 * only for n = 1). Takes ownership of the drives (closed by cn_ec_set_free); drives[i]
 * may be NULL: slot i is offline. Write quorum K (K+1 when K == M), read quorum K. */
cn_err cn_ec_set_new(cn_drive **drives, size_t n, unsigned parity, unsigned parity_rrs,
                     cn_ec_set **out);
void cn_ec_set_free(cn_ec_set *s);
/* Gives the set a record cache of budget_bytes (erasure_int.h; 0: none), replacing the one
 * it has (64 MiB from cn_ec_set_new). Only before the set is used. */
cn_err cn_ec_set_cache(cn_ec_set *s, size_t budget_bytes);
/* EC-13 (quorum.c): how a read waits for a commit of the key in progress. Reads take no lock,
 * and a commit renames its records drive by drive, so a read in between may find the
 * drives split between versions of the key (or a version and "no such key"), none at its
 * quorum. Such a read calls fn(ctx, vol, key) and reads again (a few times at most). fn
 * returns true once every commit of the key that was renaming records when it was called
 * has finished its renames (the object layer: the key's lock taken and released), or
 * false when it gave up waiting at a bound of its own (then the read reads once more and
 * answers); it may be called by a thread that holds that lock itself, and must then return
 * true at once (nothing of the key is in progress). fn NULL, the default: the read sleeps
 * briefly instead (0.2-1.2 ms, 4.2 ms in all), which a commit preempted on a busy machine
 * can outlast. Only before the set is used. */
typedef bool (*cn_ec_split_wait_fn)(void *ctx, const char *vol, const char *key);
void cn_ec_set_split_wait(cn_ec_set *s, cn_ec_split_wait_fn fn, void *ctx);
/* The set's record cache as `cairn admin info` reports it: the budget, the bytes it
 * holds, and the lookups that hit and missed since it was made (a GET looks up one
 * record per drive it reads). All 0 when the set has no cache. */
typedef struct cn_ec_cache_stats {
	size_t budget, bytes;
	uint64_t hits, misses;
} cn_ec_cache_stats;
void cn_ec_set_cache_stats(cn_ec_set *s, cn_ec_cache_stats *out);
/* Takes slot i offline for good (a drive refused at start: wrong deployment or slot);
 * the drive is closed. */
void cn_ec_set_refuse(cn_ec_set *s, size_t i);
/* The slot's drive endpoint for logs, or NULL when the slot is offline. */
const char *cn_ec_set_endpoint(const cn_ec_set *s, size_t i);
size_t cn_ec_set_ndrives(const cn_ec_set *s);
/* STANDARD and REDUCED_REDUNDANCY parity of the set. */
void cn_ec_set_parity(const cn_ec_set *s, unsigned *standard, unsigned *rrs);
/* Slot i's drive info (CN_ERR_OFFLINE for a refused slot). */
cn_err cn_ec_set_drive_info(cn_ec_set *s, size_t i, cn_drive_info *out);
/* Slot i's drive after its folder was removed and made again, wiped or replaced (drive.h
 * reopen): CN_OK when usable again; CN_ERR_OFFLINE for a refused slot or nothing there. */
cn_err cn_ec_set_reopen(cn_ec_set *s, size_t i);
/* Whether slot i's drive path now names another folder than the one in use (drive.h
 * replaced); cn_ec_set_reopen then switches to it. False for a refused slot. */
bool cn_ec_set_replaced(cn_ec_set *s, size_t i);
/* Suspends slot i's drive while running (it now holds another slot's or deployment's
 * format: drive.h cn_drive_health_refuse; every read and write skips it, the set's record
 * cache is cleared), or admits it again. Unlike cn_ec_set_refuse the drive stays, so its
 * owner can see when another folder is put in its place. */
void cn_ec_set_suspend(cn_ec_set *s, size_t i, bool suspend);
bool cn_ec_set_suspended(cn_ec_set *s, size_t i);
/* The volumes on slot i's drive alone (restoring buckets onto a new drive). */
cn_err cn_ec_list_vols_at(cn_ec_set *s, size_t i, cn_drive_vol **out, size_t *n);
/* True when at least read quorum of the set's drives are online. */
bool cn_ec_set_online(cn_ec_set *s);
/* Free space of the set: the smallest free space of its online drives times K (for the
 * choice of a pool for new objects); 0 when offline. */
uint64_t cn_ec_set_free_bytes(cn_ec_set *s);

/* System files: per drive (format differs per drive) or on all drives (bucket files). */
cn_err cn_ec_read_sys(cn_ec_set *s, size_t drive, const char *name, size_t max, cn_buf *out);
cn_err cn_ec_write_sys(cn_ec_set *s, size_t drive, const char *name, const void *p, size_t len);
cn_err cn_ec_write_sys_all(cn_ec_set *s, const char *name, const void *p, size_t len);
cn_err cn_ec_remove_sys_all(cn_ec_set *s, const char *name);

/* Volumes (bucket folders) on every drive of the set, reduced by quorum (make_vol also
 * makes the folder on the drives that lack it when it exists elsewhere). */
cn_err cn_ec_make_vol(cn_ec_set *s, const char *vol);
cn_err cn_ec_stat_vol(cn_ec_set *s, const char *vol, int64_t *mtime_ms);
cn_err cn_ec_delete_vol(cn_ec_set *s, const char *vol);
/* The vols at least K drives of the set hold (EC-9 in vols.c: a drive that missed a bucket's
 * creation or removal hides or shows nothing); CN_ERR_QUORUM when fewer than K answer. */
cn_err cn_ec_list_vols(cn_ec_set *s, cn_drive_vol **out, size_t *n);
/* EC-11: the vols some drives hold that are not in keep (the buckets every set lists) and
 * that fewer than K drives could hold, counting the drives that cannot answer: buckets
 * deleted while those drives were away. Free: cn_drive_free_names. */
cn_err cn_ec_dangling_vols(cn_ec_set *s, const cn_drive_vol *keep, size_t nkeep, char ***out,
                           size_t *n);
/* Removes vol with everything in it from every drive that holds it: only for a name
 * cn_ec_dangling_vols returned, under the same namespace lock. Not synced. */
cn_err cn_ec_purge_vol(cn_ec_set *s, const char *vol);

/* Writing a version: new writer (fresh tmp id and data id) for the object vol/key (its
 * shard rotation derives from them, as MinIO's; its parity from storage_class:
 * "REDUCED_REDUNDANCY" -> parity_rrs, anything else or NULL STANDARD), write the object's
 * bytes in order, then commit or abort. commit fills m's erasure fields and data_id,
 * encodes one record per drive and renames into place (not synced: call cn_ec_sync). For
 * an inline version (m->has_inline, m->inline_data = the whole object) use
 * cn_ec_commit_inline: no writer, no data folder (parity from m->storage_class). */
typedef struct cn_ec_writer cn_ec_writer;
cn_err cn_ec_writer_new(cn_ec_set *s, const char *vol, const char *key, const char *storage_class,
                        cn_ec_writer **out);
cn_err cn_ec_writer_write(cn_ec_writer *w, const void *p, size_t len);
/* Zero-copy writing, for bodies read straight into the writer: *p receives where the
 * object's next bytes go in the writer's pending block, and the result how many fit there
 * (1 .. CN_EC_BLOCK_SIZE). The caller places up to that many at *p, then calls
 * cn_ec_writer_fill with their count, which appends them as cn_ec_writer_write would
 * (encoding and writing the block once it is full; errors as cn_ec_writer_write). *p is
 * valid until the next call on w. A set of one drive has no block: 0, *p NULL; use
 * cn_ec_writer_write. */
size_t cn_ec_writer_space(cn_ec_writer *w, unsigned char **p);
cn_err cn_ec_writer_fill(cn_ec_writer *w, size_t n);
cn_err cn_ec_writer_commit(cn_ec_writer *w, const char *vol, const char *key, cn_ec_meta *m);
void cn_ec_writer_abort(cn_ec_writer *w); /* also frees a committed writer */
cn_err cn_ec_commit_inline(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m);

/* Durability barrier on every drive of the set (group commit inside each drive). */
cn_err cn_ec_sync(cn_ec_set *s);

/* The version's record: CN_ERR_NO_BUCKET, CN_ERR_NO_KEY, CN_ERR_CORRUPT. skip_inline as
 * for cn_ec_meta_decode. */
cn_err cn_ec_read_meta(cn_ec_set *s, const char *vol, const char *key, bool skip_inline,
                       cn_ec_meta *m);
/* Deleting: the record (CN_ERR_NO_KEY when absent), then — after cn_ec_sync — the data
 * folder and empty parents. */
cn_err cn_ec_delete_meta(cn_ec_set *s, const char *vol, const char *key);
cn_err cn_ec_delete_data(cn_ec_set *s, const char *vol, const char *key, const char *data_id);

/* Reading a version as a snapshot: the record and its shard files are opened together
 * (retrying when a concurrent overwrite removes the data between the two). Contract: the
 * caller keeps a version's data folder until every reader opened on it has closed; a reader
 * that later finds a slot's record replaced reads that slot's shard files by the version's
 * data id. */
typedef struct cn_ec_reader cn_ec_reader;
cn_err cn_ec_open(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m,
                  cn_ec_reader **out);
/* Reads up to len bytes at off (< len only at the end). */
cn_err cn_ec_reader_read(cn_ec_reader *r, int64_t off, void *buf, size_t len, size_t *got);
/* Reads up to len bytes at off (< len only at the end). A multipart version's parts are
 * separate files opened as the reads reach them. */
/* Zero-copy read: *p points at the bytes from off, *n (1..max) of them, verified and
 * decoded like cn_ec_reader_read's; valid until the next call on r or its close. *p NULL
 * (and CN_OK) at or past the end, or when the bytes sit in a plain file (use
 * cn_ec_reader_read or cn_ec_reader_plain_fd). Errors as cn_ec_reader_read. */
cn_err cn_ec_reader_view(cn_ec_reader *r, int64_t off, size_t max, const void **p, size_t *n);
/* Several views at once: the bytes from off on (at most max of them, in at most maxiov
 * pieces: one per data shard), all from the one block that holds off, so all valid until
 * the next call on r or its close. *niov = 0 (CN_OK) where cn_ec_reader_view gives NULL;
 * *n = their total. Errors as cn_ec_reader_view, with no piece returned. */
cn_err cn_ec_reader_viewv(cn_ec_reader *r, int64_t off, size_t max, struct iovec *iov, int maxiov,
                          int *niov, size_t *n);
/* When the bytes from off sit verbatim in one plain file: its fd, the offset in it and how
 * many of the version's bytes follow there (*avail >= 1) (zero-copy sends). false
 * otherwise (inline, coded shards, or an error opening the part: cn_ec_reader_read then
 * reports it). */
bool cn_ec_reader_plain_fd(cn_ec_reader *r, int64_t off, int *fd, int64_t *fd_off, int64_t *avail);
void cn_ec_reader_close(cn_ec_reader *r);
/* True when reading found a missing, stale or corrupt shard or record (the data was
 * rebuilt from the others): the object should be healed. */
bool cn_ec_reader_degraded(const cn_ec_reader *r);
/* True when the version's data lies in its records (inline): reading it touches no drive. */
bool cn_ec_reader_in_records(const cn_ec_reader *r);
/* No-I/O mode for the calling thread (drive.h cn_drive_no_io): record reads ask the drives
 * in their no-wait mode, and every other drive call (shard reads) answers CN_ERR_BUSY
 * instead of waiting — a read that met CN_ERR_BUSY returns it as a whole, having decided
 * nothing (no heal queued, no drive judged). */
void cn_ec_no_io(bool on);
/* The version the reader reads: vol, key and version id (NULL: the current one). */
void cn_ec_reader_name(const cn_ec_reader *r, const char **vol, const char **key, const char **vid);

/* --- healing --------------------------------------------------------------------------
 * Rebuilds what the set's online drives miss of one version (vid NULL: the current one):
 * a missing or stale record, missing, short or corrupt shard files. Reads the version
 * (read quorum), re-encodes it and rewrites each damaged drive's shards and record. With
 * dry_run only counts. A one-drive set has nothing to heal from (CN_OK, zero counts).
 * Errors: the read's (CN_ERR_NO_KEY, CN_ERR_QUORUM ...), drive errors. */
typedef struct cn_ec_heal_result {
	unsigned drives_bad;     /* drives whose copy was damaged or missing */
	unsigned drives_healed;  /* of those, rewritten */
	unsigned drives_failed;  /* of those, could not be rewritten */
	int64_t bytes_written;
	bool from_prev;          /* read through previous records (EC-15): some drives held the
	                          * version only as their previous record */
	uint64_t current_slots;  /* bit d: slot d answered and holds the version as its
	                          * current record, or was rewritten so (offline slots and
	                          * failed rewrites: not set) */
} cn_ec_heal_result;
cn_err cn_ec_heal(cn_ec_set *s, const char *vol, const char *key, const char *vid, bool dry_run,
                  cn_ec_heal_result *res);

/* --- an overwrite's safety net (quorum.c EC-15) -------------------------------------------
 * cn_ec_prev_keep, under the key's lock just before a commit that replaces an existing
 * current record: every drive keeps that record as the key's previous one (drive.h
 * prev_keep; best effort: a drive that cannot keeps none). cn_ec_prev_drop, once the commit
 * is durable at write quorum and no later commit of the key has kept its own: every drive
 * removes it (best effort; leftovers are harmless, EC-15). Until then a read that finds no
 * version at quorum among the current records counts the previous ones, so a commit cut
 * short on some drives while others miss the key still reads the version it replaced.
 * One-drive sets keep none (their commit is one rename). The previous version's data
 * folder must outlive its record: the caller removes it only after the commit. */
void cn_ec_prev_keep(cn_ec_set *s, const char *vol, const char *key);
void cn_ec_prev_drop(cn_ec_set *s, const char *vol, const char *key);
/* The same on the slots whose bit is set (bit d: slot d), e.g. a heal's current_slots. */
void cn_ec_prev_drop_slots(cn_ec_set *s, const char *vol, const char *key, uint64_t slots);

/* --- versions ----------------------------------------------------------------------------
 * Noncurrent versions of a key (drive.h version_*): the current record is the one that
 * cn_ec_read_meta / cn_ec_open / commits use; a version id names a noncurrent one. The
 * caller (object layer) decides ids and order and serializes per key. */
cn_err cn_ec_version_keep(cn_ec_set *s, const char *vol, const char *key, const char *vid);
cn_err cn_ec_version_read(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                          bool skip_inline, cn_ec_meta *m);
/* The noncurrent version ids any of M+1 drives holds (EC-8 in versions.c: a wiped drive hides
 * none; an id may name a partial write: read each with quorum). Free with
 * cn_drive_free_names. */
cn_err cn_ec_version_list(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n);
/* The same from every drive of the set (heal: a version left on one drive, EC-10). */
cn_err cn_ec_version_list_all(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n);
/* The key's data folders that no record of the key (current or noncurrent, at quorum or
 * not) references on any drive of the set: what a crash between an overwrite and the
 * removal of the replaced data leaves (FORMAT.md §2). Read from the drives (never the
 * record cache). Only a whole view may call a folder unreferenced: when any drive cannot
 * answer (offline, a record unreadable or corrupt, a listing error) the list is empty.
 * The caller holds the key's lock (a commit renames its data folder in before its record)
 * and removes them only when no reader may still hold one. Free: cn_drive_free_names. */
cn_err cn_ec_orphan_data(cn_ec_set *s, const char *vol, const char *key, char ***ids, size_t *n);
/* EC-10. A version no read can ever return: the drives that hold its record, with those that
 * cannot answer (offline, unreadable, corrupt, no bucket), are fewer than its read quorum,
 * and no other version of the key has quorum either: a delete or overwrite that ran while
 * those drives were away, or a write that failed below quorum. Its records are removed
 * from the drives that hold them (their data folders then belong to no version:
 * cn_ec_orphan_data). vid NULL: the current record. Read from the drives (never the
 * record cache); the caller holds the key's lock. *purged: records removed (dry_run: that
 * would be); CN_OK also when nothing is dangling. Not synced (a purge lost in a crash is
 * found again). */
cn_err cn_ec_purge_dangling(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                            bool dry_run, size_t *purged);
/* The keys of vol starting with prefix for which some drive of the set holds data
 * folders but no current record (drive op data_keys): the candidates for
 * cn_ec_orphan_data that no listing shows, as a delete that crashed after its commit
 * leaves them. Sorted, each once, at most max (the rest wait for a later call); a drive
 * that cannot answer is skipped (its keys wait too). Free: cn_drive_free_names. */
cn_err cn_ec_data_keys(cn_ec_set *s, const char *vol, const char *prefix, size_t max, char ***keys,
                       size_t *n);
cn_err cn_ec_version_delete(cn_ec_set *s, const char *vol, const char *key, const char *vid);
cn_err cn_ec_version_promote(cn_ec_set *s, const char *vol, const char *key, const char *vid);
/* Rewrites noncurrent version vid's record with m (edited meta, as cn_ec_update_meta). */
cn_err cn_ec_update_version_meta(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                                 cn_ec_meta *m);
/* cn_ec_open of noncurrent version vid (NULL: the current one, as cn_ec_open). */
cn_err cn_ec_open_version(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                          cn_ec_meta *m, cn_ec_reader **out);

/* --- multipart uploads ------------------------------------------------------------------
 * An upload lives on every drive of the set in the drive's upload area (drive.h upload_*):
 * small records (cn_ec_meta, encoded per drive like a version's record) and part shard
 * files. The caller (object layer) names the records and parts and serializes changes to
 * one upload. Names follow drive.h's id rules. */

/* Writes record `name` of the upload on every drive (create: the upload is new; otherwise
 * CN_ERR_NOT_FOUND when the upload is gone). m's erasure fields are filled here. */
cn_err cn_ec_upload_put_meta(cn_ec_set *s, const char *vol, const char *upload_id, const char *name,
                             bool create, cn_ec_meta *m);
/* Reads record `name` of the upload: CN_ERR_NOT_FOUND when it or the upload is missing,
 * CN_ERR_CORRUPT when unreadable. */
cn_err cn_ec_upload_get_meta(cn_ec_set *s, const char *vol, const char *upload_id, const char *name,
                             cn_ec_meta *m);
/* Upload ids of vol (upload_id NULL) or the names in one upload; see drive.h upload_list.
 * Merged from M+1 drives as cn_ec_version_list (a name may be a partial write: read each
 * with quorum); CN_ERR_NOT_FOUND when every drive asked lacks the upload. Free with
 * cn_drive_free_names. */
cn_err cn_ec_upload_list(cn_ec_set *s, const char *vol, const char *upload_id, char ***names,
                         size_t *n);
/* Closes the writer's shard files and moves them into the upload as part file `dst`
 * (replacing); m->size must equal the bytes written (CN_ERR_INVALID otherwise). The writer
 * is then spent: cn_ec_writer_abort frees it. CN_ERR_NOT_FOUND when the upload is gone. */
cn_err cn_ec_upload_take(cn_ec_writer *w, const char *vol, const char *upload_id, const char *dst,
                         const cn_ec_meta *m);
/* Commits a completed upload as the version of vol/key: shares (hard links) the upload's
 * part files srcs[0..n) as the parts 1..n of a new data folder and commits m (m->parts:
 * n entries in object order, m->size their sum) like cn_ec_writer_commit. Not synced.
 * The upload itself is untouched (remove it after the barrier). */
cn_err cn_ec_upload_commit(cn_ec_set *s, const char *vol, const char *upload_id,
                           const char *const *srcs, size_t n, const char *key, cn_ec_meta *m);
/* Removes the upload (upload_id NULL: all uploads of vol). */
cn_err cn_ec_upload_remove(cn_ec_set *s, const char *vol, const char *upload_id);

/* Rewrites the version's record with m (read with cn_ec_read_meta, skip_inline false, and
 * edited: meta only), keeping its data where it is. Not synced. */
cn_err cn_ec_update_meta(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m);

/* Listing: walks the set's keys in order (drive walk semantics, drive.h) calling fn with
 * each object's decoded record (inline data skipped) or a common prefix (m NULL). Corrupt
 * records are logged and skipped. */
typedef cn_err (*cn_ec_walk_fn)(void *ctx, const char *key, size_t keylen, bool is_prefix,
                                const cn_ec_meta *m);
cn_err cn_ec_walk(cn_ec_set *s, const char *vol, const char *prefix, const char *after,
                  bool slash_delim, cn_ec_walk_fn fn, void *ctx);
/* Listing for heal (EC-10): as cn_ec_walk without a delimiter, over every drive of the set
 * instead of M+1, and also reporting (m NULL) the keys seen on too few drives that no
 * quorum read returns: candidates for cn_ec_purge_dangling. */
cn_err cn_ec_walk_all(cn_ec_set *s, const char *vol, const char *prefix, const char *after,
                      cn_ec_walk_fn fn, void *ctx);

#endif
