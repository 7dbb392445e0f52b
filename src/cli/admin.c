/* cli/admin: `cairn admin info` and `cairn admin heal` — clients of the server's admin API
 * (src/s3/admin.c: GET /minio/admin/v3/info, POST /minio/admin/v3/heal[/BUCKET[/PREFIX]]),
 * signed with the root credentials through the project's S3 client library (src/client).
 *
 * heal reads the server's newline-delimited JSON progress stream line by line from a libcurl
 * write callback, shows a live one-line display ("\r" updates on a terminal, plain lines
 * otherwise) and a final report. Exit codes: 0 nothing failed; 1 some objects could not be
 * healed, or the heal stopped on a server-side error; 2 usage, connection, authentication or
 * request errors (one line on stderr), including a stream cut before its last line. */
#include "cli/cli.h"
#include "client/client.h"
#include "s3/auth.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES (1 << 20)  /* one ndjson line; longer is a broken stream */
#define ERROR_BODY_MAX (64 << 10) /* kept of an error response, for its message */

static void admin_usage(FILE *f)
{
	fprintf(f,
	        "usage: cairn admin info [--json] [--host H:P]\n"
	        "       cairn admin heal [--dry-run] [BUCKET[/PREFIX]] [--host H:P]\n"
	        "       cairn admin prometheus generate [--node] [--host H:P]\n"
	        "\n"
	        "  info    the deployment: layout, parity, every drive online, offline or suspended\n"
	        "          (another slot's format, or a disk not mounted) with its free space,\n"
	        "          background healing counters, the record cache (--json: the server's\n"
	        "          raw JSON)\n"
	        "  heal    rebuild missing or corrupt copies of every object (or of BUCKET, or of\n"
	        "          BUCKET/PREFIX); --dry-run only counts the damaged ones. Exit 0 when nothing\n"
	        "          failed, 1 when some objects could not be healed, 2 on usage or connection errors\n"
	        "  prometheus generate\n"
	        "          print a Prometheus scrape config for the server's metrics (/minio/v2/metrics/\n"
	        "          cluster, or node with --node) with a bearer token signed by the credentials\n"
	        "          below, valid for 100 years (as mc admin prometheus generate); no request is made\n"
	        "\n"
	        "flags: --host H:P (default 127.0.0.1:9000, or CAIRN_ADMIN_HOST; http(s):// allowed)\n"
	        "       --access-key K --secret-key S (default CAIRN_ROOT_USER/CAIRN_ROOT_PASSWORD,\n"
	        "       then MINIO_ROOT_USER/MINIO_ROOT_PASSWORD, then the server's default minioadmin)\n"
	        "       --insecure (do not verify TLS certificates)\n");
}

static void human_bytes(uint64_t n, char *out, size_t cap)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (n < 1024) {
		snprintf(out, cap, "%llu B", (unsigned long long)n);
		return;
	}
	double v = (double)n;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024;
		u++;
	}
	snprintf(out, cap, "%.1f %s", v, units[u]);
}

static void human_ms(int64_t ms, char *out, size_t cap)
{
	if (ms < 60000)
		snprintf(out, cap, "%.1fs", (double)ms / 1000);
	else if (ms < 3600000)
		snprintf(out, cap, "%lldm%02llds", (long long)(ms / 60000), (long long)(ms / 1000 % 60));
	else
		snprintf(out, cap, "%lldh%02lldm", (long long)(ms / 3600000), (long long)(ms / 60000 % 60));
}

