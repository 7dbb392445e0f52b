/* s3_int.h: private to the s3 module — the per-request context that the router builds and
 * every handler receives, and the helpers handlers share (errors, XML replies, query and
 * header access, the request arena). The router and these helpers live in src/s3/s3.c;
 * handlers in src/s3/bucket.c, src/s3/list.c, src/s3/object.c, src/s3/multipart.c,
 * src/s3/tagging.c, src/s3/versioning.c.
 *
 * A handler runs on a worker thread, owns the whole response, and must send exactly one:
 * a success reply, or an error through cn_s3_error / cn_s3_error_from. */
#ifndef CN_S3_INT_H
#define CN_S3_INT_H

#include "s3/auth.h"
#include "s3/checksum.h"
#include "s3/s3.h"
#include "s3/xml.h"

typedef enum cn_s3_code {
	CN_S3_OK = 0,
#define X(name, status, msg) CN_S3_##name,
#include "s3/errors.def"
#undef X
	CN_S3__COUNT
} cn_s3_code;

/* The S3 APIs as the router tells them apart, named as MinIO's metrics label them
 * (api="..." of minio_s3_requests_total); "other" is everything answered before or
 * outside a handler (unimplemented sub-resources, wrong methods). */
#define CN_S3_APIS(X)                                                                          \
	X(other) X(listbuckets) X(getbucketversioning) X(putbucketversioning)                     \
	X(listobjectversions) X(getbuckettagging) X(putbuckettagging) X(deletebuckettagging)      \
	X(listmultipartuploads) X(getbucketacl) X(putbucketacl) X(getbucketlocation)              \
	X(listobjectsv1) X(listobjectsv2) X(putbucket) X(headbucket) X(deletebucket)              \
	X(deletemultipleobjects) X(getobjecttagging) X(putobjecttagging) X(deleteobjecttagging)   \
	X(newmultipartupload) X(putobjectpart) X(copyobjectpart) X(completemultipartupload)       \
	X(abortmultipartupload) X(listobjectparts) X(getobjectacl) X(putobjectacl) X(getobject)   \
	X(headobject) X(putobject) X(copyobject) X(deleteobject) X(postpolicybucket)             \
	X(getbucketcors) X(putbucketcors) X(deletebucketcors) X(preflight) X(admin)
typedef enum cn_s3_api {
#define X(name) CN_S3_API_##name,
	CN_S3_APIS(X)
#undef X
	CN_S3_API__COUNT
} cn_s3_api;

/* Time-to-first-byte buckets (upper bounds, seconds): MinIO's (0.05 .. 10) with finer ones
 * below, for a server that answers in microseconds; the last slot counts the rest. */
#define CN_S3_TTFB_SLOTS 13
extern const double cn_s3_ttfb_bounds[CN_S3_TTFB_SLOTS - 1]; /* s3/metrics.c */

/* Request counters of one API (s3/metrics.c reads them; relaxed atomics). */
typedef struct cn_s3_api_counters {
	unsigned long long requests, errors_4xx, errors_5xx;
	unsigned long long ttfb[CN_S3_TTFB_SLOTS]; /* requests per bucket (not cumulative) */
} cn_s3_api_counters;

struct cn_s3_server {
	cn_s3_config cfg;
	volatile int ready;
	int64_t start_ms;        /* wall clock at cn_s3_new */
	cn_s3_api_counters api[CN_S3_API__COUNT];
	unsigned long long rx_bytes, tx_bytes;              /* request / response bodies */
	unsigned long long inflight;                        /* S3 requests being served */
	unsigned long long rejected_auth, rejected_invalid; /* refused before any handler */
	bool metrics_public;     /* CAIRN_PROMETHEUS_AUTH_TYPE=public: no token needed */
	void (*serving_stats)(void *ctx, cn_s3_serving_stats *out); /* cn_s3_set_serving_stats */
	void *serving_ctx;
};

/* s3/metrics.c: answers GET /minio/v2/metrics/{cluster,node} (true), or returns false for
 * any other path. Runs before S3 authentication: it checks its own bearer token. */
bool cn_s3_metrics(cn_s3_server *s, cn_http_exchange *x, const cn_http_req *h);

typedef struct cn_s3_arena_block cn_s3_arena_block;

