/* erasure/walk: listing a bucket on a set. One drive: its walk, records decoded. Several:
 * M+1 drives' walks merged in rounds (EC-5), an entry the walked drives do not agree on
 * listed only when a quorum read finds it (EC-6). */
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Merged walks (coded sets).
 * EC-5. A committed version is on at least write-quorum drives, so at most M drives lack it:
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
	bool has_prev;  /* the drive also holds a previous record of it (EC-15) */
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

/* One merged walk: the drives walked (in slot order), and where the entries go. */
typedef struct merge {
	cn_ec_set *s;
	const size_t *drives;
	size_t nd;
	const char *vol;
	bool dangling;      /* EC-10: a key no read returns is handed on too (without meta) */
	cn_ec_walk_fn fn;
	void *ctx;
} merge;

static cn_err merged_walk(const merge *mg, const char *prefix, const char *after, bool slash_delim,
                          size_t batch);

/* One round: each drive's walk collects its batch after the cursor (a drive that fails
 * collects none and stops taking part: the others answer for it); *total: the entries
 * collected. CN_ERR_QUORUM when no drive answered. */
static cn_err collect_round(const merge *mg, wbatch *b, const char *prefix, const char *cursor,
                            bool slash_delim, size_t *total)
{
	size_t answered = 0;
	*total = 0;
	for (size_t i = 0; i < mg->nd; i++) {
		wbatch_clear(&b[i]);
		cn_drive *dr = D(mg->s, mg->drives[i]);
		cn_err we = dr->ops->walk(dr, mg->vol, prefix, cursor, slash_delim, wcollect, &b[i]);
		if (we == WALK_STOP || we == CN_OK)
			answered++;
		else if (we == CN_ERR_NOMEM)
			return we;
		else
			b[i].limit = 0; /* this drive failed: the others answer for it */
		*total += b[i].n;
	}
	return answered ? CN_OK : CN_ERR_QUORUM;
}

/* The round's bound: the smallest last key among full batches (NULL: none was full, the
 * walk ends with this round). */
static const went *round_bound(const wbatch *b, size_t nd)
{
	const went *bound = NULL;
	for (size_t i = 0; i < nd; i++)
		if (b[i].limit && b[i].n == b[i].limit) {
			const went *l = &b[i].v[b[i].n - 1];
			if (!bound || key_cmp(l->key, l->keylen, bound->key, bound->keylen) < 0)
				bound = l;
		}
	return bound;
}

/* EC-6: an object seen on fewer walked drives than could hold a readable version
 * (min(walked, K)) may be a partial commit (a crash below write quorum) or a stale
 * leftover of a delete; walked drives that hold different versions of it (a partial
 * commit over an older version) may not show the one reads pick. Either way it is listed
 * only if a quorum read finds it, with the record that read chose, so a listing shows what
 * a GET returns. A common prefix seen on too few walked drives is listed only if a key
 * below it is. Hands on the entry the walked drives gave as w[0..same). */
static cn_err hand_on(const merge *mg, const went *w, size_t same)
{
	size_t enough = mg->nd < (size_t)mg->s->k ? mg->nd : (size_t)mg->s->k;
	bool agreed = same >= enough;
	if (agreed && !w->is_prefix) {
		uint64_t id = cn_ec__rec_identity(&w->m);
		for (size_t x = 1; agreed && x < same; x++)
			agreed = cn_ec__rec_identity(&w[x].m) == id;
		/* EC-15: a commit of it in progress or cut short; the walked drives may
		 * all hold the new version while reads pick the replaced one */
		for (size_t x = 0; agreed && x < same; x++)
			agreed = !w[x].has_prev;
	}
	if (agreed)
		return mg->fn(mg->ctx, w->key, w->keylen, w->is_prefix, w->has_m ? &w->m : NULL);
	cn_err e = CN_OK;
	if (w->is_prefix) {
		/* a folder with objects on too few walked drives (a put that died under
		 * a new prefix): a common prefix only if a key below it is listed */
		bool found = false;
		merge sub = { mg->s, mg->drives, mg->nd, mg->vol, false, found_cb, &found };
		cn_err pe = merged_walk(&sub, w->key, NULL, false, PREFIX_BATCH);
		if (pe && pe != WALK_STOP)
			e = pe;
		else if (found)
			e = mg->fn(mg->ctx, w->key, w->keylen, true, NULL);
		return e;
	}
	cn_ec_meta qm;
	cn_ec_meta_init(&qm);
	cn_err qe = cn_ec__read_rec(mg->s, REC_CURRENT, mg->vol, w->key, NULL, true, &qm);
	for (size_t x = 0; x < same; x++)
		qm.prev_seen |= w[x].has_prev;
	if (qe == CN_OK)
		e = mg->fn(mg->ctx, w->key, w->keylen, false, &qm);
	else if (qe == CN_ERR_NOMEM)
		e = qe;
	else if (mg->dangling) /* EC-10: no read returns it; heal looks closer */
		e = mg->fn(mg->ctx, w->key, w->keylen, false, NULL);
	cn_ec_meta_fini(&qm);
	return e;
}

/* batch: entries per drive per round (WALK_BATCH; a prefix check asks few). */
static cn_err merged_walk(const merge *mg, const char *prefix, const char *after, bool slash_delim,
                          size_t batch)
{
	size_t nd = mg->nd;
	wbatch b[CN_EC_MAX_DRIVES];
	memset(b, 0, sizeof b);
	went *all = NULL;
	size_t cap = 0;
	char *cursor = after ? strdup(after) : NULL;
	cn_err e = after && !cursor ? CN_ERR_NOMEM : CN_OK;
	for (size_t i = 0; i < nd; i++) {
		b[i].limit = batch;
		b[i].drive = mg->drives[i];
		b[i].vol = mg->vol;
	}
	while (!e) {
		size_t total;
		if ((e = collect_round(mg, b, prefix, cursor, slash_delim, &total)))
			break;
		const went *bound = round_bound(b, nd);
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
		/* everything up to the bound, each entry once with the drives that gave it */
		for (size_t j = 0; j < k && !e;) {
			const went *w = &all[j];
			if (bound && key_cmp(w->key, w->keylen, bound->key, bound->keylen) > 0)
				break;
			size_t same = 1; /* the same entry from other drives */
			while (j + same < k && all[j + same].keylen == w->keylen &&
			       all[j + same].is_prefix == w->is_prefix && !memcmp(all[j + same].key, w->key, w->keylen))
				same++;
			j += same;
			e = hand_on(mg, w, same);
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
	/* EC-5: M+1 drives that have the bucket (a wiped or replaced drive has not); EC-16: the
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
	merge mg = { s, drives, nd, vol, false, fn, ctx };
	return merged_walk(&mg, prefix, after, slash_delim, WALK_BATCH);
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
	merge mg = { s, drives, nd, vol, coded(s), fn, ctx };
	return merged_walk(&mg, prefix, after, false, WALK_BATCH);
}
