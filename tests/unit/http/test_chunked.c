/* test_chunked: the body decoders of src/http/chunked.c — chunked (RFC 9112 §7.1) and
 * aws-chunked (SigV4 streaming). Every case is decoded whole, split in two at every
 * position, one byte at a time, and with tiny output buffers; all runs must agree on the
 * payload, the verifier calls, the bytes consumed and the result. */
#include "http/http.h"
#include "test.h"

/* ---- a recording verifier ---- */
typedef struct rec {
	cn_buf log;       /* one line per callback (chunk_data is summed per chunk) */
	size_t data_len;  /* bytes passed to chunk_data since the last chunk_end */
	cn_buf data;      /* all bytes passed to chunk_data */
	int calls;        /* chunk_end + trailer + trailers_end calls */
	int fail_at;      /* the call number that returns CN_ERR_DIGEST (0: never) */
} rec;

static cn_err rec_ret(rec *r)
{
	r->calls++;
	if (r->fail_at && r->calls == r->fail_at) {
		cn_buf_puts(&r->log, "FAIL\n");
		return CN_ERR_DIGEST;
	}
	return CN_OK;
}

static void rec_data(void *ctx, const void *p, size_t len)
{
	rec *r = ctx;
	r->data_len += len;
	cn_buf_append(&r->data, p, len);
}

static cn_err rec_end(void *ctx, cn_str sig)
{
	rec *r = ctx;
	cn_buf_printf(&r->log, "end %zu [%.*s]\n", r->data_len, (int)sig.len, sig.p);
	r->data_len = 0;
	return rec_ret(r);
}

static cn_err rec_trailer(void *ctx, cn_str name, cn_str value)
{
	rec *r = ctx;
	cn_buf_printf(&r->log, "trailer [%.*s]=[%.*s]\n", (int)name.len, name.p, (int)value.len,
	              value.p);
	return rec_ret(r);
}

static cn_err rec_trailers_end(void *ctx, cn_str sig)
{
	rec *r = ctx;
	cn_buf_printf(&r->log, "trailers_end [%.*s]\n", (int)sig.len, sig.p);
	return rec_ret(r);
}

/* ---- the driver ---- */
typedef struct result {
	cn_err err;
	bool done, last_chunk;
	size_t consumed;
	cn_buf out;
	cn_buf log, data;
} result;

enum { KIND_CHUNKED, KIND_AWS, KIND_AWS_NOVERIFIER };

/* Feeds in[0..n) in pieces: the first of length first (0: all), then pieces of step
 * (0: all the rest); decodes into an output buffer of outcap bytes. */
static void run(int kind, const char *in, size_t n, size_t first, size_t step, size_t outcap,
                int fail_at, result *res)
{
	static cn_http_chunked cst;
	static cn_http_awschunked ast;
	rec r = { .fail_at = fail_at };
	cn_buf_init(&r.log);
	cn_buf_init(&r.data);
	cn_chunk_verifier v = { rec_data, rec_end, rec_trailer, rec_trailers_end, &r };
	char *out = malloc(outcap);
	char *copy = malloc(n ? n : 1);
	memcpy(copy, in, n);

	if (kind == KIND_CHUNKED)
		cn_http_chunked_init(&cst);
	else
		cn_http_awschunked_init(&ast, kind == KIND_AWS ? &v : NULL);
	memset(res, 0, sizeof *res);
	cn_buf_init(&res->out);

	size_t off = 0;
	bool stop = false;
	while (!stop && off < n) {
		size_t piece = n - off;
		if (off == 0 && first && first < piece)
			piece = first;
		else if (off > 0 && step && step < piece)
			piece = step;
		/* each piece in its own exact-size buffer so over-reads are caught */
		char *pb = malloc(piece);
		memcpy(pb, copy + off, piece);
		size_t used = 0;
		for (;;) {
			size_t c, pr;
			cn_err e;
			bool done;
			if (kind == KIND_CHUNKED) {
				e = cn_http_chunked_decode(&cst, pb + used, piece - used, &c, out, outcap,
				                           &pr);
				done = cst.done;
			} else {
				e = cn_http_awschunked_decode(&ast, pb + used, piece - used, &c, out,
				                              outcap, &pr);
				done = ast.done;
			}
			cn_buf_append(&res->out, out, pr);
			used += c;
			if (e) {
				res->err = e;
				stop = true;
				/* CHUNK-3: an error is sticky; nothing more is consumed or produced */
				if (kind == KIND_CHUNKED)
					e = cn_http_chunked_decode(&cst, "0\r\n\r\n", 5, &c, out, outcap, &pr);
				else
					e = cn_http_awschunked_decode(&ast, "0\r\n\r\n", 5, &c, out, outcap,
					                              &pr);
				CHECK(e == res->err && c == 0 && pr == 0);
				break;
			}
			if (done) {
				stop = true;
				break;
			}
			if (c == 0 && pr == 0) {
				CHECK(used == piece); /* no progress only when input is exhausted */
				break;
			}
		}
		free(pb);
		off += used;
		if (!stop && used != piece)
			break;
	}
	res->consumed = off;
	res->done = kind == KIND_CHUNKED ? cst.done : ast.done;
	res->last_chunk = kind == KIND_CHUNKED ? false : ast.last_chunk;
	res->log = r.log;
	res->data = r.data;
	free(out);
	free(copy);
}

