/* erasure/set: one erasure set over the drive API (erasure.h).
 *
 * Two shapes share this file:
 *  - Plain (one drive, K=1 M=0): the object's bytes are the one shard, stored verbatim as
 *    "<data id>/part.N" or inline in the record; zero-copy sends read the file directly.
 *  - Coded (n >= 2 drives, K = n - M data shards, M parity): every part is cut into
 *    CN_EC_BLOCK_SIZE blocks; each block into K data shards of ceil(len/K) bytes plus M
 *    parity shards (ISA-L Reed-Solomon, codec.h). Drive slot d holds shard dist[d] of
 *    every block (the object's rotation, MinIO's hashOrder of bucket/key) in its file
 *    "<data id>/part.N" as a sequence of [XXH3-128 hash (16 bytes)][shard bytes] per block
 *    (docs/FORMAT.md §5); an inline object keeps the same stream in each drive's record.
 *
 * Invariants:
 *  E1. A record is written to a drive only after that drive's shard file is complete and
 *      closed (file_close(keep) before rename_data); a commit succeeds when write quorum
 *      drives committed (K, or K+1 when K == M).
 *  E2. Reads pick the record that the most drives agree on (same mtime, size, etag, data
 *      id, version id, delete marker, metadata) and need read quorum K of them;
 *      otherwise CN_ERR_QUORUM (or CN_ERR_NO_KEY / NO_BUCKET when that is what at
 *      least K drives say: fewer cannot know, the key may be on the drives that did not
 *      answer; a miss counts only from a drive that is there). Two versions can both have K
 *      only when n == 2K (M == K) and each is on exactly K drives (a put that died after
 *      renaming its record on half the drives): then the one whose K-th record comes
 *      first in E7's reading order wins, in every read — early-out or full (heal), so a
 *      GET, a listing and heal agree, and heal never turns the object into the other.
 *  E3. Every shard block read is checked against its hash before use; a missing, short or
 *      corrupt shard is replaced by reconstruction from any K good ones, and the reader
 *      remembers that the object needs healing (cn_ec_reader_degraded).
 *  E4. A healthy read touches only the K data shards (no decode); a range read only the
 *      blocks it covers.
 *  E7. GET and HEAD read records early-out: the object's data-shard slots first, then the
 *      others, stopping as soon as K records agree (the record's own K). That is E2's
 *      answer: a committed write reached at least its write quorum W (K, or K+1 when
 *      K == M), so at most n - W < K slots can hold an older record, and K agreeing
 *      slots include one that saw the latest commit; any disagreement just reads on.
 *      Slots not read are "unread", not offline: a reader that later finds fewer than K
 *      good shards reads their records then (reader_complete). Heal reads every record
 *      (it must see every slot that lacks the object).
 *  E12. A mutation of a coded set that cannot reach its quorum on the slots not known to
 *      be down (absent, or held offline or refused by the health wrapper: flags, no
 *      syscall) fails with CN_ERR_QUORUM before touching any drive: otherwise the drives
 *      still up took the change, and with K of them a read returned what the client was
 *      told had failed (found by tests/integration/test_erasure_random.py). A drive that
 *      fails during the mutation is found by it (drive.h health W1) and may still leave
 *      the change on the others — MinIO's window for dangling objects; a read or heal
 *      then sees the change if K drives hold it.
 *  E13. A quorum read in which at least K drives said what they hold (a record, or no
 *      record), some a record, and no version reached its quorum may be reading across a
 *      commit in progress (reads take no lock): it waits for the commits of the key in
 *      progress to finish their renames (the split_wait the object layer gives: its key
 *      lock, C2) and reads again, a few times, before answering CN_ERR_QUORUM
 *      (read_quorum_recs). Without a split_wait it sleeps briefly instead.
 *  E14. A coded writer encodes in place: its pending block is the start of its shard
 *      buffer (k data shards of a full block's shard length, then m parity shards), so
 *      data shard j of a block of len bytes is already at j * shard_len(len) and only the
 *      last data shard's padding (fewer than k bytes) is zeroed before the parity is
 *      computed; bodies may be read straight into it (cn_ec_writer_space/fill). The
 *      shard files are the codec's (tests: test_writer_shard_files_match_the_codec).
 *  E15. An overwrite's commit renames its records drive by drive, so a crash in it leaves
 *      the new version on some drives and the replaced one on the others; with the key's
 *      records also missing from drives (lost, not healed yet) neither may reach K, and an
 *      acknowledged version is unreadable (durability.py found it). So a commit that
 *      replaces a record first keeps it on every drive as the key's previous record
 *      (cn_ec_prev_keep; the object layer drops it after the barrier), and a current-record
 *      read whose split outlasts E13's retries lets each drive's previous record vote:
 *      a version counts the drives holding it as current or previous record, and the one
 *      with the most votes at its quorum is read (prev_fallback). The reader is degraded
 *      (queued for heal) and heal rewrites those slots' records (and drops the previous
 *      ones); listing reads such keys with a quorum read (E6: when the walked drives
 *      disagree, or any of them holds a previous record of the key: the walk reports
 *      it);
 *      E10's dangling check and the orphan check count previous records. A previous
 *      record left over (its drop lost to a crash) is the one its drive's current record
 *      replaced (delete_meta removes both; heal drops those it rewrites), so it can only
 *      vote for the version an acknowledged one replaced, and the fallback runs only when
 *      that acknowledged one is on fewer than K drives: more failures than parity (it
 *      reached W), where nothing is promised. One level deep: a commit over a version read
 *      this way heals it first (cn_ec_meta.from_prev; object.c C7), so cut-short commits
 *      of a key do not stack.
 *  E16. Commits rename records from slot 0 up, deletes (and E10's purges) remove them
 *      from slot n-1 down, and listings walk the last M+1 slots (E5 lets any M+1 do): a
 *      commit cut short has not reached the walked slots unless it reached all, and a
 *      delete (or purge) cut short has left them first, so a listing does not show a first
 *      commit that reads cannot return, nor keep showing a deleted key that reads call
 *      missing. Such a read: one version, held by fewer drives than its quorum even
 *      counting every drive that did not say what it holds, and no previous record
 *      anywhere (the last read of a split, after E15), answers CN_ERR_NO_KEY: E10 would
 *      remove it (an acknowledged version reached W >= K drives; losing it so takes more
 *      failures than parity). Before E16 a 16-drive set (K = W = 12) answered 503 for a
 *      first PUT cut short after 5-11 renames, forever, while listing it (durability.py
 *      --drives 16).
 *  E5, E6: listing (below, "merged walks"); E8: name lists (below, union_names); E9:
 *      buckets (cn_ec_list_vols). */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PART_NAME "part.1"
#define OPEN_RETRIES 8
#define HASH_LEN CN_CODEC_HASH_LEN

struct cn_ec_set {
	cn_drive *drives[CN_EC_MAX_DRIVES]; /* NULL: slot offline */
	size_t n;
	int k, m;                           /* STANDARD */
	int m_rrs;                          /* REDUCED_REDUNDANCY parity */
	cn_codec *codec, *codec_rrs;        /* NULL for the plain (one drive) set */
	cn_rcache *rc;                      /* record cache (erasure_int.h); NULL: disabled */
	size_t read_skip;                   /* benchmarks: reads treat slots 0..read_skip-1 as
	                                       offline (CAIRN_DEBUG_READ_OFFLINE_SLOTS) */
	cn_ec_split_wait_fn split_wait;     /* E13; NULL: sleep */
	void *split_ctx;
};

#define D(s, i) ((s)->drives[i])

struct cn_ec_writer {
	cn_ec_set *s;
	char tmp_id[33];
	char data_id[CN_DRIVE_ID_MAX + 1];
	cn_drive_file *f[CN_EC_MAX_DRIVES];
	int64_t written;
	/* coded */
	cn_codec *c;
	unsigned k, m;
	uint8_t dist[CN_EC_MAX_DRIVES];
	unsigned char *block;               /* pending bytes of the current block: = shards */
	size_t blen;
	/* E14: k data shards of a full block's shard_len (the block, encoded in place: data
	 * shard j of a block of len bytes starts at j * shard_len(len)), then m parity */
	unsigned char *shards;
	bool ok[CN_EC_MAX_DRIVES];          /* slot still writing */
	bool done[CN_EC_MAX_DRIVES];        /* slot committed: nothing of it left in tmp */
};

struct cn_ec_reader {
	cn_ec_set *s;
	int64_t size;
	size_t nparts;
	int64_t *ends;              /* owned: cumulative end offset of each part */
	char *vol, *key;            /* owned, for opening later parts */
	char vid[CN_EC_VERSION_ID_MAX + 1]; /* "" for the current version */
	char data_id[CN_DRIVE_ID_MAX + 1];
	bool degraded;              /* E3: some shard was missing or corrupt */
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
	bool good[CN_EC_MAX_DRIVES];        /* slot's record agrees (E2) */
	bool offline[CN_EC_MAX_DRIVES];     /* slot's drive did not answer */
	bool unread[CN_EC_MAX_DRIVES];      /* E7: slot's record not read (yet) */
	bool prev[CN_EC_MAX_DRIVES];        /* E15: slot's record is its previous one */
	uint64_t ident;                     /* rec_identity of the chosen record */
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

/* A drive that is away, failed or stalled says nothing about the request: in a set of
 * several drives its error is never the verdict (too few drives left is CN_ERR_QUORUM,
 * 503, as MinIO's InsufficientWriteQuorum; an I/O error found while writing had answered
 * 500 InternalError). */
static bool drive_fault(cn_err e)
{
	return e == CN_ERR_OFFLINE || e == CN_ERR_IO || e == CN_ERR_TIMEOUT;
}

/* Reduces per-drive results to one verdict: CN_OK when at least quorum drives succeeded,
 * otherwise the most frequent error that is not a drive fault (CN_ERR_QUORUM when errors
 * disagree evenly or only drive faults remain). One drive (n == 1): its own error. */
static cn_err reduce_quorum(const cn_err *errs, size_t n, size_t quorum)
{
	size_t ok = 0;
	for (size_t i = 0; i < n; i++)
		ok += errs[i] == CN_OK;
	if (ok >= quorum)
		return CN_OK;
	cn_err best = CN_ERR_QUORUM;
	size_t best_n = 0;
	for (size_t i = 0; i < n; i++) {
		if (errs[i] == CN_OK || errs[i] == CN_ERR_OFFLINE || (n > 1 && drive_fault(errs[i])))
			continue;
		size_t c = 0;
		for (size_t j = 0; j < n; j++)
			c += errs[j] == errs[i];
		if (c > best_n) {
			best = errs[i];
			best_n = c;
		}
	}
	/* a minority error is not the answer: not enough drives to say anything */
	if (n > 1 && best_n + ok < quorum)
		return CN_ERR_QUORUM;
	return best;
}

/* E12: slots that may take a write (ok, when given, further excludes a writer's failed
 * slots). */
static size_t slots_up(const cn_ec_set *s, const bool *ok)
{
	size_t up = 0;
	for (size_t d = 0; d < s->n; d++)
		up += s->drives[d] && (!ok || ok[d]) && !cn_drive_health_offline(s->drives[d]) &&
		      !cn_drive_health_refused(s->drives[d]);
	return up;
}

/* E12: true when a mutation needing quorum q may start. One drive: always (its own error
 * is the answer). */
static bool quorum_up(const cn_ec_set *s, size_t q)
{
	return s->n == 1 || slots_up(s, NULL) >= q;
}

static size_t write_quorum(const cn_ec_set *s)
{
	return (size_t)s->k + (s->k == s->m);
}

static size_t read_quorum(const cn_ec_set *s)
{
	return (size_t)s->k;
}

static cn_err trust_miss(cn_ec_set *s, size_t d, cn_err e);

static bool coded(const cn_ec_set *s)
{
	return s->n > 1;
}

static unsigned parity_for(const cn_ec_set *s, const char *storage_class)
{
	if (storage_class && !strcmp(storage_class, "REDUCED_REDUNDANCY"))
		return (unsigned)s->m_rrs;
	return (unsigned)s->m;
}

static cn_codec *codec_for(const cn_ec_set *s, unsigned k, unsigned m)
{
	if (s->codec && cn_codec_k(s->codec) == k && cn_codec_m(s->codec) == m)
		return s->codec;
	if (s->codec_rrs && cn_codec_k(s->codec_rrs) == k && cn_codec_m(s->codec_rrs) == m)
		return s->codec_rrs;
	return NULL;
}

cn_err cn_ec_set_new(cn_drive **drives, size_t ndrives, unsigned parity, unsigned parity_rrs,
                     cn_ec_set **out)
{
	if (ndrives < 1 || ndrives > CN_EC_MAX_DRIVES)
		return CN_ERR_INVALID;
	if (ndrives == 1 && (parity || parity_rrs))
		return CN_ERR_INVALID;
	if (ndrives > 1 && (parity < 1 || parity > ndrives / 2 || parity_rrs < 1 || parity_rrs > ndrives / 2))
		return CN_ERR_INVALID;
	cn_ec_set *s = calloc(1, sizeof *s);
	if (!s)
		return CN_ERR_NOMEM;
	memcpy(s->drives, drives, ndrives * sizeof *drives);
	s->n = ndrives;
	s->m = (int)parity;
	s->k = (int)(ndrives - parity);
	s->m_rrs = (int)parity_rrs;
	cn_err e = CN_OK;
	if (ndrives > 1) {
		e = cn_codec_new((unsigned)s->k, parity, &s->codec);
		if (!e && parity_rrs != parity)
			e = cn_codec_new((unsigned)(ndrives - parity_rrs), parity_rrs, &s->codec_rrs);
	}
	if (!e)
		e = cn_ec_set_cache(s, (size_t)64 << 20);
	if (e) {
		cn_rcache_free(s->rc);
		cn_codec_free(s->codec);
		cn_codec_free(s->codec_rrs);
		free(s);
		return e;
	}
	/* Measuring degraded reads (docs/PERF.md): reads (records and shards) act as if the
	 * first N slots' drives were gone, writes still reach every drive. */
	const char *skip = getenv("CAIRN_DEBUG_READ_OFFLINE_SLOTS");
	if (skip && ndrives > 1) {
		s->read_skip = (size_t)strtoul(skip, NULL, 10);
		if (s->read_skip > parity)
			s->read_skip = parity;
		cn_log(CN_LOG_WARN, NULL, "erasure: CAIRN_DEBUG_READ_OFFLINE_SLOTS: reads skip %zu drive(s) "
		       "of every set (benchmarking degraded reads)", s->read_skip);
	}
	*out = s;
	return CN_OK;
}

cn_err cn_ec_set_cache(cn_ec_set *s, size_t budget_bytes)
{
	cn_rcache_free(s->rc);
	s->rc = NULL;
	return cn_rcache_new(budget_bytes, 160 * 1024, &s->rc); /* records up to 160 KiB */
}

void cn_ec_set_split_wait(cn_ec_set *s, cn_ec_split_wait_fn fn, void *ctx)
{
	s->split_wait = fn;
	s->split_ctx = ctx;
}

void cn_ec_set_cache_stats(cn_ec_set *s, cn_ec_cache_stats *out)
{
	memset(out, 0, sizeof *out);
	cn_rcache_stats(s->rc, &out->hits, &out->misses, &out->bytes);
	out->budget = cn_rcache_budget(s->rc);
}

void cn_ec_set_free(cn_ec_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		cn_drive_close(s->drives[i]);
	cn_rcache_free(s->rc);
	cn_codec_free(s->codec);
	cn_codec_free(s->codec_rrs);
	free(s);
}

size_t cn_ec_set_ndrives(const cn_ec_set *s) { return s->n; }

void cn_ec_set_refuse(cn_ec_set *s, size_t i)
{
	CN_ASSERT(i < s->n);
	cn_drive_close(s->drives[i]);
	s->drives[i] = NULL;
}

const char *cn_ec_set_endpoint(const cn_ec_set *s, size_t i)
{
	return i < s->n && s->drives[i] ? s->drives[i]->endpoint : NULL;
}

/* Whether slot i's drive is there (its folder exists, the health wrapper holds it online). */
static bool drive_online(cn_ec_set *s, size_t i)
{
	cn_drive *dr = D(s, i);
	if (!dr)
		return false;
	if (dr->ops->online)
		return dr->ops->online(dr);
	cn_drive_info di;
	return dr->ops->info(dr, &di) == CN_OK && di.online;
}

uint64_t cn_ec_set_free_bytes(cn_ec_set *s)
{
	uint64_t best = UINT64_MAX;
	for (size_t i = 0; i < s->n; i++) {
		cn_drive_info di;
		if (D(s, i) && D(s, i)->ops->info(D(s, i), &di) == CN_OK && di.online && di.free < best)
			best = di.free;
	}
	return best == UINT64_MAX ? 0 : best * (uint64_t)s->k;
}

void cn_ec_set_parity(const cn_ec_set *s, unsigned *standard, unsigned *rrs)
{
	*standard = (unsigned)s->m;
	*rrs = (unsigned)s->m_rrs;
}

cn_err cn_ec_set_drive_info(cn_ec_set *s, size_t i, cn_drive_info *out)
{
	memset(out, 0, sizeof *out);
	if (i >= s->n || !D(s, i))
		return CN_ERR_OFFLINE;
	return D(s, i)->ops->info(D(s, i), out);
}

cn_err cn_ec_set_reopen(cn_ec_set *s, size_t i)
{
	if (i >= s->n || !D(s, i) || !D(s, i)->ops->reopen)
		return CN_ERR_OFFLINE;
	cn_err e = D(s, i)->ops->reopen(D(s, i));
	cn_rcache_clear(s->rc); /* the drive's records may all have changed */
	return e;
}

bool cn_ec_set_replaced(cn_ec_set *s, size_t i)
{
	return i < s->n && D(s, i) && D(s, i)->ops->replaced && D(s, i)->ops->replaced(D(s, i));
}

void cn_ec_set_suspend(cn_ec_set *s, size_t i, bool suspend)
{
	if (i < s->n && D(s, i)) {
		cn_drive_health_refuse(D(s, i), suspend);
		cn_rcache_clear(s->rc); /* records read from it must not be served */
	}
}

bool cn_ec_set_suspended(cn_ec_set *s, size_t i)
{
	return i < s->n && cn_drive_health_refused(D(s, i));
}

cn_err cn_ec_list_vols_at(cn_ec_set *s, size_t i, cn_drive_vol **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (i >= s->n || !D(s, i))
		return CN_ERR_OFFLINE;
	return D(s, i)->ops->list_vols(D(s, i), out, n);
}

bool cn_ec_set_online(cn_ec_set *s)
{
	size_t ok = 0;
	for (size_t i = 0; i < s->n; i++)
		ok += drive_online(s, i);
	return ok >= read_quorum(s);
}

/* The first online slot at or after i (for one-drive questions), or n. */
static size_t first_drive(const cn_ec_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (D(s, i))
			return i;
	return s->n;
}

/* --- system files and volumes ------------------------------------------------------ */

cn_err cn_ec_read_sys(cn_ec_set *s, size_t drive, const char *name, size_t max, cn_buf *out)
{
	CN_ASSERT(drive < s->n);
	if (!D(s, drive))
		return CN_ERR_OFFLINE;
	return D(s, drive)->ops->read_sys(D(s, drive), name, max, out);
}

cn_err cn_ec_write_sys(cn_ec_set *s, size_t drive, const char *name, const void *p, size_t len)
{
	CN_ASSERT(drive < s->n);
	if (!D(s, drive))
		return CN_ERR_OFFLINE;
	return D(s, drive)->ops->write_sys(D(s, drive), name, p, len);
}

cn_err cn_ec_write_sys_all(cn_ec_set *s, const char *name, const void *p, size_t len)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->write_sys(D(s, i), name, p, len) : CN_ERR_OFFLINE;
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_remove_sys_all(cn_ec_set *s, const char *name)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = D(s, i) ? D(s, i)->ops->remove_sys(D(s, i), name) : CN_ERR_OFFLINE;
		if (errs[i] == CN_ERR_NOT_FOUND)
			errs[i] = CN_OK;
	}
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_make_vol(cn_ec_set *s, const char *vol)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->make_vol(D(s, i), vol) : CN_ERR_OFFLINE;
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_stat_vol(cn_ec_set *s, const char *vol, int64_t *mtime_ms)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	size_t ok = 0, rq = read_quorum(s);
	for (size_t i = 0; i < s->n; i++)
		errs[i] = CN_ERR_OFFLINE;
	/* the drives in turn until a read quorum has the vol: the others cannot change that
	 * answer (a PUT asks this before its body; 2 of 4 stats instead of 4) */
	for (size_t i = 0; i < s->n && ok < rq; i++) {
		errs[i] = D(s, i) ? D(s, i)->ops->stat_vol(D(s, i), vol, ok ? NULL : mtime_ms)
		                  : CN_ERR_OFFLINE;
		if (coded(s))
			errs[i] = trust_miss(s, i, errs[i]);
		ok += errs[i] == CN_OK;
	}
	return reduce_quorum(errs, s->n, rq);
}

