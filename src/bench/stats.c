/* bench/stats: HDR-style histograms, the per-second accumulator and the reports (warp's text
 * shape and JSON). Everything a report shows is derived here from records alone, with
 * integer accumulation (BENCH-1, BENCH-2 in bench_int.h), so the live report, `analyze` of
 * the benchdata file and a driver merging agents all print the same figures.
 *
 * Window (warp's rule): the run is cut into 1 s segments from t0; with at least 5 segments
 * the first 2 and the last 2 are dropped. An op spanning segments adds its bytes and its
 * count to each segment in proportion to the time it spent there (integer split whose parts
 * sum exactly to the whole). Latency and TTFB quantiles merge the histograms of the kept
 * seconds (an op belongs to the second it started in). */
#include "bench/bench_int.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000LL
#define MIB 1048576.0

static const char *const bop_names[CN_BOP__COUNT] = { "PUT", "GET", "DELETE", "STAT", "LIST", "PUTPART" };

const char *cn_bop_name(int op)
{
	return op >= 0 && op < CN_BOP__COUNT ? bop_names[op] : "?";
}

int cn_bop_parse(const char *s)
{
	for (int i = 0; i < CN_BOP__COUNT; i++)
		if (!strcasecmp(s, bop_names[i]))
			return i;
	return -1;
}

/* --- interned error messages ---------------------------------------------------------------- */

static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static char *intern_tab[4096];
static size_t intern_n;

const char *cn_bench_intern(const char *msg)
{
	pthread_mutex_lock(&intern_mu);
	const char *out = NULL;
	for (size_t i = 0; i < intern_n && !out; i++)
		if (!strcmp(intern_tab[i], msg))
			out = intern_tab[i];
	if (!out && intern_n < sizeof intern_tab / sizeof intern_tab[0] - 1) {
		intern_tab[intern_n] = strdup(msg);
		if (intern_tab[intern_n])
			out = intern_tab[intern_n++];
	}
	pthread_mutex_unlock(&intern_mu);
	return out ? out : "(more distinct errors)";
}

/* --- histogram -------------------------------------------------------------------------------- */

size_t cn_hist_bucket(int64_t us)
{
	if (us < 0)
		us = 0;
	if (us < CN_HIST_SUB)
		return (size_t)us;
	if (us >= (int64_t)1 << 32)
		return CN_HIST_BUCKETS - 1;
	int k = 63 - __builtin_clzll((unsigned long long)us); /* 7..31 */
	int shift = k - 6;
	size_t sub = (size_t)(us >> shift); /* 64..127 */
	return CN_HIST_SUB + (size_t)(k - 7) * (CN_HIST_SUB / 2) + (sub - CN_HIST_SUB / 2);
}

int64_t cn_hist_bucket_low(size_t i)
{
	if (i < CN_HIST_SUB)
		return (int64_t)i;
	size_t j = i - CN_HIST_SUB;
	int k = 7 + (int)(j / (CN_HIST_SUB / 2));
	int64_t sub = CN_HIST_SUB / 2 + (int64_t)(j % (CN_HIST_SUB / 2));
	return sub << (k - 6);
}

int64_t cn_hist_bucket_high(size_t i)
{
	if (i < CN_HIST_SUB)
		return (int64_t)i;
	size_t j = i - CN_HIST_SUB;
	int k = 7 + (int)(j / (CN_HIST_SUB / 2));
	int64_t sub = CN_HIST_SUB / 2 + (int64_t)(j % (CN_HIST_SUB / 2));
	return ((sub + 1) << (k - 6)) - 1;
}

void cn_hist_init(cn_hist *h)
{
	memset(h, 0, sizeof *h);
}

void cn_hist_add(cn_hist *h, int64_t ns)
{
	if (ns < 0)
		ns = 0;
	if (!h->n || ns < h->min)
		h->min = ns;
	if (!h->n || ns > h->max)
		h->max = ns;
	h->n++;
	h->sum += ns;
	h->sumsq += (__int128)ns * ns;
	h->b[cn_hist_bucket(ns / 1000)]++;
}

