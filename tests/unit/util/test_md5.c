/* Unit tests of util/md5.c: RFC 1321's test vectors; every length around the block and
 * padding edges and around CN_MD5_ENGINE_MIN, fed in pieces that straddle them, against
 * OpenSSL's MD5; and 12 threads hashing different streams at once (so the engine's lanes
 * fill, hand the lead over and empty) against OpenSSL, with the lane counters showing the
 * 8-lane kernel ran (on a CPU with AVX2) — and, with the engine off, that it did not. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "util/util.h"
#include "test.h"

#include <openssl/md5.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void hex(const unsigned char d[16], char out[33])
{
	cn_hex_encode(d, 16, out);
}

static void md5_pieces(const unsigned char *p, size_t len, const size_t *pieces, size_t np,
                       unsigned char out[16])
{
	cn_md5 c;
	cn_md5_init(&c);
	for (size_t off = 0, i = 0; off < len; i++) {
		size_t n = pieces[i % np] < len - off ? pieces[i % np] : len - off;
		cn_md5_update(&c, p + off, n);
		off += n;
	}
	cn_md5_final(&c, out);
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (unsigned char)x;
	}
}

TEST(rfc1321_vectors)
{
	static const char *in[] = { "", "a", "abc", "message digest", "abcdefghijklmnopqrstuvwxyz",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		"12345678901234567890123456789012345678901234567890123456789012345678901234567890" };
	static const char *want[] = { "d41d8cd98f00b204e9800998ecf8427e", "0cc175b9c0f1b6a831c399e269772661",
		"900150983cd24fb0d6963f7d28e17f72", "f96b697d7cb7938d525a2f31aaf161d0",
		"c3fcd3d76192e4007dfb496cca67e13b", "d174ab98d277d9f5a5611c2c9f419d9f",
		"57edf4a22be3c955ac49da2e2107b67a" };
	for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
		unsigned char d[16];
		char h[33];
		size_t one = 1;
		md5_pieces((const unsigned char *)in[i], strlen(in[i]), &one, 1, d);
		hex(d, h);
		CHECK_EQ_STR(h, want[i]);
	}
}

static void lengths(void)
{
	const size_t M = CN_MD5_ENGINE_MIN;
	const size_t lens[] = { 0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000,
	                        M - 65, M - 64, M - 1, M, M + 1, M + 63, M + 64, 3 * M + 55,
	                        1u << 20, (1u << 20) + 57 };
	const size_t pieces[][3] = { { 1u << 21, 0, 0 }, { 7, 100, M + 3 }, { 64, M, 1 }, { M - 1, 2, 64 } };
	size_t max = (1u << 20) + 57;
	unsigned char *p = malloc(max);
	CN_ASSERT(p);
	fill(p, max, 7);
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
		unsigned char want[16], got[16];
		MD5(p, lens[i], want);
		for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++) {
			md5_pieces(p, lens[i], pieces[k], pieces[k][1] ? 3 : 1, got);
			CHECK_MEM(got, want, 16);
		}
	}
	free(p);
}

TEST(lengths_and_pieces_match_openssl)
{
	lengths();
	bool was = cn_md5_engine_enable(false);
	lengths();
	cn_md5_engine_enable(was);
}

typedef struct stream {
	unsigned seed;
	int bad;
	pthread_barrier_t *start;
} stream;

static void *hash_streams(void *arg)
{
	stream *s = arg;
	size_t max = 3u << 20;
	unsigned char *p = malloc(max);
	CN_ASSERT(p);
	pthread_barrier_wait(s->start);
	for (unsigned r = 0; r < 6; r++) {
		/* lengths differ between threads and rounds, so jobs finish at different rounds */
		size_t len = (1u << 20) + (s->seed * 7919u + r * 104729u) % (2u << 20);
		fill(p, len, s->seed * 31 + r);
		size_t pieces[2] = { 1u << 20, 65536 + s->seed * 64 + 13 };
		unsigned char want[16], got[16];
		md5_pieces(p, len, pieces, 2, got);
		MD5(p, len, want);
		s->bad += memcmp(got, want, 16) != 0;
	}
	free(p);
	return NULL;
}

static int threads_hashing(void)
{
	enum { N = 12 };
	pthread_t t[N];
	stream s[N];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, N);
	for (unsigned i = 0; i < N; i++) {
		s[i] = (stream){ .seed = i + 1, .start = &start };
		CN_ASSERT(pthread_create(&t[i], NULL, hash_streams, &s[i]) == 0);
	}
	int bad = 0;
	for (unsigned i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		bad += s[i].bad;
	}
	pthread_barrier_destroy(&start);
	return bad;
}

TEST(concurrent_streams_match_openssl)
{
	uint64_t lanes0, one0, lanes1, one1;
	bool on = cn_md5_engine_enable(true);
	cn_md5_stats(&lanes0, &one0);
	CHECK_EQ_INT(threads_hashing(), 0);
	cn_md5_stats(&lanes1, &one1);
	if (on) /* the 8-lane kernel hashed a good share: at least a third of the blocks */
		CHECK(lanes1 - lanes0 >= (one1 - one0) / 2);
	else
		printf("  (no AVX2 here: the engine's lanes were not tested)\n");
	cn_md5_engine_enable(false);
	cn_md5_stats(&lanes0, &one0);
	CHECK_EQ_INT(threads_hashing(), 0);
	cn_md5_stats(&lanes1, &one1);
	CHECK_EQ_INT(lanes1 - lanes0, 0);
	CHECK(one1 - one0 > 0);
	cn_md5_engine_enable(on);
}

int main(void)
{
	RUN(rfc1321_vectors);
	RUN(lengths_and_pieces_match_openssl);
	RUN(concurrent_streams_match_openssl);
	TEST_END();
}
