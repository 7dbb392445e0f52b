/* cluster/layout.c: server arguments -> pools -> erasure sets -> slots, and parity, as
 * MinIO decides them (cmd/endpoint-ellipses.go getSetIndexes / possibleSetCountsWithSymmetry
 * / commonSetDriveCount, internal/config/storageclass). Behaviour, not code: where MinIO's
 * rule is a quirk we keep the observable result and say so here.
 *
 *  LAYOUT-1. Endpoint order is cn_cluster_expand's (first ellipsis varies fastest = MinIO's
 *      hosts-interleaved order); pools follow the argument order; set i of a pool is the
 *      endpoints [first + i*S, first + (i+1)*S), slot j the j-th of them.
 *  LAYOUT-2. Symmetry: MinIO's loop keeps only the verdict of the LAST pattern it parsed, which
 *      is the FIRST ellipsis of the argument (its parser works right to left); so only
 *      that range's length L matters.
 *  LAYOUT-3. commonSetDriveCount with all candidates dividing the count picks the largest one.
 *  LAYOUT-4. EC:0 is accepted only for a single drive: a deployment of several drives always
 *      keeps parity (MinIO accepts EC:0 there too; cairn refuses silent zero redundancy). */
#include "cluster/layout.h"
#include "cluster/cluster.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static bool has_ellipsis(const char *s)
{
	const char *o = strchr(s, '{');
	return o && strstr(o, "...") && strchr(o, '}');
}

static bool is_url(const char *s)
{
	return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

size_t cn_layout_set_sizes(size_t ndrives, unsigned *sizes)
{
	size_t n = 0;
	for (unsigned s = CN_LAYOUT_MIN_SET; s <= CN_LAYOUT_MAX_SET; s++)
		if (ndrives && ndrives % s == 0)
			sizes[n++] = s;
	return n;
}

static void list_sizes(char *buf, size_t len, const unsigned *sizes, size_t n)
{
	size_t at = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%u", i ? " " : "", sizes[i]);
		if (w < 0)
			break;
		at += (size_t)w;
	}
}

unsigned cn_layout_default_parity(unsigned n)
{
	if (n <= 1)
		return 0;
	if (n <= 3)
		return 1;
	if (n <= 5)
		return 2;
	if (n <= 7)
		return 3;
	return 4;
}

cn_err cn_layout_parse_ec(const char *s, unsigned *parity, char *err, size_t errlen)
{
	if (!s || strncmp(s, "EC:", 3) != 0) {
		say(err, errlen, "invalid storage class \"%s\": expected EC:n (e.g. EC:4)", s ? s : "");
		return CN_ERR_INVALID;
	}
	const char *d = s + 3;
	unsigned v = 0;
	size_t nd = 0;
	for (; d[nd]; nd++) {
		if (d[nd] < '0' || d[nd] > '9' || nd >= 4) {
			say(err, errlen, "invalid storage class \"%s\": parity must be a small decimal number", s);
			return CN_ERR_INVALID;
		}
		v = v * 10 + (unsigned)(d[nd] - '0');
	}
	if (nd == 0) {
		say(err, errlen, "invalid storage class \"%s\": missing parity after EC:", s);
		return CN_ERR_INVALID;
	}
	*parity = v;
	return CN_OK;
}

cn_err cn_layout_check_parity(unsigned standard, unsigned rrs, unsigned set_size, char *err,
                              size_t errlen)
{
	unsigned max = set_size / 2;
	if (standard > max) {
		say(err, errlen, "STANDARD storage class parity %u should be less than or equal to %u "
		    "for erasure sets of %u drives", standard, max, set_size);
		return CN_ERR_INVALID;
	}
	if (rrs > max) {
		say(err, errlen, "REDUCED_REDUNDANCY storage class parity %u should be less than or "
		    "equal to %u for erasure sets of %u drives", rrs, max, set_size);
		return CN_ERR_INVALID;
	}
	if (set_size > 1 && (standard == 0 || rrs == 0)) {
		say(err, errlen, "storage class parity EC:0 is only valid for a single drive "
		    "(erasure sets here have %u drives)", set_size);
		return CN_ERR_INVALID;
	}
	if (standard < rrs) {
		say(err, errlen, "STANDARD storage class parity %u should be greater than or equal "
		    "to REDUCED_REDUNDANCY parity %u", standard, rrs);
		return CN_ERR_INVALID;
	}
	return CN_OK;
}

/* Length of the first ellipsis range of arg (LAYOUT-2), via the expansion of arg's text up to
 * and including its first '}'. */
