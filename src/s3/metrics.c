/* s3/metrics.c: Prometheus metrics (DESIGN.md §1), at the paths and under the names MinIO
 * uses, so that existing scrape configs and dashboards find them:
 *
 *   GET /minio/v2/metrics/cluster   the deployment: drives online/offline, capacity (raw
 *                                   and usable), healing, S3 requests and traffic
 *   GET /minio/v2/metrics/node      this server: every drive's space and state, the
 *                                   process (memory, CPU, descriptors, uptime), S3 requests
 *
 * Text exposition format 0.0.4 (Content-Type: text/plain; version=0.0.4). Authentication as
 * MinIO's default (MINIO_PROMETHEUS_AUTH_TYPE=jwt): "Authorization: Bearer <token>", an HS512
 * JSON Web Token of a known access key (s3/jwt.c; `cairn admin prometheus generate` makes
 * one); CAIRN_PROMETHEUS_AUTH_TYPE=public (or MINIO_...) serves them without. A missing or
 * bad token is 403 AccessDenied (S3 XML), an unknown path under /minio/v2/metrics/ 404.
 * On the loop thread the request defers to a worker first: reading the state touches every
 * drive (statvfs), which may block.
 *
 * Counters come from the router (s3.c: count) as relaxed atomics; names cairn adds where
 * MinIO has none start with cairn_. */
#include "s3/s3_int.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *const api_names[] = {
#define X(name) #name,
	CN_S3_APIS(X)
#undef X
};

static unsigned long long ld(const unsigned long long *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void help(cn_buf *b, const char *name, const char *type, const char *text)
{
	cn_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static void metric(cn_buf *b, const char *name, const char *type, const char *text, double v)
{
	help(b, name, type, text);
	cn_buf_printf(b, "%s %.15g\n", name, v);
}

/* A label value: backslash, double quote and newline escaped (format 0.0.4). */
static void label_value(cn_buf *b, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			cn_buf_printf(b, "\\%c", *v);
		else if (*v == '\n')
			cn_buf_puts(b, "\\n");
		else
			cn_buf_append(b, v, 1);
	}
}

const double cn_s3_ttfb_bounds[CN_S3_TTFB_SLOTS - 1] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                         0.25,  0.5,   1.0,  2.5,   5.0,  10.0 };

static void s3_metrics(cn_s3_server *s, cn_buf *b)
{
	static const struct {
		const char *name, *text;
		size_t off;
	} per_api[] = {
		{ "minio_s3_requests_total", "Total number of S3 requests",
		  offsetof(cn_s3_api_counters, requests) },
		{ "minio_s3_requests_4xx_errors_total", "Total number of S3 requests answered 4xx",
		  offsetof(cn_s3_api_counters, errors_4xx) },
		{ "minio_s3_requests_5xx_errors_total", "Total number of S3 requests answered 5xx",
		  offsetof(cn_s3_api_counters, errors_5xx) },
	};
	for (size_t m = 0; m < sizeof per_api / sizeof per_api[0]; m++) {
		help(b, per_api[m].name, "counter", per_api[m].text);
		for (int a = 0; a < CN_S3_API__COUNT; a++) {
			unsigned long long v = ld((const unsigned long long *)((const char *)&s->api[a] + per_api[m].off));
			if (v)
				cn_buf_printf(b, "%s{api=\"%s\"} %llu\n", per_api[m].name, api_names[a], v);
		}
	}
	/* cumulative per bound, as MinIO's v2 exposition: a gauge per le, no _bucket suffix,
	 * le printed "%.3f", and a +Inf bucket */
	help(b, "minio_s3_requests_ttfb_seconds_distribution", "gauge",
	     "Distribution of the time to first byte across API calls");
	for (int a = 0; a < CN_S3_API__COUNT; a++) {
		unsigned long long sum = 0, v[CN_S3_TTFB_SLOTS];
		for (int k = 0; k < CN_S3_TTFB_SLOTS; k++)
			sum += v[k] = ld(&s->api[a].ttfb[k]);
		if (!sum)
			continue;
		unsigned long long cum = 0;
		for (int k = 0; k < CN_S3_TTFB_SLOTS; k++) {
			cum += v[k];
			if (k < CN_S3_TTFB_SLOTS - 1)
				cn_buf_printf(b, "minio_s3_requests_ttfb_seconds_distribution{api=\"%s\",le=\"%.3f\"} %llu\n",
				              api_names[a], cn_s3_ttfb_bounds[k], cum);
			else
				cn_buf_printf(b, "minio_s3_requests_ttfb_seconds_distribution{api=\"%s\",le=\"+Inf\"} %llu\n",
				              api_names[a], cum);
		}
	}
	help(b, "minio_s3_requests_errors_total", "counter", "Total number of S3 requests answered 4xx or 5xx");
	for (int a = 0; a < CN_S3_API__COUNT; a++) {
		unsigned long long v = ld(&s->api[a].errors_4xx) + ld(&s->api[a].errors_5xx);
		if (v)
			cn_buf_printf(b, "minio_s3_requests_errors_total{api=\"%s\"} %llu\n", api_names[a], v);
	}
	metric(b, "minio_s3_requests_inflight_total", "gauge", "Total number of S3 requests being served",
	       (double)ld(&s->inflight));
	if (s->serving_stats) {
		cn_s3_serving_stats v = { 0 };
		s->serving_stats(s->serving_ctx, &v);
		metric(b, "minio_s3_requests_waiting_total", "gauge",
		       "Number of S3 requests waiting for a worker", (double)v.queued);
	}
	metric(b, "minio_s3_requests_rejected_auth_total", "counter",
	       "Total number of S3 requests refused for their authentication", (double)ld(&s->rejected_auth));
	metric(b, "minio_s3_requests_rejected_invalid_total", "counter",
	       "Total number of S3 requests refused as invalid before any handler", (double)ld(&s->rejected_invalid));
	metric(b, "minio_s3_traffic_received_bytes", "counter", "Total number of S3 request body bytes received",
	       (double)ld(&s->rx_bytes));
	metric(b, "minio_s3_traffic_sent_bytes", "counter", "Total number of S3 response body bytes sent",
	       (double)ld(&s->tx_bytes));
}

