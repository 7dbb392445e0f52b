/* s3/jwt.c: HS512 JSON Web Tokens for the metrics endpoint (contract in s3/auth.h). Only
 * what MinIO's `mc admin prometheus generate` produces and Prometheus sends back: the
 * compact form header.payload.signature, each part base64url without padding. */
#include "s3/auth.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

/* base64url without padding of in[0, len) into out (cap >= 4 * ((len + 2) / 3) + 1). */
static size_t b64url_encode(const unsigned char *in, size_t len, char *out)
{
	size_t n = cn_base64_encode(in, len, out);
	while (n > 0 && out[n - 1] == '=')
		n--;
	for (size_t i = 0; i < n; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	out[n] = 0;
	return n;
}

/* Decodes base64url (no padding, or padding tolerated) into out; false when invalid. */
static bool b64url_decode(cn_str in, unsigned char *out, size_t cap, size_t *outlen)
{
	char tmp[CN_JWT_MAX + 4];
	if (in.len == 0 || in.len > CN_JWT_MAX)
		return false;
	size_t n = 0;
	for (size_t i = 0; i < in.len; i++) {
		char c = in.p[i];
		if (c == '+' || c == '/') /* not base64url */
			return false;
		if (c == '=') /* padding only at the end */
			break;
		tmp[n++] = c == '-' ? '+' : c == '_' ? '/' : c;
	}
	for (size_t i = n; i < in.len; i++)
		if (in.p[i] != '=')
			return false;
	if (n % 4 == 1)
		return false;
	while (n % 4)
		tmp[n++] = '=';
	return cn_base64_decode((cn_str){ tmp, n }, out, cap, outlen) == CN_OK;
}

static void hs512(const char *secret, const char *msg, size_t len, unsigned char mac[64])
{
	unsigned int maclen = 0;
	HMAC(EVP_sha512(), secret, (int)strlen(secret), (const unsigned char *)msg, len, mac, &maclen);
}

cn_err cn_jwt_sign(const char *access_key, const char *secret, int64_t exp_s, char *out, size_t cap)
{
	for (const char *p = access_key; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			return CN_ERR_INVALID;
	static const char header[] = "{\"alg\":\"HS512\",\"typ\":\"JWT\"}";
	char payload[512];
	int pl = snprintf(payload, sizeof payload, "{\"exp\":%lld,\"sub\":\"%s\",\"iss\":\"prometheus\"}",
	                  (long long)exp_s, access_key);
	if (pl < 0 || (size_t)pl >= sizeof payload)
		return CN_ERR_INVALID;
	char buf[2048];
	size_t need = 4 * ((sizeof header + 2) / 3) + 4 * (((size_t)pl + 2) / 3) + 2 + 88 + 1;
	if (need > sizeof buf || need > cap)
		return CN_ERR_TOO_LARGE;
	size_t n = b64url_encode((const unsigned char *)header, sizeof header - 1, buf);
	buf[n++] = '.';
	n += b64url_encode((const unsigned char *)payload, (size_t)pl, buf + n);
	unsigned char mac[64];
	hs512(secret, buf, n, mac);
	buf[n++] = '.';
	n += b64url_encode(mac, sizeof mac, buf + n);
	memcpy(out, buf, n + 1);
	return CN_OK;
}

/* Parses one JSON part (decoded from base64url); NULL when not a JSON object. */
static json_t *json_part(cn_str part)
{
	unsigned char dec[CN_JWT_MAX];
	size_t len = 0;
	if (!b64url_decode(part, dec, sizeof dec, &len))
		return NULL;
	json_t *j = json_loadb((const char *)dec, len, JSON_REJECT_DUPLICATES, NULL);
	if (j && !json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

cn_auth_err cn_jwt_verify(cn_str token, cn_auth_lookup lookup, void *lookup_ctx, int64_t now_s,
                          char access_key[129])
{
	access_key[0] = 0;
	if (token.len == 0 || token.len > CN_JWT_MAX)
		return CN_AUTH_MALFORMED;
	const char *d1 = memchr(token.p, '.', token.len);
	if (!d1)
		return CN_AUTH_MALFORMED;
	const char *d2 = memchr(d1 + 1, '.', token.len - (size_t)(d1 + 1 - token.p));
	if (!d2 || memchr(d2 + 1, '.', token.len - (size_t)(d2 + 1 - token.p)))
		return CN_AUTH_MALFORMED;
	cn_str h = { token.p, (size_t)(d1 - token.p) };
	cn_str p = { d1 + 1, (size_t)(d2 - d1 - 1) };
	cn_str sig = { d2 + 1, token.len - (size_t)(d2 + 1 - token.p) };
	unsigned char given[CN_JWT_MAX];
	size_t glen = 0;
	if (!b64url_decode(sig, given, sizeof given, &glen))
		return CN_AUTH_MALFORMED;
	json_t *hj = json_part(h);
	if (!hj)
		return CN_AUTH_MALFORMED;
	const char *alg = json_string_value(json_object_get(hj, "alg"));
	bool hs = alg && !strcmp(alg, "HS512");
	json_decref(hj);
	if (!hs)
		return CN_AUTH_MALFORMED;
	json_t *pj = json_part(p);
	if (!pj)
		return CN_AUTH_MALFORMED;
	json_t *sub = json_object_get(pj, "sub"), *exp = json_object_get(pj, "exp");
	if (!json_is_string(sub) || !json_is_number(exp) || json_string_length(sub) == 0 ||
	    json_string_length(sub) > 128) {
		json_decref(pj);
		return CN_AUTH_MALFORMED;
	}
	size_t slen = json_string_length(sub);
	memcpy(access_key, json_string_value(sub), slen);
	access_key[slen] = 0;
	double expv = json_number_value(exp);
	json_decref(pj);
	if (strlen(access_key) != slen) { /* an embedded NUL */
		access_key[0] = 0;
		return CN_AUTH_MALFORMED;
	}
	const char *secret = lookup(lookup_ctx, (cn_str){ access_key, slen });
	if (!secret)
		return CN_AUTH_UNKNOWN_KEY;
	unsigned char mac[64];
	hs512(secret, token.p, (size_t)(d2 - token.p), mac);
	if (glen != sizeof mac || CRYPTO_memcmp(mac, given, sizeof mac) != 0)
		return CN_AUTH_SIGNATURE_MISMATCH;
	if (!(expv > (double)now_s))
		return CN_AUTH_EXPIRED;
	return CN_AUTH_OK;
}
