/* bench: `cairn bench`, a warp-class S3 load generator over the client library (src/client):
 * modes put/get/delete/stat/list/mixed/multipart and an s3-benchmark-style loop, closed loop
 * (--concurrent) or open loop (--rate, fixed or Poisson arrivals, latency from the intended
 * send time), rate sweeps with an SVG plot, integrity checks (--verify), autoterm, warp-shaped
 * reports (text or JSON) from mergeable histograms, benchdata files (gzip CSV of every
 * request) with analyze/cmp, and distributed runs over agents.
 *
 * Ownership: cn_bench_cfg is filled by the caller (src/cli/bench.c) and only read here; its
 * strings must outlive the call. Every entry point returns a process exit code (0 success,
 * 1 a failed run or errors counted during it, 2 bad usage) after printing a clear message
 * to stderr; nothing here calls exit(). Threads: each entry point runs on the caller's thread
 * and joins every thread it starts before returning. */
#ifndef CN_BENCH_H
#define CN_BENCH_H

#include "util/util.h"

typedef enum cn_bench_mode {
	CN_BENCH_PUT,
	CN_BENCH_GET,
	CN_BENCH_DELETE,
	CN_BENCH_STAT,
	CN_BENCH_LIST,
	CN_BENCH_MIXED,
	CN_BENCH_MULTIPART,
	CN_BENCH_LOOP,
} cn_bench_mode;

typedef struct cn_bench_cfg {
	cn_bench_mode mode;
	const char *hosts, *access_key, *secret_key, *region, *bucket, *prefix;
	bool tls, insecure, vhost;           /* --lookup dns -> vhost */
	uint64_t obj_size;                   /* --obj.size */
	bool randsize;                       /* --obj.randsize: log-uniform in [1, obj_size] */
	uint64_t objects;                    /* --objects (prepare count) */
	int concurrent, threads;
	int64_t duration_ns;
	bool autoterm;
	int64_t autoterm_dur_ns;             /* --autoterm.dur (window that must be stable) */
	double autoterm_pct;                 /* --autoterm.pct */
	int parts;                           /* --parts */
	uint64_t part_size;                  /* --part.size */
	bool json, noclear, verify, quiet;
	const char *benchdata;               /* --benchdata FILE (gzip CSV) */
	double rate;                         /* --rate N requests/s (0: closed loop) */
	bool poisson;                        /* --rate.dist poisson */
	const char *sweep;                   /* --sweep "from:to:step" or "r1,r2,..." */
	const char *plot;                    /* --plot FILE.svg */
	double get_distrib, put_distrib, stat_distrib, delete_distrib;
	int loops;                           /* loop mode */
	const char *agents;                  /* --agents h1:p,h2:p (driver) */
	int agent_index, agent_count;        /* set by agent mode: this agent's share */
	int64_t start_unix_ns;               /* synchronized start (agents); 0 = now */
	long request_timeout_ms;
	int agent_fd;                        /* agent mode: stream records here (-1: none) */
	char *const *argv;                   /* the mode's flags as given (forwarded to agents) */
	int argc;
} cn_bench_cfg;

void cn_bench_cfg_defaults(cn_bench_cfg *c);

/* "4KiB" (powers of two), "4KB" (powers of ten), "4k"=KiB; plain bytes. CN_ERR_INVALID on
 * garbage, negative, or over 1 TiB. */
cn_err cn_bench_parse_size(const char *s, uint64_t *out);

/* "put" ... "loop" -> cn_bench_mode, or -1. */
int cn_bench_parse_mode(const char *s);
/* Applies the flags (warp's names) to c (already holding defaults and c->mode). Returns 0, or
 * 2 with a message in err. Strings in c point into argv. */
int cn_bench_parse_flags(int argc, char **argv, cn_bench_cfg *c, char *err, size_t errlen);

int cn_bench_run(const cn_bench_cfg *cfg);
/* Re-reports a benchdata file; op filters one operation ("GET"), NULL all. */
int cn_bench_analyze(const char *file, const char *op, bool json);
int cn_bench_cmp(const char *before, const char *after, const char *op);
/* Serves drivers on listen ("127.0.0.1:7761" or ":7761"), one run at a time, until killed
 * (or after max_runs runs when > 0). */
int cn_bench_agent(const char *listen, int max_runs);

#endif
