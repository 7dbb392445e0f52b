/* s3/s3.c: the S3 front door — builds the per-request context (bucket and key from
 * path-style or virtual-host-style addressing, decoded query), authenticates (auth.h),
 * stacks the body readers (HTTP framing -> aws-chunked with chunk signatures -> SHA-256
 * verification), routes to the handler for the operation, and owns the shared helpers of
 * s3_int.h (S3 XML errors from errors.def, replies, the request arena).
 *
 * Invariant: every request gets exactly one response; an API we do not implement answers
 * 501 NotImplemented, never a silent success. */
#include "s3/s3_int.h"

#include <openssl/sha.h>

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_QUERY_PARAMS 256
#define AWSCHUNK_BUF (64 * 1024)

static const struct {
	const char *code;
	int status;
	const char *message;
} s3_errors[CN_S3__COUNT] = {
	[CN_S3_OK] = { "OK", 200, "" },
#define X(name, st, msg) [CN_S3_##name] = { #name, st, msg },
#include "s3/errors.def"
#undef X
};

/* ---- arena ---------------------------------------------------------------------------- */

struct cn_s3_arena_block {
	cn_s3_arena_block *next;
	size_t used, cap;
	max_align_t data[];
};

void *cn_s3_alloc(cn_s3_req *r, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	cn_s3_arena_block *b = r->arena;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 8192 ? n : 8192;
		b = malloc(sizeof *b + cap);
		CN_ASSERT(b != NULL);
		b->next = r->arena;
		b->used = 0;
		b->cap = cap;
		r->arena = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

char *cn_s3_strndup(cn_s3_req *r, const char *p, size_t len)
{
	char *s = cn_s3_alloc(r, len + 1);
	if (len)
		memcpy(s, p, len);
	s[len] = 0;
	return s;
}

static void arena_free(cn_s3_req *r)
{
	while (r->arena) {
		cn_s3_arena_block *n = r->arena->next;
		free(r->arena);
		r->arena = n;
	}
}

/* ---- accessors ---------------------------------------------------------------------- */

const char *cn_s3_query(const cn_s3_req *r, const char *name)
{
	for (size_t i = 0; i < r->nquery; i++)
		if (strcmp(r->query[i].name, name) == 0)
			return r->query[i].value;
	return NULL;
}

const char *cn_s3_header(cn_s3_req *r, const char *name)
{
	const cn_str *v = cn_http_req_header(r->h, name);
	return v ? cn_s3_strndup(r, v->p, v->len) : NULL;
}

/* ---- replies ------------------------------------------------------------------------- */

void cn_s3_reply_header(cn_s3_req *r, const char *name, const char *value)
{
	CN_ASSERT(r->nreply_headers < CN_S3_MAX_REPLY_HEADERS);
	if (r->nreply_headers >= CN_S3_MAX_REPLY_HEADERS)
		return;
	cn_kv *kv = &r->reply_headers[r->nreply_headers++];
	kv->name = cn_s3_strndup(r, name, strlen(name));
	kv->value = cn_s3_strndup(r, value, strlen(value));
}

void cn_s3_resp_start(cn_s3_req *r, int status)
{
	cn_http_resp_start(r->x, status);
	for (size_t i = 0; i < r->ncors; i++)
		cn_http_resp_header(r->x, r->cors[i].name, r->cors[i].value);
}

void cn_s3_send_reply_headers(cn_s3_req *r)
{
	for (size_t i = 0; i < r->nreply_headers; i++)
		cn_http_resp_header(r->x, r->reply_headers[i].name, r->reply_headers[i].value);
}

void cn_s3_send_xml(cn_s3_req *r, int status, const cn_buf *xml)
{
	cn_s3_resp_start(r, status);
	cn_s3_send_reply_headers(r);
	cn_http_resp_header(r->x, "Content-Type", "application/xml");
	cn_http_resp_send(r->x, xml->p, xml->len);
}

void cn_s3_send_empty(cn_s3_req *r, int status)
{
	cn_s3_resp_start(r, status);
	cn_s3_send_reply_headers(r);
	cn_http_resp_send(r->x, NULL, 0);
}

void cn_s3_error(cn_s3_req *r, cn_s3_code code, const char *message)
{
	if (code <= CN_S3_OK || code >= CN_S3__COUNT)
		code = CN_S3_InternalError;
	const char *msg = message ? message : s3_errors[code].message;
	int status = r->error_status ? r->error_status : s3_errors[code].status;
	cn_log(status >= 500 && status != 501 ? CN_LOG_WARN : CN_LOG_DEBUG, r->reqid, "%.*s %.*s -> %d %s: %s",
	       (int)r->h->method.len, r->h->method.p, (int)r->h->target.len > 512 ? 512 : (int)r->h->target.len,
	       r->h->target.p, status, s3_errors[code].code, msg);
	if (cn_http_resp_started(r->x)) {
		cn_http_resp_close(r->x);
		return;
	}
	cn_buf b;
	cn_buf_init(&b);
	cn_xml_decl(&b);
	cn_xml_open(&b, "Error", NULL);
	cn_xml_elem(&b, "Code", s3_errors[code].code);
	cn_xml_elem(&b, "Message", msg);
	if (r->error_elem)
		cn_xml_elem(&b, r->error_elem, r->error_elem_value);
	if (r->bucket && r->bucket[0])
		cn_xml_elem(&b, "BucketName", r->bucket);
	if (r->key && r->key[0])
		cn_xml_elem(&b, "Key", r->key);
	char *path = cn_s3_strndup(r, r->h->path.p, r->h->path.len);
	cn_xml_elem(&b, "Resource", path);
	cn_xml_elem(&b, "RequestId", r->reqid);
	cn_xml_close(&b, "Error");
	cn_s3_resp_start(r, status);
	cn_s3_send_reply_headers(r);
	cn_http_resp_header(r->x, "Content-Type", "application/xml");
	if (code == CN_S3_SlowDown || code == CN_S3_ServiceUnavailable)
		cn_http_resp_header(r->x, "Retry-After", "1");
	/* A body we did not read may not be drained cheaply: the exchange decides. */
	cn_http_resp_send(r->x, b.p, b.len);
	cn_buf_fini(&b);
}

void cn_s3_error_from(cn_s3_req *r, cn_err e)
{
	cn_s3_code c;
	switch (e) {
	case CN_ERR_NO_BUCKET: c = CN_S3_NoSuchBucket; break;
	case CN_ERR_NO_KEY: c = CN_S3_NoSuchKey; break;
	case CN_ERR_BAD_KEY: c = CN_S3_InvalidObjectName; break;
	case CN_ERR_KEY_TOO_LONG: c = CN_S3_KeyTooLongError; break;
	case CN_ERR_BAD_BUCKET_NAME: c = CN_S3_InvalidBucketName; break;
	case CN_ERR_BUCKET_EXISTS: c = CN_S3_BucketAlreadyOwnedByYou; break;
	case CN_ERR_BUCKET_NOT_EMPTY: c = CN_S3_BucketNotEmpty; break;
	case CN_ERR_NOSPACE: c = CN_S3_StorageFull; break;
	case CN_ERR_BUSY: c = CN_S3_SlowDown; break;
	case CN_ERR_QUORUM:
		c = cn_str_eq_c(r->h->method, "GET") || cn_str_eq_c(r->h->method, "HEAD")
		    ? CN_S3_InsufficientReadQuorum : CN_S3_InsufficientWriteQuorum;
		break;
	case CN_ERR_ABORTED: c = r->body_error ? r->body_error : CN_S3_IncompleteBody; break;
	case CN_ERR_CLOSED: c = CN_S3_IncompleteBody; break;
	case CN_ERR_TIMEOUT: c = CN_S3_RequestTimeout; break;
	case CN_ERR_DIGEST: c = CN_S3_BadDigest; break;
	case CN_ERR_TOO_LARGE: c = CN_S3_EntityTooLarge; break;
	case CN_ERR_INVALID: c = r->body_error ? r->body_error : CN_S3_InvalidRequest; break;
	case CN_ERR_UNSUPPORTED: c = CN_S3_NotImplemented; break;
	case CN_ERR_NO_UPLOAD: c = CN_S3_NoSuchUpload; break;
	case CN_ERR_BAD_PART: c = CN_S3_InvalidPart; break;
	case CN_ERR_PART_ORDER: c = CN_S3_InvalidPartOrder; break;
	case CN_ERR_TOO_SMALL: c = CN_S3_EntityTooSmall; break;
	case CN_ERR_NO_VERSION: c = CN_S3_NoSuchVersion; break;
	/* GET/HEAD of a delete marker's version (its headers queued by the handler:
	 * cn_s3_reply_delete_marker) */
	case CN_ERR_DELETE_MARKER: c = CN_S3_MethodNotAllowed; break;
	default: c = CN_S3_InternalError; break;
	}
	if (c == CN_S3_InternalError)
		cn_log(CN_LOG_ERROR, r->reqid, "internal error: %s", cn_err_str(e));
	cn_s3_error(r, c, NULL);
}

/* ---- small shared helpers (s3_int.h) ---------------------------------------------------- */

void cn_s3_owner_id(const cn_s3_req *r, char out[65])
{
	const char *ak = r->srv->cfg.access_key ? r->srv->cfg.access_key : "";
	unsigned char d[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)ak, strlen(ak), d);
	cn_hex_encode(d, sizeof d, out);
}