cn_err cn_ec_delete_vol(cn_ec_set *s, const char *vol)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	/* one drive at a time: the first that finds an object stops the deletion, and the
	 * drives that already removed the folder get it back */
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = D(s, i) ? D(s, i)->ops->delete_vol(D(s, i), vol) : CN_ERR_OFFLINE;
		if (errs[i] == CN_ERR_BUCKET_NOT_EMPTY) {
			for (size_t j = 0; j < i; j++)
				if (errs[j] == CN_OK)
					D(s, j)->ops->make_vol(D(s, j), vol);
			return CN_ERR_BUCKET_NOT_EMPTY;
		}
	}
	cn_rcache_clear(s->rc);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

static int vol_name_cmp(const void *a, const void *b)
{
	return strcmp(((const cn_drive_vol *)a)->name, ((const cn_drive_vol *)b)->name);
}

/* E9. A bucket is made and removed on write-quorum drives: one made while a drive was
 *     offline is on at least W drives, the leftovers of a removed one on at most n - W < K.
 *     A set lists the vols at least K of its drives hold, asking every online drive (one
 *     drive's list hid a bucket made while it was offline, and showed one removed then);
 *     cn_obj's bucket heal makes the listed ones where missing. */
static bool names_add(char ***v, size_t *n, size_t *cap, const char *name, bool unique);

/* Every answering drive's vols, sorted by name (one entry per drive that holds it);
 * *answered: how many drives listed theirs; *last: the last listing error. */
static cn_err gather_vols(cn_ec_set *s, cn_drive_vol **out, size_t *total_out, size_t *answered,
                          cn_err *last)
{
	cn_drive_vol *all = NULL;
	size_t total = 0;
	*answered = 0;
	*last = CN_ERR_QUORUM;
	for (size_t d = 0; d < s->n; d++) {
		cn_drive_vol *v;
		size_t nv;
		/* a drive whose folder is gone lists nothing: that is no answer */
		cn_err e = drive_online(s, d) ? D(s, d)->ops->list_vols(D(s, d), &v, &nv) : CN_ERR_OFFLINE;
		if (e) {
			*last = e == CN_ERR_NOMEM ? e : *last;
			continue;
		}
		(*answered)++;
		cn_drive_vol *na = nv ? realloc(all, (total + nv) * sizeof *na) : all;
		if (nv && !na) {
			free(v);
			free(all);
			return CN_ERR_NOMEM;
		}
		all = na;
		if (nv)
			memcpy(all + total, v, nv * sizeof *v);
		total += nv;
		free(v);
	}
	if (total > 1)
		qsort(all, total, sizeof *all, vol_name_cmp);
	*out = all;
	*total_out = total;
	return CN_OK;
}

cn_err cn_ec_list_vols(cn_ec_set *s, cn_drive_vol **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!coded(s)) {
		size_t i = first_drive(s);
		return i == s->n ? CN_ERR_QUORUM : D(s, i)->ops->list_vols(D(s, i), out, n);
	}
	cn_drive_vol *all;
	size_t total, answered;
	cn_err last, e = gather_vols(s, &all, &total, &answered, &last);
	if (e)
		return e;
	if (answered < read_quorum(s)) {
		free(all);
		return last;
	}
	size_t k = 0;
	for (size_t i = 0; i < total;) {
		size_t j = i + 1;
		while (j < total && !strcmp(all[j].name, all[i].name))
			j++;
		if (j - i >= read_quorum(s))
			all[k++] = all[i];
		i = j;
	}
	*out = all;
	*n = k;
	return CN_OK;
}

/* E11. A vol (bucket folder) that fewer than K drives hold, even counting every drive
 *      that cannot list its vols, was deleted while those drives were away: no quorum
 *      listing shows it (E9) and no new bucket can be made from it; heal removes it with
 *      whatever stale records it holds. Only for names the caller does not keep (the
 *      buckets of every set), under the namespace lock (no bucket made or removed
 *      meanwhile). */
cn_err cn_ec_dangling_vols(cn_ec_set *s, const cn_drive_vol *keep, size_t nkeep, char ***out,
                           size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!coded(s))
		return CN_OK;
	cn_drive_vol *all;
	size_t total, answered;
	cn_err last, e = gather_vols(s, &all, &total, &answered, &last);
	if (e)
		return e;
	size_t unknown = s->n - answered, cap = 0;
	for (size_t i = 0; i < total && !e;) {
		size_t j = i + 1;
		while (j < total && !strcmp(all[j].name, all[i].name))
			j++;
		bool kept = false;
		for (size_t x = 0; x < nkeep && !kept; x++)
			kept = !strcmp(keep[x].name, all[i].name);
		if (!kept && (j - i) + unknown < read_quorum(s) && !names_add(out, n, &cap, all[i].name, false))
			e = CN_ERR_NOMEM;
		i = j;
	}
	free(all);
	if (e) {
		cn_drive_free_names(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return e;
}

cn_err cn_ec_purge_vol(cn_ec_set *s, const char *vol)
{
	cn_err e = CN_OK;
	for (size_t d = 0; d < s->n; d++) {
		if (!D(s, d) || !D(s, d)->ops->purge_vol)
			continue;
		cn_err de = D(s, d)->ops->purge_vol(D(s, d), vol);
		if (de && de != CN_ERR_NO_BUCKET && !e)
			e = de;
	}
	return e;
}

cn_err cn_ec_sync(cn_ec_set *s)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	const void *tok[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		tok[i] = D(s, i) && D(s, i)->ops->sync_group ? D(s, i)->ops->sync_group(D(s, i)) : NULL;
		/* a drive whose flush an earlier one shared: its verdict — unless that one was
		 * offline (it flushed nothing: with the first drive of a filesystem offline, its
		 * OFFLINE had failed every drive sharing the filesystem, and every write, 503) */
		size_t j = 0;
		while (j < i && !(tok[i] && tok[j] == tok[i] && D(s, j) && errs[j] != CN_ERR_OFFLINE))
			j++;
		if (!D(s, i))
			errs[i] = CN_ERR_OFFLINE;
		else if (j < i)
			errs[i] = errs[j];
		else
			errs[i] = cn_drive_sync(D(s, i));
	}
	return reduce_quorum(errs, s->n, write_quorum(s));
}

/* --- writing ----------------------------------------------------------------------- */

cn_err cn_ec_writer_new(cn_ec_set *s, const char *vol, const char *key, const char *storage_class,
                        cn_ec_writer **out)
{
	cn_ec_writer *w = calloc(1, sizeof *w);
	if (!w)
		return CN_ERR_NOMEM;
	w->s = s;
	char id[33];
	cn_drive_random_id(w->tmp_id);
	cn_drive_random_id(id);
	snprintf(w->data_id, sizeof w->data_id, "%%d.%s", id);
	if (coded(s)) {
		w->m = parity_for(s, storage_class);
		w->k = (unsigned)s->n - w->m;
		w->c = codec_for(s, w->k, w->m);
		cn_codec_dist(vol, key, strlen(key), (unsigned)s->n, w->dist);
		/* E14: the block is the start of the shard buffer (blocks encode in place) */
		size_t sl = w->c ? cn_codec_shard_len(w->c, CN_EC_BLOCK_SIZE) : 0;
		w->shards = malloc(s->n * sl);
		w->block = w->shards;
		if (!w->c || !w->shards) {
			cn_ec_writer_abort(w);
			return w->c ? CN_ERR_NOMEM : CN_ERR_INVALID;
		}
	}
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = D(s, i) ? D(s, i)->ops->create_file(D(s, i), w->tmp_id, w->data_id, PART_NAME, &w->f[i])
		                  : CN_ERR_OFFLINE;
		w->ok[i] = errs[i] == CN_OK;
	}
	size_t q = coded(s) ? (size_t)w->k + (w->k == w->m) : write_quorum(s);
	cn_err e = reduce_quorum(errs, s->n, q);
	if (e) {
		cn_ec_writer_abort(w);
		return e;
	}
	*out = w;
	return CN_OK;
}

static size_t writer_quorum(const cn_ec_writer *w)
{
	return coded(w->s) ? (size_t)w->k + (w->k == w->m) : write_quorum(w->s);
}

/* A slot failed while writing: drop it; the write goes on while quorum slots remain. */
static void writer_drop(cn_ec_writer *w, size_t i, cn_err e)
{
	cn_log(CN_LOG_WARN, NULL, "erasure: drive %s: writing shard: %s; continuing without it",
	       D(w->s, i)->endpoint, cn_err_str(e));
	D(w->s, i)->ops->file_close(w->f[i], false);
	w->f[i] = NULL;
	w->ok[i] = false;
}

static cn_err writer_check(cn_ec_writer *w, cn_err last)
{
	size_t ok = 0;
	for (size_t i = 0; i < w->s->n; i++)
		ok += w->ok[i];
	if (ok >= writer_quorum(w))
		return CN_OK;
	return last && !(coded(w->s) && drive_fault(last)) ? last : CN_ERR_QUORUM;
}

/* Encodes and writes the pending block (coded sets). */
static cn_err flush_block(cn_ec_writer *w)
{
	cn_ec_set *s = w->s;
	size_t n = s->n, k = w->k, sl = cn_codec_shard_len(w->c, w->blen);
	size_t full = cn_codec_shard_len(w->c, CN_EC_BLOCK_SIZE);
	unsigned char *ptr[CN_EC_MAX_DRIVES];
	unsigned char hashes[CN_EC_MAX_DRIVES][HASH_LEN];
	/* E14: the block's bytes lie at the start of w->shards, so data shard j of this block
	 * (its bytes [j*sl, (j+1)*sl), the last padded with zeros) already starts at j*sl;
	 * the parity shards go after the data area of a full block (k*full >= the block). */
	for (size_t j = 0; j < n; j++)
		ptr[j] = j < k ? w->shards + j * sl : w->shards + k * full + (j - k) * sl;
	memset(w->shards + w->blen, 0, k * sl - w->blen);
	cn_err e = cn_codec_encode_parity(w->c, sl, ptr, hashes);
	if (e)
		return e;
	cn_err last = CN_OK;
	for (size_t d = 0; d < n; d++) {
		if (!w->ok[d])
			continue;
		unsigned j = w->dist[d];
		cn_err we = D(s, d)->ops->file_write(w->f[d], hashes[j], HASH_LEN);
		if (!we)
			we = D(s, d)->ops->file_write(w->f[d], ptr[j], sl);
		if (we) {
			last = we;
			writer_drop(w, d, we);
		}
	}
	w->blen = 0;
	return writer_check(w, last);
}