#define CN_S3_MAX_SINGLE_PUT (5LL * 1024 * 1024 * 1024) /* AWS: 5 GiB per PUT or copy source */
#define CN_S3_MAX_USER_META 2048                        /* AWS: user metadata, names + values */
#define CN_S3_MAX_REPLY_HEADERS 6
#define CN_S3_MAX_CORS_HEADERS 8

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
	bool browser_post;     /* a form POST to the bucket (PostObject): not authenticated
	                          by the router; its policy's signature is checked by
	                          cn_s3_post_object (s3/post.c) */
	cn_s3_api api;         /* set by the router before the handler (metrics) */
	/* The request payload: HTTP framing removed, aws-chunked decoded and every chunk
	 * signature checked, x-amz-content-sha256 verified at EOF. Reading it past a failure
	 * returns the error; r->body_error then holds the precise S3 code and
	 * cn_s3_error_from(r, CN_ERR_ABORTED) reports it. */
	cn_reader *body;
	int64_t body_len;      /* payload length when known (Content-Length, or
	                          x-amz-decoded-content-length for aws-chunked), else -1 */
	cn_s3_code body_error;
	/* One more element for the next cn_s3_error's XML (e.g. HeadersNotSigned), or NULL. */
	const char *error_elem, *error_elem_value;
	int error_status;          /* cn_s3_error's status when not 0, else the code's own */
	/* The bucket's CORS headers for this request (s3/cors.c), sent by cn_s3_resp_start. */
	cn_kv cors[CN_S3_MAX_CORS_HEADERS];
	size_t ncors;
	/* Headers queued for the reply by cn_s3_reply_header (arena strings). */
	cn_kv reply_headers[CN_S3_MAX_REPLY_HEADERS];
	size_t nreply_headers;
	/* private to s3.c */
	cn_s3_arena_block *arena;
	void *body_state;
} cn_s3_req;

/* A request context for x with no bucket, key or query yet (the router fills them). */
void cn_s3_req_init(cn_s3_req *r, cn_s3_server *s, cn_http_exchange *x);

