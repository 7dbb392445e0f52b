/* cluster/ellipsis.c: `{a...b}` expansion of endpoint arguments as MinIO writes them
 * (DESIGN.md §1). Pure string work; no I/O. The expansion order is the product with the
 * first ellipsis varying fastest, which for "http://host{1...2}/export{1...8}" yields
 * host1/export1, host2/export1, host1/export2, ... — hosts interleaved first, as DESIGN.md
 * §9 requires, so erasure sets (consecutive chunks) span as many hosts as possible. */
#include "cluster/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RESULTS 65536
#define MAX_ELLIPSES 8

typedef struct range {
	size_t start, end;  /* span of "{...}" in arg, end exclusive */
	long lo, hi;
	int width;          /* zero-pad width, 0 for none */
	bool letters;
} range;

static bool parse_num(const char *s, size_t len, long *v, bool *lead0)
{
	if (len == 0 || len > 9)
		return false;
	long x = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	*lead0 = len > 1 && s[0] == '0';
	return true;
}

static cn_err parse_range(const char *arg, size_t open, range *r, size_t *next)
{
	const char *close = strchr(arg + open, '}');
	if (!close)
		return CN_ERR_INVALID;
	const char *body = arg + open + 1;
	size_t blen = (size_t)(close - body);
	const char *dots = strstr(body, "...");
	if (!dots || dots >= close)
		return CN_ERR_INVALID;
	size_t alen = (size_t)(dots - body), zlen = blen - alen - 3;
	const char *z = dots + 3;
	r->start = open;
	r->end = (size_t)(close - arg) + 1;
	bool l0a, l0b;
	if (parse_num(body, alen, &r->lo, &l0a) && parse_num(z, zlen, &r->hi, &l0b)) {
		r->letters = false;
		/* zero-padded to the width written when a bound has a leading zero ({01...16}) */
		r->width = (l0a || l0b) ? (int)(alen > zlen ? alen : zlen) : 0;
	} else if (alen == 1 && zlen == 1 && ((body[0] >= 'a' && body[0] <= 'z' && z[0] >= 'a' && z[0] <= 'z') ||
	                                      (body[0] >= 'A' && body[0] <= 'Z' && z[0] >= 'A' && z[0] <= 'Z'))) {
		r->letters = true;
		r->lo = body[0];
		r->hi = z[0];
		r->width = 0;
	} else {
		return CN_ERR_INVALID;
	}
	if (r->lo > r->hi)
		return CN_ERR_INVALID;
	*next = r->end;
	return CN_OK;
}

void cn_cluster_free_list(char **list, size_t n)
{
	if (!list)
		return;
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

cn_err cn_cluster_expand(const char *arg, char ***out, size_t *n)
{
	range rs[MAX_ELLIPSES];
	size_t nr = 0, pos = 0;
	if (!arg || !arg[0])
		return CN_ERR_INVALID;
	for (;;) {
		const char *o = strchr(arg + pos, '{');
		if (!o)
			break;
		if (nr == MAX_ELLIPSES)
			return CN_ERR_TOO_LARGE;
		cn_err e = parse_range(arg, (size_t)(o - arg), &rs[nr], &pos);
		if (e)
			return e;
		nr++;
	}
	if (strchr(arg + pos, '}'))
		return CN_ERR_INVALID;
	size_t total = 1;
	for (size_t i = 0; i < nr; i++) {
		total *= (size_t)(rs[i].hi - rs[i].lo + 1);
		if (total > MAX_RESULTS)
			return CN_ERR_TOO_LARGE;
	}
	char **list = calloc(total, sizeof *list);
	if (!list)
		return CN_ERR_NOMEM;
	size_t alen = strlen(arg);
	for (size_t k = 0; k < total; k++) {
		cn_buf b;
		cn_buf_init(&b);
		size_t idx = k, at = 0;
		cn_err e = CN_OK;
		for (size_t i = 0; i < nr && !e; i++) {
			long span = rs[i].hi - rs[i].lo + 1;
			long v = rs[i].lo + (long)(idx % (size_t)span);
			idx /= (size_t)span;
			e = cn_buf_append(&b, arg + at, rs[i].start - at);
			if (!e && rs[i].letters)
				e = cn_buf_printf(&b, "%c", (char)v);
			else if (!e)
				e = cn_buf_printf(&b, "%0*ld", rs[i].width, v);
			at = rs[i].end;
		}
		if (!e)
			e = cn_buf_append(&b, arg + at, alen - at);
		if (e || !b.p) {
			cn_buf_fini(&b);
			cn_cluster_free_list(list, k);
			return e ? e : CN_ERR_NOMEM;
		}
		list[k] = b.p;
	}
	*out = list;
	*n = total;
	return CN_OK;
}
