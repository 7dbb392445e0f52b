/* erasure/codec.c: Reed-Solomon over ISA-L, XXH3-128 bitrot hashes, MinIO's shard rotation.
 *
 * Invariants:
 *  CODEC-1. enc (K+M rows x K) is gf_gen_cauchy1_matrix: rows 0..K-1 are the identity, so data
 *      shards are the block's bytes, and any K rows form an invertible matrix.
 *  CODEC-2. A decode for (sources S, outputs O) uses exactly the rows of S (|S| == K, ascending)
 *      and produces the rows of O (ascending); its tables depend on nothing else, so they
 *      are cached under the key (mask S, mask O) and are immutable once published.
 *  CODEC-3. Cache slots only go from NULL to an entry (compare-and-swap) and are freed only by
 *      cn_codec_free; a reader that sees an entry sees it fully built (release/acquire).
 *      Hence no lock and no use-after-free while the codec lives.
 *  CODEC-4. Every ISA-L call (ec_encode_data through rs_run, CRCs) is followed by
 *      cn_simd_settle (util.h): ISA-L's AVX-512 kernels return with dirty upper vector
 *      state, and legacy SSE2 code that runs next then pays an AVX-SSE transition
 *      penalty: measured 3x slower shard hashing without it, when the hash was still
 *      libxxhash's SSE2 XXH3 (it is now the dispatched AVX2/AVX-512 one, below). */
#include "erasure/codec.h"

#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#if defined(__x86_64__)
/* XXH3_128bits becomes XXH3_128bits_dispatch: libxxhash's plain entry points are its SSE2
 * build, the dispatched one picks AVX2/AVX-512 at run time (same hash; test_codec pins
 * it). Measured here on 32 KiB shards: 3.7 GB/s -> 59 GB/s. */
#include <xxh_x86dispatch.h>
#endif

#define MAXS CN_CODEC_MAX_SHARDS
#define PROBES 4

typedef struct dec_entry {
	uint32_t key;            /* src mask | out mask << 16 */
	unsigned nout;
	unsigned char tbls[32 * MAXS * MAXS];
} dec_entry;

struct cn_codec {
	unsigned k, m;
	unsigned char enc[MAXS * MAXS];          /* (k+m) x k */
	unsigned char enc_tbls[32 * MAXS * MAXS]; /* parity rows' tables */
	_Atomic(dec_entry *) cache[CN_CODEC_CACHE_SLOTS];
};

_Static_assert(MAXS <= 16, "decode cache key packs two 16-bit masks");

/* ec_encode_data, then a clean upper vector state (CODEC-4). */
static void rs_run(size_t len, unsigned k, unsigned rows, const unsigned char *tbls,
                   unsigned char **src, unsigned char **dst)
{
	ec_encode_data((int)len, (int)k, (int)rows, (unsigned char *)tbls, src, dst);
	cn_simd_settle();
}

cn_err cn_codec_new(unsigned k, unsigned m, cn_codec **out)
{
	if (k < 1 || k + m > MAXS)
		return CN_ERR_INVALID;
	cn_codec *c = calloc(1, sizeof *c);
	if (!c)
		return CN_ERR_NOMEM;
	c->k = k;
	c->m = m;
	gf_gen_cauchy1_matrix(c->enc, (int)(k + m), (int)k);
	if (m)
		ec_init_tables((int)k, (int)m, c->enc + k * k, c->enc_tbls);
	for (size_t i = 0; i < CN_CODEC_CACHE_SLOTS; i++)
		atomic_init(&c->cache[i], NULL);
	*out = c;
	return CN_OK;
}

void cn_codec_free(cn_codec *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < CN_CODEC_CACHE_SLOTS; i++)
		free(atomic_load_explicit(&c->cache[i], memory_order_acquire));
	free(c);
}

unsigned cn_codec_k(const cn_codec *c)
{
	return c->k;
}

unsigned cn_codec_m(const cn_codec *c)
{
	return c->m;
}

size_t cn_codec_shard_len(const cn_codec *c, size_t block_len)
{
	return block_len / c->k + (block_len % c->k != 0);
}

int64_t cn_codec_shard_file_size(const cn_codec *c, size_t block_size, int64_t total)
{
	if (total <= 0 || block_size == 0)
		return 0;
	int64_t full = total / (int64_t)block_size, tail = total % (int64_t)block_size;
	return full * (int64_t)cn_codec_shard_len(c, block_size) +
	       (int64_t)cn_codec_shard_len(c, (size_t)tail);
}

