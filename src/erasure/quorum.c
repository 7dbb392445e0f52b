/* erasure/quorum: per-drive answers reduced to one verdict. Errors: cn_ec__reduce_quorum
 * (the one function that counts them) and EC-12's check before a mutation. Records: every
 * read of an object's record goes through cn_ec__read_one (one drive, through the record
 * cache for current records) and, on a coded set, cn_ec__read_quorum_recs, which picks the
 * version the drives agree on. The invariants of what a read answers:
 *
 *  EC-2. Reads pick the record that the most drives agree on (same mtime, size, etag, data
 *      id, version id, delete marker, metadata) and need read quorum K of them;
 *      otherwise CN_ERR_QUORUM (or CN_ERR_NO_KEY / NO_BUCKET when that is what at
 *      least K drives say: fewer cannot know, the key may be on the drives that did not
 *      answer; a miss counts only from a drive that is there). Two versions can both have K
 *      only when n == 2K (M == K) and each is on exactly K drives (a put that died after
 *      renaming its record on half the drives): then the one whose K-th record comes
 *      first in EC-7's reading order wins, in every read — early-out or full (heal), so a
 *      GET, a listing and heal agree, and heal never turns the object into the other.
 *  EC-7. GET and HEAD read records early-out: the object's data-shard slots first, then the
 *      others, stopping as soon as K records agree (the record's own K). That is EC-2's
 *      answer: a committed write reached at least its write quorum W (K, or K+1 when
 *      K == M), so at most n - W < K slots can hold an older record, and K agreeing
 *      slots include one that saw the latest commit; any disagreement just reads on.
 *      Slots not read are "unread", not offline: a reader that later finds fewer than K
 *      good shards reads their records then (reader_complete). Heal reads every record
 *      (it must see every slot that lacks the object).
 *  EC-12. A mutation of a coded set that cannot reach its quorum on the slots not known to
 *      be down (absent, or held offline or refused by the health wrapper: flags, no
 *      syscall) fails with CN_ERR_QUORUM before touching any drive: otherwise the drives
 *      still up would take the change, and with K of them a read would return what the
 *      client was told had failed. A drive that
 *      fails during the mutation is found by it (HEALTH-1) and may still leave
 *      the change on the others — MinIO's window for dangling objects; a read or heal
 *      then sees the change if K drives hold it.
 *  EC-13. A quorum read in which at least K drives said what they hold (a record, or no
 *      record), some a record, and no version reached its quorum may be reading across a
 *      commit in progress (reads take no lock): it waits for the commits of the key in
 *      progress to finish their renames (the set's split_wait, erasure.h; the object layer's
 *      takes the key's lock) and reads again, a few times, before answering CN_ERR_QUORUM
 *      (cn_ec__read_quorum_recs). Without a split_wait it sleeps briefly instead.
 *  EC-15. An overwrite's commit renames its records drive by drive, so a crash in it leaves
 *      the new version on some drives and the replaced one on the others; with the key's
 *      records also missing from drives (lost, not healed yet) neither may reach K, and an
 *      acknowledged version would be unreadable. So a commit that
 *      replaces a record first keeps it on every drive as the key's previous record
 *      (cn_ec_prev_keep; the object layer drops it after the barrier), and a current-record
 *      read whose split outlasts EC-13's retries lets each drive's previous record vote:
 *      a version counts the drives holding it as current or previous record, and the one
 *      with the most votes at its quorum is read (prev_fallback). The reader is degraded
 *      (queued for heal) and heal rewrites those slots' records (and drops the previous
 *      ones); listing reads such keys with a quorum read (EC-6: when the walked drives
 *      disagree, or any of them holds a previous record of the key: the walk reports
 *      it);
 *      EC-10's dangling check and the orphan check count previous records. A previous
 *      record left over (its drop lost to a crash) is the one its drive's current record
 *      replaced (delete_meta removes both; heal drops those it rewrites), so it can only
 *      vote for the version an acknowledged one replaced, and the fallback runs only when
 *      that acknowledged one is on fewer than K drives: more failures than parity (it
 *      reached W), where nothing is promised. One level deep: a commit over a version read
 *      this way must heal it first (cn_ec_meta.from_prev tells the caller), so cut-short commits
 *      of a key do not stack.
 *  EC-16. Commits rename records from slot 0 up, deletes (and EC-10's purges) remove them
 *      from slot n-1 down, and listings walk the last M+1 slots (EC-5 lets any M+1 do): a
 *      commit cut short has not reached the walked slots unless it reached all, and a
 *      delete (or purge) cut short has left them first, so a listing does not show a first
 *      commit that reads cannot return, nor keep showing a deleted key that reads call
 *      missing. Such a read: one version, held by fewer drives than its quorum even
 *      counting every drive that did not say what it holds, and no previous record
 *      anywhere (the last read of a split, after EC-15), answers CN_ERR_NO_KEY: EC-10 would
 *      remove it (an acknowledged version reached W >= K drives; losing it so takes more
 *      failures than parity). Without it a 16-drive set (K = W = 12) answers 503 for a
 *      first PUT cut short after 5-11 renames, forever, while listing it (durability.py
 *      --drives 16). */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Reduces per-drive results to one verdict: CN_OK when at least quorum drives succeeded,
 * otherwise the most frequent error that is not a drive fault (CN_ERR_QUORUM when errors
 * disagree evenly or only drive faults remain). One drive (n == 1): its own error. */
