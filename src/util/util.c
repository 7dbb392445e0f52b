/* util.c: implementations of the shared helpers declared in util.h — error names, string
 * views, cn_buf, stream helpers, logging, time formatting/parsing, durations, the
 * environment's paired names (CAIRN_x or MINIO_x) and the small encoders (hex, base64,
 * percent-encoding, UTF-8 validation) that several layers use. */
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

static const char *const err_names[CN_ERR__COUNT] = {
	[CN_OK] = "ok", [CN_ERR_NOMEM] = "out of memory", [CN_ERR_INVALID] = "invalid input",
	[CN_ERR_NOT_FOUND] = "not found", [CN_ERR_EXISTS] = "already exists", [CN_ERR_IO] = "I/O error",
	[CN_ERR_NOSPACE] = "no space left", [CN_ERR_CORRUPT] = "corrupt data",
	[CN_ERR_OFFLINE] = "drive offline", [CN_ERR_TIMEOUT] = "timed out",
	[CN_ERR_TOO_LARGE] = "too large", [CN_ERR_CLOSED] = "connection closed",
	[CN_ERR_BUSY] = "busy", [CN_ERR_QUORUM] = "quorum not reached",
	[CN_ERR_NO_BUCKET] = "no such bucket", [CN_ERR_NO_KEY] = "no such key",
	[CN_ERR_BUCKET_EXISTS] = "bucket exists", [CN_ERR_BUCKET_NOT_EMPTY] = "bucket not empty",
	[CN_ERR_BAD_KEY] = "invalid object key", [CN_ERR_KEY_TOO_LONG] = "object key too long",
	[CN_ERR_BAD_BUCKET_NAME] = "invalid bucket name", [CN_ERR_DIGEST] = "digest mismatch",
	[CN_ERR_ABORTED] = "aborted by body reader", [CN_ERR_UNSUPPORTED] = "not supported",
	[CN_ERR_NO_UPLOAD] = "no such upload", [CN_ERR_BAD_PART] = "invalid part",
	[CN_ERR_PART_ORDER] = "invalid part order", [CN_ERR_TOO_SMALL] = "part too small",
	[CN_ERR_NO_VERSION] = "no such version", [CN_ERR_DELETE_MARKER] = "version is a delete marker",
};

const char *cn_err_str(cn_err e)
{
	if ((unsigned)e >= CN_ERR__COUNT || !err_names[e])
		return "unknown error";
	return err_names[e];
}

void cn_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "cairn: assertion failed: %s (%s:%d)\n", expr, file, line);
	abort();
}

bool cn_str_eq(cn_str a, cn_str b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

int cn_str_cmp(cn_str a, cn_str b)
{
	int c = a.len && b.len ? memcmp(a.p, b.p, a.len < b.len ? a.len : b.len) : 0;
	if (c)
		return c;
	return a.len < b.len ? -1 : a.len > b.len;
}

bool cn_str_eq_c(cn_str a, const char *c)
{
	size_t n = strlen(c);
	return a.len == n && (n == 0 || memcmp(a.p, c, n) == 0);
}

bool cn_str_ieq_c(cn_str a, const char *c)
{
	size_t n = strlen(c);
	return a.len == n && (n == 0 || strncasecmp(a.p, c, n) == 0);
}

bool cn_str_has_prefix(cn_str a, const char *prefix)
{
	size_t n = strlen(prefix);
	return a.len >= n && memcmp(a.p, prefix, n) == 0;
}

void cn_kvs_free(cn_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].name);
		free(kv[i].value);
	}
	free(kv);
}

void cn_buf_init(cn_buf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
}

void cn_buf_fini(cn_buf *b)
{
	free(b->p);
	cn_buf_init(b);
}

/* Room for extra more bytes and a NUL: the capacity doubles (amortised appends) or, when
 * exact, is just what is needed. */
static cn_err buf_grow(cn_buf *b, size_t extra, bool exact)
{
	if (extra > SIZE_MAX / 2 - b->len)
		return CN_ERR_NOMEM;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return CN_OK;
	size_t cap = exact ? need : b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return CN_ERR_NOMEM;
	b->p = p;
	b->cap = cap;
	return CN_OK;
}

