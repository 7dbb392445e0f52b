/* Unit tests for the erasure codec (src/erasure/codec.c): RS round trips with every
 * combination of up to M lost shards, quorum errors, bitrot detection, MinIO's shard
 * rotation, and concurrent use of one codec. `test_codec --bench` prints throughput. */
#include "erasure/codec.h"
#include "test.h"

#include <pthread.h>
#include <time.h>
#include <xxhash.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <dlfcn.h>
#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>
#endif

#define MIB (1u << 20)
#define HASHES(h) ((const unsigned char (*)[CN_CODEC_HASH_LEN])(h))

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static unsigned char *random_bytes(size_t n)
{
	unsigned char *p = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)rnd();
	return p;
}

typedef struct shards {
	unsigned n;
	size_t len;
	unsigned char *s[CN_CODEC_MAX_SHARDS];
	unsigned char h[CN_CODEC_MAX_SHARDS][CN_CODEC_HASH_LEN];
} shards;

static void shards_alloc(shards *sh, unsigned n, size_t len)
{
	sh->n = n;
	sh->len = len;
	for (unsigned i = 0; i < n; i++)
		sh->s[i] = malloc(len ? len : 1);
}

static void shards_free(shards *sh)
{
	for (unsigned i = 0; i < sh->n; i++)
		free(sh->s[i]);
}

/* Loses every subset of shards of size <= m (and some of size m + 1) of one encoded block
 * and checks the rebuild is byte-exact. Returns the number of subsets tried. */
static unsigned lose_and_rebuild(cn_codec *c, const shards *orig, const unsigned char *data,
                                 size_t len)
{
	unsigned k = cn_codec_k(c), m = cn_codec_m(c), n = k + m, tried = 0;
	unsigned char *work[CN_CODEC_MAX_SHARDS];
	for (unsigned i = 0; i < n; i++)
		work[i] = malloc(orig->len ? orig->len : 1);
	unsigned char *joined = malloc(len ? len : 1);
	unsigned over = 0;
	for (uint32_t mask = 0; mask < (1u << n); mask++) {
		unsigned lost = (unsigned)__builtin_popcount(mask);
		if (lost > m + 1 || (lost == m + 1 && over >= 8))
			continue;
		unsigned char *sp[CN_CODEC_MAX_SHARDS];
		bool present[CN_CODEC_MAX_SHARDS];
		for (unsigned i = 0; i < n; i++) {
			present[i] = !(mask & (1u << i));
			if (present[i]) {
				sp[i] = orig->s[i];
			} else {
				memset(work[i], 0xA5, orig->len);
				sp[i] = work[i];
			}
		}
		cn_err e = cn_codec_reconstruct(c, orig->len, sp, present, NULL);
		if (lost > m) {
			over++;
			CHECK_EQ_INT(e, CN_ERR_QUORUM);
			for (unsigned i = 0; i < n && orig->len; i++)
				if (!present[i])
					CHECK(work[i][0] == 0xA5 && work[i][orig->len - 1] == 0xA5);
			continue;
		}
		tried++;
		CHECK_EQ_INT(e, CN_OK);
		int bad = 0;
		for (unsigned i = 0; i < n; i++)
			if (!present[i]) {
				bad |= memcmp(sp[i], orig->s[i], orig->len) != 0;
				bad |= cn_codec_hash_check(sp[i], orig->len, orig->h[i]) != CN_OK;
			}
		cn_codec_join(c, sp, len, joined);
		bad |= memcmp(joined, data, len) != 0;
		if (bad) {
			fprintf(stderr, "  %u+%u len %zu: rebuild with mask %#x differs\n", k, m, len, mask);
			CHECK(!bad);
			break;
		}
	}
	for (unsigned i = 0; i < n; i++)
		free(work[i]);
	free(joined);
	return tried;
}

