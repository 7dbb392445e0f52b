/* chunked.c: incremental decoders for request bodies — HTTP chunked transfer coding
 * (RFC 9112 §7.1) and aws-chunked, the SigV4 streaming framing whose chunk signatures and
 * trailers are handed to a verifier supplied by the s3 layer (format in http.h). Both are
 * byte-driven state machines over the caller's buffers: framing bytes are examined one at
 * a time, payload bytes are copied in bulk. Invariants:
 *   CHUNK-1. Resumable at every byte boundary: any split of the input (and any output capacity)
 *      gives the same payload, the same verifier calls, the same total consumed count and
 *      the same result — all decisions depend only on the state and the current byte.
 *   CHUNK-2. Nothing after the end of the body is consumed (pipelined requests follow it).
 *   CHUNK-3. Errors are sticky: after one, every call returns it and consumes nothing.
 *   CHUNK-4. Every input-driven size is bounded: size and trailer lines <= 4 KiB, at most 64
 *      (chunked) or 16 (aws-chunked) trailer lines, aws chunks <= 64 MiB. */
#include "http/http.h"

#include <string.h>

#define LINE_MAX_LEN 4096
#define CHUNKED_MAX_TRAILERS 64
#define AWS_MAX_CHUNK (64u * 1024 * 1024)
#define AWS_MAX_TRAILERS 16
#define AWS_MAX_SIG 128

static inline int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Control characters other than HTAB may not appear in extensions or trailer lines. */
static inline bool is_ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static inline bool is_tchar(unsigned char c)
{
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
		return true;
	if (c >= '0' && c <= '9')
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* ---- RFC 9112 chunked ------------------------------------------------------------------ */

enum {
	C_SIZE,       /* hex digits of chunk-size (line_len counts the line) */
	C_BWS,        /* whitespace after the size, before ';' or CR */
	C_EXT,        /* chunk extensions, skipped up to CR */
	C_SIZE_LF,
	C_DATA,
	C_DATA_CR,
	C_DATA_LF,
	C_TRAILER_START, /* start of a trailer line, or the final CRLF */
	C_TRAILER,
	C_TRAILER_LF,
	C_FINAL_LF,
};

void cn_http_chunked_init(cn_http_chunked *st)
{
	memset(st, 0, sizeof *st);
	st->state = C_SIZE;
}

cn_err cn_http_chunked_decode(cn_http_chunked *st, const char *in, size_t inlen, size_t *consumed,
                              char *out, size_t outcap, size_t *produced)
{
	const char *p = in, *end = in + inlen;
	size_t outn = 0;
	cn_err err = CN_OK;

	*consumed = 0;
	*produced = 0;
	if (st->err)
		return st->err;

	while (p < end && !st->done) {
		if (st->state == C_DATA) {
			size_t n = (size_t)(end - p);
			if (n > outcap - outn)
				n = outcap - outn;
			if (n > st->remaining)
				n = (size_t)st->remaining;
			if (n == 0)
				break; /* out is full */
			memcpy(out + outn, p, n);
			p += n;
			outn += n;
			st->remaining -= n;
			if (st->remaining == 0)
				st->state = C_DATA_CR;
			continue;
		}
		unsigned char c = (unsigned char)*p++;
		switch (st->state) {
		case C_SIZE: {
			int h = hexval(c);
			if (h >= 0) {
				if (st->remaining >> 60) {
					err = CN_ERR_INVALID; /* chunk-size overflows 64 bits */
					goto out;
				}
				st->remaining = st->remaining << 4 | (unsigned)h;
				if (++st->line_len > LINE_MAX_LEN) {
					err = CN_ERR_TOO_LARGE;
					goto out;
				}
				break;
			}
			if (st->line_len == 0) {
				err = CN_ERR_INVALID;
				goto out;
			}
			/* a non-hex byte after at least one digit: as in C_BWS */
		}
			__attribute__((fallthrough));
		case C_BWS:
			if (c == '\r') {
				st->state = C_SIZE_LF;
			} else if (c == ';') {
				st->state = C_EXT;
			} else if (c == ' ' || c == '\t') {
				st->state = C_BWS;
			} else {
				err = CN_ERR_INVALID;
				goto out;
			}
			if (c != '\r' && ++st->line_len > LINE_MAX_LEN) {
				err = CN_ERR_TOO_LARGE;
				goto out;
			}
			break;
		case C_EXT:
			if (c == '\r') {
				st->state = C_SIZE_LF;
			} else if (is_ctl(c)) {
				err = CN_ERR_INVALID;
				goto out;
			} else if (++st->line_len > LINE_MAX_LEN) {
				err = CN_ERR_TOO_LARGE;
				goto out;
			}
			break;
		case C_SIZE_LF:
			if (c != '\n') {
				err = CN_ERR_INVALID;
				goto out;
			}
			st->line_len = 0;
			st->state = st->remaining ? C_DATA : C_TRAILER_START;
			break;
		case C_DATA_CR:
			if (c != '\r') {
				err = CN_ERR_INVALID;
				goto out;
			}
			st->state = C_DATA_LF;
			break;
		case C_DATA_LF:
			if (c != '\n') {
				err = CN_ERR_INVALID;
				goto out;
			}
			st->state = C_SIZE;
			break;
		case C_TRAILER_START:
			if (c == '\r') {
				st->state = C_FINAL_LF;
				break;
			}
			if (is_ctl(c) || c == ' ' || c == ':') {
				err = CN_ERR_INVALID; /* bare LF, obs-fold, empty field name */
				goto out;
			}
			if (++st->ntrailers > CHUNKED_MAX_TRAILERS) {
				err = CN_ERR_TOO_LARGE;
				goto out;
			}
			st->line_len = 1;
			st->state = C_TRAILER;
			break;
		case C_TRAILER:
			if (c == '\r') {
				st->state = C_TRAILER_LF;
			} else if (is_ctl(c)) {
				err = CN_ERR_INVALID;
				goto out;
			} else if (++st->line_len > LINE_MAX_LEN) {
				err = CN_ERR_TOO_LARGE;
				goto out;
			}
			break;
		case C_TRAILER_LF:
			if (c != '\n') {
				err = CN_ERR_INVALID;
				goto out;
			}
			st->state = C_TRAILER_START;
			break;
		case C_FINAL_LF:
			if (c != '\n') {
				err = CN_ERR_INVALID;
				goto out;
			}
			st->done = true;
			break;
		default:
			CN_ASSERT(!"bad chunked state");
		}
	}
out:
	st->err = err;
	*consumed = (size_t)(p - in);
	*produced = outn;
	return err;
}

/* ---- aws-chunked ------------------------------------------------------------------------ */

enum {
	A_HDR,     /* chunk header line, accumulated in line[] */
	A_HDR_LF,
	A_DATA,
	A_DATA_CR,
	A_DATA_LF,
	A_TRL,     /* trailer line (or the final empty line), accumulated in line[] */
	A_TRL_LF,
};

void cn_http_awschunked_init(cn_http_awschunked *st, const cn_chunk_verifier *v)
{
	st->state = A_HDR;
	st->remaining = 0;
	st->line_len = 0;
	st->ntrailers = 0;
	st->sig_len = 0;
	st->trailer_sig_len = 0;
	st->has_trailer_sig = false;
	st->last_chunk = false;
	st->err = CN_OK;
	st->done = false;
	st->v = v;
}

static bool all_hex(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hexval((unsigned char)p[i]) < 0)
			return false;
	return true;
}

