/* object: buckets, objects and listing — the storage API the s3 layer calls. It validates
 * names and keys, picks the erasure set for a key (one set of one drive today; many sets
 * and pools with issue 3), computes the ETag (MD5) while streaming, and commits each write
 * atomically and durably through the erasure layer (which talks to drives only through the
 * drive API, src/drive/drive.h).
 *
 * Contract (DESIGN.md §4):
 *  1. A successful cn_obj_put has made data, metadata and directory entries durable on
 *     write-quorum drives before it returns.
 *  2. Readers see the old object or the new one, never a mix; concurrent puts of one key
 *     leave one whole winner.
 *  3. A crash leaves only tmp garbage, removed by cn_obj_store_open.
 *  4. Memory per request is bounded (a few I/O buffers), whatever the object size.
 * Thread rules: every function may block on disk; all are safe to call concurrently from
 * worker threads. Errors are cn_err (util.h); the s3 layer maps them. */
#ifndef CN_OBJECT_H
#define CN_OBJECT_H

#include "util/util.h"

typedef struct cn_obj_store cn_obj_store;

typedef struct cn_obj_config {
	bool durable;          /* false only with an explicit flag (benchmarks): no syncs */
	int64_t inline_max;    /* objects up to this size live inside the metadata record */
} cn_obj_config;

/* Opens (formatting on first use) the store over the given drive folders. Today exactly
 * one drive is supported; more returns CN_ERR_UNSUPPORTED. Cleans tmp garbage. */
cn_err cn_obj_store_open(const char *const *drives, size_t ndrives, const cn_obj_config *cfg,
                         cn_obj_store **out);
void cn_obj_store_close(cn_obj_store *s);
/* True when the store can serve (drives online, format checked). */
bool cn_obj_store_ready(cn_obj_store *s);

/* --- buckets ------------------------------------------------------------------------ */
typedef struct cn_bucket_info {
	char name[64];
	int64_t created_ms;
} cn_bucket_info;

/* S3 bucket naming rules (3-63 chars, lowercase letters, digits, '.', '-', starts and
 * ends with letter/digit, no "..", not an IP address, no "xn--" prefix, no "-s3alias"
 * suffix). */
bool cn_obj_bucket_name_valid(const char *name);
cn_err cn_obj_make_bucket(cn_obj_store *s, const char *name);   /* CN_ERR_BUCKET_EXISTS, CN_ERR_BAD_BUCKET_NAME */
cn_err cn_obj_head_bucket(cn_obj_store *s, const char *name, cn_bucket_info *out); /* CN_ERR_NO_BUCKET */
cn_err cn_obj_delete_bucket(cn_obj_store *s, const char *name); /* CN_ERR_NO_BUCKET, CN_ERR_BUCKET_NOT_EMPTY */
/* All buckets sorted by name; *out is malloc'd (free() it). */
cn_err cn_obj_list_buckets(cn_obj_store *s, cn_bucket_info **out, size_t *n);

/* --- objects ------------------------------------------------------------------------ */
/* What is stored about an object version. meta holds every header the s3 layer chose to
 * keep and return (lowercase names: "content-type", "x-amz-meta-foo", "x-amz-checksum-crc32",
 * "cache-control", ...), in the order given at put time. */
typedef struct cn_obj_info {
	char etag[72];          /* without quotes: 32 hex (single PUT) or "hex-N" (multipart) */
	int64_t size;
	int64_t mtime_ms;
	cn_kv *meta;            /* owned */
	size_t nmeta;
	char storage_class[24]; /* "STANDARD" */
} cn_obj_info;
void cn_obj_info_init(cn_obj_info *i);
void cn_obj_info_fini(cn_obj_info *i);
const char *cn_obj_info_get(const cn_obj_info *i, const char *name); /* NULL when absent */

/* Key rules: 1..1024 bytes of valid UTF-8 without NUL; stored keys never escape the
 * drive folder whatever their components ("..", ".", "", trailing '/'). A key that the
 * layout cannot store gives CN_ERR_BAD_KEY; over 1024 bytes CN_ERR_KEY_TOO_LONG. */
cn_err cn_obj_key_check(const char *key, size_t len);

