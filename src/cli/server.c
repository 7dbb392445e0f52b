/* cli/server.c: `cairn server DIR... [--address HOST:PORT]` — reads credentials and knobs
 * from flags and the environment (CAIRN_* with MINIO_* aliases, DESIGN.md §1), lays the
 * drive arguments out as pools of erasure sets (cluster/layout.h, MinIO's rules), opens the
 * object store over that topology, wires net -> http -> s3 and runs until SIGTERM/SIGINT,
 * then finishes the requests in flight and exits 0 (1 at once when some are still running
 * after CAIRN_SHUTDOWN_TIMEOUT: hung). */
#include "cli/cli.h"
#include "cluster/layout.h"
#include "net/net.h"
#include "s3/s3.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LOOPS 8
static cn_net *g_nets[MAX_LOOPS];
static int g_nloops;

static void on_signal(int sig)
{
	(void)sig;
	for (int i = 0; i < g_nloops; i++)
		cn_net_stop(g_nets[i]);
}

static int g_grace_ms = 25000;

/* cn_s3_set_serving_stats: the sums over the loops (set before they run, never freed while
 * the S3 layer lives). */
static void serving_stats(void *ctx, cn_s3_serving_stats *out)
{
	(void)ctx;
	memset(out, 0, sizeof *out);
	for (int i = 0; i < g_nloops; i++) {
		cn_net_stats st;
		cn_net_get_stats(g_nets[i], &st);
		out->conns += st.conns;
		out->queued += st.queued;
		out->busy += st.busy;
		out->workers += st.workers;
		out->workers_max += st.workers_max;
	}
}

/* The close after a clean stop joins the store's background threads (heal, scanner, drive
 * monitor), and one hung on a drive call would hang the stop for good: past another grace
 * the process exits as with hung requests (what was acknowledged is already durable). */
static pthread_mutex_t g_close_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_close_cv; /* on CLOCK_MONOTONIC (a clock step must not end a close) */
static bool g_closed;

static void *close_watchdog(void *arg)
{
	(void)arg;
	struct timespec ts;
	cn_deadline_on(CLOCK_MONOTONIC, g_grace_ms, &ts);
	pthread_mutex_lock(&g_close_mu);
	while (!g_closed)
		if (pthread_cond_timedwait(&g_close_cv, &g_close_mu, &ts) == ETIMEDOUT && !g_closed) {
			cn_log(CN_LOG_WARN, NULL, "shutting down: closing the drives took more than %d ms "
			       "(a background task hung on a drive?): exiting without waiting", g_grace_ms);
			fflush(NULL);
			_exit(1);
		}
	pthread_mutex_unlock(&g_close_mu);
	return NULL;
}

static void *loop_main(void *arg)
{
	return (void *)(intptr_t)cn_net_run(arg, g_grace_ms);
}

static cn_conn_verdict serve(void *ctx, cn_conn *c)
{
	return (cn_conn_verdict)cn_http_serve(c, (cn_http_handler)cn_s3_handle,
	                                      (cn_http_preread_fn)cn_s3_preread, ctx);
}

/* CAIRN_NO_INLINE (a debugging aid): no request is served on the loop, but the loop still
 * gathers unauthenticated bodies (net.h CN_CONN_MORE) */
static cn_conn_verdict serve_preread_only(void *ctx, cn_conn *c)
{
	return (cn_conn_verdict)cn_http_serve_inline(c, NULL, (cn_http_preread_fn)cn_s3_preread, ctx);
}

static cn_conn_verdict serve_inline(void *ctx, cn_conn *c)
{
	return (cn_conn_verdict)cn_http_serve_inline(c, (cn_http_handler)cn_s3_handle,
	                                             (cn_http_preread_fn)cn_s3_preread, ctx);
}

