/* client: the project's S3 client library — AWS Signature V4 signing (OpenSSL HMAC/SHA-256),
 * endpoint lists (comma lists with {a...b} ellipses), path-style or virtual-host addressing,
 * and request set-up on libcurl easy handles (the caller drives them, alone or in a multi
 * handle). Used by `cairn bench` and, later, `cairn admin`. It never includes a server module.
 *
 * Ownership and threads:
 *  - A cn_client is immutable after cn_client_new and may be shared by threads; only
 *    cn_client_free (by its owner, once no request uses it) ends it.
 *  - A cn_client_signer caches the signing key and the x-amz-date of the current second; it
 *    belongs to one thread (one per worker).
 *  - A cn_client_hdrs is the header storage of one in-flight request (no allocation per
 *    request); it must outlive the transfer that uses it.
 *  - Strings returned by the client (host URLs) live as long as the client.
 * Errors: cn_err (util.h). CN_ERR_INVALID for malformed input (endpoint, key too long),
 * CN_ERR_NOMEM, CN_ERR_IO for a transport failure of the blocking helper (the curl message
 * is written into the caller's buffer when one is given). HTTP statuses are not errors: the
 * caller reads them.
 *
 * Signing rules (the AWS SigV4 documentation): canonical URI = the path percent-encoded with
 * the RFC 3986 unreserved set, '/' kept; canonical query = every parameter encoded, sorted by
 * name then value; canonical headers = lowercase names, trimmed values with inner space runs
 * folded, duplicates joined by ',' in order of appearance, sorted by name. Requests of this
 * library sign host, x-amz-content-sha256 (UNSIGNED-PAYLOAD: bodies are never hashed) and
 * x-amz-date. Checked against the AWS test suite in tests/unit/client/. */
#ifndef CN_CLIENT_H
#define CN_CLIENT_H

#include "util/util.h"

#include <curl/curl.h>

#define CN_CLIENT_MAX_HOSTS 1024
#define CN_CLIENT_UNSIGNED "UNSIGNED-PAYLOAD"

/* --- SigV4, pure computation ------------------------------------------------------------- */

/* The derived key: HMAC chain over "AWS4"+secret, date (YYYYMMDD), region, service,
 * "aws4_request". */
void cn_client_signing_key(const char *secret, const char *date8, const char *region,
                           const char *service, unsigned char out[32]);

/* One request to sign. Names/values of query and headers are raw (not percent-encoded);
 * path is the raw (decoded) path starting with '/'. */
typedef struct cn_sigv4_req {
	const char *method;
	const char *path;
	const cn_kv *query;
	size_t nquery;
	const cn_kv *headers;     /* every header to sign (host included) */
	size_t nheaders;
	const char *payload_hash; /* hex SHA-256 of the body or UNSIGNED-PAYLOAD */
	const char *amz_date;     /* "20150830T123600Z" */
	const char *region;
	const char *service;
	const char *access_key;
	const char *secret_key;
} cn_sigv4_req;

/* Appends the canonical request to b. CN_ERR_NOMEM, CN_ERR_TOO_LARGE (> 64 headers). */
cn_err cn_sigv4_canonical(const cn_sigv4_req *r, cn_buf *b);
/* Appends the Authorization header value ("AWS4-HMAC-SHA256 Credential=..."). */
cn_err cn_sigv4_authorization(const cn_sigv4_req *r, cn_buf *b);

/* --- endpoints ---------------------------------------------------------------------------- */

/* Expands "h{1...4}:9000,other:9000" (comma list; each item may hold {a...b} ranges, numbers
 * zero-padded as written, several ranges form their product). *out is an array of n
 * malloc'ed strings, freed with cn_client_hosts_free. CN_ERR_INVALID on a bad range or more
 * than CN_CLIENT_MAX_HOSTS hosts. */
cn_err cn_client_expand_hosts(const char *spec, char ***out, size_t *n);
void cn_client_hosts_free(char **hosts, size_t n);

/* --- the client ---------------------------------------------------------------------------- */

typedef struct cn_client_cfg {
	const char *hosts;        /* "host:port[,host:port]" with ellipses; a scheme is optional */
	const char *access_key;
	const char *secret_key;
	const char *region;       /* default us-east-1 */
	bool tls;                 /* https:// for hosts given without a scheme */
	bool insecure;            /* do not verify TLS certificates */
	bool vhost;               /* bucket.host/key instead of host/bucket/key */
	long timeout_ms;          /* per request (0: none) */
	long connect_timeout_ms;  /* 0: 5000 */
} cn_client_cfg;

typedef struct cn_client cn_client;

/* Copies everything it needs from cfg. */
cn_err cn_client_new(const cn_client_cfg *cfg, cn_client **out);
void cn_client_free(cn_client *c);
size_t cn_client_nhosts(const cn_client *c);
/* "http://127.0.0.1:9000" for host i. */
const char *cn_client_host_url(const cn_client *c, size_t i);

typedef struct cn_client_signer {
	int64_t sec;              /* the second amz_date was made for */
	char amz_date[17];
	char date8[9];
	unsigned char key[32];
} cn_client_signer;
void cn_client_signer_init(cn_client_signer *s);

/* Header storage of one request: Host, x-amz-content-sha256, x-amz-date, Authorization,
 * "Expect:" and up to 4 extra headers; nodes and text live here, not on the heap. */
#define CN_CLIENT_MAX_EXTRA 4
typedef struct cn_client_hdrs {
	struct curl_slist node[5 + CN_CLIENT_MAX_EXTRA];
	char host[300];
	char date[32];
	char auth[400];
	cn_buf scratch;           /* canonical request, URL (reused; freed by _fini) */
} cn_client_hdrs;
void cn_client_hdrs_init(cn_client_hdrs *h);
void cn_client_hdrs_fini(cn_client_hdrs *h);

typedef struct cn_client_req {
	const char *method;       /* GET PUT HEAD DELETE POST */
	const char *bucket;       /* NULL: the service (ListBuckets) */
	const char *key;          /* NULL: the bucket */
	const cn_kv *query;       /* raw names/values */
	size_t nquery;
	const char *const *extra; /* up to CN_CLIENT_MAX_EXTRA unsigned "Name: value" headers */
	size_t nextra;
	size_t host;              /* index into the client's hosts (taken modulo their count) */
	int64_t body_len;         /* PUT/POST body length; -1 for no body */
} cn_client_req;

/* Sets URL, method, headers, body length and timeouts on e; h holds the header storage and
 * becomes e's CURLOPT_HTTPHEADER. The caller sets its own read/write/header callbacks.
 * Never blocks. CN_ERR_INVALID for a key over 1024 bytes or too many extra headers. */
cn_err cn_client_prepare(const cn_client *c, cn_client_signer *s, CURL *e, const cn_client_req *r,
                         cn_client_hdrs *h);

/* One blocking request with an in-memory body (may be NULL). The response body is appended
 * to resp (when not NULL, at most 16 MiB); *status gets the HTTP status. A transport failure
 * is CN_ERR_IO with curl's message in err (when not NULL). Thread-safe (own easy handle). */
cn_err cn_client_do(const cn_client *c, const cn_client_req *r, const void *body, size_t len,
                    cn_buf *resp, long *status, char *err, size_t errlen);

/* Extracts the text of the first <tag>...</tag> in an XML body into out (NUL-terminated,
 * truncated to cap). Returns false when absent. Good enough for S3's flat answers. */
bool cn_client_xml_text(const char *xml, size_t len, const char *tag, char *out, size_t cap);

#endif