cn_err cn_ec_writer_write(cn_ec_writer *w, const void *p, size_t len)
{
	cn_ec_set *s = w->s;
	if (!coded(s)) {
		cn_err errs[CN_EC_MAX_DRIVES];
		for (size_t i = 0; i < s->n; i++)
			errs[i] = w->f[i] ? D(s, i)->ops->file_write(w->f[i], p, len) : CN_ERR_OFFLINE;
		w->written += (int64_t)len;
		return reduce_quorum(errs, s->n, write_quorum(s));
	}
	const unsigned char *c = p;
	while (len > 0) {
		size_t n = CN_EC_BLOCK_SIZE - w->blen;
		if (n > len)
			n = len;
		memcpy(w->block + w->blen, c, n);
		w->blen += n;
		w->written += (int64_t)n;
		c += n;
		len -= n;
		if (w->blen == CN_EC_BLOCK_SIZE) {
			cn_err e = flush_block(w);
			if (e)
				return e;
		}
	}
	return CN_OK;
}

size_t cn_ec_writer_space(cn_ec_writer *w, unsigned char **p)
{
	if (!coded(w->s)) {
		*p = NULL;
		return 0;
	}
	*p = w->block + w->blen; /* blen < CN_EC_BLOCK_SIZE: a full block is flushed at once */
	return CN_EC_BLOCK_SIZE - w->blen;
}

cn_err cn_ec_writer_fill(cn_ec_writer *w, size_t n)
{
	if (!coded(w->s) || n > CN_EC_BLOCK_SIZE - w->blen)
		return CN_ERR_INVALID;
	w->blen += n;
	w->written += (int64_t)n;
	return w->blen == CN_EC_BLOCK_SIZE ? flush_block(w) : CN_OK;
}

/* Erasure fields of slot d's record. */
static void fill_erasure_kd(cn_ec_meta *m, unsigned k, unsigned mm, const uint8_t *dist, size_t n,
                            size_t d)
{
	m->k = (uint8_t)k;
	m->m = (uint8_t)mm;
	m->block_size = CN_EC_BLOCK_SIZE;
	m->index = (uint8_t)d;
	m->ndist = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		m->dist[i] = dist ? dist[i] : (uint8_t)i;
}

static void fill_erasure(cn_ec_set *s, cn_ec_meta *m, size_t drive)
{
	/* records without data of their own (uploads, markers): the set's STANDARD shape */
	fill_erasure_kd(m, (unsigned)s->k, (unsigned)s->m, NULL, s->n, drive);
}

/* Closes the writer's files (flushing the tail block): E1's first half. */
static cn_err writer_finish(cn_ec_writer *w)
{
	cn_ec_set *s = w->s;
	cn_err e = CN_OK;
	if (coded(s) && w->blen > 0 && (e = flush_block(w)))
		return e;
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = w->f[i] ? D(s, i)->ops->file_close(w->f[i], true) : CN_ERR_OFFLINE;
		w->f[i] = NULL;
		if (errs[i])
			w->ok[i] = false;
	}
	return reduce_quorum(errs, s->n, writer_quorum(w));
}

/* Writes slot d's record for m (data_id NULL: record only) and renames it in. */
static cn_err commit_slot(cn_ec_set *s, size_t d, const char *tmp_id, const char *data_id,
                          const char *vol, const char *key, cn_ec_meta *m, cn_buf *rec)
{
	rec->len = 0;
	cn_err e = cn_ec_meta_encode(m, rec);
	if (!e)
		e = D(s, d)->ops->rename_data(D(s, d), tmp_id, data_id, vol, key, rec->p, rec->len);
	return e;
}

static cn_err commit(cn_ec_set *s, const char *tmp_id, const char *data_id, const char *vol,
                     const char *key, cn_ec_meta *m, unsigned k, unsigned mm, const uint8_t *dist,
                     const bool *ok, bool *done)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (s->n > 1 && slots_up(s, ok) < (size_t)k + (k == mm)) { /* E12 */
		for (size_t i = 0; i < s->n; i++)
			if (D(s, i))
				D(s, i)->ops->abort_tmp(D(s, i), tmp_id);
		return CN_ERR_QUORUM;
	}
	cn_ec_part one = { 1, m->size, "" };
	bool added_part = false;
	if (m->nparts == 0) {
		m->parts = &one;
		m->nparts = 1;
		added_part = true;
	}
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t i = 0; i < s->n; i++) {
		if (!D(s, i) || (ok && !ok[i])) {
			errs[i] = CN_ERR_OFFLINE;
			if (D(s, i))
				D(s, i)->ops->abort_tmp(D(s, i), tmp_id);
			continue;
		}
		fill_erasure_kd(m, k, mm, dist, s->n, i);
		errs[i] = commit_slot(s, i, tmp_id, data_id, vol, key, m, &rec);
		if (done)
			done[i] = errs[i] == CN_OK; /* rename_data left nothing in tmp */
	}
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* R1: after the renames */
	if (added_part) {
		m->parts = NULL;
		m->nparts = 0;
	}
	cn_buf_fini(&rec);
	return reduce_quorum(errs, s->n, (size_t)k + (k == mm));
}

cn_err cn_ec_writer_commit(cn_ec_writer *w, const char *vol, const char *key, cn_ec_meta *m)
{
	cn_err e = writer_finish(w);
	if (e)
		return e;
	if (m->size != w->written)
		return CN_ERR_INVALID;
	m->has_inline = false;
	cn_strlcpy(m->data_id, w->data_id, sizeof m->data_id);
	if (!coded(w->s))
		return commit(w->s, w->tmp_id, w->data_id, vol, key, m, 1, 0, NULL, NULL, w->done);
	return commit(w->s, w->tmp_id, w->data_id, vol, key, m, w->k, w->m, w->dist, w->ok, w->done);
}

void cn_ec_writer_abort(cn_ec_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->s->n; i++) {
		if (w->f[i])
			D(w->s, i)->ops->file_close(w->f[i], false);
		if (D(w->s, i) && !w->done[i])
			D(w->s, i)->ops->abort_tmp(D(w->s, i), w->tmp_id);
	}
	free(w->shards); /* w->block is its start (E14) */
	free(w);
}

/* The coded shard stream of data[0..len) for every slot: streams[d] gets [hash][shard] per
 * block of shard dist[d] (a permutation of 0..n). All streams live in one allocation,
 * returned in *base (the caller frees it, also on error); each block is encoded in place
 * into the streams, so the object's bytes are copied once and no scratch is needed. */
static cn_err encode_streams(cn_codec *c, const unsigned char *data, size_t len, const uint8_t *dist,
                             size_t n, unsigned char **base, unsigned char **streams, size_t *slen)
{
	size_t full = len / CN_EC_BLOCK_SIZE, tail = len % CN_EC_BLOCK_SIZE;
	size_t fsl = cn_codec_shard_len(c, CN_EC_BLOCK_SIZE), tsl = cn_codec_shard_len(c, tail);
	size_t total = full * (HASH_LEN + fsl) + (tail ? HASH_LEN + tsl : 0);
	*base = malloc(total ? n * total : 1);
	if (!*base)
		return CN_ERR_NOMEM;
	for (size_t d = 0; d < n; d++) {
		streams[d] = *base + d * total;
		slen[d] = 0;
	}
	for (size_t b = 0; b * CN_EC_BLOCK_SIZE < len; b++) {
		size_t bl = len - b * CN_EC_BLOCK_SIZE < CN_EC_BLOCK_SIZE ? len - b * CN_EC_BLOCK_SIZE
		                                                          : CN_EC_BLOCK_SIZE;
		size_t sl = cn_codec_shard_len(c, bl);
		unsigned char *ptr[CN_EC_MAX_DRIVES], hashes[CN_EC_MAX_DRIVES][HASH_LEN];
		for (size_t d = 0; d < n; d++)
			ptr[dist[d]] = streams[d] + slen[d] + HASH_LEN;
		cn_err e = cn_codec_encode(c, data + b * CN_EC_BLOCK_SIZE, bl, ptr, hashes);
		if (e)
			return e;
		for (size_t d = 0; d < n; d++) {
			memcpy(streams[d] + slen[d], hashes[dist[d]], HASH_LEN);
			slen[d] += HASH_LEN + sl;
		}
	}
	return CN_OK;
}

cn_err cn_ec_commit_inline(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m)
{
	char tmp_id[33];
	if (!m->has_inline || m->inline_len != (size_t)m->size || m->inline_len > CN_EC_INLINE_CAP)
		return CN_ERR_INVALID;
	m->data_id[0] = 0;
	cn_drive_random_id(tmp_id);
	if (!coded(s))
		return commit(s, tmp_id, NULL, vol, key, m, 1, 0, NULL, NULL, NULL);
	unsigned mm = parity_for(s, m->storage_class), k = (unsigned)s->n - mm;
	cn_codec *c = codec_for(s, k, mm);
	if (!c)
		return CN_ERR_INVALID;
	if (!quorum_up(s, (size_t)k + (k == mm)))
		return CN_ERR_QUORUM; /* E12 */
	uint8_t dist[CN_EC_MAX_DRIVES];
	cn_codec_dist(vol, key, strlen(key), (unsigned)s->n, dist);
	unsigned char *streams[CN_EC_MAX_DRIVES], *sbase = NULL;
	size_t slen[CN_EC_MAX_DRIVES];
	cn_err e = encode_streams(c, m->inline_data, m->inline_len, dist, s->n, &sbase, streams, slen);
	cn_err errs[CN_EC_MAX_DRIVES];
	unsigned char *whole = m->inline_data;
	size_t whole_len = m->inline_len;
	cn_ec_part one = { 1, m->size, "" };
	bool added_part = m->nparts == 0;
	if (added_part) {
		m->parts = &one;
		m->nparts = 1;
	}
	cn_buf rec;
	cn_buf_init(&rec);
	/* the record's fields (a few hundred bytes; user metadata is at most 2 KiB) and its
	 * shard stream, reserved once for every drive: growing by doubling would copy the
	 * stream and touch fresh pages on each step (a larger record still just grows) */
	if (!e)
		e = cn_buf_reserve(&rec, slen[0] + 4096);
	for (size_t d = 0; d < s->n; d++) {
		if (e || !D(s, d)) {
			errs[d] = e ? e : CN_ERR_OFFLINE;
			continue;
		}
		fill_erasure_kd(m, k, mm, dist, s->n, d);
		m->inline_data = streams[d];
		m->inline_len = slen[d];
		errs[d] = commit_slot(s, d, tmp_id, NULL, vol, key, m, &rec);
	}
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* R1: after the renames */
	m->inline_data = whole;
	m->inline_len = whole_len;
	if (added_part) {
		m->parts = NULL;
		m->nparts = 0;
	}
	cn_buf_fini(&rec);
	free(sbase);
	return e ? e : reduce_quorum(errs, s->n, (size_t)k + (k == mm));
}

/* --- records ----------------------------------------------------------------------- */

/* A "not there" answer counts only from a drive that is there (E2): a drive whose folder
 * vanished (or that the health wrapper holds offline) answers OFFLINE instead. */
static cn_err trust_miss(cn_ec_set *s, size_t d, cn_err e)
{
	if (e != CN_ERR_NO_KEY && e != CN_ERR_NO_BUCKET && e != CN_ERR_NOT_FOUND)
		return e;
	return drive_online(s, d) ? e : CN_ERR_OFFLINE;
}

/* What makes two drives' records the same version (E2). */
static uint64_t rec_identity(const cn_ec_meta *m)
{
	uint64_t h = 1469598103934665603ull;
#define MIX(p, n)                                                                   \
	do {                                                                            \
		const unsigned char *_p = (const unsigned char *)(p);                       \
		for (size_t _i = 0; _i < (n); _i++)                                         \
			h = (h ^ _p[_i]) * 1099511628211ull;                                    \
	} while (0)
	MIX(&m->mtime_ms, sizeof m->mtime_ms);
	MIX(&m->size, sizeof m->size);
	MIX(m->etag, strlen(m->etag));
	MIX(m->data_id, strlen(m->data_id));
	MIX(m->version_id, strlen(m->version_id));
	MIX(&m->delete_marker, 1);
	for (size_t i = 0; i < m->nmeta; i++) {
		MIX(m->meta[i].name, strlen(m->meta[i].name) + 1);
		MIX(m->meta[i].value, strlen(m->meta[i].value) + 1);
	}
#undef MIX
	return h;
}

typedef enum rec_kind { REC_CURRENT, REC_VERSION, REC_UPLOAD, REC_PREV } rec_kind;

typedef struct decode_arg {
	bool skip_inline;
	bool partial_ok;   /* the caller takes a partial meta (read_one's `partial`) */
	cn_ec_meta *m;
	cn_err e;
	uint64_t ident;
	cn_ec_rec *partial; /* set: m is partial, decoded from this record (a reference) */
} decode_arg;

static void decode_cached(cn_ec_rec *rec, void *arg)
{
	decode_arg *a = arg;
	/* CRC checked when it was read; the inline stream stays in the cached record, which
	 * the meta now holds a reference to (no copy). The identity computed when it was read
	 * spares decoding the user metadata of a record the caller only compares. */
	if (a->partial_ok && cn_ec_rec_get_ident(rec, &a->ident)) {
		a->e = cn_ec_meta_decode_rec_partial(rec, a->skip_inline, a->m);
		if (!a->e)
			a->partial = cn_ec_rec_ref(rec);
		return;
	}
	a->e = cn_ec_meta_decode_rec(rec, a->skip_inline, true, a->m);
}

/* Reads drive d's record. cache: through the record cache (current records only; never
 * for heal, which must see the drives as they are: erasure_int.h). ident (may be NULL):
 * the record's rec_identity. partial (may be NULL; only with ident): a cache hit may
 * leave m partial (cn_ec_meta_decode_rec_partial) and return in *partial a reference to
 * the record to decode it in full from (complete_partial); else *partial = NULL. */
static cn_err read_one(cn_ec_set *s, size_t d, rec_kind kind, const char *vol, const char *key,
                       const char *name, bool skip_inline, bool cache, cn_ec_meta *m,
                       uint64_t *ident, cn_ec_rec **partial)
{
	uint64_t gen = 0;
	cn_drive *dr = D(s, d);
	if (partial)
		*partial = NULL;
	cache = cache && kind == REC_CURRENT && dr && d >= s->read_skip;
	if (cache) { /* a hit is decoded where it is cached: no copy of the record */
		decode_arg a = { skip_inline, partial != NULL, m, CN_OK, 0, NULL };
		if (cn_rcache_visit(s->rc, (unsigned)d, vol, key, decode_cached, &a, &gen)) {
			/* decoded and checked (slot, layout) when it was cached */
			if (!a.e && ident)
				*ident = a.partial ? a.ident : rec_identity(m);
			if (partial)
				*partial = a.partial;
			return a.e;
		}
	}
	cn_buf rec;
	cn_buf_init(&rec);
	cn_err e;
	if (!dr || d < s->read_skip)
		e = CN_ERR_OFFLINE;
	else if (kind == REC_CURRENT)
		e = dr->ops->read_meta(dr, vol, key, CN_EC_RECORD_MAX, &rec);
	else if (kind == REC_VERSION)
		e = dr->ops->version_read(dr, vol, key, name, CN_EC_RECORD_MAX, &rec);
	else if (kind == REC_PREV)
		e = dr->ops->prev_read ? dr->ops->prev_read(dr, vol, key, CN_EC_RECORD_MAX, &rec)
		                       : CN_ERR_NO_KEY;
	else
		e = dr->ops->upload_read(dr, vol, key, name, CN_EC_RECORD_MAX, &rec);
	if (e == CN_ERR_TOO_LARGE)
		e = CN_ERR_CORRUPT;
	cn_ec_rec *shared = NULL;
	if (!e && cache && rec.cap > rec.len + 1) {
		/* trimmed to the record: the cache accounts its length */
		char *p = realloc(rec.p, rec.len + 1);
		if (p) {
			rec.p = p;
			rec.cap = rec.len + 1;
		}
	}
	if (!e) {
		/* the buffer becomes a shared record: the meta's inline stream stays in it (no
		 * copy), and the cache takes a reference to the same bytes */
		if ((shared = cn_ec_rec_wrap(rec.p, rec.len)))
			cn_buf_init(&rec);
		e = shared ? cn_ec_meta_decode_rec(shared, skip_inline, false, m) : CN_ERR_NOMEM;
		if (!e && coded(s) && (m->ndist != s->n || m->index != d)) {
			cn_ec_meta_fini(m);
			e = CN_ERR_CORRUPT; /* a record of another slot or layout */
		}
		if (!e && (cache || ident)) {
			uint64_t id = rec_identity(m);
			if (ident)
				*ident = id;
			if (cache) {
				/* before the cache shares it; never false for a record m was
				 * decoded from, and then not cached */
				if (cn_ec_rec_set_ident(shared, id, m))
					cn_rcache_insert(s->rc, (unsigned)d, vol, key, shared, gen); /* R2 */
			}
		}
		cn_ec_rec_unref(shared);
		if (e == CN_ERR_CORRUPT)
			cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: corrupt record of %s/%s%s%s",
			       dr ? dr->endpoint : "?", vol, key, name ? " " : "", name ? name : "");
	}
	cn_buf_fini(&rec);
	/* read_meta's NO_KEY comes from a drive whose vol is there (drive.h): it counts as
	 * it is; other misses count only from a drive that is there */
	if (kind == REC_CURRENT && e == CN_ERR_NO_KEY)
		return e;
	return coded(s) ? trust_miss(s, d, e) : e;
}