static unsigned n_choose_upto(unsigned n, unsigned m)
{
	unsigned total = 0;
	for (uint32_t mask = 0; mask < (1u << n); mask++)
		total += (unsigned)__builtin_popcount(mask) <= m;
	return total;
}

/* Encodes size bytes in blocks of block and checks every block survives every loss. */
static void roundtrip(unsigned k, unsigned m, size_t size, size_t block)
{
	cn_codec *c;
	CHECK_EQ_INT(cn_codec_new(k, m, &c), CN_OK);
	unsigned char *data = random_bytes(size);
	size_t off = 0;
	do {
		size_t len = size - off < block ? size - off : block;
		size_t sl = cn_codec_shard_len(c, len);
		CHECK_EQ_INT(sl, (len + k - 1) / k);
		shards sh;
		shards_alloc(&sh, k + m, sl);
		CHECK_EQ_INT(cn_codec_encode(c, data + off, len, sh.s, sh.h), CN_OK);
		/* data shards are the block's bytes, zero-padded (CODEC-1) */
		for (unsigned i = 0; i < k; i++) {
			size_t o = i * sl, have = o < len ? (len - o < sl ? len - o : sl) : 0;
			CHECK(memcmp(sh.s[i], data + off + o, have) == 0);
			for (size_t j = have; j < sl; j++)
				if (sh.s[i][j]) {
					CHECK(sh.s[i][j] == 0);
					break;
				}
		}
		for (unsigned i = 0; i < k + m; i++)
			CHECK_EQ_INT(cn_codec_hash_check(sh.s[i], sl, sh.h[i]), CN_OK);
		unsigned tried = lose_and_rebuild(c, &sh, data + off, len);
		CHECK_EQ_INT(tried, n_choose_upto(k + m, m));
		shards_free(&sh);
		off += len;
	} while (off < size);
	CHECK_EQ_INT(cn_codec_shard_file_size(c, block, (int64_t)size),
	             (int64_t)((size / block) * cn_codec_shard_len(c, block) +
	                       cn_codec_shard_len(c, size % block)));
	free(data);
	cn_codec_free(c);
}

static const unsigned KM[][2] = { { 1, 0 }, { 1, 1 }, { 2, 1 }, { 2, 2 }, { 3, 3 }, { 4, 2 },
				  { 6, 2 }, { 8, 4 }, { 12, 4 } };

TEST(roundtrip_block_sizes)
{
	const size_t sizes[] = { 0, 1, MIB - 1, MIB, MIB + 1 };
	for (size_t i = 0; i < sizeof KM / sizeof *KM; i++)
		for (size_t j = 0; j < sizeof sizes / sizeof *sizes; j++)
			roundtrip(KM[i][0], KM[i][1], sizes[j], MIB);
}

TEST(roundtrip_small_and_odd)
{
	/* lengths around multiples of K and of ISA-L's vector widths, several blocks */
	const size_t sizes[] = { 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4095, 4097, 3 * 4096 + 7 };
	for (size_t i = 0; i < sizeof KM / sizeof *KM; i++)
		for (size_t j = 0; j < sizeof sizes / sizeof *sizes; j++)
			roundtrip(KM[i][0], KM[i][1], sizes[j], 4096);
	roundtrip(8, 8, 4096 + 3, 4096);    /* N/2 parity on 16 drives */
	roundtrip(15, 1, 4096 + 3, 4096);
	roundtrip(3, 13, 1000, 4096);       /* M > K works too */
}

TEST(shard_sizes)
{
	cn_codec *c;
	CHECK_EQ_INT(cn_codec_new(12, 4, &c), CN_OK);
	CHECK_EQ_INT(cn_codec_shard_len(c, MIB), 87382);      /* ceil(1048576 / 12) */
	CHECK_EQ_INT(cn_codec_shard_len(c, 0), 0);
	CHECK_EQ_INT(cn_codec_shard_len(c, 1), 1);
	CHECK_EQ_INT(cn_codec_shard_len(c, 13), 2);
	CHECK_EQ_INT(cn_codec_shard_file_size(c, MIB, 0), 0);
	CHECK_EQ_INT(cn_codec_shard_file_size(c, MIB, 1), 1);
	CHECK_EQ_INT(cn_codec_shard_file_size(c, MIB, 3 * (int64_t)MIB + 25), 3 * 87382 + 3);
	CHECK_EQ_INT(cn_codec_k(c), 12);
	CHECK_EQ_INT(cn_codec_m(c), 4);
	cn_codec_free(c);
}

