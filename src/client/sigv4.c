/* client/sigv4: AWS Signature Version 4 on the client side — canonical request, string to
 * sign, derived key and the Authorization value (rules in client.h). Pure computation with
 * util's HMAC/SHA-256 (OpenSSL's low-level SHA-256) and util's canonical query; no
 * allocation but that query's scratch and the caller's cn_buf. */
#include "client/client_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIGNED 64

void cn_client_signing_key(const char *secret, const char *date8, const char *region,
                           const char *service, unsigned char out[32])
{
	char k0[300];
	int n = snprintf(k0, sizeof k0, "AWS4%s", secret);
	if (n < 0 || (size_t)n >= sizeof k0)
		n = (int)sizeof k0 - 1;
	unsigned char a[32], b[32];
	cn_hmac_sha256(k0, (size_t)n, date8, strlen(date8), a);
	cn_hmac_sha256(a, 32, region, strlen(region), b);
	cn_hmac_sha256(b, 32, service, strlen(service), a);
	cn_hmac_sha256(a, 32, "aws4_request", 12, out);
}

/* The canonical query of the request's parameters (util's cn_sigv4_canonical_query, the
 * one the server verifies with). */
static cn_err canonical_query(const cn_sigv4_req *r, cn_buf *b)
{
	if (r->nquery > MAX_SIGNED)
		return CN_ERR_TOO_LARGE;
	cn_query_param params[MAX_SIGNED];
	for (size_t i = 0; i < r->nquery; i++)
		params[i] = (cn_query_param){ cn_str_c(r->query[i].name),
			                          cn_str_c(r->query[i].value ? r->query[i].value : "") };
	return cn_sigv4_canonical_query(params, r->nquery, SIZE_MAX, b);
}

static int lower_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		int x = (unsigned char)*a, y = (unsigned char)*b;
		if (x >= 'A' && x <= 'Z')
			x += 32;
		if (y >= 'A' && y <= 'Z')
			y += 32;
		if (x != y || !x)
			return x - y;
	}
}

static cn_err append_lower(cn_buf *b, const char *s)
{
	for (; *s; s++) {
		char c = *s;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c + 32);
		cn_err e = cn_buf_append(b, &c, 1);
		if (e)
			return e;
	}
	return CN_OK;
}

/* Trimmed value with inner runs of spaces folded to one. */
static cn_err append_trimmed(cn_buf *b, const char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	bool sp = false;
	for (size_t i = 0; i < n; i++) {
		char c = v[i] == '\t' ? ' ' : v[i];
		if (c == ' ') {
			if (sp)
				continue;
			sp = true;
		} else {
			sp = false;
		}
		cn_err e = cn_buf_append(b, &c, 1);
		if (e)
			return e;
	}
	return CN_OK;
}

/* Header indexes sorted by lowercase name, stable (insertion sort: n <= 64). */
static void sort_headers(const cn_sigv4_req *r, size_t *idx)
{
	for (size_t i = 0; i < r->nheaders; i++) {
		size_t j = i;
		while (j > 0 && lower_cmp(r->headers[idx[j - 1]].name, r->headers[i].name) > 0) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
}

static cn_err signed_headers(const cn_sigv4_req *r, const size_t *idx, cn_buf *b)
{
	cn_err e = CN_OK;
	for (size_t i = 0; i < r->nheaders && !e; i++) {
		if (i && !lower_cmp(r->headers[idx[i]].name, r->headers[idx[i - 1]].name))
			continue;
		if (i)
			e = cn_buf_append(b, ";", 1);
		if (!e)
			e = append_lower(b, r->headers[idx[i]].name);
	}
	return e;
}

cn_err cn_sigv4_canonical(const cn_sigv4_req *r, cn_buf *b)
{
	if (r->nheaders > MAX_SIGNED)
		return CN_ERR_TOO_LARGE;
	size_t idx[MAX_SIGNED];
	sort_headers(r, idx);
	cn_err e = cn_buf_puts(b, r->method);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = cn_url_encode(b, cn_str_c(r->path), true);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = canonical_query(r, b);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	for (size_t i = 0; i < r->nheaders && !e; i++) {
		bool same = i && !lower_cmp(r->headers[idx[i]].name, r->headers[idx[i - 1]].name);
		if (same) {
			b->len--; /* the previous '\n' */
			e = cn_buf_append(b, ",", 1);
		} else {
			e = append_lower(b, r->headers[idx[i]].name);
			if (!e)
				e = cn_buf_append(b, ":", 1);
		}
		if (!e)
			e = append_trimmed(b, r->headers[idx[i]].value);
		if (!e)
			e = cn_buf_append(b, "\n", 1);
	}
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = signed_headers(r, idx, b);
	if (!e)
		e = cn_buf_append(b, "\n", 1);
	if (!e)
		e = cn_buf_puts(b, r->payload_hash);
	return e;
}

cn_err cn_sigv4_signature_hex(const cn_sigv4_req *r, const unsigned char key[32], cn_buf *scratch,
                              char out[65])
{
	if (!r->amz_date || strlen(r->amz_date) != 16)
		return CN_ERR_INVALID;
	scratch->len = 0;
	cn_err e = cn_sigv4_canonical(r, scratch);
	if (e)
		return e;
	char ch[65];
	cn_sha256_hex(scratch->p, scratch->len, ch);
	scratch->len = 0;
	e = cn_buf_printf(scratch, "AWS4-HMAC-SHA256\n%s\n%.8s/%s/%s/aws4_request\n%s", r->amz_date,
	                  r->amz_date, r->region, r->service, ch);
	if (e)
		return e;
	unsigned char sig[32];
	cn_hmac_sha256(key, 32, scratch->p, scratch->len, sig);
	cn_hex_encode(sig, 32, out);
	return CN_OK;
}

cn_err cn_sigv4_signed_headers(const cn_sigv4_req *r, cn_buf *b)
{
	if (r->nheaders > MAX_SIGNED)
		return CN_ERR_TOO_LARGE;
	size_t idx[MAX_SIGNED];
	sort_headers(r, idx);
	return signed_headers(r, idx, b);
}

cn_err cn_sigv4_authorization(const cn_sigv4_req *r, cn_buf *b)
{
	if (!r->amz_date || strlen(r->amz_date) != 16)
		return CN_ERR_INVALID;
	char date8[9];
	memcpy(date8, r->amz_date, 8);
	date8[8] = 0;
	unsigned char key[32];
	cn_client_signing_key(r->secret_key, date8, r->region, r->service, key);
	cn_buf tmp;
	cn_buf_init(&tmp);
	char sighex[65];
	cn_err e = cn_sigv4_signature_hex(r, key, &tmp, sighex);
	if (!e) {
		tmp.len = 0;
		e = cn_sigv4_signed_headers(r, &tmp);
	}
	if (!e)
		e = cn_buf_printf(b, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s",
		                  r->access_key, date8, r->region, r->service, tmp.p ? tmp.p : "", sighex);
	cn_buf_fini(&tmp);
	return e;
}