static void hash_all(const cn_codec *c, size_t shard_len, unsigned char *const *shards,
                     unsigned char (*hashes)[CN_CODEC_HASH_LEN])
{
	if (!hashes)
		return;
	for (unsigned i = 0; i < c->k + c->m; i++)
		cn_codec_hash(shards[i], shard_len, hashes[i]);
}

cn_err cn_codec_encode_parity(const cn_codec *c, size_t shard_len, unsigned char *const *shards,
                              unsigned char (*hashes)[CN_CODEC_HASH_LEN])
{
	if (shard_len > CN_CODEC_MAX_SHARD_LEN || !shards)
		return CN_ERR_INVALID;
	if (shard_len && c->m)
		rs_run(shard_len, c->k, c->m, c->enc_tbls, (unsigned char **)shards,
		       (unsigned char **)shards + c->k);
	hash_all(c, shard_len, shards, hashes);
	return CN_OK;
}

cn_err cn_codec_encode(const cn_codec *c, const void *data, size_t len,
                       unsigned char *const *shards, unsigned char (*hashes)[CN_CODEC_HASH_LEN])
{
	size_t sl = cn_codec_shard_len(c, len);
	if (sl > CN_CODEC_MAX_SHARD_LEN || !shards || (len && !data))
		return CN_ERR_INVALID;
	const unsigned char *d = data;
	for (unsigned i = 0; i < c->k && sl; i++) {
		size_t off = (size_t)i * sl, n = off < len ? len - off : 0;
		if (n > sl)
			n = sl;
		if (n)
			memcpy(shards[i], d + off, n);
		if (n < sl)
			memset(shards[i] + n, 0, sl - n);
	}
	return cn_codec_encode_parity(c, sl, shards, hashes);
}

void cn_codec_join(const cn_codec *c, unsigned char *const *shards, size_t len, void *out)
{
	size_t sl = cn_codec_shard_len(c, len);
	unsigned char *o = out;
	for (unsigned i = 0; i < c->k && len; i++) {
		size_t n = len < sl ? len : sl;
		memcpy(o, shards[i], n);
		o += n;
		len -= n;
	}
}

/* Builds the decode tables for sources src[0..k) and outputs outs[0..nout) (CODEC-2). False
 * only if the submatrix is singular, which CODEC-1 rules out. */
static bool build_tables(const cn_codec *c, const uint8_t *src, const uint8_t *outs, unsigned nout,
                         unsigned char *tbls)
{
	unsigned k = c->k;
	unsigned char b[MAXS * MAXS], inv[MAXS * MAXS], dm[MAXS * MAXS];
	for (unsigned r = 0; r < k; r++)
		memcpy(b + r * k, c->enc + (size_t)src[r] * k, k);
	if (gf_invert_matrix(b, inv, (int)k) != 0)
		return false;
	for (unsigned o = 0; o < nout; o++) {
		unsigned row = outs[o];
		if (row < k) {
			memcpy(dm + o * k, inv + row * k, k);
			continue;
		}
		/* parity row p of the original data = enc[p] x data = enc[p] x inv x sources */
		for (unsigned j = 0; j < k; j++) {
			unsigned char s = 0;
			for (unsigned t = 0; t < k; t++)
				s ^= gf_mul(c->enc[row * k + t], inv[t * k + j]);
			dm[o * k + j] = s;
		}
	}
	ec_init_tables((int)k, (int)nout, dm, tbls);
	return true;
}

static size_t slot_of(uint32_t key)
{
	uint32_t h = key * 2654435761u;
	return (h >> 16) % CN_CODEC_CACHE_SLOTS;
}

/* Returns cached tables for key, or builds them into local and tries to publish a copy. */
static const unsigned char *tables_for(cn_codec *c, uint32_t key, const uint8_t *src,
                                       const uint8_t *outs, unsigned nout, dec_entry *local)
{
	size_t s0 = slot_of(key);
	for (size_t p = 0; p < PROBES; p++) {
		dec_entry *e = atomic_load_explicit(&c->cache[(s0 + p) % CN_CODEC_CACHE_SLOTS],
		                                    memory_order_acquire);
		if (!e)
			break;
		if (e->key == key)
			return e->tbls;
	}
	if (!build_tables(c, src, outs, nout, local->tbls))
		return NULL;
	local->key = key;
	local->nout = nout;
	size_t need = 32u * c->k * nout;
	for (size_t p = 0; p < PROBES; p++) {
		_Atomic(dec_entry *) *slot = &c->cache[(s0 + p) % CN_CODEC_CACHE_SLOTS];
		dec_entry *cur = atomic_load_explicit(slot, memory_order_acquire);
		if (cur && cur->key == key)
			break;                  /* another thread published it meanwhile */
		if (cur)
			continue;
		dec_entry *e = malloc(offsetof(dec_entry, tbls) + need);
		if (!e)
			break;                  /* fine: use the local tables */
		e->key = key;
		e->nout = nout;
		memcpy(e->tbls, local->tbls, need);
		dec_entry *expect = NULL;
		if (atomic_compare_exchange_strong_explicit(slot, &expect, e, memory_order_acq_rel,
		                                            memory_order_acquire))
			break;
		free(e);
		if (expect->key == key)
			break;
	}
	return local->tbls;
}