static void result_fini(result *r)
{
	cn_buf_fini(&r->out);
	cn_buf_fini(&r->log);
	cn_buf_fini(&r->data);
}

static bool buf_eq(const cn_buf *a, const cn_buf *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static bool same(const result *a, const result *b)
{
	return a->err == b->err && a->done == b->done && a->consumed == b->consumed &&
	       a->last_chunk == b->last_chunk && buf_eq(&a->out, &b->out) &&
	       buf_eq(&a->log, &b->log) && buf_eq(&a->data, &b->data);
}

/* Decodes whole, then in every other split; all must match. Returns the whole-run result. */
static void run_all(int kind, const char *in, size_t n, int fail_at, result *ref)
{
	run(kind, in, n, 0, 0, 1 << 12, fail_at, ref);
	static const size_t caps[] = { 1, 2, 3, 7, 64 };
	for (size_t k = 1; k < n; k++) {
		result r;
		run(kind, in, n, k, 0, 1 << 12, fail_at, &r);
		if (!same(ref, &r))
			fprintf(stderr, "split at %zu differs (err %d vs %d)\n", k, r.err, ref->err);
		CHECK(same(ref, &r));
		result_fini(&r);
	}
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
		result r;
		run(kind, in, n, 1, 1, caps[i], fail_at, &r);
		if (!same(ref, &r))
			fprintf(stderr, "1-byte feed, outcap %zu differs\n", caps[i]);
		CHECK(same(ref, &r));
		result_fini(&r);
		run(kind, in, n, 0, 0, caps[i], fail_at, &r);
		CHECK(same(ref, &r));
		result_fini(&r);
		run(kind, in, n, 3, 5, caps[i], fail_at, &r);
		CHECK(same(ref, &r));
		result_fini(&r);
	}
	if (kind == KIND_AWS) {
		/* without a verifier: same payload, same result unless a verifier failed */
		result r;
		run(KIND_AWS_NOVERIFIER, in, n, 0, 0, 1 << 12, 0, &r);
		if (!fail_at) {
			CHECK(r.err == ref->err && r.done == ref->done && r.consumed == ref->consumed);
			CHECK(buf_eq(&r.out, &ref->out));
		}
		result_fini(&r);
	}
}

#define S(lit) lit, sizeof(lit) - 1