cn_err cn_ec__reduce_quorum(const cn_err *errs, size_t n, size_t quorum)
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

/* EC-12: slots that may take a write (ok, when given, further excludes a writer's failed
 * slots). */
size_t cn_ec__slots_up(const cn_ec_set *s, const bool *ok)
{
	size_t up = 0;
	for (size_t d = 0; d < s->n; d++)
		up += s->drives[d] && (!ok || ok[d]) && !cn_drive_health_offline(s->drives[d]) &&
		      !cn_drive_health_refused(s->drives[d]);
	return up;
}

/* EC-12: true when a mutation needing quorum q may start. One drive: always (its own error
 * is the answer). */
bool cn_ec__quorum_up(const cn_ec_set *s, size_t q)
{
	return s->n == 1 || cn_ec__slots_up(s, NULL) >= q;
}

/* A "not there" answer counts only from a drive that is there (EC-2): a drive whose folder
 * vanished (or that the health wrapper holds offline) answers OFFLINE instead. */
cn_err cn_ec__trust_miss(cn_ec_set *s, size_t d, cn_err e)
{
	if (e != CN_ERR_NO_KEY && e != CN_ERR_NO_BUCKET && e != CN_ERR_NOT_FOUND)
		return e;
	return cn_ec__drive_online(s, d) ? e : CN_ERR_OFFLINE;
}

/* What makes two drives' records the same version (EC-2). */
uint64_t cn_ec__rec_identity(const cn_ec_meta *m)
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