cn_err cn_s3_xml_key(cn_buf *b, const char *tag, const char *v, bool url)
{
	if (!url)
		return cn_xml_elem(b, tag, v);
	cn_buf enc;
	cn_buf_init(&enc);
	cn_err e = cn_url_encode(&enc, cn_str_c(v), true);
	if (!e)
		e = cn_xml_elem_n(b, tag, enc.p ? enc.p : "", enc.len);
	cn_buf_fini(&enc);
	return e;
}

bool cn_s3_parse_uint(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t n = 0;
	if (!v || !v[0])
		return false;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		n = n * 10 + (uint64_t)(*p - '0');
		if (n > max)
			return false;
	}
	*out = n;
	return true;
}

bool cn_s3_parse_max_keys(const char *v, size_t cap, size_t *out)
{
	uint64_t n;
	*out = cap;
	if (!v)
		return true;
	if (!cn_s3_parse_uint(v, INT32_MAX, &n))
		return false;
	*out = n > cap ? cap : (size_t)n;
	return true;
}

/* ---- body stack ---------------------------------------------------------------------- */

typedef struct body_state {
	cn_reader rd;
	cn_s3_req *r;
	cn_reader *raw;
	/* aws-chunked */
	bool awschunked;
	cn_http_awschunked ac;
	cn_auth_stream as;
	bool as_init;
	cn_chunk_verifier v;     /* as.v, with every trailer checked against x-amz-trailer */
	const char *declared;    /* x-amz-trailer's list, or NULL */
	bool undeclared_trailer; /* a trailer x-amz-trailer did not name was refused */
	char *inbuf;
	size_t in_off, in_len;
	uint64_t decoded;
	/* sha256 */
	EVP_MD_CTX *sha;
	bool failed, eof;
} body_state;

