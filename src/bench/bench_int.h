/* bench_int: the bench module's private vocabulary — operation records, HDR-style
 * histograms, the per-second accumulator behind every report, benchdata I/O and the
 * load engine. Same error contract as bench.h.
 *
 * Invariants that make `analyze` reproduce a live report exactly:
 *  BENCH-1. Every figure of a report is computed from cn_bench_rec values only (integers, ns).
 *  BENCH-2. Accumulation is integer arithmetic (sums, attributed bytes/ops), so it is independent
 *      of the order records arrive in and of how per-thread accumulators are merged.
 *  BENCH-3. A benchdata file holds every record field losslessly (decimal integers). */
#ifndef CN_BENCH_INT_H
#define CN_BENCH_INT_H

#include "bench/bench.h"

#include <stdio.h>

typedef enum cn_bop {
	CN_BOP_PUT,
	CN_BOP_GET,
	CN_BOP_DELETE,
	CN_BOP_STAT,
	CN_BOP_LIST,
	CN_BOP_PUTPART,
	CN_BOP__COUNT
} cn_bop;
const char *cn_bop_name(int op);
int cn_bop_parse(const char *s); /* -1 when unknown */

/* One request, times in ns relative to the run's start (t0). ttfb < 0: not measured. err:
 * NULL for success, else an interned message (cn_bench_intern). */
typedef struct cn_bench_rec {
	int64_t start, end, ttfb, bytes;
	uint32_t host;
	uint8_t op;
	const char *err;
} cn_bench_rec;

/* Interned error messages live until the process ends (bounded: 4096 distinct, then
 * "(more distinct errors)"). Thread-safe. */
const char *cn_bench_intern(const char *msg);

/* --- histogram: log-linear buckets over microseconds, 1/128 relative precision ----------- */
#define CN_HIST_SUB 128
#define CN_HIST_BUCKETS (CN_HIST_SUB + (32 - 7) * (CN_HIST_SUB / 2))
typedef struct cn_hist {
	uint64_t n;
	int64_t min, max;         /* exact, ns */
	__int128 sum, sumsq;      /* exact, ns and ns^2 */
	uint32_t b[CN_HIST_BUCKETS];
} cn_hist;
void cn_hist_init(cn_hist *h);
void cn_hist_add(cn_hist *h, int64_t ns);
void cn_hist_merge(cn_hist *into, const cn_hist *from);
/* Nearest-rank quantile (q in [0,1]) in ns: the representative value of the bucket that
 * holds rank ceil(q*n), clamped to [min, max]. 0 when empty. */
int64_t cn_hist_quantile(const cn_hist *h, double q);
double cn_hist_mean(const cn_hist *h);
double cn_hist_stddev(const cn_hist *h);
size_t cn_hist_bucket(int64_t us);
int64_t cn_hist_bucket_low(size_t i);   /* lowest µs value of bucket i */
int64_t cn_hist_bucket_high(size_t i);  /* highest µs value of bucket i */

/* --- accumulator -------------------------------------------------------------------------- */
#define CN_BENCH_UOPS 1000000  /* attributed ops are counted in millionths */

typedef struct cn_bench_sec {
	int64_t bytes, uops;      /* attributed by time overlap (spanning ops split) */
	int64_t *hbytes, *huops;  /* per host, same attribution (nhosts entries) */
	cn_hist *lat, *ttfb;      /* of ops that started in this second (lazy) */
} cn_bench_sec;

typedef struct cn_bench_errmsg {
	const char *msg;
	int64_t first;            /* start of the first record with it */
	uint64_t n;
} cn_bench_errmsg;

#define CN_BENCH_MAX_ERRMSG 64
typedef struct cn_bench_opacc {
	size_t nsec, cap;
	cn_bench_sec *sec;
	uint64_t ops, errors;
	int64_t bytes, last_end;
	cn_bench_errmsg err[CN_BENCH_MAX_ERRMSG];
	size_t nerr;
} cn_bench_opacc;

