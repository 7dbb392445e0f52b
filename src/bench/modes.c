/* bench/modes: a run, per mode (put, get, delete, stat, list, mixed, multipart, loop,
 * sweep): create the bucket, prepare (upload what the measured phase reads), measure,
 * report, write benchdata, clean up (unless --noclear). */
#include "bench/run_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
/* the runtime-dispatched AVX2/AVX-512 XXH3 (same hash; libxxhash's plain entry points are
 * its SSE2 build, ~16x slower here): --verify hashes every byte a GET receives */
#include <xxh_x86dispatch.h>
#endif

static bool make_bucket(eng *g)
{
	cn_client_req r = { .method = "PUT", .bucket = g->cfg->bucket, .body_len = -1 };
	cn_buf resp;
	cn_buf_init(&resp);
	long st = 0;
	char err[256] = "";
	cn_err e = cn_client_do(g->client, &r, NULL, 0, &resp, &st, err, sizeof err);
	char code[128] = "";
	if (resp.len)
		cn_client_xml_text(resp.p, resp.len, "Code", code, sizeof code);
	bool ok = !e && (st == 200 || (st == 409 && (!strcmp(code, "BucketAlreadyOwnedByYou") ||
	                                             !strcmp(code, "BucketAlreadyExists"))));
	if (!ok) {
		if (e)
			fprintf(stderr, "cairn bench: cannot reach %s: %s\n", cn_client_host_url(g->client, 0), err);
		else
			fprintf(stderr, "cairn bench: creating bucket %s: HTTP %ld %s\n", g->cfg->bucket, st, code);
	}
	cn_buf_fini(&resp);
	return ok;
}

/* Runs a phase that is not measured (prepare, cleanup: --autoterm does not end it) under
 * label; its errors and first error message in *errs and *first. */
static cn_err run_unmeasured(eng *g, phase *ph, progress *pr, const char *label, uint64_t *errs,
                             const char **first)
{
	pr->label = label;
	bool autoterm = pr->autoterm;
	pr->autoterm = false;
	cn_err e = cn_bench_run_phase(g, ph, pr);
	pr->autoterm = autoterm;
	uint64_t ops;
	cn_bench_phase_counts(g, &ops, errs, first);
	return e;
}

static bool prepare_objects(eng *g, uint64_t n, progress *pr)
{
	g->nobj = n;
	g->state = calloc(n ? n : 1, 1);
	if (!g->state)
		return false;
	if (g->cfg->verify) {
		g->hash = calloc(n ? n : 1, sizeof *g->hash);
		if (!g->hash)
			return false;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t size, off;
			cn_bench_obj_shape(g, i, &size, &off);
			g->hash[i] = XXH3_64bits(g->payload + off, (size_t)size);
		}
	}
	if (!n)
		return true;
	phase ph;
	cn_bench_phase_init(&ph, GEN_PUT_TABLE);
	ph.count = n;
	if (!g->cfg->quiet)
		fprintf(stderr, "cairn bench: preparing %" PRIu64 " objects under %s/%s\n", n, g->cfg->bucket, g->prefix);
	uint64_t errs;
	const char *first;
	cn_err e = run_unmeasured(g, &ph, pr, "prepare", &errs, &first);
	if (e || errs) {
		fprintf(stderr, "cairn bench: prepare failed: %" PRIu64 " of %" PRIu64 " uploads failed (first: %s)\n", errs, n,
		        first ? first : cn_err_str(e));
		return false;
	}
	return true;
}

static void cleanup(eng *g, uint64_t n, progress *pr)
{
	if (g->cfg->noclear || !n)
		return;
	phase ph;
	cn_bench_phase_init(&ph, GEN_DELETE_TABLE);
	ph.count = n;
	ph.cleanup = true;
	ph.deadline = cn_mono_ns() + 600 * NS;
	uint64_t errs;
	const char *first;
	cn_err e = run_unmeasured(g, &ph, pr, "cleanup", &errs, &first);
	if (e || errs)
		fprintf(stderr, "cairn bench: cleanup: %" PRIu64 " deletes failed (first: %s)\n", errs, first ? first : "");
}

