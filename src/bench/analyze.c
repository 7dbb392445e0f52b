/* bench/analyze: `cairn bench analyze FILE` (the report of a benchdata file: the same code
 * and the same integer records as the live report, so the same figures) and `cairn bench cmp
 * BEFORE AFTER` (per operation, each figure before -> after with its relative change). */
#include "bench/bench_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int cn_bench_analyze(const char *file, const char *op, bool json)
{
	if (op && cn_bop_parse(op) < 0) {
		fprintf(stderr, "cairn bench analyze: unknown --analyze.op '%s'\n", op);
		return 2;
	}
	cn_bench_acc a;
	cn_bench_meta m;
	char err[512] = "";
	if (cn_bench_data_read(file, &a, &m, err, sizeof err)) {
		fprintf(stderr, "cairn bench analyze: %s\n", err);
		return 1;
	}
	int rc = 0;
	if (json) {
		char *j = cn_bench_report_json(&a, op);
		printf("%s\n", j ? j : "{}");
		free(j);
	} else if (!cn_bench_report_all(&a, op, stdout)) {
		fprintf(stderr, "cairn bench analyze: no %s requests in %s\n", op ? op : "", file);
		rc = 1;
	}
	cn_bench_acc_fini(&a);
	cn_bench_meta_fini(&m);
	return rc;
}

static void delta(const char *name, double a, double b, const char *unit, bool last)
{
	double pct = a != 0 ? (b - a) / a * 100 : 0;
	printf("%s: %.2f%s -> %.2f%s (%+.1f%%)%s", name, a, unit, b, unit, pct, last ? "\n" : ", ");
}

static void delta_ms(const char *name, int64_t a, int64_t b, bool last)
{
	char x[32], y[32];
	cn_bench_fmt_dur(a, x, sizeof x);
	cn_bench_fmt_dur(b, y, sizeof y);
	double pct = a ? (double)(b - a) / (double)a * 100 : 0;
	printf("%s: %s -> %s (%+.1f%%)%s", name, x, y, pct, last ? "\n" : ", ");
}

static void cmp_hist(const char *label, const cn_hist *a, const cn_hist *b)
{
	if (!a->n || !b->n)
		return;
	printf(" * %s: ", label);
	delta_ms("Avg", (int64_t)llround(cn_hist_mean(a)), (int64_t)llround(cn_hist_mean(b)), false);
	delta_ms("50%", cn_hist_quantile(a, 0.5), cn_hist_quantile(b, 0.5), false);
	delta_ms("90%", cn_hist_quantile(a, 0.9), cn_hist_quantile(b, 0.9), false);
	delta_ms("99%", cn_hist_quantile(a, 0.99), cn_hist_quantile(b, 0.99), false);
	delta_ms("Fastest", a->min, b->min, false);
	delta_ms("Slowest", a->max, b->max, true);
}

int cn_bench_cmp(const char *before, const char *after, const char *op)
{
	if (op && cn_bop_parse(op) < 0) {
		fprintf(stderr, "cairn bench cmp: unknown --analyze.op '%s'\n", op);
		return 2;
	}
	cn_bench_acc a, b;
	cn_bench_meta ma, mb;
	char err[512] = "";
	if (cn_bench_data_read(before, &a, &ma, err, sizeof err)) {
		fprintf(stderr, "cairn bench cmp: %s\n", err);
		return 1;
	}
	if (cn_bench_data_read(after, &b, &mb, err, sizeof err)) {
		fprintf(stderr, "cairn bench cmp: %s\n", err);
		cn_bench_acc_fini(&a);
		cn_bench_meta_fini(&ma);
		return 1;
	}
	int shown = 0;
	for (int o = 0; o < CN_BOP__COUNT; o++) {
		if (op && strcasecmp(op, cn_bop_name(o)))
			continue;
		cn_bench_summary sa, sb;
		bool ha = cn_bench_summarize(&a, o, &sa), hb = cn_bench_summarize(&b, o, &sb);
		if (ha && hb) {
			printf("%sOperation: %s (before -> after)\n", shown ? "\n" : "", cn_bop_name(o));
			printf(" * Concurrency: %d -> %d. Ran: %.0fs -> %.0fs\n", sa.concurrency, sb.concurrency, sa.window_s,
			       sb.window_s);
			printf(" * Average: ");
			if (sa.bytes_total || sb.bytes_total)
				delta("", sa.mib_s, sb.mib_s, " MiB/s", false);
			delta("", sa.obj_s, sb.obj_s, " obj/s", true);
			cmp_hist("Reqs", &sa.lat, &sb.lat);
			cmp_hist("TTFB", &sa.ttfb, &sb.ttfb);
			printf(" * Errors: %llu -> %llu\n", (unsigned long long)sa.errors, (unsigned long long)sb.errors);
			shown++;
		} else if (ha || hb) {
			printf("%sOperation: %s only in %s\n", shown ? "\n" : "", cn_bop_name(o), ha ? before : after);
			shown++;
		}
		if (ha)
			cn_bench_summary_fini(&sa);
		if (hb)
			cn_bench_summary_fini(&sb);
	}
	if (!shown)
		fprintf(stderr, "cairn bench cmp: no operations to compare\n");
	cn_bench_acc_fini(&a);
	cn_bench_acc_fini(&b);
	cn_bench_meta_fini(&ma);
	cn_bench_meta_fini(&mb);
	return shown ? 0 : 1;
}