void cn_hist_merge(cn_hist *into, const cn_hist *from)
{
	if (!from->n)
		return;
	if (!into->n || from->min < into->min)
		into->min = from->min;
	if (!into->n || from->max > into->max)
		into->max = from->max;
	into->n += from->n;
	into->sum += from->sum;
	into->sumsq += from->sumsq;
	for (size_t i = 0; i < CN_HIST_BUCKETS; i++)
		into->b[i] += from->b[i];
}

int64_t cn_hist_quantile(const cn_hist *h, double q)
{
	if (!h->n)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	uint64_t rank = (uint64_t)ceil(q * (double)h->n);
	if (rank < 1)
		rank = 1;
	uint64_t c = 0;
	for (size_t i = 0; i < CN_HIST_BUCKETS; i++) {
		c += h->b[i];
		if (c >= rank) {
			int64_t v = (cn_hist_bucket_low(i) * 1000 + (cn_hist_bucket_high(i) + 1) * 1000) / 2;
			if (v < h->min)
				v = h->min;
			if (v > h->max)
				v = h->max;
			return v;
		}
	}
	return h->max;
}

double cn_hist_mean(const cn_hist *h)
{
	return h->n ? (double)h->sum / (double)h->n : 0;
}

double cn_hist_stddev(const cn_hist *h)
{
	if (h->n < 2)
		return 0;
	/* exact integer numerator: n*sumsq - sum^2 (both fit in 128 bits for any real run) */
	__int128 num = (__int128)h->n * h->sumsq - h->sum * h->sum;
	if (num < 0)
		num = 0;
	double var = (double)num / ((double)h->n * (double)h->n);
	return sqrt(var);
}

/* --- accumulator ------------------------------------------------------------------------------- */

cn_err cn_bench_acc_init(cn_bench_acc *a, char *const *hosts, size_t nhosts, int concurrency)
{
	memset(a, 0, sizeof *a);
	a->concurrency = concurrency;
	a->hosts = calloc(nhosts ? nhosts : 1, sizeof *a->hosts);
	if (!a->hosts)
		return CN_ERR_NOMEM;
	for (size_t i = 0; i < nhosts; i++) {
		a->hosts[i] = strdup(hosts[i]);
		if (!a->hosts[i]) {
			cn_bench_acc_fini(a);
			return CN_ERR_NOMEM;
		}
		a->nhosts++;
	}
	return CN_OK;
}

void cn_bench_acc_fini(cn_bench_acc *a)
{
	for (int o = 0; o < CN_BOP__COUNT; o++) {
		cn_bench_opacc *p = &a->op[o];
		for (size_t i = 0; i < p->nsec; i++) {
			free(p->sec[i].hbytes);
			free(p->sec[i].huops);
			free(p->sec[i].lat);
			free(p->sec[i].ttfb);
		}
		free(p->sec);
	}
	for (size_t i = 0; i < a->nhosts; i++)
		free(a->hosts[i]);
	free(a->hosts);
	memset(a, 0, sizeof *a);
}

static cn_err grow(cn_bench_acc *a, cn_bench_opacc *p, size_t nsec)
{
	if (nsec > 10 * 24 * 3600)
		return CN_ERR_TOO_LARGE; /* a record more than ten days after t0: garbage */
	if (nsec > p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		while (cap < nsec)
			cap *= 2;
		cn_bench_sec *ns = realloc(p->sec, cap * sizeof *ns);
		if (!ns)
			return CN_ERR_NOMEM;
		memset(ns + p->cap, 0, (cap - p->cap) * sizeof *ns);
		p->sec = ns;
		p->cap = cap;
	}
	for (size_t i = p->nsec; i < nsec; i++) {
		cn_bench_sec *s = &p->sec[i];
		s->hbytes = calloc(a->nhosts ? a->nhosts : 1, sizeof *s->hbytes);
		s->huops = calloc(a->nhosts ? a->nhosts : 1, sizeof *s->huops);
		if (!s->hbytes || !s->huops)
			return CN_ERR_NOMEM;
		p->nsec = i + 1;
	}
	return CN_OK;
}

