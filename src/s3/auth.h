/* s3/auth: request authentication — AWS Signature V4 (Authorization header and presigned
 * query), V4 streaming payloads (per-chunk signatures, signed/unsigned trailers with
 * x-amz-checksum-*), and Signature V2 (header and query) for old clients.
 *
 * Pure computation over a parsed request head (src/http): no I/O, no globals except the
 * credential lookup the caller passes. Signatures compare in constant time (CRYPTO_memcmp).
 * Vectors: tests/vectors/sigv4/ (the AWS SigV4 test suite), tests/unit/s3/test_auth.c.
 *
 * Canonicalisation rules (AWS docs, "Create a canonical request for Signature Version 4"):
 *  - canonical URI: the request path percent-decoded once, then re-encoded with
 *    cn_url_encode(keep_slash=true) (S3 does not normalise or double-encode);
 *  - canonical query: every parameter except X-Amz-Signature, decoded then re-encoded,
 *    sorted by name then value, "name=value" joined by '&' (a parameter without '=' gets
 *    an empty value);
 *  - canonical headers: the SignedHeaders list, lowercased names, values trimmed with
 *    inner runs of spaces folded to one; multiple same-name headers joined by ','. */
#ifndef CN_S3_AUTH_H
#define CN_S3_AUTH_H

#include "http/http.h"

/* The authentication outcome codes; the s3 layer maps each to its S3 error. */
/* SHA-256 of the empty string, lowercase hex: the payload hash of every bodiless request. */
#define CN_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef enum cn_auth_err {
	CN_AUTH_OK = 0,
	CN_AUTH_ANONYMOUS,              /* no credentials at all (caller decides: AccessDenied) */
	CN_AUTH_MALFORMED,              /* AuthorizationHeaderMalformed / AuthorizationQueryParametersError */
	CN_AUTH_UNKNOWN_KEY,            /* InvalidAccessKeyId */
	CN_AUTH_SIGNATURE_MISMATCH,     /* SignatureDoesNotMatch */
	CN_AUTH_TIME_SKEWED,            /* RequestTimeTooSkewed (> 15 min) */
	CN_AUTH_EXPIRED,                /* AccessDenied "Request has expired" (presigned) */
	CN_AUTH_MISSING_DATE,           /* AccessDenied: no x-amz-date/Date */
	CN_AUTH_BAD_CONTENT_SHA256,     /* InvalidArgument: bad x-amz-content-sha256 value */
	CN_AUTH_UNSUPPORTED,            /* NotImplemented (e.g. unknown algorithm) */
	CN_AUTH_EXPIRES_RANGE,          /* 403 AuthorizationQueryParametersError: X-Amz-Expires
	                                 * below 1 or above 604800 (7 days) */
	CN_AUTH_MISSING_CONTENT_SHA256, /* InvalidRequest: V4 header-signed with a body and no
	                                   x-amz-content-sha256 */
	CN_AUTH_HEADERS_NOT_SIGNED,     /* AccessDenied: an x-amz-* header is not among the signed
	                                   ones (V4; the name in headers_not_signed) */
} cn_auth_err;

/* How the body is protected (from x-amz-content-sha256 for V4). */
typedef enum cn_payload_mode {
	CN_PAYLOAD_UNSIGNED = 0,         /* UNSIGNED-PAYLOAD, V2, presigned, or no body */
	CN_PAYLOAD_SHA256,               /* hex SHA-256 given: the body must match it */
	CN_PAYLOAD_STREAMING_SIGNED,     /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
	CN_PAYLOAD_STREAMING_SIGNED_TRAILER,   /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
	CN_PAYLOAD_STREAMING_UNSIGNED_TRAILER, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
} cn_payload_mode;

/* Looks up the secret key for an access key; returns NULL when unknown. The returned
 * string must stay valid for the life of the request. */
typedef const char *(*cn_auth_lookup)(void *ctx, cn_str access_key);

typedef struct cn_auth_config {
	cn_auth_lookup lookup;
	void *lookup_ctx;
	const char *region;   /* NULL/"" = accept any region in the credential scope */
	int64_t max_skew_ms;  /* 15 min per AWS */
	const char *vhost_bucket; /* bucket named by the Host header (virtual-host style), or
	                             NULL: SigV2 signs "/bucket" + path then */
} cn_auth_config;

/* Everything later stages need: who signed, and how to verify a streaming body. */
typedef struct cn_auth_result {
	enum { CN_AUTH_KIND_NONE, CN_AUTH_KIND_V4_HEADER, CN_AUTH_KIND_V4_QUERY,
	       CN_AUTH_KIND_V2_HEADER, CN_AUTH_KIND_V2_QUERY } kind;
	char access_key[129];
	cn_payload_mode payload;
	char content_sha256[65];         /* lowercase hex, for CN_PAYLOAD_SHA256 */
	/* For streaming payloads: the key and scope to verify chunk signatures. */
	unsigned char signing_key[32];
	char amz_date[17];               /* "20130524T000000Z" */
	char scope[160];                 /* "20130524/us-east-1/s3/aws4_request" */
	char seed_signature[65];         /* the request's own signature, hex */
	char region[64];
	const char *detail;              /* static text for the error message, may be NULL */
	char headers_not_signed[129];    /* CN_AUTH_HEADERS_NOT_SIGNED: the header's name */
} cn_auth_result;