static int cmp_rec(const void *x, const void *y)
{
	const cn_bench_rec *a = x, *b = y;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
}

/* Runs ph as a measured phase. fresh: a new run (t0 now, empty per-worker accumulators and
 * records); otherwise the phase adds to the previous one (multipart: upload, then GET). */
static cn_err measure_phase(eng *g, phase *ph, progress *pr, bool fresh)
{
	for (int t = 0; t < g->nthreads && fresh; t++) {
		worker *w = &g->w[t];
		cn_bench_acc_fini(&w->acc);
		cn_err e = cn_bench_acc_init(&w->acc, g->hosts, g->nhosts, g->cfg->concurrent);
		if (e)
			return e;
		w->nrec = 0;
	}
	if (g->cfg->agent_fd >= 0 && !g->synced) {
		int64_t start;
		if (cn_bench_agent_sync(g->cfg->agent_fd, &start))
			return CN_ERR_IO;
		g->synced = true;
		int64_t wait = start - cn_bench_wall_ns();
		if (wait > 60 * NS)
			wait = 60 * NS;
		if (wait > 0) {
			struct timespec ts = { (time_t)(wait / NS), (long)(wait % NS) };
			nanosleep(&ts, NULL);
		}
	}
	ph->record = true;
	int64_t now = cn_mono_ns();
	if (fresh) {
		g->t0 = now;
		g->start_unix_ns = cn_bench_wall_ns();
	}
	if (!ph->deadline && g->cfg->duration_ns)
		ph->deadline = now + g->cfg->duration_ns;
	pr->label = "measure";
	return cn_bench_run_phase(g, ph, pr);
}