/* ---- chunked ---- */
static const struct {
	const char *in;
	size_t len;
	cn_err err;
	bool done;
	const char *out;
	size_t consumed; /* 0: the whole input */
} ccases[] = {
	{ S("5\r\nhello\r\n0\r\n\r\n"), CN_OK, true, "hello", 0 },
	{ S("0\r\n\r\n"), CN_OK, true, "", 0 },
	{ S("000\r\n\r\n"), CN_OK, true, "", 0 },
	{ S("3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"), CN_OK, true, "abcdefg", 0 },
	{ S("A\r\n0123456789\r\n0\r\n\r\n"), CN_OK, true, "0123456789", 0 },
	{ S("a\r\n0123456789\r\n0\r\n\r\n"), CN_OK, true, "0123456789", 0 },
	{ S("0000a\r\n0123456789\r\n0\r\n\r\n"), CN_OK, true, "0123456789", 0 },
	{ S("5;name=value;x\r\nhello\r\n0;last\r\n\r\n"), CN_OK, true, "hello", 0 },
	{ S("5 ;a=\"b c\"\r\nhello\r\n0\t\r\n\r\n"), CN_OK, true, "hello", 0 },
	{ S("5\r\nhe\r\nl\r\n0\r\n\r\n"), CN_OK, true, "he\r\nl", 0 },
	{ S("5\r\nhello\r\n0\r\nX-Trailer: v\r\nY: w\r\n\r\n"), CN_OK, true, "hello", 0 },
	/* bytes after the body are not consumed (pipelining) */
	{ S("5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n"), CN_OK, true, "hello", 15 },
	/* incomplete */
	{ S("5\r\nhel"), CN_OK, false, "hel", 0 },
	{ S("5\r\nhello\r\n0\r\n"), CN_OK, false, "hello", 0 },
	{ S("5\r\nhello\r\n0\r\nX: y\r\n"), CN_OK, false, "hello", 0 },
	/* errors */
	{ S("\r\n"), CN_ERR_INVALID, false, "", 1 },
	{ S("g\r\n"), CN_ERR_INVALID, false, "", 1 },
	{ S(";x\r\n"), CN_ERR_INVALID, false, "", 1 },
	{ S("-1\r\n"), CN_ERR_INVALID, false, "", 1 },
	{ S(" 5\r\n"), CN_ERR_INVALID, false, "", 1 },
	{ S("5x\r\nhello\r\n"), CN_ERR_INVALID, false, "", 2 },
	{ S("5 x\r\nhello\r\n"), CN_ERR_INVALID, false, "", 3 },
	{ S("5\nhello\r\n"), CN_ERR_INVALID, false, "", 2 },
	{ S("5\r\rhello\r\n"), CN_ERR_INVALID, false, "", 3 },
	{ S("5;a\nb\r\nhello\r\n"), CN_ERR_INVALID, false, "", 4 },
	{ S("5;a\x01\r\nhello\r\n"), CN_ERR_INVALID, false, "", 4 },
	{ S("5\r\nhelloX\r\n"), CN_ERR_INVALID, false, "hello", 9 },
	{ S("5\r\nhello\rX"), CN_ERR_INVALID, false, "hello", 10 },
	{ S("5\r\nhello\n"), CN_ERR_INVALID, false, "hello", 9 },
	{ S("10000000000000000\r\n"), CN_ERR_INVALID, false, "", 17 },
	{ S("0\r\n\n"), CN_ERR_INVALID, false, "", 4 },
	{ S("0\r\n\rX"), CN_ERR_INVALID, false, "", 5 },
	{ S("0\r\n X: y\r\n\r\n"), CN_ERR_INVALID, false, "", 4 },
	{ S("0\r\n: y\r\n\r\n"), CN_ERR_INVALID, false, "", 4 },
	{ S("0\r\nX: y\nZ\r\n\r\n"), CN_ERR_INVALID, false, "", 8 },
	{ S("0\r\nX: y\rZ\r\n"), CN_ERR_INVALID, false, "", 9 },
};

TEST(test_chunked_table)
{
	for (size_t i = 0; i < sizeof ccases / sizeof ccases[0]; i++) {
		result r;
		run_all(KIND_CHUNKED, ccases[i].in, ccases[i].len, 0, &r);
		size_t want_consumed = ccases[i].consumed ? ccases[i].consumed : ccases[i].len;
		if (r.err != ccases[i].err || r.done != ccases[i].done ||
		    r.consumed != want_consumed)
			fprintf(stderr, "chunked case %zu: err %d done %d consumed %zu\n", i, r.err,
			        r.done, r.consumed);
		CHECK_EQ_INT(r.err, ccases[i].err);
		CHECK(r.done == ccases[i].done);
		CHECK_EQ_INT(r.consumed, want_consumed);
		CHECK(r.out.len == strlen(ccases[i].out) &&
		      (r.out.len == 0 || !memcmp(r.out.p, ccases[i].out, r.out.len)));
		result_fini(&r);
	}
}