static void server_usage(FILE *f)
{
	fprintf(f,
		"usage: cairn server DIR... [--address HOST:PORT] [options]\n"
		"\n"
		"Serves S3 from drive folders (created if missing):\n"
		"  cairn server ./data                    one drive, no erasure coding\n"
		"  cairn server /mnt/disk{1...16}         one pool of 16 drives, erasure coded\n"
		"  cairn server /a/d{1...8} /b/d{1...8}   two pools (each argument with {x...y} is one pool)\n"
		"  cairn server /d1 /d2 /d3 /d4           one pool of the drives listed\n"
		"{x...y} expands to a range (numbers, zero-padded as written, or letters); several in\n"
		"one argument form their product. Each pool is cut into erasure sets of 2..16 drives as\n"
		"MinIO does (the largest size dividing the drive count that keeps sets symmetric);\n"
		"objects are spread over the sets by a hash of their key, and new objects go to the\n"
		"pool with the most free space. Each set stores an object as K data + M parity\n"
		"shards and keeps serving it with up to M drives missing. Distributed deployments\n"
		"(http://host{1...4}/disk{1...4}) are not supported yet.\n"
		"\n"
		"options:\n"
		"  --address HOST:PORT  listen address (default :9000, all interfaces)\n"
		"  --domain NAME        enable virtual-host-style requests (BUCKET.NAME)\n"
		"  --region NAME        region to report and enforce (default us-east-1, any accepted)\n"
		"  --workers N          request worker threads in all (default 64)\n"
		"  --loops N            event-loop threads sharing the port (default: one per 2 CPUs, max 8)\n"
		"  --no-fsync           do not sync before acknowledging writes (benchmarks ONLY:\n"
		"                       acknowledged writes can be lost on power failure)\n"
		"  --quiet              log warnings and errors only\n"
		"\n"
		"environment:\n"
		"  CAIRN_ROOT_USER, CAIRN_ROOT_PASSWORD  root credentials (also MINIO_ROOT_USER,\n"
		"                                       MINIO_ROOT_PASSWORD); default minioadmin\n"
		"  CAIRN_ERASURE_SET_DRIVE_COUNT        drives per erasure set (2..16, must divide every\n"
		"                                       pool's drive count; also MINIO_...)\n"
		"  CAIRN_STORAGE_CLASS_STANDARD=EC:n    parity of STANDARD objects (default by set size:\n"
		"                                       2-3 -> 1, 4-5 -> 2, 6-7 -> 3, 8-16 -> 4)\n"
		"  CAIRN_STORAGE_CLASS_RRS=EC:n         parity of REDUCED_REDUNDANCY objects (default 1)\n"
		"  CAIRN_API_STALE_UPLOADS_EXPIRY       incomplete multipart uploads older than this\n"
		"                                       are removed (default 24h; also MINIO_...)\n"
		"  CAIRN_API_STALE_UPLOADS_CLEANUP_INTERVAL  how often to look (default 1h)\n"
		"  CAIRN_HEAL_MAX_SLEEP                 the background heal's longest pause after\n"
		"                                       an object, which is otherwise twice the time\n"
		"                                       the object took (default 1s; 0: no pause,\n"
		"                                       full speed; also MINIO_HEAL_MAX_SLEEP)\n"
		"  CAIRN_DRIVE_MAX_TIMEOUT              a drive call running longer takes the drive\n"
		"                                       offline: requests skip it until a probe passes\n"
		"                                       (default 30s; also MINIO_DRIVE_MAX_TIMEOUT);\n"
		"                                       while 4 calls of a drive have run a tenth of\n"
		"                                       it, new calls skip that drive\n"
		"  CAIRN_SHUTDOWN_TIMEOUT               on SIGTERM/SIGINT, how long requests in progress\n"
		"                                       may take to finish (default 25s; also MINIO_...);\n"
		"                                       past it the server exits at once (status 1)\n"
		"  CAIRN_PROMETHEUS_AUTH_TYPE=public    serve /minio/v2/metrics/{cluster,node} without a\n"
		"                                       bearer token (default jwt: cairn admin prometheus\n"
		"                                       generate makes one; also MINIO_...)\n"
		"  CAIRN_RECORD_CACHE_MB                memory for recently read metadata records and\n"
		"                                       small objects (default 1/64 of RAM, 64 MiB to\n"
		"                                       1 GiB; 0: off; `cairn admin info` shows its use)\n"
		"  CAIRN_MALLOC_HUGETLB=0               keep the heap off transparent huge pages (by\n"
		"                                       default the server restarts itself once with\n"
		"                                       GLIBC_TUNABLES=glibc.malloc.hugetlb=1)\n");
}