static uint64_t jget(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static const char *jstr(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ---- one request ------------------------------------------------------------------------- */

typedef struct admin_opts {
	cn_client *client;
	const char *host;
	bool json, dry_run;
	const char *target;  /* heal: BUCKET[/PREFIX] or NULL */
} admin_opts;

typedef struct stream {
	CURL *e;
	long status;
	cn_buf pending;      /* bytes of the current, incomplete line (or an error body) */
	bool (*on_line)(struct stream *s, const char *line, size_t len);
	void *ctx;
	bool broken;         /* a line over LINE_MAX_BYTES or not JSON */
} stream;

static size_t on_write(char *p, size_t sz, size_t n, void *ud)
{
	stream *s = ud;
	size_t len = sz * n;
	if (!s->status)
		curl_easy_getinfo(s->e, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status != 200 || !s->on_line) {
		size_t keep = s->pending.len < ERROR_BODY_MAX ? ERROR_BODY_MAX - s->pending.len : 0;
		if (keep && cn_buf_append(&s->pending, p, len < keep ? len : keep))
			return 0;
		return len;
	}
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		if (p[i] != '\n')
			continue;
		const char *line = p + start;
		size_t ll = i - start;
		if (s->pending.len) {
			if (cn_buf_append(&s->pending, line, ll))
				return 0;
			line = s->pending.p;
			ll = s->pending.len;
		}
		bool ok = ll == 0 || s->on_line(s, line, ll);
		s->pending.len = 0;
		if (!ok) {
			s->broken = true;
			return 0;
		}
		start = i + 1;
	}
	if (start < len) {
		if (s->pending.len + (len - start) > LINE_MAX_BYTES) {
			s->broken = true;
			return 0;
		}
		if (cn_buf_append(&s->pending, p + start, len - start))
			return 0;
	}
	return len;
}

/* Runs one request; on a transport failure writes the reason into err and returns 2 (the
 * caller prints it once its progress line is cleared). The body goes to s->on_line line by
 * line (status 200) or into s->pending (other statuses). */
static int run_request(admin_opts *o, const char *method, const char *key, const cn_kv *query,
                       size_t nquery, long timeout_ms, stream *s, char *err, size_t errlen)
{
	CURL *e = curl_easy_init();
	if (!e) {
		snprintf(err, errlen, "cannot start libcurl");
		return 2;
	}
	cn_client_signer sg;
	cn_client_signer_init(&sg);
	cn_client_hdrs h;
	cn_client_hdrs_init(&h);
	cn_client_req rq = {
		.method = method, .bucket = "minio", .key = key, .query = query, .nquery = nquery,
		.body_len = -1,
	};
	int rc = 0;
	char ebuf[CURL_ERROR_SIZE] = "";
	if (cn_client_prepare(o->client, &sg, e, &rq, &h)) {
		snprintf(err, errlen, "cannot build the request (BUCKET/PREFIX over 1,000 bytes?)");
		rc = 2;
		goto out;
	}
	s->e = e;
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
	CURLcode cr = curl_easy_perform(e);
	if (!s->status)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &s->status);
	if (cr != CURLE_OK && !(cr == CURLE_WRITE_ERROR && s->broken)) {
		snprintf(err, errlen, "%s: %s", cn_client_host_url(o->client, 0),
		         ebuf[0] ? ebuf : curl_easy_strerror(cr));
		rc = 2;
	} else if (s->broken) {
		snprintf(err, errlen, "the server's answer is not the expected JSON stream");
		rc = 2;
	}
out:
	cn_client_hdrs_fini(&h);
	curl_easy_cleanup(e);
	return rc;
}

/* Prints an error response in one line: the S3 XML Code and Message when present. */
static int report_http_error(const char *cmd, stream *s)
{
	char code[128] = "", msg[512] = "", bucket[128] = "";
	const char *body = s->pending.p ? s->pending.p : "";
	cn_client_xml_text(body, s->pending.len, "Code", code, sizeof code);
	cn_client_xml_text(body, s->pending.len, "Message", msg, sizeof msg);
	cn_client_xml_text(body, s->pending.len, "BucketName", bucket, sizeof bucket);
	if (!strcmp(bucket, "minio"))
		bucket[0] = 0; /* the admin API's own path, not the user's bucket */
	if (code[0])
		fprintf(stderr, "cairn admin %s: HTTP %ld %s: %s%s%s%s\n", cmd, s->status, code, msg,
		        bucket[0] ? " (bucket " : "", bucket, bucket[0] ? ")" : "");
	else
		fprintf(stderr, "cairn admin %s: HTTP %ld from the server\n", cmd, s->status);
	if (s->status == 403)
		fprintf(stderr, "cairn admin %s: check --access-key/--secret-key or CAIRN_ROOT_USER/"
		                "CAIRN_ROOT_PASSWORD\n", cmd);
	return 2;
}

/* ---- info -------------------------------------------------------------------------------- */