TEST(invalid_arguments)
{
	cn_codec *c = NULL;
	CHECK_EQ_INT(cn_codec_new(0, 2, &c), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_codec_new(9, 8, &c), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_codec_new(1, 16, &c), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_codec_new(16, 0, &c), CN_OK);
	cn_codec_free(c);
	cn_codec_free(NULL);
	CHECK_EQ_INT(cn_codec_new(2, 2, &c), CN_OK);
	shards sh;
	shards_alloc(&sh, 4, 8);
	bool present[4] = { true, true, false, false };
	unsigned char *sp[4] = { sh.s[0], sh.s[1], NULL, sh.s[3] };
	/* a wanted missing shard without a buffer */
	CHECK_EQ_INT(cn_codec_reconstruct(c, 8, sp, present, NULL), CN_ERR_INVALID);
	/* ... is fine when not wanted */
	bool want[4] = { false, false, false, true };
	CHECK_EQ_INT(cn_codec_reconstruct(c, 8, sp, present, want), CN_OK);
	CHECK_EQ_INT(cn_codec_reconstruct(c, (size_t)CN_CODEC_MAX_SHARD_LEN + 1, sp, present, want),
	             CN_ERR_INVALID);
	CHECK_EQ_INT(cn_codec_encode(c, NULL, 5, sh.s, NULL), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_codec_encode(c, NULL, 0, sh.s, NULL), CN_OK);
	shards_free(&sh);
	cn_codec_free(c);
}

TEST(partial_want)
{
	cn_codec *c;
	CHECK_EQ_INT(cn_codec_new(4, 2, &c), CN_OK);
	unsigned char *data = random_bytes(10000);
	size_t sl = cn_codec_shard_len(c, 10000);
	shards sh, w;
	shards_alloc(&sh, 6, sl);
	shards_alloc(&w, 6, sl);
	CHECK_EQ_INT(cn_codec_encode(c, data, 10000, sh.s, NULL), CN_OK);
	/* lose data shard 1 and parity 5; a degraded GET wants only shard 1 */
	unsigned char *sp[6] = { sh.s[0], w.s[1], sh.s[2], sh.s[3], sh.s[4], w.s[5] };
	memset(w.s[5], 0x11, sl);
	bool present[6] = { true, false, true, true, true, false };
	bool want[6] = { false, true, false, false, false, false };
	CHECK_EQ_INT(cn_codec_reconstruct(c, sl, sp, present, want), CN_OK);
	CHECK_MEM(w.s[1], sh.s[1], sl);
	CHECK(w.s[5][0] == 0x11 && w.s[5][sl - 1] == 0x11);   /* untouched */
	/* the same pattern again hits the cache and gives the same answer */
	memset(w.s[1], 0, sl);
	CHECK_EQ_INT(cn_codec_reconstruct(c, sl, sp, present, want), CN_OK);
	CHECK_MEM(w.s[1], sh.s[1], sl);
	/* parity rebuilt from parity + data (heal of a parity drive) */
	CHECK_EQ_INT(cn_codec_reconstruct(c, sl, sp, present, NULL), CN_OK);
	CHECK_MEM(w.s[5], sh.s[5], sl);
	/* zero-copy write path: data already in the shards, parity only */
	memset(w.s[4], 0, sl);
	memset(w.s[5], 0, sl);
	unsigned char *zp[6] = { sh.s[0], sh.s[1], sh.s[2], sh.s[3], w.s[4], w.s[5] };
	unsigned char h[6][CN_CODEC_HASH_LEN];
	CHECK_EQ_INT(cn_codec_encode_parity(c, sl, zp, h), CN_OK);
	CHECK_MEM(w.s[4], sh.s[4], sl);
	CHECK_MEM(w.s[5], sh.s[5], sl);
	CHECK_EQ_INT(cn_codec_hash_check(sh.s[5], sl, h[5]), CN_OK);
	shards_free(&sh);
	shards_free(&w);
	free(data);
	cn_codec_free(c);
}

