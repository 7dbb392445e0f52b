/* util/md5: MD5 for ETags (util.h cn_md5_*). An ETag costs a PUT one pass of MD5 over its
 * body, and OpenSSL's MD5 runs ~670 MB/s on one core here: 6 ms of a 4 MiB PUT's ~13 ms of
 * server CPU (docs/PERF.md). MD5 is a chain within one stream, but independent streams
 * can be hashed side by side in the lanes of a vector register, as MinIO's md5-simd does:
 * 8 lanes of AVX2 hash 8 streams at ~3 GB/s together.
 *
 * The engine (flat combining):
 *  MD5-1. A caller with a run of whole blocks (at least CN_MD5_ENGINE_MIN bytes) queues a job
 *      on its stack and, if no thread leads the engine, leads it; otherwise it sleeps on
 *      the job's state word until the state is DONE or LEAD.
 *  MD5-2. Only the leader touches the lanes. Each round it fills free lanes from the queue
 *      (under mu), then hashes min(blocks left over the busy lanes, ROUND_BLOCKS) blocks
 *      of every busy lane, with the 8-lane kernel when at least MIN_LANES lanes are busy
 *      (fewer lanes are faster one at a time), outside mu.
 *  MD5-3. A job whose blocks are all hashed leaves its lane: its state words are stored
 *      first, then state DONE (release), then its owner is woken. The owner returns and its
 *      stack frame goes; the leader reads nothing of the job after the DONE store.
 *  MD5-4. When the leader's own job is done it leaves: with no busy lane and an empty queue
 *      (checked under mu) it clears `leading`; otherwise it hands the lead to the owner of a
 *      busy lane (state LEAD), which goes on from MD5-2. So a caller never waits on others'
 *      work after its own is done, and a queued job always has a leader.
 * A job lives on its owner's stack and the owner does not return before its DONE, so the
 * engine allocates nothing. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "util/util.h"

#include <linux/futex.h>
#include <openssl/md5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_LANES 1
#else
#define HAVE_LANES 0
#endif

#define LANES 8
#define MIN_LANES 3        /* 8 lanes cost ~8/4.5 of one stream: from 3 busy lanes on */
#define ROUND_BLOCKS 1024  /* 64 KiB per lane per round: new jobs join the lanes soon */

enum { JOB_QUEUED, JOB_DONE, JOB_LEAD };

typedef struct job {
	const unsigned char *p;  /* next block */
	size_t left;             /* whole blocks left */
	uint32_t h[4];
	_Atomic uint32_t state;
	struct job *next;
} job;

static struct {
	pthread_mutex_t mu;
	job *head, *tail;  /* queued, not yet in a lane (mu) */
	bool leading;      /* a thread leads (mu) */
	job *lane[LANES];  /* the leader's */
	pthread_once_t once;
	_Atomic bool on;
	_Atomic uint64_t lane_blocks, stream_blocks;
} E = { .mu = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT };

static bool cpu_has_lanes(void)
{
#if HAVE_LANES
	return __builtin_cpu_supports("avx2");
#else
	return false;
#endif
}

static void engine_init(void)
{
	const char *v = getenv("CAIRN_MD5_ENGINE");
	atomic_store(&E.on, cpu_has_lanes() && !(v && strcmp(v, "off") == 0));
}

bool cn_md5_engine_enable(bool on)
{
	pthread_once(&E.once, engine_init);
	atomic_store(&E.on, on && cpu_has_lanes());
	return atomic_load(&E.on);
}

void cn_md5_stats(uint64_t *lane_blocks, uint64_t *stream_blocks)
{
	*lane_blocks = atomic_load(&E.lane_blocks);
	*stream_blocks = atomic_load(&E.stream_blocks);
}

/* One stream: OpenSSL's block function, reached through an MD5_CTX whose chaining words
 * are ours (with no bytes buffered and whole blocks, MD5_Update only runs blocks). */
static void blocks_one(uint32_t h[4], const unsigned char *p, size_t nblocks)
{
	MD5_CTX c;
	MD5_Init(&c);
	c.A = h[0];
	c.B = h[1];
	c.C = h[2];
	c.D = h[3];
	MD5_Update(&c, p, nblocks * 64);
	h[0] = c.A;
	h[1] = c.B;
	h[2] = c.C;
	h[3] = c.D;
	atomic_fetch_add_explicit(&E.stream_blocks, nblocks, memory_order_relaxed);
}

#if HAVE_LANES
static const uint32_t K[64] = {
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
	0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
	0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
	0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
	0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
	0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
	0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
	0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

/* RFC 1321's four rounds: message word order and shifts. */
static const uint8_t G[64] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	1, 6, 11, 0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12,
	5, 8, 11, 14, 1, 4, 7, 10, 13, 0, 3, 6, 9, 12, 15, 2,
	0, 7, 14, 5, 12, 3, 10, 1, 8, 15, 6, 13, 4, 11, 2, 9,
};