typedef struct cn_bench_acc {
	size_t nhosts;
	char **hosts;             /* owned copies */
	int concurrency;
	cn_bench_opacc op[CN_BOP__COUNT];
} cn_bench_acc;

cn_err cn_bench_acc_init(cn_bench_acc *a, char *const *hosts, size_t nhosts, int concurrency);
void cn_bench_acc_fini(cn_bench_acc *a);
cn_err cn_bench_acc_add(cn_bench_acc *a, const cn_bench_rec *r);
cn_err cn_bench_acc_merge(cn_bench_acc *into, const cn_bench_acc *from);

/* The figures of one operation's report (the measured window: first/last 2 one-second
 * segments dropped when there are at least 5). */
typedef struct cn_bench_summary {
	int op;
	int concurrency;
	uint64_t ops_total, errors;
	int64_t bytes_total;
	size_t nseg, seg_first, seg_end; /* kept segments [seg_first, seg_end) of nseg */
	double window_s;
	double mib_s, obj_s;
	cn_hist lat, ttfb;        /* merged over the kept window */
	double seg_fast_mib, seg_fast_obj, seg_med_mib, seg_med_obj, seg_slow_mib, seg_slow_obj;
	size_t nhosts;
	double *host_mib, *host_obj; /* malloc'ed, nhosts */
	const cn_bench_errmsg *errs;
	size_t nerrs;
} cn_bench_summary;

/* False when the op has no records. */
bool cn_bench_summarize(const cn_bench_acc *a, int op, cn_bench_summary *s);
void cn_bench_summary_fini(cn_bench_summary *s);
/* The text report (warp's shape) or one JSON object per op into out. */
void cn_bench_report_text(const cn_bench_acc *a, const cn_bench_summary *s, FILE *out);
/* Returns a malloc'ed JSON document of every op of a (jansson), or NULL. */
char *cn_bench_report_json(const cn_bench_acc *a, const char *only_op);
/* Prints every op's text report; returns how many ops had records. */
int cn_bench_report_all(const cn_bench_acc *a, const char *only_op, FILE *out);
void cn_bench_fmt_dur(int64_t ns, char *out, size_t cap);

/* --- benchdata ----------------------------------------------------------------------------- */
/* File: gzip of "# cairn-bench benchdata v1" then "# key=value" lines (concurrency, hosts
 * (comma list), start_unix_ns, mode), then the CSV header "op,host,start_ns,end_ns,ttfb_ns,
 * bytes,error" and one line per record (error quoted as CSV when it has , or "). */
typedef struct cn_bench_meta {
	int concurrency;
	char **hosts;
	size_t nhosts;
	int64_t start_unix_ns;
	char mode[32];
} cn_bench_meta;
cn_err cn_bench_data_write(const char *path, const cn_bench_meta *m, const cn_bench_rec *recs, size_t n);
/* Reads a whole file into an accumulator (initialized here from the file's metadata). */
cn_err cn_bench_data_read(const char *path, cn_bench_acc *a, cn_bench_meta *m, char *err, size_t errlen);
void cn_bench_meta_fini(cn_bench_meta *m);
/* One record as a CSV line (no newline) into b / parsed back from a line. */
cn_err cn_bench_rec_csv(cn_buf *b, const cn_bench_rec *r, const char *host);
cn_err cn_bench_rec_parse(char *line, cn_bench_rec *r, const char **host);

/* --- agents (agent.c) ---------------------------------------------------------------------- */
/* Driver side: runs cfg on every agent of cfg->agents with a synchronized start, merges their
 * records into acc (initialized by the caller with the client's hosts) and, when recs is not
 * NULL, appends them to *recs and *nrec (malloc'ed). */
cn_err cn_bench_agents_run(const cn_bench_cfg *cfg, cn_bench_acc *acc,
                           cn_bench_rec **recs, size_t *nrec, char *err, size_t errlen);
/* Agent side, called by the run before its measured phase: says "ready" on fd and waits
 * for the driver's start time. */
cn_err cn_bench_agent_sync(int fd, int64_t *start_unix_ns);

#endif