static cn_err merge_workers(eng *g, cn_bench_acc *acc)
{
	cn_err e = CN_OK;
	for (int t = 0; t < g->nthreads && !e; t++)
		e = cn_bench_acc_merge(acc, &g->w[t].acc);
	return e;
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

/* A fresh measured phase merged into acc; the client's own CPU cost goes to stderr (not into
 * the report: the report is what benchdata reproduces). */
static cn_err measure(eng *g, phase *ph, progress *pr, cn_bench_acc *acc)
{
	double c0 = cpu_seconds();
	cn_err e = measure_phase(g, ph, pr, true);
	double cpu = cpu_seconds() - c0;
	uint64_t ops, bytes, errs;
	cn_bench_sum_counters(g, &ops, &bytes, &errs);
	if (!g->cfg->quiet && !e)
		fprintf(stderr, "cairn bench: client CPU %.2f s for the measured phase (%.3f s/GiB, %.1f µs/request)\n", cpu,
		        bytes ? cpu / ((double)bytes / 1073741824.0) : 0.0, ops ? cpu * 1e6 / (double)ops : 0.0);
	return e ? e : merge_workers(g, acc);
}

static cn_err collect_recs(eng *g, cn_bench_rec **out, size_t *n)
{
	size_t tot = 0;
	for (int t = 0; t < g->nthreads; t++)
		tot += g->w[t].nrec;
	cn_bench_rec *r = malloc((tot ? tot : 1) * sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	size_t k = 0;
	for (int t = 0; t < g->nthreads; t++) {
		memcpy(r + k, g->w[t].recs, g->w[t].nrec * sizeof *r);
		k += g->w[t].nrec;
	}
	if (tot > 1)
		qsort(r, tot, sizeof *r, cmp_rec);
	*out = r;
	*n = tot;
	return CN_OK;
}

static const char *mode_name(cn_bench_mode m)
{
	static const char *const n[] = { "put", "get", "delete", "stat", "list", "mixed", "multipart", "loop" };
	return n[m];
}

/* Agent side: every record as a CSV line on the driver's socket, then "end". */
static cn_err stream_recs(int fd, eng *g, const cn_bench_rec *r, size_t n)
{
	cn_buf b;
	cn_buf_init(&b);
	cn_err e = cn_buf_printf(&b, "records %zu\n", n);
	for (size_t i = 0; i < n && !e; i++) {
		e = cn_bench_rec_csv(&b, &r[i], g->hosts[r[i].host]);
		if (!e)
			e = cn_buf_append(&b, "\n", 1);
	}
	if (!e)
		e = cn_buf_puts(&b, "end\n");
	for (size_t off = 0; !e && off < b.len;) {
		ssize_t k = send(fd, b.p + off, b.len - off, MSG_NOSIGNAL);
		if (k <= 0)
			e = CN_ERR_IO;
		else
			off += (size_t)k;
	}
	cn_buf_fini(&b);
	return e;
}

/* After the measured phase: report (text or JSON), benchdata, agent streaming. Returns the
 * number of errors counted (for the exit code) or -1 on a failure of its own. */
static int64_t finish_report(eng *g, cn_bench_acc *acc, progress *pr, int64_t start_unix_ns)
{
	const cn_bench_cfg *c = g->cfg;
	int64_t errors = 0;
	for (int o = 0; o < CN_BOP__COUNT; o++)
		errors += (int64_t)acc->op[o].errors;
	cn_bench_rec *recs = NULL;
	size_t nrec = 0;
	if (g->keep_recs && collect_recs(g, &recs, &nrec)) {
		fprintf(stderr, "cairn bench: out of memory collecting records\n");
		return -1;
	}
	if (c->agent_fd >= 0) {
		cn_err e = stream_recs(c->agent_fd, g, recs, nrec);
		free(recs);
		return e ? -1 : errors;
	}
	if (pr->stopped_early && !c->quiet)
		fprintf(stderr, "cairn bench: throughput stable within %.1f%% for %.0fs: stopped after %.1fs (--autoterm)\n",
		        c->autoterm_pct, (double)c->autoterm_dur_ns / NS, pr->stopped_at);
	if (c->json) {
		char *j = cn_bench_report_json(acc, NULL);
		if (j) {
			printf("%s\n", j);
			free(j);
		}
	} else {
		if (!cn_bench_report_all(acc, NULL, stdout))
			printf("No requests were measured.\n");
	}
	fflush(stdout);
	if (c->benchdata) {
		cn_bench_meta m = { .concurrency = c->concurrent, .hosts = g->hosts, .nhosts = g->nhosts,
		                    .start_unix_ns = start_unix_ns };
		snprintf(m.mode, sizeof m.mode, "%s", mode_name(c->mode));
		if (cn_bench_data_write(c->benchdata, &m, recs, nrec)) {
			fprintf(stderr, "cairn bench: cannot write %s\n", c->benchdata);
			errors = -1;
		} else if (!c->quiet) {
			fprintf(stderr, "cairn bench: %zu requests written to %s\n", nrec, c->benchdata);
		}
	}
	free(recs);
	return errors;
}

static bool mp_initiate(eng *g)
{
	char key[600];
	snprintf(key, sizeof key, "%smultipart.rnd", g->prefix);
	cn_kv q[] = { { (char *)"uploads", NULL } };
	cn_client_req r = { .method = "POST", .bucket = g->cfg->bucket, .key = key, .query = q, .nquery = 1, .body_len = -1 };
	cn_buf resp;
	cn_buf_init(&resp);
	long st = 0;
	char err[256] = "";
	cn_err e = cn_client_do(g->client, &r, NULL, 0, &resp, &st, err, sizeof err);
	bool ok = !e && st == 200 && resp.len &&
	          cn_client_xml_text(resp.p, resp.len, "UploadId", g->upload_id, sizeof g->upload_id) && g->upload_id[0];
	if (!ok)
		fprintf(stderr, "cairn bench: CreateMultipartUpload failed: %s%s HTTP %ld %.300s\n", err, e ? "" : "", st,
		        resp.p ? resp.p : "");
	cn_buf_fini(&resp);
	return ok;
}

static bool mp_complete(eng *g, int parts)
{
	char key[600];
	snprintf(key, sizeof key, "%smultipart.rnd", g->prefix);
	cn_buf body;
	cn_buf_init(&body);
	cn_err e = cn_buf_puts(&body, "<CompleteMultipartUpload>");
	for (int i = 0; i < parts && !e; i++)
		e = cn_buf_printf(&body, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i + 1, g->etags[i]);
	if (!e)
		e = cn_buf_puts(&body, "</CompleteMultipartUpload>");
	cn_kv q[] = { { (char *)"uploadId", g->upload_id } };
	cn_client_req r = { .method = "POST", .bucket = g->cfg->bucket, .key = key, .query = q, .nquery = 1, .body_len = -1 };
	cn_buf resp;
	cn_buf_init(&resp);
	long st = 0;
	char err[256] = "";
	if (!e)
		e = cn_client_do(g->client, &r, body.p, body.len, &resp, &st, err, sizeof err);
	bool ok = !e && st == 200 && resp.len && !strstr(resp.p, "<Error>");
	if (!ok)
		fprintf(stderr, "cairn bench: CompleteMultipartUpload failed: %s HTTP %ld %.300s\n", err, st,
		        resp.p ? resp.p : "");
	cn_buf_fini(&resp);
	cn_buf_fini(&body);
	return ok;
}

static void mp_cleanup(eng *g)
{
	if (g->cfg->noclear)
		return;
	char key[600];
	snprintf(key, sizeof key, "%smultipart.rnd", g->prefix);
	cn_client_req r = { .method = "DELETE", .bucket = g->cfg->bucket, .key = key, .body_len = -1 };
	long st;
	cn_client_do(g->client, &r, NULL, 0, NULL, &st, NULL, 0);
	if (g->upload_id[0]) { /* an unfinished upload: abort it (harmless when completed) */
		cn_kv q[] = { { (char *)"uploadId", g->upload_id } };
		r.query = q;
		r.nquery = 1;
		cn_client_do(g->client, &r, NULL, 0, NULL, &st, NULL, 0);
	}
}

typedef struct sweep_pt {
	double target, obj_s, mib_s, p50, p90, p99;
	uint64_t errors;
} sweep_pt;

static int parse_sweep(const char *s, double *rates, int max)
{
	int n = 0;
	double a, b, step;
	if (sscanf(s, "%lf:%lf:%lf", &a, &b, &step) == 3) {
		if (a <= 0 || b < a || step <= 0)
			return -1;
		for (double r = a; r <= b * 1.000001 && n < max; r += step)
			rates[n++] = r;
		return n;
	}
	const char *p = s;
	while (*p && n < max) {
		char *end;
		double v = strtod(p, &end);
		if (end == p || v <= 0)
			return -1;
		rates[n++] = v;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

static bool write_plot(const char *path, const sweep_pt *pt, int n, const char *opname)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	double xmax = 1, ymax = 1;
	for (int i = 0; i < n; i++) {
		xmax = pt[i].obj_s > xmax ? pt[i].obj_s : xmax;
		ymax = pt[i].p99 > ymax ? pt[i].p99 : ymax;
	}
	xmax *= 1.1;
	ymax *= 1.1;
	const double W = 720, H = 440, L = 70, R = 20, T = 40, B = 50;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">cairn bench %s: latency vs throughput</text>\n", L, opname);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T, L, H - B);
	for (int i = 0; i <= 5; i++) {
		double xv = xmax * i / 5, yv = ymax * i / 5;
		double px = L + (W - L - R) * i / 5, py = H - B - (H - T - B) * i / 5;
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", px, H - B + 16, xv);
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", L - 6, py + 4, yv);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">achieved obj/s</text>\n", (L + W - R) / 2, H - 12);
	fprintf(f, "<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\">latency (ms)</text>\n",
	        (T + H - B) / 2, (T + H - B) / 2);
	static const char *const col[] = { "#1f77b4", "#ff7f0e", "#d62728" };
	static const char *const nm[] = { "p50", "p90", "p99" };
	for (int s = 0; s < 3; s++) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col[s]);
		for (int i = 0; i < n; i++) {
			double y = s == 0 ? pt[i].p50 : s == 1 ? pt[i].p90 : pt[i].p99;
			fprintf(f, "%.1f,%.1f ", L + (W - L - R) * pt[i].obj_s / xmax, H - B - (H - T - B) * y / ymax);
		}
		fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%d\" fill=\"%s\">%s</text>\n", W - R - 40, (int)T + 14 * s, col[s], nm[s]);
	}
	fprintf(f, "</svg>\n");
	return fclose(f) == 0;
}

