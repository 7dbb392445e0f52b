/* s3_int.h: private to the s3 module — the per-request context that the router builds and
 * every handler receives, and the helpers handlers share (errors, XML replies, query and
 * header access, the request arena). The router and these helpers live in src/s3/s3.c;
 * handlers in src/s3/bucket.c, src/s3/list.c, src/s3/object.c.
 *
 * A handler runs on a worker thread, owns the whole response, and must send exactly one:
 * a success reply, or an error through cn_s3_error / cn_s3_error_from. */
#ifndef CN_S3_INT_H
#define CN_S3_INT_H

#include "s3/auth.h"
#include "s3/s3.h"
#include "s3/xml.h"

typedef enum cn_s3_code {
	CN_S3_OK = 0,
#define X(name, status, msg) CN_S3_##name,
#include "s3/errors.def"
#undef X
	CN_S3__COUNT
} cn_s3_code;

struct cn_s3_server {
	cn_s3_config cfg;
	volatile int ready;
};

typedef struct cn_s3_arena_block cn_s3_arena_block;

typedef struct cn_s3_req {
	cn_s3_server *srv;
	cn_obj_store *store;
	cn_http_exchange *x;
	const cn_http_req *h;
	const char *reqid;
	char *bucket;          /* percent-decoded, NUL-terminated; "" when none */
	char *key;             /* percent-decoded; "" when none (key may contain any UTF-8) */
	cn_kv *query;          /* decoded query parameters in order; value "" when no '=' */
	size_t nquery;
	cn_auth_result auth;
	bool head;             /* HEAD request: the exchange swallows body bytes */
	bool vhost;            /* the bucket came from the Host header (--domain) */
	/* The request payload: HTTP framing removed, aws-chunked decoded and every chunk
	 * signature checked, x-amz-content-sha256 verified at EOF. Reading it past a failure
	 * returns the error; r->body_error then holds the precise S3 code and
	 * cn_s3_error_from(r, CN_ERR_ABORTED) reports it. */
	cn_reader *body;
	int64_t body_len;      /* payload length when known (Content-Length, or
	                          x-amz-decoded-content-length for aws-chunked), else -1 */
	cn_s3_code body_error;
	/* private to s3.c */
	cn_s3_arena_block *arena;
	void *body_state;
} cn_s3_req;

/* Decoded query parameter, or NULL when absent. */
const char *cn_s3_query(const cn_s3_req *r, const char *name);
/* Request header as a NUL-terminated arena copy, or NULL when absent. */
const char *cn_s3_header(cn_s3_req *r, const char *name);
/* Arena allocation freed when the request ends (never NULL: aborts on OOM, small sizes only). */
void *cn_s3_alloc(cn_s3_req *r, size_t n);
char *cn_s3_strndup(cn_s3_req *r, const char *p, size_t len);

/* Sends the S3 XML error (Code, Message, Resource, RequestId; BucketName/Key when known)
 * with the code's status; message NULL = the table's default. If the response head was
 * already sent, closes the connection instead. Logged at INFO (WARN for 5xx). */
void cn_s3_error(cn_s3_req *r, cn_s3_code code, const char *message);
/* Maps an internal error to its S3 error and sends it: NO_BUCKET->NoSuchBucket,
 * NO_KEY->NoSuchKey, BAD_KEY->InvalidObjectName, KEY_TOO_LONG->KeyTooLongError,
 * NOSPACE->StorageFull, BUSY->SlowDown, QUORUM->InsufficientWriteQuorum,
 * ABORTED->r->body_error, CLOSED->IncompleteBody, TIMEOUT->RequestTimeout,
 * DIGEST->BadDigest, others->InternalError. */
void cn_s3_error_from(cn_s3_req *r, cn_err e);
/* Status + Content-Type: application/xml + body. */
void cn_s3_send_xml(cn_s3_req *r, int status, const cn_buf *xml);
/* Status with an empty body (Content-Length: 0). */
void cn_s3_send_empty(cn_s3_req *r, int status);
/* Reads the whole (small) body into out; CN_ERR_TOO_LARGE over max (then the handler
 * answers MalformedXML / EntityTooLarge as fits). Verifies Content-MD5 when present
 * (mismatch -> returns CN_ERR_DIGEST). */
cn_err cn_s3_read_body(cn_s3_req *r, size_t max, cn_buf *out);
/* The x-amz-checksum-* trailer received with an aws-chunked body (valid after the body
 * reader returned EOF): *name gets e.g. "x-amz-checksum-crc32"; NULL when none. */
const char *cn_s3_trailer_checksum(cn_s3_req *r, const char **name);
/* The x-amz-sdk-checksum-algorithm / x-amz-trailer declared checksum name for an
 * aws-chunked body ("x-amz-checksum-crc32" ...), or NULL. */
const char *cn_s3_declared_trailer(cn_s3_req *r);

/* Handlers (router: src/s3/s3.c). */
void cn_s3_list_buckets(cn_s3_req *r);
void cn_s3_create_bucket(cn_s3_req *r);
void cn_s3_head_bucket(cn_s3_req *r);
void cn_s3_delete_bucket(cn_s3_req *r);
void cn_s3_get_bucket_location(cn_s3_req *r);
void cn_s3_get_acl(cn_s3_req *r);        /* bucket (key "") or object */
void cn_s3_put_acl(cn_s3_req *r);
void cn_s3_list_objects(cn_s3_req *r);   /* V1, or V2 with list-type=2 */
void cn_s3_delete_objects(cn_s3_req *r); /* POST ?delete */
void cn_s3_put_object(cn_s3_req *r);     /* also CopyObject when x-amz-copy-source */
void cn_s3_get_object(cn_s3_req *r);     /* GET and HEAD */
void cn_s3_delete_object(cn_s3_req *r);

#endif