#if defined(__x86_64__)
/* CODEC-4 observed: this binary's ec_encode_data and crc32_gzip_refl take the place of
 * ISA-L's for codec.c (an executable's definition wins at link time); each calls ISA-L's
 * (dlsym RTLD_NEXT), then leaves the upper halves of the ymm registers dirty, as ISA-L's
 * AVX-512 kernels may. XGETBV(1) bit 2 (XINUSE, AVX state) tells whether they are still
 * dirty when the codec returns: only cn_simd_settle's vzeroupper clears them there. */
static int isal_calls;

static void dirty_upper(void)
{
	__asm__ volatile("vpcmpeqd %%ymm1, %%ymm1, %%ymm1" ::: "xmm1");
}

static bool upper_dirty(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return lo & 4;
}

void ec_encode_data(int len, int k, int rows, unsigned char *gftbls, unsigned char **data,
                    unsigned char **coding)
{
	static void (*real)(int, int, int, unsigned char *, unsigned char **, unsigned char **);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "ec_encode_data");
	real(len, k, rows, gftbls, data, coding);
	isal_calls++;
	dirty_upper();
}

uint32_t crc32_gzip_refl(uint32_t init_crc, const unsigned char *buf, uint64_t len)
{
	static uint32_t (*real)(uint32_t, const unsigned char *, uint64_t);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "crc32_gzip_refl");
	uint32_t r = real(init_crc, buf, len);
	isal_calls++;
	dirty_upper();
	return r;
}

/* codec.c CODEC-4: every ISA-L call is followed by cn_simd_settle: after a parity encode, a
 * reconstruction and a CRC the upper vector state is clean again. */
TEST(isal_calls_are_settled)
{
	unsigned a, b, cx, d;
	if (!__get_cpuid_count(1, 0, &a, &b, &cx, &d) || !(cx & bit_AVX))
		SKIP("no AVX: cn_simd_settle does nothing here");
	if (!__get_cpuid_count(0xd, 1, &a, &b, &cx, &d) || !(a & 4))
		SKIP("no XGETBV(1): the vector state cannot be read");
	cn_codec *c;
	CHECK_EQ_INT(cn_codec_new(4, 2, &c), CN_OK);
	size_t sl = 4096;
	shards sh;
	shards_alloc(&sh, 6, sl);
	for (int i = 0; i < 4; i++)
		memset(sh.s[i], 'a' + i, sl);
	dirty_upper();
	CHECK(upper_dirty()); /* the observation works */
	__asm__ volatile("vzeroupper" ::: "memory");
	CHECK(!upper_dirty());
	isal_calls = 0;
	CHECK_EQ_INT(cn_codec_encode_parity(c, sl, sh.s, NULL), CN_OK);
	CHECK_EQ_INT(isal_calls, 1);
	CHECK(!upper_dirty());
	bool present[6] = { true, false, true, true, true, false };
	CHECK_EQ_INT(cn_codec_reconstruct(c, sl, sh.s, present, NULL), CN_OK);
	CHECK_EQ_INT(isal_calls, 2);
	CHECK(!upper_dirty());
	CHECK(sh.s[1][0] == 'b' && sh.s[1][sl - 1] == 'b');
	CHECK_EQ_INT(cn_codec_crc32(0, "123456789", 9), 0xCBF43926);
	CHECK_EQ_INT(isal_calls, 3);
	CHECK(!upper_dirty());
	shards_free(&sh);
	cn_codec_free(c);
}
#endif