static void cluster_metrics(const cn_obj_state *st, cn_buf *b)
{
	size_t online = 0;
	double raw_total = 0, raw_free = 0, usable_total = 0, usable_free = 0;
	unsigned n = st->set_size ? st->set_size : 1;
	double data_share = n > st->parity_standard ? (double)(n - st->parity_standard) / n : 1.0;
	for (size_t i = 0; i < st->ndrives; i++) {
		const cn_obj_drive_state *d = &st->drives[i];
		online += d->online;
		raw_total += (double)d->total;
		raw_free += (double)d->free;
	}
	usable_total = raw_total * data_share;
	usable_free = raw_free * data_share;
	metric(b, "minio_cluster_drive_online_total", "gauge", "Total drives online", (double)online);
	metric(b, "minio_cluster_drive_offline_total", "gauge", "Total drives offline",
	       (double)(st->ndrives - online));
	metric(b, "minio_cluster_drive_total", "gauge", "Total drives", (double)st->ndrives);
	metric(b, "minio_cluster_nodes_online_total", "gauge", "Total nodes online", 1);
	metric(b, "minio_cluster_nodes_offline_total", "gauge", "Total nodes offline", 0);
	metric(b, "minio_cluster_capacity_raw_total_bytes", "gauge", "Total capacity online in the cluster",
	       raw_total);
	metric(b, "minio_cluster_capacity_raw_free_bytes", "gauge", "Total free capacity online in the cluster",
	       raw_free);
	metric(b, "minio_cluster_capacity_usable_total_bytes", "gauge",
	       "Total usable capacity online in the cluster (raw times the data share of the standard parity)",
	       usable_total);
	metric(b, "minio_cluster_capacity_usable_free_bytes", "gauge",
	       "Total free usable capacity online in the cluster", usable_free);
	metric(b, "cairn_cluster_sets_total", "gauge", "Erasure sets", st->nsets);
	metric(b, "cairn_cluster_set_drive_count", "gauge", "Drives per erasure set", st->set_size);
	metric(b, "cairn_cluster_parity_standard", "gauge", "Parity drives per set, STANDARD class",
	       st->parity_standard);
	metric(b, "cairn_cluster_parity_rrs", "gauge", "Parity drives per set, REDUCED_REDUNDANCY class",
	       st->parity_rrs);
	metric(b, "minio_heal_objects_total", "counter",
	       "Objects scanned by the background scanner (its running scan, else its last)",
	       (double)st->scan.scanned);
	metric(b, "minio_heal_objects_heal_total", "counter",
	       "Objects healed by the background scanner (its running scan, else its last)",
	       (double)st->scan.healed);
	metric(b, "minio_heal_objects_errors_total", "counter",
	       "Objects the background scanner could not heal (its running scan, else its last)",
	       (double)st->scan.failed);
	metric(b, "cairn_heal_queued_total", "counter", "Objects queued for healing by reads", (double)st->heal_queued);
	metric(b, "cairn_heal_done_total", "counter", "Objects healed from the read queue", (double)st->heal_done);
	metric(b, "cairn_heal_scans_total", "counter", "Background scans finished", (double)st->scans);
	metric(b, "cairn_heal_scan_running", "gauge", "1 while a background scan runs", st->scan_running);
	metric(b, "cairn_record_cache_bytes", "gauge", "Bytes held by the record caches", (double)st->cache_bytes);
	metric(b, "cairn_record_cache_budget_bytes", "gauge", "Budget of the record caches", (double)st->cache_budget);
	metric(b, "cairn_record_cache_hits_total", "counter", "Record cache hits", (double)st->cache_hits);
	metric(b, "cairn_record_cache_misses_total", "counter", "Record cache misses", (double)st->cache_misses);
}