static ssize_t body_fail(body_state *st, cn_s3_code code)
{
	st->failed = true;
	st->r->body_error = code;
	return -(ssize_t)CN_ERR_ABORTED;
}

/* After the aws-chunked body's final CRLF the request body (its Content-Length, or its
 * HTTP chunks) must end too: bytes there would be data no signature or checksum covers.
 * Returns 0 when it ends, else a failure (MalformedTrailerError for such bytes). */
static ssize_t awschunked_rest(body_state *st)
{
	if (st->in_off < st->in_len)
		return body_fail(st, CN_S3_MalformedTrailerError);
	char one;
	ssize_t k = st->raw->read(st->raw, &one, 1);
	if (k < 0) {
		st->failed = true;
		return k;
	}
	return k > 0 ? body_fail(st, CN_S3_MalformedTrailerError) : 0;
}

/* True when the comma-separated list names name (case-insensitive, OWS trimmed). */
static bool list_has(const char *list, cn_str name)
{
	const char *p = list;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *e = p;
		while (*e && *e != ',')
			e++;
		const char *t = e;
		while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		if ((size_t)(t - p) == name.len && name.len && !strncasecmp(p, name.p, name.len))
			return true;
		p = e;
	}
	return false;
}

/* The trailer callback of st->v: a trailer that x-amz-trailer did not declare is refused
 * (an undeclared x-amz-checksum-* would otherwise go unverified), the rest go on to the
 * SigV4 stream verifier. */
static cn_err declared_trailer(void *ctx, cn_str name, cn_str value)
{
	body_state *st = ctx;
	if (!st->declared || !list_has(st->declared, name)) {
		st->undeclared_trailer = true;
		return CN_ERR_INVALID;
	}
	return st->as.v.trailer(st->as.v.ctx, name, value);
}

static cn_err pass_chunk_end(void *ctx, cn_str signature)
{
	body_state *st = ctx;
	return st->as.v.chunk_end(st->as.v.ctx, signature);
}

static void pass_chunk_data(void *ctx, const void *p, size_t len)
{
	body_state *st = ctx;
	st->as.v.chunk_data(st->as.v.ctx, p, len);
}

static cn_err pass_trailers_end(void *ctx, cn_str signature)
{
	body_state *st = ctx;
	return st->as.v.trailers_end(st->as.v.ctx, signature);
}

static ssize_t body_read(cn_reader *rd, void *buf, size_t len)
{
	body_state *st = (body_state *)rd;
	cn_s3_req *r = st->r;
	if (st->failed)
		return -(ssize_t)CN_ERR_ABORTED;
	if (st->eof)
		return 0;
	ssize_t n;
	if (!st->awschunked) {
		n = st->raw->read(st->raw, buf, len);
	} else {
		for (;;) {
			if (st->in_off == st->in_len && !st->ac.done) {
				ssize_t k = st->raw->read(st->raw, st->inbuf, AWSCHUNK_BUF);
				if (k < 0)
					return k;
				if (k == 0)
					return body_fail(st, CN_S3_IncompleteBody);
				st->in_off = 0;
				st->in_len = (size_t)k;
			}
			size_t used = 0, made = 0;
			cn_err e = cn_http_awschunked_decode(&st->ac, st->inbuf + st->in_off,
			                                     st->in_len - st->in_off, &used, buf, len, &made);
			st->in_off += used;
			if (e) {
				if (st->as.failure == CN_AUTH_SIGNATURE_MISMATCH)
					return body_fail(st, CN_S3_SignatureDoesNotMatch);
				if (st->undeclared_trailer)
					return body_fail(st, CN_S3_MalformedTrailerError);
				return body_fail(st, e == CN_ERR_TOO_LARGE ? CN_S3_InvalidRequest
				                                           : CN_S3_IncompleteBody);
			}
			st->decoded += made;
			if (made > 0) {
				n = (ssize_t)made;
				break;
			}
			if (st->ac.done) {
				n = 0;
				break;
			}
		}
	}
	if (n < 0) {
		st->failed = true;
		return n;
	}
	if (n > 0) {
		if (st->sha)
			EVP_DigestUpdate(st->sha, buf, (size_t)n);
		return n;
	}
	/* EOF: final checks before anyone commits anything. */
	if (st->awschunked) {
		ssize_t k = awschunked_rest(st);
		if (k < 0)
			return k;
	}
	if (st->awschunked && r->body_len >= 0 && st->decoded != (uint64_t)r->body_len)
		return body_fail(st, CN_S3_IncompleteBody);
	if (st->sha) {
		unsigned char md[32];
		char hex[65];
		EVP_DigestFinal_ex(st->sha, md, NULL);
		cn_hex_encode(md, 32, hex);
		if (strcmp(hex, r->auth.content_sha256) != 0)
			return body_fail(st, CN_S3_XAmzContentSHA256Mismatch);
	}
	st->eof = true;
	return 0;
}