static gen_kind measured_gen(cn_bench_mode m)
{
	switch (m) {
	case CN_BENCH_PUT:
		return GEN_PUT_NEW;
	case CN_BENCH_GET:
		return GEN_GET;
	case CN_BENCH_DELETE:
		return GEN_DELETE_TABLE;
	case CN_BENCH_STAT:
		return GEN_STAT;
	case CN_BENCH_LIST:
		return GEN_LIST;
	case CN_BENCH_MIXED:
		return GEN_MIXED;
	default:
		return GEN_GET;
	}
}

static int run_loop_mode(eng *g, progress *pr)
{
	const cn_bench_cfg *c = g->cfg;
	int rc = 0;
	for (int loop = 1; loop <= c->loops; loop++) {
		phase ph;
		cn_bench_acc acc;
		static const gen_kind gens[3] = { GEN_PUT_NEW, GEN_GET, GEN_DELETE_TABLE };
		atomic_store(&g->put_new_next, 0);
		uint64_t nput = 0;
		for (int k = 0; k < 3; k++) {
			if (cn_bench_acc_init(&acc, g->hosts, g->nhosts, c->concurrent))
				return 1;
			cn_bench_phase_init(&ph, gens[k]);
			ph.count = nput;
			if (k == 2)
				ph.deadline = cn_mono_ns() + 600 * NS;
			if (k > 0 && !nput) {
				cn_bench_acc_fini(&acc);
				break;
			}
			int64_t t0 = cn_mono_ns();
			if (measure(g, &ph, pr, &acc)) {
				cn_bench_acc_fini(&acc);
				return 1;
			}
			double el = (double)(cn_mono_ns() - t0) / NS;
			int op = k == 0 ? CN_BOP_PUT : k == 1 ? CN_BOP_GET : CN_BOP_DELETE;
			const cn_bench_opacc *o = &acc.op[op];
			uint64_t slow = 0;
			for (size_t i = 0; i < o->nerr; i++)
				if (strstr(o->err[i].msg, "HTTP 503"))
					slow += o->err[i].n;
			if (k == 0) {
				nput = atomic_load(&g->put_new_next);
				g->nobj = nput;
			}
			if (k < 2)
				printf("Loop %d: %s time %.1f secs, objects = %" PRIu64 ", speed = %.1fMB/sec, %.1f operations/sec. Slowdowns = %" PRIu64 ", Errors = %" PRIu64 "\n",
				       loop, k == 0 ? "PUT" : "GET", el, o->ops, (double)o->bytes / 1048576.0 / el,
				       (double)o->ops / el, slow, o->errors);
			else
				printf("Loop %d: DELETE time %.1f secs, %.1f deletes/sec. Slowdowns = %" PRIu64 ", Errors = %" PRIu64 "\n",
				       loop, el, (double)o->ops / el, slow, o->errors);
			fflush(stdout);
			if (o->errors)
				rc = 1;
			cn_bench_acc_fini(&acc);
		}
	}
	return rc;
}

