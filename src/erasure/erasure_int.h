/* erasure_int.h: private to the erasure module — the record cache.
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
 *  R1. A writer invalidates AFTER its renames/unlinks are done (under the object layer's
 *      key lock).
 *  R2. A reader takes the slot's generation BEFORE reading the drives and inserts only if
 *      the generation is unchanged, so a record read before a concurrent commit can never
 *      be inserted after that commit's invalidation.
 * 4-way buckets, as many as the budget holds at ~2 KiB an entry (8,192 to 4 M; an insert
 * into a full bucket evicts its least recently used entry),
 * striped mutexes, a global byte budget: when it is spent, a clock hand sweeping the
 * buckets drops entries not hit since it last passed until the new one fits (CLOCK,
 * second chance). R2's generation is per bucket. */
#ifndef CN_ERASURE_INT_H
#define CN_ERASURE_INT_H

#include "erasure/erasure.h"
#include "util/util.h"

typedef struct cn_rcache cn_rcache;
/* budget 0 disables the cache (every call becomes a no-op / miss). */
cn_err cn_rcache_new(size_t budget_bytes, size_t max_record, cn_rcache **out);
void cn_rcache_free(cn_rcache *c);
/* Hit: copies drive slot `drive`'s record into out (replacing its contents), returns true.
 * Miss: returns false and sets *gen for a later cn_rcache_put (R2). */
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
 * it); false: not cached (over the budget or the size limit, or R2). Either way the
 * caller's reference stays the caller's. */
bool cn_rcache_insert(cn_rcache *c, unsigned drive, const char *vol, const char *key,
                      cn_ec_rec *rec, uint64_t gen);
/* Invalidates the key's entries of slots 0..ndrives-1 (R1). */
void cn_rcache_invalidate(cn_rcache *c, unsigned ndrives, const char *vol, const char *key);
/* Drops every entry (bucket deletion). */
void cn_rcache_clear(cn_rcache *c);
/* Counters for tests and metrics. */
void cn_rcache_stats(cn_rcache *c, uint64_t *hits, uint64_t *misses, size_t *bytes);
size_t cn_rcache_budget(const cn_rcache *c); /* 0 for NULL */

/* Tests: called before each wait of a read retried across a commit in progress (set.c
 * E13); NULL in the server. */
extern void (*cn_ec__split_retry_hook)(void);

#endif
