/* s3/auth.c: request authentication for the s3 layer (interface and canonicalisation rules in
 * auth.h) — AWS Signature V4 from the Authorization header and from presigned query
 * parameters, the V4 streaming chunk/trailer verifier handed to the aws-chunked decoder, and
 * Signature V2 (header and query) for old clients. Pure computation over a parsed request head:
 * OpenSSL for SHA-256/HMAC, CRYPTO_memcmp for every signature comparison.
 *
 * Invariants:
 *  AUTH-1. Every input-driven size is bounded: <= 256 query parameters, canonical request
 *     <= 16 KiB, access key <= 128 bytes, region <= 63 bytes, signed-header names <= 128 bytes.
 *  AUTH-2. The query string is decoded the way MinIO (Go's url.ParseQuery) decodes it: '+' is a
 *     space, %XX an escape. boto3/aws-cli send spaces as %20 and '+' as %2B, so both readings
 *     agree for them; s3cmd-style literal '+' in values then means space, as on MinIO.
 *  AUTH-3. The path is decoded once with '+' kept literal, then re-encoded (auth.h).
 *  AUTH-4. No signature is compared before the scope, date and payload-hash checks passed, and each
 *     comparison is constant time over the full 32 (V4) or 20 (V2) bytes. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "s3/auth.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#define MAX_QPARAMS 256
#define CANON_MAX (16 * 1024)
#define DEFAULT_SKEW_MS (15 * 60 * 1000LL)
#define MAX_PRESIGN_EXPIRES 604800

/* ---- small helpers --------------------------------------------------------------------- */

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool str_ieq(cn_str a, cn_str b)
{
	if (a.len != b.len)
		return false;
	for (size_t i = 0; i < a.len; i++)
		if (lower(a.p[i]) != lower(b.p[i]))
			return false;
	return true;
}

static bool is_hex_lower(cn_str s)
{
	for (size_t i = 0; i < s.len; i++)
		if (!((s.p[i] >= '0' && s.p[i] <= '9') || (s.p[i] >= 'a' && s.p[i] <= 'f')))
			return false;
	return true;
}

