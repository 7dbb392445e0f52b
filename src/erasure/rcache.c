/* erasure/rcache.c: the record cache (rules RCACHE-1..RCACHE-2 in erasure_int.h). */
#include "erasure/erasure_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BUCKETS_MIN 8192
#define BUCKETS_MAX (1u << 22)
#define BYTES_PER_BUCKET 8192 /* the budget / this = the buckets (a power of two): room for
                                 4 entries of 2 KiB each. A fixed 8,192 buckets held 32,768
                                 entries whatever the budget: 2,000 64 KiB objects on 16
                                 drives (24,000 records, 120 MB) missed 37 % of lookups. */
#define WAYS 4 /* an erasure set caches one record per data drive: associativity keeps
                  a colliding pair from evicting each other on every GET (measured:
                  direct-mapped, 300 objects x 12 records missed on most GETs) */
#define STRIPES 256
#define ID_MAX 2048 /* bucket name, NUL and key (<= 1024 bytes) fit */
#define SWEEP_MAX (2 * c->nb) /* two turns of the clock at most per insert: the first
                                  may only clear second chances (every entry hit since the
                                  hand last passed), the second then finds a victim */

typedef struct slot {
	unsigned drive; /* the set's slot the record was read from */
	uint32_t used;  /* bucket tick of the last hit or insert: the oldest is evicted */
	bool ref;       /* hit since the clock hand last passed: spared once (second chance) */
	char *id;       /* vol '\0' key, owned; NULL when empty */
	size_t idlen;
	cn_ec_rec *rec; /* a reference of the cache's own */
	size_t len;     /* the record's length */
} slot;

/* A bucket's first cache line holds the ways' hashes: a lookup reads the slot (another
 * line) only of the way whose hash matches. (With the hash in each slot, loading the
 * slots was ~7 % of a 16-drive 64 KiB GET's server CPU in perf: a cache miss per way.) */
typedef struct bucket {
	_Alignas(64) uint64_t gen; /* RCACHE-2: bumped by every invalidation of a key hashing here */
	uint32_t tick;
	uint64_t hs[WAYS]; /* hash_id of each way's key; meaningful only while its id is set */
	slot ways[WAYS];
} bucket;

struct cn_rcache {
	size_t budget, max_record;
	atomic_size_t bytes;
	atomic_ullong hits, misses;
	atomic_size_t hand; /* the clock: the next bucket to sweep when the budget is spent */
	atomic_uint_fast64_t epoch; /* RCACHE-2 for cn_rcache_clear: a generation is bucket gen +
	                               epoch (both only grow), so a clear bumps one counter
	                               instead of writing every bucket's (touching the pages
	                               of buckets never used) */
	pthread_mutex_t mu[STRIPES];
	size_t nb;  /* buckets: a power of two */
	bucket *b;  /* nb of them, mmap'd: pages untouched until used */
};

/* FNV-1a of vol '\0' key (the drive is not in it: see bucket_at). */
static uint64_t hash_id(const char *vol, const char *key, size_t *idlen)
{
	uint64_t h = 1469598103934665603ull;
	size_t n = 0;
	for (const char *p = vol; *p; p++, n++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ 0) * 1099511628211ull;
	n++;
	for (const char *p = key; *p; p++, n++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	*idlen = n;
	return h;
}

/* The bucket of drive's record of the key hashing to h: one object's records (one per
 * drive a read visits) lie in consecutive buckets, so a quorum read's lookups walk
 * adjacent cache lines (the hardware prefetcher follows) instead of one random line per
 * drive, each a cache miss. Its lock is stripe (index % STRIPES), as everywhere. */
static size_t bucket_at(const cn_rcache *c, uint64_t h, unsigned drive)
{
	return (size_t)((h + drive) & (c->nb - 1));
}

static bool same(const bucket *bk, int w, uint64_t h, unsigned drive, const char *vol,
                 const char *key, size_t idlen)
{
	if (bk->hs[w] != h)
		return false;
	const slot *s = &bk->ways[w];
	if (!s->id || s->idlen != idlen || s->drive != drive)
		return false;
	size_t vl = strlen(vol);
	return memcmp(s->id, vol, vl + 1) == 0 && memcmp(s->id + vl + 1, key, idlen - vl - 1) == 0;
}

static void drop(cn_rcache *c, slot *s)
{
	if (s->id) {
		atomic_fetch_sub(&c->bytes, s->len + s->idlen);
		free(s->id);
		cn_ec_rec_unref(s->rec); /* readers holding it keep it alive */
		s->id = NULL;
		s->rec = NULL;
		s->idlen = s->len = 0;
	}
}

cn_err cn_rcache_new(size_t budget_bytes, size_t max_record, cn_rcache **out)
{
	*out = NULL;
	if (budget_bytes == 0)
		return CN_OK;
	cn_rcache *c = calloc(1, sizeof *c);
	if (!c)
		return CN_ERR_NOMEM;
	c->nb = BUCKETS_MIN;
	while (c->nb < BUCKETS_MAX && c->nb < budget_bytes / BYTES_PER_BUCKET)
		c->nb *= 2;
	/* page-aligned, zeroed, and only the buckets used cost memory */
	c->b = mmap(NULL, c->nb * sizeof(bucket), PROT_READ | PROT_WRITE,
	            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->b == MAP_FAILED) {
		free(c);
		return CN_ERR_NOMEM;
	}
	c->budget = budget_bytes;
	c->max_record = max_record;
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&c->mu[i], NULL);
	*out = c;
	return CN_OK;
}