/* Quorum of a record: K of its own shape; plain sets and uploads' records written at
 * create (k=1 there): at least the set's read quorum. */
static size_t rec_quorum(const cn_ec_set *s, const cn_ec_meta *m)
{
	return coded(s) && m->k >= 1 ? m->k : read_quorum(s);
}

/* E7's reading order: the slots that hold the object's data shards (STANDARD shape, the
 * common case) in shard order, then the rest. */
static void early_order(const cn_ec_set *s, const char *vol, const char *key, size_t *order)
{
	uint8_t dist[CN_EC_MAX_DRIVES];
	size_t n = s->n, i = 0;
	cn_codec_dist(vol, key, strlen(key), (unsigned)n, dist);
	for (size_t j = 0; j < (size_t)s->k; j++)
		for (size_t d = 0; d < n; d++)
			if (dist[d] == j)
				order[i++] = d;
	for (size_t d = 0; d < n; d++)
		if (dist[d] >= (size_t)s->k)
			order[i++] = d;
}

/* Decodes in full the meta read_one left partial from record src (NULL: m is whole). The
 * record decoded to the same layout when it was cached; its inline stream is taken again
 * from the same bytes. */
static cn_err complete_partial(cn_ec_meta *m, cn_ec_rec *src, bool skip_inline)
{
	if (!src)
		return CN_OK;
	cn_ec_meta_fini(m);
	return cn_ec_meta_decode_rec(src, skip_inline, true, m);
}

/* E15: no version of the key has its quorum among the current records: each drive's
 * previous record (drive.h prev_keep) votes too. A version counts the drives whose current
 * or previous record it is; the one with the most votes at its quorum wins (then the
 * newest). The slots that hold it as their previous record get that record in ms[] (their
 * current one released; errs[] CN_OK, ids[] its identity, prev[] set). Returns CN_OK when
 * one won, CN_ERR_QUORUM when none did, CN_ERR_BUSY when a drive could not be asked (W7:
 * the caller reads again where it may wait). */
static cn_err prev_fallback(cn_ec_set *s, const char *vol, const char *key, bool skip_inline,
                          cn_ec_meta *ms, cn_err *errs, uint64_t *ids, cn_ec_rec **partial,
                          bool *prev, size_t *nprev)
{
	size_t n = s->n;
	cn_ec_meta pm[CN_EC_MAX_DRIVES];
	cn_err pe[CN_EC_MAX_DRIVES];
	uint64_t pid[CN_EC_MAX_DRIVES];
	size_t found = 0;
	for (size_t d = 0; d < n; d++) {
		cn_ec_meta_init(&pm[d]);
		pe[d] = errs[d] == CN_ERR_OFFLINE ? CN_ERR_OFFLINE
		        : read_one(s, d, REC_PREV, vol, key, NULL, skip_inline, false, &pm[d], &pid[d], NULL);
		found += !pe[d];
		*nprev = found;
		if (pe[d] == CN_ERR_BUSY) {
			for (size_t j = 0; j <= d; j++)
				cn_ec_meta_fini(&pm[j]);
			return CN_ERR_BUSY;
		}
	}
	size_t best_votes = 0;
	uint64_t best_id = 0;
	int64_t best_mtime = 0;
	for (size_t c = 0; found && c < 2 * n; c++) {
		size_t d = c % n;
		bool cur = c < n;
		if (cur ? errs[d] != CN_OK : pe[d] != CN_OK)
			continue;
		uint64_t id = cur ? ids[d] : pid[d];
		const cn_ec_meta *cm = cur ? &ms[d] : &pm[d];
		size_t votes = 0;
		for (size_t j = 0; j < n; j++)
			votes += (!errs[j] && ids[j] == id) || (!pe[j] && pid[j] == id);
		if (votes < rec_quorum(s, cm))
			continue;
		if (votes > best_votes || (votes == best_votes && cm->mtime_ms > best_mtime)) {
			best_votes = votes;
			best_id = id;
			best_mtime = cm->mtime_ms;
		}
	}
	for (size_t d = 0; d < n; d++) {
		if (best_votes && !pe[d] && pid[d] == best_id && (errs[d] || ids[d] != best_id)) {
			cn_ec_meta_fini(&ms[d]);
			ms[d] = pm[d];
			cn_ec_meta_init(&pm[d]);
			cn_ec_rec_unref(partial[d]);
			partial[d] = NULL;
			errs[d] = CN_OK;
			ids[d] = best_id;
			if (prev)
				prev[d] = true;
		}
		cn_ec_meta_fini(&pm[d]);
	}
	if (best_votes)
		cn_log(CN_LOG_WARN, NULL, "erasure: %s/%s: no version at quorum among the current records; "
		       "read the one %zu drives hold as current or previous record (a write cut short?)",
		       vol, key, best_votes);
	return best_votes ? CN_OK : CN_ERR_QUORUM;
}

/* Reads the record from every drive and picks the version most drives agree on (E2).
 * ms[] (n entries, initialized) get each drive's record; agree[d] says drive d holds the
 * chosen one; *pick is one such drive. unread non-NULL: early-out (E7), unread[d] says
 * slot d was not read (its errs[] entry is then CN_ERR_OFFLINE). use_prev: a current
 * record's read with no version at quorum falls back on the previous records (E15);
 * prev[d] (may be NULL) then says slot d's agreeing record is its previous one. */
static cn_err read_quorum_once(cn_ec_set *s, rec_kind kind, const char *vol, const char *key,
                               const char *name, bool skip_inline, cn_ec_meta *ms, bool *agree,
                               size_t *pick, cn_err *errs_out, bool *unread, bool *split,
                               bool use_prev, bool *prev)
{
	cn_err errs_own[CN_EC_MAX_DRIVES];
	cn_err *errs = errs_out ? errs_out : errs_own;
	uint64_t ids[CN_EC_MAX_DRIVES];
	size_t n = s->n, order[CN_EC_MAX_DRIVES];
	bool ordered = coded(s) && kind != REC_UPLOAD;
	bool early = unread && ordered;
	if (ordered) /* the full read picks in the same order (E2's tie) */
		early_order(s, vol, key, order);
	else
		for (size_t d = 0; d < n; d++)
			order[d] = d;
	for (size_t d = 0; d < n; d++) {
		agree[d] = false;
		errs[d] = CN_ERR_OFFLINE;
		if (unread)
			unread[d] = early;
		if (prev)
			prev[d] = false;
	}
	/* cache hits of records that carry their identity are decoded partially (no user
	 * metadata copied out of each of up to 16 records); the chosen one is completed below */
	cn_ec_rec *partial[CN_EC_MAX_DRIVES] = { NULL };
	for (size_t i = 0; i < n; i++) {
		size_t d = order[i];
		if (unread)
			unread[d] = false;
		errs[d] = read_one(s, d, kind, vol, key, name, skip_inline, unread != NULL, &ms[d],
		                   &ids[d], &partial[d]);
		if (errs[d])
			continue;
		if (!early)
			continue;
		size_t c = 0;
		for (size_t j = 0; j <= i; j++)
			c += !errs[order[j]] && ids[order[j]] == ids[d];
		if (c >= rec_quorum(s, &ms[d]))
			break;
	}
	/* W7 (drive.h cn_drive_no_io): a drive that could not be asked decides nothing, and
	 * neither does this read: the caller runs it again where it may wait */
	for (size_t d = 0; d < n; d++) {
		if (errs[d] == CN_ERR_BUSY) {
			for (size_t j = 0; j < n; j++)
				cn_ec_rec_unref(partial[j]);
			return CN_ERR_BUSY;
		}
	}
	size_t best = n;
	if (ordered) {
		/* the first version, in reading order, to reach its quorum: the one the
		 * early-out stopped at, or for a full read the same (E2; two tie only at K) */
		for (size_t i = 0; i < n && best == n; i++) {
			size_t d = order[i], c = 0;
			if (errs[d])
				continue;
			for (size_t j = 0; j <= i; j++)
				c += !errs[order[j]] && ids[order[j]] == ids[d];
			if (c >= rec_quorum(s, &ms[d]))
				best = d;
		}
	} else {
		/* uploads' records (some written with k = 1): the most agreed, then the newest */
		size_t best_n = 0;
		for (size_t d = 0; d < n; d++) {
			if (errs[d])
				continue;
			size_t c = 0;
			for (size_t j = 0; j < n; j++)
				c += !errs[j] && ids[j] == ids[d];
			if (c > best_n || (c == best_n && best < n && ms[d].mtime_ms > ms[best].mtime_ms)) {
				best = d;
				best_n = c;
			}
		}
		if (best < n && best_n < rec_quorum(s, &ms[best]))
			best = n;
	}
	size_t nprev = 0;
	cn_err pe = best == n && use_prev && ordered && kind == REC_CURRENT
	            ? prev_fallback(s, vol, key, skip_inline, ms, errs, ids, partial, prev, &nprev)
	            : CN_ERR_QUORUM;
	if (pe == CN_ERR_BUSY) {
		for (size_t j = 0; j < n; j++)
			cn_ec_rec_unref(partial[j]);
		return CN_ERR_BUSY;
	}
	if (pe == CN_OK) {
		/* the winner's slot: one holding it (as current or previous record) */
		for (size_t i = 0; i < n && best == n; i++) {
			size_t d = order[i], c = 0;
			if (errs[d])
				continue;
			for (size_t j = 0; j < n; j++)
				c += !errs[j] && ids[j] == ids[d];
			if (c >= rec_quorum(s, &ms[d]))
				best = d;
		}
	}
	cn_err e = best < n ? complete_partial(&ms[best], partial[best], skip_inline) : CN_OK;
	for (size_t d = 0; d < n; d++)
		cn_ec_rec_unref(partial[d]);
	if (e)
		return e;
	if (best < n) {
		CN_ASSERT(!ms[best].partial);
		for (size_t d = 0; d < n; d++)
			agree[d] = !errs[d] && ids[d] == ids[best];
		*pick = best;
		return CN_OK;
	}
	/* no version has quorum: what do the others say? */
	size_t nokey = 0, nobucket = 0, answered = 0;
	for (size_t d = 0; d < n; d++) {
		if (errs[d] == CN_ERR_OFFLINE)
			continue;
		answered++;
		nokey += errs[d] == CN_ERR_NO_KEY || errs[d] == CN_ERR_NOT_FOUND;
		nobucket += errs[d] == CN_ERR_NO_BUCKET;
	}
	cn_err missing = kind == REC_CURRENT || kind == REC_VERSION ? CN_ERR_NO_KEY : CN_ERR_NOT_FOUND;
	size_t records = 0;
	for (size_t d = 0; d < n; d++)
		records += !errs[d];
	/* E13: K drives said what they hold (a record, or none), and no version has quorum */
	*split = coded(s) && records && records + nokey >= read_quorum(s);
	if (nobucket && nobucket >= read_quorum(s))
		return CN_ERR_NO_BUCKET;
	/* a plain set's one drive says what is there; a coded set needs K drives to say a
	 * key is not there (those that did not answer may hold it) */
	if (nokey + nobucket >= read_quorum(s) || (!coded(s) && answered && nokey + nobucket == answered))
		return missing;
	if (!coded(s) && answered)
		return errs[0];
	/* E16: one version, on too few drives to be read even with every drive that did not
	 * say what it holds, and no previous record anywhere: a first commit cut short (an
	 * acknowledged one reached W >= K drives), which E10 removes. It is not there. */
	if (use_prev && kind == REC_CURRENT && records && !nprev) {
		size_t first = n;
		bool one = true;
		for (size_t d = 0; d < n; d++) {
			if (errs[d])
				continue;
			if (first == n)
				first = d;
			else if (ids[d] != ids[first])
				one = false;
		}
		size_t unknown = n - records - nokey; /* a drive without the bucket too, as E10 */
		if (one && records + unknown < rec_quorum(s, &ms[first]))
			return missing;
	}
	return CN_ERR_QUORUM;
}

/* E13: the drives split between versions of the key (or a version and "no such key"),
 * every one answering and none at its quorum, is what a read finds across a commit of the
 * key in progress: reads take no lock (C2 in object.c serializes commits only), and a
 * commit renames its records drive by drive. Such a read waits for the key's commits in
 * progress (split_wait: their renames are done when it returns) and reads again, a few
 * times, before it answers CN_ERR_QUORUM (503); a split that outlasts that is real (a
 * commit cut short, E12's window) and left to heal. Measured before the retries: ~1 in
 * 4,600 GETs answered 503 on 16 drives while three clients overwrote the same three keys,
 * on a healthy set; with sleeps of 4.2 ms in all instead of split_wait, still 1 in ~3 runs
 * of test_erasure_random.py's concurrent test (a commit preempted on the 2-core machine, or
 * slowed by file creation, outlasted them). Upload records (their lock is the upload's)
 * keep the sleeps. */
#define SPLIT_RETRIES 6
void (*cn_ec__split_retry_hook)(void);
static cn_err read_quorum_recs(cn_ec_set *s, rec_kind kind, const char *vol, const char *key,
                               const char *name, bool skip_inline, cn_ec_meta *ms, bool *agree,
                               size_t *pick, cn_err *errs_out, bool *unread, bool *prev)
{
	for (int attempt = 0;; attempt++) {
		bool split = false;
		/* E15 on the last read of a split (a split that outlasted the commits in progress) */
		cn_err e = read_quorum_once(s, kind, vol, key, name, skip_inline, ms, agree, pick, errs_out,
		                            unread, &split, attempt == SPLIT_RETRIES, prev);
		if (e != CN_ERR_QUORUM || !split || attempt == SPLIT_RETRIES)
			return e;
		for (size_t d = 0; d < s->n; d++) {
			cn_ec_meta_fini(&ms[d]);
			cn_ec_meta_init(&ms[d]);
		}
		if (cn_ec__split_retry_hook)
			cn_ec__split_retry_hook();
		if (s->split_wait && kind != REC_UPLOAD) {
			if (!s->split_wait(s->split_ctx, vol, key))
				attempt = SPLIT_RETRIES - 1; /* it gave up waiting: one last read */
			continue;
		}
		struct timespec ts = { 0, 200000L * (attempt + 1) }; /* 4.2 ms in all at most */
		nanosleep(&ts, NULL);
	}
}

/* The single-record read used by everything but the data path: the chosen record moved
 * into m. */