/* Why huge pages: on the bench VMs every first touch of a fresh 4 KiB page of the heap
 * traps to the hypervisor; a server filling its record cache or growing an arena paid
 * ~12 % of its CPU in those faults (perf: _int_malloc taking the top chunk's first
 * touch). With the heap on 2 MiB pages, server CPU per GET fell 15-20 % (docs/PERF.md).
 * glibc reads this tunable only at start, hence the one re-exec; CAIRN_REEXEC guards
 * against a loop should the variable not survive the exec. */
void cn_cli_server_reexec(char **argv)
{
	if (getenv("CAIRN_REEXEC")) { /* this is the re-executed process */
		unsetenv("CAIRN_REEXEC");
		return;
	}
	const char *opt = getenv("CAIRN_MALLOC_HUGETLB");
	const char *t = getenv("GLIBC_TUNABLES");
	if ((opt && !strcmp(opt, "0")) || (t && strstr(t, "glibc.malloc.hugetlb")))
		return;
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "%s%sglibc.malloc.hugetlb=1", t ? t : "",
	                 t && t[0] ? ":" : "");
	if (n < 0 || (size_t)n >= sizeof buf || setenv("GLIBC_TUNABLES", buf, 1) ||
	    setenv("CAIRN_REEXEC", "1", 1))
		return;
	execv("/proc/self/exe", argv);
	/* exec failed (no /proc?): go on without, as before */
	if (t)
		setenv("GLIBC_TUNABLES", t, 1);
	else
		unsetenv("GLIBC_TUNABLES");
}

/* A duration setting (cn_parse_duration: "90s", "1h30m", "500ms", or plain seconds) in
 * milliseconds, or -1 when malformed. */
static int64_t parse_duration_ms(const char *v)
{
	int64_t ns;
	return cn_parse_duration(v, &ns) ? -1 : ns / 1000000;
}

/* The heal scan's pause cap (cn_obj_config.heal_max_sleep_ms) from CAIRN_HEAL_MAX_SLEEP
 * (or MINIO_HEAL_MAX_SLEEP): unset 0 (the default), "0" -1 (no pause); exits on a bad
 * value. */
static int64_t env_heal_max_sleep(void)
{
	const char *v = cn_env2("CAIRN_HEAL_MAX_SLEEP", "MINIO_HEAL_MAX_SLEEP");
	if (!v)
		return 0;
	int64_t ms = parse_duration_ms(v);
	if (ms < 0 || ms > 3600 * 1000) {
		const char *c = getenv("CAIRN_HEAL_MAX_SLEEP");
		fprintf(stderr, "cairn server: %s=%s is not a duration from 0 to 1h (e.g. 250ms, 1s; "
		        "0: no pause)\n", c && c[0] ? "CAIRN_HEAL_MAX_SLEEP" : "MINIO_HEAL_MAX_SLEEP", v);
		exit(2);
	}
	return ms == 0 ? -1 : ms;
}

/* Duration from CAIRN_<name> (or MINIO_<name>); 0 when unset; exits on a bad value. */
static int64_t env_duration(const char *cname, const char *mname)
{
	const char *v = cn_env2(cname, mname);
	if (!v)
		return 0;
	int64_t ms = parse_duration_ms(v);
	if (ms <= 0) {
		fprintf(stderr, "cairn server: %s=%s is not a duration (e.g. 24h, 90m, 30s)\n", cname, v);
		exit(2);
	}
	return ms;
}

/* What the command line says (flags and drive arguments). */
typedef struct server_opts {
	const char *address, *domain, *region;
	int workers, loops; /* 0: the default */
	bool durable;
	const char *args[64];
	size_t nargs;
} server_opts;

/* Reads the flags and drive arguments into o. Returns -1 to go on, else the exit status:
 * 0 after --help, 2 on a bad or missing argument. */