typedef struct decode_arg {
	bool skip_inline;
	bool partial_ok;   /* the caller takes a partial meta (cn_ec__read_one's `partial`) */
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
 * the record's cn_ec__rec_identity. partial (may be NULL; only with ident): a cache hit may
 * leave m partial (cn_ec_meta_decode_rec_partial) and return in *partial a reference to
 * the record to decode it in full from (complete_partial); else *partial = NULL. */
cn_err cn_ec__read_one(cn_ec_set *s, size_t d, rec_kind kind, const char *vol, const char *key,
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
				*ident = a.partial ? a.ident : cn_ec__rec_identity(m);
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
			uint64_t id = cn_ec__rec_identity(m);
			if (ident)
				*ident = id;
			if (cache) {
				/* before the cache shares it; never false for a record m was
				 * decoded from, and then not cached */
				if (cn_ec_rec_set_ident(shared, id, m))
					cn_rcache_insert(s->rc, (unsigned)d, vol, key, shared, gen); /* RCACHE-2 */
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
	return coded(s) ? cn_ec__trust_miss(s, d, e) : e;
}

/* EC-7's reading order: the slots that hold the object's data shards (STANDARD shape, the
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

/* Decodes in full the meta cn_ec__read_one left partial from record src (NULL: m is whole). The
 * record decoded to the same layout when it was cached; its inline stream is taken again
 * from the same bytes. */
static cn_err complete_partial(cn_ec_meta *m, cn_ec_rec *src, bool skip_inline)
{
	if (!src)
		return CN_OK;
	cn_ec_meta_fini(m);
	return cn_ec_meta_decode_rec(src, skip_inline, true, m);
}

/* EC-15: no version of the key has its quorum among the current records: each drive's
 * previous record (drive.h prev_keep) votes too. A version counts the drives whose current
 * or previous record it is; the one with the most votes at its quorum wins (then the
 * newest). The slots that hold it as their previous record get that record in ms[] (their
 * current one released; errs[] CN_OK, ids[] its identity, prev[] set). Returns CN_OK when
 * one won, CN_ERR_QUORUM when none did, CN_ERR_BUSY when a drive could not be asked (HEALTH-7:
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
		pe[d] = errs[d] == CN_ERR_OFFLINE
		        ? CN_ERR_OFFLINE
		        : cn_ec__read_one(s, d, REC_PREV, vol, key, NULL, skip_inline, false, &pm[d], &pid[d],
		                          NULL);
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

/* The answer of a read in which no version has its quorum: what the drives without one say
 * (EC-2: a miss needs K drives), EC-16's first commit cut short, or CN_ERR_QUORUM. no_prev:
 * the previous records were read (EC-15) and none was found. *split: EC-13's condition. */
static cn_err no_quorum_answer(const cn_ec_set *s, const quorum_read *q, const cn_err *errs,
                               const uint64_t *ids, bool no_prev, bool *split)
{
	size_t n = s->n;
	rec_kind kind = q->kind;
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
	/* EC-13: K drives said what they hold (a record, or none), and no version has quorum */
	*split = coded(s) && records && records + nokey >= read_quorum(s);
	if (nobucket && nobucket >= read_quorum(s))
		return CN_ERR_NO_BUCKET;
	/* a plain set's one drive says what is there; a coded set needs K drives to say a
	 * key is not there (those that did not answer may hold it) */
	if (nokey + nobucket >= read_quorum(s) || (!coded(s) && answered && nokey + nobucket == answered))
		return missing;
	if (!coded(s) && answered)
		return errs[0];
	/* EC-16: one version, on too few drives to be read even with every drive that did not
	 * say what it holds, and no previous record anywhere: a first commit cut short (an
	 * acknowledged one reached W >= K drives), which EC-10 removes. It is not there. */
	if (no_prev && kind == REC_CURRENT && records) {
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
		size_t unknown = n - records - nokey; /* a drive without the bucket too, as EC-10 */
		if (one && records + unknown < rec_quorum(s, &q->ms[first]))
			return missing;
	}
	return CN_ERR_QUORUM;
}

/* Reads the record from every drive (or, early-out, enough of them: EC-7) and picks the
 * version most drives agree on (EC-2), filling q's answers (quorum_read). use_prev: a
 * current record's read with no version at quorum falls back on the previous records
 * (EC-15). *split: no version at quorum, and the drives split (EC-13). */
static cn_err read_quorum_once(cn_ec_set *s, quorum_read *q, bool use_prev, bool *split)
{
	rec_kind kind = q->kind;
	const char *vol = q->vol, *key = q->key;
	cn_ec_meta *ms = q->ms;
	bool *agree = q->agree, *unread = q->unread, *prev = q->prev;
	cn_err errs_own[CN_EC_MAX_DRIVES];
	cn_err *errs = q->errs ? q->errs : errs_own;
	uint64_t ids[CN_EC_MAX_DRIVES];
	size_t n = s->n, order[CN_EC_MAX_DRIVES];
	bool ordered = coded(s) && kind != REC_UPLOAD;
	bool early = unread && ordered;
	if (ordered) /* the full read picks in the same order (EC-2's tie) */
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
		errs[d] = cn_ec__read_one(s, d, kind, vol, key, q->name, q->skip_inline, unread != NULL,
		                          &ms[d], &ids[d], &partial[d]);
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
	/* HEALTH-7 (drive.h cn_drive_no_io): a drive that could not be asked decides nothing, and
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
		 * early-out stopped at, or for a full read the same (EC-2; two tie only at K) */
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
	            ? prev_fallback(s, vol, key, q->skip_inline, ms, errs, ids, partial, prev, &nprev)
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
	cn_err e = best < n ? complete_partial(&ms[best], partial[best], q->skip_inline) : CN_OK;
	for (size_t d = 0; d < n; d++)
		cn_ec_rec_unref(partial[d]);
	if (e)
		return e;
	if (best < n) {
		CN_ASSERT(!ms[best].partial);
		for (size_t d = 0; d < n; d++)
			agree[d] = !errs[d] && ids[d] == ids[best];
		q->pick = best;
		return CN_OK;
	}
	return no_quorum_answer(s, q, errs, ids, use_prev && !nprev, split);
}

/* EC-13: the drives split between versions of the key (or a version and "no such key"),
 * every one answering and none at its quorum, is what a read finds across a commit of the
 * key in progress: reads take no lock (the caller serializes commits of a key, not reads), and a
 * commit renames its records drive by drive. Such a read waits for the key's commits in
 * progress (split_wait: their renames are done when it returns) and reads again, a few
 * times, before it answers CN_ERR_QUORUM (503); a split that outlasts that is real (a
 * commit cut short, EC-12's window) and left to heal. Reads across commits are common
 * when clients overwrite the same keys (about 1 GET in 4,600 on 16 drives without the
 * retries), and fixed sleeps are not enough: a commit preempted on a busy machine, or
 * slowed by file creation, outlasts them. Upload records (their lock is the upload's)
 * keep the sleeps. */
#define SPLIT_RETRIES 6
void (*cn_ec__split_retry_hook)(void);
cn_err cn_ec__read_quorum_recs(cn_ec_set *s, quorum_read *q)
{
	for (int attempt = 0;; attempt++) {
		bool split = false;
		/* EC-15 on the last read of a split (a split that outlasted the commits in progress) */
		cn_err e = read_quorum_once(s, q, attempt == SPLIT_RETRIES, &split);
		if (e != CN_ERR_QUORUM || !split || attempt == SPLIT_RETRIES)
			return e;
		for (size_t d = 0; d < s->n; d++) {
			cn_ec_meta_fini(&q->ms[d]);
			cn_ec_meta_init(&q->ms[d]);
		}
		if (cn_ec__split_retry_hook)
			cn_ec__split_retry_hook();
		if (s->split_wait && q->kind != REC_UPLOAD) {
			if (!s->split_wait(s->split_ctx, q->vol, q->key))
				attempt = SPLIT_RETRIES - 1; /* it gave up waiting: one last read */
			continue;
		}
		struct timespec ts = { 0, 200000L * (attempt + 1) }; /* 4.2 ms in all at most */
		nanosleep(&ts, NULL);
	}
}

/* The single-record read used by everything but the data path: the chosen record moved
 * into m. */
cn_err cn_ec__read_rec(cn_ec_set *s, rec_kind kind, const char *vol, const char *key,
                       const char *name, bool skip_inline, cn_ec_meta *m)
{
	if (!coded(s))
		return cn_ec__read_one(s, 0, kind, vol, key, name, skip_inline, true, m, NULL, NULL);
	cn_ec_meta ms[CN_EC_MAX_DRIVES];
	bool agree[CN_EC_MAX_DRIVES];
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_init(&ms[d]);
	bool unread[CN_EC_MAX_DRIVES], prev[CN_EC_MAX_DRIVES];
	quorum_read q = { .kind = kind, .vol = vol, .key = key, .name = name,
	                  .skip_inline = skip_inline, .ms = ms, .agree = agree,
	                  .unread = kind == REC_UPLOAD ? NULL : unread, .prev = prev };
	cn_err e = cn_ec__read_quorum_recs(s, &q);
	if (!e) {
		cn_ec_meta_fini(m);
		*m = ms[q.pick];
		cn_ec_meta_init(&ms[q.pick]);
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
	return cn_ec__read_rec(s, REC_CURRENT, vol, key, NULL, skip_inline, m);
}