#define ROTL(x, s) _mm256_or_si256(_mm256_slli_epi32(x, s), _mm256_srli_epi32(x, 32 - (s)))
#define F1(b, c, d) _mm256_xor_si256(d, _mm256_and_si256(b, _mm256_xor_si256(c, d)))
#define F2(b, c, d) _mm256_xor_si256(c, _mm256_and_si256(d, _mm256_xor_si256(b, c)))
#define F3(b, c, d) _mm256_xor_si256(_mm256_xor_si256(b, c), d)
#define F4(b, c, d) _mm256_xor_si256(c, _mm256_or_si256(b, _mm256_xor_si256(d, ones)))
#define STEP(F, a, b, c, d, i, s)                                                              \
	do {                                                                                   \
		a = _mm256_add_epi32(a, _mm256_add_epi32(F(b, c, d),                               \
		        _mm256_add_epi32(W[G[i]], _mm256_set1_epi32((int)K[i]))));                 \
		a = _mm256_add_epi32(ROTL(a, s), b);                                               \
	} while (0)
#define ROUND(F, i, s0, s1, s2, s3)                                                            \
	do {                                                                                   \
		STEP(F, a, b, c, d, i, s0);                                                        \
		STEP(F, d, a, b, c, i + 1, s1);                                                    \
		STEP(F, c, d, a, b, i + 2, s2);                                                    \
		STEP(F, b, c, d, a, i + 3, s3);                                                    \
	} while (0)