static int parse_flags(int argc, char **argv, server_opts *o)
{
	*o = (server_opts){ .address = ":9000", .durable = true };
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *val = (i + 1 < argc) ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			server_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--address") && val) {
			o->address = val;
			i++;
		} else if (!strcmp(a, "--domain") && val) {
			o->domain = val;
			i++;
		} else if (!strcmp(a, "--region") && val) {
			o->region = val;
			i++;
		} else if (!strcmp(a, "--workers") && val) {
			o->workers = atoi(val);
			if (o->workers < 1 || o->workers > 4096) {
				fprintf(stderr, "cairn server: --workers must be 1..4096\n");
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--loops") && val) {
			o->loops = atoi(val);
			if (o->loops < 1 || o->loops > MAX_LOOPS) {
				fprintf(stderr, "cairn server: --loops must be 1..%d\n", MAX_LOOPS);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--no-fsync")) {
			o->durable = false;
		} else if (!strcmp(a, "--quiet")) {
			cn_log_min = CN_LOG_WARN;
		} else if (a[0] == '-' && a[1] == '-') {
			fprintf(stderr, "cairn server: unknown or incomplete option '%s' (see cairn server --help)\n", a);
			return 2;
		} else if (o->nargs < 64) {
			o->args[o->nargs++] = a;
		}
	}
	if (o->nargs == 0) {
		fprintf(stderr, "cairn server: which folder should I serve? e.g. cairn server ./data\n");
		return 2;
	}
	return -1;
}

/* Lays the drive arguments out as pools of erasure sets and their parity (MinIO's rules,
 * cluster/layout.h). Returns -1 to go on (lay to be freed), else the exit status 2. */
static int lay_out_drives(const server_opts *o, cn_layout *lay)
{
	char lerr[512];
	cn_err le = cn_layout_build_env(o->args, o->nargs, lay, lerr, sizeof lerr);
	if (le) {
		fprintf(stderr, "cairn server: %s\n", lerr[0] ? lerr : cn_err_str(le));
		return 2;
	}
	if (lay->distributed) {
		fprintf(stderr, "cairn server: distributed deployments (http:// endpoints) are not "
		                "supported yet: give local drive folders\n");
		cn_layout_fini(lay);
		return 2;
	}
	return -1;
}

/* The banner's and the open error's one-line description of the layout. */
static void describe_storage(const cn_layout *lay, char *line, size_t cap)
{
	size_t at = 0;
	at += (size_t)snprintf(line, cap, "pools: %zu, sets: ", lay->npools);
	for (size_t p = 0; p < lay->npools && at < cap; p++)
		at += (size_t)snprintf(line + at, cap - at, "%s%zu x %u drive%s",
		                       p ? " + " : "", lay->pools[p].nsets, lay->pools[p].set_size,
		                       lay->pools[p].set_size == 1 ? "" : "s");
	if (at < cap) {
		if (lay->single_drive)
			snprintf(line + at, cap - at, ", parity EC:0 (one drive: no erasure coding)");
		else
			snprintf(line + at, cap - at, ", parity EC:%u (RRS EC:%u)",
			         lay->parity_standard, lay->parity_rrs);
	}
}

/* --address HOST:PORT, :PORT or [V6]:PORT into host (cap 256; "localhost" as 127.0.0.1,
 * none: 0.0.0.0) and port. Returns -1 to go on, else the exit status 2. */
static int parse_address(const char *address, char *host, size_t cap, int *port)
{
	snprintf(host, cap, "0.0.0.0");
	const char *colon = strrchr(address, ':');
	if (!colon) {
		fprintf(stderr, "cairn server: --address must be HOST:PORT or :PORT, got '%s'\n", address);
		return 2;
	}
	if (colon > address) {
		size_t hl = (size_t)(colon - address);
		if (address[0] == '[' && colon[-1] == ']') {
			address++;
			hl -= 2;
		}
		if (hl >= cap) {
			fprintf(stderr, "cairn server: host too long in --address\n");
			return 2;
		}
		memcpy(host, address, hl);
		host[hl] = 0;
		if (!strcmp(host, "localhost"))
			snprintf(host, cap, "127.0.0.1");
	}
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (*end || p < 0 || p > 65535) {
		fprintf(stderr, "cairn server: bad port in --address '%s'\n", address);
		return 2;
	}
	*port = (int)p;
	return -1;
}