TEST(bitrot_detected_and_repaired)
{
	cn_codec *c;
	CHECK_EQ_INT(cn_codec_new(4, 2, &c), CN_OK);
	size_t len = MIB;
	unsigned char *data = random_bytes(len);
	size_t sl = cn_codec_shard_len(c, len);
	shards sh;
	shards_alloc(&sh, 6, sl);
	CHECK_EQ_INT(cn_codec_encode(c, data, len, sh.s, sh.h), CN_OK);
	unsigned char *keep = malloc(sl);
	memcpy(keep, sh.s[2], sl);
	/* one flipped bit anywhere in a shard is caught */
	const size_t spots[] = { 0, 1, sl / 2, sl - 1 };
	for (size_t i = 0; i < 4; i++) {
		sh.s[2][spots[i]] ^= 0x01;
		CHECK_EQ_INT(cn_codec_hash_check(sh.s[2], sl, sh.h[2]), CN_ERR_CORRUPT);
		sh.s[2][spots[i]] ^= 0x01;
		CHECK_EQ_INT(cn_codec_hash_check(sh.s[2], sl, sh.h[2]), CN_OK);
	}
	/* a truncated shard fails too */
	CHECK_EQ_INT(cn_codec_hash_check(sh.s[2], sl - 1, sh.h[2]), CN_ERR_CORRUPT);
	/* degraded read: verify marks the rotten data shard and parity shard, reconstruct repairs */
	sh.s[2][12345] ^= 0x80;
	sh.s[5][7] ^= 0xFF;
	bool present[6] = { true, true, true, true, true, true };
	CHECK_EQ_INT(cn_codec_verify(c, sl, sh.s, present, HASHES(sh.h)), 2);
	CHECK(!present[2] && !present[5] && present[0] && present[4]);
	CHECK_EQ_INT(cn_codec_reconstruct(c, sl, sh.s, present, NULL), CN_OK);
	CHECK_MEM(sh.s[2], keep, sl);
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ_INT(cn_codec_hash_check(sh.s[i], sl, sh.h[i]), CN_OK);
	unsigned char *out = malloc(len);
	cn_codec_join(c, sh.s, len, out);
	CHECK_MEM(out, data, len);
	/* three rotten shards out of 4+2: verify finds them, reconstruct refuses */
	sh.s[0][0] ^= 1;
	sh.s[1][0] ^= 1;
	sh.s[4][0] ^= 1;
	bool p2[6] = { true, true, true, true, true, true };
	CHECK_EQ_INT(cn_codec_verify(c, sl, sh.s, p2, HASHES(sh.h)), 3);
	CHECK_EQ_INT(cn_codec_reconstruct(c, sl, sh.s, p2, NULL), CN_ERR_QUORUM);
	/* the hash is XXH3-128 in canonical order: pin it so the on-disk format cannot drift */
	unsigned char hv[CN_CODEC_HASH_LEN];
	char hex[2 * CN_CODEC_HASH_LEN + 1];
	cn_codec_hash("", 0, hv);
	cn_hex_encode(hv, sizeof hv, hex);
	CHECK_EQ_STR(hex, "99aa06d3014798d86001c324468d497f");
	/* long inputs take the vectorised path (runtime-dispatched on x86-64): pinned too,
	 * and equal to libxxhash's portable entry point at every size class */
	size_t big = 65536 + 7;
	unsigned char *pat = malloc(big);
	CN_ASSERT(pat);
	for (size_t i = 0; i < big; i++)
		pat[i] = (unsigned char)(i * 131u + 7u);
	cn_codec_hash(pat, 1024, hv);
	cn_hex_encode(hv, sizeof hv, hex);
	CHECK_EQ_STR(hex, "f69630613f24324d70bd377d9574f4bb");
	cn_codec_hash(pat, big, hv);
	cn_hex_encode(hv, sizeof hv, hex);
	CHECK_EQ_STR(hex, "480fd002ff5defc4350684d4451cc5ad");
	bool same = true;
	for (size_t n = 0; n <= big; n += n < 512 ? 1 : n < 8192 ? 61 : 4093) {
		XXH128_canonical_t want;
		XXH128_canonicalFromHash(&want, XXH3_128bits(pat + (n & 7), n - (n & 7)));
		cn_codec_hash(pat + (n & 7), n - (n & 7), hv);
		same &= memcmp(hv, want.digest, sizeof hv) == 0;
	}
	CHECK(same);
	free(pat);
	free(out);
	free(keep);
	free(data);
	shards_free(&sh);
	cn_codec_free(c);
}