static int admin_info(admin_opts *o)
{
	stream s = { 0 };
	cn_buf_init(&s.pending);
	char err[CURL_ERROR_SIZE + 300];
	int rc = run_request(o, "GET", "admin/v3/info", NULL, 0, 30000, &s, err, sizeof err);
	if (rc) {
		fprintf(stderr, "cairn admin info: %s\n", err);
		goto out;
	}
	if (s.status != 200) {
		rc = report_http_error("info", &s);
		goto out;
	}
	if (o->json) {
		fwrite(s.pending.p ? s.pending.p : "", 1, s.pending.len, stdout);
		if (!s.pending.len || s.pending.p[s.pending.len - 1] != '\n')
			putchar('\n');
		goto out;
	}
	json_error_t jerr;
	json_t *root = json_loadb(s.pending.p ? s.pending.p : "", s.pending.len, 0, &jerr);
	if (!json_is_object(root)) {
		fprintf(stderr, "cairn admin info: the server's answer is not JSON (%s)\n", jerr.text);
		json_decref(root);
		rc = 2;
		goto out;
	}
	const char *dep = jstr(root, "deploymentID");
	printf("deployment  %s\n", dep ? dep : "?");
	uint64_t sets = jget(root, "sets"), pools = jget(root, "pools");
	printf("layout      %llu pool%s, %llu set%s of %llu drive%s, parity EC:%llu (STANDARD), EC:%llu (REDUCED_REDUNDANCY)\n",
	       (unsigned long long)pools, pools == 1 ? "" : "s", (unsigned long long)sets,
	       sets == 1 ? "" : "s", (unsigned long long)jget(root, "setDriveCount"),
	       jget(root, "setDriveCount") == 1 ? "" : "s",
	       (unsigned long long)jget(root, "standardSCParity"),
	       (unsigned long long)jget(root, "rrSCParity"));
	printf("drives      %llu online, %llu offline\n", (unsigned long long)jget(root, "onlineDrives"),
	       (unsigned long long)jget(root, "offlineDrives"));
	json_t *heal = json_object_get(root, "heal");
	printf("healing     %llu queued by reads, %llu healed in the background\n",
	       (unsigned long long)jget(heal, "queued"), (unsigned long long)jget(heal, "done"));
	json_t *scan = json_object_get(heal, "scan");
	const char *started = jstr(scan, "started"), *finished = jstr(scan, "finished");
	bool running = json_is_true(json_object_get(scan, "running"));
	if (running || finished) {
		char by[32];
		human_bytes(jget(scan, "bytes"), by, sizeof by);
		printf("heal scan   %s %s: %llu versions scanned, %llu healed, %llu failed, %s written, "
		       "%llu orphan data and %llu dangling versions removed\n",
		       running ? "running since" : "last finished", running ? (started ? started : "?") : finished,
		       (unsigned long long)jget(scan, "scanned"), (unsigned long long)jget(scan, "healed"),
		       (unsigned long long)jget(scan, "failed"), by, (unsigned long long)jget(scan, "orphans"),
		       (unsigned long long)jget(scan, "dangling"));
	} else if (scan) {
		printf("heal scan   none yet\n");
	}
	json_t *rcache = json_object_get(root, "recordCache");
	if (rcache) {
		uint64_t hits = jget(rcache, "hits"), misses = jget(rcache, "misses");
		char held[32], budget[32];
		human_bytes(jget(rcache, "bytes"), held, sizeof held);
		human_bytes(jget(rcache, "budget"), budget, sizeof budget);
		if (jget(rcache, "budget"))
			printf("cache       %s of records in %s, %llu hits, %llu misses (%.0f %% hits)\n", held, budget,
			       (unsigned long long)hits, (unsigned long long)misses,
			       hits + misses ? 100.0 * (double)hits / (double)(hits + misses) : 0.0);
		else
			printf("cache       off (CAIRN_RECORD_CACHE_MB=0)\n");
	}
	printf("\n%-4s %-4s %-4s %-8s %10s %10s  %s\n", "POOL", "SET", "SLOT", "STATE", "FREE", "TOTAL",
	       "ENDPOINT");
	json_t *drives = json_object_get(root, "drives");
	size_t i;
	json_t *d;
	json_array_foreach(drives, i, d) {
		char fr[32], tot[32];
		human_bytes(jget(d, "freeSpace"), fr, sizeof fr);
		human_bytes(jget(d, "totalSpace"), tot, sizeof tot);
		const char *state = jstr(d, "state"), *ep = jstr(d, "endpoint");
		bool online = state && !strcmp(state, "online");
		printf("%-4llu %-4llu %-4llu %-8s %10s %10s  %s\n", (unsigned long long)jget(d, "pool"),
		       (unsigned long long)jget(d, "set"), (unsigned long long)jget(d, "slot"),
		       state ? state : "?", online ? fr : "-", online ? tot : "-", ep ? ep : "?");
	}
	json_decref(root);
out:
	cn_buf_fini(&s.pending);
	return rc;
}

