/* place.c: which erasure set holds a key (MinIO's placement, DESIGN.md §9). Within a pool
 * a key's set is SipHash-2-4 of the key keyed by the deployment id, mod the pool's set
 * count: no I/O, the same answer on every server. With several pools, an existing key stays
 * in the pool whose set has its record; a new key goes to a pool drawn at random, weighted
 * by the free space of the key's set in each pool. */
#include "object/object_int.h"

#include <string.h>

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#define ROTL64(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                      \
	do {                                                                          \
		v0 += v1; v1 = ROTL64(v1, 13); v1 ^= v0; v0 = ROTL64(v0, 32);         \
		v2 += v3; v3 = ROTL64(v3, 16); v3 ^= v2;                              \
		v0 += v3; v3 = ROTL64(v3, 21); v3 ^= v0;                              \
		v2 += v1; v1 = ROTL64(v1, 17); v1 ^= v2; v2 = ROTL64(v2, 32);         \
	} while (0)

/* SipHash-2-4 (Aumasson & Bernstein), 64-bit output: what MinIO's sipHashMod uses, with
 * the deployment id's 16 bytes as k0 || k1 (little-endian). */
uint64_t cn_obj__siphash(const unsigned char key[16], const void *data, size_t len)
{
	const unsigned char *in = data;
	uint64_t k0 = le64(key), k1 = le64(key + 8);
	uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
	uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
	size_t full = len - len % 8;
	for (size_t i = 0; i < full; i += 8) {
		uint64_t m = le64(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	uint64_t b = (uint64_t)len << 56;
	for (size_t i = 0; i < len % 8; i++)
		b |= (uint64_t)in[full + i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

cn_ec_set *cn_obj__hashed_set(cn_obj_store *s, size_t pool, const char *key)
{
	const cn_obj__pool *p = &s->pools[pool];
	if (p->nsets == 1)
		return p->sets[0];
	return p->sets[cn_obj__siphash(s->dep_key, key, strlen(key)) % p->nsets];
}

/* Whether pool p's set of bucket/key has its record: CN_OK (or CN_ERR_CORRUPT: it is
 * there), CN_ERR_NO_KEY / CN_ERR_NO_BUCKET, or why it cannot tell. */
static cn_err key_in_pool(cn_obj_store *s, size_t p, const char *bucket, const char *key)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_err e = cn_ec_read_meta(cn_obj__hashed_set(s, p, key), bucket, key, true, &m);
	cn_ec_meta_fini(&m);
	return e;
}

cn_ec_set *cn_obj__key_set(cn_obj_store *s, const char *bucket, const char *key)
{
	if (s->npools == 1)
		return cn_obj__hashed_set(s, 0, key);
	for (size_t p = 0; p < s->npools; p++) {
		cn_err e = key_in_pool(s, p, bucket, key);
		if (e != CN_ERR_NO_KEY && e != CN_ERR_NO_BUCKET)
			return cn_obj__hashed_set(s, p, key);
	}
	return cn_obj__hashed_set(s, 0, key);
}

cn_err cn_obj__put_set(cn_obj_store *s, const char *bucket, const char *key, cn_ec_set **out)
{
	*out = cn_obj__hashed_set(s, 0, key);
	if (s->npools == 1)
		return CN_OK;
	/* an existing key stays in its pool (MinIO looks in every pool first, too) */
	uint64_t free_b[OBJ_MAX_POOLS], total = 0;
	for (size_t p = 0; p < s->npools; p++) {
		cn_err e = key_in_pool(s, p, bucket, key);
		if (e == CN_OK || e == CN_ERR_CORRUPT) {
			*out = cn_obj__hashed_set(s, p, key);
			return CN_OK;
		}
		if (e != CN_ERR_NO_KEY && e != CN_ERR_NO_BUCKET)
			return e; /* it may be there: writing elsewhere could make two copies */
		free_b[p] = cn_ec_set_free_bytes(cn_obj__hashed_set(s, p, key)) >> 20; /* MiB: no overflow */
		total += free_b[p];
	}
	/* a new key: a pool at random, weighted by the free space of the key's set there */
	if (total == 0)
		return CN_OK;
	char id[33];
	unsigned char raw[16];
	cn_drive_random_id(id);
	CN_ASSERT(cn_hex_decode((cn_str){ id, 32 }, raw, 16) == CN_OK);
	uint64_t r = le64(raw) % total;
	for (size_t p = 0, acc = 0; p < s->npools; p++) {
		acc += free_b[p];
		if (free_b[p] && r < acc) {
			*out = cn_obj__hashed_set(s, p, key);
			break;
		}
	}
	return CN_OK;
}