static cn_err call_chunk_end(cn_http_awschunked *st)
{
	if (!st->v || !st->v->chunk_end)
		return CN_OK;
	return st->v->chunk_end(st->v->ctx, (cn_str){ st->line, st->sig_len });
}

/* Parses "hex-size[;name[=value]]..." in line[0..line_len); keeps chunk-signature's value at
 * line[0..sig_len). */
static cn_err parse_chunk_header(cn_http_awschunked *st)
{
	const char *p = st->line, *end = st->line + st->line_len;
	uint64_t size = 0;
	const char *sig = NULL;
	size_t siglen = 0;

	if (p == end || hexval((unsigned char)*p) < 0)
		return CN_ERR_INVALID;
	for (; p < end; p++) {
		int h = hexval((unsigned char)*p);
		if (h < 0)
			break;
		size = size << 4 | (unsigned)h;
		if (size > AWS_MAX_CHUNK)
			return CN_ERR_TOO_LARGE;
	}
	while (p < end) {
		if (*p != ';')
			return CN_ERR_INVALID;
		const char *name = ++p;
		while (p < end && is_tchar((unsigned char)*p))
			p++;
		if (p == name)
			return CN_ERR_INVALID;
		size_t nlen = (size_t)(p - name);
		const char *val = p;
		if (p < end && *p == '=') {
			val = ++p;
			while (p < end && is_tchar((unsigned char)*p))
				p++;
		}
		if (nlen == 15 && memcmp(name, "chunk-signature", 15) == 0) {
			siglen = (size_t)(p - val);
			if (sig || siglen == 0 || siglen > AWS_MAX_SIG || !all_hex(val, siglen))
				return CN_ERR_INVALID;
			sig = val;
		}
	}
	if (sig)
		memmove(st->line, sig, siglen);
	st->sig_len = siglen;
	st->remaining = size;
	return CN_OK;
}

