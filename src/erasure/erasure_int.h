/* erasure_int.h: private to the erasure module: the record cache (rcache.c), and what the
 * files of an erasure set (set.c and the files beside it, listed there) share: the set's
 * and the reader's structures, small helpers, and the module-private cn_ec__ functions.
 *
 * The record cache keeps recently read current records (which hold small objects' bytes
 * inline) in memory, keyed by (drive slot, bucket, key), so a GET needs no open/read/close
 * of the records it reads (one per data drive on an erasure set). Entries are the records'
 * bytes as read: every hit is decoded as a drive read would be; the record's checksum and
 * its inline shard hashes are checked once, by the read that loaded it and the first read
 * of each inline block (the bytes cannot change in memory: cn_ec_rec_block_checked). A
 * hit does not see what changed on the drive behind the server's back (a byte flipped, a
 * folder removed); the heal paths therefore never read through the cache, and a
 * drive coming back or being re-formatted clears its set's cache.
 * All writes of records go through this module (commit, delete), which invalidates the
 * entry after changing the drives; coherence rests on two rules:
 *  RCACHE-1. A writer invalidates AFTER its renames/unlinks are done (under the object layer's
 *      key lock).
 *  RCACHE-2. A reader takes the slot's generation BEFORE reading the drives and inserts only if
 *      the generation is unchanged, so a record read before a concurrent commit can never
 *      be inserted after that commit's invalidation.
 * 4-way buckets, as many as the budget holds at ~2 KiB an entry (8,192 to 4 M; an insert
 * into a full bucket evicts its least recently used entry),
 * striped mutexes, a global byte budget: when it is spent, a clock hand sweeping the
 * buckets drops entries not hit since it last passed until the new one fits (CLOCK,
 * second chance). RCACHE-2's generation is per bucket. */
#ifndef CN_ERASURE_INT_H
#define CN_ERASURE_INT_H

#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "util/util.h"

#include <string.h>

typedef struct cn_rcache cn_rcache;
/* budget 0 disables the cache (every call becomes a no-op / miss). */
cn_err cn_rcache_new(size_t budget_bytes, size_t max_record, cn_rcache **out);
void cn_rcache_free(cn_rcache *c);
/* Hit: copies drive slot `drive`'s record into out (replacing its contents), returns true.
 * Miss: returns false and sets *gen for a later cn_rcache_put (RCACHE-2). */
bool cn_rcache_get(cn_rcache *c, unsigned drive, const char *vol, const char *key, cn_buf *out,
                   uint64_t *gen);
/* Hit: calls fn on the entry under its bucket's lock (fn must be short and must not call
 * the cache; it may take a reference with cn_ec_rec_ref to use the bytes after) and
 * returns true; no copy. Miss: returns false and sets *gen. */
bool cn_rcache_visit(cn_rcache *c, unsigned drive, const char *vol, const char *key,
                     void (*fn)(cn_ec_rec *rec, void *arg), void *arg, uint64_t *gen);
/* Caches a copy of a record read from drive slot `drive` after the miss that returned gen. */
void cn_rcache_put(cn_rcache *c, unsigned drive, const char *vol, const char *key, const void *rec,
                   size_t len, uint64_t gen);
/* The same without a copy: on true the cache holds a reference of its own to rec (its
 * length is what is accounted, so the caller trims a larger allocation before wrapping
 * it); false: not cached (over the budget or the size limit, or RCACHE-2). Either way the
 * caller's reference stays the caller's. */
bool cn_rcache_insert(cn_rcache *c, unsigned drive, const char *vol, const char *key,
                      cn_ec_rec *rec, uint64_t gen);
/* Invalidates the key's entries of slots 0..ndrives-1 (RCACHE-1). */
void cn_rcache_invalidate(cn_rcache *c, unsigned ndrives, const char *vol, const char *key);
/* Drops every entry (bucket deletion). */
void cn_rcache_clear(cn_rcache *c);
/* Counters for tests and metrics. */
void cn_rcache_stats(cn_rcache *c, uint64_t *hits, uint64_t *misses, size_t *bytes);
size_t cn_rcache_budget(const cn_rcache *c); /* 0 for NULL */

/* Tests: called before each wait of a read retried across a commit in progress (quorum.c
 * EC-13); NULL in the server. */
extern void (*cn_ec__split_retry_hook)(void);

/* --- the erasure set's files ----------------------------------------------------------- */

#define HASH_LEN CN_CODEC_HASH_LEN