static cn_err read_rec(cn_ec_set *s, rec_kind kind, const char *vol, const char *key,
                       const char *name, bool skip_inline, cn_ec_meta *m)
{
	if (!coded(s))
		return read_one(s, 0, kind, vol, key, name, skip_inline, true, m, NULL, NULL);
	cn_ec_meta ms[CN_EC_MAX_DRIVES];
	bool agree[CN_EC_MAX_DRIVES];
	size_t pick = 0;
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_init(&ms[d]);
	bool unread[CN_EC_MAX_DRIVES], prev[CN_EC_MAX_DRIVES];
	cn_err e = read_quorum_recs(s, kind, vol, key, name, skip_inline, ms, agree, &pick, NULL,
	                            kind == REC_UPLOAD ? NULL : unread, prev);
	if (!e) {
		cn_ec_meta_fini(m);
		*m = ms[pick];
		cn_ec_meta_init(&ms[pick]);
		for (size_t d = 0; d < s->n; d++)
			m->from_prev |= agree[d] && prev[d];
	}
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_fini(&ms[d]);
	return e;
}

cn_err cn_ec_read_meta(cn_ec_set *s, const char *vol, const char *key, bool skip_inline,
                       cn_ec_meta *m)
{
	return read_rec(s, REC_CURRENT, vol, key, NULL, skip_inline, m);
}

cn_err cn_ec_delete_meta(cn_ec_set *s, const char *vol, const char *key)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!quorum_up(s, s->n / 2 + 1))
		return CN_ERR_QUORUM; /* E12 */
	for (size_t j = s->n; j-- > 0;) /* E16: the walked drives first */
		errs[j] = D(s, j) ? D(s, j)->ops->delete_meta(D(s, j), vol, key) : CN_ERR_OFFLINE;
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* R1 */
	size_t ok = 0;
	for (size_t i = 0; i < s->n; i++) /* a drive that never had it agrees */
		ok += errs[i] == CN_OK;
	for (size_t i = 0; i < s->n && ok; i++)
		if (errs[i] == CN_ERR_NO_KEY)
			errs[i] = CN_OK;
	return reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_delete_data(cn_ec_set *s, const char *vol, const char *key, const char *data_id)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->delete_data(D(s, i), vol, key,
		                                              data_id && data_id[0] ? data_id : NULL)
		                  : CN_ERR_OFFLINE;
	return reduce_quorum(errs, s->n, s->n / 2 + 1);
}

/* --- reading: plain ---------------------------------------------------------------- */

/* Opens part file idx (0-based) of the reader's version as r->f, checking its size. */
static cn_err open_part(cn_ec_reader *r, size_t idx)
{
	cn_ec_set *s = r->s;
	char name[32];
	snprintf(name, sizeof name, "part.%zu", idx + 1);
	if (r->f) {
		D(s, 0)->ops->rfile_close(r->f);
		r->f = NULL;
	}
	cn_err e = D(s, 0)->ops->open_data(D(s, 0), r->vol, r->key, r->data_id, name, &r->f);
	if (e)
		return e;
	r->cur = idx;
	int64_t want = r->ends[idx] - (idx ? r->ends[idx - 1] : 0);
	if (D(s, 0)->ops->rfile_size(r->f) != want) {
		cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: %s/%s: %s size %lld != %lld",
		       D(s, 0)->endpoint, r->vol, r->key, name,
		       (long long)D(s, 0)->ops->rfile_size(r->f), (long long)want);
		D(s, 0)->ops->rfile_close(r->f);
		r->f = NULL;
		return CN_ERR_CORRUPT;
	}
	return CN_OK;
}

