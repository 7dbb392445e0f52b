/* s3/checksum.c: the S3 additional checksums, streaming (see checksum.h). CRC32 is ISA-L's
 * crc32_gzip_refl and CRC32C its crc32_iscsi (both reflected, init/xorout all ones — for
 * crc32_iscsi the caller does the inversion, for crc32_gzip_refl ISA-L does it). CRC-64/NVME
 * is a slicing-by-8 table CRC over the reflected polynomial 0x9a6c9329ac4bc9b5 (the bit
 * reversal of 0xad93d23594c93659); its tables are built once, thread-safely. SHA1 and
 * SHA256 use OpenSSL EVP. Wire form: base64 of the big-endian digest. */
#include "s3/checksum.h"

#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#define CRC64NVME_POLY_REFL 0x9a6c9329ac4bc9b5ULL

static uint64_t crc64_tab[8][256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void crc64_tables(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC64NVME_POLY_REFL : c >> 1;
		crc64_tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc64_tab[t][i] = (crc64_tab[t - 1][i] >> 8) ^ crc64_tab[0][crc64_tab[t - 1][i] & 0xff];
}

uint64_t cn_crc64nvme(uint64_t crc, const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t c = ~crc;

	pthread_once(&crc64_once, crc64_tables);
	while (len && ((uintptr_t)b & 7)) {
		c = crc64_tab[0][(c ^ *b++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, b, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		c ^= w;
		c = crc64_tab[7][c & 0xff] ^ crc64_tab[6][(c >> 8) & 0xff] ^
		    crc64_tab[5][(c >> 16) & 0xff] ^ crc64_tab[4][(c >> 24) & 0xff] ^
		    crc64_tab[3][(c >> 32) & 0xff] ^ crc64_tab[2][(c >> 40) & 0xff] ^
		    crc64_tab[1][(c >> 48) & 0xff] ^ crc64_tab[0][c >> 56];
		b += 8;
		len -= 8;
	}
	while (len--)
		c = crc64_tab[0][(c ^ *b++) & 0xff] ^ (c >> 8);
	return ~c;
}

static const struct {
	const char *name;
	const char *header;
	size_t len;
} algos[CN_CKSUM__COUNT] = {
	[CN_CKSUM_NONE] = { "", NULL, 0 },
	[CN_CKSUM_CRC32] = { "CRC32", "x-amz-checksum-crc32", 4 },
	[CN_CKSUM_CRC32C] = { "CRC32C", "x-amz-checksum-crc32c", 4 },
	[CN_CKSUM_CRC64NVME] = { "CRC64NVME", "x-amz-checksum-crc64nvme", 8 },
	[CN_CKSUM_SHA1] = { "SHA1", "x-amz-checksum-sha1", 20 },
	[CN_CKSUM_SHA256] = { "SHA256", "x-amz-checksum-sha256", 32 },
};

size_t cn_cksum_len(cn_cksum_algo a)
{
	return (unsigned)a < CN_CKSUM__COUNT ? algos[a].len : 0;
}

const char *cn_cksum_name(cn_cksum_algo a)
{
	return (unsigned)a < CN_CKSUM__COUNT ? algos[a].name : "";
}

const char *cn_cksum_header(cn_cksum_algo a)
{
	return (unsigned)a < CN_CKSUM__COUNT ? algos[a].header : NULL;
}

cn_cksum_algo cn_cksum_from_name(cn_str name)
{
	for (int a = CN_CKSUM_NONE + 1; a < CN_CKSUM__COUNT; a++)
		if (cn_str_ieq_c(name, algos[a].name))
			return (cn_cksum_algo)a;
	return CN_CKSUM_NONE;
}

cn_cksum_algo cn_cksum_from_header(cn_str name)
{
	static const char pfx[] = "x-amz-checksum-";
	size_t n = sizeof(pfx) - 1;

	if (name.len <= n || strncasecmp(name.p, pfx, n) != 0)
		return CN_CKSUM_NONE;
	return cn_cksum_from_name((cn_str){ name.p + n, name.len - n });
}

cn_err cn_cksum_init(cn_cksum *c, cn_cksum_algo a)
{
	const EVP_MD *md = NULL;

	memset(c, 0, sizeof(*c));
	switch (a) {
	case CN_CKSUM_CRC32:
	case CN_CKSUM_CRC64NVME:
		c->crc = 0;
		break;
	case CN_CKSUM_CRC32C:
		c->crc = 0xffffffffu;
		break;
	case CN_CKSUM_SHA1:
		md = EVP_sha1();
		break;
	case CN_CKSUM_SHA256:
		md = EVP_sha256();
		break;
	default:
		return CN_ERR_INVALID;
	}
	if (md) {
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		if (!ctx)
			return CN_ERR_NOMEM;
		if (EVP_DigestInit_ex(ctx, md, NULL) != 1) {
			EVP_MD_CTX_free(ctx);
			return CN_ERR_NOMEM;
		}
		c->md = ctx;
	}
	c->algo = a;
	return CN_OK;
}

/* ISA-L takes an int/uint64 length; feed large buffers in bounded pieces. */
#define CKSUM_STEP ((size_t)1 << 30)

void cn_cksum_update(cn_cksum *c, const void *p, size_t len)
{
	const unsigned char *b = p;

	while (len) {
		size_t n = len < CKSUM_STEP ? len : CKSUM_STEP;
		switch (c->algo) {
		case CN_CKSUM_CRC32:
			c->crc = crc32_gzip_refl((uint32_t)c->crc, b, n);
			cn_simd_settle(); /* ISA-L's AVX-512 CRC (util.h) */
			break;
		case CN_CKSUM_CRC32C:
			c->crc = crc32_iscsi((unsigned char *)b, (int)n, (unsigned)c->crc);
			cn_simd_settle();
			break;
		case CN_CKSUM_CRC64NVME:
			c->crc = cn_crc64nvme(c->crc, b, n);
			break;
		case CN_CKSUM_SHA1:
		case CN_CKSUM_SHA256:
			EVP_DigestUpdate(c->md, b, n);
			break;
		default:
			return;
		}
		b += n;
		len -= n;
	}
}

static void put_be(unsigned char *out, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

void cn_cksum_final(cn_cksum *c, unsigned char out[CN_CKSUM_MAX_DIGEST])
{
	unsigned int n = 0;

	switch (c->algo) {
	case CN_CKSUM_CRC32:
		put_be(out, (uint32_t)c->crc, 4);
		break;
	case CN_CKSUM_CRC32C:
		put_be(out, (uint32_t)~c->crc, 4);
		break;
	case CN_CKSUM_CRC64NVME:
		put_be(out, c->crc, 8);
		break;
	case CN_CKSUM_SHA1:
	case CN_CKSUM_SHA256:
		EVP_DigestFinal_ex(c->md, out, &n);
		break;
	default:
		break;
	}
}

void cn_cksum_final_base64(cn_cksum *c, char out[CN_CKSUM_MAX_B64])
{
	unsigned char d[CN_CKSUM_MAX_DIGEST];

	cn_cksum_final(c, d);
	cn_base64_encode(d, cn_cksum_len(c->algo), out);
}

void cn_cksum_fini(cn_cksum *c)
{
	if (c->md)
		EVP_MD_CTX_free(c->md);
	c->md = NULL;
	c->algo = CN_CKSUM_NONE;
}

cn_err cn_cksum_decode(cn_cksum_algo a, cn_str b64, unsigned char out[CN_CKSUM_MAX_DIGEST])
{
	size_t want = cn_cksum_len(a), got = 0;
	unsigned char tmp[CN_CKSUM_MAX_DIGEST + 4];

	if (!want || b64.len != 4 * ((want + 2) / 3))
		return CN_ERR_INVALID;
	if (cn_base64_decode(b64, tmp, sizeof(tmp), &got) != CN_OK || got != want)
		return CN_ERR_INVALID;
	memcpy(out, tmp, want);
	return CN_OK;
}