static int run_sweep(eng *g, progress *pr, phase *tmpl)
{
	const cn_bench_cfg *c = g->cfg;
	double rates[64];
	int n = parse_sweep(c->sweep, rates, 64);
	if (n <= 0) {
		fprintf(stderr, "cairn bench: bad --sweep '%s' (FROM:TO:STEP or R1,R2,...)\n", c->sweep);
		return 2;
	}
	sweep_pt pt[64];
	int rc = 0, op = -1;
	printf("%-12s %12s %12s %10s %10s %10s %8s\n", "target/s", "obj/s", "MiB/s", "p50(ms)", "p90(ms)", "p99(ms)", "errors");
	for (int i = 0; i < n; i++) {
		phase ph = *tmpl;
		atomic_init(&ph.stop, false);
		atomic_init(&ph.next, 0);
		ph.rate = rates[i];
		ph.deadline = 0;
		cn_bench_acc acc;
		if (cn_bench_acc_init(&acc, g->hosts, g->nhosts, c->concurrent) || measure(g, &ph, pr, &acc))
			return 1;
		cn_bench_summary s;
		for (int o = 0; o < CN_BOP__COUNT && op < 0; o++)
			if (acc.op[o].ops || acc.op[o].errors)
				op = o;
		memset(&pt[i], 0, sizeof pt[i]);
		pt[i].target = rates[i];
		if (op >= 0 && cn_bench_summarize(&acc, op, &s)) {
			pt[i].obj_s = s.obj_s;
			pt[i].mib_s = s.mib_s;
			pt[i].p50 = (double)cn_hist_quantile(&s.lat, 0.5) / 1e6;
			pt[i].p90 = (double)cn_hist_quantile(&s.lat, 0.9) / 1e6;
			pt[i].p99 = (double)cn_hist_quantile(&s.lat, 0.99) / 1e6;
			pt[i].errors = s.errors;
			cn_bench_summary_fini(&s);
		}
		if (pt[i].errors)
			rc = 1;
		printf("%-12.1f %12.2f %12.2f %10.3f %10.3f %10.3f %8" PRIu64 "\n", pt[i].target, pt[i].obj_s, pt[i].mib_s,
		       pt[i].p50, pt[i].p90, pt[i].p99, pt[i].errors);
		fflush(stdout);
		cn_bench_acc_fini(&acc);
	}
	if (c->plot) {
		if (!write_plot(c->plot, pt, n, cn_bop_name(op < 0 ? 0 : op))) {
			fprintf(stderr, "cairn bench: cannot write %s\n", c->plot);
			return 1;
		}
		fprintf(stderr, "cairn bench: plot written to %s\n", c->plot);
	}
	return rc;
}