TEST(test_chunked_max_size)
{
	result r;
	/* the largest 64-bit size is accepted (the payload simply never ends here) */
	run(KIND_CHUNKED, S("FFFFFFFFFFFFFFFF\r\nabc"), 0, 0, 16, 0, &r);
	CHECK_EQ_INT(r.err, CN_OK);
	CHECK_EQ_INT(r.out.len, 3);
	result_fini(&r);
	run(KIND_CHUNKED, S("0FFFFFFFFFFFFFFFF0\r\n"), 0, 0, 16, 0, &r);
	CHECK_EQ_INT(r.err, CN_ERR_INVALID);
	result_fini(&r);
}

static void long_line(cn_buf *b, const char *pre, size_t fill, const char *post)
{
	cn_buf_init(b);
	cn_buf_puts(b, pre);
	for (size_t i = 0; i < fill; i++)
		cn_buf_append(b, "x", 1);
	cn_buf_puts(b, post);
}

TEST(test_chunked_limits)
{
	cn_buf b;
	result r;
	/* size line of exactly 4096 bytes: "5;" + 4094 */
	long_line(&b, "5;", 4094, "\r\nhello\r\n0\r\n\r\n");
	run(KIND_CHUNKED, b.p, b.len, 0, 0, 64, 0, &r);
	CHECK_EQ_INT(r.err, CN_OK);
	CHECK(r.done);
	result_fini(&r);
	cn_buf_fini(&b);
	long_line(&b, "5;", 4095, "\r\nhello\r\n0\r\n\r\n");
	run(KIND_CHUNKED, b.p, b.len, 0, 0, 64, 0, &r);
	CHECK_EQ_INT(r.err, CN_ERR_TOO_LARGE);
	CHECK_EQ_INT(r.consumed, 4097);
	result_fini(&r);
	cn_buf_fini(&b);
	/* a size of 4097 zeros */
	cn_buf_init(&b);
	for (int i = 0; i < 4097; i++)
		cn_buf_append(&b, "0", 1);
	cn_buf_puts(&b, "\r\n\r\n");
	run(KIND_CHUNKED, b.p, b.len, 0, 0, 64, 0, &r);
	CHECK_EQ_INT(r.err, CN_ERR_TOO_LARGE);
	result_fini(&r);
	cn_buf_fini(&b);
	/* trailer line limit */
	long_line(&b, "0\r\nX:", 4094, "\r\n\r\n");
	run(KIND_CHUNKED, b.p, b.len, 0, 0, 64, 0, &r);
	CHECK_EQ_INT(r.err, CN_OK);
	CHECK(r.done);
	result_fini(&r);
	cn_buf_fini(&b);
	long_line(&b, "0\r\nX:", 4095, "\r\n\r\n");
	run(KIND_CHUNKED, b.p, b.len, 0, 0, 64, 0, &r);
	CHECK_EQ_INT(r.err, CN_ERR_TOO_LARGE);
	result_fini(&r);
	cn_buf_fini(&b);
	/* trailer count limit: 64 ok, 65 too many */
	for (int n = 64; n <= 65; n++) {
		cn_buf_init(&b);
		cn_buf_puts(&b, "0\r\n");
		for (int i = 0; i < n; i++)
			cn_buf_printf(&b, "T%d: v\r\n", i);
		cn_buf_puts(&b, "\r\n");
		run(KIND_CHUNKED, b.p, b.len, 0, 0, 64, 0, &r);
		CHECK_EQ_INT(r.err, n == 64 ? CN_OK : CN_ERR_TOO_LARGE);
		CHECK(r.done == (n == 64));
		result_fini(&r);
		cn_buf_fini(&b);
	}
}

TEST(test_chunked_large_payload)
{
	/* 3 chunks with pseudo-random payload, split everywhere */
	cn_buf b, want;
	cn_buf_init(&b);
	cn_buf_init(&want);
	unsigned x = 12345;
	static const size_t sizes[] = { 100, 1, 300 };
	for (size_t c = 0; c < 3; c++) {
		cn_buf_printf(&b, "%zx\r\n", sizes[c]);
		for (size_t i = 0; i < sizes[c]; i++) {
			x = x * 1103515245 + 12345;
			char ch = (char)(x >> 16);
			cn_buf_append(&b, &ch, 1);
			cn_buf_append(&want, &ch, 1);
		}
		cn_buf_puts(&b, "\r\n");
	}
	cn_buf_puts(&b, "0\r\n\r\n");
	result r;
	run_all(KIND_CHUNKED, b.p, b.len, 0, &r);
	CHECK_EQ_INT(r.err, CN_OK);
	CHECK(r.done);
	CHECK(buf_eq(&r.out, &want));
	result_fini(&r);
	cn_buf_fini(&b);
	cn_buf_fini(&want);
}