TEST(rotation_matches_minio)
{
	/* MinIO cmd/erasure-metadata-utils_test.go TestHashOrder (1-based there) */
	static const struct { const char *key; unsigned first; } v[] = {
		{ "object", 14 },
		{ "The Shining Script <v1>.pdf", 16 },
		{ "Cost Benefit Analysis (2009-2010).pptx", 15 },
		{ "117Gn8rfHL2ACARPAhaFd0AGzic9pUbIA/5OCn5A", 3 },
		{ "SH\xc3\x98RT", 11 },
		{ "There are far too many object names, and far too few bucket names!", 15 },
		{ "a/b/c/", 3 },
		{ "/a/b/c", 6 },
		{ "\xff\xfe\xfd", 15 },
	};
	for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
		uint8_t d[16];
		cn_codec_dist(NULL, v[i].key, strlen(v[i].key), 16, d);
		for (unsigned s = 0; s < 16; s++)
			CHECK_EQ_INT(d[s] + 1, (v[i].first - 1 + s) % 16 + 1);
	}
	CHECK_EQ_INT(cn_codec_crc32(0, "123456789", 9), 0xCBF43926u);
	/* bucket + "/" + key is the same as the joined string */
	uint8_t a[16], b[16];
	cn_codec_dist("bkt", "dir/obj", 7, 16, a);
	cn_codec_dist(NULL, "bkt/dir/obj", 11, 16, b);
	CHECK_MEM(a, b, 16);
}

TEST(rotation_is_a_permutation)
{
	unsigned starts[16] = { 0 };
	char key[32];
	for (unsigned n = 1; n <= 16; n++) {
		for (unsigned t = 0; t < 2000; t++) {
			int kl = snprintf(key, sizeof key, "obj-%u", t);
			uint8_t d[16], d2[16];
			cn_codec_dist("bucket", key, (size_t)kl, n, d);
			cn_codec_dist("bucket", key, (size_t)kl, n, d2);
			CHECK(memcmp(d, d2, n) == 0);              /* deterministic */
			unsigned seen = 0;
			for (unsigned s = 0; s < n; s++) {
				CHECK(d[s] < n);
				seen |= 1u << d[s];
			}
			CHECK_EQ_INT(seen, (1u << n) - 1);         /* each shard exactly once */
			if (n == 16)
				starts[d[0]]++;
		}
	}
	/* load spreads: every rotation is used, none by more than twice its share */
	for (unsigned s = 0; s < 16; s++)
		CHECK(starts[s] > 0 && starts[s] < 2 * 2000 / 16);
}

typedef struct thr_arg {
	cn_codec *c;
	const shards *orig;
	unsigned seed;
	int failures;
} thr_arg;

