/* s3/checksum: the S3 additional checksums (x-amz-checksum-crc32, -crc32c, -crc64nvme,
 * -sha1, -sha256) computed incrementally over a stream, and their wire form: base64 of the
 * big-endian digest, as S3 sends and accepts them. CRC32 and CRC32C use ISA-L
 * (crc32_gzip_refl, crc32_iscsi); CRC-64/NVME (poly 0xad93d23594c93659 reflected,
 * init and xorout all ones; check("123456789") = 0xae8b14860a799888) has no ISA-L 2.30
 * function, so it is a slicing-by-8 table implementation here; SHA1/SHA256 use OpenSSL EVP.
 * Used by the object handlers (src/s3/object.c) and, later, multipart. */
#ifndef CN_S3_CHECKSUM_H
#define CN_S3_CHECKSUM_H

#include "util/util.h"

typedef enum cn_cksum_algo {
	CN_CKSUM_NONE = 0,
	CN_CKSUM_CRC32,
	CN_CKSUM_CRC32C,
	CN_CKSUM_CRC64NVME,
	CN_CKSUM_SHA1,
	CN_CKSUM_SHA256,
	CN_CKSUM__COUNT
} cn_cksum_algo;

#define CN_CKSUM_MAX_DIGEST 32
#define CN_CKSUM_MAX_B64 48 /* base64 of 32 bytes = 44 chars + NUL, rounded up */

typedef struct cn_cksum {
	cn_cksum_algo algo;
	uint64_t crc;   /* CRC state (pre-final, ISA-L convention for crc32/crc32c/crc64) */
	void *md;       /* EVP_MD_CTX* for SHA1/SHA256, owned */
} cn_cksum;

/* Digest length in bytes (4, 4, 8, 20, 32), 0 for NONE. */
size_t cn_cksum_len(cn_cksum_algo a);
/* "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256" (the x-amz-sdk-checksum-algorithm and
 * XML element spelling); "" for NONE. */
const char *cn_cksum_name(cn_cksum_algo a);
/* "x-amz-checksum-crc32" ...; NULL for NONE. */
const char *cn_cksum_header(cn_cksum_algo a);
/* Parses an algorithm name, case-insensitive ("crc32", "CRC64NVME"); NONE when unknown. */
cn_cksum_algo cn_cksum_from_name(cn_str name);
/* Parses a header name "x-amz-checksum-<algo>" (case-insensitive); NONE when unknown. */
cn_cksum_algo cn_cksum_from_header(cn_str name);

/* init/update/final: final writes cn_cksum_len bytes (big-endian for CRCs) to out and
 * may be called once; fini frees (safe after final, and on a zeroed struct).
 * init returns CN_ERR_NOMEM or CN_ERR_INVALID (algo NONE/unknown). */
cn_err cn_cksum_init(cn_cksum *c, cn_cksum_algo a);
void cn_cksum_update(cn_cksum *c, const void *p, size_t len);
void cn_cksum_final(cn_cksum *c, unsigned char out[CN_CKSUM_MAX_DIGEST]);
/* final, then base64 into out (NUL-terminated). */
void cn_cksum_final_base64(cn_cksum *c, char out[CN_CKSUM_MAX_B64]);
void cn_cksum_fini(cn_cksum *c);

/* Decodes a base64 checksum value and checks that it has the algorithm's digest length:
 * CN_ERR_INVALID otherwise. out gets cn_cksum_len(a) bytes. */
cn_err cn_cksum_decode(cn_cksum_algo a, cn_str b64, unsigned char out[CN_CKSUM_MAX_DIGEST]);

/* One-shot CRC-64/NVME with chaining: crc = cn_crc64nvme(0, p, n) for the first piece,
 * cn_crc64nvme(crc, next, m) for the following ones (same convention as ISA-L). */
uint64_t cn_crc64nvme(uint64_t crc, const void *p, size_t len);

#endif