/* ---- aws-chunked ---- */
#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
#define TSIG "63bddb248ad2590c92712055f51b8e78ab024eead08276b24f010b0efd74843f"

static const struct {
	const char *in;
	size_t len;
	cn_err err;
	bool done;
	const char *out;
	const char *log;
} acases[] = {
	/* signed, no trailers */
	{ S("5;chunk-signature=" SIG1 "\r\nhello\r\n3;chunk-signature=" SIG2
	    "\r\nabc\r\n0;chunk-signature=" SIG3 "\r\n\r\n"),
	  CN_OK, true, "helloabc",
	  "end 5 [" SIG1 "]\nend 3 [" SIG2 "]\nend 0 [" SIG3 "]\ntrailers_end []\n" },
	/* unsigned with a trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER) */
	{ S("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"), CN_OK, true, "hello",
	  "end 5 []\nend 0 []\ntrailer [x-amz-checksum-crc32]=[AAAAAA==]\ntrailers_end []\n" },
	/* unsigned, no trailers */
	{ S("5\r\nhello\r\n0\r\n\r\n"), CN_OK, true, "hello", "end 5 []\nend 0 []\ntrailers_end []\n" },
	{ S("0\r\n\r\n"), CN_OK, true, "", "end 0 []\ntrailers_end []\n" },
	/* signed with trailers (STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER) */
	{ S("3;chunk-signature=" SIG1 "\r\nabc\r\n0;chunk-signature=" SIG2
	    "\r\nx-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:" TSIG "\r\n\r\n"),
	  CN_OK, true, "abc",
	  "end 3 [" SIG1 "]\nend 0 [" SIG2 "]\ntrailer [x-amz-checksum-crc32c]=[sOO8/Q==]\n"
	  "trailers_end [" TSIG "]\n" },
	/* trailer values are trimmed; names kept as sent */
	{ S("0\r\nX-Amz-Checksum-Sha256:  \tabc= \r\nX-A:\r\nX-Amz-Trailer-Signature: " TSIG
	    "\t\r\n\r\n"),
	  CN_OK, true, "",
	  "end 0 []\ntrailer [X-Amz-Checksum-Sha256]=[abc=]\ntrailer [X-A]=[]\n"
	  "trailers_end [" TSIG "]\n" },
	/* other chunk extensions are ignored; hex digits in any case */
	{ S("A;x=1;chunk-signature=" SIG1 ";y\r\n0123456789\r\n0;chunk-signature=" SIG2 "\r\n\r\n"),
	  CN_OK, true, "0123456789", "end 10 [" SIG1 "]\nend 0 [" SIG2 "]\ntrailers_end []\n" },
	/* bytes after the body are left alone */
	{ S("0\r\n\r\nNEXT"), CN_OK, true, "", "end 0 []\ntrailers_end []\n" },
	/* incomplete */
	{ S("5;chunk-signature=" SIG1 "\r\nhel"), CN_OK, false, "hel", "" },
	{ S("0;chunk-signature=" SIG1 "\r\n"), CN_OK, false, "", "end 0 [" SIG1 "]\n" },
	{ S("0\r\nx-amz-checksum-crc32:AAAAAA==\r\n"), CN_OK, false, "",
	  "end 0 []\ntrailer [x-amz-checksum-crc32]=[AAAAAA==]\n" },
	/* errors */
	{ S("\r\n"), CN_ERR_INVALID, false, "", "" },
	{ S("x\r\n"), CN_ERR_INVALID, false, "", "" },
	{ S("5\nhello"), CN_ERR_INVALID, false, "", "" },
	{ S("5 \r\nhello"), CN_ERR_INVALID, false, "", "" },
	{ S("5;\r\nhello"), CN_ERR_INVALID, false, "", "" },
	{ S("5;chunk-signature=\r\nhello"), CN_ERR_INVALID, false, "", "" },
	{ S("5;chunk-signature=xyz\r\nhello"), CN_ERR_INVALID, false, "", "" },
	{ S("5;chunk-signature=" SIG1 ";chunk-signature=" SIG1 "\r\nhello"), CN_ERR_INVALID,
	  false, "", "" },
	{ S("5;chunk-signature=" SIG1 "0" SIG1 "\r\nhello"), CN_ERR_INVALID, false, "", "" },
	{ S("5\r\nhelloX"), CN_ERR_INVALID, false, "hello", "" },
	{ S("5\r\nhello\rX"), CN_ERR_INVALID, false, "hello", "" },
	{ S("5\r\nhello\r\r"), CN_ERR_INVALID, false, "hello", "" },
	{ S("5\r\r"), CN_ERR_INVALID, false, "", "" },
	{ S("5\r\nhello\r\n0\r\nno-colon\r\n\r\n"), CN_ERR_INVALID, false, "hello",
	  "end 5 []\nend 0 []\n" },
	{ S("0\r\n:v\r\n\r\n"), CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\r\nna me:v\r\n\r\n"), CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\r\nn:v\x01\r\n\r\n"), CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\r\nn:v\nx\r\n\r\n"), CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\r\nn:v\r\r\n"), CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\r\n\rx"), CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\r\nx-amz-trailer-signature:zz\r\n\r\n"), CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\r\nx-amz-trailer-signature:\r\n\r\n"), CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\r\nx-amz-trailer-signature:" TSIG "\r\nx-amz-trailer-signature:" TSIG "\r\n\r\n"),
	  CN_ERR_INVALID, false, "", "end 0 []\n" },
	{ S("0\0\r\n\r\n"), CN_ERR_INVALID, false, "", "" },
	/* chunk size limit */
	{ S("4000001\r\n"), CN_ERR_TOO_LARGE, false, "", "" },
	{ S("FFFFFFFFFFFFFFFFFFFFFFFF\r\n"), CN_ERR_TOO_LARGE, false, "", "" },
	{ S("4000000\r\nab"), CN_OK, false, "ab", "" },
	{ S("00000000004000000\r\nab"), CN_OK, false, "ab", "" },
};

