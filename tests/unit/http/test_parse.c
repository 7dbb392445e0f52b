/* test_parse: the request-head parser (src/http/parse.c) — a table of valid and invalid heads
 * with the status each must give, the derived fields (framing, keep-alive, expect, host),
 * header limits, prefixes of valid heads, and the reason-phrase table. */
#include "http/http.h"
#include "test.h"

static cn_http_req req;

/* Parses a copy of s in an exact-size heap buffer (so ASan sees any over-read). */
static int parse_n(const char *s, size_t n)
{
	char *b = malloc(n ? n : 1);
	memcpy(b, s, n);
	int r = cn_http_parse_request(b, n, &req);
	/* Re-point results into s so callers can look at them after free. */
	if (r > 0) {
		ptrdiff_t d = s - b;
#define FIX(x) ((x).p = (x).p ? (x).p + d : NULL)
		FIX(req.method); FIX(req.target); FIX(req.path); FIX(req.query); FIX(req.host);
		for (size_t i = 0; i < req.nheaders; i++) {
			FIX(req.headers[i].name);
			FIX(req.headers[i].value);
		}
#undef FIX
	}
	free(b);
	return r;
}

static int parse(const char *s)
{
	return parse_n(s, strlen(s));
}

static bool eq(cn_str a, const char *b)
{
	return cn_str_eq_c(a, b);
}

#define FULL 1 /* expect the whole input as the head */