static void add_err(cn_bench_opacc *p, const char *msg, int64_t first, uint64_t n)
{
	for (size_t i = 0; i < p->nerr; i++)
		if (p->err[i].msg == msg || !strcmp(p->err[i].msg, msg)) {
			p->err[i].n += n;
			if (first < p->err[i].first)
				p->err[i].first = first;
			return;
		}
	if (p->nerr < CN_BENCH_MAX_ERRMSG)
		p->err[p->nerr++] = (cn_bench_errmsg){ msg, first, n };
}

/* The integer share of total attributed to [lo, hi) of an op spanning [s, e). */
static int64_t share(int64_t total, int64_t s, int64_t e, int64_t lo, int64_t hi)
{
	__int128 d = e - s;
	int64_t a = (int64_t)((__int128)total * (lo - s) / d);
	int64_t b = (int64_t)((__int128)total * (hi - s) / d);
	return b - a;
}

cn_err cn_bench_acc_add(cn_bench_acc *a, const cn_bench_rec *r)
{
	if (r->op >= CN_BOP__COUNT || r->host >= (a->nhosts ? a->nhosts : 1))
		return CN_ERR_INVALID;
	cn_bench_opacc *p = &a->op[r->op];
	if (r->err) {
		p->errors++;
		add_err(p, r->err, r->start, 1);
		return CN_OK;
	}
	int64_t s = r->start < 0 ? 0 : r->start, e = r->end < s ? s : r->end;
	size_t ks = (size_t)(s / NS), ke = (size_t)((e + NS - 1) / NS);
	if (ke <= ks)
		ke = ks + 1;
	cn_err err = grow(a, p, ke);
	if (err)
		return err;
	p->ops++;
	p->bytes += r->bytes;
	if (e > p->last_end)
		p->last_end = e;
	if (e == s) {
		cn_bench_sec *x = &p->sec[ks];
		x->bytes += r->bytes;
		x->uops += CN_BENCH_UOPS;
		x->hbytes[r->host] += r->bytes;
		x->huops[r->host] += CN_BENCH_UOPS;
	} else {
		for (size_t k = ks; k < ke; k++) {
			int64_t lo = (int64_t)k * NS, hi = lo + NS;
			if (lo < s)
				lo = s;
			if (hi > e)
				hi = e;
			int64_t bb = share(r->bytes, s, e, lo, hi), uu = share(CN_BENCH_UOPS, s, e, lo, hi);
			cn_bench_sec *x = &p->sec[k];
			x->bytes += bb;
			x->uops += uu;
			x->hbytes[r->host] += bb;
			x->huops[r->host] += uu;
		}
	}
	cn_bench_sec *x = &p->sec[ks];
	if (!x->lat) {
		if (!(x->lat = malloc(sizeof *x->lat)))
			return CN_ERR_NOMEM;
		cn_hist_init(x->lat);
	}
	cn_hist_add(x->lat, e - s);
	if (r->ttfb >= 0) {
		if (!x->ttfb) {
			if (!(x->ttfb = malloc(sizeof *x->ttfb)))
				return CN_ERR_NOMEM;
			cn_hist_init(x->ttfb);
		}
		cn_hist_add(x->ttfb, r->ttfb);
	}
	return CN_OK;
}

cn_err cn_bench_acc_merge(cn_bench_acc *into, const cn_bench_acc *from)
{
	if (into->nhosts != from->nhosts)
		return CN_ERR_INVALID;
	for (int o = 0; o < CN_BOP__COUNT; o++) {
		cn_bench_opacc *d = &into->op[o];
		const cn_bench_opacc *f = &from->op[o];
		cn_err e = grow(into, d, f->nsec);
		if (e)
			return e;
		d->ops += f->ops;
		d->errors += f->errors;
		d->bytes += f->bytes;
		if (f->last_end > d->last_end)
			d->last_end = f->last_end;
		for (size_t i = 0; i < f->nerr; i++)
			add_err(d, f->err[i].msg, f->err[i].first, f->err[i].n);
		for (size_t k = 0; k < f->nsec; k++) {
			cn_bench_sec *x = &d->sec[k];
			const cn_bench_sec *y = &f->sec[k];
			x->bytes += y->bytes;
			x->uops += y->uops;
			for (size_t h = 0; h < into->nhosts; h++) {
				x->hbytes[h] += y->hbytes[h];
				x->huops[h] += y->huops[h];
			}
			if (y->lat) {
				if (!x->lat) {
					if (!(x->lat = malloc(sizeof *x->lat)))
						return CN_ERR_NOMEM;
					cn_hist_init(x->lat);
				}
				cn_hist_merge(x->lat, y->lat);
			}
			if (y->ttfb) {
				if (!x->ttfb) {
					if (!(x->ttfb = malloc(sizeof *x->ttfb)))
						return CN_ERR_NOMEM;
					cn_hist_init(x->ttfb);
				}
				cn_hist_merge(x->ttfb, y->ttfb);
			}
		}
	}
	return CN_OK;
}