/* The root credentials from the environment (the built-in default, loudly, when unset)
 * and where they came from. Returns -1 to go on, else the exit status 2 (too short). */
static int root_credentials(const char **user, const char **pass, const char **source)
{
	*user = cn_env2("CAIRN_ROOT_USER", "MINIO_ROOT_USER");
	*pass = cn_env2("CAIRN_ROOT_PASSWORD", "MINIO_ROOT_PASSWORD");
	*source = getenv("CAIRN_ROOT_USER") ? "CAIRN_ROOT_USER/CAIRN_ROOT_PASSWORD"
	                                    : "MINIO_ROOT_USER/MINIO_ROOT_PASSWORD";
	if (!*user || !*pass) {
		*user = "minioadmin";
		*pass = "minioadmin";
		*source = "built-in default";
		fprintf(stderr,
			"\n"
			"WARNING: no credentials set: using the DEFAULT root credentials minioadmin:minioadmin.\n"
			"WARNING: anyone who can reach this port can read and write everything.\n"
			"WARNING: set CAIRN_ROOT_USER and CAIRN_ROOT_PASSWORD before exposing this server.\n\n");
	} else if (strlen(*user) < 3 || strlen(*pass) < 8) {
		fprintf(stderr, "cairn server: the root user needs at least 3 characters and the password at least 8\n");
		return 2;
	}
	return -1;
}

/* Many idle keep-alive connections need descriptors: the soft limit raised to the hard. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Opens the object store over the layout with the settings of the environment (which exit
 * 2 when malformed; CAIRN_SHUTDOWN_TIMEOUT sets the grace of the stop). Returns -1 to go
 * on, else the exit status (2: too many pools, 1: the store did not open). */
static int open_store(const server_opts *o, const cn_layout *lay, const char *storage_line,
                      cn_obj_store **store)
{
	cn_obj_config oc = {
		.durable = o->durable,
		.inline_max = 128 * 1024,
		.upload_expiry_ms = env_duration("CAIRN_API_STALE_UPLOADS_EXPIRY", "MINIO_API_STALE_UPLOADS_EXPIRY"),
		.upload_cleanup_ms = env_duration("CAIRN_API_STALE_UPLOADS_CLEANUP_INTERVAL",
		                                  "MINIO_API_STALE_UPLOADS_CLEANUP_INTERVAL"),
		.heal_max_sleep_ms = env_heal_max_sleep(),
		.drive_max_timeout_ms = env_duration("CAIRN_DRIVE_MAX_TIMEOUT", "MINIO_DRIVE_MAX_TIMEOUT"),
	};
	int64_t grace = env_duration("CAIRN_SHUTDOWN_TIMEOUT", "MINIO_SHUTDOWN_TIMEOUT");
	if (grace > 0)
		g_grace_ms = grace > INT32_MAX ? INT32_MAX : (int)grace;
	cn_obj_pool_spec pspec[64];
	if (lay->npools > 64) {
		fprintf(stderr, "cairn server: at most 64 pools\n");
		return 2;
	}
	for (size_t i = 0; i < lay->npools; i++)
		pspec[i] = (cn_obj_pool_spec){ .drives = (const char *const *)lay->endpoints + lay->pools[i].first,
		                               .nsets = lay->pools[i].nsets, .set_size = lay->pools[i].set_size };
	cn_obj_topology topo = { .pools = pspec, .npools = lay->npools,
	                         .parity_standard = lay->parity_standard, .parity_rrs = lay->parity_rrs };
	cn_err e = cn_obj_store_open_topology(&topo, &oc, store);
	if (e) {
		fprintf(stderr, "cairn server: cannot open storage at %s%s (%s): %s (see the log lines "
		        "above)\n", o->args[0], o->nargs > 1 ? " ..." : "", storage_line, cn_err_str(e));
		if (e == CN_ERR_UNSUPPORTED)
			fprintf(stderr, "cairn server: this build cannot serve erasure-coded multi-drive sets "
			                "yet\n");
		return 1;
	}
	return -1;
}