static const struct {
	const char *in;
	int want;
} cases[] = {
	/* valid */
	{ "GET / HTTP/1.1\r\nHost: h\r\n\r\n", FULL },
	{ "GET / HTTP/1.0\r\n\r\n", FULL },
	{ "GET /b/k?x=1 HTTP/1.1\r\nHost: a\r\n\r\n", FULL },
	{ "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", FULL },
	{ "PUT /b/k HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", FULL },
	{ "PUT /b/k HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\nHost: h\r\n\r\n", FULL },
	{ "PUT /b/k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", FULL },
	{ "PUT /b/k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:  CHUNKED \r\n\r\n", FULL },
	{ "GET / HTTP/1.1\r\nX-Empty:\r\nX-E2:   \r\nHost: h\r\n\r\n", FULL },
	{ "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", FULL },
	{ "GET http://h:9000/b/k?q HTTP/1.1\r\nHost: h:9000\r\n\r\n", FULL },
	{ "GET http://H.example:9000/b/k?q HTTP/1.1\r\nHost: h.EXAMPLE:9000\r\n\r\n", FULL },
	{ "GET http://h:9000/b/k?q HTTP/1.0\r\n\r\n", FULL },
	{ "M-1.x~! /%41\xc3\xa9 HTTP/1.1\r\nHost: h\r\nA!#$%&'*+-.^_`|~z: v\x80\xff\t x\r\n\r\n",
	  FULL },
	{ "GET / HTTP/1.1\r\nHost: h\r\nA: b\"c(d)e{f}\x7e\r\n\r\n", FULL },
	{ "GET / HTTP/1.1\r\nHost:\r\n\r\n", FULL }, /* empty Host: allowed (RFC 9110 §7.2) */
	/* Host: required in HTTP/1.1; with an absolute-form target, it names the same authority
	 * (the s3 layer routes by one, a signature may cover the other) */
	{ "GET / HTTP/1.1\r\n\r\n", -400 },
	{ "GET http://h:9000/b/k HTTP/1.1\r\n\r\n", -400 },
	{ "GET http://beta.example:9000/k HTTP/1.1\r\nHost: alpha.example:9000\r\n\r\n", -400 },
	{ "GET http://h:9000/k HTTP/1.1\r\nHost: h\r\n\r\n", -400 },
	{ "GET http://h/k HTTP/1.1\r\nHost: h:80\r\n\r\n", -400 },
	{ "GET http://h/k HTTP/1.0\r\nHost: g\r\n\r\n", -400 },
	/* incomplete */
	{ "", 0 },
	{ "\r", 0 },
	{ "G", 0 },
	{ "GET", 0 },
	{ "GET /", 0 },
	{ "GET / HT", 0 },
	{ "GET / HTTP/1.1", 0 },
	{ "GET / HTTP/1.1\r", 0 },
	{ "GET / HTTP/1.1\r\n", 0 },
	{ "GET / HTTP/1.1\r\nHost", 0 },
	{ "GET / HTTP/1.1\r\nHost:", 0 },
	{ "GET / HTTP/1.1\r\nHost: x", 0 },
	{ "GET / HTTP/1.1\r\nHost: x\r\n", 0 },
	{ "GET / HTTP/1.1\r\nHost: x\r\n\r", 0 },
	/* malformed request line */
	{ "\n", -400 },
	{ "GET / HTTP/1.1\nHost: h\n\n", -400 },
	{ "\r\r", -400 },
	{ " GET / HTTP/1.1\r\n\r\n", -400 },
	{ "GET  / HTTP/1.1\r\n\r\n", -400 },
	{ "GET /  HTTP/1.1\r\n\r\n", -400 },
	{ "GET / HTTP/1.1 \r\n\r\n", -400 },
	{ "GET\t/ HTTP/1.1\r\n\r\n", -400 },
	{ "G(T / HTTP/1.1\r\n\r\n", -400 },
	{ "GET HTTP/1.1\r\n\r\n", -400 },
	{ "GET / http/1.1\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\r\n", -400 },
	{ "GET / HTTP/1.x\r\n\r\n", -400 },
	{ "GET / HTTP/11.1\r\n\r\n", -400 },
	{ "GET / HTTP/1.11\r\n\r\n", -400 },
	{ "GET / HTTP/1\r\n\r\n", -400 },
	{ "GET /a\x01 HTTP/1.1\r\n\r\n", -400 },
	{ "GET /a\x7f HTTP/1.1\r\n\r\n", -400 },
	{ "GET a HTTP/1.1\r\n\r\n", -400 },
	{ "GET * HTTP/1.1\r\n\r\n", -400 },
	{ "GET http://h HTTP/1.1\r\n\r\n", -400 },
	{ "GET http:///x HTTP/1.1\r\n\r\n", -400 },
	{ "GET ftp://h/x HTTP/1.1\r\n\r\n", -400 },
	/* unsupported versions */
	{ "GET / HTTP/2.0\r\n\r\n", -505 },
	{ "GET / HTTP/1.2\r\n\r\n", -505 },
	{ "GET / HTTP/0.9\r\n\r\n", -505 },
	{ "GET / HTTP/3.0", -505 },
	/* malformed fields */
	{ "GET / HTTP/1.1\r\nHost : x\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\n Host: x\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\n: x\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\nA\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\nA(b: x\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\nA: x\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\nA: x\ry\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\nA: x\x7fy\r\n\r\n", -400 },
	{ "GET / HTTP/1.1\r\nA: x\r\n\n", -400 },
	{ "GET / HTTP/1.1\r\nA: x\r\n\rx", -400 },
	{ "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -400 },
	/* framing */
	{ "PUT / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nContent-Length:\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 4611686018427387904\r\n\r\n", FULL }, /* 2^62 */
	{ "PUT / HTTP/1.1\r\nContent-Length: 4611686018427387905\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", -501 },
	{ "PUT / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -501 },
	{ "PUT / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", -501 },
	{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", -400 },
	{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	  -400 },
	{ "PUT / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n", -400 },
	{ "PUT / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400 },
};

TEST(test_table)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = strlen(cases[i].in);
		int r = parse_n(cases[i].in, n);
		int want = cases[i].want == FULL ? (int)n : cases[i].want;
		if (r != want)
			fprintf(stderr, "case %zu: \"%s\"\n", i, cases[i].in);
		CHECK_EQ_INT(r, want);
	}
}

TEST(test_nul_bytes)
{
	static const char a[] = "GET /a\0 HTTP/1.1\r\n\r\n";
	static const char b[] = "GET / HTTP/1.1\r\nA: x\0y\r\n\r\n";
	static const char c[] = "GET / HTTP/1.1\r\nA\0: x\r\n\r\n";
	static const char d[] = "\0GET / HTTP/1.1\r\n\r\n";
	CHECK_EQ_INT(parse_n(a, sizeof a - 1), -400);
	CHECK_EQ_INT(parse_n(b, sizeof b - 1), -400);
	CHECK_EQ_INT(parse_n(c, sizeof c - 1), -400);
	CHECK_EQ_INT(parse_n(d, sizeof d - 1), -400);
}

/* Every strict prefix of a valid head is "need more"; appending bytes changes nothing. */
TEST(test_prefixes)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (cases[i].want != FULL)
			continue;
		const char *s = cases[i].in;
		size_t n = strlen(s);
		for (size_t k = 0; k < n; k++) {
			int r = parse_n(s, k);
			if (r != 0)
				fprintf(stderr, "case %zu prefix %zu\n", i, k);
			CHECK_EQ_INT(r, 0);
		}
		char *more = malloc(n + 20);
		memcpy(more, s, n);
		memcpy(more + n, "GET / HTTP/1.1\r\n\r\n", 18);
		CHECK_EQ_INT(parse_n(more, n + 18), (int)n);
		free(more);
	}
}