static cn_err first_range_len(const char *arg, size_t *len)
{
	const char *open = strchr(arg, '{');
	const char *close = open ? strchr(open, '}') : NULL;
	if (!close)
		return CN_ERR_INVALID;
	size_t n = (size_t)(close - arg) + 1;
	char *pre = strndup(arg, n);
	if (!pre)
		return CN_ERR_NOMEM;
	char **l = NULL;
	cn_err e = cn_cluster_expand(pre, &l, len);
	free(pre);
	if (!e)
		cn_cluster_free_list(l, *len);
	return e;
}

/* MinIO's getSetIndexes for one pool of total drives; sym_len 0 = no symmetry rule. */
static cn_err choose_set_size(const char *what, size_t total, size_t sym_len, unsigned custom,
                              unsigned *out, char *err, size_t errlen)
{
	unsigned cand[CN_LAYOUT_MAX_SET];
	char sizes[96];
	if (total < CN_LAYOUT_MIN_SET || (custom && total < custom)) {
		say(err, errlen, "incorrect number of drives in %s: %zu (an erasure-coded pool "
		    "needs at least %u)", what, total, custom > CN_LAYOUT_MIN_SET ? custom : CN_LAYOUT_MIN_SET);
		return CN_ERR_INVALID;
	}
	size_t nc = cn_layout_set_sizes(total, cand);
	if (nc == 0) {
		say(err, errlen, "incorrect number of drives in %s: %zu is not divisible by any "
		    "supported erasure set size (2..16)", what, total);
		return CN_ERR_INVALID;
	}
	if (custom) {
		for (size_t i = 0; i < nc; i++)
			if (cand[i] == custom) {
				*out = custom;
				return CN_OK;
			}
		list_sizes(sizes, sizeof sizes, cand, nc);
		say(err, errlen, "invalid erasure set drive count %u for %s: acceptable values for "
		    "%zu drives are %s", custom, what, total, sizes);
		return CN_ERR_INVALID;
	}
	unsigned best = 0;
	for (size_t i = 0; i < nc; i++) {
		size_t s = cand[i];
		bool sym = sym_len == 0 || (sym_len > s ? sym_len % s == 0 : s % sym_len == 0);
		if (sym)
			best = cand[i];  /* ascending: the last symmetric one is the largest (LAYOUT-3) */
	}
	if (!best) {
		list_sizes(sizes, sizeof sizes, cand, nc);
		say(err, errlen, "no symmetric distribution for %s: %zu drives cannot be spread "
		    "evenly over %zu hosts by any supported erasure set size (%s)", what, total,
		    sym_len, sizes);
		return CN_ERR_INVALID;
	}
	*out = best;
	return CN_OK;
}