static bool is_hex(cn_str s)
{
	for (size_t i = 0; i < s.len; i++) {
		char c = lower(s.p[i]);
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

static cn_str trim(cn_str s)
{
	while (s.len && (s.p[0] == ' ' || s.p[0] == '\t')) {
		s.p++;
		s.len--;
	}
	while (s.len && (s.p[s.len - 1] == ' ' || s.p[s.len - 1] == '\t'))
		s.len--;
	return s;
}

/* The first header with this name (case-insensitive), or NULL. Own copy rather than
 * cn_http_req_header so that this module stands alone. */
static const cn_str *hdr_get(const cn_http_req *req, const char *name)
{
	size_t n = req->nheaders < CN_HTTP_MAX_HEADERS ? req->nheaders : CN_HTTP_MAX_HEADERS;
	for (size_t i = 0; i < n; i++)
		if (cn_str_ieq_c(req->headers[i].name, name))
			return &req->headers[i].value;
	return NULL;
}

static void copy_str(char *dst, size_t cap, cn_str s)
{
	size_t n = s.len < cap - 1 ? s.len : cap - 1;
	if (n)
		memcpy(dst, s.p, n);
	dst[n] = 0;
}

static void fmt_amz_date(int64_t ms, char out[17])
{
	struct tm tm;
	cn_time_utc(ms / 1000, &tm);
	char tmp[64];
	snprintf(tmp, sizeof tmp, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	copy_str(out, 17, cn_str_c(tmp));
}

/* HTTP dates; also the numeric zone "+0000" that older clients (and the AWS V2 examples)
 * send in place of "GMT". */
static cn_err parse_http_date(cn_str s, int64_t *ms)
{
	if (cn_time_parse_http(s, ms) == CN_OK)
		return CN_OK;
	char tmp[64];
	if (s.len < 6 || s.len >= sizeof tmp - 4 || memcmp(s.p + s.len - 6, " +0000", 6) != 0)
		return CN_ERR_INVALID;
	memcpy(tmp, s.p, s.len - 5);
	memcpy(tmp + s.len - 5, "GMT", 3);
	return cn_time_parse_http((cn_str){ tmp, s.len - 2 }, ms);
}

static int64_t skew_limit(const cn_auth_config *cfg)
{
	return cfg->max_skew_ms > 0 ? cfg->max_skew_ms : DEFAULT_SKEW_MS;
}

/* ---- query parsing --------------------------------------------------------------------- */

typedef struct qparam {
	const char *name, *value; /* decoded, NUL-terminated in the set's scratch */
	size_t nlen, vlen;
} qparam;

typedef struct qset {
	qparam p[MAX_QPARAMS];
	size_t n;
	char *scratch;
} qset;

static void qset_fini(qset *qs)
{
	free(qs->scratch);
	qs->scratch = NULL;
	qs->n = 0;
}

/* Splits on '&', decodes names and values (AUTH-2). Empty segments are skipped. */
static cn_err qset_parse(cn_str q, qset *qs)
{
	qs->n = 0;
	qs->scratch = NULL;
	if (q.len == 0)
		return CN_OK;
	size_t cap = q.len + 2 * (MAX_QPARAMS + 1) + 16;
	qs->scratch = malloc(cap);
	if (!qs->scratch)
		return CN_ERR_NOMEM;
	size_t off = 0, i = 0;
	while (i <= q.len) {
		size_t j = i;
		while (j < q.len && q.p[j] != '&')
			j++;
		if (j > i) {
			if (qs->n == MAX_QPARAMS)
				return CN_ERR_TOO_LARGE;
			cn_str seg = { q.p + i, j - i };
			const char *eq = memchr(seg.p, '=', seg.len);
			cn_str name = seg, val = { "", 0 };
			if (eq) {
				name.len = (size_t)(eq - seg.p);
				val = (cn_str){ eq + 1, seg.len - name.len - 1 };
			}
			qparam *pp = &qs->p[qs->n];
			size_t len;
			cn_err e = cn_url_decode(name, true, qs->scratch + off, cap - off, &len);
			if (e)
				return CN_ERR_INVALID;
			pp->name = qs->scratch + off;
			pp->nlen = len;
			off += len + 1;
			e = cn_url_decode(val, true, qs->scratch + off, cap - off, &len);
			if (e)
				return CN_ERR_INVALID;
			pp->value = qs->scratch + off;
			pp->vlen = len;
			off += len + 1;
			qs->n++;
		}
		i = j + 1;
	}
	return CN_OK;
}

/* Number of parameters named `name` (exact case); *first gets the first. */
static int qget(const qset *qs, const char *name, const qparam **first)
{
	int n = 0;
	size_t len = strlen(name);
	*first = NULL;
	for (size_t i = 0; i < qs->n; i++) {
		if (qs->p[i].nlen == len && memcmp(qs->p[i].name, name, len) == 0) {
			if (!n)
				*first = &qs->p[i];
			n++;
		}
	}
	return n;
}

static cn_str qstr(const qparam *p)
{
	return (cn_str){ p->value, p->vlen };
}

/* ---- V4 canonical request -------------------------------------------------------------- */

/* The canonical query (util's cn_sigv4_canonical_query, the one the client signs with) of
 * the request's parameters; a presigned URL's own X-Amz-Signature is not part of it. */
static cn_err canonical_query(cn_str query, bool presigned, cn_buf *b)
{
	qset *qs = malloc(sizeof *qs);
	cn_query_param *params = NULL;
	if (!qs)
		return CN_ERR_NOMEM;
	cn_err e = qset_parse(query, qs);
	if (e)
		goto out;
	params = malloc(sizeof *params * (qs->n ? qs->n : 1));
	if (!params) {
		e = CN_ERR_NOMEM;
		goto out;
	}
	size_t n = 0;
	for (size_t i = 0; i < qs->n; i++) {
		const qparam *p = &qs->p[i];
		if (presigned && p->nlen == 15 && memcmp(p->name, "X-Amz-Signature", 15) == 0)
			continue;
		params[n++] = (cn_query_param){ { p->name, p->nlen }, { p->value, p->vlen } };
	}
	e = cn_sigv4_canonical_query(params, n, CANON_MAX, b);
out:
	free(params);
	qset_fini(qs);
	free(qs);
	return e;
}

/* Appends a header value trimmed, with inner runs of spaces/tabs folded to one space. */
static cn_err append_folded(cn_buf *b, cn_str v)
{
	v = trim(v);
	cn_err e = cn_buf_reserve(b, v.len);
	if (e)
		return e;
	bool sp = false;
	for (size_t i = 0; i < v.len; i++) {
		char c = v.p[i];
		if (c == ' ' || c == '\t') {
			if (!sp)
				b->p[b->len++] = ' ';
			sp = true;
		} else {
			b->p[b->len++] = c;
			sp = false;
		}
	}
	b->p[b->len] = 0;
	return CN_OK;
}

/* matched (optional): bit k set when request header k is among the signed ones. */
static cn_err canonical_headers(const cn_http_req *req, cn_str signed_headers, cn_buf *b,
				uint64_t *matched)
{
	if (signed_headers.len == 0)
		return CN_ERR_INVALID;
	size_t nh = req->nheaders < CN_HTTP_MAX_HEADERS ? req->nheaders : CN_HTTP_MAX_HEADERS;
	size_t i = 0;
	while (i <= signed_headers.len) {
		size_t j = i;
		while (j < signed_headers.len && signed_headers.p[j] != ';')
			j++;
		cn_str name = { signed_headers.p + i, j - i };
		if (name.len == 0 || name.len > 128)
			return CN_ERR_INVALID;
		/* the name in lower case and its ':', written in place (one reservation, not
		 * one append per byte) */
		cn_err e = cn_buf_reserve(b, name.len + 1);
		if (e)
			return e;
		for (size_t k = 0; k < name.len; k++) {
			unsigned char c = (unsigned char)name.p[k];
			if (c <= ' ' || c >= 0x7f || c == ':')
				return CN_ERR_INVALID;
			b->p[b->len++] = lower((char)c);
		}
		b->p[b->len++] = ':';
		b->p[b->len] = 0;
		bool found = false;
		for (size_t k = 0; k < nh; k++) {
			if (!str_ieq(req->headers[k].name, name))
				continue;
			if (found && (e = cn_buf_append(b, ",", 1)))
				return e;
			if ((e = append_folded(b, req->headers[k].value)))
				return e;
			found = true;
			if (matched)
				matched[k / 64] |= (uint64_t)1 << (k % 64);
		}
		if (!found) {
			/* What the client signed may be absent from the head we see: the Host header
			 * (HTTP/1.0 with an absolute target), an Expect a proxy consumed. */
			if (cn_str_ieq_c(name, "host"))
				e = append_folded(b, req->host);
			else if (cn_str_ieq_c(name, "expect"))
				e = cn_buf_puts(b, "100-continue");
			else if (cn_str_ieq_c(name, "content-length") && req->content_length >= 0)
				e = cn_buf_printf(b, "%lld", (long long)req->content_length);
			if (e)
				return e;
		}
		if ((e = cn_buf_append(b, "\n", 1)))
			return e;
		if (b->len > CANON_MAX)
			return CN_ERR_TOO_LARGE;
		i = j + 1;
	}
	return CN_OK;
}

static cn_err canonical_request(const cn_http_req *req, cn_str signed_headers, cn_str payload_hash,
				bool presigned, cn_buf *b, uint64_t *matched)
{
	cn_err e = cn_buf_append(b, req->method.p, req->method.len);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (e)
		return e;
	if (req->path.len == 0) {
		e = cn_buf_append(b, "/", 1);
	} else {
		if (req->path.len > CANON_MAX)
			return CN_ERR_TOO_LARGE;
		char *dec = malloc(req->path.len + 1);
		size_t dlen;
		if (!dec)
			return CN_ERR_NOMEM;
		e = cn_url_decode(req->path, false, dec, req->path.len + 1, &dlen);
		if (!e)
			e = cn_url_encode(b, (cn_str){ dec, dlen }, true);
		free(dec);
	}
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = canonical_query(req->query, presigned, b);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = canonical_headers(req, signed_headers, b, matched);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = cn_buf_append(b, signed_headers.p, signed_headers.len);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = cn_buf_append(b, payload_hash.p, payload_hash.len);
	if (!e && b->len > CANON_MAX)
		e = CN_ERR_TOO_LARGE;
	return e;
}

cn_err cn_sigv4_canonical_request(const cn_http_req *req, cn_str signed_headers,
				  cn_str payload_hash, bool presigned, cn_buf *b)
{
	return canonical_request(req, signed_headers, payload_hash, presigned, b, NULL);
}

/* The signing key changes once a day per (secret, region, service): each worker thread
 * keeps the last one it derived, saving four HMACs per request. */
static __thread struct {
	char id[256]; /* date8 \0 region \0 service \0 secret, compared as bytes */
	size_t idlen;
	unsigned char key[32];
} sk_cache;

void cn_sigv4_signing_key(const char *secret, cn_str date8, cn_str region, cn_str service,
			  unsigned char out[32])
{
	size_t slen = strlen(secret);
	char id[256];
	size_t idlen = date8.len + region.len + service.len + slen + 3;
	bool cacheable = idlen <= sizeof id;
	if (cacheable) {
		char *q = id;
		memcpy(q, date8.p, date8.len), q += date8.len, *q++ = 0;
		memcpy(q, region.p, region.len), q += region.len, *q++ = 0;
		memcpy(q, service.p, service.len), q += service.len, *q++ = 0;
		memcpy(q, secret, slen);
		if (sk_cache.idlen == idlen && memcmp(sk_cache.id, id, idlen) == 0) {
			memcpy(out, sk_cache.key, 32);
			OPENSSL_cleanse(id, sizeof id);
			return;
		}
	}
	unsigned char *k = malloc(slen + 4);
	unsigned char t[32];
	CN_ASSERT(k != NULL);
	memcpy(k, "AWS4", 4);
	memcpy(k + 4, secret, slen);
	cn_hmac_sha256(k, slen + 4, date8.p, date8.len, t);
	OPENSSL_cleanse(k, slen + 4);
	free(k);
	cn_hmac_sha256(t, 32, region.p, region.len, t);
	cn_hmac_sha256(t, 32, service.p, service.len, t);
	cn_hmac_sha256(t, 32, "aws4_request", 12, out);
	OPENSSL_cleanse(t, sizeof t);
	if (cacheable) {
		memcpy(sk_cache.id, id, idlen);
		sk_cache.idlen = idlen;
		memcpy(sk_cache.key, out, 32);
		OPENSSL_cleanse(id, sizeof id);
	}
}

/* Copies n bytes (p may be NULL when n is 0) and a '\n' if nl; returns the end. */
static char *put_line(char *out, const char *p, size_t n, bool nl)
{
	if (n)
		memcpy(out, p, n);
	out += n;
	if (nl)
		*out++ = '\n';
	return out;
}

static void sign_sts(const unsigned char key[32], const char *algo, cn_str amz_date, cn_str scope,
		     cn_str prev, const char *h1, const char *h2, char out[65])
{
	/* algo \n date \n scope \n [prev \n [h1 \n]] h2 — sizes are bounded by the callers;
	 * put together with memcpy (snprintf here was ~2 % of a small GET's instructions). */
	char sts[512];
	size_t al = strlen(algo), h1l = prev.len && h1 ? strlen(h1) : 0, h2l = strlen(h2);
	CN_ASSERT(al + amz_date.len + scope.len + prev.len + h1l + h2l + 5 < sizeof sts);
	char *p = sts;
	p = put_line(p, algo, al, true);
	p = put_line(p, amz_date.p, amz_date.len, true);
	p = put_line(p, scope.p, scope.len, true);
	if (prev.len) {
		p = put_line(p, prev.p, prev.len, true);
		if (h1)
			p = put_line(p, h1, h1l, true);
	}
	p = put_line(p, h2, h2l, false);
	size_t n = (size_t)(p - sts);
	unsigned char mac[32];
	cn_hmac_sha256(key, 32, sts, n, mac);
	cn_hex_encode(mac, 32, out);
}

void cn_sigv4_signature(const unsigned char key[32], cn_str amz_date, cn_str scope,
			cn_str canonical_request, char out[65])
{
	char h[65];
	cn_sha256_hex(canonical_request.p, canonical_request.len, h);
	if (amz_date.len > 32)
		amz_date.len = 32;
	if (scope.len > 200)
		scope.len = 200;
	sign_sts(key, "AWS4-HMAC-SHA256", amz_date, scope, (cn_str){ "", 0 }, NULL, h, out);
}

static bool sig_eq_hex(const char computed[65], cn_str given)
{
	char g[64];
	if (given.len != 64 || !is_hex(given))
		return false;
	for (size_t i = 0; i < 64; i++)
		g[i] = lower(given.p[i]);
	return CRYPTO_memcmp(computed, g, 64) == 0;
}

/* ---- V4: shared verification ----------------------------------------------------------- */

typedef struct v4parts {
	cn_str akid, date8, region, service, signed_headers, signature;
} v4parts;

static bool cred_parse(cn_str cred, v4parts *v)
{
	/* AKID/date/region/service/aws4_request; the access key is everything before the last
	 * four components. */
	size_t slash[4], ns = 0;
	for (size_t i = cred.len; i > 0 && ns < 4; i--)
		if (cred.p[i - 1] == '/')
			slash[ns++] = i - 1;
	if (ns < 4)
		return false;
	v->akid = (cn_str){ cred.p, slash[3] };
	v->date8 = (cn_str){ cred.p + slash[3] + 1, slash[2] - slash[3] - 1 };
	v->region = (cn_str){ cred.p + slash[2] + 1, slash[1] - slash[2] - 1 };
	v->service = (cn_str){ cred.p + slash[1] + 1, slash[0] - slash[1] - 1 };
	cn_str term = { cred.p + slash[0] + 1, cred.len - slash[0] - 1 };
	if (v->akid.len == 0 || v->akid.len > 128 || v->region.len == 0 || v->region.len > 63 ||
	    !cn_str_eq_c(term, "aws4_request") || v->date8.len != 8)
		return false;
	for (size_t i = 0; i < 8; i++)
		if (v->date8.p[i] < '0' || v->date8.p[i] > '9')
			return false;
	return true;
}

/* Checks the parts that do not need the secret: credential date vs request date, service,
 * region, host signed, signature syntax. */
static cn_auth_err v4_check_scope(const cn_auth_config *cfg, const v4parts *v, cn_str amz_date,
				  cn_auth_result *out)
{
	if (!cn_str_eq((cn_str){ amz_date.p, 8 }, v->date8)) {
		out->detail = "credential date does not match the request date";
		return CN_AUTH_MALFORMED;
	}
	if (!cn_str_eq_c(v->service, "s3")) {
		out->detail = "credential service must be s3";
		return CN_AUTH_MALFORMED;
	}
	if (cfg->region && cfg->region[0] && !cn_str_eq_c(v->region, cfg->region)) {
		out->detail = "credential region is wrong for this server";
		return CN_AUTH_MALFORMED;
	}
	if (v->signature.len != 64 || !is_hex(v->signature)) {
		out->detail = "signature must be 64 hex characters";
		return CN_AUTH_MALFORMED;
	}
	bool host = false;
	cn_str sh = v->signed_headers;
	size_t i = 0;
	while (i <= sh.len) {
		size_t j = i;
		while (j < sh.len && sh.p[j] != ';')
			j++;
		if (j == i) {
			out->detail = "empty name in SignedHeaders";
			return CN_AUTH_MALFORMED;
		}
		if (cn_str_ieq_c((cn_str){ sh.p + i, j - i }, "host"))
			host = true;
		i = j + 1;
	}
	if (!host) {
		out->detail = "host must be a signed header";
		return CN_AUTH_MALFORMED;
	}
	return CN_AUTH_OK;
}

/* Classifies an x-amz-content-sha256 value; false when it is none of the accepted forms. */
static bool payload_mode(cn_str v, cn_payload_mode *m)
{
	if (cn_str_eq_c(v, "UNSIGNED-PAYLOAD"))
		*m = CN_PAYLOAD_UNSIGNED;
	else if (cn_str_eq_c(v, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"))
		*m = CN_PAYLOAD_STREAMING_SIGNED;
	else if (cn_str_eq_c(v, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"))
		*m = CN_PAYLOAD_STREAMING_SIGNED_TRAILER;
	else if (cn_str_eq_c(v, "STREAMING-UNSIGNED-PAYLOAD-TRAILER"))
		*m = CN_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
	else if (v.len == 64 && is_hex_lower(v))
		*m = CN_PAYLOAD_SHA256;
	else
		return false;
	return true;
}

/* Rule AUTH-5: a V4 request does only what was signed. Every x-amz-* header it carries must be
 * among its SignedHeaders, as AWS requires ("There were headers present in the request
 * which were not signed"): otherwise the holder of a presigned upload URL could add
 * x-amz-copy-source and copy any object the signer can read into its slot, or store
 * metadata, tags or a storage class the signer never chose. x-amz-content-sha256 is
 * exempt on header-signed requests only: its value is the payload hash that ends the
 * canonical request, so the signature covers it anyway. The first unsigned name goes to
 * out->headers_not_signed. (SigV2 signs every x-amz-* header by construction:
 * v2_string_to_sign.) */
_Static_assert(CN_HTTP_MAX_HEADERS <= 128, "the signed-header mask holds every header");
static cn_auth_err v4_headers_signed(const cn_http_req *req, const uint64_t matched[2], bool presigned,
				     cn_auth_result *out)
{
	size_t nh = req->nheaders < CN_HTTP_MAX_HEADERS ? req->nheaders : CN_HTTP_MAX_HEADERS;
	for (size_t k = 0; k < nh; k++) {
		cn_str nm = req->headers[k].name;
		if ((matched[k / 64] >> (k % 64)) & 1)
			continue; /* signed (canonical_headers found it) */
		if (nm.len < 6 || (nm.p[0] | 0x20) != 'x' || !str_ieq((cn_str){ nm.p, 6 }, CN_STR("x-amz-")))
			continue;
		if (!presigned && str_ieq(nm, CN_STR("x-amz-content-sha256")))
			continue;
		copy_str(out->headers_not_signed, sizeof out->headers_not_signed, nm);
		for (char *c = out->headers_not_signed; *c; c++)
			*c = lower(*c);
		out->detail = "There were headers present in the request which were not signed";
		return CN_AUTH_HEADERS_NOT_SIGNED;
	}
	return CN_AUTH_OK;
}

/* Looks the key up, builds the canonical request, compares, fills `out`. */
static cn_auth_err v4_verify(const cn_auth_config *cfg, const cn_http_req *req, const v4parts *v,
			     cn_str amz_date, cn_str payload_hash, bool presigned, cn_auth_result *out)
{
	if (!cfg->lookup) {
		out->detail = "no credential store";
		return CN_AUTH_UNKNOWN_KEY;
	}
	const char *secret = cfg->lookup(cfg->lookup_ctx, v->akid);
	if (!secret) {
		out->detail = "the access key does not exist";
		return CN_AUTH_UNKNOWN_KEY;
	}
	copy_str(out->access_key, sizeof out->access_key, v->akid);
	copy_str(out->region, sizeof out->region, v->region);
	copy_str(out->amz_date, sizeof out->amz_date, amz_date);
	/* date8/region/s3/aws4_request: 8 digits (checked) and a region cut to 63 bytes fit */
	size_t rl = strlen(out->region);
	CN_ASSERT(v->date8.len == 8 && 8 + 1 + rl + 17 < sizeof out->scope);
	memcpy(out->scope, v->date8.p, 8);
	out->scope[8] = '/';
	memcpy(out->scope + 9, out->region, rl);
	memcpy(out->scope + 9 + rl, "/s3/aws4_request", 17);
	cn_sigv4_signing_key(secret, v->date8, v->region, v->service, out->signing_key);

	cn_buf b;
	cn_buf_init(&b);
	uint64_t matched[2] = { 0, 0 };
	cn_err e = canonical_request(req, v->signed_headers, payload_hash, presigned, &b, matched);
	if (e) {
		cn_buf_fini(&b);
		out->detail = e == CN_ERR_NOMEM ? "out of memory" : "request cannot be canonicalised";
		return CN_AUTH_MALFORMED;
	}
	cn_auth_err ae = v4_headers_signed(req, matched, presigned, out);
	if (ae) {
		cn_buf_fini(&b);
		OPENSSL_cleanse(out->signing_key, sizeof out->signing_key);
		return ae;
	}
	char sig[65];
	cn_sigv4_signature(out->signing_key, amz_date, cn_str_c(out->scope), (cn_str){ b.p, b.len }, sig);
	cn_buf_fini(&b);
	if (!sig_eq_hex(sig, v->signature)) {
		OPENSSL_cleanse(out->signing_key, sizeof out->signing_key);
		out->detail = "the request signature does not match";
		return CN_AUTH_SIGNATURE_MISMATCH;
	}
	memcpy(out->seed_signature, sig, 65);
	return CN_AUTH_OK;
}

/* ---- V4: Authorization header ---------------------------------------------------------- */

static cn_auth_err v4_header_parse(cn_str auth, v4parts *v, cn_auth_result *out)
{
	static const char algo[] = "AWS4-HMAC-SHA256";
	memset(v, 0, sizeof *v);
	out->detail = "malformed Authorization header";
	if (!cn_str_has_prefix(auth, algo) || auth.len == sizeof algo - 1 ||
	    auth.p[sizeof algo - 1] != ' ')
		return CN_AUTH_MALFORMED;
	cn_str rest = trim((cn_str){ auth.p + sizeof algo, auth.len - sizeof algo });
	bool have[3] = { false, false, false };
	size_t i = 0;
	while (i <= rest.len) {
		size_t j = i;
		while (j < rest.len && rest.p[j] != ',')
			j++;
		cn_str part = trim((cn_str){ rest.p + i, j - i });
		const char *eq = memchr(part.p, '=', part.len);
		if (!eq)
			return CN_AUTH_MALFORMED;
		cn_str key = { part.p, (size_t)(eq - part.p) };
		cn_str val = { eq + 1, part.len - key.len - 1 };
		int k;
		if (cn_str_eq_c(key, "Credential"))
			k = 0;
		else if (cn_str_eq_c(key, "SignedHeaders"))
			k = 1;
		else if (cn_str_eq_c(key, "Signature"))
			k = 2;
		else
			return CN_AUTH_MALFORMED;
		if (have[k] || val.len == 0)
			return CN_AUTH_MALFORMED;
		have[k] = true;
		if (k == 0 && !cred_parse(val, v))
			return CN_AUTH_MALFORMED;
		if (k == 1)
			v->signed_headers = val;
		if (k == 2)
			v->signature = val;
		i = j + 1;
	}
	if (!have[0] || !have[1] || !have[2])
		return CN_AUTH_MALFORMED;
	out->detail = NULL;
	return CN_AUTH_OK;
}

static cn_auth_err v4_header(const cn_auth_config *cfg, const cn_http_req *req, cn_str auth,
			     int64_t now_ms, cn_auth_result *out)
{
	v4parts v;
	cn_auth_err ae = v4_header_parse(auth, &v, out);
	if (ae)
		return ae;
	out->kind = CN_AUTH_KIND_V4_HEADER;

	/* The request time: x-amz-date (ISO 8601 basic), else Date (HTTP date). */
	char amz[17];
	int64_t date_ms;
	const cn_str *xd = hdr_get(req, "x-amz-date"), *d = hdr_get(req, "date");
	if (xd) {
		cn_str t = trim(*xd);
		if (cn_time_parse_amz(t, &date_ms)) {
			out->detail = "x-amz-date is not a valid ISO 8601 basic date";
			return CN_AUTH_MISSING_DATE;
		}
		copy_str(amz, sizeof amz, t);
	} else if (d) {
		if (parse_http_date(trim(*d), &date_ms)) {
			out->detail = "Date is not a valid HTTP date";
			return CN_AUTH_MISSING_DATE;
		}
		fmt_amz_date(date_ms, amz);
	} else {
		out->detail = "a valid Date or x-amz-date header is required";
		return CN_AUTH_MISSING_DATE;
	}
	cn_str amz_date = { amz, 16 };
	if ((ae = v4_check_scope(cfg, &v, amz_date, out)))
		return ae;

	/* The payload hash. When x-amz-content-sha256 is absent (some SDKs omit it) a bodiless
	 * request is signed with the empty-body hash; a request with a body must say how its
	 * body is protected (AWS: InvalidRequest), else an unsigned body would pass as signed. */
	const cn_str *cs = hdr_get(req, "x-amz-content-sha256");
	cn_str ph;
	if (cs) {
		ph = trim(*cs);
		if (!payload_mode(ph, &out->payload)) {
			out->detail = "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-*, or a "
				      "lowercase hex SHA-256";
			return CN_AUTH_BAD_CONTENT_SHA256;
		}
	} else if (req->content_length <= 0 && !req->chunked) {
		ph = CN_STR(CN_EMPTY_SHA256);
		out->payload = CN_PAYLOAD_SHA256;
	} else {
		out->detail = "Missing required header for this request: x-amz-content-sha256";
		return CN_AUTH_MISSING_CONTENT_SHA256;
	}
	if (out->payload == CN_PAYLOAD_SHA256)
		copy_str(out->content_sha256, sizeof out->content_sha256, ph);

	int64_t diff = now_ms - date_ms;
	if (diff > skew_limit(cfg) || -diff > skew_limit(cfg)) {
		out->detail = "the difference between the request time and the server's time is too large";
		return CN_AUTH_TIME_SKEWED;
	}
	return v4_verify(cfg, req, &v, amz_date, ph, false, out);
}

/* ---- V4: presigned query --------------------------------------------------------------- */

static cn_auth_err v4_query(const cn_auth_config *cfg, const cn_http_req *req, const qset *qs,
			    int64_t now_ms, cn_auth_result *out)
{
	out->kind = CN_AUTH_KIND_V4_QUERY;
	const qparam *alg, *cred, *date, *exp, *sh, *sig, *cs;
	if (qget(qs, "X-Amz-Algorithm", &alg) != 1 || qget(qs, "X-Amz-Credential", &cred) != 1 ||
	    qget(qs, "X-Amz-Date", &date) != 1 || qget(qs, "X-Amz-Expires", &exp) != 1 ||
	    qget(qs, "X-Amz-SignedHeaders", &sh) != 1 || qget(qs, "X-Amz-Signature", &sig) != 1 ||
	    qget(qs, "X-Amz-Content-Sha256", &cs) > 1) {
		out->detail = "presigned request must carry each X-Amz-* parameter exactly once";
		return CN_AUTH_MALFORMED;
	}
	if (!cn_str_eq_c(qstr(alg), "AWS4-HMAC-SHA256")) {
		out->detail = "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"";
		return CN_AUTH_UNSUPPORTED;
	}
	v4parts v;
	memset(&v, 0, sizeof v);
	if (!cred_parse(qstr(cred), &v)) {
		out->detail = "malformed X-Amz-Credential";
		return CN_AUTH_MALFORMED;
	}
	v.signed_headers = qstr(sh);
	v.signature = qstr(sig);
	int64_t date_ms;
	if (cn_time_parse_amz(qstr(date), &date_ms)) {
		out->detail = "malformed X-Amz-Date";
		return CN_AUTH_MALFORMED;
	}
	/* X-Amz-Expires: decimal seconds, 1..604800. A number outside that range is
	 * CN_AUTH_EXPIRES_RANGE (AWS: 403), anything else that is not a number malformed. */
	cn_str e = qstr(exp);
	size_t i = e.len && e.p[0] == '-' ? 1 : 0;
	if (i == e.len) {
		out->detail = "X-Amz-Expires must be a number of seconds";
		return CN_AUTH_MALFORMED;
	}
	for (size_t j = i; j < e.len; j++)
		if (e.p[j] < '0' || e.p[j] > '9') {
			out->detail = "X-Amz-Expires must be a number of seconds";
			return CN_AUTH_MALFORMED;
		}
	int64_t expires = 0;
	for (size_t j = i; j < e.len && expires <= MAX_PRESIGN_EXPIRES; j++)
		expires = expires * 10 + (e.p[j] - '0');
	if (i || expires < 1) {
		out->detail = i ? "X-Amz-Expires must be non-negative" : "X-Amz-Expires must be positive";
		return CN_AUTH_EXPIRES_RANGE;
	}
	if (expires > MAX_PRESIGN_EXPIRES) {
		out->detail = "X-Amz-Expires must be less than a week (in seconds) that is 604800";
		return CN_AUTH_EXPIRES_RANGE;
	}
	cn_str amz_date = qstr(date);
	cn_auth_err ae = v4_check_scope(cfg, &v, amz_date, out);
	if (ae)
		return ae;

	cn_str ph = CN_STR("UNSIGNED-PAYLOAD");
	const cn_str *hcs = hdr_get(req, "x-amz-content-sha256");
	if (cs)
		ph = qstr(cs);
	else if (hcs)
		ph = trim(*hcs);
	out->payload = CN_PAYLOAD_UNSIGNED;
	if ((cs || hcs) && !payload_mode(ph, &out->payload)) {
		out->detail = "bad X-Amz-Content-Sha256";
		return CN_AUTH_BAD_CONTENT_SHA256;
	}
	if (out->payload == CN_PAYLOAD_SHA256)
		copy_str(out->content_sha256, sizeof out->content_sha256, ph);

	if (date_ms - now_ms > skew_limit(cfg)) {
		out->detail = "request is not valid yet";
		return CN_AUTH_TIME_SKEWED;
	}
	if (now_ms > date_ms + expires * 1000) {
		out->detail = "Request has expired";
		return CN_AUTH_EXPIRED;
	}
	return v4_verify(cfg, req, &v, amz_date, ph, true, out);
}

/* ---- V2 ------------------------------------------------------------------------------- */

static const char *const v2_subresources[] = {
	"acl", "cors", "delete", "lifecycle", "location", "logging", "notification", "partNumber",
	"policy", "requestPayment", "response-cache-control", "response-content-disposition",
	"response-content-encoding", "response-content-language", "response-content-type",
	"response-expires", "restore", "tagging", "torrent", "uploadId", "uploads", "versionId",
	"versioning", "versions", "website",
};

typedef struct v2hdr {
	cn_str name, value;
} v2hdr;

static int v2hdr_cmp(const v2hdr *a, const v2hdr *b)
{
	size_t n = a->name.len < b->name.len ? a->name.len : b->name.len;
	for (size_t i = 0; i < n; i++) {
		char x = lower(a->name.p[i]), y = lower(b->name.p[i]);
		if (x != y)
			return (unsigned char)x < (unsigned char)y ? -1 : 1;
	}
	return a->name.len < b->name.len ? -1 : a->name.len > b->name.len;
}

/* StringToSign = Method \n Content-MD5 \n Content-Type \n Date \n CanonicalizedAmzHeaders
 * CanonicalizedResource. `date` is the Date line (Date header, "" when x-amz-date is set, or
 * the Expires value for query auth). */
/* bucket_slash: the path names a bucket only ("/bucket") and the resource is "/bucket/",
 * as AWS documents and botocore signs it (older clients sign "/bucket": both accepted). */
static cn_err v2_string_to_sign(const cn_http_req *req, const qset *qs, cn_str date, bool bucket_slash,
			       const char *vhost_bucket, cn_buf *b)
{
	const cn_str *md5 = hdr_get(req, "content-md5"), *ct = hdr_get(req, "content-type");
	cn_err e = cn_buf_append(b, req->method.p, req->method.len);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e && md5)
		e = cn_buf_append(b, trim(*md5).p, trim(*md5).len);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e && ct)
		e = cn_buf_append(b, trim(*ct).p, trim(*ct).len);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = cn_buf_append(b, date.p, date.len);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (e)
		return e;

	/* x-amz-* headers: lowercase names, sorted, same names joined by ','. */
	v2hdr hs[CN_HTTP_MAX_HEADERS];
	size_t n = 0, nh = req->nheaders < CN_HTTP_MAX_HEADERS ? req->nheaders : CN_HTTP_MAX_HEADERS;
	for (size_t i = 0; i < nh; i++) {
		cn_str nm = req->headers[i].name;
		if (nm.len > 6 && str_ieq((cn_str){ nm.p, 6 }, CN_STR("x-amz-"))) {
			v2hdr h = { nm, trim(req->headers[i].value) };
			size_t j = n++; /* stable insertion keeps same-name values in request order */
			while (j > 0 && v2hdr_cmp(&hs[j - 1], &h) > 0) {
				hs[j] = hs[j - 1];
				j--;
			}
			hs[j] = h;
		}
	}
	for (size_t i = 0; i < n; i++) {
		bool same = i > 0 && v2hdr_cmp(&hs[i - 1], &hs[i]) == 0;
		if (same) {
			e = cn_buf_append(b, ",", 1);
		} else {
			if (i > 0)
				e = cn_buf_append(b, "\n", 1);
			for (size_t k = 0; k < hs[i].name.len && !e; k++) {
				char c = lower(hs[i].name.p[k]);
				e = cn_buf_append(b, &c, 1);
			}
			if (!e)
				e = cn_buf_append(b, ":", 1);
		}
		if (!e)
			e = cn_buf_append(b, hs[i].value.p, hs[i].value.len);
		if (e)
			return e;
	}
	if (n && (e = cn_buf_append(b, "\n", 1)))
		return e;

	/* Resource: [/vhost-bucket] the path as sent, then the sub-resources (sorted list). */
	if (vhost_bucket && ((e = cn_buf_append(b, "/", 1)) || (e = cn_buf_puts(b, vhost_bucket))))
		return e;
	if ((e = cn_buf_append(b, req->path.len ? req->path.p : "/", req->path.len ? req->path.len : 1)))
		return e;
	if (bucket_slash && (e = cn_buf_append(b, "/", 1)))
		return e;
	bool first = true;
	for (size_t s = 0; s < sizeof v2_subresources / sizeof v2_subresources[0]; s++) {
		const qparam *p;
		if (!qget(qs, v2_subresources[s], &p))
			continue;
		e = cn_buf_append(b, first ? "?" : "&", 1);
		if (!e)
			e = cn_buf_puts(b, v2_subresources[s]);
		if (!e && p->vlen) {
			e = cn_buf_append(b, "=", 1);
			if (!e)
				e = cn_buf_append(b, p->value, p->vlen);
		}
		if (e)
			return e;
		first = false;
	}
	return b->len > CANON_MAX ? CN_ERR_TOO_LARGE : CN_OK;
}

static cn_auth_err v2_verify(const cn_auth_config *cfg, const cn_http_req *req, const qset *qs,
			     cn_str akid, cn_str sig_b64, cn_str date, cn_auth_result *out)
{
	unsigned char given[32];
	size_t glen = 0;
	char fixed[64];
	if (sig_b64.len == 0 || sig_b64.len >= sizeof fixed) {
		out->detail = "malformed signature";
		return CN_AUTH_MALFORMED;
	}
	/* A '+' sent unescaped in a query decodes as space (AUTH-2); put it back. */
	for (size_t i = 0; i < sig_b64.len; i++)
		fixed[i] = sig_b64.p[i] == ' ' ? '+' : sig_b64.p[i];
	if (cn_base64_decode((cn_str){ fixed, sig_b64.len }, given, sizeof given, &glen) || glen != 20) {
		out->detail = "malformed signature";
		return CN_AUTH_MALFORMED;
	}
	if (akid.len == 0 || akid.len > 128) {
		out->detail = "malformed access key";
		return CN_AUTH_MALFORMED;
	}
	const char *secret = cfg->lookup ? cfg->lookup(cfg->lookup_ctx, akid) : NULL;
	if (!secret) {
		out->detail = "the access key does not exist";
		return CN_AUTH_UNKNOWN_KEY;
	}
	copy_str(out->access_key, sizeof out->access_key, akid);
	cn_buf b;
	cn_buf_init(&b);
	bool bucket_only = !cfg->vhost_bucket && req->path.len > 1 && req->path.p[0] == '/' &&
	                   !memchr(req->path.p + 1, '/', req->path.len - 1);
	int match = 0;
	for (int attempt = 0; attempt < (bucket_only ? 2 : 1) && !match; attempt++) {
		b.len = 0;
		if (v2_string_to_sign(req, qs, date, attempt == 1, cfg->vhost_bucket, &b)) {
			cn_buf_fini(&b);
			out->detail = "request cannot be canonicalised";
			return CN_AUTH_MALFORMED;
		}
		unsigned char mac[20];
		unsigned int mlen = 20;
		HMAC(EVP_sha1(), secret, (int)strlen(secret), (const unsigned char *)b.p, b.len, mac, &mlen);
		match = CRYPTO_memcmp(mac, given, 20) == 0;
	}
	cn_buf_fini(&b);
	if (!match) {
		out->detail = "the request signature does not match";
		return CN_AUTH_SIGNATURE_MISMATCH;
	}
	out->payload = CN_PAYLOAD_UNSIGNED;
	return CN_AUTH_OK;
}

static cn_auth_err v2_header(const cn_auth_config *cfg, const cn_http_req *req, const qset *qs,
			     cn_str auth, int64_t now_ms, cn_auth_result *out)
{
	out->kind = CN_AUTH_KIND_V2_HEADER;
	cn_str cred = trim((cn_str){ auth.p + 4, auth.len - 4 });
	const char *colon = memchr(cred.p, ':', cred.len);
	if (!colon) {
		out->detail = "malformed Authorization header";
		return CN_AUTH_MALFORMED;
	}
	cn_str akid = { cred.p, (size_t)(colon - cred.p) };
	cn_str sig = { colon + 1, cred.len - akid.len - 1 };
	const cn_str *xd = hdr_get(req, "x-amz-date"), *d = hdr_get(req, "date");
	int64_t date_ms;
	cn_str date_line = { "", 0 };
	if (xd) {
		cn_str t = trim(*xd);
		if (parse_http_date(t, &date_ms) && cn_time_parse_amz(t, &date_ms)) {
			out->detail = "x-amz-date is not a valid date";
			return CN_AUTH_MISSING_DATE;
		}
	} else if (d) {
		date_line = trim(*d);
		if (parse_http_date(date_line, &date_ms)) {
			out->detail = "Date is not a valid HTTP date";
			return CN_AUTH_MISSING_DATE;
		}
	} else {
		out->detail = "a valid Date or x-amz-date header is required";
		return CN_AUTH_MISSING_DATE;
	}
	/* AWS takes a date before the epoch as no valid date at all (403 AccessDenied), not as
	 * a skewed clock. */
	if (date_ms < 0) {
		out->detail = "AWS authentication requires a valid Date or x-amz-date header";
		return CN_AUTH_MISSING_DATE;
	}
	int64_t diff = now_ms - date_ms;
	if (diff > skew_limit(cfg) || -diff > skew_limit(cfg)) {
		out->detail = "the difference between the request time and the server's time is too large";
		return CN_AUTH_TIME_SKEWED;
	}
	return v2_verify(cfg, req, qs, akid, sig, date_line, out);
}

static cn_auth_err v2_query(const cn_auth_config *cfg, const cn_http_req *req, const qset *qs,
			    int64_t now_ms, cn_auth_result *out)
{
	out->kind = CN_AUTH_KIND_V2_QUERY;
	const qparam *ak, *ex, *sig;
	if (qget(qs, "AWSAccessKeyId", &ak) != 1 || qget(qs, "Expires", &ex) != 1 ||
	    qget(qs, "Signature", &sig) != 1) {
		out->detail = "query authentication needs AWSAccessKeyId, Expires and Signature once each";
		return CN_AUTH_MALFORMED;
	}
	cn_str e = qstr(ex);
	int64_t expires = 0;
	if (e.len == 0 || e.len > 12) {
		out->detail = "Expires must be a Unix time";
		return CN_AUTH_MALFORMED;
	}
	for (size_t i = 0; i < e.len; i++) {
		if (e.p[i] < '0' || e.p[i] > '9') {
			out->detail = "Expires must be a Unix time";
			return CN_AUTH_MALFORMED;
		}
		expires = expires * 10 + (e.p[i] - '0');
	}
	if (now_ms / 1000 > expires) {
		out->detail = "Request has expired";
		return CN_AUTH_EXPIRED;
	}
	return v2_verify(cfg, req, qs, qstr(ak), qstr(sig), e, out);
}

/* ---- entry point ----------------------------------------------------------------------- */

cn_auth_err cn_auth_check(const cn_auth_config *cfg, const cn_http_req *req, int64_t now_ms,
			  cn_auth_result *out)
{
	memset(out, 0, sizeof *out);
	out->kind = CN_AUTH_KIND_NONE;
	qset *qs = malloc(sizeof *qs);
	if (!qs) {
		out->detail = "out of memory";
		return CN_AUTH_MALFORMED;
	}
	cn_auth_err ae;
	if (qset_parse(req->query, qs)) {
		out->detail = "malformed or too long query string";
		ae = CN_AUTH_MALFORMED;
		goto out;
	}
	const qparam *p;
	bool v4q = qget(qs, "X-Amz-Signature", &p) || qget(qs, "X-Amz-Algorithm", &p) ||
		   qget(qs, "X-Amz-Credential", &p);
	bool v2q = qget(qs, "Signature", &p) > 0;
	const cn_str *ah = hdr_get(req, "authorization");
	cn_str auth = ah ? trim(*ah) : (cn_str){ "", 0 };
	if ((ah ? 1 : 0) + v4q + v2q > 1) {
		out->detail = "only one authentication mechanism is allowed";
		ae = CN_AUTH_MALFORMED;
	} else if (ah) {
		if (cn_str_has_prefix(auth, "AWS4-HMAC-SHA256"))
			ae = v4_header(cfg, req, auth, now_ms, out);
		else if (cn_str_has_prefix(auth, "AWS "))
			ae = v2_header(cfg, req, qs, auth, now_ms, out);
		else {
			out->detail = "unsupported Authorization type";
			ae = CN_AUTH_UNSUPPORTED;
		}
	} else if (v4q) {
		ae = v4_query(cfg, req, qs, now_ms, out);
	} else if (v2q) {
		ae = v2_query(cfg, req, qs, now_ms, out);
	} else {
		ae = CN_AUTH_ANONYMOUS;
	}
out:
	qset_fini(qs);
	free(qs);
	if (ae != CN_AUTH_OK)
		OPENSSL_cleanse(out->signing_key, sizeof out->signing_key);
	return ae;
}

/* ---- V4 streaming verifier ------------------------------------------------------------- */

static bool stream_signed(const cn_auth_stream *st)
{
	return st->auth->payload == CN_PAYLOAD_STREAMING_SIGNED ||
	       st->auth->payload == CN_PAYLOAD_STREAMING_SIGNED_TRAILER;
}

static cn_err stream_fail(cn_auth_stream *st)
{
	st->failure = CN_AUTH_SIGNATURE_MISMATCH;
	return CN_ERR_ABORTED;
}

static void st_chunk_data(void *ctx, const void *p, size_t len)
{
	cn_auth_stream *st = ctx;
	st->decoded_len += len;
	if (stream_signed(st))
		EVP_DigestUpdate(st->sha_ctx, p, len);
}

static cn_err st_chunk_end(void *ctx, cn_str signature)
{
	cn_auth_stream *st = ctx;
	if (st->failure)
		return CN_ERR_ABORTED;
	if (!stream_signed(st))
		return CN_OK;
	unsigned char d[32];
	unsigned int n = 32;
	char h[65], sig[65];
	EVP_DigestFinal_ex(st->sha_ctx, d, &n);
	EVP_DigestInit_ex(st->sha_ctx, EVP_sha256(), NULL);
	cn_hex_encode(d, 32, h);
	sign_sts(st->auth->signing_key, "AWS4-HMAC-SHA256-PAYLOAD", cn_str_c(st->auth->amz_date),
		 cn_str_c(st->auth->scope), cn_str_c(st->prev_sig), CN_EMPTY_SHA256, h, sig);
	if (!sig_eq_hex(sig, signature))
		return stream_fail(st);
	memcpy(st->prev_sig, sig, 65);
	return CN_OK;
}

static cn_err st_trailer(void *ctx, cn_str name, cn_str value)
{
	cn_auth_stream *st = ctx;
	if (st->failure)
		return CN_ERR_ABORTED;
	if (name.len > 15 && str_ieq((cn_str){ name.p, 15 }, CN_STR("x-amz-checksum-"))) {
		if (name.len >= sizeof st->trailer_checksum_name ||
		    value.len >= sizeof st->trailer_checksum_value)
			return CN_ERR_INVALID;
		for (size_t i = 0; i < name.len; i++)
			st->trailer_checksum_name[i] = lower(name.p[i]);
		st->trailer_checksum_name[name.len] = 0;
		copy_str(st->trailer_checksum_value, sizeof st->trailer_checksum_value, value);
	}
	if (st->auth->payload == CN_PAYLOAD_STREAMING_SIGNED_TRAILER) {
		EVP_DigestUpdate(st->trailer_sha_ctx, name.p, name.len);
		EVP_DigestUpdate(st->trailer_sha_ctx, ":", 1);
		EVP_DigestUpdate(st->trailer_sha_ctx, value.p, value.len);
		EVP_DigestUpdate(st->trailer_sha_ctx, "\n", 1);
	}
	return CN_OK;
}

static cn_err st_trailers_end(void *ctx, cn_str signature)
{
	cn_auth_stream *st = ctx;
	if (st->failure)
		return CN_ERR_ABORTED;
	if (st->auth->payload != CN_PAYLOAD_STREAMING_SIGNED_TRAILER)
		return CN_OK;
	unsigned char d[32];
	unsigned int n = 32;
	char h[65], sig[65];
	EVP_DigestFinal_ex(st->trailer_sha_ctx, d, &n);
	cn_hex_encode(d, 32, h);
	sign_sts(st->auth->signing_key, "AWS4-HMAC-SHA256-TRAILER", cn_str_c(st->auth->amz_date),
		 cn_str_c(st->auth->scope), cn_str_c(st->prev_sig), NULL, h, sig);
	if (!sig_eq_hex(sig, signature))
		return stream_fail(st);
	memcpy(st->prev_sig, sig, 65);
	return CN_OK;
}

cn_err cn_auth_stream_init(cn_auth_stream *st, const cn_auth_result *auth)
{
	memset(st, 0, sizeof *st);
	if (auth->payload != CN_PAYLOAD_STREAMING_SIGNED &&
	    auth->payload != CN_PAYLOAD_STREAMING_SIGNED_TRAILER &&
	    auth->payload != CN_PAYLOAD_STREAMING_UNSIGNED_TRAILER)
		return CN_ERR_INVALID;
	st->auth = auth;
	copy_str(st->prev_sig, sizeof st->prev_sig, cn_str_c(auth->seed_signature));
	EVP_MD_CTX *a = EVP_MD_CTX_new(), *b = EVP_MD_CTX_new();
	if (!a || !b || !EVP_DigestInit_ex(a, EVP_sha256(), NULL) ||
	    !EVP_DigestInit_ex(b, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(a);
		EVP_MD_CTX_free(b);
		return CN_ERR_NOMEM;
	}
	st->sha_ctx = a;
	st->trailer_sha_ctx = b;
	st->v = (cn_chunk_verifier){ .chunk_data = st_chunk_data, .chunk_end = st_chunk_end,
				     .trailer = st_trailer, .trailers_end = st_trailers_end, .ctx = st };
	return CN_OK;
}

void cn_auth_stream_fini(cn_auth_stream *st)
{
	EVP_MD_CTX_free(st->sha_ctx);
	EVP_MD_CTX_free(st->trailer_sha_ctx);
	st->sha_ctx = st->trailer_sha_ctx = NULL;
}