/* --- summary --------------------------------------------------------------------------------- */

typedef struct segv {
	double mib, obj;
} segv;

static int cmp_seg_mib(const void *x, const void *y)
{
	const segv *a = x, *b = y;
	if (a->mib != b->mib)
		return a->mib < b->mib ? -1 : 1;
	return a->obj < b->obj ? -1 : a->obj > b->obj;
}

static int cmp_errmsg(const void *x, const void *y)
{
	const cn_bench_errmsg *a = x, *b = y;
	if (a->first != b->first)
		return a->first < b->first ? -1 : 1;
	return strcmp(a->msg, b->msg);
}

bool cn_bench_summarize(const cn_bench_acc *a, int op, cn_bench_summary *s)
{
	memset(s, 0, sizeof *s);
	const cn_bench_opacc *p = &a->op[op];
	if (!p->ops && !p->errors)
		return false;
	s->op = op;
	s->concurrency = a->concurrency;
	s->ops_total = p->ops;
	s->errors = p->errors;
	s->bytes_total = p->bytes;
	s->errs = p->err;
	s->nerrs = p->nerr;
	/* sorted by first occurrence; the array is logically const, sorting a copy would
	 * need storage per summary: sort in place (same content, deterministic order) */
	if (p->nerr > 1)
		qsort((void *)p->err, p->nerr, sizeof p->err[0], cmp_errmsg);
	s->nhosts = a->nhosts;
	s->host_mib = calloc(a->nhosts ? a->nhosts : 1, sizeof(double));
	s->host_obj = calloc(a->nhosts ? a->nhosts : 1, sizeof(double));
	cn_hist_init(&s->lat);
	cn_hist_init(&s->ttfb);
	if (!p->ops)
		return true;
	size_t nseg = (size_t)((p->last_end + NS - 1) / NS);
	if (nseg < 1)
		nseg = 1;
	if (nseg > p->nsec)
		nseg = p->nsec;
	/* segments count from the op's first second (a later phase of the run, such as the
	 * GETs after a multipart upload, does not start with empty segments) */
	size_t base = 0;
	while (base + 1 < nseg && !p->sec[base].uops && !p->sec[base].lat)
		base++;
	s->nseg = nseg - base;
	s->seg_first = base + (s->nseg >= 5 ? 2 : 0);
	s->seg_end = s->nseg >= 5 ? nseg - 2 : nseg;
	size_t nk = s->seg_end - s->seg_first;
	segv *sv = calloc(nk ? nk : 1, sizeof *sv);
	int64_t bytes = 0, uops = 0, win_ns = 0;
	int64_t *hb = calloc(a->nhosts ? a->nhosts : 1, sizeof *hb), *hu = calloc(a->nhosts ? a->nhosts : 1, sizeof *hu);
	for (size_t k = s->seg_first; k < s->seg_end; k++) {
		const cn_bench_sec *x = &p->sec[k];
		int64_t dur = NS;
		if (k == nseg - 1) {
			dur = p->last_end - (int64_t)k * NS;
			if (dur < 1000000)
				dur = 1000000; /* at least 1 ms: a run ending on a second boundary */
		}
		win_ns += dur;
		bytes += x->bytes;
		uops += x->uops;
		if (sv && hb && hu) {
			sv[k - s->seg_first].mib = (double)x->bytes / MIB / ((double)dur / NS);
			sv[k - s->seg_first].obj = (double)x->uops / CN_BENCH_UOPS / ((double)dur / NS);
			for (size_t h = 0; h < a->nhosts; h++) {
				hb[h] += x->hbytes[h];
				hu[h] += x->huops[h];
			}
		}
		if (x->lat)
			cn_hist_merge(&s->lat, x->lat);
		if (x->ttfb)
			cn_hist_merge(&s->ttfb, x->ttfb);
	}
	if (!s->lat.n) { /* no op started inside the window (ops longer than it): use them all */
		for (size_t k = 0; k < p->nsec; k++) {
			if (p->sec[k].lat)
				cn_hist_merge(&s->lat, p->sec[k].lat);
			if (p->sec[k].ttfb)
				cn_hist_merge(&s->ttfb, p->sec[k].ttfb);
		}
	}
	s->window_s = (double)win_ns / NS;
	if (s->window_s > 0) {
		s->mib_s = (double)bytes / MIB / s->window_s;
		s->obj_s = (double)uops / CN_BENCH_UOPS / s->window_s;
		for (size_t h = 0; h < a->nhosts && hb && hu && s->host_mib && s->host_obj; h++) {
			s->host_mib[h] = (double)hb[h] / MIB / s->window_s;
			s->host_obj[h] = (double)hu[h] / CN_BENCH_UOPS / s->window_s;
		}
	}
	if (sv && nk) {
		qsort(sv, nk, sizeof *sv, cmp_seg_mib);
		s->seg_slow_mib = sv[0].mib;
		s->seg_slow_obj = sv[0].obj;
		s->seg_med_mib = sv[nk / 2].mib;
		s->seg_med_obj = sv[nk / 2].obj;
		s->seg_fast_mib = sv[nk - 1].mib;
		s->seg_fast_obj = sv[nk - 1].obj;
	}
	free(sv);
	free(hb);
	free(hu);
	return true;
}