/* ---- heal -------------------------------------------------------------------------------- */

typedef struct heal_view {
	bool tty, dry_run;
	bool shown;          /* a "\r" progress line is on the screen */
	int64_t start_ms;
	uint64_t scanned, healed, failed, drives, orphans, dangling, buckets;
	uint64_t bytes;
	bool done;
	char error[256];
} heal_view;

static int term_width(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

static bool heal_line(stream *s, const char *line, size_t len)
{
	heal_view *v = s->ctx;
	json_error_t jerr;
	json_t *o = json_loadb(line, len, 0, &jerr);
	if (!json_is_object(o)) {
		json_decref(o);
		return false;
	}
	v->scanned = jget(o, "scanned");
	v->healed = jget(o, "healed");
	v->failed = jget(o, "failed");
	v->drives = jget(o, "drivesHealed");
	v->bytes = jget(o, "bytes");
	v->orphans = jget(o, "orphans");
	v->dangling = jget(o, "dangling");
	v->buckets = jget(o, "danglingBuckets");
	if (json_is_true(json_object_get(o, "done"))) {
		v->done = true;
		const char *err = jstr(o, "error");
		if (err)
			snprintf(v->error, sizeof v->error, "%s", err);
		json_decref(o);
		return true;
	}
	const char *obj = jstr(o, "object");
	if (!v->tty && !obj) {
		json_decref(o); /* the opening line (nothing looked at yet) only matters on a terminal */
		return true;
	}
	char b[32], t[32], text[512];
	human_bytes(v->bytes, b, sizeof b);
	human_ms(cn_mono_ms() - v->start_ms, t, sizeof t);
	int n = snprintf(text, sizeof text, "%s: %llu scanned, %llu %s, %llu failed, %s rewritten",
	                 t, (unsigned long long)v->scanned, (unsigned long long)v->healed,
	                 v->dry_run ? "damaged" : "healed", (unsigned long long)v->failed, b);
	if (v->orphans && n > 0 && (size_t)n < sizeof text)
		n += snprintf(text + n, sizeof text - (size_t)n, ", %llu orphan data folder%s %s",
		              (unsigned long long)v->orphans, v->orphans == 1 ? "" : "s",
		              v->dry_run ? "found" : "removed");
	if (v->dangling && n > 0 && (size_t)n < sizeof text)
		n += snprintf(text + n, sizeof text - (size_t)n, ", %llu dangling version%s %s",
		              (unsigned long long)v->dangling, v->dangling == 1 ? "" : "s",
		              v->dry_run ? "found" : "removed");
	if (obj && n > 0 && (size_t)n < sizeof text)
		snprintf(text + n, sizeof text - (size_t)n, " — %s", obj);
	if (v->tty) {
		int w = term_width() - 1;
		/* cut at the terminal's width without splitting a UTF-8 sequence */
		size_t cut = strlen(text), cols = 0, i = 0;
		for (; i < cut && (int)cols < w; i++)
			if (((unsigned char)text[i] & 0xc0) != 0x80)
				cols++;
		while (i < cut && ((unsigned char)text[i] & 0xc0) == 0x80)
			i++;
		if ((int)cols >= w)
			text[i] = 0;
		printf("\r%s\033[K", text);
		v->shown = true;
	} else {
		printf("heal: %s\n", text);
	}
	fflush(stdout);
	json_decref(o);
	return true;
}

static int admin_heal(admin_opts *o)
{
	cn_buf key;
	cn_buf_init(&key);
	if (cn_buf_puts(&key, "admin/v3/heal") ||
	    (o->target && (cn_buf_puts(&key, "/") || cn_buf_puts(&key, o->target)))) {
		cn_buf_fini(&key);
		fprintf(stderr, "cairn admin heal: out of memory\n");
		return 2;
	}
	cn_kv q = { (char *)"dryRun", (char *)(o->dry_run ? "true" : "false") };
	heal_view v = { .tty = isatty(STDOUT_FILENO) == 1, .dry_run = o->dry_run, .start_ms = cn_mono_ms() };
	stream s = { .on_line = heal_line, .ctx = &v };
	cn_buf_init(&s.pending);
	char err[CURL_ERROR_SIZE + 300];
	int rc = run_request(o, "POST", key.p, &q, 1, 0, &s, err, sizeof err);
	if (v.shown) {
		printf("\r\033[K");
		fflush(stdout);
	}
	if (rc) {
		fprintf(stderr, "cairn admin heal: %s\n", err);
		goto out;
	}
	if (s.status != 200) {
		rc = report_http_error("heal", &s);
		goto out;
	}
	if (!v.done) {
		fprintf(stderr, "cairn admin heal: the server closed the stream before the heal finished "
		                "(%llu objects scanned so far)\n", (unsigned long long)v.scanned);
		rc = 2;
		goto out;
	}
	char b[32], t[32];
	human_bytes(v.bytes, b, sizeof b);
	human_ms(cn_mono_ms() - v.start_ms, t, sizeof t);
	printf("heal %s%s%s%s\n", v.error[0] ? "stopped" : "complete", o->dry_run ? " (dry run)" : "",
	       o->target ? " of " : "", o->target ? o->target : "");
	printf("  objects scanned         %llu\n", (unsigned long long)v.scanned);
	printf("  objects %-15s %llu\n", o->dry_run ? "damaged" : "healed", (unsigned long long)v.healed);
	printf("  objects failed          %llu\n", (unsigned long long)v.failed);
	printf("  drive copies rewritten  %llu\n", (unsigned long long)v.drives);
	printf("  bytes rewritten         %s\n", b);
	printf("  orphan data %-11s %llu\n", o->dry_run ? "found" : "removed",
	       (unsigned long long)v.orphans);
	printf("  dangling versions %-5s %llu\n", o->dry_run ? "found" : "removed",
	       (unsigned long long)v.dangling);
	printf("  dangling buckets %-6s %llu\n", o->dry_run ? "found" : "removed",
	       (unsigned long long)v.buckets);
	printf("  elapsed                 %s\n", t);
	if (v.error[0])
		fprintf(stderr, "cairn admin heal: the server stopped the heal: %s\n", v.error);
	rc = v.failed || v.error[0] ? 1 : 0;
out:
	fflush(stdout);
	cn_buf_fini(&s.pending);
	cn_buf_fini(&key);
	return rc;
}

/* ---- entry ------------------------------------------------------------------------------- */

static bool is_url(const char *a)
{
	return !strncmp(a, "http://", 7) || !strncmp(a, "https://", 8);
}

/* `cairn admin prometheus generate`: the scrape config, made locally (MinIO's mc does the
 * same): the token is an HS512 JWT of the access key (s3/jwt.c), which the server checks. */
static int admin_prometheus(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "generate")) {
		fprintf(stderr, "cairn admin prometheus: usage: cairn admin prometheus generate [--node] [--host H:P]\n");
		return 2;
	}
	const char *host = getenv("CAIRN_ADMIN_HOST");
	const char *ak = NULL, *sk = NULL;
	bool node = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = !strcmp(a, "--host") ? &host
		                   : !strcmp(a, "--access-key") ? &ak
		                   : !strcmp(a, "--secret-key") ? &sk : NULL;
		if (dst && i + 1 < argc) {
			*dst = argv[++i];
		} else if (!strcmp(a, "--node")) {
			node = true;
		} else if (a[0] != '-' && is_url(a)) {
			host = a;
		} else {
			fprintf(stderr, "cairn admin prometheus generate: unexpected argument '%s'\n", a);
			return 2;
		}
	}
	if (!host || !host[0])
		host = "127.0.0.1:9000";
	if (!ak != !sk) {
		fprintf(stderr, "cairn admin prometheus generate: give both --access-key and --secret-key\n");
		return 2;
	}
	if (!ak) {
		ak = cn_env2("CAIRN_ROOT_USER", "MINIO_ROOT_USER");
		sk = cn_env2("CAIRN_ROOT_PASSWORD", "MINIO_ROOT_PASSWORD");
		if (!ak || !sk)
			ak = sk = "minioadmin";
	}
	const char *scheme = "http";
	if (!strncmp(host, "https://", 8)) {
		scheme = "https";
		host += 8;
	} else if (!strncmp(host, "http://", 7)) {
		host += 7;
	}
	size_t hl = strcspn(host, "/");
	char token[CN_JWT_MAX];
	int64_t exp = (int64_t)time(NULL) + 100LL * 365 * 24 * 3600;
	if (cn_jwt_sign(ak, sk, exp, token, sizeof token)) {
		fprintf(stderr, "cairn admin prometheus generate: cannot make a token for access key '%s'\n", ak);
		return 2;
	}
	printf("scrape_configs:\n"
	       "- job_name: cairn-job\n"
	       "  bearer_token: %s\n"
	       "  metrics_path: /minio/v2/metrics/%s\n"
	       "  scheme: %s\n"
	       "  static_configs:\n"
	       "  - targets: ['%.*s']\n",
	       token, node ? "node" : "cluster", scheme, (int)hl, host);
	return 0;
}

