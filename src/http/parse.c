/* parse.c: the HTTP/1.1 request-head parser (RFC 9112 §2-§6), strict and zero-copy over the
 * caller's buffer, in the style of picohttpparser: one pass, no allocation, no state kept
 * between calls (a caller re-parses from the start when more bytes arrive, so it should call
 * again only when new bytes came in). Also the reason-phrase table. Invariants:
 *   PARSE-1. Every cn_str written into cn_http_req points into buf[0 .. returned length).
 *   PARSE-2. No byte at or beyond buf[min(len, CN_HTTP_MAX_HEAD)] is read.
 *   PARSE-3. An error is returned as soon as the bytes seen so far cannot start a valid head, so a
 *      strict prefix of a valid head always parses to 0 ("need more").
 * Strictness: lines end in CRLF (a bare LF or CR is -400), no whitespace before a header
 * colon, no obs-fold, token characters in method and field names, no control characters in
 * the target or field values (bytes >= 0x80 are accepted in both, as most servers do; the s3
 * layer validates decoded keys), Host present in HTTP/1.1 and, with an absolute-form target,
 * naming the target's authority (case-insensitive). Leading empty lines before the request
 * line are skipped (RFC 9112 §2.2). */
#include "http/http.h"

#include <string.h>

/* tchar (RFC 9110 §5.6.2). */
static const unsigned char tchar[256] = {
	['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
	['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
	['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
};

/* Bytes allowed in a request-target: visible ASCII and obs-text. */
static const unsigned char targetchar[256] = {
	[0x21 ... 0x7e] = 1, [0x80 ... 0xff] = 1,
};

/* Bytes allowed in a field value: HTAB, SP, visible ASCII and obs-text. */
static const unsigned char valuechar[256] = {
	['\t'] = 1, [0x20 ... 0x7e] = 1, [0x80 ... 0xff] = 1,
};

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* True when some byte of x is < n (n <= 0x80) or == 0x7f (exact, no false positives). */
static inline bool swar_has_ctl(uint64_t x, unsigned n)
{
	uint64_t lt = (x - ONES * n) & ~x & HIGHS;
	uint64_t y = x ^ (ONES * 0x7f);
	uint64_t del = (y - ONES) & ~y & HIGHS;
	return (lt | del) != 0;
}

/* Advances p over bytes of class tab, 8 at a time while no byte is below lo or DEL. */
static inline const char *scan(const char *p, const char *end, const unsigned char *tab,
                               unsigned lo)
{
	for (;;) {
		while (end - p >= 8) {
			uint64_t x;
			memcpy(&x, p, 8);
			if (swar_has_ctl(x, lo))
				break;
			p += 8;
		}
		if (p == end || !tab[(unsigned char)*p])
			return p;
		p++;
	}
}

/* Compares n bytes of a field name (token chars) against a lowercase literal. */
static inline bool name_is(const char *p, const char *lower, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((p[i] | 0x20) != lower[i])
			return false;
	return true;
}

static inline unsigned char lc(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

/* Case-insensitive equality of arbitrary bytes with a lowercase literal of length n. */
static bool ieq(const char *p, size_t len, const char *lower, size_t n)
{
	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lc((unsigned char)p[i]) != (unsigned char)lower[i])
			return false;
	return true;
}

/* Case-insensitive equality of two byte strings. */
static bool same_ci(cn_str a, cn_str b)
{
	if (a.len != b.len)
		return false;
	for (size_t i = 0; i < a.len; i++)
		if (lc((unsigned char)a.p[i]) != lc((unsigned char)b.p[i]))
			return false;
	return true;
}

/* Iterates the elements of a comma-separated list value (RFC 9110 §5.6.1): sets *e to the
 * next element with OWS trimmed (possibly empty) and returns false at the end. */
static bool list_next(const char **pp, const char *end, cn_str *e)
{
	const char *p = *pp;
	if (p > end)
		return false;
	const char *c = memchr(p, ',', (size_t)(end - p));
	const char *stop = c ? c : end;
	const char *s = p, *t = stop;
	while (s < t && (*s == ' ' || *s == '\t'))
		s++;
	while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
		t--;
	*e = (cn_str){ s, (size_t)(t - s) };
	*pp = stop + 1; /* one past end when no comma: the next call returns false */
	return true;
}

#define CL_MAX (INT64_C(1) << 62)

/* Per-header processing of the fields the parser derives. Returns 0 or a negative status. */
struct seen {
	bool host, te, close, keep_alive;
};

static int derive(cn_http_req *req, const cn_http_header *h, struct seen *seen)
{
	const char *n = h->name.p;
	const char *v = h->value.p, *vend = h->value.p + h->value.len;
	cn_str e;

	switch (h->name.len) {
	case 4:
		if (!name_is(n, "host", 4))
			return 0;
		if (seen->host)
			return -400;
		seen->host = true;
		req->host = h->value;
		return 0;
	case 6:
		if (name_is(n, "expect", 6) && ieq(v, h->value.len, "100-continue", 12))
			req->expect_continue = true;
		return 0;
	case 10:
		if (!name_is(n, "connection", 10))
			return 0;
		while (list_next(&v, vend, &e)) {
			if (ieq(e.p, e.len, "close", 5))
				seen->close = true;
			else if (ieq(e.p, e.len, "keep-alive", 10))
				seen->keep_alive = true;
		}
		return 0;
	case 14: {
		if (!name_is(n, "content-length", 14))
			return 0;
		if (h->value.len == 0)
			return -400;
		int64_t cl = 0;
		for (size_t i = 0; i < h->value.len; i++) {
			unsigned d = (unsigned char)v[i] - '0';
			if (d > 9)
				return -400; /* also rejects lists "5, 5" and signs */
			if (cl > (CL_MAX - d) / 10)
				return -400;
			cl = cl * 10 + d;
		}
		if (req->content_length >= 0 && req->content_length != cl)
			return -400;
		req->content_length = cl;
		return 0;
	}
	case 17:
		if (!name_is(n, "transfer-encoding", 17))
			return 0;
		if (req->minor_version == 0)
			return -400; /* RFC 9112 §6.1: faulty framing in HTTP/1.0 */
		seen->te = true;
		while (list_next(&v, vend, &e)) {
			if (e.len == 0)
				continue;
			if (!ieq(e.p, e.len, "chunked", 7))
				return -501;
			if (req->chunked)
				return -400; /* chunked applied twice */
			req->chunked = true;
		}
		return 0;
	default:
		return 0;
	}
}

/* Splits the request-target into path and query (and host for absolute-form). */
static int split_target(cn_http_req *req, bool *absolute)
{
	const char *t = req->target.p;
	size_t len = req->target.len;
	size_t off;

	*absolute = false;
	if (t[0] == '/') {
		off = 0;
	} else if (len == 1 && t[0] == '*') {
		if (!cn_str_eq_c(req->method, "OPTIONS"))
			return -400;
		req->path = req->target;
		req->query = (cn_str){ t + len, 0 };
		return 0;
	} else {
		size_t scheme;
		if (len > 7 && ieq(t, 7, "http://", 7))
			scheme = 7;
		else if (len > 8 && ieq(t, 8, "https://", 8))
			scheme = 8;
		else
			return -400;
		const char *a = t + scheme, *end = t + len, *q = a;
		while (q < end && *q != '/' && *q != '?')
			q++;
		if (q == a || q == end || *q != '/')
			return -400; /* empty authority, or no path to point at */
		req->host = (cn_str){ a, (size_t)(q - a) };
		*absolute = true;
		off = (size_t)(q - t);
	}
	const char *p = t + off;
	size_t plen = len - off;
	const char *qm = memchr(p, '?', plen);
	if (qm) {
		req->path = (cn_str){ p, (size_t)(qm - p) };
		req->query = (cn_str){ qm + 1, (size_t)(t + len - qm - 1) };
	} else {
		req->path = (cn_str){ p, plen };
		req->query = (cn_str){ t + len, 0 };
	}
	return 0;
}

int cn_http_parse_request(const char *buf, size_t len, cn_http_req *req)
{
	const char *p = buf;
	const char *end = buf + (len < CN_HTTP_MAX_HEAD ? len : CN_HTTP_MAX_HEAD);
	const int more = len >= CN_HTTP_MAX_HEAD ? -431 : 0;

#define NEED(n) do { if (end - p < (ptrdiff_t)(n)) return more; } while (0)

	req->nheaders = 0;
	req->content_length = -1;
	req->chunked = false;
	req->expect_continue = false;
	req->host = (cn_str){ buf, 0 };

	/* Empty lines before the request line. */
	for (;;) {
		NEED(1);
		if (*p == '\n')
			return -400;
		if (*p != '\r')
			break;
		NEED(2);
		if (p[1] != '\n')
			return -400;
		p += 2;
	}

	/* method SP */
	const char *s = p;
	while (p < end && tchar[(unsigned char)*p])
		p++;
	NEED(1);
	if (p == s || *p != ' ')
		return -400;
	req->method = (cn_str){ s, (size_t)(p - s) };
	p++;

	/* request-target SP */
	s = p;
	p = scan(p, end, targetchar, 0x21);
	NEED(1);
	if (p == s || *p != ' ')
		return -400;
	req->target = (cn_str){ s, (size_t)(p - s) };
	p++;

	/* "HTTP/" DIGIT "." DIGIT CRLF, checked byte by byte so garbage fails early. */
	static const char pat[] = "HTTP/9.9\r\n";
	for (size_t i = 0; i < 10; i++) {
		NEED(i + 1);
		unsigned char c = (unsigned char)p[i];
		if (pat[i] == '9') {
			if ((unsigned)c - '0' > 9u)
				return -400;
		} else if (c != (unsigned char)pat[i]) {
			return -400;
		}
		if (i == 7 && (p[5] != '1' || p[7] > '1'))
			return -505;
	}
	req->minor_version = p[7] - '0';
	p += 10;

	bool absolute;
	int r = split_target(req, &absolute);
	if (r < 0)
		return r;

	/* field-line CRLF ... CRLF */
	struct seen seen = { 0 };
	for (;;) {
		NEED(1);
		unsigned char c = (unsigned char)*p;
		if (c == '\r') {
			NEED(2);
			if (p[1] != '\n')
				return -400;
			p += 2;
			break;
		}
		/* Whitespace here is obs-fold or space before the first field: both refused. */
		s = p;
		while (p < end && tchar[(unsigned char)*p])
			p++;
		NEED(1);
		if (p == s || *p != ':')
			return -400;
		if (req->nheaders == CN_HTTP_MAX_HEADERS)
			return -431;
		cn_http_header *h = &req->headers[req->nheaders];
		h->name = (cn_str){ s, (size_t)(p - s) };
		p++;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		s = p;
		p = scan(p, end, valuechar, 0x20);
		NEED(2);
		if (p[0] != '\r' || p[1] != '\n')
			return -400;
		const char *ve = p;
		while (ve > s && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		h->value = (cn_str){ s, (size_t)(ve - s) };
		p += 2;
		req->nheaders++;
		if ((r = derive(req, h, &seen)) < 0)
			return r;
	}
#undef NEED

	if (seen.te && !req->chunked)
		return -400; /* Transfer-Encoding with an empty coding list */
	if (seen.te && req->content_length >= 0)
		return -400;
	if (req->minor_version == 1 && !seen.host)
		return -400; /* RFC 9112 §3.2: an HTTP/1.1 request without Host */
	req->keep_alive = !seen.close && (req->minor_version == 1 || seen.keep_alive);
	if (absolute) {
		/* RFC 9112 §3.2.2: the target's authority overrides Host. A Host that names
		 * another authority is refused: the s3 layer routes by one and a signature may
		 * cover the other, so the two must not disagree. */
		cn_str host_header = req->host;
		split_target(req, &absolute);
		if (seen.host && !same_ci(host_header, req->host))
			return -400;
	}
	return (int)(p - buf);
}

const cn_str *cn_http_req_header(const cn_http_req *req, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < req->nheaders; i++) {
		const cn_str *hn = &req->headers[i].name;
		if (hn->len != n)
			continue;
		size_t j = 0;
		while (j < n && lc((unsigned char)hn->p[j]) == lc((unsigned char)name[j]))
			j++;
		if (j == n)
			return &req->headers[i].value;
	}
	return NULL;
}

const char *cn_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 417: return "Expectation Failed";
	case 422: return "Unprocessable Content";
	case 423: return "Locked";
	case 428: return "Precondition Required";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 499: return "Client Closed Request";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}