void cn_layout_fini(cn_layout *l)
{
	if (!l)
		return;
	cn_cluster_free_list(l->endpoints, l->nendpoints);
	free(l->pools);
	memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends list[0..n) to l->endpoints, taking ownership of the strings (and the array). */
static cn_err take(cn_layout *l, char **list, size_t n)
{
	char **grown = realloc(l->endpoints, (l->nendpoints + n) * sizeof *grown);
	if (!grown) {
		cn_cluster_free_list(list, n);
		return CN_ERR_NOMEM;
	}
	memcpy(grown + l->nendpoints, list, n * sizeof *list);
	l->endpoints = grown;
	l->nendpoints += n;
	free(list);
	return CN_OK;
}

static cn_err check_endpoints(cn_layout *l, char *err, size_t errlen)
{
	size_t urls = 0;
	for (size_t i = 0; i < l->nendpoints; i++) {
		if (!l->endpoints[i][0]) {
			say(err, errlen, "empty endpoint");
			return CN_ERR_INVALID;
		}
		urls += is_url(l->endpoints[i]);
	}
	if (urls && urls != l->nendpoints) {
		say(err, errlen, "all endpoints must be either local paths or http(s):// URLs, "
		    "not a mix");
		return CN_ERR_INVALID;
	}
	l->distributed = urls > 0;
	char **sorted = malloc(l->nendpoints * sizeof *sorted);
	if (!sorted)
		return CN_ERR_NOMEM;
	memcpy(sorted, l->endpoints, l->nendpoints * sizeof *sorted);
	qsort(sorted, l->nendpoints, sizeof *sorted, cmp_str);
	cn_err e = CN_OK;
	for (size_t i = 1; i < l->nendpoints && !e; i++)
		if (strcmp(sorted[i - 1], sorted[i]) == 0) {
			say(err, errlen, "duplicate endpoint %s", sorted[i]);
			e = CN_ERR_INVALID;
		}
	free(sorted);
	return e;
}

static cn_err build_pools(const char *const *args, size_t nargs, unsigned custom, cn_layout *l,
                          char *err, size_t errlen)
{
	size_t with = 0;
	for (size_t i = 0; i < nargs; i++) {
		if (!args[i] || !args[i][0]) {
			say(err, errlen, "empty server argument");
			return CN_ERR_INVALID;
		}
		with += has_ellipsis(args[i]);
	}
	if (nargs == 1 && with == 0) {
		char **one = malloc(sizeof *one);
		char *dup = one ? strdup(args[0]) : NULL;
		if (!dup) {
			free(one);
			return CN_ERR_NOMEM;
		}
		one[0] = dup;
		l->pools = calloc(1, sizeof *l->pools);
		if (!l->pools) {
			cn_cluster_free_list(one, 1);
			return CN_ERR_NOMEM;
		}
		l->npools = 1;
		l->pools[0] = (cn_layout_pool){ .first = 0, .ndrives = 1, .set_size = 1, .nsets = 1,
		                                .arg = args[0] };
		l->single_drive = true;
		return take(l, one, 1);
	}
	if (with == 0) {
		/* MinIO's legacy form: every argument one drive, all of them one pool. */
		char **list = calloc(nargs, sizeof *list);
		if (!list)
			return CN_ERR_NOMEM;
		for (size_t i = 0; i < nargs; i++)
			if (!(list[i] = strdup(args[i]))) {
				cn_cluster_free_list(list, i);
				return CN_ERR_NOMEM;
			}
		unsigned s;
		cn_err e = choose_set_size("the drive list", nargs, 0, custom, &s, err, errlen);
		if (e) {
			cn_cluster_free_list(list, nargs);
			return e;
		}
		l->pools = calloc(1, sizeof *l->pools);
		if (!l->pools) {
			cn_cluster_free_list(list, nargs);
			return CN_ERR_NOMEM;
		}
		l->npools = 1;
		l->pools[0] = (cn_layout_pool){ .first = 0, .ndrives = nargs, .set_size = s,
		                                .nsets = nargs / s, .arg = args[0] };
		l->custom_set_size = custom != 0;
		return take(l, list, nargs);
	}
	if (with != nargs) {
		say(err, errlen, "every argument must have an ellipsis ({a...b}) when several "
		    "pools are given");
		return CN_ERR_INVALID;
	}
	l->pools = calloc(nargs, sizeof *l->pools);
	if (!l->pools)
		return CN_ERR_NOMEM;
	for (size_t i = 0; i < nargs; i++) {
		char **list = NULL;
		size_t n = 0, sym = 0;
		cn_err e = cn_cluster_expand(args[i], &list, &n);
		if (e) {
			say(err, errlen, e == CN_ERR_TOO_LARGE ? "argument \"%s\" expands to too many drives"
			    : "invalid ellipsis in argument \"%s\"", args[i]);
			return e;
		}
		e = first_range_len(args[i], &sym);
		unsigned s = 0;
		if (!e) {
			char what[64];
			snprintf(what, sizeof what, "pool %zu", i + 1);
			e = choose_set_size(what, n, sym, custom, &s, err, errlen);
		}
		if (e) {
			cn_cluster_free_list(list, n);
			return e;
		}
		l->pools[i] = (cn_layout_pool){ .first = l->nendpoints, .ndrives = n, .set_size = s,
		                                .nsets = n / s, .arg = args[i] };
		l->npools = i + 1;
		if ((e = take(l, list, n)))
			return e;
	}
	l->custom_set_size = custom != 0;
	return CN_OK;
}

cn_err cn_layout_build(const char *const *args, size_t nargs, const cn_layout_opts *opts,
                       cn_layout *out, char *err, size_t errlen)
{
	cn_layout_opts none = { 0 };
	if (!opts)
		opts = &none;
	if (err && errlen)
		err[0] = 0;
	memset(out, 0, sizeof *out);
	if (!args || nargs == 0) {
		say(err, errlen, "no drives given");
		return CN_ERR_INVALID;
	}
	cn_layout l = { 0 };
	cn_err e = build_pools(args, nargs, opts->set_drive_count, &l, err, errlen);
	if (!e)
		e = check_endpoints(&l, err, errlen);
	if (!e && l.single_drive && opts->set_drive_count > 1) {
		say(err, errlen, "invalid erasure set drive count %u: a single drive has no erasure "
		    "sets", opts->set_drive_count);
		e = CN_ERR_INVALID;
	}
	unsigned first = l.npools ? l.pools[0].set_size : 1;
	unsigned ss = cn_layout_default_parity(first), rrs = first > 1 ? 1 : 0;
	if (!e && opts->sc_standard && opts->sc_standard[0])
		e = cn_layout_parse_ec(opts->sc_standard, &ss, err, errlen);
	if (!e && opts->sc_rrs && opts->sc_rrs[0])
		e = cn_layout_parse_ec(opts->sc_rrs, &rrs, err, errlen);
	for (size_t p = 0; p < l.npools && !e; p++)
		e = cn_layout_check_parity(ss, rrs, l.pools[p].set_size, err, errlen);
	if (e) {
		cn_layout_fini(&l);
		return e;
	}
	l.parity_standard = ss;
	l.parity_rrs = rrs;
	*out = l;
	return CN_OK;
}

cn_err cn_layout_build_env(const char *const *args, size_t nargs, cn_layout *out, char *err,
                           size_t errlen)
{
	cn_layout_opts o = { 0 };
	const char *sdc = cn_env2("CAIRN_ERASURE_SET_DRIVE_COUNT", "MINIO_ERASURE_SET_DRIVE_COUNT");
	memset(out, 0, sizeof *out);
	if (sdc && sdc[0]) {
		char *end;
		unsigned long v = strtoul(sdc, &end, 10);
		if (*end || sdc[0] < '0' || sdc[0] > '9' || v == 0 || v > 1024) {
			say(err, errlen, "invalid CAIRN_ERASURE_SET_DRIVE_COUNT \"%s\": expected a set "
			    "size from 2 to 16 that divides the drive count", sdc);
			return CN_ERR_INVALID;
		}
		o.set_drive_count = (unsigned)v;
	}
	o.sc_standard = cn_env2("CAIRN_STORAGE_CLASS_STANDARD", "MINIO_STORAGE_CLASS_STANDARD");
	o.sc_rrs = cn_env2("CAIRN_STORAGE_CLASS_RRS", "MINIO_STORAGE_CLASS_RRS");
	return cn_layout_build(args, nargs, &o, out, err, errlen);
}

size_t cn_layout_nsets(const cn_layout *l)
{
	size_t n = 0;
	for (size_t p = 0; p < l->npools; p++)
		n += l->pools[p].nsets;
	return n;
}

const char *cn_layout_drive(const cn_layout *l, size_t pool, size_t set, unsigned slot)
{
	if (pool >= l->npools)
		return NULL;
	const cn_layout_pool *p = &l->pools[pool];
	if (set >= p->nsets || slot >= p->set_size)
		return NULL;
	return l->endpoints[p->first + set * p->set_size + slot];
}

cn_err cn_layout_parity_for_class(const cn_layout *l, const char *sc, unsigned *parity)
{
	if (!sc || !sc[0] || strcmp(sc, "STANDARD") == 0) {
		*parity = l->parity_standard;
		return CN_OK;
	}
	if (strcmp(sc, "REDUCED_REDUNDANCY") == 0) {
		*parity = l->parity_rrs;
		return CN_OK;
	}
	return CN_ERR_INVALID;
}

/* "http://user@host:port/path" -> host:port span. */
static cn_str host_of(const char *url)
{
	const char *h = strstr(url, "://");
	h = h ? h + 3 : url;
	const char *at = strchr(h, '@'), *slash = strchr(h, '/');
	if (at && (!slash || at < slash))
		h = at + 1;
	size_t n = slash ? (size_t)(slash - h) : strlen(h);
	return (cn_str){ h, n };
}

bool cn_layout_host_warning(const cn_layout *l, unsigned parity, char *msg, size_t msglen)
{
	if (!l->distributed)
		return false;
	for (size_t p = 0; p < l->npools; p++) {
		const cn_layout_pool *pl = &l->pools[p];
		for (size_t s = 0; s < pl->nsets; s++) {
			char *const *d = l->endpoints + pl->first + s * pl->set_size;
			for (unsigned i = 0; i < pl->set_size; i++) {
				cn_str h = host_of(d[i]);
				unsigned count = 0;
				bool seen = false;
				for (unsigned j = 0; j < pl->set_size && !seen; j++) {
					cn_str o = host_of(d[j]);
					if (cn_str_eq(h, o)) {
						if (j < i)
							seen = true;  /* counted at its first drive */
						count++;
					}
				}
				if (!seen && count > parity && count < pl->set_size) {
					say(msg, msglen, "host %.*s has %u drives of pool %zu set %zu (parity %u): "
					    "a failure of that host makes the set unavailable", (int)h.len, h.p,
					    count, p + 1, s + 1, parity);
					return true;
				}
			}
		}
	}
	return false;
}