int cn_cli_admin(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
		admin_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? 2 : 0;
	}
	const char *cmd = argv[0];
	if (!strcmp(cmd, "prometheus"))
		return admin_prometheus(argc, argv);
	bool info = !strcmp(cmd, "info"), heal = !strcmp(cmd, "heal");
	if (!info && !heal) {
		fprintf(stderr, "cairn admin: unknown command '%s' (info, heal, prometheus)\n", cmd);
		return 2;
	}
	admin_opts o = { 0 };
	const char *host = getenv("CAIRN_ADMIN_HOST");
	const char *ak = NULL, *sk = NULL;
	bool insecure = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = !strncmp(a, "--host", 6) ? &host
		                   : !strncmp(a, "--access-key", 12) ? &ak
		                   : !strncmp(a, "--secret-key", 12) ? &sk : NULL;
		size_t nl = dst == &host ? 6 : dst ? 12 : 0;
		if (dst && (a[nl] == 0 || a[nl] == '=')) {
			if (a[nl] == '=')
				*dst = a + nl + 1;
			else if (i + 1 < argc)
				*dst = argv[++i];
			else {
				fprintf(stderr, "cairn admin %s: %s needs a value\n", cmd, a);
				return 2;
			}
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			admin_usage(stdout);
			return 0;
		} else if (info && !strcmp(a, "--json")) {
			o.json = true;
		} else if (heal && !strcmp(a, "--dry-run")) {
			o.dry_run = true;
		} else if (!strcmp(a, "--insecure")) {
			insecure = true;
		} else if (a[0] != '-' && is_url(a)) {
			host = a;
		} else if (heal && a[0] != '-' && !o.target) {
			o.target = a;
		} else {
			fprintf(stderr, "cairn admin %s: unexpected argument '%s' (try cairn admin --help)\n", cmd, a);
			return 2;
		}
	}
	if (o.target) {
		while (o.target[0] == '/')
			o.target++;
		if (!o.target[0])
			o.target = NULL;
	}
	if (!host || !host[0])
		host = "127.0.0.1:9000";
	if (strchr(host, ',')) {
		fprintf(stderr, "cairn admin %s: --host takes one server\n", cmd);
		return 2;
	}
	if (!ak != !sk) {
		fprintf(stderr, "cairn admin %s: give both --access-key and --secret-key\n", cmd);
		return 2;
	}
	if (!ak) {
		ak = cn_env2("CAIRN_ROOT_USER", "MINIO_ROOT_USER");
		sk = cn_env2("CAIRN_ROOT_PASSWORD", "MINIO_ROOT_PASSWORD");
		if (!ak || !sk)
			ak = sk = "minioadmin"; /* the server's documented default */
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	cn_client_cfg cc = {
		.hosts = host, .access_key = ak, .secret_key = sk, .insecure = insecure,
		.connect_timeout_ms = 5000,
	};
	if (cn_client_new(&cc, &o.client)) {
		fprintf(stderr, "cairn admin %s: bad --host '%s'\n", cmd, host);
		curl_global_cleanup();
		return 2;
	}
	o.host = host;
	int rc = info ? admin_info(&o) : admin_heal(&o);
	cn_client_free(o.client);
	curl_global_cleanup();
	return rc;
}