/* Makes the event loops (g_nets) listening on host:port and serving s3: --loops of them
 * (default one per two CPUs), sharing --workers. Returns -1 to go on, else the exit
 * status 1 (cannot listen). */
static int make_loops(const server_opts *o, const char *host, int port, cn_s3_server *s3)
{
	const char *lg = getenv("CAIRN_LINGER_MS");
	const char *grow = getenv("CAIRN_WORKERS_GROW_AFTER_MS"); /* net.h; tests: -1 */
	/* loop.c NET-7: bytes/s a client must keep up while a worker waits on it, after a
	 * grace (defaults 1024 and 10000 ms; a negative rate: none) */
	const char *min_rate = getenv("CAIRN_API_MIN_RATE");
	const char *rate_grace = getenv("CAIRN_API_RATE_GRACE_MS");
	int loops = o->loops, workers = o->workers;
	if (loops == 0) {
		/* one loop per two CPUs: the other half runs workers (hashing, disk). On the
		 * 2-core bench machines one loop used less CPU per request than two for the
		 * same throughput (docs/PERF.md). */
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN) / 2;
		loops = ncpu < 1 ? 1 : ncpu > MAX_LOOPS ? MAX_LOOPS : (int)ncpu;
	}
	if (workers == 0)
		workers = 64;
	int per_loop = workers / loops > 4 ? workers / loops : 4;
	cn_net_config nc = { .host = host, .port = port, .workers = per_loop, .max_head = 32 * 1024,
	                     .linger_ms = lg ? atoi(lg) : 50,
	                     .inline_handler = getenv("CAIRN_NO_INLINE") ? serve_preread_only : serve_inline,
	                     .reuseport = loops > 1,
	                     .grow_after_ms = grow ? atoi(grow) : 0,
	                     .min_rate = min_rate ? atoi(min_rate) : 0,
	                     .rate_grace_ms = rate_grace ? atoi(rate_grace) : 0 };
	for (int i = 0; i < loops; i++) {
		cn_net *net = NULL;
		if (cn_net_new(&nc, serve, s3, &net)) {
			fprintf(stderr, "cairn server: cannot listen on %s:%d (see the log line above)\n", host, nc.port);
			return 1;
		}
		g_nets[g_nloops++] = net;
		nc.port = cn_net_port(net); /* port 0: the others join the port the first got */
	}
	return -1;
}

static void print_banner(const server_opts *o, const char *storage_line, const char *host,
                         const char *user, const char *cred_source)
{
	const char *shown = strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : host;
	int bport = cn_net_port(g_nets[0]);
	fprintf(stderr,
		"cairn: serving S3 from %s%s\n"
		"  Storage:     %s\n"
		"  API:         http://%s:%d  (listening on %s:%d)\n"
		"  Credentials: %s (access key %s)\n"
		"  Durability:  %s\n"
		"  Try:         AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=<password> aws --endpoint-url http://%s:%d s3 ls\n",
		o->args[0], o->nargs > 1 ? " ..." : "", storage_line, shown, bport, host, bport, cred_source,
		user, o->durable ? "fsync before every acknowledgement (group commit)" : "OFF (--no-fsync)",
		user, shown, bport);
	fflush(stderr);
}

/* Runs every loop (the first on this thread) until a stop signal, then waits for the
 * requests in flight. Past the grace with requests still running (hung, e.g. in a drive
 * call) the process exits 1 here: they use the loops, the S3 layer and the drives, so
 * nothing is freed under them (what was acknowledged is already durable). */