void cn_rcache_free(cn_rcache *c)
{
	if (!c)
		return;
	cn_rcache_clear(c);
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_destroy(&c->mu[i]);
	munmap(c->b, c->nb * sizeof(bucket));
	free(c);
}

static slot *find(bucket *bk, uint64_t h, unsigned drive, const char *vol, const char *key,
                  size_t idlen)
{
	for (int w = 0; w < WAYS; w++)
		if (same(bk, w, h, drive, vol, key, idlen))
			return &bk->ways[w];
	return NULL;
}

bool cn_rcache_visit(cn_rcache *c, unsigned drive, const char *vol, const char *key,
                     void (*fn)(cn_ec_rec *rec, void *arg), void *arg, uint64_t *gen)
{
	*gen = 0;
	if (!c)
		return false;
	size_t idlen;
	uint64_t h = hash_id(vol, key, &idlen);
	size_t bi = bucket_at(c, h, drive);
	bucket *bk = &c->b[bi];
	pthread_mutex_t *mu = &c->mu[bi % STRIPES];
	pthread_mutex_lock(mu);
	slot *s = find(bk, h, drive, vol, key, idlen);
	if (s) {
		s->used = ++bk->tick;
		s->ref = true;
		fn(s->rec, arg);
	}
	*gen = bk->gen + atomic_load(&c->epoch);
	pthread_mutex_unlock(mu);
	atomic_fetch_add(s ? &c->hits : &c->misses, 1);
	return s != NULL;
}

typedef struct copy_arg {
	cn_buf *out;
	bool ok;
} copy_arg;

static void copy_out(cn_ec_rec *rec, void *arg)
{
	copy_arg *a = arg;
	size_t len;
	const unsigned char *p = cn_ec_rec_bytes(rec, &len);
	a->out->len = 0;
	a->ok = cn_buf_append(a->out, p, len) == CN_OK;
}

bool cn_rcache_get(cn_rcache *c, unsigned drive, const char *vol, const char *key, cn_buf *out,
                   uint64_t *gen)
{
	copy_arg a = { out, false };
	return cn_rcache_visit(c, drive, vol, key, copy_out, &a, gen) && a.ok;
}

/* The budget is spent: the clock hand sweeps buckets in turn, sparing (once) the entries
 * hit since it last passed and dropping the others, until need bytes fit or SWEEP_MAX
 * buckets were swept. Takes one stripe lock at a time; the caller holds none. A working
 * set larger than the budget thus keeps turning over (the recently hit stay) instead of
 * the first records read holding the cache for good. */
static bool make_room(cn_rcache *c, size_t need)
{
	for (size_t i = 0; i < SWEEP_MAX && atomic_load(&c->bytes) + need > c->budget; i++) {
		size_t at = atomic_fetch_add(&c->hand, 1) & (c->nb - 1);
		pthread_mutex_t *mu = &c->mu[at % STRIPES];
		pthread_mutex_lock(mu);
		for (int w = 0; w < WAYS && atomic_load(&c->bytes) + need > c->budget; w++) {
			slot *s = &c->b[at].ways[w];
			if (s->id && s->ref)
				s->ref = false;
			else
				drop(c, s);
		}
		pthread_mutex_unlock(mu);
	}
	return atomic_load(&c->bytes) + need <= c->budget;
}