static cn_s3_code body_setup(cn_s3_req *r)
{
	const cn_http_req *h = r->h;
	body_state *st = cn_s3_alloc(r, sizeof *st);
	memset(st, 0, sizeof *st);
	st->rd.read = body_read;
	st->r = r;
	st->raw = cn_http_body(r->x);
	r->body_state = st;
	r->body = &st->rd;
	r->body_len = h->chunked ? -1 : (h->content_length >= 0 ? h->content_length : 0);
	cn_payload_mode pm = r->auth.payload;
	bool streaming = pm == CN_PAYLOAD_STREAMING_SIGNED || pm == CN_PAYLOAD_STREAMING_SIGNED_TRAILER ||
	                 pm == CN_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
	if (streaming) {
		st->awschunked = true;
		const char *dl = cn_s3_header(r, "x-amz-decoded-content-length");
		if (dl) {
			char *end;
			long long v = strtoll(dl, &end, 10);
			if (*end || v < 0)
				return CN_S3_InvalidArgument;
			r->body_len = v;
		} else {
			r->body_len = -1;
		}
		st->inbuf = cn_s3_alloc(r, AWSCHUNK_BUF);
		if (cn_auth_stream_init(&st->as, &r->auth) != CN_OK)
			return CN_S3_InternalError;
		st->as_init = true;
		st->declared = cn_s3_header(r, "x-amz-trailer");
		st->v = (cn_chunk_verifier){ .chunk_data = pass_chunk_data, .chunk_end = pass_chunk_end,
		                             .trailer = declared_trailer,
		                             .trailers_end = pass_trailers_end, .ctx = st };
		cn_http_awschunked_init(&st->ac, &st->v);
	} else if (pm == CN_PAYLOAD_SHA256 &&
	           !(r->body_len == 0 && !strcmp(r->auth.content_sha256, CN_EMPTY_SHA256))) {
		/* (an empty body declaring the empty string's hash has nothing to verify: every
		 * signed GET; the digest context cost ~2,700 instructions per request) */
		st->sha = EVP_MD_CTX_new();
		if (!st->sha || !EVP_DigestInit_ex(st->sha, EVP_sha256(), NULL))
			return CN_S3_InternalError;
	}
	return CN_S3_OK;
}

static void body_teardown(cn_s3_req *r)
{
	body_state *st = r->body_state;
	if (!st)
		return;
	if (st->as_init)
		cn_auth_stream_fini(&st->as);
	if (st->sha)
		EVP_MD_CTX_free(st->sha);
}

const char *cn_s3_trailer_checksum(cn_s3_req *r, const char **name)
{
	body_state *st = r->body_state;
	if (!st || !st->as_init || !st->as.trailer_checksum_name[0])
		return NULL;
	if (name)
		*name = st->as.trailer_checksum_name;
	return st->as.trailer_checksum_value;
}