TEST(test_fields)
{
	const char *s = "PUT /bucket/key%20x?uploadId=7&partNumber=1 HTTP/1.1\r\n"
	                "Host:  example.com:9000  \r\n"
	                "Content-Length: 1024\r\n"
	                "X-Amz-Meta-Foo:\tbar baz\t\r\n"
	                "Expect: 100-Continue\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(eq(req.method, "PUT"));
	CHECK(eq(req.target, "/bucket/key%20x?uploadId=7&partNumber=1"));
	CHECK(eq(req.path, "/bucket/key%20x"));
	CHECK(eq(req.query, "uploadId=7&partNumber=1"));
	CHECK_EQ_INT(req.minor_version, 1);
	CHECK_EQ_INT(req.nheaders, 4);
	CHECK(eq(req.headers[0].name, "Host"));
	CHECK(eq(req.headers[0].value, "example.com:9000"));
	CHECK(eq(req.headers[2].name, "X-Amz-Meta-Foo"));
	CHECK(eq(req.headers[2].value, "bar baz"));
	CHECK(eq(req.host, "example.com:9000"));
	CHECK_EQ_INT(req.content_length, 1024);
	CHECK(!req.chunked);
	CHECK(req.keep_alive);
	CHECK(req.expect_continue);

	const cn_str *v = cn_http_req_header(&req, "x-amz-meta-foo");
	CHECK(v && eq(*v, "bar baz"));
	v = cn_http_req_header(&req, "CONTENT-LENGTH");
	CHECK(v && eq(*v, "1024"));
	CHECK(cn_http_req_header(&req, "x-amz-meta-fo") == NULL);
	CHECK(cn_http_req_header(&req, "x-amz-meta-fooo") == NULL);
	CHECK(cn_http_req_header(&req, "") == NULL);
}

TEST(test_defaults)
{
	const char *s = "GET / HTTP/1.0\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(eq(req.path, "/"));
	CHECK_EQ_INT(req.query.len, 0);
	CHECK(req.query.p == req.target.p + req.target.len);
	CHECK_EQ_INT(req.content_length, -1);
	CHECK(!req.chunked);
	CHECK(!req.expect_continue);
	CHECK_EQ_INT(req.host.len, 0);
	CHECK_EQ_INT(req.nheaders, 0);

	s = "GET /?  HTTP/1.0\r\n\r\n";
	CHECK_EQ_INT(parse(s), -400);
	s = "GET /? HTTP/1.0\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(eq(req.path, "/"));
	CHECK_EQ_INT(req.query.len, 0);
	s = "GET /a?b?c HTTP/1.0\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(eq(req.path, "/a"));
	CHECK(eq(req.query, "b?c"));
}

TEST(test_chunked_flag)
{
	const char *s = "PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(req.chunked);
	CHECK_EQ_INT(req.content_length, -1);
}

TEST(test_absolute_form)
{
	const char *s = "GET HTTPS://node1:9000/b/k?x HTTP/1.1\r\nHost: NODE1:9000\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(eq(req.host, "node1:9000")); /* the target's authority (RFC 9112 §3.2.2) */
	CHECK(eq(req.path, "/b/k"));
	CHECK(eq(req.query, "x"));
	CHECK(eq(req.target, "HTTPS://node1:9000/b/k?x"));
	s = "GET http://node1:9000/b/k HTTP/1.0\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(eq(req.host, "node1:9000"));
	s = "GET http://node1:9000/b/k HTTP/1.1\r\nHost: node2:9000\r\n\r\n";
	CHECK_EQ_INT(parse(s), -400);
	s = "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(eq(req.path, "*"));
}

static const struct {
	const char *version, *conn;
	bool want;
} ka[] = {
	{ "1.1", NULL, true },
	{ "1.1", "close", false },
	{ "1.1", "Close", false },
	{ "1.1", "keep-alive", true },
	{ "1.1", "Keep-Alive, Upgrade", true },
	{ "1.1", "upgrade ,  CLOSE ", false },
	{ "1.1", "closed", true },
	{ "1.1", "", true },
	{ "1.1", ",,close,,", false },
	{ "1.0", NULL, false },
	{ "1.0", "keep-alive", true },
	{ "1.0", "KEEP-ALIVE", true },
	{ "1.0", "foo, keep-alive", true },
	{ "1.0", "keep-alive, close", false },
	{ "1.0", "close, keep-alive", false },
	{ "1.0", "keep-alives", false },
};

TEST(test_keep_alive)
{
	char buf[256];
	for (size_t i = 0; i < sizeof ka / sizeof ka[0]; i++) {
		if (ka[i].conn)
			snprintf(buf, sizeof buf, "GET / HTTP/%s\r\nHost: h\r\nConnection: %s\r\n\r\n",
			         ka[i].version, ka[i].conn);
		else
			snprintf(buf, sizeof buf, "GET / HTTP/%s\r\nHost: h\r\n\r\n", ka[i].version);
		CHECK_EQ_INT(parse(buf), (int)strlen(buf));
		if (req.keep_alive != ka[i].want)
			fprintf(stderr, "keep-alive case %zu\n", i);
		CHECK(req.keep_alive == ka[i].want);
	}
	/* Connection split over two fields */
	const char *s = "GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nConnection: close\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(!req.keep_alive);
}