/* Authenticates a request head. now_ms is the server's wall clock. On CN_AUTH_OK `out`
 * describes the signer and payload mode; otherwise out->detail may explain. The decoded
 * query parameters are parsed internally (no allocation beyond a bounded stack/heap
 * scratch; requests with > 256 query parameters or > 16 KiB canonical request are
 * CN_AUTH_MALFORMED). */
cn_auth_err cn_auth_check(const cn_auth_config *cfg, const cn_http_req *req, int64_t now_ms,
                          cn_auth_result *out);

/* Streaming verification: a chunk verifier (see http.h) bound to an auth result.
 * For CN_PAYLOAD_STREAMING_SIGNED[_TRAILER] every chunk signature is checked:
 *   string-to-sign = "AWS4-HMAC-SHA256-PAYLOAD\n" amz_date "\n" scope "\n" prev_sig "\n"
 *                    hex(sha256("")) "\n" hex(sha256(chunk data))
 * and the trailer signature (signed trailer variant):
 *   "AWS4-HMAC-SHA256-TRAILER\n" amz_date "\n" scope "\n" prev_sig "\n"
 *   hex(sha256(trailer lines "name:value\n" as sent))
 * Trailing x-amz-checksum-<algo> values are captured in `trailer_checksum_*` for the
 * caller (which computes and compares the checksum of the data). A mismatch returns
 * CN_ERR_ABORTED from the callback and sets `failure` to CN_AUTH_SIGNATURE_MISMATCH. */
typedef struct cn_auth_stream {
	cn_chunk_verifier v;     /* pass &st->v to cn_http_awschunked_init */
	const cn_auth_result *auth;
	char prev_sig[65];
	void *sha_ctx;           /* EVP_MD_CTX*, owned */
	void *trailer_sha_ctx;   /* EVP_MD_CTX*, owned */
	char trailer_checksum_name[32];   /* e.g. "x-amz-checksum-crc32" */
	char trailer_checksum_value[128]; /* base64 as sent */
	cn_auth_err failure;
	unsigned long long decoded_len; /* payload bytes seen */
} cn_auth_stream;
cn_err cn_auth_stream_init(cn_auth_stream *st, const cn_auth_result *auth);
void cn_auth_stream_fini(cn_auth_stream *st);

/* Helpers, exposed for tests and for the S3 client library later. */
/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date8), region), service), "aws4_request") */
void cn_sigv4_signing_key(const char *secret, cn_str date8, cn_str region, cn_str service,
                          unsigned char out[32]);
/* The V4 signature: hex(HMAC(key, "AWS4-HMAC-SHA256\n" amz_date "\n" scope "\n"
 * hex(sha256(canonical_request)))), lowercase, NUL-terminated. */
void cn_sigv4_signature(const unsigned char key[32], cn_str amz_date, cn_str scope,
                        cn_str canonical_request, char out[65]);
/* Builds the canonical request for a V4 header- or query-signed request into b
 * (exposed so the AWS test-suite vectors can check it byte for byte). */
cn_err cn_sigv4_canonical_request(const cn_http_req *req, cn_str signed_headers,
                                  cn_str payload_hash, bool presigned, cn_buf *b);
/* Errors of cn_sigv4_canonical_request: CN_ERR_INVALID (bad percent-escape, bad
 * SignedHeaders list), CN_ERR_TOO_LARGE (> 256 query parameters or > 16 KiB result),
 * CN_ERR_NOMEM. */

/* --- Bearer tokens for the metrics endpoint (s3/jwt.c) ------------------------------------
 * What Prometheus sends to /minio/v2/metrics/... as MinIO defines it (`mc admin prometheus
 * generate`): "Authorization: Bearer <JWT>", a JSON Web Token (RFC 7519) signed with
 * HMAC-SHA512 ("alg":"HS512") by the secret key of the access key in its "sub" claim, with
 * an "exp" claim (seconds since the epoch) and "iss":"prometheus".
 *
 * cn_jwt_sign writes the token for (access_key, secret, exp_s) into out (NUL-terminated;
 * CN_ERR_TOO_LARGE when cap is short, CN_ERR_INVALID for an access key with '"' or '\' or
 * control bytes). cn_jwt_verify checks a token given as untrusted bytes: three base64url
 * parts, a header whose "alg" is HS512 (anything else, "none" included, is refused), a
 * payload with a string "sub" the lookup knows and a numeric "exp" later than now_s, and
 * the signature (constant-time compare). Returns CN_AUTH_OK and copies "sub" into
 * access_key (cap 129), CN_AUTH_MALFORMED for a token that does not parse,
 * CN_AUTH_UNKNOWN_KEY, CN_AUTH_SIGNATURE_MISMATCH, or CN_AUTH_EXPIRED. No allocation
 * beyond jansson's for the two small JSON parts; tokens over 8 KiB are malformed. */
#define CN_JWT_MAX 8192
cn_err cn_jwt_sign(const char *access_key, const char *secret, int64_t exp_s, char *out, size_t cap);
cn_auth_err cn_jwt_verify(cn_str token, cn_auth_lookup lookup, void *lookup_ctx, int64_t now_s,
                          char access_key[129]);

#endif
