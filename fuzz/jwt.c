/* fuzz/jwt: cn_jwt_verify (src/s3/jwt.c) on arbitrary bytes, as the metrics endpoint gets
 * them after "Authorization: Bearer ". Besides "no crash, no leak": the answer is one of
 * the documented codes, access_key is NUL-terminated within its 129 bytes, and only a token
 * whose signature matches the secret of "prom-user" at the fixed clock is accepted — so a
 * token accepted here is re-signed by cn_jwt_sign-compatible code only if its sub is known. */
#include "s3/auth.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *lookup(void *ctx, cn_str ak)
{
	(void)ctx;
	return cn_str_eq_c(ak, "prom-user") ? "prom-secret-123" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char who[129];
	memset(who, 'x', sizeof who);
	cn_auth_err e = cn_jwt_verify((cn_str){ (const char *)data, size }, lookup, NULL, 1900000000, who);
	CN_ASSERT(e == CN_AUTH_OK || e == CN_AUTH_MALFORMED || e == CN_AUTH_UNKNOWN_KEY ||
	          e == CN_AUTH_SIGNATURE_MISMATCH || e == CN_AUTH_EXPIRED);
	CN_ASSERT(memchr(who, 0, sizeof who) != NULL);
	if (e == CN_AUTH_OK)
		CN_ASSERT(!strcmp(who, "prom-user"));
	return 0;
}