const char *cn_s3_declared_trailer(cn_s3_req *r)
{
	const char *t = cn_s3_header(r, "x-amz-trailer");
	if (t && strncasecmp(t, "x-amz-checksum-", 15) == 0) {
		char *l = cn_s3_strndup(r, t, strlen(t));
		for (char *p = l; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		return l;
	}
	return NULL;
}

cn_err cn_s3_read_body(cn_s3_req *r, size_t max, cn_buf *out)
{
	char tmp[16384];
	cn_md5 md5;
	cn_md5_init(&md5);
	const char *cmd5 = cn_s3_header(r, "content-md5");
	cn_err err = CN_OK;
	if (r->body_len >= 0 && (uint64_t)r->body_len > max)
		return CN_ERR_TOO_LARGE; /* refused before any byte of it is read */
	for (;;) {
		ssize_t n = r->body->read(r->body, tmp, sizeof tmp);
		if (n < 0) {
			err = (cn_err)-n;
			break;
		}
		if (n == 0)
			break;
		if (out->len + (size_t)n > max) {
			err = CN_ERR_TOO_LARGE;
			break;
		}
		if ((err = cn_buf_append(out, tmp, (size_t)n)))
			break;
		if (cmd5)
			cn_md5_update(&md5, tmp, (size_t)n);
	}
	if (!err && cmd5) {
		unsigned char got[16], want[16];
		size_t wl = 0;
		cn_md5_final(&md5, got);
		if (cn_base64_decode(cn_str_c(cmd5), want, sizeof want, &wl) != CN_OK || wl != 16) {
			r->body_error = CN_S3_InvalidDigest;
			err = CN_ERR_ABORTED;
		} else if (memcmp(got, want, 16) != 0) {
			err = CN_ERR_DIGEST;
		}
	}
	return err;
}

/* ---- request setup --------------------------------------------------------------------- */

static cn_s3_code parse_query(cn_s3_req *r)
{
	cn_str q = r->h->query;
	size_t n = 0;
	for (size_t i = 0; i < q.len; i++)
		if (q.p[i] == '&')
			n++;
	if (q.len == 0)
		return CN_S3_OK;
	if (n + 1 > MAX_QUERY_PARAMS)
		return CN_S3_InvalidArgument;
	r->query = cn_s3_alloc(r, (n + 1) * sizeof *r->query);
	size_t start = 0;
	for (size_t i = 0; i <= q.len; i++) {
		if (i < q.len && q.p[i] != '&')
			continue;
		cn_str part = { q.p + start, i - start };
		start = i + 1;
		if (part.len == 0)
			continue;
		const char *eq = memchr(part.p, '=', part.len);
		cn_str name = { part.p, eq ? (size_t)(eq - part.p) : part.len };
		cn_str val = eq ? (cn_str){ eq + 1, part.len - name.len - 1 } : (cn_str){ "", 0 };
		char *dn = cn_s3_alloc(r, name.len + 1), *dv = cn_s3_alloc(r, val.len + 1);
		if (cn_url_decode(name, true, dn, name.len + 1, NULL) ||
		    cn_url_decode(val, true, dv, val.len + 1, NULL))
			return CN_S3_InvalidArgument;
		r->query[r->nquery].name = dn;
		r->query[r->nquery].value = dv;
		r->nquery++;
	}
	return CN_S3_OK;
}

/* Host without port, lowercased, into the arena. */
static char *host_only(cn_s3_req *r)
{
	cn_str h = r->h->host;
	size_t len = h.len;
	if (len && h.p[0] == '[') {
		const char *e = memchr(h.p, ']', h.len);
		len = e ? (size_t)(e - h.p) + 1 : h.len;
	} else {
		const char *c = memchr(h.p, ':', h.len);
		if (c)
			len = (size_t)(c - h.p);
	}
	char *s = cn_s3_strndup(r, h.p, len);
	for (char *p = s; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return s;
}

static cn_s3_code parse_target(cn_s3_req *r)
{
	cn_str path = r->h->path;
	char *dec = cn_s3_alloc(r, path.len + 1);
	size_t dlen = 0;
	if (cn_url_decode(path, false, dec, path.len + 1, &dlen) != CN_OK)
		return CN_S3_InvalidURI;
	if (memchr(dec, 0, dlen))
		return CN_S3_InvalidObjectName;
	const char *p = dec;
	if (*p == '/')
		p++;
	const char *domain = r->srv->cfg.domain;
	if (domain && domain[0]) {
		char *host = host_only(r);
		size_t hl = strlen(host), dl = strlen(domain);
		if (hl > dl + 1 && host[hl - dl - 1] == '.' && strcmp(host + hl - dl, domain) == 0) {
			r->bucket = cn_s3_strndup(r, host, hl - dl - 1);
			r->vhost = true;
			r->key = cn_s3_strndup(r, p, strlen(p));
			return CN_S3_OK;
		}
	}
	const char *slash = strchr(p, '/');
	if (!slash) {
		r->bucket = cn_s3_strndup(r, p, strlen(p));
		r->key = "";
	} else {
		r->bucket = cn_s3_strndup(r, p, (size_t)(slash - p));
		r->key = cn_s3_strndup(r, slash + 1, strlen(slash + 1));
	}
	return CN_S3_OK;
}

/* The S3 error of an authentication failure. A presigned SigV4 URL's malformed query, or
 * one naming another algorithm, is AuthorizationQueryParametersError (AWS), a header's
 * AuthorizationHeaderMalformed or InvalidArgument; an
 * X-Amz-Expires out of range is AWS's 403 AuthorizationQueryParametersError (*status;
 * 0: the table's). */
static cn_s3_code auth_code(cn_auth_err e, const cn_auth_result *a, int *status)
{
	*status = 0;
	switch (e) {
	case CN_AUTH_OK: return CN_S3_OK;
	case CN_AUTH_ANONYMOUS: return CN_S3_AccessDenied;
	case CN_AUTH_MALFORMED:
		return a->kind == CN_AUTH_KIND_V4_QUERY ? CN_S3_AuthorizationQueryParametersError
		                                        : CN_S3_AuthorizationHeaderMalformed;
	case CN_AUTH_UNKNOWN_KEY: return CN_S3_InvalidAccessKeyId;
	case CN_AUTH_SIGNATURE_MISMATCH: return CN_S3_SignatureDoesNotMatch;
	case CN_AUTH_TIME_SKEWED: return CN_S3_RequestTimeTooSkewed;
	case CN_AUTH_EXPIRED: return CN_S3_AccessDenied;
	case CN_AUTH_MISSING_DATE: return CN_S3_AccessDenied;
	case CN_AUTH_BAD_CONTENT_SHA256: return CN_S3_InvalidArgument;
	case CN_AUTH_UNSUPPORTED:
		return a->kind == CN_AUTH_KIND_V4_QUERY ? CN_S3_AuthorizationQueryParametersError
		                                        : CN_S3_InvalidArgument;
	case CN_AUTH_EXPIRES_RANGE:
		*status = 403;
		return CN_S3_AuthorizationQueryParametersError;
	case CN_AUTH_MISSING_CONTENT_SHA256: return CN_S3_InvalidRequest;
	case CN_AUTH_HEADERS_NOT_SIGNED: return CN_S3_AccessDenied;
	}
	return CN_S3_AccessDenied;
}

static const char *auth_message(cn_auth_err e, const cn_auth_result *a)
{
	if (a->detail)
		return a->detail;
	switch (e) {
	case CN_AUTH_EXPIRED: return "Request has expired";
	case CN_AUTH_MISSING_DATE: return "AWS authentication requires a valid Date or x-amz-date header";
	case CN_AUTH_ANONYMOUS: return "Access Denied.";
	default: return NULL;
	}
}

static const char *lookup_secret(void *ctx, cn_str access_key)
{
	cn_s3_server *s = ctx;
	if (cn_str_eq_c(access_key, s->cfg.access_key))
		return s->cfg.secret_key;
	return NULL;
}

const char *cn_s3_secret_for(cn_s3_req *r, const char *access_key)
{
	return lookup_secret(r->srv, cn_str_c(access_key));
}

/* A browser form upload (PostObject): POST to the bucket itself, no query, a
 * multipart/form-data body and no Authorization header. Its form carries its own
 * signature (the policy's), checked by the handler. */
static bool is_browser_post(const cn_s3_req *r)
{
	const cn_http_req *h = r->h;
	if (!cn_str_eq_c(h->method, "POST") || !r->bucket[0] || r->key[0] || r->nquery)
		return false;
	if (cn_http_req_header(h, "authorization"))
		return false;
	const cn_str *ct = cn_http_req_header(h, "content-type");
	return ct && ct->len >= 19 && strncasecmp(ct->p, "multipart/form-data", 19) == 0;
}

/* Sub-resources of S3 that cairn does not implement yet: answered 501. */
static const char *const unimplemented_subresources[] = {
	"accelerate", "analytics", "attributes", "encryption", "intelligent-tiering",
	"inventory", "legal-hold", "lifecycle", "logging", "metrics", "notification",
	"object-lock", "ownershipControls", "policy", "policyStatus",
	"publicAccessBlock", "replication", "requestPayment", "restore", "retention", "select",
	"torrent", "website", NULL
};

static void not_implemented(cn_s3_req *r, const char *what)
{
	char msg[160];
	snprintf(msg, sizeof msg, "%s is not implemented by cairn yet.", what);
	cn_s3_error(r, CN_S3_NotImplemented, msg);
}

/* Names the API for the metrics (r->api), then runs its handler. On the loop thread only
 * object reads run (GET/HEAD, which wait for no drive there: cn_s3_get_object); every other
 * handler may wait for drives, so the request goes to a worker untouched. */
#define CALL(which, handler)                                                                   \
	do {                                                                                   \
		r->api = (which);                                                              \
		if (r->api != CN_S3_API_getobject && r->api != CN_S3_API_headobject &&         \
		    cn_http_defer(r->x))                                                       \
			break;                                                                 \
		handler(r);                                                                    \
	} while (0)

static void route(cn_s3_req *r)
{
	cn_str m = r->h->method;
	bool get = cn_str_eq_c(m, "GET"), put = cn_str_eq_c(m, "PUT"), head = cn_str_eq_c(m, "HEAD"),
	     del = cn_str_eq_c(m, "DELETE"), post = cn_str_eq_c(m, "POST");
	if (!get && !put && !head && !del && !post) {
		cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		return;
	}
	if (!r->bucket[0]) {
		if (get)
			CALL(CN_S3_API_listbuckets, cn_s3_list_buckets);
		else
			cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		return;
	}
	if (!r->key[0] && (cn_s3_query(r, "versioning") || cn_s3_query(r, "versions"))) {
		if (get && cn_s3_query(r, "versioning"))
			CALL(CN_S3_API_getbucketversioning, cn_s3_get_bucket_versioning);
		else if (put && cn_s3_query(r, "versioning"))
			CALL(CN_S3_API_putbucketversioning, cn_s3_put_bucket_versioning);
		else if (get)
			CALL(CN_S3_API_listobjectversions, cn_s3_list_object_versions);
		else
			cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		return;
	}
	for (size_t i = 0; unimplemented_subresources[i]; i++) {
		if (cn_s3_query(r, unimplemented_subresources[i])) {
			char what[96];
			snprintf(what, sizeof what, "The '%s' sub-resource", unimplemented_subresources[i]);
			not_implemented(r, what);
			return;
		}
	}
	if (cn_s3_query(r, "versioning")) {
		not_implemented(r, "Bucket versioning");
		return;
	}
	const char *vid = cn_s3_query(r, "versionId");
	if (vid && !cn_obj_version_id_valid(vid)) {
		cn_s3_error(r, CN_S3_InvalidArgument, vid[0] ? "Invalid version id specified"
		                                             : "Version id cannot be the empty string");
		return;
	}
	bool acl = cn_s3_query(r, "acl") != NULL;
	bool tagging = cn_s3_query(r, "tagging") != NULL;
	bool cors = cn_s3_query(r, "cors") != NULL;
	if (!r->key[0]) {
		if (cors && get)
			CALL(CN_S3_API_getbucketcors, cn_s3_get_bucket_cors);
		else if (cors && put)
			CALL(CN_S3_API_putbucketcors, cn_s3_put_bucket_cors);
		else if (cors && del)
			CALL(CN_S3_API_deletebucketcors, cn_s3_delete_bucket_cors);
		else if (cors)
			cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		else if (tagging && get)
			CALL(CN_S3_API_getbuckettagging, cn_s3_get_bucket_tagging);
		else if (tagging && put)
			CALL(CN_S3_API_putbuckettagging, cn_s3_put_bucket_tagging);
		else if (tagging && del)
			CALL(CN_S3_API_deletebuckettagging, cn_s3_delete_bucket_tagging);
		else if (tagging)
			cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		else if (get && cn_s3_query(r, "uploads"))
			CALL(CN_S3_API_listmultipartuploads, cn_s3_list_multipart_uploads);
		else if (acl && get)
			CALL(CN_S3_API_getbucketacl, cn_s3_get_acl);
		else if (acl && put)
			CALL(CN_S3_API_putbucketacl, cn_s3_put_acl);
		else if (acl)
			cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		else if (get && cn_s3_query(r, "location"))
			CALL(CN_S3_API_getbucketlocation, cn_s3_get_bucket_location);
		else if (get && cn_s3_query(r, "list-type"))
			CALL(CN_S3_API_listobjectsv2, cn_s3_list_objects);
		else if (get)
			CALL(CN_S3_API_listobjectsv1, cn_s3_list_objects);
		else if (put)
			CALL(CN_S3_API_putbucket, cn_s3_create_bucket);
		else if (head)
			CALL(CN_S3_API_headbucket, cn_s3_head_bucket);
		else if (del)
			CALL(CN_S3_API_deletebucket, cn_s3_delete_bucket);
		else if (post && cn_s3_query(r, "delete"))
			CALL(CN_S3_API_deletemultipleobjects, cn_s3_delete_objects);
		else if (post && r->browser_post)
			CALL(CN_S3_API_postpolicybucket, cn_s3_post_object);
		else if (post)
			cn_s3_error(r, CN_S3_MalformedPOSTRequest, NULL);
		else
			cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		return;
	}
	const char *upload_id = cn_s3_query(r, "uploadId");
	if (tagging && get)
		CALL(CN_S3_API_getobjecttagging, cn_s3_get_object_tagging);
	else if (tagging && put)
		CALL(CN_S3_API_putobjecttagging, cn_s3_put_object_tagging);
	else if (tagging && del)
		CALL(CN_S3_API_deleteobjecttagging, cn_s3_delete_object_tagging);
	else if (tagging)
		cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
	else if (post && cn_s3_query(r, "uploads"))
		CALL(CN_S3_API_newmultipartupload, cn_s3_create_multipart);
	else if (upload_id && put)
		CALL(cn_s3_header(r, "x-amz-copy-source") ? CN_S3_API_copyobjectpart : CN_S3_API_putobjectpart,
		     cn_s3_upload_part);   /* also UploadPartCopy (x-amz-copy-source) */
	else if (upload_id && post)
		CALL(CN_S3_API_completemultipartupload, cn_s3_complete_multipart);
	else if (upload_id && del)
		CALL(CN_S3_API_abortmultipartupload, cn_s3_abort_multipart);
	else if (upload_id && get)
		CALL(CN_S3_API_listobjectparts, cn_s3_list_parts);
	else if (upload_id)
		cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
	else if (acl && get)
		CALL(CN_S3_API_getobjectacl, cn_s3_get_acl);
	else if (acl && put)
		CALL(CN_S3_API_putobjectacl, cn_s3_put_acl);
	else if (acl)
		cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
	else if (get || head)
		CALL(head ? CN_S3_API_headobject : CN_S3_API_getobject, cn_s3_get_object);
	else if (put)
		CALL(cn_s3_header(r, "x-amz-copy-source") ? CN_S3_API_copyobject : CN_S3_API_putobject,
		     cn_s3_put_object);
	else if (del)
		CALL(CN_S3_API_deleteobject, cn_s3_delete_object);
	else
		cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
}

static bool health(cn_s3_server *s, cn_http_exchange *x, const cn_http_req *h)
{
	if (!cn_str_has_prefix(h->path, "/minio/health/"))
		return false;
	cn_str what = { h->path.p + 14, h->path.len - 14 };
	int status;
	if (cn_str_eq_c(what, "live"))
		status = 200;
	else if (cn_str_eq_c(what, "ready") || cn_str_eq_c(what, "cluster") ||
	         cn_str_eq_c(what, "cluster/read"))
		status = s->ready && cn_obj_store_ready(s->cfg.store) ? 200 : 503;
	else
		return false;
	cn_http_resp_start(x, status);
	cn_http_resp_send(x, NULL, 0);
	return true;
}

/* After a request: its API's counters (relaxed atomics: a few adds per request). */
static void count(cn_s3_server *s, cn_s3_req *r, bool rejected_auth, bool rejected_invalid)
{
	cn_http_exchange *x = r->x;
	__atomic_sub_fetch(&s->inflight, 1, __ATOMIC_RELAXED);
	if (cn_http_deferred(x))
		return; /* runs again on a worker, counted there */
	cn_s3_api_counters *c = &s->api[r->api];
	__atomic_add_fetch(&c->requests, 1, __ATOMIC_RELAXED);
	int st = cn_http_resp_status(x);
	if (st >= 500)
		__atomic_add_fetch(&c->errors_5xx, 1, __ATOMIC_RELAXED);
	else if (st >= 400)
		__atomic_add_fetch(&c->errors_4xx, 1, __ATOMIC_RELAXED);
	if (rejected_auth)
		__atomic_add_fetch(&s->rejected_auth, 1, __ATOMIC_RELAXED);
	if (rejected_invalid)
		__atomic_add_fetch(&s->rejected_invalid, 1, __ATOMIC_RELAXED);
	int64_t ttfb = cn_http_ttfb_ns(x);
	if (ttfb >= 0) {
		double sec = (double)ttfb / 1e9;
		int k = 0;
		while (k < CN_S3_TTFB_SLOTS - 1 && sec > cn_s3_ttfb_bounds[k])
			k++;
		__atomic_add_fetch(&c->ttfb[k], 1, __ATOMIC_RELAXED);
	}
	int64_t in = 0, out = 0;
	cn_http_traffic(x, &in, &out);
	if (in > 0)
		__atomic_add_fetch(&s->rx_bytes, (unsigned long long)in, __ATOMIC_RELAXED);
	if (out > 0)
		__atomic_add_fetch(&s->tx_bytes, (unsigned long long)out, __ATOMIC_RELAXED);
}

void cn_s3_req_init(cn_s3_req *r, cn_s3_server *s, cn_http_exchange *x)
{
	memset(r, 0, sizeof *r);
	r->srv = s;
	r->store = s->cfg.store;
	r->x = x;
	r->h = cn_http_request(x);
	r->reqid = cn_http_request_id(x);
	r->bucket = "";
	r->key = "";
	r->head = cn_str_eq_c(r->h->method, "HEAD");
}

size_t cn_s3_preread(void *ctx, const cn_http_req *req)
{
	(void)ctx;
	if (cn_http_req_header(req, "authorization"))
		return 0;
	/* a presigned request (V4 or V2): its credentials are in the query */
	cn_str q = req->query;
	static const char *const marks[] = { "X-Amz-Signature=", "X-Amz-Credential=", "Signature=",
	                                     "AWSAccessKeyId=" };
	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
		if (memmem(q.p, q.len, marks[i], strlen(marks[i])))
			return 0;
	return CN_HTTP_PREREAD_MAX;
}

void cn_s3_handle(cn_s3_server *s, cn_http_exchange *x)
{
	const cn_http_req *h = cn_http_request(x);
	if (health(s, x, h) || cn_s3_metrics(s, x, h))
		return;
	__atomic_add_fetch(&s->inflight, 1, __ATOMIC_RELAXED);
	bool rejected_auth = false, rejected_invalid = false;
	cn_s3_req r;
	cn_s3_req_init(&r, s, x);
	cn_s3_code c = parse_target(&r);
	if (!c)
		c = parse_query(&r);
	if (!c && cn_str_eq_c(h->method, "OPTIONS")) {
		/* a CORS preflight: unauthenticated; reads the bucket's rules (on a worker) */
		r.api = CN_S3_API_preflight;
		if (!cn_http_defer(x))
			cn_s3_cors_preflight(&r);
		goto out;
	}
	if (!c && r.bucket[0] && cn_http_req_header(h, "origin") &&
	    !(!strcmp(r.bucket, "minio") && !strncmp(r.key, "admin/", 6))) {
		/* a browser's cross-origin request: the bucket's CORS rules decide its headers,
		 * also on an authentication error (which the browser can then read); reading the
		 * rules may wait for drives, so on a worker (the request starts over there) */
		if (cn_http_defer(x))
			goto out;
		cn_s3_cors_actual(&r);
	}
	if (!c) {
		cn_auth_config ac = {
			.lookup = lookup_secret,
			.lookup_ctx = s,
			.region = s->cfg.enforce_region ? s->cfg.region : NULL,
			.max_skew_ms = 15 * 60 * 1000,
			.vhost_bucket = r.vhost ? r.bucket : NULL,
		};
		r.browser_post = is_browser_post(&r);
		cn_auth_err ae = r.browser_post ? CN_AUTH_OK : cn_auth_check(&ac, h, cn_now_ms(), &r.auth);
		if (ae != CN_AUTH_OK) {
			rejected_auth = true;
			if (ae == CN_AUTH_HEADERS_NOT_SIGNED) {
				r.error_elem = "HeadersNotSigned";
				r.error_elem_value = r.auth.headers_not_signed;
			}
			cn_s3_code code = auth_code(ae, &r.auth, &r.error_status);
			cn_s3_error(&r, code, auth_message(ae, &r.auth));
			goto out;
		}
		c = body_setup(&r);
	}
	if (c) {
		rejected_invalid = true;
		cn_s3_error(&r, c, NULL);
		goto out;
	}

	if (!strcmp(r.bucket, "minio") && !strncmp(r.key, "admin/", 6)) {
		r.api = CN_S3_API_admin;
		if (!cn_http_defer(x)) /* drive state: on a worker */
			cn_s3_admin(&r);
	} else {
		route(&r);
	}
out:
	count(s, &r, rejected_auth, rejected_invalid);
	body_teardown(&r);
	arena_free(&r);
}

cn_err cn_s3_new(const cn_s3_config *cfg, cn_s3_server **out)
{
	cn_s3_server *s = calloc(1, sizeof *s);
	if (!s)
		return CN_ERR_NOMEM;
	s->cfg = *cfg;
	s->start_ms = cn_now_ms();
	const char *auth = getenv("CAIRN_PROMETHEUS_AUTH_TYPE");
	if (!auth || !*auth)
		auth = getenv("MINIO_PROMETHEUS_AUTH_TYPE");
	s->metrics_public = auth && !strcmp(auth, "public");
	/* anything but jwt or public was refused by `cairn server` before */
	*out = s;
	return CN_OK;
}

void cn_s3_free(cn_s3_server *s)
{
	free(s);
}

void cn_s3_set_ready(cn_s3_server *s, bool ready)
{
	s->ready = ready;
}

void cn_s3_set_serving_stats(cn_s3_server *s, void (*fn)(void *ctx, cn_s3_serving_stats *out),
                             void *ctx)
{
	s->serving_stats = fn;
	s->serving_ctx = ctx;
}