TEST(test_aws_table)
{
	for (size_t i = 0; i < sizeof acases / sizeof acases[0]; i++) {
		result r;
		run_all(KIND_AWS, acases[i].in, acases[i].len, 0, &r);
		bool log_ok = r.log.len == strlen(acases[i].log) &&
		              (r.log.len == 0 || !memcmp(r.log.p, acases[i].log, r.log.len));
		bool out_ok = r.out.len == strlen(acases[i].out) &&
		              (r.out.len == 0 || !memcmp(r.out.p, acases[i].out, r.out.len));
		if (r.err != acases[i].err || r.done != acases[i].done || !log_ok || !out_ok)
			fprintf(stderr, "aws case %zu: err %d done %d log:\n%.*s", i, r.err, r.done,
			        (int)r.log.len, r.log.p ? r.log.p : "");
		CHECK_EQ_INT(r.err, acases[i].err);
		CHECK(r.done == acases[i].done);
		CHECK(log_ok);
		CHECK(out_ok);
		CHECK(buf_eq(&r.out, &r.data)); /* chunk_data saw exactly the payload */
		if (r.done)
			CHECK(r.last_chunk);
		if (acases[i].err == CN_OK && !r.done)
			CHECK_EQ_INT(r.consumed, acases[i].len);
		result_fini(&r);
	}
}

TEST(test_aws_not_past_end)
{
	result r;
	run_all(KIND_AWS, S("0\r\n\r\nNEXT"), 0, &r);
	CHECK_EQ_INT(r.consumed, 5);
	result_fini(&r);
}

TEST(test_aws_last_chunk_flag)
{
	result r;
	run(KIND_AWS, S("3\r\nabc\r\n0;chunk-signature=" SIG1 "\r\n"), 0, 0, 64, 0, &r);
	CHECK_EQ_INT(r.err, CN_OK);
	CHECK(!r.done);
	CHECK(r.last_chunk);
	result_fini(&r);
	run(KIND_AWS, S("3\r\nabc\r\n"), 0, 0, 64, 0, &r);
	CHECK(!r.last_chunk);
	result_fini(&r);
}