static void node_metrics(cn_s3_server *s, const cn_obj_state *st, cn_buf *b)
{
	static const struct {
		const char *name, *text;
		int what;
	} per_drive[] = {
		{ "minio_node_drive_total_bytes", "Total storage on a drive", 0 },
		{ "minio_node_drive_free_bytes", "Total free space left on a drive", 1 },
		{ "minio_node_drive_used_bytes", "Total storage used on a drive", 2 },
		{ "cairn_node_drive_online", "1 when the drive is online, 0 when offline or suspended", 3 },
		{ "cairn_node_drive_offline_events_total",
		  "Times the drive was taken offline (errors, stalls, its folder gone)", 4 },
		{ "cairn_node_drive_calls_refused_total",
		  "Calls that skipped the drive while 4 of its calls were late (hung?)", 5 },
	};
	for (size_t m = 0; m < sizeof per_drive / sizeof per_drive[0]; m++) {
		help(b, per_drive[m].name, per_drive[m].what >= 4 ? "counter" : "gauge", per_drive[m].text);
		for (size_t i = 0; i < st->ndrives; i++) {
			const cn_obj_drive_state *d = &st->drives[i];
			uint64_t v = per_drive[m].what == 0   ? d->total
			             : per_drive[m].what == 1 ? d->free
			             : per_drive[m].what == 2 ? (d->total > d->free ? d->total - d->free : 0)
			             : per_drive[m].what == 3 ? d->online
			             : per_drive[m].what == 4 ? d->outages
			                                      : d->refused;
			cn_buf_printf(b, "%s{drive=\"", per_drive[m].name);
			label_value(b, d->endpoint);
			cn_buf_printf(b, "\",pool=\"%u\",set=\"%u\",slot=\"%u\"} %llu\n", d->pool, d->set, d->slot,
			              (unsigned long long)v);
		}
	}
	struct rusage ru;
	double cpu = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	metric(b, "minio_node_process_cpu_total_seconds", "counter", "Total user and system CPU time spent in seconds", cpu);
	double rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		unsigned long long size = 0, res = 0;
		if (fscanf(f, "%llu %llu", &size, &res) == 2)
			rss = (double)res * (double)sysconf(_SC_PAGESIZE);
		fclose(f);
	}
	metric(b, "minio_node_process_resident_memory_bytes", "gauge", "Resident memory size in bytes", rss);
	size_t fds = 0;
	DIR *dir = opendir("/proc/self/fd");
	if (dir) {
		for (struct dirent *e; (e = readdir(dir));)
			fds += e->d_name[0] != '.';
		closedir(dir);
	}
	metric(b, "minio_node_file_descriptor_open_total", "gauge", "Total number of open file descriptors",
	       (double)(fds > 0 ? fds - 1 : 0)); /* less the one opendir holds */
	metric(b, "minio_node_process_starttime_seconds", "gauge",
	       "Start time for the server process since the epoch in seconds", (double)s->start_ms / 1000.0);
	metric(b, "minio_node_process_uptime_seconds", "gauge", "Uptime for the server process in seconds",
	       (double)(cn_now_ms() - s->start_ms) / 1000.0);
	if (s->serving_stats) {
		cn_s3_serving_stats v = { 0 };
		s->serving_stats(s->serving_ctx, &v);
		metric(b, "cairn_node_connections_open", "gauge", "Client connections open", (double)v.conns);
		metric(b, "cairn_node_workers", "gauge",
		       "Request worker threads (more start when all hang: requests wait, none finish)",
		       (double)v.workers);
		metric(b, "cairn_node_workers_max", "gauge", "What the worker pool may grow to",
		       (double)v.workers_max);
		metric(b, "cairn_node_workers_busy", "gauge",
		       "Workers running a request or lingering for the next on its connection", (double)v.busy);
	}
}

