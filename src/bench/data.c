/* bench/data: benchdata files — every request of a run as gzip-compressed CSV (zlib), and
 * back into an accumulator for `analyze` and `cmp`. Format (bench_int.h): "# cairn-bench
 * benchdata v1", "# key=value" lines, the CSV header, one record per line. All numbers are
 * decimal integers (ns, bytes), so a file reproduces the live figures exactly (BENCH-3). */
#include "bench/bench_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAGIC "# cairn-bench benchdata v1"
#define CSV_HEADER "op,host,start_ns,end_ns,ttfb_ns,bytes,error"
#define MAX_LINE 8192

cn_err cn_bench_rec_csv(cn_buf *b, const cn_bench_rec *r, const char *host)
{
	cn_err e = cn_buf_printf(b, "%s,%s,%lld,%lld,%lld,%lld,", cn_bop_name(r->op), host, (long long)r->start,
	                         (long long)r->end, (long long)r->ttfb, (long long)r->bytes);
	if (e || !r->err)
		return e;
	if (!strpbrk(r->err, ",\"\n\r"))
		return cn_buf_puts(b, r->err);
	e = cn_buf_append(b, "\"", 1);
	for (const char *p = r->err; *p && !e; p++) {
		char c = (*p == '\n' || *p == '\r') ? ' ' : *p;
		e = c == '"' ? cn_buf_append(b, "\"\"", 2) : cn_buf_append(b, &c, 1);
	}
	return e ? e : cn_buf_append(b, "\"", 1);
}

static bool parse_i64(const char *s, int64_t *v)
{
	if (!*s)
		return false;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (*end || errno)
		return false;
	*v = x;
	return true;
}

cn_err cn_bench_rec_parse(char *line, cn_bench_rec *r, const char **host)
{
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = 0;
	char *f[7];
	char *p = line;
	for (int i = 0; i < 6; i++) {
		f[i] = p;
		char *c = strchr(p, ',');
		if (!c)
			return CN_ERR_INVALID;
		*c = 0;
		p = c + 1;
	}
	f[6] = p;
	int op = cn_bop_parse(f[0]);
	memset(r, 0, sizeof *r);
	if (op < 0 || !parse_i64(f[2], &r->start) || !parse_i64(f[3], &r->end) || !parse_i64(f[4], &r->ttfb) ||
	    !parse_i64(f[5], &r->bytes) || r->end < r->start || r->bytes < 0)
		return CN_ERR_INVALID;
	r->op = (uint8_t)op;
	*host = f[1];
	if (*f[6]) {
		char *m = f[6];
		if (*m == '"') {
			char *w = m, *q = m + 1;
			for (; *q; q++) {
				if (*q == '"') {
					if (q[1] != '"')
						break;
					q++;
				}
				*w++ = *q;
			}
			if (*q != '"' || q[1])
				return CN_ERR_INVALID;
			*w = 0;
		}
		r->err = cn_bench_intern(m);
	}
	return CN_OK;
}

cn_err cn_bench_data_write(const char *path, const cn_bench_meta *m, const cn_bench_rec *recs, size_t n)
{
	gzFile g = gzopen(path, "wb1");
	if (!g)
		return CN_ERR_IO;
	cn_buf b;
	cn_buf_init(&b);
	cn_err e = cn_buf_printf(&b, MAGIC "\n# mode=%s\n# concurrency=%d\n# start_unix_ns=%lld\n# hosts=", m->mode,
	                         m->concurrency, (long long)m->start_unix_ns);
	for (size_t i = 0; i < m->nhosts && !e; i++)
		e = cn_buf_printf(&b, "%s%s", i ? "," : "", m->hosts[i]);
	if (!e)
		e = cn_buf_puts(&b, "\n" CSV_HEADER "\n");
	for (size_t i = 0; i < n && !e; i++) {
		e = cn_bench_rec_csv(&b, &recs[i], m->hosts[recs[i].host < m->nhosts ? recs[i].host : 0]);
		if (!e)
			e = cn_buf_append(&b, "\n", 1);
		if (!e && b.len > (1u << 20)) {
			if (gzwrite(g, b.p, (unsigned)b.len) != (int)b.len)
				e = CN_ERR_IO;
			b.len = 0;
		}
	}
	if (!e && b.len && gzwrite(g, b.p, (unsigned)b.len) != (int)b.len)
		e = CN_ERR_IO;
	if (gzclose(g) != Z_OK && !e)
		e = CN_ERR_IO;
	cn_buf_fini(&b);
	return e;
}