/* The part holding byte off (off < size). */
static size_t part_of(const cn_ec_reader *r, int64_t off)
{
	size_t lo = 0, hi = r->nparts - 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->ends[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Part layout of the version m into r (ends[], nparts, data_id). */
static cn_err reader_parts(cn_ec_reader *r, const cn_ec_meta *m)
{
	size_t np = m->nparts ? m->nparts : 1;
	free(r->ends);
	if (!(r->ends = malloc(np * sizeof *r->ends)))
		return CN_ERR_NOMEM;
	int64_t end = 0;
	for (size_t i = 0; i < np; i++) {
		end += m->nparts ? m->parts[i].size : m->size;
		r->ends[i] = end;
	}
	if (end != m->size) {
		cn_log(CN_LOG_ERROR, NULL, "erasure: %s/%s: parts add up to %lld, not %lld", r->vol, r->key,
		       (long long)end, (long long)m->size);
		return CN_ERR_CORRUPT;
	}
	r->nparts = np;
	cn_strlcpy(r->data_id, m->data_id, sizeof r->data_id);
	return CN_OK;
}

static cn_err open_plain(cn_ec_reader *r, const char *vid, cn_ec_meta *m)
{
	cn_ec_set *s = r->s;
	cn_err e = CN_OK;
	for (int tries = 0; tries < OPEN_RETRIES; tries++) {
		cn_ec_meta_fini(m);
		if ((e = vid ? read_one(s, 0, REC_VERSION, r->vol, r->key, vid, false, false, m, NULL, NULL)
		             : read_one(s, 0, REC_CURRENT, r->vol, r->key, NULL, false, true, m, NULL,
		                        NULL)))
			break;
		r->size = m->size;
		if (m->has_inline) {
			r->in_records = true;
			r->inline_data = m->inline_data;
			r->inline_rec = m->inline_rec;
			m->inline_data = NULL;
			m->inline_rec = NULL;
			break;
		}
		if ((e = reader_parts(r, m)))
			break;
		e = open_part(r, 0);
		if (e == CN_ERR_NO_KEY)
			continue; /* replaced between the record and the data: read the new record */
		break;
	}
	return e;
}

/* --- reading: coded ---------------------------------------------------------------- */

static void close_coded_files(cn_ec_reader *r)
{
	for (size_t d = 0; d < r->s->n; d++) {
		if (r->cf[d])
			D(r->s, d)->ops->rfile_close(r->cf[d]);
		r->cf[d] = NULL;
		r->cf_bad[d] = false;
	}
	r->cf_open = false;
}

/* Opens (lazily) slot d's file of part p; false when it cannot be read. */
static bool coded_file(cn_ec_reader *r, size_t p, size_t d)
{
	if (!r->cf_open || r->cpart != p) {
		close_coded_files(r);
		r->cpart = p;
		r->cf_open = true;
	}
	if (r->cf[d])
		return true;
	if (r->cf_bad[d] || !r->good[d] || !D(r->s, d))
		return false;
	char name[32];
	snprintf(name, sizeof name, "part.%zu", p + 1);
	cn_err e = D(r->s, d)->ops->open_data(D(r->s, d), r->vol, r->key, r->data_id, name, &r->cf[d]);
	if (e) {
		r->cf_bad[d] = true;
		r->degraded = true;
		cn_log(CN_LOG_WARN, NULL, "erasure: drive %s: %s/%s %s: %s", D(r->s, d)->endpoint, r->vol,
		       r->key, name, cn_err_str(e));
		return false;
	}
	return true;
}

/* Reads slot d's [hash][shard] of block b of part p into out (HASH_LEN + sl bytes),
 * checks the hash (E3) and points *at at the shard's bytes: in out, or for an inline
 * stream where it already is in memory (no copy; a shared record's block is checked once:
 * cn_ec_rec_block_checked). */
static bool read_shard(cn_ec_reader *r, size_t p, size_t b, size_t d, size_t sl, unsigned char *out,
                       unsigned char **at)
{
	size_t fsl = cn_codec_shard_len(r->c, r->block_size);
	int64_t off = (int64_t)b * (int64_t)(HASH_LEN + fsl);
	size_t want = HASH_LEN + sl, got = 0;
	if (r->inl[d]) {
		if (off + (int64_t)want > (int64_t)r->inl_len[d])
			return false;
		out = r->inl[d] + off;
		if (r->inl_rec[d] && cn_ec_rec_block_checked(r->inl_rec[d], b)) {
			*at = out + HASH_LEN; /* this record's copy was checked (a cached record) */
			return true;
		}
	} else {
		if (!coded_file(r, p, d))
			return false;
		cn_err e = D(r->s, d)->ops->rfile_read(r->cf[d], off, out, want, &got);
		if (e || got != want) {
			cn_log(CN_LOG_WARN, NULL, "erasure: drive %s: %s/%s: shard of block %zu %s",
			       D(r->s, d)->endpoint, r->vol, r->key, b, e ? cn_err_str(e) : "short");
			r->degraded = true;
			return false;
		}
	}
	if (cn_codec_hash_check(out + HASH_LEN, sl, out) != CN_OK) {
		cn_log(CN_LOG_WARN, NULL, "erasure: drive %s: %s/%s: block %zu: bitrot (hash mismatch)",
		       D(r->s, d) ? D(r->s, d)->endpoint : "?", r->vol, r->key, b);
		r->degraded = true;
		return false;
	}
	if (r->inl[d] && r->inl_rec[d])
		cn_ec_rec_mark_checked(r->inl_rec[d], b);
	*at = out + HASH_LEN;
	return true;
}

/* Slot d holds the chosen version (record m): it is good, serves its shard index, and
 * its inline stream (if any) moves into the reader. */
static void reader_take_slot(cn_ec_reader *r, size_t d, cn_ec_meta *m)
{
	r->good[d] = true;
	if (r->dist[d] < r->s->n)
		r->slot_of[r->dist[d]] = (int8_t)d;
	if (m->has_inline) {
		r->inl[d] = m->inline_data;
		r->inl_rec[d] = m->inline_rec;
		r->inl_len[d] = m->inline_len;
		m->inline_data = NULL;
		m->inline_rec = NULL;
	}
}

/* E7: reads the records of the slots an early-out open skipped; those that hold the chosen
 * version become good (their inline streams taken), others mark the object degraded.
 * Returns whether any slot became good. */
static bool reader_complete(cn_ec_reader *r)
{
	cn_ec_set *s = r->s;
	bool more = false;
	for (size_t d = 0; d < s->n; d++) {
		if (!r->unread[d])
			continue;
		r->unread[d] = false;
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		uint64_t id = 0;
		cn_err e = read_one(s, d, r->vid[0] ? REC_VERSION : REC_CURRENT, r->vol, r->key,
		                    r->vid[0] ? r->vid : NULL, false, false, &m, &id, NULL);
		if (!e && id == r->ident) {
			reader_take_slot(r, d, &m);
			more = true;
		} else if (e == CN_ERR_OFFLINE) {
			r->offline[d] = true;
		} else {
			r->degraded = true;
			/* the key changed since the open (overwritten or deleted): the record no
			 * longer names this version, but a file-backed version's shard files, named
			 * by its data id and kept while this reader lives (object.c C6), may still
			 * be there, and their hashes say whether they are this version's. (A drive
			 * holding an older version has no such file: a missing shard, rebuilt.) */
			if (r->data_id[0] && (e == CN_OK || e == CN_ERR_NO_KEY)) {
				r->good[d] = true;
				if (r->dist[d] < s->n)
					r->slot_of[r->dist[d]] = (int8_t)d;
				more = true;
			}
		}
		cn_ec_meta_fini(&m);
	}
	return more;
}

/* The reader's scratch (n x sh_stride), allocated on first use; NULL when out of memory. */
static unsigned char *reader_scratch(cn_ec_reader *r)
{
	if (!r->sh)
		r->sh = malloc(r->s->n * r->sh_stride);
	return r->sh;
}

/* Loads block b of part p: its K data shards verified, missing ones rebuilt (E4: data
 * shards first, parity only as needed), left in r->sh at r->dptr (the block's bytes are
 * their concatenation; block_at reads them, nothing is joined). */
static cn_err load_block(cn_ec_reader *r, size_t p, size_t b)
{
	if (r->blk_valid && r->blk_part == p && r->blk_idx == b)
		return CN_OK;
	int64_t psize = r->ends[p] - (p ? r->ends[p - 1] : 0);
	int64_t boff = (int64_t)b * r->block_size;
	size_t bl = psize - boff < (int64_t)r->block_size ? (size_t)(psize - boff) : r->block_size;
	size_t sl = cn_codec_shard_len(r->c, bl), n = r->s->n;
	unsigned char *ptr[CN_EC_MAX_DRIVES];
	bool present[CN_EC_MAX_DRIVES];
	unsigned have;
again:
	have = 0;
	memset(present, 0, sizeof present);
	/* data shards first, then parity until K are good; shards read from files and
	 * missing ones rebuilt go to the scratch (sh), inline ones are used where they are */
	for (unsigned j = 0; j < n && have < r->k; j++) {
		int d = r->slot_of[j];
		ptr[j] = NULL;
		if (d < 0)
			continue;
		unsigned char *out = NULL;
		if (!r->inl[d]) {
			if (!reader_scratch(r))
				return CN_ERR_NOMEM;
			out = r->sh + (size_t)j * r->sh_stride;
		}
		if (read_shard(r, p, b, (size_t)d, sl, out, &ptr[j])) {
			present[j] = true;
			have++;
		}
	}
	if (have < r->k && reader_complete(r))
		goto again; /* E7: slots not read at open may hold the shards still needed */
	if (have < r->k) {
		cn_log(CN_LOG_ERROR, NULL, "erasure: %s/%s: block %zu of part %zu: only %u of %u shards "
		       "readable", r->vol, r->key, b, p + 1, have, r->k);
		return CN_ERR_QUORUM;
	}
	bool need = false;
	for (unsigned j = 0; j < r->k; j++)
		need |= !present[j];
	if (need && !reader_scratch(r))
		return CN_ERR_NOMEM;
	for (unsigned j = 0; j < n; j++) /* where missing shards are rebuilt */
		if (!present[j])
			ptr[j] = r->sh ? r->sh + (size_t)j * r->sh_stride + HASH_LEN : NULL;
	if (need) {
		bool want[CN_EC_MAX_DRIVES] = { false };
		for (unsigned j = 0; j < r->k; j++)
			want[j] = !present[j];
		cn_err e = cn_codec_reconstruct(r->c, sl, ptr, present, want);
		if (e)
			return e;
	}
	for (unsigned j = 0; j < r->k; j++)
		r->dptr[j] = ptr[j];
	r->blk_part = p;
	r->blk_idx = b;
	r->blk_len = bl;
	r->blk_sl = sl;
	r->blk_valid = true;
	return CN_OK;
}

/* The loaded block's bytes from in (< blk_len): where they are, and how many follow there
 * (to the end of their data shard). */
static const unsigned char *block_at(const cn_ec_reader *r, size_t in, size_t *avail)
{
	size_t j = in / r->blk_sl, end = (j + 1) * r->blk_sl;
	*avail = (end < r->blk_len ? end : r->blk_len) - in;
	return r->dptr[j] + in % r->blk_sl;
}

static cn_err open_coded(cn_ec_reader *r, const char *vid, bool full, cn_ec_meta *m)
{
	cn_ec_set *s = r->s;
	cn_ec_meta ms[CN_EC_MAX_DRIVES];
	bool agree[CN_EC_MAX_DRIVES];
	cn_err errs[CN_EC_MAX_DRIVES];
	size_t pick = 0;
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_init(&ms[d]);
	cn_err e = read_quorum_recs(s, vid ? REC_VERSION : REC_CURRENT, r->vol, r->key, vid, false, ms,
	                            agree, &pick, errs, full ? NULL : r->unread, r->prev);
	if (!e) {
		const cn_ec_meta *c = &ms[pick];
		r->ident = rec_identity(c);
		r->size = c->size;
		r->k = c->k;
		r->m = c->m;
		r->block_size = c->block_size;
		r->c = codec_for(s, c->k, c->m);
		if (!r->c || c->block_size != CN_EC_BLOCK_SIZE || c->ndist != s->n) {
			cn_log(CN_LOG_ERROR, NULL, "erasure: %s/%s: record shape %u+%u/%u not servable by this "
			       "set", r->vol, r->key, c->k, c->m, c->ndist);
			e = CN_ERR_CORRUPT;
		}
	}
	if (!e) {
		const cn_ec_meta *c = &ms[pick];
		memcpy(r->dist, c->dist, s->n);
		for (size_t j = 0; j < s->n; j++)
			r->slot_of[j] = -1;
		for (size_t d = 0; d < s->n; d++) {
			r->offline[d] = errs[d] == CN_ERR_OFFLINE && !r->unread[d];
			if ((!agree[d] && errs[d] != CN_ERR_OFFLINE) || r->prev[d])
				r->degraded = true; /* missing or stale record on a drive we can write: heal */
			if (agree[d])
				reader_take_slot(r, d, &ms[d]);
		}
		r->in_records = c->has_inline;
		if (!c->has_inline)
			e = reader_parts(r, c);
		else {
			/* an inline version is one part */
			free(r->ends);
			r->ends = malloc(sizeof *r->ends);
			if (!r->ends)
				e = CN_ERR_NOMEM;
			else {
				r->ends[0] = c->size;
				r->nparts = 1;
			}
		}
	}
	if (!e) {
		/* scratch for the largest block the object has: a 64 KiB object on 16 drives
		 * needs 16 x 5.4 KiB, not 16 x 85 KiB. Allocated by the first load_block that
		 * needs it: a healthy inline object is served from its records alone. */
		size_t big = r->size < (int64_t)r->block_size ? (size_t)r->size : r->block_size;
		r->sh_stride = HASH_LEN + cn_codec_shard_len(r->c, big);
	}
	if (!e) {
		cn_ec_meta_fini(m);
		*m = ms[pick];
		cn_ec_meta_init(&ms[pick]);
		cn_ec_meta_drop_inline(m); /* the object's bytes are decoded from the shards */
	}
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_fini(&ms[d]);
	return e;
}

cn_err cn_ec_open(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m, cn_ec_reader **out)
{
	return cn_ec_open_version(s, vol, key, NULL, m, out);
}

static cn_err open_version(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                           bool full, cn_ec_meta *m, cn_ec_reader **out)
{
	cn_ec_reader *r = calloc(1, sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	r->s = s;
	r->vol = strdup(vol);
	r->key = strdup(key);
	cn_strlcpy(r->vid, vid ? vid : "", sizeof r->vid);
	cn_err e = r->vol && r->key ? CN_OK : CN_ERR_NOMEM;
	if (!e)
		e = coded(s) ? open_coded(r, vid, full, m) : open_plain(r, vid, m);
	if (e) {
		cn_ec_reader_close(r);
		cn_ec_meta_fini(m);
		return e;
	}
	*out = r;
	return CN_OK;
}

cn_err cn_ec_open_version(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                          cn_ec_meta *m, cn_ec_reader **out)
{
	return open_version(s, vol, key, vid, false, m, out);
}

bool cn_ec_reader_in_records(const cn_ec_reader *r)
{
	return r->in_records;
}

void cn_ec_no_io(bool on)
{
	cn_drive_no_io(on);
}

bool cn_ec_reader_degraded(const cn_ec_reader *r)
{
	return r->degraded;
}

void cn_ec_reader_name(const cn_ec_reader *r, const char **vol, const char **key, const char **vid)
{
	*vol = r->vol;
	*key = r->key;
	*vid = r->vid[0] ? r->vid : NULL;
}

cn_err cn_ec_reader_read(cn_ec_reader *r, int64_t off, void *buf, size_t len, size_t *got)
{
	*got = 0;
	if (off < 0 || off >= r->size)
		return CN_OK;
	if ((int64_t)len > r->size - off)
		len = (size_t)(r->size - off);
	if (!coded(r->s) && !r->nparts) {
		memcpy(buf, r->inline_data + off, len);
		*got = len;
		return CN_OK;
	}
	while (*got < len) {
		size_t idx = part_of(r, off);
		int64_t start = idx ? r->ends[idx - 1] : 0;
		size_t want = len - *got;
		if ((int64_t)want > r->ends[idx] - off)
			want = (size_t)(r->ends[idx] - off);
		size_t n = 0;
		cn_err e = CN_OK;
		if (coded(r->s)) {
			int64_t poff = off - start;
			size_t b = (size_t)(poff / r->block_size), in = (size_t)(poff % r->block_size);
			if ((e = load_block(r, idx, b)))
				return e;
			const unsigned char *src = block_at(r, in, &n);
			if (n > want)
				n = want;
			memcpy((char *)buf + *got, src, n);
		} else {
			if (idx != r->cur || !r->f) {
				e = open_part(r, idx);
				if (e == CN_ERR_NO_KEY) {
					cn_log(CN_LOG_WARN, NULL, "erasure: %s/%s: replaced while being read", r->vol,
					       r->key);
					e = CN_ERR_IO;
				}
				if (e)
					return e;
			}
			e = D(r->s, 0)->ops->rfile_read(r->f, off - start, (char *)buf + *got, want, &n);
			if (!e && n < want) {
				cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: shard shorter than its record",
				       D(r->s, 0)->endpoint);
				e = CN_ERR_CORRUPT;
			}
			if (e)
				return e;
		}
		*got += n;
		off += (int64_t)n;
	}
	return CN_OK;
}

cn_err cn_ec_reader_view(cn_ec_reader *r, int64_t off, size_t max, const void **p, size_t *n)
{
	*p = NULL;
	*n = 0;
	if (off < 0 || off >= r->size || max == 0)
		return CN_OK;
	if ((int64_t)max > r->size - off)
		max = (size_t)(r->size - off);
	if (!coded(r->s)) {
		if (r->nparts)
			return CN_OK; /* in a file: cn_ec_reader_read or _plain_fd */
		*p = r->inline_data + off;
		*n = max;
		return CN_OK;
	}
	size_t idx = part_of(r, off);
	int64_t poff = off - (idx ? r->ends[idx - 1] : 0);
	cn_err e = load_block(r, idx, (size_t)(poff / r->block_size));
	if (e)
		return e;
	*p = block_at(r, (size_t)(poff % r->block_size), n);
	if (*n > max)
		*n = max;
	return CN_OK;
}

cn_err cn_ec_reader_viewv(cn_ec_reader *r, int64_t off, size_t max, struct iovec *iov, int maxiov,
                          int *niov, size_t *n)
{
	*niov = 0;
	*n = 0;
	while (*niov < maxiov && *n < max) {
		int64_t at = off + (int64_t)*n;
		if (*niov && coded(r->s)) { /* only the loaded block: the earlier views stay valid */
			if (at >= r->size)
				break;
			size_t idx = part_of(r, at);
			int64_t poff = at - (idx ? r->ends[idx - 1] : 0);
			if (!r->blk_valid || idx != r->blk_part || (size_t)(poff / r->block_size) != r->blk_idx)
				break;
		}
		const void *p;
		size_t got;
		cn_err e = cn_ec_reader_view(r, at, max - *n, &p, &got);
		if (e) {
			*niov = 0;
			*n = 0;
			return e;
		}
		if (!p || !got)
			break;
		iov[*niov] = (struct iovec){ (void *)p, got };
		(*niov)++;
		*n += got;
	}
	return CN_OK;
}

bool cn_ec_reader_plain_fd(cn_ec_reader *r, int64_t off, int *fd, int64_t *fd_off, int64_t *avail)
{
	if (coded(r->s) || !r->nparts || off < 0 || off >= r->size)
		return false;
	size_t idx = part_of(r, off);
	if ((idx != r->cur || !r->f) && open_part(r, idx))
		return false;
	int f = D(r->s, 0)->ops->rfile_fd(r->f);
	if (f < 0)
		return false;
	int64_t start = idx ? r->ends[idx - 1] : 0;
	*fd = f;
	*fd_off = off - start;
	*avail = r->ends[idx] - off;
	return true;
}

void cn_ec_reader_close(cn_ec_reader *r)
{
	if (!r)
		return;
	if (r->f)
		D(r->s, 0)->ops->rfile_close(r->f);
	close_coded_files(r);
	for (size_t d = 0; d < CN_EC_MAX_DRIVES; d++) {
		if (r->inl_rec[d])
			cn_ec_rec_unref(r->inl_rec[d]);
		else if (r->inl[d]) /* most slots hold nothing: no call into free per slot */
			free(r->inl[d]);
	}
	if (r->inline_rec)
		cn_ec_rec_unref(r->inline_rec);
	else
		free(r->inline_data);
	free(r->ends);
	free(r->vol);
	free(r->key);
	free(r->blk);
	free(r->sh);
	free(r);
}

/* --- healing ------------------------------------------------------------------------ */

cn_err cn_ec_heal(cn_ec_set *s, const char *vol, const char *key, const char *vid, bool dry_run,
                  cn_ec_heal_result *res)
{
	memset(res, 0, sizeof *res);
	if (!coded(s))
		return CN_OK; /* one drive: nothing to rebuild from */
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *r = NULL;
	cn_err e = open_version(s, vol, key, vid, true, &m, &r);
	if (e) {
		cn_ec_meta_fini(&m);
		return e;
	}
	/* which slots need a rewrite: a missing/stale record, or any unreadable shard */
	bool bad[CN_EC_MAX_DRIVES] = { false };
	size_t nbad = 0;
	bool is_inline = m.has_inline || m.data_id[0] == 0;
	for (size_t d = 0; d < s->n; d++) {
		if (!D(s, d) || r->offline[d])
			continue; /* offline: nothing to write to */
		bad[d] = !r->good[d] || r->prev[d]; /* E15: a previous record is rewritten current */
		res->from_prev |= r->prev[d];
	}
	if (!is_inline) {
		size_t fsl = cn_codec_shard_len(r->c, r->block_size);
		unsigned char *tmp = malloc(HASH_LEN + fsl);
		if (!tmp)
			e = CN_ERR_NOMEM;
		for (size_t p = 0; !e && p < r->nparts; p++) {
			int64_t psize = r->ends[p] - (p ? r->ends[p - 1] : 0);
			size_t nb = (size_t)((psize + r->block_size - 1) / r->block_size);
			for (size_t d = 0; d < s->n; d++) {
				if (!D(s, d) || bad[d])
					continue;
				for (size_t b = 0; b < nb && !bad[d]; b++) {
					size_t bl = psize - (int64_t)b * r->block_size < (int64_t)r->block_size
					            ? (size_t)(psize - (int64_t)b * r->block_size) : r->block_size;
					unsigned char *at;
					if (!read_shard(r, p, b, d, cn_codec_shard_len(r->c, bl), tmp, &at))
						bad[d] = true;
				}
				/* a longer file than its record says is also damage */
				if (!bad[d] && coded_file(r, p, d)) {
					int64_t want = cn_codec_shard_file_size(r->c, r->block_size, psize) +
					               (int64_t)nb * HASH_LEN;
					if (D(s, d)->ops->rfile_size(r->cf[d]) != want)
						bad[d] = true;
				}
			}
		}
		free(tmp);
	}
	for (size_t d = 0; d < s->n; d++) {
		nbad += bad[d];
		if (D(s, d) && !r->offline[d] && !bad[d])
			res->current_slots |= 1ull << d;
	}
	res->drives_bad = (unsigned)nbad;
	if (e || nbad == 0 || dry_run) {
		cn_ec_reader_close(r);
		cn_ec_meta_fini(&m);
		return e;
	}
	/* rebuild: decode every block, re-encode, write the bad slots' shards */
	char tmp_id[33];
	cn_drive_random_id(tmp_id);
	cn_drive_file *f[CN_EC_MAX_DRIVES] = { 0 };
	size_t n = s->n;
	size_t fsl = cn_codec_shard_len(r->c, r->block_size);
	unsigned char *shards = malloc(n * fsl);
	unsigned char *streams[CN_EC_MAX_DRIVES] = { 0 }, *sbase = NULL;
	size_t slen[CN_EC_MAX_DRIVES] = { 0 };
	if (!shards)
		e = CN_ERR_NOMEM;
	if (!e && is_inline) {
		unsigned char *all = malloc(m.size ? (size_t)m.size : 1);
		size_t got;
		if (!all)
			e = CN_ERR_NOMEM;
		if (!e)
			e = cn_ec_reader_read(r, 0, all, (size_t)m.size, &got);
		if (!e)
			e = encode_streams(r->c, all, (size_t)m.size, r->dist, n, &sbase, streams, slen);
		free(all);
	}
	for (size_t p = 0; !e && !is_inline && p < r->nparts; p++) {
		char name[32];
		snprintf(name, sizeof name, "part.%zu", p + 1);
		for (size_t d = 0; d < n && !e; d++)
			if (bad[d] && (e = D(s, d)->ops->create_file(D(s, d), tmp_id, m.data_id, name, &f[d])))
				cn_log(CN_LOG_WARN, NULL, "erasure: heal %s/%s: drive %s: %s", vol, key,
				       D(s, d)->endpoint, cn_err_str(e));
		int64_t psize = r->ends[p] - (p ? r->ends[p - 1] : 0);
		for (int64_t boff = 0; !e && boff < psize; boff += r->block_size) {
			size_t bl = psize - boff < (int64_t)r->block_size ? (size_t)(psize - boff) : r->block_size;
			if (!r->blk && !(r->blk = malloc(r->block_size))) {
				e = CN_ERR_NOMEM;
				break;
			}
			if ((e = load_block(r, p, (size_t)(boff / r->block_size))))
				break;
			cn_codec_join(r->c, r->dptr, bl, r->blk);
			size_t sl = cn_codec_shard_len(r->c, bl);
			unsigned char *ptr[CN_EC_MAX_DRIVES], hashes[CN_EC_MAX_DRIVES][HASH_LEN];
			for (size_t j = 0; j < n; j++)
				ptr[j] = shards + j * sl;
			if ((e = cn_codec_encode(r->c, r->blk, bl, ptr, hashes)))
				break;
			for (size_t d = 0; d < n && !e; d++) {
				if (!bad[d])
					continue;
				unsigned j = r->dist[d];
				e = D(s, d)->ops->file_write(f[d], hashes[j], HASH_LEN);
				if (!e)
					e = D(s, d)->ops->file_write(f[d], ptr[j], sl);
			}
		}
		for (size_t d = 0; d < n; d++) {
			if (!f[d])
				continue;
			cn_err ce = D(s, d)->ops->file_close(f[d], !e);
			f[d] = NULL;
			if (!e)
				e = ce;
		}
	}
	/* replace the bad slots' data folder and record (per slot: its own commit) */
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t d = 0; d < n && !e; d++) {
		if (!bad[d])
			continue;
		fill_erasure_kd(&m, r->k, r->m, r->dist, n, d);
		unsigned char *saved = m.inline_data;
		size_t saved_len = m.inline_len;
		if (is_inline) {
			m.has_inline = true;
			m.inline_data = streams[d];
			m.inline_len = slen[d];
		} else {
			/* the damaged folder goes first: a rename cannot replace a non-empty one */
			D(s, d)->ops->delete_data(D(s, d), vol, key, m.data_id);
		}
		cn_err de = CN_OK;
		if (vid) {
			/* a noncurrent version: its data folder (moved in on its own), then its record */
			if (!is_inline)
				de = D(s, d)->ops->move_data(D(s, d), tmp_id, m.data_id, vol, key);
			rec.len = 0;
			if (!de)
				de = cn_ec_meta_encode(&m, &rec);
			if (!de)
				de = D(s, d)->ops->version_write(D(s, d), vol, key, vid, rec.p, rec.len);
		} else {
			de = commit_slot(s, d, tmp_id, is_inline ? NULL : m.data_id, vol, key, &m, &rec);
		}
		m.inline_data = saved;
		m.inline_len = saved_len;
		if (de) {
			cn_log(CN_LOG_WARN, NULL, "erasure: heal %s/%s: drive %s: %s", vol, key,
			       D(s, d)->endpoint, cn_err_str(de));
			res->drives_failed++;
		} else {
			res->drives_healed++;
			res->current_slots |= 1ull << d;
			res->bytes_written += is_inline ? (int64_t)slen[d]
			                                : cn_codec_shard_file_size(r->c, r->block_size, m.size);
			if (!vid && D(s, d)->ops->prev_drop) /* E15: not the rewritten record's */
				D(s, d)->ops->prev_drop(D(s, d), vol, key);
		}
	}
	for (size_t d = 0; d < n; d++) /* whatever a failed rebuild left in tmp */
		if (bad[d] && D(s, d))
			D(s, d)->ops->abort_tmp(D(s, d), tmp_id);
	cn_buf_fini(&rec);
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key);
	free(sbase);
	free(shards);
	cn_ec_reader_close(r);
	cn_ec_meta_fini(&m);
	return e;
}