cn_err cn_buf_reserve(cn_buf *b, size_t extra)
{
	return buf_grow(b, extra, false);
}

cn_err cn_buf_reserve_exact(cn_buf *b, size_t extra)
{
	return buf_grow(b, extra, true);
}

cn_err cn_buf_append(cn_buf *b, const void *p, size_t len)
{
	cn_err e = cn_buf_reserve(b, len);
	if (e)
		return e;
	if (len)
		memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = 0;
	return CN_OK;
}

cn_err cn_buf_puts(cn_buf *b, const char *s)
{
	return cn_buf_append(b, s, strlen(s));
}

cn_err cn_buf_put_u64(cn_buf *b, uint64_t v)
{
	char d[21];
	return cn_buf_append(b, d, cn_fmt_u64(v, d));
}

size_t cn_strlcpy(char *dst, const char *src, size_t cap)
{
	size_t n = strlen(src);
	size_t k = n < cap - 1 ? n : cap - 1;
	memcpy(dst, src, k);
	dst[k] = 0;
	return n;
}

size_t cn_fmt_u64(uint64_t v, char *out)
{
	char tmp[20];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = 0;
	return n;
}

const char *cn_find_head_end(const char *p, size_t n, size_t from)
{
	/* Every line of a head ends in '\n': memchr (vectorised) hops from line to line and
	 * only the candidates are checked; glibc's memmem is several times slower here. */
	size_t i = from;
	while (i < n) {
		const char *r = memchr(p + i, '\n', n - i);
		if (!r)
			return NULL;
		size_t j = (size_t)(r - p);
		if (j == 0 || p[j - 1] != '\r')
			return r + 1;
		if (j >= 3 && p[j - 2] == '\n' && p[j - 3] == '\r')
			return r + 1;
		i = j + 1;
	}
	return NULL;
}

cn_err cn_buf_printf(cn_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char tmp[256];
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return CN_ERR_INVALID;
	if ((size_t)n < sizeof tmp)
		return cn_buf_append(b, tmp, (size_t)n);
	cn_err e = cn_buf_reserve(b, (size_t)n);
	if (e)
		return e;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return CN_OK;
}

ssize_t cn_read_full(cn_reader *r, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = r->read(r, (char *)buf + got, len - got);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

cn_log_level cn_log_min = CN_LOG_INFO;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

void cn_log(cn_log_level lvl, const char *reqid, const char *fmt, ...)
{
	if (lvl < cn_log_min)
		return;
	static const char *const names[] = { "DEBUG", "INFO", "WARN", "ERROR" };
	char ts[25], line[2048];
	cn_time_iso8601(cn_now_ms(), ts);
	int n = snprintf(line, sizeof line, "%s %-5s ", ts, names[lvl]);
	if (reqid && n >= 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, "[%s] ", reqid);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof line)
		vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_mu);
	fprintf(stderr, "%s\n", line);
	pthread_mutex_unlock(&log_mu);
}

int64_t cn_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cn_deadline_after_ms(int64_t ms, struct timespec *ts)
{
	cn_deadline_on(CLOCK_REALTIME, ms, ts);
}

void cn_deadline_on(int clock, int64_t ms, struct timespec *ts)
{
	clock_gettime((clockid_t)clock, ts);
	int64_t ns = (int64_t)ts->tv_nsec + (ms % 1000) * 1000000;
	ts->tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
}

static void *periodic_main(void *arg)
{
	cn_periodic *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!atomic_load(&p->stop)) {
		struct timespec ts;
		cn_deadline_after_ms(p->every_ms, &ts);
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
		if (atomic_load(&p->stop))
			break;
		pthread_mutex_unlock(&p->mu);
		p->fn(p->arg);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int cn_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	/* the signals a fault raises stay open: blocked, a fault kills the process without
	 * the sanitizers' report (and abort() would have to unblock SIGABRT itself) */
	static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT };
	sigset_t all, old;
	sigfillset(&all);
	for (size_t i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++)
		sigdelset(&all, sync_sigs[i]);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