/* One erasure set (set.c). */
struct cn_ec_set {
	cn_drive *drives[CN_EC_MAX_DRIVES]; /* NULL: slot offline */
	size_t n;
	int k, m;                           /* STANDARD */
	int m_rrs;                          /* REDUCED_REDUNDANCY parity */
	cn_codec *codec, *codec_rrs;        /* NULL for the plain (one drive) set */
	cn_rcache *rc;                      /* record cache (erasure_int.h); NULL: disabled */
	size_t read_skip;                   /* benchmarks: reads treat slots 0..read_skip-1 as
	                                       offline (CAIRN_DEBUG_READ_OFFLINE_SLOTS) */
	cn_ec_split_wait_fn split_wait;     /* EC-13; NULL: sleep */
	void *split_ctx;
};

#define D(s, i) ((s)->drives[i]) /* slot i's drive; NULL: offline */

/* A reader of one version (read.c; heal.c decodes through it). */
struct cn_ec_reader {
	cn_ec_set *s;
	int64_t size;
	size_t nparts;
	int64_t *ends;              /* owned: cumulative end offset of each part */
	char *vol, *key;            /* owned, for opening later parts */
	char vid[CN_EC_VERSION_ID_MAX + 1]; /* "" for the current version */
	char data_id[CN_DRIVE_ID_MAX + 1];
	bool degraded;              /* EC-3: some shard was missing or corrupt */
	bool in_records;            /* the version's data is inline: reads need no drive */
	/* plain */
	unsigned char *inline_data; /* owned (or in inline_rec); NULL when the data is in files */
	cn_ec_rec *inline_rec;      /* a reference: the shared record inline_data lies in */
	cn_drive_rfile *f;          /* the open part file (index cur) */
	size_t cur;
	/* coded */
	cn_codec *c;
	unsigned k, m, block_size;
	uint8_t dist[CN_EC_MAX_DRIVES];
	int8_t slot_of[CN_EC_MAX_DRIVES];   /* shard index -> slot (-1: no good slot) */
	bool good[CN_EC_MAX_DRIVES];        /* slot's record agrees (EC-2) */
	bool offline[CN_EC_MAX_DRIVES];     /* slot's drive did not answer */
	bool unread[CN_EC_MAX_DRIVES];      /* EC-7: slot's record not read (yet) */
	bool prev[CN_EC_MAX_DRIVES];        /* EC-15: slot's record is its previous one */
	uint64_t ident;                     /* cn_ec__rec_identity of the chosen record */
	unsigned char *inl[CN_EC_MAX_DRIVES]; /* coded inline streams per slot: owned, or in */
	cn_ec_rec *inl_rec[CN_EC_MAX_DRIVES]; /* these shared records (references; read-only) */
	size_t inl_len[CN_EC_MAX_DRIVES];
	cn_drive_rfile *cf[CN_EC_MAX_DRIVES]; /* open shard files of part cpart */
	bool cf_bad[CN_EC_MAX_DRIVES];      /* opening failed for this part */
	size_t cpart;
	bool cf_open;
	unsigned char *blk;                 /* joined block (block_size): heal only */
	unsigned char *dptr[CN_EC_MAX_DRIVES]; /* the loaded block's data shards, in sh */
	size_t blk_part, blk_idx, blk_len, blk_sl;
	bool blk_valid;
	unsigned char *sh;                  /* (k+m) * sh_stride scratch */
	size_t sh_stride;                   /* HASH_LEN + shard_len of the largest block */
};


/* Small helpers every file of the set uses. */
static inline bool coded(const cn_ec_set *s)
{
	return s->n > 1;
}

static inline size_t write_quorum(const cn_ec_set *s)
{
	return (size_t)s->k + (s->k == s->m);
}

static inline size_t read_quorum(const cn_ec_set *s)
{
	return (size_t)s->k;
}

/* A drive that is away, failed or stalled says nothing about the request: in a set of
 * several drives its error is never the verdict (too few drives left is CN_ERR_QUORUM,
 * 503, as MinIO's InsufficientWriteQuorum, not 500 InternalError). */
static inline bool drive_fault(cn_err e)
{
	return e == CN_ERR_OFFLINE || e == CN_ERR_IO || e == CN_ERR_TIMEOUT;
}

static inline unsigned parity_for(const cn_ec_set *s, const char *storage_class)
{
	if (storage_class && !strcmp(storage_class, "REDUCED_REDUNDANCY"))
		return (unsigned)s->m_rrs;
	return (unsigned)s->m;
}

static inline cn_codec *codec_for(const cn_ec_set *s, unsigned k, unsigned m)
{
	if (s->codec && cn_codec_k(s->codec) == k && cn_codec_m(s->codec) == m)
		return s->codec;
	if (s->codec_rrs && cn_codec_k(s->codec_rrs) == k && cn_codec_m(s->codec_rrs) == m)
		return s->codec_rrs;
	return NULL;
}