static void serve_until_stopped(void)
{
	pthread_t th[MAX_LOOPS];
	for (int i = 1; i < g_nloops; i++)
		if (cn_thread_create(&th[i], NULL, loop_main, g_nets[i]) != 0) {
			/* its workers run already (and the loops before it serve): nothing can be
			 * freed under them; exit as on a start failure */
			cn_log(CN_LOG_ERROR, NULL, "cannot start event loop %d of %d", i + 1, g_nloops);
			fflush(NULL);
			_exit(1);
		}
	cn_err e = cn_net_run(g_nets[0], g_grace_ms);
	for (int i = 1; i < g_nloops; i++) {
		cn_net_stop(g_nets[i]);
		void *r = NULL;
		pthread_join(th[i], &r);
		if (r)
			e = (cn_err)(intptr_t)r;
	}
	if (e) {
		cn_log(CN_LOG_WARN, NULL,
		       "shutting down with requests still running after %d ms (hung?): exiting "
		       "without closing the drives", g_grace_ms);
		fflush(NULL);
		_exit(1);
	}
}

/* After a clean stop: frees the loops and the S3 layer and closes the store, under
 * close_watchdog (a close hung on a drive exits 1 past the grace). */
static void close_all(cn_s3_server *s3, cn_obj_store *store, cn_layout *lay)
{
	cn_log(CN_LOG_INFO, NULL, "shutting down");
	/* the loops go now: a second signal ends the process at once (as a kill would), not
	 * on_signal on a freed loop */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	pthread_t wd;
	pthread_condattr_t ca;
	bool watched = pthread_condattr_init(&ca) == 0 &&
	               pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
	               pthread_cond_init(&g_close_cv, &ca) == 0 &&
	               cn_thread_create(&wd, NULL, close_watchdog, NULL) == 0;
	for (int i = 0; i < g_nloops; i++)
		cn_net_free(g_nets[i]);
	cn_s3_free(s3);
	cn_obj_store_close(store);
	cn_layout_fini(lay);
	if (watched) {
		pthread_mutex_lock(&g_close_mu);
		g_closed = true;
		pthread_cond_signal(&g_close_cv);
		pthread_mutex_unlock(&g_close_mu);
		pthread_join(wd, NULL);
	}
}

int cn_cli_server(int argc, char **argv)
{
	server_opts o;
	int rc = parse_flags(argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *pauth = cn_env2("CAIRN_PROMETHEUS_AUTH_TYPE", "MINIO_PROMETHEUS_AUTH_TYPE");
	if (pauth && strcmp(pauth, "jwt") && strcmp(pauth, "public")) {
		fprintf(stderr, "cairn server: CAIRN_PROMETHEUS_AUTH_TYPE=%s: expected jwt (the default: "
		                "metrics need a bearer token) or public\n", pauth);
		return 2;
	}
	cn_layout lay;
	if ((rc = lay_out_drives(&o, &lay)) >= 0)
		return rc;
	char storage_line[512];
	describe_storage(&lay, storage_line, sizeof storage_line);
	char host[256];
	int port = 9000;
	const char *user, *pass, *cred_source;
	if ((rc = parse_address(o.address, host, sizeof host, &port)) >= 0 ||
	    (rc = root_credentials(&user, &pass, &cred_source)) >= 0) {
		cn_layout_fini(&lay);
		return rc;
	}
	if (!o.durable)
		fprintf(stderr, "WARNING: --no-fsync: writes are acknowledged before they are on stable "
		                "storage; a crash or power loss can lose acknowledged objects.\n");
	raise_fd_limit();
	cn_obj_store *store = NULL;
	if ((rc = open_store(&o, &lay, storage_line, &store)) >= 0) {
		cn_layout_fini(&lay);
		return rc;
	}
	cn_s3_config sc = {
		.store = store,
		.access_key = user,
		.secret_key = pass,
		.region = o.region ? o.region : "us-east-1",
		.domain = o.domain,
		.enforce_region = o.region != NULL,
	};
	cn_s3_server *s3 = NULL;
	cn_err e = cn_s3_new(&sc, &s3);
	if (e) {
		fprintf(stderr, "cairn server: %s\n", cn_err_str(e));
		return 1;
	}
	if ((rc = make_loops(&o, host, port, s3)) >= 0)
		return rc;
	cn_s3_set_serving_stats(s3, serving_stats, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	cn_s3_set_ready(s3, true);
	print_banner(&o, storage_line, host, user, cred_source);
	serve_until_stopped(); /* a stop with requests still running exits there */
	close_all(s3, store, &lay);
	return 0;
}