cn_err cn_periodic_start(cn_periodic *p, int64_t every_ms, void (*fn)(void *arg), void *arg)
{
	p->every_ms = every_ms;
	p->fn = fn;
	p->arg = arg;
	atomic_store(&p->stop, false);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->started = cn_thread_create(&p->thread, NULL, periodic_main, p) == 0;
	if (!p->started) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		return CN_ERR_IO;
	}
	return CN_OK;
}

bool cn_periodic_stopping(cn_periodic *p)
{
	return atomic_load(&p->stop);
}

void cn_periodic_stop(cn_periodic *p)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->stop, true);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	p->started = false;
}

int64_t cn_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cn_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

cn_err cn_parse_duration(const char *s, int64_t *ns)
{
	if (!s || !*s)
		return CN_ERR_INVALID;
	double total = 0;
	const char *p = s;
	bool any = false;
	while (*p) {
		char *end;
		if (*p == '-' || *p == '+')
			return CN_ERR_INVALID;
		double v = strtod(p, &end);
		if (end == p || !isfinite(v) || v < 0)
			return CN_ERR_INVALID;
		p = end;
		double mul;
		if (!strncmp(p, "ms", 2)) {
			mul = 1e6;
			p += 2;
		} else if (!strncmp(p, "us", 2) || !strncmp(p, "µs", 3)) {
			mul = 1e3;
			p += *p == 'u' ? 2 : 3;
		} else if (!strncmp(p, "ns", 2)) {
			mul = 1;
			p += 2;
		} else if (*p == 'h') {
			mul = 3600e9;
			p++;
		} else if (*p == 'm') {
			mul = 60e9;
			p++;
		} else if (*p == 's') {
			mul = 1e9;
			p++;
		} else if (!*p && !any) {
			mul = 1e9; /* plain seconds */
		} else {
			return CN_ERR_INVALID;
		}
		total += v * mul;
		any = true;
	}
	if (total > 365.0 * 24 * 3600e9)
		return CN_ERR_INVALID;
	*ns = (int64_t)llround(total);
	return CN_OK;
}

static const char *const wdays[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
				       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

static char *put_2digits(char *p, int v)
{
	p[0] = (char)('0' + v / 10);
	p[1] = (char)('0' + v % 10);
	return p + 2;
}

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d (m 1..12; a day past the
 * month's end counts on into the next, as timegm's normalisation does). Howard Hinnant's
 * days_from_civil: a few dozen instructions where timegm took ~2,000 (its time zone
 * machinery) on every signed request. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;                                 /* [0, 399] */
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
	return era * 146097 + doe - 719468;
}

/* gmtime_r by arithmetic (its inverse, civil_from_days): the fields cairn formats. */
void cn_time_utc(int64_t secs, struct tm *tm)
{
	int64_t days = secs / 86400, rem = secs % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	memset(tm, 0, sizeof *tm);
	tm->tm_hour = (int)(rem / 3600);
	tm->tm_min = (int)(rem / 60 % 60);
	tm->tm_sec = (int)(rem % 60);
	tm->tm_wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday (4) */
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;                                       /* [0, 146096] */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  /* [0, 399] */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
	int64_t mp = (5 * doy + 2) / 153;                                     /* [0, 11] */
	int d = (int)(doy - (153 * mp + 2) / 5 + 1);
	int m = (int)(mp < 10 ? mp + 3 : mp - 9);
	int64_t y = yoe + era * 400 + (m <= 2);
	tm->tm_mday = d;
	tm->tm_mon = m - 1;
	tm->tm_year = (int)(y - 1900);
	tm->tm_yday = (int)(days - days_from_civil(y, 1, 1));
}