/* Flags no mode can run with: a one-line message, false. */
static bool cfg_ok(const cn_bench_cfg *c)
{
	if (c->concurrent < 1 || c->concurrent > 100000 || (c->mode != CN_BENCH_MULTIPART && c->mode != CN_BENCH_LIST &&
	                                                      c->mode != CN_BENCH_DELETE && c->mode != CN_BENCH_STAT && !c->obj_size)) {
		fprintf(stderr, "cairn bench: --concurrent must be 1..100000 and --obj.size > 0\n");
		return false;
	}
	if (c->mode == CN_BENCH_MULTIPART && (c->parts < 1 || c->parts > 10000 || c->part_size < 1)) {
		fprintf(stderr, "cairn bench: --parts must be 1..10000 and --part.size > 0\n");
		return false;
	}
	if (c->mode == CN_BENCH_MIXED &&
	    c->get_distrib + c->put_distrib + c->stat_distrib + c->delete_distrib <= 0) {
		fprintf(stderr, "cairn bench: the --*-distrib percentages add up to 0\n");
		return false;
	}
	return true;
}

/* The driver of a distributed run: the agents do the work; their records merge into one
 * report (and one benchdata file). Returns the exit status. */
static int run_as_driver(const cn_bench_cfg *c)
{
	cn_bench_cfg cc = *c;
	eng g;
	char err[512] = "";
	if (cn_bench_eng_init(&g, &cc, err, sizeof err)) {
		fprintf(stderr, "cairn bench: %s\n", err[0] ? err : "out of memory");
		cn_bench_eng_free(&g);
		return 2;
	}
	cn_bench_acc acc;
	cn_bench_rec *recs = NULL;
	size_t nrec = 0;
	int rc = 1;
	if (cn_bench_acc_init(&acc, g.hosts, g.nhosts, c->concurrent))
		goto out;
	if (cn_bench_agents_run(c, &acc, &recs, &nrec, err, sizeof err)) {
		fprintf(stderr, "cairn bench: %s\n", err);
		goto out_acc;
	}
	if (c->json) {
		char *j = cn_bench_report_json(&acc, NULL);
		printf("%s\n", j ? j : "{}");
		free(j);
	} else {
		cn_bench_report_all(&acc, NULL, stdout);
	}
	int64_t errors = 0;
	for (int o = 0; o < CN_BOP__COUNT; o++)
		errors += (int64_t)acc.op[o].errors;
	rc = errors ? 1 : 0;
	if (c->benchdata) {
		cn_bench_meta m = { .concurrency = acc.concurrency, .hosts = g.hosts, .nhosts = g.nhosts,
		                    .start_unix_ns = c->start_unix_ns };
		snprintf(m.mode, sizeof m.mode, "%s", mode_name(c->mode));
		if (nrec > 1)
			qsort(recs, nrec, sizeof *recs, cmp_rec);
		if (cn_bench_data_write(c->benchdata, &m, recs, nrec)) {
			fprintf(stderr, "cairn bench: cannot write %s\n", c->benchdata);
			rc = 1;
		}
	}
out_acc:
	cn_bench_acc_fini(&acc);
out:
	free(recs);
	cn_bench_eng_free(&g);
	return rc;
}