/* r[l] holds 8 words of lane l; afterwards r[w] holds word w of every lane. */
__attribute__((target("avx2"))) static inline void transpose8(__m256i r[8])
{
	__m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
	__m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
	__m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
	__m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
	__m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
	__m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
	__m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
	__m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
	r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
	r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
	r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
	r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
	r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
	r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
	r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
	r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

/* nblocks blocks of each of 8 streams; h[w][l] is chaining word w of lane l. */
__attribute__((target("avx2"))) static void blocks_x8(uint32_t h[4][LANES],
                                                      const unsigned char *p[LANES], size_t nblocks)
{
	__m256i A = _mm256_loadu_si256((const void *)h[0]), B = _mm256_loadu_si256((const void *)h[1]);
	__m256i C = _mm256_loadu_si256((const void *)h[2]), D = _mm256_loadu_si256((const void *)h[3]);
	const __m256i ones = _mm256_set1_epi32(-1);
	for (size_t k = 0; k < nblocks; k++) {
		__m256i W[16];
		for (int l = 0; l < LANES; l++) {
			W[l] = _mm256_loadu_si256((const void *)(p[l] + k * 64));
			W[8 + l] = _mm256_loadu_si256((const void *)(p[l] + k * 64 + 32));
		}
		transpose8(W);
		transpose8(W + 8);
		__m256i a = A, b = B, c = C, d = D;
		ROUND(F1, 0, 7, 12, 17, 22);
		ROUND(F1, 4, 7, 12, 17, 22);
		ROUND(F1, 8, 7, 12, 17, 22);
		ROUND(F1, 12, 7, 12, 17, 22);
		ROUND(F2, 16, 5, 9, 14, 20);
		ROUND(F2, 20, 5, 9, 14, 20);
		ROUND(F2, 24, 5, 9, 14, 20);
		ROUND(F2, 28, 5, 9, 14, 20);
		ROUND(F3, 32, 4, 11, 16, 23);
		ROUND(F3, 36, 4, 11, 16, 23);
		ROUND(F3, 40, 4, 11, 16, 23);
		ROUND(F3, 44, 4, 11, 16, 23);
		ROUND(F4, 48, 6, 10, 15, 21);
		ROUND(F4, 52, 6, 10, 15, 21);
		ROUND(F4, 56, 6, 10, 15, 21);
		ROUND(F4, 60, 6, 10, 15, 21);
		A = _mm256_add_epi32(A, a);
		B = _mm256_add_epi32(B, b);
		C = _mm256_add_epi32(C, c);
		D = _mm256_add_epi32(D, d);
	}
	_mm256_storeu_si256((void *)h[0], A);
	_mm256_storeu_si256((void *)h[1], B);
	_mm256_storeu_si256((void *)h[2], C);
	_mm256_storeu_si256((void *)h[3], D);
}
#endif

static void futex_wait(_Atomic uint32_t *w, uint32_t seen)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* MD5-2: one round over the busy lanes, outside mu. Returns the blocks hashed per lane. */
static size_t run_round(size_t busy)
{
	size_t nb = ROUND_BLOCKS;
	for (int l = 0; l < LANES; l++)
		if (E.lane[l] && E.lane[l]->left < nb)
			nb = E.lane[l]->left;
#if HAVE_LANES
	if (busy >= MIN_LANES) {
		uint32_t h[4][LANES];
		const unsigned char *p[LANES];
		const unsigned char *any = NULL;
		for (int l = 0; l < LANES; l++)
			if (E.lane[l])
				any = E.lane[l]->p;
		for (int l = 0; l < LANES; l++) {
			job *j = E.lane[l];
			p[l] = j ? j->p : any; /* an idle lane hashes a busy one's bytes, unused */
			for (int w = 0; w < 4; w++)
				h[w][l] = j ? j->h[w] : 0;
		}
		blocks_x8(h, p, nb);
		for (int l = 0; l < LANES; l++)
			if (E.lane[l])
				for (int w = 0; w < 4; w++)
					E.lane[l]->h[w] = h[w][l];
		atomic_fetch_add_explicit(&E.lane_blocks, nb * busy, memory_order_relaxed);
		return nb;
	}
#else
	(void)busy;
#endif
	for (int l = 0; l < LANES; l++)
		if (E.lane[l])
			blocks_one(E.lane[l]->h, E.lane[l]->p, nb);
	return nb;
}

/* MD5-2..MD5-4: leads the engine until `mine` is done. */
static void lead(job *mine)
{
	bool mine_done = false;
	for (;;) {
		pthread_mutex_lock(&E.mu);
		size_t busy = 0;
		for (int l = 0; l < LANES; l++) {
			if (!E.lane[l] && E.head) {
				E.lane[l] = E.head;
				if (!(E.head = E.head->next))
					E.tail = NULL;
			}
			busy += E.lane[l] != NULL;
		}
		if (mine_done) { /* MD5-4 */
			if (busy == 0) {
				E.leading = false;
			} else {
				for (int l = 0; l < LANES; l++) {
					if (E.lane[l]) {
						job *next = E.lane[l];
						atomic_store_explicit(&next->state, JOB_LEAD, memory_order_release);
						futex_wake(&next->state);
						break;
					}
				}
			}
			pthread_mutex_unlock(&E.mu);
			return;
		}
		pthread_mutex_unlock(&E.mu);
		CN_ASSERT(busy > 0); /* mine is in a lane */
		size_t nb = run_round(busy);
		for (int l = 0; l < LANES; l++) {
			job *j = E.lane[l];
			if (!j)
				continue;
			j->p += nb * 64;
			j->left -= nb;
			if (j->left > 0)
				continue;
			E.lane[l] = NULL;
			if (j == mine) {
				mine_done = true;
			} else { /* MD5-3 */
				atomic_store_explicit(&j->state, JOB_DONE, memory_order_release);
				futex_wake(&j->state);
			}
		}
	}
}

/* MD5-1: hashes nblocks whole blocks at p into h through the engine. */
static void blocks_engine(uint32_t h[4], const unsigned char *p, size_t nblocks)
{
	job j = { .p = p, .left = nblocks, .h = { h[0], h[1], h[2], h[3] } };
	atomic_init(&j.state, JOB_QUEUED);
	pthread_mutex_lock(&E.mu);
	if (E.tail)
		E.tail->next = &j;
	else
		E.head = &j;
	E.tail = &j;
	bool leader = !E.leading;
	E.leading = true;
	pthread_mutex_unlock(&E.mu);
	if (!leader) {
		uint32_t s;
		while ((s = atomic_load_explicit(&j.state, memory_order_acquire)) == JOB_QUEUED)
			futex_wait(&j.state, JOB_QUEUED);
		leader = s == JOB_LEAD;
	}
	if (leader)
		lead(&j);
	memcpy(h, j.h, sizeof j.h);
}

void cn_md5_init(cn_md5 *c)
{
	c->h[0] = 0x67452301;
	c->h[1] = 0xefcdab89;
	c->h[2] = 0x98badcfe;
	c->h[3] = 0x10325476;
	c->len = 0;
	c->tlen = 0;
}

static void blocks(uint32_t h[4], const unsigned char *p, size_t nblocks)
{
	if (nblocks * 64 >= CN_MD5_ENGINE_MIN) {
		pthread_once(&E.once, engine_init);
		if (atomic_load_explicit(&E.on, memory_order_relaxed)) {
			blocks_engine(h, p, nblocks);
			return;
		}
	}
	blocks_one(h, p, nblocks);
}

void cn_md5_update(cn_md5 *c, const void *p, size_t n)
{
	const unsigned char *b = p;
	c->len += n;
	if (c->tlen > 0) {
		size_t take = 64 - c->tlen < n ? 64 - c->tlen : n;
		memcpy(c->tail + c->tlen, b, take);
		c->tlen += (unsigned)take;
		b += take;
		n -= take;
		if (c->tlen < 64)
			return;
		blocks_one(c->h, c->tail, 1);
		c->tlen = 0;
	}
	if (n >= 64) {
		blocks(c->h, b, n / 64);
		b += n / 64 * 64;
		n %= 64;
	}
	memcpy(c->tail, b, n);
	c->tlen = (unsigned)n;
}

void cn_md5_final(cn_md5 *c, unsigned char out[16])
{
	uint64_t bits = c->len * 8;
	unsigned char pad[128] = { 0x80 };
	size_t padlen = (c->tlen < 56 ? 56 : 120) - c->tlen;
	for (int i = 0; i < 8; i++)
		pad[padlen + (size_t)i] = (unsigned char)(bits >> (8 * i));
	uint64_t len = c->len;
	cn_md5_update(c, pad, padlen + 8);
	CN_ASSERT(c->tlen == 0);
	c->len = len;
	for (int w = 0; w < 4; w++)
		for (int i = 0; i < 4; i++)
			out[w * 4 + i] = (unsigned char)(c->h[w] >> (8 * i));
}
