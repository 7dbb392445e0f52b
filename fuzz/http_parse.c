/* http_parse: libFuzzer driver for cn_http_parse_request (src/http/parse.c). Besides "no
 * crash", it checks the parser's invariants and aborts when one breaks: the result is a known
 * status; every view points inside the head; derived fields are consistent (Host present in
 * HTTP/1.1, the authority routed by is the Host sent); a strict prefix of a complete head (or
 * of an incomplete input) is "need more"; parsing exactly the head gives the same head. */
#include "http/http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *base;
static size_t lim;

static void in_head(cn_str s)
{
	if (!s.p || s.p < base || s.p > base + lim || s.len > (size_t)(base + lim - s.p))
		abort();
}

static void check_head(const char *buf, int r, const cn_http_req *q)
{
	base = buf;
	lim = (size_t)r;
	in_head(q->method);
	in_head(q->target);
	in_head(q->path);
	in_head(q->query);
	in_head(q->host);
	if (q->method.len == 0 || q->target.len == 0 || q->nheaders > CN_HTTP_MAX_HEADERS)
		abort();
	if (q->minor_version != 0 && q->minor_version != 1)
		abort();
	if (q->content_length < -1 || q->content_length > (INT64_C(1) << 62))
		abort();
	if (q->chunked && q->content_length != -1)
		abort();
	if (q->chunked && q->minor_version == 0)
		abort();
	if (q->path.len > q->target.len || q->query.len > q->target.len)
		abort();
	for (size_t i = 0; i < q->nheaders; i++) {
		const cn_http_header *h = &q->headers[i];
		in_head(h->name);
		in_head(h->value);
		if (h->name.len == 0 || memchr(h->name.p, ':', h->name.len))
			abort();
		for (size_t j = 0; j < h->value.len; j++) {
			unsigned char c = (unsigned char)h->value.p[j];
			if (c == '\r' || c == '\n' || c == 0)
				abort();
		}
		if (h->value.len && (h->value.p[0] == ' ' || h->value.p[0] == '\t' ||
		                     h->value.p[h->value.len - 1] == ' ' ||
		                     h->value.p[h->value.len - 1] == '\t'))
			abort();
	}
	if (cn_http_req_header(q, "content-length") == NULL && q->content_length != -1)
		abort();
	if (cn_http_req_header(q, "transfer-encoding") == NULL && q->chunked)
		abort();
	const cn_str *host = cn_http_req_header(q, "host");
	if (q->minor_version == 1 && !host)
		abort(); /* HTTP/1.1 without Host */
	if (host && (host->len != q->host.len || strncasecmp(host->p, q->host.p, host->len) != 0))
		abort(); /* routed by another authority than the Host sent */
	if (r < 16 || memcmp(buf + r - 4, "\r\n\r\n", 4) != 0)
		abort(); /* shortest head: "M / HTTP/1.1" CRLF CRLF */
}

static int parse_copy(const char *data, size_t n, cn_http_req *q)
{
	char *b = malloc(n ? n : 1);
	memcpy(b, data, n);
	int r = cn_http_parse_request(b, n, q);
	free(b);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static cn_http_req req, req2;
	const char *buf = (const char *)data;
	int r = cn_http_parse_request(buf, size, &req);

	if (r > 0) {
		if ((size_t)r > size || r > CN_HTTP_MAX_HEAD)
			abort();
		check_head(buf, r, &req);
		(void)cn_http_reason(req.minor_version ? 200 : 404);
		/* exactly the head: same result and same views */
		if (cn_http_parse_request(buf, (size_t)r, &req2) != r)
			abort();
		if (req2.nheaders != req.nheaders || req2.content_length != req.content_length ||
		    req2.chunked != req.chunked || req2.keep_alive != req.keep_alive ||
		    req2.expect_continue != req.expect_continue || req2.path.p != req.path.p ||
		    req2.path.len != req.path.len || req2.host.p != req.host.p)
			abort();
		/* strict prefixes: need more */
		if (parse_copy(buf, (size_t)r - 1, &req2) != 0)
			abort();
		if (parse_copy(buf, (size_t)r / 2, &req2) != 0)
			abort();
	} else if (r == 0) {
		if (size >= CN_HTTP_MAX_HEAD)
			abort();
		if (size && parse_copy(buf, size - 1, &req2) != 0)
			abort();
		if (parse_copy(buf, size / 3, &req2) != 0)
			abort();
	} else if (r != -400 && r != -431 && r != -501 && r != -505) {
		abort();
	} else {
		/* a prefix of a refused input is never a complete head */
		if (parse_copy(buf, size / 2, &req2) > 0)
			abort();
	}
	return 0;
}