static const char *auth_message(cn_auth_err e)
{
	switch (e) {
	case CN_AUTH_ANONYMOUS:
		return "The metrics need \"Authorization: Bearer <token>\" (cairn admin prometheus generate), "
		       "or CAIRN_PROMETHEUS_AUTH_TYPE=public on the server.";
	case CN_AUTH_UNKNOWN_KEY:
		return "The token's access key is not known here.";
	case CN_AUTH_SIGNATURE_MISMATCH:
		return "The token's signature does not match its access key's secret.";
	case CN_AUTH_EXPIRED:
		return "The token has expired.";
	default:
		return "The bearer token is malformed (an HS512 JSON Web Token with sub and exp is expected).";
	}
}

static const char *lookup_secret(void *ctx, cn_str access_key)
{
	cn_s3_server *s = ctx;
	return cn_str_eq_c(access_key, s->cfg.access_key) ? s->cfg.secret_key : NULL;
}

/* Error reply: a minimal request context is enough for cn_s3_error. */
static void refuse(cn_s3_server *s, cn_http_exchange *x, cn_s3_code code, const char *msg)
{
	cn_s3_req r;
	cn_s3_req_init(&r, s, x);
	cn_s3_error(&r, code, msg);
}

bool cn_s3_metrics(cn_s3_server *s, cn_http_exchange *x, const cn_http_req *h)
{
	static const char prefix[] = "/minio/v2/metrics/";
	if (!cn_str_has_prefix(h->path, prefix))
		return false;
	cn_str what = { h->path.p + sizeof prefix - 1, h->path.len - (sizeof prefix - 1) };
	bool cluster = cn_str_eq_c(what, "cluster"), node = cn_str_eq_c(what, "node");
	if (!cluster && !node) {
		refuse(s, x, CN_S3_NoSuchKey, "No such metrics path: /minio/v2/metrics/cluster and "
		                                 "/minio/v2/metrics/node are served.");
		return true;
	}
	if (!cn_str_eq_c(h->method, "GET") && !cn_str_eq_c(h->method, "HEAD")) {
		refuse(s, x, CN_S3_MethodNotAllowed, NULL);
		return true;
	}
	if (!s->metrics_public) {
		const cn_str *authz = cn_http_req_header(h, "authorization");
		cn_auth_err ae = CN_AUTH_ANONYMOUS;
		char who[129];
		if (authz && authz->len > 7 && !strncasecmp(authz->p, "Bearer ", 7))
			ae = cn_jwt_verify((cn_str){ authz->p + 7, authz->len - 7 }, lookup_secret, s,
			                   cn_now_ms() / 1000, who);
		else if (authz && authz->len)
			ae = CN_AUTH_MALFORMED;
		if (ae != CN_AUTH_OK) {
			refuse(s, x, CN_S3_AccessDenied, auth_message(ae));
			return true;
		}
	}
	if (cn_http_defer(x))
		return true; /* the loop thread: again on a worker (statvfs of every drive) */
	cn_obj_state st;
	memset(&st, 0, sizeof st);
	cn_err e = cn_obj_get_state(s->cfg.store, &st);
	if (e) {
		refuse(s, x, CN_S3_InternalError, "The deployment's state could not be read.");
		return true;
	}
	cn_buf b;
	cn_buf_init(&b);
	if (cluster)
		cluster_metrics(&st, &b);
	else
		node_metrics(s, &st, &b);
	s3_metrics(s, &b);
	free(st.drives);
	cn_http_resp_start(x, 200);
	cn_http_resp_header(x, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	cn_http_resp_send(x, b.p, b.len);
	cn_buf_fini(&b);
	return true;
}