/* Multipart mode, before the clock: the upload initiated, room for the parts' ETags, and
 * with --verify each part's expected hash. */
static bool prepare_multipart(eng *g, const cn_bench_cfg *c)
{
	if (!mp_initiate(g))
		return false;
	g->etags = calloc((size_t)c->parts, sizeof *g->etags);
	g->nobj = (uint64_t)c->parts;
	if (!g->etags)
		return false;
	if (c->verify) {
		g->hash = calloc((size_t)c->parts, sizeof *g->hash);
		if (!g->hash)
			return false;
		for (int i = 0; i < c->parts; i++) {
			uint64_t size, off;
			cn_bench_obj_shape(g, (uint64_t)i, &size, &off);
			g->hash[i] = XXH3_64bits(g->payload + off, (size_t)size);
		}
	}
	return true;
}

/* Multipart mode's run: one clock, two phases — the upload (PUTPART, then the completion
 * timed apart), then ranged GETs of the parts; each op's report has its own segments.
 * Returns the exit status (1 on a failed phase or any error). */
static int run_multipart(eng *g, const cn_bench_cfg *c, progress *pr, cn_bench_acc *acc,
                         int64_t start_unix)
{
	phase up;
	cn_bench_phase_init(&up, GEN_PUT_PARTS);
	up.count = (uint64_t)c->parts;
	up.rate = c->rate;
	up.deadline = cn_mono_ns() + 3600 * NS;
	uint64_t up_t0 = cn_mono_ns();
	if (measure_phase(g, &up, pr, true))
		return 1;
	uint64_t up_ns = cn_mono_ns() - up_t0;
	uint64_t upload_errs = 0;
	for (int t = 0; t < g->nthreads; t++)
		upload_errs += g->w[t].acc.op[CN_BOP_PUTPART].errors;
	uint64_t done_t0 = cn_mono_ns();
	bool completed = !upload_errs && mp_complete(g, c->parts);
	uint64_t done_ns = cn_mono_ns() - done_t0;
	if (completed && !c->quiet)
		fprintf(stderr, "CompleteMultipartUpload: %d parts in %.1f ms = %.2f%% of the upload "
		        "phase (%.1f s)\n", c->parts, (double)done_ns / 1e6,
		        up_ns ? 100.0 * (double)done_ns / (double)up_ns : 0.0, (double)up_ns / 1e9);
	if (!completed) {
		fprintf(stderr, "cairn bench: the upload did not complete; no GET phase\n");
	} else {
		phase ph;
		cn_bench_phase_init(&ph, GEN_GET_PARTS);
		ph.count = (uint64_t)c->parts;
		ph.rate = c->rate;
		if (measure_phase(g, &ph, pr, false))
			return 1;
	}
	if (merge_workers(g, acc))
		return 1;
	int64_t errs = finish_report(g, acc, pr, start_unix);
	return errs == 0 && !upload_errs ? 0 : 1;
}

