/* erasure/rcache.c: the record cache (rules R1-R2 in erasure_int.h). */
#include "erasure/erasure_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 16384
#define STRIPES 256

typedef struct slot {
	uint64_t gen;
	char *id;       /* vol '\0' key, owned; NULL when empty */
	size_t idlen;
	char *rec;
	size_t len;
} slot;

struct cn_rcache {
	size_t budget, max_record;
	atomic_size_t bytes;
	atomic_ullong hits, misses;
	pthread_mutex_t mu[STRIPES];
	slot slots[SLOTS];
};

static uint64_t hash_id(const char *vol, const char *key, size_t *idlen)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
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

static bool same(const slot *s, const char *vol, const char *key, size_t idlen)
{
	if (!s->id || s->idlen != idlen)
		return false;
	size_t vl = strlen(vol);
	return memcmp(s->id, vol, vl + 1) == 0 && memcmp(s->id + vl + 1, key, idlen - vl - 1) == 0;
}

static void drop(cn_rcache *c, slot *s)
{
	if (s->id) {
		atomic_fetch_sub(&c->bytes, s->len + s->idlen);
		free(s->id);
		free(s->rec);
		s->id = s->rec = NULL;
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
	free(c);
}

bool cn_rcache_get(cn_rcache *c, const char *vol, const char *key, cn_buf *out, uint64_t *gen)
{
	*gen = 0;
	if (!c)
		return false;
	size_t idlen;
	uint64_t h = hash_id(vol, key, &idlen);
	slot *s = &c->slots[h % SLOTS];
	pthread_mutex_t *mu = &c->mu[h % STRIPES];
	pthread_mutex_lock(mu);
	bool hit = same(s, vol, key, idlen);
	if (hit) {
		out->len = 0;
		if (cn_buf_append(out, s->rec, s->len) != CN_OK)
			hit = false;
	}
	*gen = s->gen;
	pthread_mutex_unlock(mu);
	atomic_fetch_add(hit ? &c->hits : &c->misses, 1);
	return hit;
}

void cn_rcache_put(cn_rcache *c, const char *vol, const char *key, const void *rec, size_t len,
                   uint64_t gen)
{
	if (!c || len > c->max_record)
		return;
	size_t idlen;
	uint64_t h = hash_id(vol, key, &idlen);
	if (atomic_load(&c->bytes) + len + idlen > c->budget)
		return;
	char *id = malloc(idlen), *copy = malloc(len ? len : 1);
	if (!id || !copy) {
		free(id);
		free(copy);
		return;
	}
	size_t vl = strlen(vol);
	memcpy(id, vol, vl + 1);
	memcpy(id + vl + 1, key, idlen - vl - 1);
	memcpy(copy, rec, len);
	slot *s = &c->slots[h % SLOTS];
	pthread_mutex_t *mu = &c->mu[h % STRIPES];
	pthread_mutex_lock(mu);
	if (s->gen != gen) { /* R2: a writer invalidated since the caller read the drives */
		pthread_mutex_unlock(mu);
		free(id);
		free(copy);
		return;
	}
	drop(c, s);
	s->id = id;
	s->idlen = idlen;
	s->rec = copy;
	s->len = len;
	atomic_fetch_add(&c->bytes, len + idlen);
	pthread_mutex_unlock(mu);
}

void cn_rcache_invalidate(cn_rcache *c, const char *vol, const char *key)
{
	if (!c)
		return;
	size_t idlen;
	uint64_t h = hash_id(vol, key, &idlen);
	slot *s = &c->slots[h % SLOTS];
	pthread_mutex_t *mu = &c->mu[h % STRIPES];
	pthread_mutex_lock(mu);
	s->gen++; /* R1/R2: also when the slot holds another key (it may be being read) */
	if (same(s, vol, key, idlen))
		drop(c, s);
	pthread_mutex_unlock(mu);
}

void cn_rcache_clear(cn_rcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < SLOTS; i++) {
		pthread_mutex_t *mu = &c->mu[i % STRIPES];
		pthread_mutex_lock(mu);
		c->slots[i].gen++;
		drop(c, &c->slots[i]);
		pthread_mutex_unlock(mu);
	}
}

void cn_rcache_stats(cn_rcache *c, uint64_t *hits, uint64_t *misses, size_t *bytes)
{
	*hits = c ? atomic_load(&c->hits) : 0;
	*misses = c ? atomic_load(&c->misses) : 0;
	*bytes = c ? atomic_load(&c->bytes) : 0;
}