void cn_bench_meta_fini(cn_bench_meta *m)
{
	for (size_t i = 0; i < m->nhosts; i++)
		free(m->hosts[i]);
	free(m->hosts);
	m->hosts = NULL;
	m->nhosts = 0;
}

static cn_err split_hosts(const char *v, cn_bench_meta *m)
{
	const char *p = v;
	while (*p) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (!len || m->nhosts >= 1024)
			return CN_ERR_INVALID;
		char **nh = realloc(m->hosts, (m->nhosts + 1) * sizeof *nh);
		if (!nh)
			return CN_ERR_NOMEM;
		m->hosts = nh;
		if (!(nh[m->nhosts] = strndup(p, len)))
			return CN_ERR_NOMEM;
		m->nhosts++;
		if (!c)
			break;
		p = c + 1;
	}
	return m->nhosts ? CN_OK : CN_ERR_INVALID;
}

cn_err cn_bench_data_read(const char *path, cn_bench_acc *a, cn_bench_meta *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof *m);
	memset(a, 0, sizeof *a);
	gzFile g = gzopen(path, "rb");
	if (!g) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : ENOENT));
		return CN_ERR_IO;
	}
	char *line = malloc(MAX_LINE);
	cn_err e = line ? CN_OK : CN_ERR_NOMEM;
	size_t lineno = 0;
	bool header = true, acc_ready = false;
	while (!e && gzgets(g, line, MAX_LINE)) {
		lineno++;
		size_t n = strlen(line);
		if (n == MAX_LINE - 1 && line[n - 1] != '\n') {
			snprintf(err, errlen, "%s:%zu: line too long", path, lineno);
			e = CN_ERR_INVALID;
			break;
		}
		if (lineno == 1 && strncmp(line, MAGIC, strlen(MAGIC))) {
			snprintf(err, errlen, "%s: not a cairn benchdata file", path);
			e = CN_ERR_INVALID;
			break;
		}
		if (header) {
			while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				line[--n] = 0;
			if (!strncmp(line, "# mode=", 7))
				snprintf(m->mode, sizeof m->mode, "%s", line + 7);
			else if (!strncmp(line, "# concurrency=", 14))
				m->concurrency = atoi(line + 14);
			else if (!strncmp(line, "# start_unix_ns=", 16))
				m->start_unix_ns = strtoll(line + 16, NULL, 10);
			else if (!strncmp(line, "# hosts=", 8))
				e = split_hosts(line + 8, m);
			else if (!strcmp(line, CSV_HEADER)) {
				header = false;
				if (!m->nhosts) {
					snprintf(err, errlen, "%s: no hosts line", path);
					e = CN_ERR_INVALID;
					break;
				}
				e = cn_bench_acc_init(a, m->hosts, m->nhosts, m->concurrency);
				acc_ready = !e;
			}
			if (e)
				snprintf(err, errlen, "%s:%zu: bad header line", path, lineno);
			continue;
		}
		cn_bench_rec r;
		const char *host;
		e = cn_bench_rec_parse(line, &r, &host);
		if (!e) {
			size_t h = 0;
			while (h < m->nhosts && strcmp(m->hosts[h], host))
				h++;
			if (h == m->nhosts)
				e = CN_ERR_INVALID;
			r.host = (uint32_t)h;
		}
		if (!e)
			e = cn_bench_acc_add(a, &r);
		if (e)
			snprintf(err, errlen, "%s:%zu: bad record", path, lineno);
	}
	int gerr = 0;
	gzerror(g, &gerr);
	if (!e && gerr != Z_OK && gerr != Z_STREAM_END) {
		snprintf(err, errlen, "%s: corrupt or truncated gzip data", path);
		e = CN_ERR_CORRUPT;
	}
	if (!e && header) {
		snprintf(err, errlen, "%s: no CSV header", path);
		e = CN_ERR_INVALID;
	}
	gzclose(g);
	free(line);
	if (e) {
		if (acc_ready)
			cn_bench_acc_fini(a);
		cn_bench_meta_fini(m);
	}
	return e;
}