TEST(test_expect)
{
	const char *s = "PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(req.expect_continue);
	s = "PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continuex\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(!req.expect_continue);
	s = "PUT / HTTP/1.1\r\nHost: h\r\nexpect:100-CONTINUE\r\n\r\n";
	CHECK_EQ_INT(parse(s), (int)strlen(s));
	CHECK(req.expect_continue);
}

TEST(test_header_count)
{
	cn_buf b;
	cn_buf_init(&b);
	cn_buf_puts(&b, "GET / HTTP/1.0\r\n");
	for (int i = 0; i < CN_HTTP_MAX_HEADERS; i++)
		cn_buf_printf(&b, "X-H%d: %d\r\n", i, i);
	size_t at = b.len;
	cn_buf_puts(&b, "\r\n");
	CHECK_EQ_INT(parse_n(b.p, b.len), (int)b.len);
	CHECK_EQ_INT(req.nheaders, CN_HTTP_MAX_HEADERS);
	CHECK(eq(req.headers[127].name, "X-H127"));
	CHECK(eq(req.headers[127].value, "127"));
	b.len = at;
	cn_buf_puts(&b, "X-Last: 1\r\n\r\n");
	CHECK_EQ_INT(parse_n(b.p, b.len), -431);
	b.len = at;
	cn_buf_puts(&b, "X-La"); /* the 129th field is refused as soon as its colon is seen */
	CHECK_EQ_INT(parse_n(b.p, b.len), 0);
	cn_buf_fini(&b);
}

TEST(test_head_size)
{
	size_t max = CN_HTTP_MAX_HEAD;
	char *b = malloc(max + 64);
	/* A head of exactly CN_HTTP_MAX_HEAD bytes is accepted. */
	const char *pre = "GET / HTTP/1.0\r\nX-Big: ";
	size_t pl = strlen(pre);
	memcpy(b, pre, pl);
	memset(b + pl, 'a', max - pl - 4);
	memcpy(b + max - 4, "\r\n\r\n", 4);
	CHECK_EQ_INT(parse_n(b, max), (int)max);
	CHECK_EQ_INT(req.headers[0].value.len, max - pl - 4);
	/* ... and with pipelined bytes after it. */
	memcpy(b + max, "GET / ", 6);
	CHECK_EQ_INT(parse_n(b, max + 6), (int)max);
	/* One byte more is too large, whatever follows. */
	memset(b + pl, 'a', max - pl - 3);
	memcpy(b + max - 3, "\r\n\r\n", 4);
	CHECK_EQ_INT(parse_n(b, max + 1), -431);
	CHECK_EQ_INT(parse_n(b, max), -431);
	CHECK_EQ_INT(parse_n(b, max - 1), 0);
	/* Long request line with no end. */
	memcpy(b, "GET /", 5);
	memset(b + 5, 'x', max + 10);
	CHECK_EQ_INT(parse_n(b, max + 10), -431);
	CHECK_EQ_INT(parse_n(b, max - 1), 0);
	free(b);
}

TEST(test_pipelined)
{
	const char *s = "GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n";
	int r = parse(s);
	CHECK_EQ_INT(r, 19);
	CHECK(eq(req.path, "/a"));
	CHECK_EQ_INT(parse(s + r), 19);
	CHECK(eq(req.path, "/b"));
}

TEST(test_reason)
{
	static const int codes[] = { 100, 200, 204, 206, 301, 304, 307, 400, 403, 404, 405,
	                             409, 411, 412, 413, 416, 431, 500, 501, 503, 505 };
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		CHECK(strcmp(cn_http_reason(codes[i]), "Unknown") != 0);
	CHECK_EQ_STR(cn_http_reason(200), "OK");
	CHECK_EQ_STR(cn_http_reason(404), "Not Found");
	CHECK_EQ_STR(cn_http_reason(503), "Service Unavailable");
	CHECK_EQ_STR(cn_http_reason(0), "Unknown");
	CHECK_EQ_STR(cn_http_reason(-1), "Unknown");
	CHECK_EQ_STR(cn_http_reason(999), "Unknown");
}

int main(void)
{
	RUN(test_table);
	RUN(test_nul_bytes);
	RUN(test_prefixes);
	RUN(test_fields);
	RUN(test_defaults);
	RUN(test_chunked_flag);
	RUN(test_absolute_form);
	RUN(test_keep_alive);
	RUN(test_expect);
	RUN(test_header_count);
	RUN(test_head_size);
	RUN(test_pipelined);
	RUN(test_reason);
	TEST_END();
}