int cn_bench_run(const cn_bench_cfg *c)
{
	if (!cfg_ok(c))
		return 2;
	if (c->agents && *c->agents)
		return run_as_driver(c);

	eng g;
	char err[512] = "";
	if (cn_bench_eng_init(&g, c, err, sizeof err)) {
		fprintf(stderr, "cairn bench: %s\n", err[0] ? err : "out of memory");
		cn_bench_eng_free(&g);
		return 2;
	}
	g.keep_recs = c->benchdata != NULL || c->agent_fd >= 0;
	progress pr = { .tty = isatty(2), .quiet = c->quiet, .autoterm = c->autoterm,
	                .stable_pct = c->autoterm_pct, .stable_ns = c->autoterm_dur_ns };
	int rc = 1;
	uint64_t clean_n = 0;
	cn_bench_acc acc;
	bool acc_ok = false;
	if (!make_bucket(&g))
		goto out;
	if (c->mode == CN_BENCH_LOOP) {
		rc = run_loop_mode(&g, &pr);
		goto out;
	}
	phase ph;
	cn_bench_phase_init(&ph, measured_gen(c->mode));
	ph.rate = c->rate;
	if (c->mode == CN_BENCH_MULTIPART) {
		if (!prepare_multipart(&g, c))
			goto out;
	} else if (c->mode != CN_BENCH_PUT) {
		if (!prepare_objects(&g, c->objects, &pr))
			goto cleanup_out;
		clean_n = c->objects;
		ph.count = c->objects;
		if (c->mode == CN_BENCH_DELETE)
			ph.deadline = 0; /* set by measure() from --duration */
	}
	if (cn_bench_acc_init(&acc, g.hosts, g.nhosts, c->concurrent))
		goto cleanup_out;
	acc_ok = true;
	int64_t start_unix = c->start_unix_ns ? c->start_unix_ns : cn_bench_wall_ns();
	if (c->sweep) {
		rc = run_sweep(&g, &pr, &ph);
		if (c->mode == CN_BENCH_PUT)
			clean_n = atomic_load(&g.put_new_next);
		goto cleanup_out;
	}
	if (c->mode == CN_BENCH_MULTIPART) {
		rc = run_multipart(&g, c, &pr, &acc, start_unix);
		goto cleanup_out;
	}
	if (measure(&g, &ph, &pr, &acc)) {
		fprintf(stderr, "cairn bench: the measured phase failed (out of memory?)\n");
		goto cleanup_out;
	}
	if (c->mode == CN_BENCH_PUT)
		clean_n = atomic_load(&g.put_new_next);
	int64_t errors = finish_report(&g, &acc, &pr, start_unix);
	rc = errors == 0 ? 0 : 1;
cleanup_out:
	if (c->mode == CN_BENCH_MULTIPART)
		mp_cleanup(&g);
	else
		cleanup(&g, clean_n, &pr);
out:
	if (acc_ok)
		cn_bench_acc_fini(&acc);
	cn_bench_eng_free(&g);
	return rc;
}