/* A verifier error at each callback stops decoding there, with that error. */
TEST(test_aws_verifier_error)
{
	static const char in[] = "3;chunk-signature=" SIG1 "\r\nabc\r\n2;chunk-signature=" SIG2
	                         "\r\nde\r\n0;chunk-signature=" SIG3
	                         "\r\nx-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:"
	                         TSIG "\r\n\r\n";
	static const char *const logs[] = {
		"end 3 [" SIG1 "]\nFAIL\n",
		"end 3 [" SIG1 "]\nend 2 [" SIG2 "]\nFAIL\n",
		"end 3 [" SIG1 "]\nend 2 [" SIG2 "]\nend 0 [" SIG3 "]\nFAIL\n",
		"end 3 [" SIG1 "]\nend 2 [" SIG2 "]\nend 0 [" SIG3 "]\n"
		"trailer [x-amz-checksum-crc32]=[AAAAAA==]\nFAIL\n",
		"end 3 [" SIG1 "]\nend 2 [" SIG2 "]\nend 0 [" SIG3 "]\n"
		"trailer [x-amz-checksum-crc32]=[AAAAAA==]\ntrailers_end [" TSIG "]\nFAIL\n",
	};
	static const char *const outs[] = { "abc", "abcde", "abcde", "abcde", "abcde" };
	for (int f = 1; f <= 5; f++) {
		result r;
		run_all(KIND_AWS, in, sizeof in - 1, f, &r);
		CHECK_EQ_INT(r.err, CN_ERR_DIGEST);
		CHECK(!r.done);
		CHECK(r.log.len == strlen(logs[f - 1]) && !memcmp(r.log.p, logs[f - 1], r.log.len));
		CHECK(r.out.len == strlen(outs[f - 1]) && !memcmp(r.out.p, outs[f - 1], r.out.len));
		result_fini(&r);
	}
	/* no failure: the whole stream */
	result r;
	run_all(KIND_AWS, in, sizeof in - 1, 0, &r);
	CHECK_EQ_INT(r.err, CN_OK);
	CHECK(r.done);
	CHECK_EQ_INT(r.consumed, sizeof in - 1);
	result_fini(&r);
}

TEST(test_aws_limits)
{
	cn_buf b;
	result r;
	/* header line of 4096 bytes is fine, 4097 too long */
	for (int extra = 0; extra <= 1; extra++) {
		cn_buf_init(&b);
		cn_buf_puts(&b, "3;");
		for (int i = 0; i < 4094 + extra; i++)
			cn_buf_puts(&b, "x");
		cn_buf_puts(&b, "\r\nabc\r\n0\r\n\r\n");
		run(KIND_AWS, b.p, b.len, 0, 0, 64, 0, &r);
		CHECK_EQ_INT(r.err, extra ? CN_ERR_TOO_LARGE : CN_OK);
		if (extra)
			CHECK_EQ_INT(r.consumed, 4097);
		result_fini(&r);
		cn_buf_fini(&b);
	}
	/* trailer line of 4096 bytes is fine, 4097 too long */
	for (int extra = 0; extra <= 1; extra++) {
		cn_buf_init(&b);
		cn_buf_puts(&b, "0\r\nx:");
		for (int i = 0; i < 4094 + extra; i++)
			cn_buf_puts(&b, "v");
		cn_buf_puts(&b, "\r\n\r\n");
		run(KIND_AWS, b.p, b.len, 0, 0, 64, 0, &r);
		CHECK_EQ_INT(r.err, extra ? CN_ERR_TOO_LARGE : CN_OK);
		result_fini(&r);
		cn_buf_fini(&b);
	}
	/* 16 trailer lines (the signature counts) fine, 17 too many */
	for (int n = 16; n <= 17; n++) {
		cn_buf_init(&b);
		cn_buf_puts(&b, "0\r\n");
		for (int i = 0; i < n - 1; i++)
			cn_buf_printf(&b, "t%d:v\r\n", i);
		cn_buf_puts(&b, "x-amz-trailer-signature:" TSIG "\r\n\r\n");
		run(KIND_AWS, b.p, b.len, 0, 0, 64, 0, &r);
		CHECK_EQ_INT(r.err, n == 16 ? CN_OK : CN_ERR_TOO_LARGE);
		CHECK(r.done == (n == 16));
		result_fini(&r);
		cn_buf_fini(&b);
	}
}