cn_err cn_codec_reconstruct(const cn_codec *c, size_t shard_len, unsigned char *const *shards,
                            const bool *present, const bool *want)
{
	if (shard_len > CN_CODEC_MAX_SHARD_LEN || !shards || !present)
		return CN_ERR_INVALID;
	unsigned n = c->k + c->m, nsrc = 0, nout = 0;
	uint8_t src[MAXS], outs[MAXS];
	uint32_t smask = 0, omask = 0;
	for (unsigned i = 0; i < n; i++) {
		if (present[i]) {
			if (nsrc < c->k) {
				src[nsrc++] = (uint8_t)i;
				smask |= 1u << i;
			}
		} else if (!want || want[i]) {
			if (!shards[i])
				return CN_ERR_INVALID;
			outs[nout++] = (uint8_t)i;
			omask |= 1u << i;
		}
	}
	if (nsrc < c->k)
		return CN_ERR_QUORUM;
	if (nout == 0 || shard_len == 0)
		return CN_OK;
	dec_entry local;
	/* The codec is logically const: the cache is an internal memo (CODEC-3). */
	const unsigned char *t = tables_for((cn_codec *)c, smask | omask << 16, src, outs, nout, &local);
	if (!t)
		return CN_ERR_CORRUPT;
	unsigned char *sp[MAXS], *op[MAXS];
	for (unsigned i = 0; i < c->k; i++)
		sp[i] = shards[src[i]];
	for (unsigned i = 0; i < nout; i++)
		op[i] = shards[outs[i]];
	rs_run(shard_len, c->k, nout, t, sp, op);
	return CN_OK;
}

void cn_codec_hash(const void *p, size_t len, unsigned char out[CN_CODEC_HASH_LEN])
{
	XXH128_canonical_t canon;
	XXH128_canonicalFromHash(&canon, XXH3_128bits(p, len));
	memcpy(out, canon.digest, CN_CODEC_HASH_LEN);
}

cn_err cn_codec_hash_check(const void *p, size_t len, const unsigned char want[CN_CODEC_HASH_LEN])
{
	unsigned char got[CN_CODEC_HASH_LEN];
	cn_codec_hash(p, len, got);
	return memcmp(got, want, CN_CODEC_HASH_LEN) ? CN_ERR_CORRUPT : CN_OK;
}

unsigned cn_codec_verify(const cn_codec *c, size_t shard_len, unsigned char *const *shards,
                         bool *present, const unsigned char (*hashes)[CN_CODEC_HASH_LEN])
{
	unsigned bad = 0;
	for (unsigned i = 0; i < c->k + c->m; i++) {
		if (!present[i])
			continue;
		if (!shards[i] || cn_codec_hash_check(shards[i], shard_len, hashes[i]) != CN_OK) {
			present[i] = false;
			bad++;
		}
	}
	return bad;
}

uint32_t cn_codec_crc32(uint32_t crc, const void *p, size_t len)
{
	/* ISA-L's crc32_gzip_refl is the reflected CRC-32/IEEE of zlib and Go's crc32 IEEE. */
	uint32_t r = crc32_gzip_refl(crc, (const unsigned char *)p, (uint64_t)len);
	cn_simd_settle(); /* CODEC-4 */
	return r;
}

void cn_codec_dist(const char *bucket, const char *key, size_t key_len, unsigned n, uint8_t *dist)
{
	if (n == 0)
		return;
	uint32_t crc = 0;
	if (bucket) {
		crc = cn_codec_crc32(crc, bucket, strlen(bucket));
		crc = cn_codec_crc32(crc, "/", 1);
	}
	crc = cn_codec_crc32(crc, key, key_len);
	unsigned start = crc % n;
	for (unsigned d = 0; d < n; d++)
		dist[d] = (uint8_t)((start + d + 1) % n);
}
