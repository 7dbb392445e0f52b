/* chunked: libFuzzer driver for the RFC 9112 chunked decoder (src/http/chunked.c). The first
 * input byte picks a split position and an output capacity; the rest is the encoded body.
 * It decodes the body three ways (whole, split in two, one byte at a time with a tiny output
 * buffer) and aborts unless all agree on result, payload, bytes consumed and completion, and
 * unless every call respects its bounds and errors stay sticky. */
#include "http/http.h"

#include <stdlib.h>
#include <string.h>

typedef struct outcome {
	cn_err err;
	bool done;
	size_t consumed, produced;
	uint64_t hash; /* FNV-1a of the payload */
} outcome;

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static void decode(const char *in, size_t n, size_t first, size_t step, size_t outcap,
                   outcome *o)
{
	cn_http_chunked st;
	char out[4096];
	cn_http_chunked_init(&st);
	memset(o, 0, sizeof *o);
	o->hash = 1469598103934665603ULL;
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
			cn_err e = cn_http_chunked_decode(&st, pb + used, piece - used, &c, out, outcap,
			                                  &p);
			if (c > piece - used || p > outcap)
				abort();
			o->hash = fnv(o->hash, out, p);
			o->produced += p;
			used += c;
			if (e) {
				if (e != CN_ERR_INVALID && e != CN_ERR_TOO_LARGE)
					abort();
				o->err = e;
				if (cn_http_chunked_decode(&st, "0\r\n\r\n", 5, &c, out, outcap, &p) != e ||
				    c || p)
					abort();
				stop = true;
				break;
			}
			if (st.done) {
				if (cn_http_chunked_decode(&st, "0\r\n\r\n", 5, &c, out, outcap, &p) ||
				    c || p)
					abort();
				stop = true;
				break;
			}
			if (c == 0 && p == 0) {
				if (used != piece)
					abort(); /* stalled with input and room left */
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
}

static bool differ(const outcome *x, const outcome *y)
{
	return x->err != y->err || x->done != y->done || x->consumed != y->consumed ||
	       x->produced != y->produced || x->hash != y->hash;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned ctl = data[0];
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	outcome a, b, c;
	decode(in, n, 0, 0, 4096, &a);
	decode(in, n, n ? (ctl * 7919u) % n + 1 : 0, 0, (ctl & 7) + 1, &b);
	decode(in, n, 1, 1, ((ctl >> 3) & 3) + 1, &c);
	if (differ(&a, &b) || differ(&a, &c))
		abort();
	if (a.produced > a.consumed)
		abort();
	return 0;
}