/* set.c */
bool cn_ec__drive_online(cn_ec_set *s, size_t i);

/* quorum.c: per-drive answers reduced to one verdict */
cn_err cn_ec__reduce_quorum(const cn_err *errs, size_t n, size_t quorum);
size_t cn_ec__slots_up(const cn_ec_set *s, const bool *ok);
bool cn_ec__quorum_up(const cn_ec_set *s, size_t q);
cn_err cn_ec__trust_miss(cn_ec_set *s, size_t d, cn_err e);

/* quorum.c: records */
typedef enum rec_kind { REC_CURRENT, REC_VERSION, REC_UPLOAD, REC_PREV } rec_kind;

/* One record read with quorum (cn_ec__read_quorum_recs): what is read, and where each
 * drive's answer goes (arrays of the set's n entries). */
typedef struct quorum_read {
	rec_kind kind;
	const char *vol, *key;
	const char *name;   /* REC_VERSION's version id, REC_UPLOAD's file name; else NULL */
	bool skip_inline;
	cn_ec_meta *ms;     /* each drive's record (initialized by the caller) */
	bool *agree;        /* out: drive d holds the chosen version */
	size_t pick;        /* out: a drive that holds it */
	cn_err *errs;       /* out, may be NULL: each drive's answer */
	bool *unread;       /* non-NULL: early-out (EC-7); out: slot d was not read (its errs[]
	                       entry is then CN_ERR_OFFLINE) */
	bool *prev;         /* out, may be NULL: slot d's agreeing record is its previous one
	                       (EC-15) */
} quorum_read;

uint64_t cn_ec__rec_identity(const cn_ec_meta *m);
cn_err cn_ec__read_one(cn_ec_set *s, size_t d, rec_kind kind, const char *vol, const char *key,
                       const char *name, bool skip_inline, bool cache, cn_ec_meta *m,
                       uint64_t *ident, cn_ec_rec **partial);
/* Reads the record from every drive (early-out: enough of them) and picks the version most
 * drives agree on (EC-2), reading again across a commit in progress (EC-13). */
cn_err cn_ec__read_quorum_recs(cn_ec_set *s, quorum_read *q);
cn_err cn_ec__read_rec(cn_ec_set *s, rec_kind kind, const char *vol, const char *key,
                       const char *name, bool skip_inline, cn_ec_meta *m);

/* Quorum of a record: K of its own shape; plain sets and uploads' records written at
 * create (k=1 there): at least the set's read quorum. */
static inline size_t rec_quorum(const cn_ec_set *s, const cn_ec_meta *m)
{
	return coded(s) && m->k >= 1 ? m->k : read_quorum(s);
}

/* write.c */
void cn_ec__fill_erasure_kd(cn_ec_meta *m, unsigned k, unsigned mm, const uint8_t *dist, size_t n,
                            size_t d);
void cn_ec__fill_erasure(cn_ec_set *s, cn_ec_meta *m, size_t drive);
cn_err cn_ec__commit_slot(cn_ec_set *s, size_t d, const char *tmp_id, const char *data_id,
                          const char *vol, const char *key, cn_ec_meta *m, cn_buf *rec);
cn_err cn_ec__commit(cn_ec_set *s, const char *tmp_id, const char *data_id, const char *vol,
                     const char *key, cn_ec_meta *m, unsigned k, unsigned mm, const uint8_t *dist,
                     const bool *ok, bool *done);
cn_err cn_ec__encode_streams(cn_codec *c, const unsigned char *data, size_t len,
                             const uint8_t *dist, size_t n, unsigned char **base,
                             unsigned char **streams, size_t *slen);

/* read.c */
cn_err cn_ec__open_version(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                           bool full, cn_ec_meta *m, cn_ec_reader **out);
bool cn_ec__coded_file(cn_ec_reader *r, size_t p, size_t d);
bool cn_ec__read_shard(cn_ec_reader *r, size_t p, size_t b, size_t d, size_t sl,
                       unsigned char *out, unsigned char **at);
cn_err cn_ec__load_block(cn_ec_reader *r, size_t p, size_t b);

/* versions.c: name lists (sorted with cn_ec__name_cmp, a qsort comparator of char *) */
int cn_ec__name_cmp(const void *a, const void *b);
bool cn_ec__names_add(char ***v, size_t *n, size_t *cap, const char *name, bool unique);
cn_err cn_ec__union_names(cn_ec_set *s, bool uploads, bool every, const char *vol,
                          const char *name, char ***out, size_t *n);

#endif