/* Handles one complete trailer line in line[0..line_len) (non-empty). */
static cn_err parse_trailer(cn_http_awschunked *st)
{
	const char *p = st->line, *end = st->line + st->line_len;
	const char *colon = memchr(p, ':', st->line_len);

	if (++st->ntrailers > AWS_MAX_TRAILERS)
		return CN_ERR_TOO_LARGE;
	if (!colon || colon == p)
		return CN_ERR_INVALID;
	for (const char *q = p; q < colon; q++)
		if (!is_tchar((unsigned char)*q))
			return CN_ERR_INVALID;
	const char *v = colon + 1, *ve = end;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	for (const char *q = v; q < ve; q++)
		if (is_ctl((unsigned char)*q))
			return CN_ERR_INVALID;
	cn_str name = { p, (size_t)(colon - p) };
	cn_str value = { v, (size_t)(ve - v) };
	if (cn_str_ieq_c(name, "x-amz-trailer-signature")) {
		if (st->has_trailer_sig || value.len == 0 || value.len > AWS_MAX_SIG ||
		    !all_hex(value.p, value.len))
			return CN_ERR_INVALID;
		memcpy(st->trailer_sig, value.p, value.len);
		st->trailer_sig_len = value.len;
		st->has_trailer_sig = true;
		return CN_OK;
	}
	if (st->v && st->v->trailer)
		return st->v->trailer(st->v->ctx, name, value);
	return CN_OK;
}

cn_err cn_http_awschunked_decode(cn_http_awschunked *st, const char *in, size_t inlen,
                                 size_t *consumed, char *out, size_t outcap, size_t *produced)
{
	const char *p = in, *end = in + inlen;
	size_t outn = 0;
	cn_err err = CN_OK;

	*consumed = 0;
	*produced = 0;
	if (st->err)
		return st->err;

	while (p < end && !st->done) {
		if (st->state == A_DATA) {
			size_t n = (size_t)(end - p);
			if (n > outcap - outn)
				n = outcap - outn;
			if (n > st->remaining)
				n = (size_t)st->remaining;
			if (n == 0)
				break;
			memcpy(out + outn, p, n);
			if (st->v && st->v->chunk_data)
				st->v->chunk_data(st->v->ctx, out + outn, n);
			p += n;
			outn += n;
			st->remaining -= n;
			if (st->remaining == 0)
				st->state = A_DATA_CR;
			continue;
		}
		unsigned char c = (unsigned char)*p++;
		switch (st->state) {
		case A_HDR:
		case A_TRL:
			if (c == '\r') {
				st->state = st->state == A_HDR ? A_HDR_LF : A_TRL_LF;
			} else if (c == '\n' || c == '\0') {
				err = CN_ERR_INVALID;
				goto out;
			} else if (st->line_len == LINE_MAX_LEN) {
				err = CN_ERR_TOO_LARGE;
				goto out;
			} else {
				st->line[st->line_len++] = (char)c;
			}
			break;
		case A_HDR_LF:
			if (c != '\n') {
				err = CN_ERR_INVALID;
				goto out;
			}
			if ((err = parse_chunk_header(st)))
				goto out;
			st->line_len = 0;
			if (st->remaining) {
				st->state = A_DATA;
				break;
			}
			if ((err = call_chunk_end(st)))
				goto out;
			st->last_chunk = true;
			st->state = A_TRL;
			break;
		case A_DATA_CR:
			if (c != '\r') {
				err = CN_ERR_INVALID;
				goto out;
			}
			st->state = A_DATA_LF;
			break;
		case A_DATA_LF:
			if (c != '\n') {
				err = CN_ERR_INVALID;
				goto out;
			}
			if ((err = call_chunk_end(st)))
				goto out;
			st->state = A_HDR;
			break;
		case A_TRL_LF:
			if (c != '\n') {
				err = CN_ERR_INVALID;
				goto out;
			}
			if (st->line_len == 0) {
				if (st->v && st->v->trailers_end &&
				    (err = st->v->trailers_end(st->v->ctx,
				                               (cn_str){ st->trailer_sig,
				                                         st->trailer_sig_len })))
					goto out;
				st->done = true;
				break;
			}
			if ((err = parse_trailer(st)))
				goto out;
			st->line_len = 0;
			st->state = A_TRL;
			break;
		default:
			CN_ASSERT(!"bad aws-chunked state");
		}
	}
out:
	st->err = err;
	*consumed = (size_t)(p - in);
	*produced = outn;
	return err;
}