static void *hammer(void *p)
{
	thr_arg *a = p;
	unsigned n = cn_codec_k(a->c) + cn_codec_m(a->c), m = cn_codec_m(a->c);
	size_t sl = a->orig->len;
	unsigned char *work[CN_CODEC_MAX_SHARDS];
	for (unsigned i = 0; i < n; i++)
		work[i] = malloc(sl);
	unsigned s = a->seed;
	for (unsigned it = 0; it < 400; it++) {
		bool present[CN_CODEC_MAX_SHARDS];
		unsigned char *sp[CN_CODEC_MAX_SHARDS];
		for (unsigned i = 0; i < n; i++)
			present[i] = true;
		for (unsigned j = 0; j < m; j++) {
			s = s * 1103515245u + 12345u;
			present[(s >> 16) % n] = false;
		}
		for (unsigned i = 0; i < n; i++)
			sp[i] = present[i] ? a->orig->s[i] : work[i];
		if (cn_codec_reconstruct(a->c, sl, sp, present, NULL) != CN_OK) {
			a->failures++;
			continue;
		}
		for (unsigned i = 0; i < n; i++)
			if (!present[i] && memcmp(sp[i], a->orig->s[i], sl))
				a->failures++;
	}
	for (unsigned i = 0; i < n; i++)
		free(work[i]);
	return NULL;
}

TEST(concurrent_use)
{
	cn_codec *c;
	CHECK_EQ_INT(cn_codec_new(8, 4, &c), CN_OK);
	unsigned char *data = random_bytes(64 * 1024);
	shards sh;
	shards_alloc(&sh, 12, cn_codec_shard_len(c, 64 * 1024));
	CHECK_EQ_INT(cn_codec_encode(c, data, 64 * 1024, sh.s, sh.h), CN_OK);
	pthread_t t[4];
	thr_arg a[4];
	for (unsigned i = 0; i < 4; i++) {
		a[i] = (thr_arg){ .c = c, .orig = &sh, .seed = 7 * i + 1 };
		CHECK_EQ_INT(pthread_create(&t[i], NULL, hammer, &a[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_INT(a[i].failures, 0);
	}
	shards_free(&sh);
	free(data);
	cn_codec_free(c);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench(void)
{
	static const unsigned cfg[][2] = { { 2, 2 }, { 4, 2 }, { 8, 4 }, { 12, 4 } };
	unsigned char *data = random_bytes(MIB);
	for (size_t i = 0; i < sizeof cfg / sizeof *cfg; i++) {
		unsigned k = cfg[i][0], m = cfg[i][1];
		cn_codec *c;
		cn_codec_new(k, m, &c);
		size_t sl = cn_codec_shard_len(c, MIB);
		shards sh;
		shards_alloc(&sh, k + m, sl);
		int reps = 2000;
		double t0 = now_s();
		for (int r = 0; r < reps; r++)
			cn_codec_encode(c, data, MIB, sh.s, NULL);
		double enc = now_s() - t0;
		t0 = now_s();
		for (int r = 0; r < reps; r++)
			cn_codec_encode(c, data, MIB, sh.s, sh.h);
		double ench = now_s() - t0;
		bool present[CN_CODEC_MAX_SHARDS];
		for (unsigned j = 0; j < k + m; j++)
			present[j] = j >= m;   /* lose the first m data shards */
		t0 = now_s();
		for (int r = 0; r < reps; r++)
			cn_codec_reconstruct(c, sl, sh.s, present, NULL);
		double dec = now_s() - t0;
		printf("bench %2u+%u: encode %6.0f MiB/s, encode+hash %6.0f MiB/s, rebuild %u lost %6.0f MiB/s\n",
		       k, m, reps / enc, reps / ench, m, reps / dec);
		shards_free(&sh);
		cn_codec_free(c);
	}
	free(data);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
		bench();
		return 0;
	}
	RUN(roundtrip_block_sizes);
	RUN(roundtrip_small_and_odd);
	RUN(shard_sizes);
	RUN(invalid_arguments);
	RUN(partial_want);
	RUN(bitrot_detected_and_repaired);
	RUN(rotation_matches_minio);
	RUN(rotation_is_a_permutation);
	RUN(concurrent_use);
#if defined(__x86_64__)
	RUN(isal_calls_are_settled);
#endif
	TEST_END();
}
