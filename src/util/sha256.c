/* util/sha256.c: SHA-256 and HMAC-SHA256 for SigV4 (server and client), through OpenSSL's
 * low-level SHA256_* calls. OpenSSL 3's one-shots (SHA256(), EVP_Digest, HMAC()) fetch the
 * algorithm and allocate a context on every call: measured ~5% of a small GET's server CPU
 * for SHA256() alone, ~80% of its instructions when all of SigV4 went through them
 * (docs/PERF.md). The low-level calls run the same SHA-NI/AVX code without the fetch. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "util/util.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>

void cn_sha256(const void *p, size_t len, unsigned char out[32])
{
	SHA256_CTX c;
	SHA256_Init(&c);
	SHA256_Update(&c, p, len);
	SHA256_Final(out, &c);
}

void cn_sha256_hex(const void *p, size_t len, char out[65])
{
	unsigned char d[32];
	cn_sha256(p, len, d);
	cn_hex_encode(d, 32, out);
}

void cn_hmac_sha256(const void *key, size_t klen, const void *p, size_t len, unsigned char out[32])
{
	unsigned char k[64], pad[64], inner[32];
	memset(k, 0, sizeof k);
	if (klen > 64)
		cn_sha256(key, klen, k);
	else
		memcpy(k, key, klen);
	SHA256_CTX c;
	for (int i = 0; i < 64; i++)
		pad[i] = (unsigned char)(k[i] ^ 0x36);
	SHA256_Init(&c);
	SHA256_Update(&c, pad, 64);
	SHA256_Update(&c, p, len);
	SHA256_Final(inner, &c);
	for (int i = 0; i < 64; i++)
		pad[i] = (unsigned char)(k[i] ^ 0x5c);
	SHA256_Init(&c);
	SHA256_Update(&c, pad, 64);
	SHA256_Update(&c, inner, 32);
	SHA256_Final(out, &c);
	OPENSSL_cleanse(k, sizeof k);
	OPENSSL_cleanse(pad, sizeof pad);
	OPENSSL_cleanse(inner, sizeof inner);
}