typedef struct cn_put_opts {
	const cn_kv *meta;      /* headers to store (copied) */
	size_t nmeta;
	int64_t size;           /* expected body size, or -1 when unknown (chunked) */
	/* Called once after the body reader returned EOF and before anything becomes
	 * visible, with the MD5 of the body. It may verify digests (returning an error aborts
	 * the put and nothing changes) and append metadata to `add` (e.g. the checksum the
	 * client sent in a trailer). May be NULL. Ownership: *add and every name/value in it
	 * are malloc'd by seal and freed by the object layer. */
	cn_err (*seal)(void *ctx, const unsigned char md5[16], int64_t size, cn_kv **add, size_t *nadd);
	void *seal_ctx;
} cn_put_opts;

/* Streams body into a new version of bucket/key and commits it (contract 1-2).
 * A body reader error aborts with that error mapped to cn_err: a negative return from
 * body->read of -E gives E (CN_ERR_ABORTED, CN_ERR_CLOSED, CN_ERR_TIMEOUT ...).
 * A body shorter or longer than opts->size (when >= 0) gives CN_ERR_CLOSED / CN_ERR_INVALID.
 * On success fills `out` (may be NULL). Errors: CN_ERR_NO_BUCKET, CN_ERR_BAD_KEY,
 * CN_ERR_KEY_TOO_LONG, CN_ERR_NOSPACE, CN_ERR_IO, CN_ERR_QUORUM, seal's error. */
cn_err cn_obj_put(cn_obj_store *s, const char *bucket, const char *key, cn_reader *body,
                  const cn_put_opts *opts, cn_obj_info *out);

/* Metadata only. CN_ERR_NO_BUCKET / CN_ERR_NO_KEY. */
cn_err cn_obj_stat(cn_obj_store *s, const char *bucket, const char *key, cn_obj_info *out);

/* An open version for reading: a snapshot — later puts or deletes of the key do not change
 * what this handle reads. */
typedef struct cn_obj_reader cn_obj_reader;
cn_err cn_obj_open(cn_obj_store *s, const char *bucket, const char *key, cn_obj_info *info,
                   cn_obj_reader **out);
/* Writes bytes [off, off+len) of the version to w (0 <= off, off+len <= size). Uses
 * w->send_fd when available and the data sits in a plain file. Errors: the writer's error,
 * CN_ERR_IO, CN_ERR_CORRUPT. */
cn_err cn_obj_read(cn_obj_reader *r, int64_t off, int64_t len, cn_writer *w);
/* The reader as a cn_reader over the whole object (for copy). */
cn_reader *cn_obj_reader_stream(cn_obj_reader *r);
void cn_obj_reader_close(cn_obj_reader *r);

/* Removes the key. Deleting a missing key is CN_ERR_NO_KEY (the s3 layer answers 204
 * anyway); a missing bucket CN_ERR_NO_BUCKET. Durable like put. */
cn_err cn_obj_delete(cn_obj_store *s, const char *bucket, const char *key);

/* --- listing -------------------------------------------------------------------------- */
typedef struct cn_list_entry {
	char *key;              /* owned */
	char etag[72];
	int64_t size;
	int64_t mtime_ms;
	char storage_class[24];
} cn_list_entry;

typedef struct cn_list_result {
	cn_list_entry *objects; /* owned, sorted by key (binary UTF-8 order) */
	size_t nobjects;
	char **prefixes;        /* owned: common prefixes (each ends with the delimiter), sorted */
	size_t nprefixes;
	bool truncated;
	char *next_marker;      /* owned: the last key or prefix returned when truncated */
} cn_list_result;
void cn_list_result_fini(cn_list_result *r);

/* Lists keys of bucket that start with prefix and sort strictly after `after` (NULL or ""
 * for the beginning), S3 style: with a delimiter, keys containing it after the prefix are
 * rolled into one common prefix; objects and prefixes together count toward max_keys
 * (1..1000). Results are consistent with concurrent puts (each key seen at most once,
 * pagination by `after` never skips a key that existed throughout). */
cn_err cn_obj_list(cn_obj_store *s, const char *bucket, const char *prefix, const char *delimiter,
                   const char *after, size_t max_keys, cn_list_result *out);

#endif