bool cn_rcache_insert(cn_rcache *c, unsigned drive, const char *vol, const char *key,
                      cn_ec_rec *rec, uint64_t gen)
{
	size_t len = 0;
	if (rec)
		cn_ec_rec_bytes(rec, &len);
	if (!c || !rec || len > c->max_record)
		return false;
	size_t idlen;
	uint64_t h = hash_id(vol, key, &idlen);
	if (atomic_load(&c->bytes) + len + idlen > c->budget && !make_room(c, len + idlen))
		return false;
	char *id = malloc(idlen);
	if (!id)
		return false;
	size_t vl = strlen(vol);
	memcpy(id, vol, vl + 1);
	memcpy(id + vl + 1, key, idlen - vl - 1);
	size_t bi = bucket_at(c, h, drive);
	bucket *bk = &c->b[bi];
	pthread_mutex_t *mu = &c->mu[bi % STRIPES];
	pthread_mutex_lock(mu);
	if (bk->gen + atomic_load(&c->epoch) != gen) { /* RCACHE-2: a writer invalidated (or a clear
	                                                   ran) since the caller read the drives */
		pthread_mutex_unlock(mu);
		free(id);
		return false;
	}
	slot *s = find(bk, h, drive, vol, key, idlen);
	for (int w = 0; !s && w < WAYS; w++)
		if (!bk->ways[w].id)
			s = &bk->ways[w];
	if (!s) { /* the least recently used way */
		s = &bk->ways[0];
		for (int w = 1; w < WAYS; w++)
			if ((int32_t)(bk->ways[w].used - s->used) < 0)
				s = &bk->ways[w];
	}
	size_t freed = s->id ? s->len + s->idlen : 0;
	if (atomic_load(&c->bytes) - freed + len + idlen > c->budget) {
		pthread_mutex_unlock(mu); /* full: only an eviction in this bucket could make room */
		free(id);
		return false;
	}
	drop(c, s);
	s->used = ++bk->tick;
	s->ref = false; /* admitted once; a hit earns it a second chance */
	bk->hs[s - bk->ways] = h;
	s->drive = drive;
	s->id = id;
	s->idlen = idlen;
	s->rec = cn_ec_rec_ref(rec);
	s->len = len;
	atomic_fetch_add(&c->bytes, len + idlen);
	pthread_mutex_unlock(mu);
	return true;
}

void cn_rcache_put(cn_rcache *c, unsigned drive, const char *vol, const char *key, const void *rec,
                   size_t len, uint64_t gen)
{
	if (!c || len > c->max_record)
		return;
	char *copy = malloc(len ? len : 1);
	if (copy && len)
		memcpy(copy, rec, len);
	cn_ec_rec *r = copy ? cn_ec_rec_wrap(copy, len) : NULL;
	if (!r)
		free(copy);
	cn_rcache_insert(c, drive, vol, key, r, gen);
	cn_ec_rec_unref(r);
}

void cn_rcache_invalidate(cn_rcache *c, unsigned ndrives, const char *vol, const char *key)
{
	if (!c)
		return;
	for (unsigned d = 0; d < ndrives; d++) {
		size_t idlen;
		uint64_t h = hash_id(vol, key, &idlen);
		size_t bi = bucket_at(c, h, d);
		bucket *bk = &c->b[bi];
		pthread_mutex_t *mu = &c->mu[bi % STRIPES];
		pthread_mutex_lock(mu);
		bk->gen++; /* RCACHE-1/RCACHE-2: also when the key is not cached (it may be being read) */
		slot *s = find(bk, h, d, vol, key, idlen);
		if (s)
			drop(c, s);
		pthread_mutex_unlock(mu);
	}
}

void cn_rcache_clear(cn_rcache *c)
{
	if (!c)
		return;
	atomic_fetch_add(&c->epoch, 1); /* RCACHE-2: before the sweep, as an invalidation */
	for (size_t i = 0; i < c->nb; i++) {
		pthread_mutex_t *mu = &c->mu[i % STRIPES];
		pthread_mutex_lock(mu);
		for (int w = 0; w < WAYS; w++)
			drop(c, &c->b[i].ways[w]); /* reads an unused bucket: no page is made */
		pthread_mutex_unlock(mu);
	}
}

void cn_rcache_stats(cn_rcache *c, uint64_t *hits, uint64_t *misses, size_t *bytes)
{
	*hits = c ? atomic_load(&c->hits) : 0;
	*misses = c ? atomic_load(&c->misses) : 0;
	*bytes = c ? atomic_load(&c->bytes) : 0;
}

size_t cn_rcache_budget(const cn_rcache *c)
{
	return c ? c->budget : 0;
}
