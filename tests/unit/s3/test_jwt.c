/* test_jwt: the metrics endpoint's bearer tokens (src/s3/jwt.c) — a token signed by
 * cn_jwt_sign verifies; a token made here independently (header and payload base64url by
 * hand, HMAC-SHA512 through OpenSSL) verifies; every way a token can be wrong is refused
 * with its own code: another secret, a changed payload, an expired exp, an unknown sub, an
 * "alg" other than HS512 (none included), and malformed shapes. */
#include "s3/auth.h"
#include "test.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

static const char *lookup(void *ctx, cn_str ak)
{
	(void)ctx;
	if (cn_str_eq_c(ak, "prom-user"))
		return "prom-secret-123";
	if (cn_str_eq_c(ak, "other"))
		return "another-secret";
	return NULL;
}

static cn_auth_err verify(const char *tok, int64_t now, char who[129])
{
	return cn_jwt_verify((cn_str){ tok, strlen(tok) }, lookup, NULL, now, who);
}

/* base64url without padding, independently of jwt.c (OpenSSL's encoder, then mapped) */
static void b64url(const unsigned char *p, size_t len, char *out)
{
	int n = EVP_EncodeBlock((unsigned char *)out, p, (int)len);
	while (n > 0 && out[n - 1] == '=')
		n--;
	out[n] = 0;
	for (int i = 0; i < n; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
}

/* header.payload.signature with the given JSON texts and secret */
static void make(const char *header, const char *payload, const char *secret, char *out)
{
	char h[512], p[1024];
	b64url((const unsigned char *)header, strlen(header), h);
	b64url((const unsigned char *)payload, strlen(payload), p);
	sprintf(out, "%s.%s", h, p);
	unsigned char mac[64];
	unsigned int ml = 0;
	HMAC(EVP_sha512(), secret, (int)strlen(secret), (unsigned char *)out, strlen(out), mac, &ml);
	CHECK(ml == 64);
	char s[128];
	b64url(mac, 64, s);
	strcat(out, ".");
	strcat(out, s);
}

TEST(sign_then_verify)
{
	char tok[CN_JWT_MAX], who[129];
	CHECK(cn_jwt_sign("prom-user", "prom-secret-123", 2000000000, tok, sizeof tok) == CN_OK);
	CHECK(strchr(tok, '=') == NULL && strchr(tok, '+') == NULL && strchr(tok, '/') == NULL);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_OK);
	CHECK(!strcmp(who, "prom-user"));
	CHECK(verify(tok, 2000000000, who) == CN_AUTH_EXPIRED); /* exp is the first second refused */
	CHECK(cn_jwt_sign("prom-user", "prom-secret-123", 2000000000, tok, 40) == CN_ERR_TOO_LARGE);
	CHECK(cn_jwt_sign("a\"b", "s", 2000000000, tok, sizeof tok) == CN_ERR_INVALID);
}

TEST(independent_token)
{
	char tok[2048], who[129];
	make("{\"alg\":\"HS512\",\"typ\":\"JWT\"}",
	     "{\"exp\":4102444800,\"sub\":\"prom-user\",\"iss\":\"prometheus\"}", "prom-secret-123", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_OK);
	CHECK(!strcmp(who, "prom-user"));
	/* a fractional exp, no typ, no iss: still a token */
	make("{\"alg\":\"HS512\"}", "{\"sub\":\"other\",\"exp\":1900000000.5}", "another-secret", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_OK);
	CHECK(!strcmp(who, "other"));
}

TEST(refusals)
{
	char tok[2048], who[129];
	const char *hs512 = "{\"alg\":\"HS512\",\"typ\":\"JWT\"}";
	const char *pl = "{\"exp\":4102444800,\"sub\":\"prom-user\"}";
	make(hs512, pl, "not-the-secret", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_SIGNATURE_MISMATCH);
	make(hs512, "{\"exp\":4102444800,\"sub\":\"nobody\"}", "prom-secret-123", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_UNKNOWN_KEY);
	make(hs512, "{\"exp\":1800000000,\"sub\":\"prom-user\"}", "prom-secret-123", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_EXPIRED);
	make("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", pl, "prom-secret-123", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_MALFORMED);
	make("{\"alg\":\"none\"}", pl, "prom-secret-123", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_MALFORMED);
	make(hs512, "{\"exp\":\"4102444800\",\"sub\":\"prom-user\"}", "prom-secret-123", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_MALFORMED); /* exp must be a number */
	make(hs512, "{\"exp\":4102444800}", "prom-secret-123", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_MALFORMED); /* no sub */
	make(hs512, "[1,2]", "prom-secret-123", tok);
	CHECK(verify(tok, 1900000000, who) == CN_AUTH_MALFORMED);
	/* a payload changed after signing */
	make(hs512, pl, "prom-secret-123", tok);
	char *dot = strchr(tok, '.');
	dot[3] ^= 1;
	cn_auth_err e = verify(tok, 1900000000, who);
	CHECK(e == CN_AUTH_SIGNATURE_MISMATCH || e == CN_AUTH_MALFORMED);
	/* shapes */
	CHECK(verify("", 0, who) == CN_AUTH_MALFORMED);
	CHECK(verify("abc", 0, who) == CN_AUTH_MALFORMED);
	CHECK(verify("a.b", 0, who) == CN_AUTH_MALFORMED);
	CHECK(verify("a.b.c.d", 0, who) == CN_AUTH_MALFORMED);
	CHECK(verify("..", 0, who) == CN_AUTH_MALFORMED);
	CHECK(verify("e30.e30.!!!", 0, who) == CN_AUTH_MALFORMED);
	make(hs512, pl, "prom-secret-123", tok);
	size_t n = strlen(tok);
	tok[n - 1] = 0; /* a signature one byte short */
	e = verify(tok, 1900000000, who);
	CHECK(e == CN_AUTH_SIGNATURE_MISMATCH || e == CN_AUTH_MALFORMED);
	char big[CN_JWT_MAX + 10];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	CHECK(verify(big, 0, who) == CN_AUTH_MALFORMED);
}

int main(void)
{
	RUN(sign_then_verify);
	RUN(independent_token);
	RUN(refusals);
	TEST_END();
}