void cn_bench_summary_fini(cn_bench_summary *s)
{
	free(s->host_mib);
	free(s->host_obj);
	s->host_mib = s->host_obj = NULL;
}

/* --- text report ------------------------------------------------------------------------------ */

void cn_bench_fmt_dur(int64_t ns, char *out, size_t cap)
{
	if (ns < 1000000)
		snprintf(out, cap, "%.0fµs", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(out, cap, "%.1fms", (double)ns / 1e6);
	else
		snprintf(out, cap, "%.2fs", (double)ns / 1e9);
}

static void fmt_ran(double s, char *out, size_t cap)
{
	if (fabs(s - floor(s + 0.5)) < 0.0005)
		snprintf(out, cap, "%.0fs", s);
	else
		snprintf(out, cap, "%.1fs", s);
}

void cn_bench_report_text(const cn_bench_acc *a, const cn_bench_summary *s, FILE *out)
{
	char ran[32], d[8][32];
	fmt_ran(s->window_s, ran, sizeof ran);
	bool has_bytes = s->bytes_total > 0;
	fprintf(out, "Report: %s. Concurrency: %d. Ran: %s\n", cn_bop_name(s->op), s->concurrency, ran);
	if (has_bytes)
		fprintf(out, " * Average: %.2f MiB/s, %.2f obj/s\n", s->mib_s, s->obj_s);
	else
		fprintf(out, " * Average: %.2f obj/s\n", s->obj_s);
	if (s->lat.n) {
		cn_bench_fmt_dur((int64_t)llround(cn_hist_mean(&s->lat)), d[0], 32);
		cn_bench_fmt_dur(cn_hist_quantile(&s->lat, 0.5), d[1], 32);
		cn_bench_fmt_dur(cn_hist_quantile(&s->lat, 0.9), d[2], 32);
		cn_bench_fmt_dur(cn_hist_quantile(&s->lat, 0.99), d[3], 32);
		cn_bench_fmt_dur(s->lat.min, d[4], 32);
		cn_bench_fmt_dur(s->lat.max, d[5], 32);
		cn_bench_fmt_dur((int64_t)llround(cn_hist_stddev(&s->lat)), d[6], 32);
		fprintf(out, " * Reqs: Avg: %s, 50%%: %s, 90%%: %s, 99%%: %s, Fastest: %s, Slowest: %s, StdDev: %s\n",
		        d[0], d[1], d[2], d[3], d[4], d[5], d[6]);
	}
	if (s->ttfb.n) {
		char t[9][32];
		const cn_hist *h = &s->ttfb;
		cn_bench_fmt_dur((int64_t)llround(cn_hist_mean(h)), t[0], 32);
		cn_bench_fmt_dur(h->min, t[1], 32);
		cn_bench_fmt_dur(cn_hist_quantile(h, 0.25), t[2], 32);
		cn_bench_fmt_dur(cn_hist_quantile(h, 0.5), t[3], 32);
		cn_bench_fmt_dur(cn_hist_quantile(h, 0.75), t[4], 32);
		cn_bench_fmt_dur(cn_hist_quantile(h, 0.9), t[5], 32);
		cn_bench_fmt_dur(cn_hist_quantile(h, 0.99), t[6], 32);
		cn_bench_fmt_dur(h->max, t[7], 32);
		cn_bench_fmt_dur((int64_t)llround(cn_hist_stddev(h)), t[8], 32);
		fprintf(out, " * TTFB: Avg: %s, Best: %s, 25th: %s, Median: %s, 75th: %s, 90th: %s, 99th: %s, Worst: %s StdDev: %s\n",
		        t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8]);
	}
	if (s->errors) {
		fprintf(out, " * Errors: %llu\n", (unsigned long long)s->errors);
		for (size_t i = 0; i < s->nerrs && i < 5; i++)
			fprintf(out, "   - %s (%llu)\n", s->errs[i].msg, (unsigned long long)s->errs[i].n);
	}
	if (!s->ops_total) {
		fprintf(out, "\n");
		return;
	}
	fprintf(out, "\nThroughput by host:\n");
	for (size_t h = 0; h < a->nhosts; h++) {
		if (has_bytes)
			fprintf(out, " * %s: Avg: %.2f MiB/s, %.2f obj/s\n", a->hosts[h], s->host_mib[h], s->host_obj[h]);
		else
			fprintf(out, " * %s: Avg: %.2f obj/s\n", a->hosts[h], s->host_obj[h]);
	}
	size_t nk = s->seg_end - s->seg_first;
	fprintf(out, "\nThroughput, split into %zu x 1s%s:\n", nk,
	        s->nseg < 5 ? " (under 5 segments: none dropped)" : "");
	if (has_bytes) {
		fprintf(out, " * Fastest: %.1fMiB/s, %.2f obj/s\n", s->seg_fast_mib, s->seg_fast_obj);
		fprintf(out, " * 50%% Median: %.1fMiB/s, %.2f obj/s\n", s->seg_med_mib, s->seg_med_obj);
		fprintf(out, " * Slowest: %.1fMiB/s, %.2f obj/s\n", s->seg_slow_mib, s->seg_slow_obj);
	} else {
		fprintf(out, " * Fastest: %.2f obj/s\n", s->seg_fast_obj);
		fprintf(out, " * 50%% Median: %.2f obj/s\n", s->seg_med_obj);
		fprintf(out, " * Slowest: %.2f obj/s\n", s->seg_slow_obj);
	}
	fprintf(out, "\n");
}

