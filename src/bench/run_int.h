/* bench/run_int: the load engine's shared vocabulary, private to engine.c (workers, libcurl
 * transfers, phases), gen.c (what each request is: object, key, size, operation) and
 * modes.c (a run's phases for each mode, reports, benchdata). bench_int.h's invariants
 * BENCH-1..BENCH-3 hold for what they record. */
#ifndef CN_BENCH_RUN_INT_H
#define CN_BENCH_RUN_INT_H

#include "bench/bench_int.h"
#include "client/client.h"

#include <stdatomic.h>
#include <xxhash.h>

#define NS 1000000000LL
#define OBJ_ABSENT 0
#define OBJ_PRESENT 1
#define OBJ_BUSY 2
#define SLACK 65536

typedef enum gen_kind {
	GEN_PUT_TABLE,    /* PUT object i for i < count (prepare) */
	GEN_DELETE_TABLE, /* DELETE object i for i < count (delete mode, cleanup) */
	GEN_PUT_NEW,      /* PUT fresh keys (put mode, loop) */
	GEN_GET,          /* GET a random present object */
	GEN_STAT,
	GEN_LIST,
	GEN_MIXED,
	GEN_PUT_PARTS,    /* UploadPart i+1 for i < count */
	GEN_GET_PARTS,    /* ranged GET of a random part */
} gen_kind;

typedef struct phase {
	gen_kind gen;
	bool record;            /* measured: feed the accumulators */
	bool cleanup;           /* 404 on DELETE is fine */
	int64_t deadline;       /* mono ns, 0 = none */
	atomic_bool stop;
	double rate;            /* total req/s, 0 = closed loop */
	uint64_t count;
	atomic_uint_fast64_t next;
} phase;

typedef struct eng eng;
typedef struct worker worker;

typedef struct xfer {
	CURL *e;
	cn_client_hdrs h;
	worker *w;
	int op;
	uint64_t obj;
	uint64_t size, off, pos, got;
	int64_t t_intended, t_start;
	size_t host;
	bool verify, active;
	XXH3_state_t *xs;
	uint64_t expect;
	char key[600];
	cn_kv q[4];
	char qv[4][64];
	char token[1024];
	const char *extra[2];
	char range[96];
	cn_buf resp;            /* error bodies and list answers (bounded) */
	bool keep_resp;
	char etag[160];
	char errbuf[CURL_ERROR_SIZE];
} xfer;

struct worker {
	eng *g;
	int id;
	pthread_t th;
	CURLM *m;
	xfer *x;
	int n;
	cn_client_signer signer;
	uint64_t rng;
	cn_bench_acc acc;
	cn_bench_rec *recs;
	size_t nrec, caprec;
	_Atomic uint64_t ops, bytes, errs;
	uint64_t host_rr;
	char list_token[1024];
	int64_t next_send;
	const char *first_err;
	cn_err fail;            /* allocation failure inside the worker */
};

struct eng {
	const cn_bench_cfg *cfg;
	cn_client *client;
	char **hosts;           /* URLs, for accumulators */
	size_t nhosts;
	char prefix[400];       /* key prefix of this run ("[prefix/]runid/") */
	unsigned char *payload;
	size_t payload_len;
	uint64_t max_size;
	int nthreads;
	worker *w;
	uint64_t nobj;
	uint8_t *state;
	uint64_t *hash;         /* expected XXH3 per object (verify) */
	atomic_uint_fast64_t put_new_next;
	char upload_id[512];
	char (*etags)[160];
	phase *ph;
	int64_t t0;             /* mono ns at the measured phase's start */
	bool keep_recs;
	bool synced;            /* agent: start time received */
	int64_t start_unix_ns;  /* wall clock of t0 */
};

/* Live progress of a phase on stderr: one rewritten line on a terminal, plain lines
 * otherwise. Also implements --autoterm (on the measured phase). */
typedef struct progress {
	bool tty, quiet, autoterm;
	const char *label;
	double stable_pct;
	int64_t stable_ns;
	double samples[600];
	int nsamples;
	bool stopped_early;
	double stopped_at;
} progress;

/* gen.c */
/* xorshift64*: the next pseudo-random number of the stream *s. */
uint64_t cn_bench_rnd(uint64_t *s);
/* A 64-bit finaliser (MurmurHash3's fmix64): spreads seeds and object indexes. */
uint64_t cn_bench_mix(uint64_t x);
/* Size and payload window of object idx (deterministic: PUT and verify agree). */
void cn_bench_obj_shape(const eng *g, uint64_t idx, uint64_t *size, uint64_t *off);
/* The key of object idx: the run's prefix and the index in hex. */
void cn_bench_obj_key(const eng *g, uint64_t idx, char *out, size_t cap);
/* Chooses the next request for x; false when this worker has no more work in the phase. */
bool cn_bench_gen_next(worker *w, xfer *x);
/* The gap before the next request of an open loop at rate req/s (Poisson: exponential), ns. */
double cn_bench_exp_interval(worker *w, double rate);

/* engine.c */
/* The wall clock, ns since the epoch (benchdata start times, agents' common start). */
int64_t cn_bench_wall_ns(void);
/* Frees what cn_bench_eng_init made (after a failed one too). */
void cn_bench_eng_free(eng *g);
/* Sets up the engine for c (hosts, payload, workers with their transfers); on failure a
 * message in err. The caller frees the engine with cn_bench_eng_free either way. */
cn_err cn_bench_eng_init(eng *g, const cn_bench_cfg *c, char *err, size_t errlen);
/* The live counters of the phase in progress, summed over the workers. */
void cn_bench_sum_counters(eng *g, uint64_t *ops, uint64_t *bytes, uint64_t *errs);
/* Runs ph on every worker until its work, deadline or stop ends it, showing progress. */
cn_err cn_bench_run_phase(eng *g, phase *ph, progress *pr);
/* Operations and errors of the last phase, and its first error message (or NULL). */
void cn_bench_phase_counts(eng *g, uint64_t *ops, uint64_t *errs, const char **first);
/* A phase of generator gen, nothing else set. */
void cn_bench_phase_init(phase *ph, gen_kind gen);

#endif
