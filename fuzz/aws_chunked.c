/* aws_chunked: libFuzzer driver for the aws-chunked decoder (src/http/chunked.c). The first
 * input byte picks a split position, output capacities and which verifier call fails (if
 * any); the rest is the body. It decodes three ways (whole, split in two, one byte at a time)
 * with a recording verifier and aborts unless all agree on result, payload, consumed bytes
 * and the exact sequence of verifier calls, and unless chunk_data saw exactly the payload,
 * every signature/trailer view is within bounds, and errors stay sticky. */
#include "http/http.h"

#include <stdlib.h>
#include <string.h>

#define FNV0 1469598103934665603ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

typedef struct rec {
	uint64_t calls_hash; /* every callback with its arguments */
	uint64_t data_hash;  /* bytes given to chunk_data */
	size_t data_len;
	int calls, fail_at;
	bool ended;
} rec;

static cn_err tick(rec *r, int kind)
{
	if (r->ended)
		abort(); /* no callback after trailers_end or a failure */
	r->calls_hash = fnv(r->calls_hash, &kind, sizeof kind);
	r->calls++;
	if (r->fail_at && r->calls == r->fail_at) {
		r->ended = true;
		return CN_ERR_DIGEST;
	}
	return CN_OK;
}

static void check_str(cn_str s, size_t max)
{
	if (s.len > max || (s.len && !s.p))
		abort();
	for (size_t i = 0; i < s.len; i++)
		if (s.p[i] == '\r' || s.p[i] == '\n')
			abort();
}

static void v_data(void *ctx, const void *p, size_t len)
{
	rec *r = ctx;
	if (r->ended || len == 0)
		abort();
	r->data_hash = fnv(r->data_hash, p, len);
	r->data_len += len;
}

static cn_err v_end(void *ctx, cn_str sig)
{
	rec *r = ctx;
	check_str(sig, 128);
	r->calls_hash = fnv(r->calls_hash, sig.p, sig.len);
	r->calls_hash = fnv(r->calls_hash, &r->data_len, sizeof r->data_len);
	return tick(r, 1);
}

static cn_err v_trailer(void *ctx, cn_str name, cn_str value)
{
	rec *r = ctx;
	check_str(name, 4096);
	check_str(value, 4096);
	if (name.len == 0)
		abort();
	r->calls_hash = fnv(r->calls_hash, name.p, name.len);
	r->calls_hash = fnv(r->calls_hash, "=", 1);
	r->calls_hash = fnv(r->calls_hash, value.p, value.len);
	return tick(r, 2);
}

static cn_err v_trailers_end(void *ctx, cn_str sig)
{
	rec *r = ctx;
	check_str(sig, 128);
	r->calls_hash = fnv(r->calls_hash, sig.p, sig.len);
	cn_err e = tick(r, 3);
	r->ended = true;
	return e;
}

typedef struct outcome {
	cn_err err;
	bool done, last_chunk;
	size_t consumed, produced;
	uint64_t out_hash, calls_hash;
	int calls;
} outcome;

static void decode(const char *in, size_t n, size_t first, size_t step, size_t outcap,
                   int fail_at, bool with_verifier, outcome *o)
{
	static cn_http_awschunked st;
	rec r = { .calls_hash = FNV0, .data_hash = FNV0, .fail_at = fail_at };
	cn_chunk_verifier v = { v_data, v_end, v_trailer, v_trailers_end, &r };
	char out[4096];
	cn_http_awschunked_init(&st, with_verifier ? &v : NULL);
	memset(o, 0, sizeof *o);
	o->out_hash = FNV0;
	size_t off = 0;
	while (off < n) {
		size_t piece = n - off;
		size_t want = off == 0 ? first : step;
		if (want && want < piece)
			piece = want;
		char *pb = malloc(piece);
		memcpy(pb, in + off, piece);
		size_t used = 0;
		bool stop = false;
		for (;;) {
			size_t c, p;
			cn_err e = cn_http_awschunked_decode(&st, pb + used, piece - used, &c, out,
			                                     outcap, &p);
			if (c > piece - used || p > outcap)
				abort();
			o->out_hash = fnv(o->out_hash, out, p);
			o->produced += p;
			used += c;
			if (e) {
				if (e != CN_ERR_INVALID && e != CN_ERR_TOO_LARGE && e != CN_ERR_DIGEST)
					abort();
				if (e == CN_ERR_DIGEST && (!with_verifier || !fail_at))
					abort();
				o->err = e;
				if (cn_http_awschunked_decode(&st, "0\r\n\r\n", 5, &c, out, outcap, &p) != e ||
				    c || p)
					abort();
				stop = true;
				break;
			}
			if (st.done) {
				if (!st.last_chunk)
					abort();
				if (cn_http_awschunked_decode(&st, "0\r\n\r\n", 5, &c, out, outcap, &p) ||
				    c || p)
					abort();
				stop = true;
				break;
			}
			if (c == 0 && p == 0) {
				if (used != piece)
					abort();
				break;
			}
		}
		free(pb);
		off += used;
		if (stop)
			break;
	}
	o->consumed = off;
	o->done = st.done;
	o->last_chunk = st.last_chunk;
	o->calls_hash = r.calls_hash;
	o->calls = r.calls;
	if (with_verifier && (r.data_len != o->produced || r.data_hash != o->out_hash))
		abort();
}

static bool differ(const outcome *x, const outcome *y)
{
	return x->err != y->err || x->done != y->done || x->consumed != y->consumed ||
	       x->produced != y->produced || x->out_hash != y->out_hash ||
	       x->last_chunk != y->last_chunk || x->calls_hash != y->calls_hash ||
	       x->calls != y->calls;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned ctl = data[0];
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	int fail_at = (ctl & 0x80) ? (int)(ctl & 7) + 1 : 0;
	outcome a, b, c, d;
	decode(in, n, 0, 0, 4096, fail_at, true, &a);
	decode(in, n, n ? (ctl * 7919u) % n + 1 : 0, 0, (ctl & 7) + 1, fail_at, true, &b);
	decode(in, n, 1, 1, ((ctl >> 3) & 3) + 1, fail_at, true, &c);
	if (differ(&a, &b) || differ(&a, &c))
		abort();
	if (a.produced > a.consumed)
		abort();
	/* without a verifier the framing verdict is the same when no verifier call failed */
	decode(in, n, 0, 0, 4096, 0, false, &d);
	if (a.err != CN_ERR_DIGEST &&
	    (d.err != a.err || d.consumed != a.consumed || d.out_hash != a.out_hash ||
	     d.done != a.done))
		abort();
	return 0;
}