TEST(test_aws_big_chunk)
{
	/* a 64 KiB signed chunk like the SDKs send, then a short one */
	size_t n = 65536;
	cn_buf b, want;
	cn_buf_init(&b);
	cn_buf_init(&want);
	cn_buf_puts(&b, "10000;chunk-signature=" SIG1 "\r\n");
	for (size_t i = 0; i < n; i++) {
		char c = (char)('a' + i % 26);
		cn_buf_append(&b, &c, 1);
		cn_buf_append(&want, &c, 1);
	}
	cn_buf_puts(&b, "\r\n400;chunk-signature=" SIG2 "\r\n");
	for (size_t i = 0; i < 1024; i++) {
		cn_buf_append(&b, "z", 1);
		cn_buf_append(&want, "z", 1);
	}
	cn_buf_puts(&b, "\r\n0;chunk-signature=" SIG3 "\r\n\r\n");
	static const size_t steps[] = { 1, 7, 4096, 70000 };
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		result r;
		run(KIND_AWS, b.p, b.len, steps[i], steps[i], steps[i] > 100 ? 8192 : 5, 0, &r);
		CHECK_EQ_INT(r.err, CN_OK);
		CHECK(r.done);
		CHECK(buf_eq(&r.out, &want));
		CHECK(buf_eq(&r.data, &want));
		CHECK_EQ_STR(r.log.p, "end 65536 [" SIG1 "]\nend 1024 [" SIG2 "]\nend 0 [" SIG3
		                      "]\ntrailers_end []\n");
		result_fini(&r);
	}
	cn_buf_fini(&b);
	cn_buf_fini(&want);
}

static int partial_calls;
static cn_err only_end(void *ctx, cn_str sig)
{
	partial_calls++;
	return CN_OK;
}

/* A verifier may leave callbacks NULL. */
TEST(test_aws_partial_verifier)
{
	cn_chunk_verifier v = { .chunk_end = only_end };
	cn_http_awschunked st;
	cn_http_awschunked_init(&st, &v);
	static const char in[] = "2\r\nab\r\n0\r\nx:y\r\n\r\n";
	char out[16];
	size_t c, p;
	partial_calls = 0;
	CHECK_EQ_INT(cn_http_awschunked_decode(&st, in, sizeof in - 1, &c, out, sizeof out, &p),
	             CN_OK);
	CHECK(st.done);
	CHECK_EQ_INT(c, sizeof in - 1);
	CHECK_EQ_INT(p, 2);
	CHECK_EQ_INT(partial_calls, 2);
}

/* Zero output room: framing advances, payload waits. */
TEST(test_zero_outcap)
{
	cn_http_chunked st;
	cn_http_chunked_init(&st);
	size_t c, p;
	char out[8];
	CHECK_EQ_INT(cn_http_chunked_decode(&st, "5\r\nhello\r\n0\r\n\r\n", 15, &c, out, 0, &p),
	             CN_OK);
	CHECK_EQ_INT(c, 3);
	CHECK_EQ_INT(p, 0);
	CHECK_EQ_INT(cn_http_chunked_decode(&st, "hello\r\n0\r\n\r\n", 12, &c, out, 8, &p), CN_OK);
	CHECK_EQ_INT(c, 12);
	CHECK_EQ_INT(p, 5);
	CHECK(st.done);
	/* after done nothing more is consumed */
	CHECK_EQ_INT(cn_http_chunked_decode(&st, "5\r\n", 3, &c, out, 8, &p), CN_OK);
	CHECK_EQ_INT(c, 0);
	CHECK_EQ_INT(p, 0);
}

int main(void)
{
	RUN(test_chunked_table);
	RUN(test_chunked_max_size);
	RUN(test_chunked_limits);
	RUN(test_chunked_large_payload);
	RUN(test_aws_table);
	RUN(test_aws_not_past_end);
	RUN(test_aws_last_chunk_flag);
	RUN(test_aws_verifier_error);
	RUN(test_aws_limits);
	RUN(test_aws_big_chunk);
	RUN(test_aws_partial_verifier);
	RUN(test_zero_outcap);
	TEST_END();
}