/* Reports list writes first (a multipart upload before the GETs of its parts). */
static const int report_order[CN_BOP__COUNT] = { CN_BOP_PUT, CN_BOP_PUTPART, CN_BOP_GET, CN_BOP_DELETE, CN_BOP_STAT,
	                                         CN_BOP_LIST };

int cn_bench_report_all(const cn_bench_acc *a, const char *only_op, FILE *out)
{
	int n = 0;
	for (int oi = 0; oi < CN_BOP__COUNT; oi++) {
		int o = report_order[oi];
		if (only_op && strcasecmp(only_op, cn_bop_name(o)))
			continue;
		cn_bench_summary s;
		if (!cn_bench_summarize(a, o, &s))
			continue;
		if (n)
			fprintf(out, "----------------------------------------\n");
		cn_bench_report_text(a, &s, out);
		cn_bench_summary_fini(&s);
		n++;
	}
	return n;
}

/* --- JSON --------------------------------------------------------------------------------- */

static json_t *hist_json(const cn_hist *h, bool ttfb)
{
	if (!h->n)
		return json_null();
	json_t *o = json_object();
	json_object_set_new(o, "n", json_integer((json_int_t)h->n));
	json_object_set_new(o, "avg_ms", json_real(cn_hist_mean(h) / 1e6));
	json_object_set_new(o, "fastest_ms", json_real((double)h->min / 1e6));
	if (ttfb)
		json_object_set_new(o, "p25_ms", json_real((double)cn_hist_quantile(h, 0.25) / 1e6));
	json_object_set_new(o, "p50_ms", json_real((double)cn_hist_quantile(h, 0.5) / 1e6));
	if (ttfb)
		json_object_set_new(o, "p75_ms", json_real((double)cn_hist_quantile(h, 0.75) / 1e6));
	json_object_set_new(o, "p90_ms", json_real((double)cn_hist_quantile(h, 0.9) / 1e6));
	json_object_set_new(o, "p99_ms", json_real((double)cn_hist_quantile(h, 0.99) / 1e6));
	json_object_set_new(o, "slowest_ms", json_real((double)h->max / 1e6));
	json_object_set_new(o, "stddev_ms", json_real(cn_hist_stddev(h) / 1e6));
	return o;
}