/* Decoded query parameter, or NULL when absent. */
const char *cn_s3_query(const cn_s3_req *r, const char *name);
/* The secret key of an access key, or NULL when unknown (the server's credentials). */
const char *cn_s3_secret_for(cn_s3_req *r, const char *access_key);
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
 * DIGEST->BadDigest, NO_VERSION->NoSuchVersion, DELETE_MARKER->MethodNotAllowed (405; the
 * handler queues the marker's headers first), others->InternalError. */
void cn_s3_error_from(cn_s3_req *r, cn_err e);
/* Queues a header for the reply (names and values copied into the arena): cn_s3_send_xml,
 * cn_s3_send_empty and cn_s3_error send the queued headers, and a handler that starts its
 * reply itself calls cn_s3_send_reply_headers after cn_http_resp_start. Beyond
 * CN_S3_MAX_REPLY_HEADERS a header is dropped (a bug: asserted). */
void cn_s3_reply_header(cn_s3_req *r, const char *name, const char *value);
/* Starts the response (cn_http_resp_start) with the request's CORS headers: every s3
 * handler starts its responses through it. */
void cn_s3_resp_start(cn_s3_req *r, int status);
void cn_s3_send_reply_headers(cn_s3_req *r);
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

/* Shared by the write handlers (defined in src/s3/object.c, used by src/s3/multipart.c). */
/* One streamed write: rd wraps src, counts bytes (over limit: EntityTooLarge) and feeds ck;
 * cn_s3_put_seal (a cn_put_opts.seal) then checks Content-MD5 and the x-amz-checksum-*
 * value (header or aws-chunked trailer) and adds the computed checksum to the metadata. */
typedef struct cn_s3_put_ctx {
	cn_reader rd;            /* first: the wrapper reader handed to cn_obj_put */
	cn_s3_req *r;
	cn_reader *src;
	int64_t nread, limit;
	cn_cksum ck;             /* algo NONE when no checksum is requested */
	bool have_expected;      /* value from a request header */
	unsigned char expected[CN_CKSUM_MAX_DIGEST];
	bool from_trailer;       /* value arrives in the aws-chunked trailer */
	bool have_md5;
	unsigned char md5[16];
	char value[CN_CKSUM_MAX_B64]; /* computed checksum, base64, after seal */
	cn_s3_code fail;         /* set when the reader or seal failed for an S3 reason */
	const char *fail_msg;
} cn_s3_put_ctx;
ssize_t cn_s3_put_read(cn_reader *rd, void *buf, size_t len);
cn_err cn_s3_put_seal(void *ctx, const unsigned char md5[16], int64_t size, cn_kv **add,
                      size_t *nadd);
/* From the request's x-amz-checksum-* / x-amz-sdk-checksum-algorithm / x-amz-trailer
 * headers, and Content-MD5. Both return false after sending an error. */
bool cn_s3_setup_checksum(cn_s3_req *r, cn_s3_put_ctx *c);
bool cn_s3_parse_content_md5(cn_s3_req *r, cn_s3_put_ctx *c);
/* The metadata a PUT stores from the request headers (content-*, cache-control, expires,
 * x-amz-meta-*, x-amz-storage-class, ...) as an arena array with room for `extra` more
 * entries. Returns false after sending an error (InvalidStorageClass, MetadataTooLarge). */
bool cn_s3_collect_meta(cn_s3_req *r, size_t extra, cn_kv **out, size_t *n);
/* x-amz-copy-source into arena strings; *vid gets the source's "?versionId=" (NULL when
 * none). False after sending InvalidArgument (also for a malformed version id). */
bool cn_s3_parse_copy_source(cn_s3_req *r, const char *src, char **bucket, char **key,
                             const char **vid);
/* Opens the copy source (bucket, key, version id or NULL) and checks its
 * x-amz-copy-source-if-* conditions: true with *info and *rd filled (the caller closes
 * *rd), false after sending the error (a delete marker named by version id:
 * InvalidRequest; a failed condition: PreconditionFailed). */
bool cn_s3_open_copy_source(cn_s3_req *r, const char *bucket, const char *key, const char *vid,
                            cn_obj_info *info, cn_obj_reader **rd);
/* If-Match / If-Unmodified-Since / If-None-Match / If-Modified-Since (any may be NULL) in
 * AWS's order: 0 to proceed, 412, or not_modified. */
int cn_s3_eval_conditions(const char *if_match, const char *if_unmod, const char *if_none,
                          const char *if_mod, const cn_obj_info *info, int not_modified);

/* Conditional writes (If-None-Match / If-Match on PutObject and CompleteMultipartUpload)
 * checked against the key's current version; not atomic with the commit. False after
 * sending the error (412 PreconditionFailed, 404 NoSuchKey for If-Match on no key). */
bool cn_s3_write_conditions(cn_s3_req *r);

/* Small helpers shared by the handlers (s3.c). */
/* The owner ID reported in listings and ACLs: hex SHA-256 of the root access key. */
void cn_s3_owner_id(const cn_s3_req *r, char out[65]);
/* <tag>v</tag>, the value percent-encoded (RFC 3986, '/' kept) when url is set
 * (encoding-type=url). */
cn_err cn_s3_xml_key(cn_buf *b, const char *tag, const char *v, bool url);
/* Decimal digits only (non-empty), value <= max. */
bool cn_s3_parse_uint(const char *v, uint64_t max, uint64_t *out);
/* max-keys style parameters: absent -> cap; digits only, <= INT32_MAX, then capped at cap
 * (AWS). false when malformed. */
bool cn_s3_parse_max_keys(const char *v, size_t cap, size_t *out);

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
void cn_s3_post_object(cn_s3_req *r);    /* POST bucket, multipart/form-data (s3/post.c) */
/* s3/cors.c: ?cors on a bucket; OPTIONS preflights; the CORS headers of a request with an
 * Origin (queued in r->cors; reads the bucket's configuration: on a worker). */
void cn_s3_get_bucket_cors(cn_s3_req *r);
void cn_s3_put_bucket_cors(cn_s3_req *r);
void cn_s3_delete_bucket_cors(cn_s3_req *r);
void cn_s3_cors_preflight(cn_s3_req *r);
void cn_s3_cors_actual(cn_s3_req *r);
/* Validates a CORSConfiguration body and writes its canonical form to canon. CN_ERR_INVALID:
 * *code / *msg (static, may be NULL) are the S3 error; CN_ERR_NOMEM. */
cn_err cn_s3_cors_parse(const char *p, size_t len, cn_buf *canon, cn_s3_code *code,
                        const char **msg);
/* multipart (src/s3/multipart.c) */
void cn_s3_create_multipart(cn_s3_req *r);       /* POST ?uploads */
void cn_s3_upload_part(cn_s3_req *r);            /* PUT ?partNumber&uploadId, also UploadPartCopy */
void cn_s3_complete_multipart(cn_s3_req *r);     /* POST ?uploadId */
void cn_s3_abort_multipart(cn_s3_req *r);        /* DELETE ?uploadId */
void cn_s3_list_parts(cn_s3_req *r);             /* GET ?uploadId */
void cn_s3_list_multipart_uploads(cn_s3_req *r); /* GET bucket?uploads */
/* The CompleteMultipartUpload body parser (the one the handler streams the body through),
 * for a body held in memory (fuzz/complete_mpu.c). CN_OK: *parts (malloc'd, the caller
 * frees) holds the *nparts (1..10000) parts in document order, numbers 1..10000 and ETags
 * without quotes. CN_ERR_INVALID: *code and *msg (static, may be NULL) are the S3 error to
 * send (MalformedXML, InvalidArgument, InvalidPart); CN_ERR_NOMEM. */
cn_err cn_s3_complete_parse(const char *p, size_t len, cn_obj_part **parts, size_t *nparts,
                            cn_s3_code *code, const char **msg);
/* versioning (src/s3/versioning.c) */
void cn_s3_get_bucket_versioning(cn_s3_req *r);  /* GET ?versioning */
void cn_s3_put_bucket_versioning(cn_s3_req *r);  /* PUT ?versioning */
void cn_s3_list_object_versions(cn_s3_req *r);   /* GET ?versions */
/* The PutBucketVersioning body parser, for bytes in memory (fuzz/versioning.c). CN_OK: *v
 * is ENABLED or SUSPENDED. CN_ERR_INVALID: *code and *msg (static, may be NULL) are the S3
 * error to send (MalformedXML; NotImplemented for MfaDelete Enabled); CN_ERR_NOMEM. */
cn_err cn_s3_versioning_parse(const char *p, size_t len, cn_versioning *v, cn_s3_code *code,
                              const char **msg);
/* Queues x-amz-version-id: vid when vid is not "" (the object was written in a bucket that
 * is or was versioned: AWS then names the version). */
void cn_s3_reply_version_id(cn_s3_req *r, const char *vid);
/* Queues the headers AWS puts on a reply about a delete marker: x-amz-delete-marker: true,
 * x-amz-version-id, and (for the 405 of a GET/HEAD by version id) Last-Modified. */
void cn_s3_reply_delete_marker(cn_s3_req *r, const cn_obj_info *info, bool last_modified);
/* admin API (src/s3/admin.c): bucket "minio", key "admin/..." — /minio/admin/v3/heal and
 * /minio/admin/v3/info; the request is already authenticated with the root credentials. */
void cn_s3_admin(cn_s3_req *r);
/* tagging (src/s3/tagging.c) */
void cn_s3_get_object_tagging(cn_s3_req *r);
void cn_s3_put_object_tagging(cn_s3_req *r);
void cn_s3_delete_object_tagging(cn_s3_req *r);
void cn_s3_get_bucket_tagging(cn_s3_req *r);
void cn_s3_put_bucket_tagging(cn_s3_req *r);
void cn_s3_delete_bucket_tagging(cn_s3_req *r);
/* The object metadata entry holding an object's tags in canonical form (tags sorted by key,
 * k1=v1&k2=v2 percent-encoded); absent when the object has no tags. GET/HEAD never return
 * it as a header. */
#define CN_S3_TAGGING_META "x-amz-tagging"
/* The object meta entry naming the multipart upload a completion made the object from
 * (s3/multipart.c: a repeated completion answers as the first); never sent to clients
 * and not copied by CopyObject. */
#define CN_S3_UPLOAD_ID_META "x-cairn-upload-id"
/* Validates and normalises the request's x-amz-tagging header (PutObject, CopyObject with
 * REPLACE, CreateMultipartUpload): *canon gets the canonical form to store under
 * CN_S3_TAGGING_META (arena), or NULL when the header is absent or holds no tags. Returns
 * false after sending the error (InvalidTag, also for > 10 tags; InvalidArgument). */
bool cn_s3_tagging_from_request(cn_s3_req *r, const char **canon);
/* Number of tags in a stored canonical form (0 for NULL or ""): x-amz-tagging-count. */
size_t cn_s3_tagging_count(const char *stored);
/* The tag-set parsers behind the handlers, for bytes in memory (fuzz/tagging.c): the
 * x-amz-tagging header (URL query form, at most 10 tags) and a Tagging XML document (at most
 * 10 tags, 50 when bucket). CN_OK: *canon gets the canonical form (malloc'd, the caller
 * frees), NULL for an empty set. CN_ERR_INVALID: *code and *msg (static, may be NULL) are
 * the S3 error to send (InvalidTag, InvalidArgument, BadRequest, MalformedXML);
 * CN_ERR_NOMEM. */
cn_err cn_s3_tagging_parse_header(const char *h, char **canon, cn_s3_code *code,
                                  const char **msg);
cn_err cn_s3_tagging_parse_xml(const char *p, size_t len, bool bucket, char **canon,
                               cn_s3_code *code, const char **msg);

#endif