/* --- versions ---------------------------------------------------------------------- */

cn_err cn_ec_version_keep(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* E12 */
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->version_keep(D(s, i), vol, key, vid) : CN_ERR_OFFLINE;
	return reduce_quorum(errs, s->n, write_quorum(s));
}

void cn_ec_prev_keep(cn_ec_set *s, const char *vol, const char *key)
{
	if (!coded(s))
		return; /* one drive: its rename is the whole commit */
	for (size_t i = 0; i < s->n; i++)
		if (D(s, i) && D(s, i)->ops->prev_keep)
			D(s, i)->ops->prev_keep(D(s, i), vol, key);
}

void cn_ec_prev_drop(cn_ec_set *s, const char *vol, const char *key)
{
	cn_ec_prev_drop_slots(s, vol, key, ~0ull);
}

void cn_ec_prev_drop_slots(cn_ec_set *s, const char *vol, const char *key, uint64_t slots)
{
	if (!coded(s))
		return;
	for (size_t i = 0; i < s->n; i++)
		if ((slots >> i & 1) && D(s, i) && D(s, i)->ops->prev_drop)
			D(s, i)->ops->prev_drop(D(s, i), vol, key);
}

cn_err cn_ec_version_read(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                          bool skip_inline, cn_ec_meta *m)
{
	return read_rec(s, REC_VERSION, vol, key, vid, skip_inline, m);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* E8. Name lists (a key's noncurrent versions, an upload's files, a vol's uploads) come
 *     from M+1 drives, merged: a name written with write quorum is on all but at most M
 *     drives, so the union names every one whichever drive was wiped, replaced or offline
 *     during the write (one drive's list hid them from listings and from heal). A name
 *     the union shows may be a partial write or a leftover on a few drives: callers read
 *     each with quorum. Sorted, without duplicates; missing (CN_ERR_NOT_FOUND) only when
 *     every drive asked says so. */
static cn_err union_names(cn_ec_set *s, bool uploads, bool every, const char *vol, const char *name,
                          char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t want = !coded(s) ? 1 : every ? s->n : (size_t)s->m + 1, asked = 0, missing = 0, total = 0;
	char **all = NULL;
	cn_err e = CN_OK, last = CN_ERR_QUORUM;
	for (size_t d = 0; d < s->n && asked < want && !e; d++) {
		if (!D(s, d))
			continue;
		char **v = NULL;
		size_t nv = 0;
		cn_err de = uploads ? D(s, d)->ops->upload_list(D(s, d), vol, name, &v, &nv)
		                    : D(s, d)->ops->version_list(D(s, d), vol, name, &v, &nv);
		if (de == CN_ERR_NOT_FOUND) {
			asked++;
			missing++;
			continue;
		}
		if (de) {
			last = de;
			continue;
		}
		asked++;
		if (nv) {
			char **na = realloc(all, (total + nv) * sizeof *na);
			if (!na) {
				cn_drive_free_names(v, nv);
				e = CN_ERR_NOMEM;
				break;
			}
			all = na;
			memcpy(all + total, v, nv * sizeof *v);
			total += nv;
		}
		free(v); /* the names moved into all */
	}
	if (!e && asked == 0)
		e = last;
	else if (!e && missing == asked)
		e = CN_ERR_NOT_FOUND;
	if (e) {
		cn_drive_free_names(all, total);
		return e;
	}
	if (total > 1)
		qsort(all, total, sizeof *all, name_cmp);
	size_t k = 0;
	for (size_t i = 0; i < total; i++) {
		if (k && !strcmp(all[k - 1], all[i]))
			free(all[i]);
		else
			all[k++] = all[i];
	}
	*out = all;
	*n = k;
	return CN_OK;
}

/* A name list (cn_drive_free_names' shape) that grows, name added unless unique is asked
 * and it is there already; false when out of memory. */
static bool names_add(char ***v, size_t *n, size_t *cap, const char *name, bool unique)
{
	for (size_t i = 0; unique && i < *n; i++)
		if (!strcmp((*v)[i], name))
			return true;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		char **nv = realloc(*v, nc * sizeof *nv);
		if (!nv)
			return false;
		*v = nv;
		*cap = nc;
	}
	if (!((*v)[*n] = strdup(name)))
		return false;
	(*n)++;
	return true;
}

/* Adds the data folder drive d's record of the kind (vid: REC_VERSION's) references to refs. */
static cn_err add_ref(cn_ec_set *s, size_t d, rec_kind kind, const char *vol, const char *key,
                      const char *vid, char ***refs, size_t *nr, size_t *cap)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_err e = read_one(s, d, kind, vol, key, vid, true, false, &m, NULL, NULL);
	if (e == CN_ERR_NO_KEY || e == CN_ERR_NOT_FOUND)
		e = CN_OK; /* none (removed meanwhile, or never there) */
	else if (!e && m.data_id[0] && !names_add(refs, nr, cap, m.data_id, false))
		e = CN_ERR_NOMEM;
	cn_ec_meta_fini(&m);
	return e;
}

cn_err cn_ec_orphan_data(cn_ec_set *s, const char *vol, const char *key, char ***ids, size_t *n)
{
	char **found = NULL, **refs = NULL;
	size_t nf = 0, capf = 0, nr = 0, capr = 0;
	cn_err e = CN_OK;
	*ids = NULL;
	*n = 0;
	for (size_t d = 0; !e && d < s->n; d++) {
		cn_drive *dr = D(s, d);
		if (!dr || d < s->read_skip) {
			e = CN_ERR_OFFLINE;
			break;
		}
		if (!dr->ops->data_list)
			continue;
		char **l = NULL;
		size_t ln = 0;
		e = dr->ops->data_list(dr, vol, key, &l, &ln);
		for (size_t i = 0; !e && i < ln; i++)
			if (!names_add(&found, &nf, &capf, l[i], true))
				e = CN_ERR_NOMEM;
		cn_drive_free_names(l, ln);
	}
	/* then what every drive's records reference (only when there is something to match:
	 * most keys have no data folder at all) */
	for (size_t d = 0; !e && nf && d < s->n; d++) {
		cn_drive *dr = D(s, d);
		char **vids = NULL;
		size_t nv = 0;
		e = add_ref(s, d, REC_CURRENT, vol, key, NULL, &refs, &nr, &capr);
		if (!e) /* E15: a previous record's data is still the key's */
			e = add_ref(s, d, REC_PREV, vol, key, NULL, &refs, &nr, &capr);
		if (!e)
			e = dr->ops->version_list(dr, vol, key, &vids, &nv);
		for (size_t i = 0; !e && i < nv; i++)
			e = add_ref(s, d, REC_VERSION, vol, key, vids[i], &refs, &nr, &capr);
		cn_drive_free_names(vids, nv);
	}
	size_t k = 0;
	for (size_t i = 0; i < nf; i++) {
		bool referenced = e != CN_OK; /* no whole view: nothing is called unreferenced */
		for (size_t j = 0; !referenced && j < nr; j++)
			referenced = !strcmp(found[i], refs[j]);
		if (referenced)
			free(found[i]);
		else
			found[k++] = found[i];
	}
	cn_drive_free_names(refs, nr);
	if (k == 0) {
		free(found);
		found = NULL;
	}
	*ids = found;
	*n = k;
	return e == CN_ERR_NOMEM ? e : CN_OK;
}

/* E10. A version no read can ever return (erasure.h, cn_ec_purge_dangling): every drive's
 *      record is read; each version present counts the drives holding it plus those that
 *      cannot answer (anything but the record or "no such key" from an online drive). When
 *      no version reaches its read quorum that way, the records are removed where they
 *      are. A drive that might hold a readable version keeps everything. */
cn_err cn_ec_purge_dangling(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                            bool dry_run, size_t *purged)
{
	*purged = 0;
	if (!coded(s))
		return CN_OK; /* one drive: what it holds is what reads return */
	cn_ec_meta ms[CN_EC_MAX_DRIVES];
	cn_err errs[CN_EC_MAX_DRIVES];
	uint64_t ids[CN_EC_MAX_DRIVES];
	size_t unknown = 0, have = 0;
	for (size_t d = 0; d < s->n; d++) {
		cn_ec_meta_init(&ms[d]);
		errs[d] = read_one(s, d, vid ? REC_VERSION : REC_CURRENT, vol, key, vid, true, false, &ms[d],
		                   NULL, NULL);
		if (errs[d] == CN_ERR_NOMEM) {
			for (size_t j = 0; j <= d; j++)
				cn_ec_meta_fini(&ms[j]);
			return CN_ERR_NOMEM;
		}
		if (!errs[d]) {
			ids[d] = rec_identity(&ms[d]);
			have++;
		} else if (errs[d] != CN_ERR_NO_KEY) {
			unknown++; /* offline, unreadable, corrupt, no bucket: it may hold anything */
		}
	}
	/* E15: a current version also counts the drives holding it as their previous record
	 * (and one held only so, too): it is readable */
	cn_ec_meta pm[CN_EC_MAX_DRIVES];
	cn_err pe[CN_EC_MAX_DRIVES];
	uint64_t pid[CN_EC_MAX_DRIVES];
	for (size_t d = 0; d < s->n; d++) {
		cn_ec_meta_init(&pm[d]);
		pe[d] = vid || !have || errs[d] == CN_ERR_OFFLINE
		        ? CN_ERR_NO_KEY
		        : read_one(s, d, REC_PREV, vol, key, NULL, true, false, &pm[d], &pid[d], NULL);
		if (pe[d] == CN_ERR_NOMEM) {
			for (size_t j = 0; j < s->n; j++)
				cn_ec_meta_fini(&ms[j]);
			for (size_t j = 0; j <= d; j++)
				cn_ec_meta_fini(&pm[j]);
			return CN_ERR_NOMEM;
		}
		if (pe[d] && pe[d] != CN_ERR_NO_KEY && errs[d] == CN_OK)
			unknown++; /* an unreadable previous record may hold anything */
	}
	bool dangling = have > 0;
	for (size_t c = 0; c < 2 * s->n && dangling; c++) {
		size_t d = c % s->n;
		bool cur = c < s->n;
		if (cur ? errs[d] != CN_OK : pe[d] != CN_OK)
			continue;
		uint64_t id = cur ? ids[d] : pid[d];
		size_t v = 0;
		for (size_t j = 0; j < s->n; j++)
			v += (!errs[j] && ids[j] == id) || (!pe[j] && pid[j] == id);
		const cn_ec_meta *cm = cur ? &ms[d] : &pm[d];
		if (v + unknown >= rec_quorum(s, cm) || v + unknown >= read_quorum(s))
			dangling = false; /* readable now, or maybe once the others answer */
	}
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_fini(&pm[d]);
	cn_err e = CN_OK;
	for (size_t d = s->n; d-- > 0;) { /* E16: from the last slot down, as deletes */
		if (dangling && !errs[d]) {
			cn_err de = dry_run ? CN_OK
			            : vid ? D(s, d)->ops->version_delete(D(s, d), vol, key, vid)
			                  : D(s, d)->ops->delete_meta(D(s, d), vol, key);
			if (!de || de == CN_ERR_NO_KEY)
				(*purged)++;
			else if (!e)
				e = de;
			cn_log(CN_LOG_INFO, NULL, "erasure: %s/%s%s%s on drive %s is no readable version's "
			       "(%zu of %zu drives hold it)%s%s", vol, key, vid ? " version " : "", vid ? vid : "",
			       D(s, d)->endpoint, have, s->n, dry_run ? ": found (dry run)" : de ? ": " : ": removed",
			       de && !dry_run ? cn_err_str(de) : "");
		}
		cn_ec_meta_fini(&ms[d]);
	}
	if (dangling && !dry_run && !vid)
		cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* R1 */
	return e;
}

typedef struct dkeys_acc {
	char **v;
	size_t n, cap, max;
} dkeys_acc;

static cn_err dkeys_cb(void *ctx, const char *key, size_t keylen)
{
	(void)keylen;
	dkeys_acc *a = ctx;
	if (a->n == a->max)
		return CN_ERR__COUNT; /* full: stop this drive's listing */
	return names_add(&a->v, &a->n, &a->cap, key, false) ? CN_OK : CN_ERR_NOMEM;
}

cn_err cn_ec_data_keys(cn_ec_set *s, const char *vol, const char *prefix, size_t max, char ***keys,
                       size_t *n)
{
	dkeys_acc a = { NULL, 0, 0, max };
	cn_err e = CN_OK;
	for (size_t d = 0; d < s->n && !e && a.n < max; d++) {
		cn_drive *dr = D(s, d);
		if (!dr || d < s->read_skip || !dr->ops->data_keys)
			continue;
		cn_err de = dr->ops->data_keys(dr, vol, prefix, dkeys_cb, &a);
		if (de == CN_ERR_NOMEM)
			e = de; /* any other failure: this drive's keys wait for a later call */
	}
	if (a.n > 1)
		qsort(a.v, a.n, sizeof *a.v, name_cmp);
	size_t k = 0;
	for (size_t i = 0; i < a.n; i++) {
		if (k && !strcmp(a.v[k - 1], a.v[i]))
			free(a.v[i]);
		else
			a.v[k++] = a.v[i];
	}
	if (e || k == 0) {
		cn_drive_free_names(a.v, k);
		a.v = NULL;
		k = 0;
	}
	*keys = a.v;
	*n = k;
	return e;
}

cn_err cn_ec_version_list(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n)
{
	return union_names(s, false, false, vol, key, vids, n); /* E8 */
}

cn_err cn_ec_version_list_all(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n)
{
	return union_names(s, false, true, vol, key, vids, n); /* E8, E10 */
}

cn_err cn_ec_version_delete(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!quorum_up(s, s->n / 2 + 1))
		return CN_ERR_QUORUM; /* E12 */
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->version_delete(D(s, i), vol, key, vid) : CN_ERR_OFFLINE;
	return reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_version_promote(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* E12 */
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->version_promote(D(s, i), vol, key, vid) : CN_ERR_OFFLINE;
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* R1: the current record changed */
	return reduce_quorum(errs, s->n, write_quorum(s));
}

/* Rewrites a record with edited meta on every drive holding the version: each drive keeps
 * its own erasure fields and inline shard stream (read back from that drive). */
static cn_err rewrite_meta(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                           cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* E12 */
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t d = 0; d < s->n; d++) {
		cn_ec_meta own;
		cn_ec_meta_init(&own);
		if (!D(s, d)) {
			errs[d] = CN_ERR_OFFLINE;
			continue;
		}
		if (coded(s)) {
			/* this drive's own record of the same version */
			errs[d] = read_one(s, d, vid ? REC_VERSION : REC_CURRENT, vol, key, vid, false, false,
			                   &own, NULL, NULL);
			if (!errs[d]) {
				cn_kv *mm = own.meta;
				size_t nm = own.nmeta;
				own.meta = m->meta;
				own.nmeta = m->nmeta;
				if (own.mtime_ms != m->mtime_ms || strcmp(own.data_id, m->data_id) ||
				    strcmp(own.version_id, m->version_id))
					errs[d] = CN_ERR_NO_KEY; /* stale: not this version; heal fixes it */
				rec.len = 0;
				if (!errs[d])
					errs[d] = cn_ec_meta_encode(&own, &rec);
				own.meta = mm;
				own.nmeta = nm;
			}
		} else {
			fill_erasure(s, m, d);
			rec.len = 0;
			errs[d] = cn_ec_meta_encode(m, &rec);
		}
		if (!errs[d]) {
			char tmp_id[33];
			cn_drive_random_id(tmp_id);
			errs[d] = vid ? D(s, d)->ops->version_write(D(s, d), vol, key, vid, rec.p, rec.len)
			              : D(s, d)->ops->rename_data(D(s, d), tmp_id, NULL, vol, key, rec.p, rec.len);
		}
		cn_ec_meta_fini(&own);
	}
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key);
	cn_buf_fini(&rec);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_update_version_meta(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                                 cn_ec_meta *m)
{
	return rewrite_meta(s, vol, key, vid, m);
}