char *cn_bench_report_json(const cn_bench_acc *a, const char *only_op)
{
	json_t *root = json_object(), *ops = json_array();
	json_object_set_new(root, "concurrency", json_integer(a->concurrency));
	for (int oi = 0; oi < CN_BOP__COUNT; oi++) {
		int o = report_order[oi];
		if (only_op && strcasecmp(only_op, cn_bop_name(o)))
			continue;
		cn_bench_summary s;
		if (!cn_bench_summarize(a, o, &s))
			continue;
		json_t *j = json_object();
		json_object_set_new(j, "op", json_string(cn_bop_name(o)));
		json_object_set_new(j, "concurrency", json_integer(s.concurrency));
		json_object_set_new(j, "ran_s", json_real(s.window_s));
		json_object_set_new(j, "segments_total", json_integer((json_int_t)s.nseg));
		json_object_set_new(j, "segments", json_integer((json_int_t)(s.seg_end - s.seg_first)));
		json_object_set_new(j, "ops", json_integer((json_int_t)s.ops_total));
		json_object_set_new(j, "bytes", json_integer((json_int_t)s.bytes_total));
		json_object_set_new(j, "errors", json_integer((json_int_t)s.errors));
		json_object_set_new(j, "mib_s", json_real(s.mib_s));
		json_object_set_new(j, "obj_s", json_real(s.obj_s));
		json_object_set_new(j, "reqs", hist_json(&s.lat, false));
		json_object_set_new(j, "ttfb", hist_json(&s.ttfb, true));
		json_t *hosts = json_array();
		for (size_t h = 0; h < a->nhosts && s.ops_total; h++) {
			json_t *x = json_object();
			json_object_set_new(x, "host", json_string(a->hosts[h]));
			json_object_set_new(x, "mib_s", json_real(s.host_mib[h]));
			json_object_set_new(x, "obj_s", json_real(s.host_obj[h]));
			json_array_append_new(hosts, x);
		}
		json_object_set_new(j, "hosts", hosts);
		json_t *seg = json_object();
		json_object_set_new(seg, "fastest_mib_s", json_real(s.seg_fast_mib));
		json_object_set_new(seg, "fastest_obj_s", json_real(s.seg_fast_obj));
		json_object_set_new(seg, "median_mib_s", json_real(s.seg_med_mib));
		json_object_set_new(seg, "median_obj_s", json_real(s.seg_med_obj));
		json_object_set_new(seg, "slowest_mib_s", json_real(s.seg_slow_mib));
		json_object_set_new(seg, "slowest_obj_s", json_real(s.seg_slow_obj));
		json_object_set_new(j, "throughput_segments", seg);
		json_t *errs = json_array();
		for (size_t i = 0; i < s.nerrs && i < 10; i++) {
			json_t *x = json_object();
			json_object_set_new(x, "message", json_string(s.errs[i].msg));
			json_object_set_new(x, "count", json_integer((json_int_t)s.errs[i].n));
			json_array_append_new(errs, x);
		}
		json_object_set_new(j, "first_errors", errs);
		json_array_append_new(ops, j);
		cn_bench_summary_fini(&s);
	}
	json_object_set_new(root, "ops", ops);
	char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
	json_decref(root);
	return txt;
}