void cn_time_http(int64_t ms, char out[30])
{
	struct tm tm;
	cn_time_utc(ms / 1000, &tm);
	int year = tm.tm_year + 1900;
	if (year >= 0 && year <= 9999) {
		/* by hand: every GET's Last-Modified; snprintf cost ~3,400 instructions here */
		char *p = out;
		memcpy(p, wdays[tm.tm_wday], 3);
		p[3] = ',';
		p[4] = ' ';
		p = put_2digits(p + 5, tm.tm_mday);
		*p++ = ' ';
		memcpy(p, months[tm.tm_mon], 3);
		p[3] = ' ';
		p = put_2digits(p + 4, year / 100);
		p = put_2digits(p, year % 100);
		*p++ = ' ';
		p = put_2digits(p, tm.tm_hour);
		*p++ = ':';
		p = put_2digits(p, tm.tm_min);
		*p++ = ':';
		p = put_2digits(p, tm.tm_sec);
		memcpy(p, " GMT", 5);
		return;
	}
	char tmp[96];
	snprintf(tmp, sizeof tmp, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[tm.tm_wday], tm.tm_mday,
		 months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
	memcpy(out, tmp, 29);
	out[29] = 0;
}

void cn_time_iso8601(int64_t ms, char out[25])
{
	struct tm tm;
	cn_time_utc(ms / 1000, &tm);
	char tmp[96];
	snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
	memcpy(out, tmp, 24);
	out[24] = 0;
}

static cn_err tm_to_ms(struct tm *tm, int64_t *ms)
{
	if (tm->tm_mon < 0 || tm->tm_mon > 11 || tm->tm_mday < 1 || tm->tm_mday > 31 ||
	    tm->tm_hour > 23 || tm->tm_min > 59 || tm->tm_sec > 60 || tm->tm_year < 0)
		return CN_ERR_INVALID;
	int64_t days = days_from_civil((int64_t)tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday);
	*ms = ((days * 24 + tm->tm_hour) * 60 + tm->tm_min) * 60000 + (int64_t)tm->tm_sec * 1000;
	return CN_OK;
}

cn_err cn_time_parse_http(cn_str s, int64_t *ms)
{
	char buf[64];
	if (s.len == 0 || s.len >= sizeof buf)
		return CN_ERR_INVALID;
	memcpy(buf, s.p, s.len);
	buf[s.len] = 0;
	struct tm tm;
	const char *fmts[] = { "%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
			       "%a %b %e %H:%M:%S %Y" };
	for (size_t i = 0; i < 3; i++) {
		memset(&tm, 0, sizeof tm);
		const char *end = strptime(buf, fmts[i], &tm);
		if (end && *end == 0)
			return tm_to_ms(&tm, ms);
	}
	return CN_ERR_INVALID;
}

cn_err cn_time_parse_amz(cn_str s, int64_t *ms)
{
	if (s.len != 16 || s.p[8] != 'T' || s.p[15] != 'Z')
		return CN_ERR_INVALID;
	int v[6];
	const int pos[6][2] = { { 0, 4 }, { 4, 2 }, { 6, 2 }, { 9, 2 }, { 11, 2 }, { 13, 2 } };
	for (int i = 0; i < 6; i++) {
		v[i] = 0;
		for (int j = 0; j < pos[i][1]; j++) {
			char c = s.p[pos[i][0] + j];
			if (c < '0' || c > '9')
				return CN_ERR_INVALID;
			v[i] = v[i] * 10 + (c - '0');
		}
	}
	struct tm tm = { .tm_year = v[0] - 1900, .tm_mon = v[1] - 1, .tm_mday = v[2],
			 .tm_hour = v[3], .tm_min = v[4], .tm_sec = v[5] };
	return tm_to_ms(&tm, ms);
}

void cn_hex_encode(const unsigned char *in, size_t len, char *out)
{
	static const char hx[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hx[in[i] >> 4];
		out[2 * i + 1] = hx[in[i] & 15];
	}
	out[2 * len] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

cn_err cn_hex_decode(cn_str in, unsigned char *out, size_t outlen)
{
	if (in.len != 2 * outlen)
		return CN_ERR_INVALID;
	for (size_t i = 0; i < outlen; i++) {
		int h = hexval(in.p[2 * i]), l = hexval(in.p[2 * i + 1]);
		if (h < 0 || l < 0)
			return CN_ERR_INVALID;
		out[i] = (unsigned char)(h << 4 | l);
	}
	return CN_OK;
}

size_t cn_base64_encode(const unsigned char *in, size_t len, char *out)
{
	return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

cn_err cn_base64_decode(cn_str in, unsigned char *out, size_t cap, size_t *outlen)
{
	static const signed char tbl[256] = {
		['A'] = 1,  ['B'] = 2,  ['C'] = 3,  ['D'] = 4,  ['E'] = 5,  ['F'] = 6,  ['G'] = 7,
		['H'] = 8,  ['I'] = 9,  ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14,
		['O'] = 15, ['P'] = 16, ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21,
		['V'] = 22, ['W'] = 23, ['X'] = 24, ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28,
		['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35,
		['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42,
		['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48, ['w'] = 49,
		['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56,
		['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63,
		['/'] = 64,
	};
	if (in.len % 4)
		return CN_ERR_INVALID;
	size_t n = 0;
	for (size_t i = 0; i < in.len; i += 4) {
		int v[4], pad = 0;
		for (int j = 0; j < 4; j++) {
			unsigned char c = (unsigned char)in.p[i + (size_t)j];
			if (c == '=' && i + 4 == in.len && j >= 2) {
				v[j] = 0;
				pad++;
			} else if (pad || !tbl[c]) {
				return CN_ERR_INVALID;
			} else {
				v[j] = tbl[c] - 1;
			}
		}
		if (pad == 1 && in.p[i + 2] == '=')
			return CN_ERR_INVALID;
		unsigned w = (unsigned)(v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3]);
		unsigned char bytes[3] = { (unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w };
		for (int j = 0; j < 3 - pad; j++) {
			if (n >= cap)
				return CN_ERR_TOO_LARGE;
			out[n++] = bytes[j];
		}
	}
	*outlen = n;
	return CN_OK;
}

cn_err cn_url_decode(cn_str in, bool plus_is_space, char *out, size_t cap, size_t *outlen)
{
	size_t n = 0;
	if (cap < in.len + 1)
		return CN_ERR_TOO_LARGE;
	for (size_t i = 0; i < in.len; i++) {
		char c = in.p[i];
		if (c == '%') {
			if (i + 2 >= in.len)
				return CN_ERR_INVALID;
			int h = hexval(in.p[i + 1]), l = hexval(in.p[i + 2]);
			if (h < 0 || l < 0)
				return CN_ERR_INVALID;
			out[n++] = (char)(h << 4 | l);
			i += 2;
		} else if (c == '+' && plus_is_space) {
			out[n++] = ' ';
		} else {
			out[n++] = c;
		}
	}
	out[n] = 0;
	if (outlen)
		*outlen = n;
	return CN_OK;
}

cn_err cn_url_encode(cn_buf *b, cn_str in, bool keep_slash)
{
	static const char hx[] = "0123456789ABCDEF";
	cn_err e = cn_buf_reserve(b, in.len * 3);
	if (e)
		return e;
	for (size_t i = 0; i < in.len; i++) {
		unsigned char c = (unsigned char)in.p[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && keep_slash)) {
			b->p[b->len++] = (char)c;
		} else {
			b->p[b->len++] = '%';
			b->p[b->len++] = hx[c >> 4];
			b->p[b->len++] = hx[c & 15];
		}
	}
	b->p[b->len] = 0;
	return CN_OK;
}

bool cn_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		unsigned char c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t n;
		uint32_t cp;
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (i + n >= len)
			return false;
		for (size_t j = 1; j <= n; j++) {
			if ((p[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

static bool have_avx;

__attribute__((constructor)) static void detect_avx(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	have_avx = __builtin_cpu_supports("avx");
#endif
}

void cn_simd_settle(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (have_avx)
		__asm__ volatile("vzeroupper" ::: "memory");
#endif
}

const char *cn_env2(const char *name, const char *alias)
{
	const char *v = getenv(name);
	if (v && *v)
		return v;
	v = getenv(alias);
	return v && *v ? v : NULL;
}