cn_err cn_ec_update_meta(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m)
{
	if (!coded(s) && m->has_inline && m->inline_len != (size_t)m->size)
		return CN_ERR_INVALID;
	return rewrite_meta(s, vol, key, NULL, m);
}

/* --- multipart uploads ------------------------------------------------------------- */

cn_err cn_ec_upload_put_meta(cn_ec_set *s, const char *vol, const char *upload_id, const char *name,
                             bool create, cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* E12 */
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t i = 0; i < s->n; i++) {
		if (!D(s, i)) {
			errs[i] = CN_ERR_OFFLINE;
			continue;
		}
		rec.len = 0;
		fill_erasure(s, m, i);
		errs[i] = cn_ec_meta_encode(m, &rec);
		if (!errs[i])
			errs[i] = D(s, i)->ops->upload_write(D(s, i), vol, upload_id, name, create, rec.p, rec.len);
	}
	cn_buf_fini(&rec);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_upload_get_meta(cn_ec_set *s, const char *vol, const char *upload_id, const char *name,
                             cn_ec_meta *m)
{
	return read_rec(s, REC_UPLOAD, vol, upload_id, name, false, m);
}

cn_err cn_ec_upload_list(cn_ec_set *s, const char *vol, const char *upload_id, char ***names,
                         size_t *n)
{
	return union_names(s, true, false, vol, upload_id, names, n); /* E8 */
}

cn_err cn_ec_upload_take(cn_ec_writer *w, const char *vol, const char *upload_id, const char *dst,
                         const cn_ec_meta *m)
{
	cn_ec_set *s = w->s;
	cn_err e = writer_finish(w);
	if (e)
		return e;
	if (m->size != w->written)
		return CN_ERR_INVALID;
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) && w->ok[i]
		          ? D(s, i)->ops->upload_take(D(s, i), w->tmp_id, w->data_id, PART_NAME, vol, upload_id, dst)
		          : CN_ERR_OFFLINE;
	return reduce_quorum(errs, s->n, writer_quorum(w));
}

cn_err cn_ec_upload_commit(cn_ec_set *s, const char *vol, const char *upload_id,
                           const char *const *srcs, size_t n, const char *key, cn_ec_meta *m)
{
	if (n == 0 || n != m->nparts)
		return CN_ERR_INVALID;
	char tmp_id[33], id[33], name[32];
	cn_drive_random_id(tmp_id);
	cn_drive_random_id(id);
	snprintf(m->data_id, sizeof m->data_id, "%%d.%s", id);
	m->has_inline = false;
	cn_err errs[CN_EC_MAX_DRIVES] = { CN_OK };
	bool ok[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = D(s, i) ? CN_OK : CN_ERR_OFFLINE;
		for (size_t p = 0; p < n && !errs[i]; p++) {
			snprintf(name, sizeof name, "part.%zu", p + 1);
			errs[i] = D(s, i)->ops->upload_link(D(s, i), vol, upload_id, srcs[p], tmp_id, m->data_id,
			                                    name);
		}
		ok[i] = errs[i] == CN_OK;
	}
	/* the parts were written for this key with the storage class of the upload */
	unsigned mm = coded(s) ? parity_for(s, m->storage_class) : 0, k = (unsigned)s->n - mm;
	uint8_t dist[CN_EC_MAX_DRIVES];
	if (coded(s))
		cn_codec_dist(vol, key, strlen(key), (unsigned)s->n, dist);
	cn_err e = reduce_quorum(errs, s->n, (size_t)k + (k == mm));
	if (!e)
		e = commit(s, tmp_id, m->data_id, vol, key, m, k, mm, coded(s) ? dist : NULL, ok, NULL);
	if (e)
		for (size_t i = 0; i < s->n; i++)
			if (D(s, i))
				D(s, i)->ops->abort_tmp(D(s, i), tmp_id);
	return e;
}

cn_err cn_ec_upload_remove(cn_ec_set *s, const char *vol, const char *upload_id)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->upload_remove(D(s, i), vol, upload_id) : CN_ERR_OFFLINE;
	return reduce_quorum(errs, s->n, s->n / 2 + 1);
}

/* --- listing ----------------------------------------------------------------------- */

typedef struct walk_ctx {
	cn_ec_set *s;
	const char *vol;
	cn_ec_walk_fn fn;
	void *ctx;
} walk_ctx;

static cn_err walk_cb(void *vctx, const char *key, size_t keylen, bool is_prefix, const void *rec,
                      size_t reclen, bool has_prev)
{
	(void)has_prev; /* one drive: no previous records */
	walk_ctx *w = vctx;
	if (is_prefix)
		return w->fn(w->ctx, key, keylen, true, NULL);
	cn_ec_meta m;
	cn_err e = cn_ec_meta_decode(rec, reclen, true, &m);
	if (e == CN_ERR_CORRUPT) {
		cn_log(CN_LOG_WARN, NULL, "erasure: listing %s: skipping corrupt record of %s", w->vol, key);
		return CN_OK;
	}
	if (e)
		return e;
	e = w->fn(w->ctx, key, keylen, false, &m);
	cn_ec_meta_fini(&m);
	return e;
}

/* --- merged walks (coded sets) ----------------------------------------------------------
 * E5. A committed version is on at least write-quorum drives, so at most M drives lack it:
 *     walking any M+1 drives that have the bucket and merging finds every one of them
 *     (a wiped or replaced drive, or one that was offline during writes, hides nothing).
 *     The merge runs in rounds: each drive's walk collects up to WALK_BATCH entries after
 *     the cursor; everything up to the smallest last key of the drives that filled their
 *     batch is complete and is handed on in order (a key once, from the lowest drive that
 *     has it); the next round starts after it. */
#define WALK_BATCH 1000
#define PREFIX_BATCH 16 /* a prefix's check stops at its first listed key: small rounds */
#define WALK_STOP CN_ERR__COUNT

typedef struct went {
	char *key;
	size_t keylen;
	bool is_prefix;
	bool has_m;
	bool has_prev;  /* the drive also holds a previous record of it (E15) */
	cn_ec_meta m;
	size_t drive;
} went;

typedef struct wbatch {
	went *v;
	size_t n, cap, limit, drive;
	const char *vol;
} wbatch;

static cn_err wcollect(void *ctx, const char *key, size_t keylen, bool is_prefix, const void *rec,
                       size_t reclen, bool has_prev)
{
	wbatch *b = ctx;
	if (b->n == b->limit)
		return WALK_STOP;
	if (b->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 64;
		went *nv = realloc(b->v, nc * sizeof *nv);
		if (!nv)
			return CN_ERR_NOMEM;
		b->v = nv;
		b->cap = nc;
	}
	went *w = &b->v[b->n];
	memset(w, 0, sizeof *w);
	cn_ec_meta_init(&w->m);
	if (!is_prefix) {
		cn_err e = cn_ec_meta_decode(rec, reclen, true, &w->m);
		if (e == CN_ERR_CORRUPT) {
			cn_log(CN_LOG_WARN, NULL, "erasure: listing %s: skipping corrupt record of %s", b->vol, key);
			return CN_OK;
		}
		if (e)
			return e;
		w->has_m = true;
	}
	if (!(w->key = malloc(keylen + 1))) {
		cn_ec_meta_fini(&w->m);
		return CN_ERR_NOMEM;
	}
	memcpy(w->key, key, keylen);
	w->key[keylen] = 0;
	w->keylen = keylen;
	w->is_prefix = is_prefix;
	w->has_prev = has_prev;
	w->drive = b->drive;
	b->n++;
	return CN_OK;
}

static int key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : (al < bl ? -1 : al > bl);
}

static int went_cmp(const void *pa, const void *pb)
{
	const went *a = pa, *b = pb;
	int c = key_cmp(a->key, a->keylen, b->key, b->keylen);
	if (c)
		return c;
	if (a->is_prefix != b->is_prefix)
		return a->is_prefix ? 1 : -1;
	return a->drive < b->drive ? -1 : a->drive > b->drive;
}

static void wbatch_clear(wbatch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->v[i].key);
		cn_ec_meta_fini(&b->v[i].m);
	}
	b->n = 0;
}

static cn_err found_cb(void *ctx, const char *key, size_t keylen, bool is_prefix,
                       const cn_ec_meta *m)
{
	*(bool *)ctx = true;
	return WALK_STOP;
}

/* batch: entries per drive per round (WALK_BATCH; a prefix check asks few). */
static cn_err merged_walk(cn_ec_set *s, const size_t *drives, size_t nd, const char *vol,
                          const char *prefix, const char *after, bool slash_delim, bool dangling,
                          size_t batch, cn_ec_walk_fn fn, void *ctx)
{
	wbatch b[CN_EC_MAX_DRIVES];
	memset(b, 0, sizeof b);
	went *all = NULL;
	size_t cap = 0;
	char *cursor = after ? strdup(after) : NULL;
	cn_err e = after && !cursor ? CN_ERR_NOMEM : CN_OK;
	for (size_t i = 0; i < nd; i++) {
		b[i].limit = batch;
		b[i].drive = drives[i];
		b[i].vol = vol;
	}
	while (!e) {
		size_t total = 0, answered = 0;
		for (size_t i = 0; i < nd && !e; i++) {
			wbatch_clear(&b[i]);
			cn_drive *dr = D(s, drives[i]);
			cn_err we = dr->ops->walk(dr, vol, prefix, cursor, slash_delim, wcollect, &b[i]);
			if (we == WALK_STOP || we == CN_OK)
				answered++;
			else if (we == CN_ERR_NOMEM)
				e = we;
			else
				b[i].limit = 0; /* this drive failed: the others answer for it */
			total += b[i].n;
		}
		if (e)
			break;
		if (!answered) {
			e = CN_ERR_QUORUM;
			break;
		}
		/* the bound: the smallest last key among full batches */
		const went *bound = NULL;
		for (size_t i = 0; i < nd; i++)
			if (b[i].limit && b[i].n == b[i].limit) {
				const went *l = &b[i].v[b[i].n - 1];
				if (!bound || key_cmp(l->key, l->keylen, bound->key, bound->keylen) < 0)
					bound = l;
			}
		if (total > cap) {
			went *na = realloc(all, total * sizeof *na);
			if (!na) {
				e = CN_ERR_NOMEM;
				break;
			}
			all = na;
			cap = total;
		}
		size_t k = 0;
		for (size_t i = 0; i < nd; i++)
			for (size_t j = 0; j < b[i].n; j++)
				all[k++] = b[i].v[j]; /* shallow: b owns */
		if (k > 1)
			qsort(all, k, sizeof *all, went_cmp);
		/* E6: an object seen on fewer walked drives than could hold a readable version
		 * (min(walked, K)) may be a partial commit (a crash below write quorum) or a
		 * stale leftover of a delete; walked drives that hold different versions of it
		 * (a partial commit over an older version) may not show the one reads pick.
		 * Either way it is listed only if a quorum read finds it, with the record that
		 * read chose, so a listing shows what a GET returns. A common prefix seen on
		 * too few walked drives is listed only if a key below it is. */
		size_t enough = nd < (size_t)s->k ? nd : (size_t)s->k;
		for (size_t j = 0; j < k && !e;) {
			const went *w = &all[j];
			if (bound && key_cmp(w->key, w->keylen, bound->key, bound->keylen) > 0)
				break;
			size_t same = 1; /* the same entry from other drives */
			while (j + same < k && all[j + same].keylen == w->keylen &&
			       all[j + same].is_prefix == w->is_prefix && !memcmp(all[j + same].key, w->key, w->keylen))
				same++;
			j += same;
			bool agreed = same >= enough;
			if (agreed && !w->is_prefix) {
				uint64_t id = rec_identity(&w->m);
				for (size_t x = j - same + 1; agreed && x < j; x++)
					agreed = rec_identity(&all[x].m) == id;
				/* E15: a commit of it in progress or cut short; the walked drives may
				 * all hold the new version while reads pick the replaced one */
				for (size_t x = j - same; agreed && x < j; x++)
					agreed = !all[x].has_prev;
			}
			if (agreed) {
				e = fn(ctx, w->key, w->keylen, w->is_prefix, w->has_m ? &w->m : NULL);
				continue;
			}
			if (w->is_prefix) {
				/* a folder with objects on too few walked drives (a put that died under
				 * a new prefix): a common prefix only if a key below it is listed */
				bool found = false;
				cn_err pe = merged_walk(s, drives, nd, vol, w->key, NULL, false, false, PREFIX_BATCH,
				                        found_cb, &found);
				if (pe && pe != WALK_STOP)
					e = pe;
				else if (found)
					e = fn(ctx, w->key, w->keylen, true, NULL);
				continue;
			}
			cn_ec_meta qm;
			cn_ec_meta_init(&qm);
			cn_err qe = read_rec(s, REC_CURRENT, vol, w->key, NULL, true, &qm);
			for (size_t x = j - same; x < j; x++)
				qm.prev_seen |= all[x].has_prev;
			if (qe == CN_OK)
				e = fn(ctx, w->key, w->keylen, false, &qm);
			else if (qe == CN_ERR_NOMEM)
				e = qe;
			else if (dangling) /* E10: no read returns it; heal looks closer */
				e = fn(ctx, w->key, w->keylen, false, NULL);
			cn_ec_meta_fini(&qm);
		}
		if (e || !bound)
			break;
		char *nc = strndup(bound->key, bound->keylen);
		if (!nc) {
			e = CN_ERR_NOMEM;
			break;
		}
		free(cursor);
		cursor = nc;
	}
	for (size_t i = 0; i < nd; i++) {
		wbatch_clear(&b[i]);
		free(b[i].v);
	}
	free(all);
	free(cursor);
	return e;
}

cn_err cn_ec_walk(cn_ec_set *s, const char *vol, const char *prefix, const char *after,
                  bool slash_delim, cn_ec_walk_fn fn, void *ctx)
{
	walk_ctx w = { s, vol, fn, ctx };
	/* E5: M+1 drives that have the bucket (a wiped or replaced drive has not); E16: the
	 * last ones, which a commit reaches last and a delete first */
	size_t drives[CN_EC_MAX_DRIVES], nd = 0, want = (size_t)s->m + 1;
	for (size_t j = s->n; j-- > 0 && nd < want;)
		if (D(s, j) && j >= s->read_skip && D(s, j)->ops->stat_vol(D(s, j), vol, NULL) == CN_OK)
			drives[nd++] = j;
	for (size_t a = 0, b = nd; a + 1 < b; a++, b--) { /* in slot order, as merged_walk's tie */
		size_t t = drives[a];
		drives[a] = drives[b - 1];
		drives[b - 1] = t;
	}
	if (nd == 0) {
		cn_err e = cn_ec_stat_vol(s, vol, NULL);
		return e ? e : CN_ERR_QUORUM;
	}
	if (nd == 1)
		return D(s, drives[0])->ops->walk(D(s, drives[0]), vol, prefix, after, slash_delim, walk_cb, &w);
	return merged_walk(s, drives, nd, vol, prefix, after, slash_delim, false, WALK_BATCH, fn, ctx);
}

cn_err cn_ec_walk_all(cn_ec_set *s, const char *vol, const char *prefix, const char *after,
                      cn_ec_walk_fn fn, void *ctx)
{
	size_t drives[CN_EC_MAX_DRIVES], nd = 0;
	for (size_t i = 0; i < s->n; i++)
		if (D(s, i) && i >= s->read_skip && D(s, i)->ops->stat_vol(D(s, i), vol, NULL) == CN_OK)
			drives[nd++] = i;
	if (nd == 0) {
		cn_err e = cn_ec_stat_vol(s, vol, NULL);
		return e ? e : CN_ERR_QUORUM;
	}
	return merged_walk(s, drives, nd, vol, prefix, after, false, coded(s), WALK_BATCH, fn, ctx);
}
