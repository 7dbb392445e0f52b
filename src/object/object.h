/* object: buckets, objects and listing — the storage API the s3 layer calls. The store is
 * the deployment: pools of erasure sets over drive folders (one folder is one pool of one
 * set of one drive), each drive formatted into its slot. The object layer validates names
 * and keys, places each key in one set, computes the ETag (MD5) while streaming, and
 * commits each write atomically and durably through the erasure layer (which talks to
 * drives only through the drive API, src/drive/drive.h).
 *
 * Contract (DESIGN.md §4):
 *  STORE-1. A successful cn_obj_put has made data, metadata and directory entries durable on
 *     write-quorum drives before it returns.
 *  STORE-2. Readers see the old object or the new one, never a mix; concurrent puts of one key
 *     leave one whole winner.
 *  STORE-3. A crash leaves only tmp garbage, removed by cn_obj_store_open.
 *  STORE-4. Memory per request is bounded (a few I/O buffers), whatever the object size.
 * Thread rules: every function may block on disk; all are safe to call concurrently from
 * worker threads. Errors are cn_err (util.h); the s3 layer maps them. */
#ifndef CN_OBJECT_H
#define CN_OBJECT_H

#include "util/util.h"

typedef struct cn_obj_store cn_obj_store;

typedef struct cn_obj_config {
	bool durable;          /* false only with an explicit flag (benchmarks): no syncs */
	int64_t inline_max;    /* objects up to this size live inside the metadata record */
	int64_t upload_expiry_ms;  /* incomplete multipart uploads older than this are removed
	                              (0: the default, 24 h) */
	int64_t upload_cleanup_ms; /* how often to look for them (0: the default, 1 h) */
	int64_t heal_scan_ms;      /* background heal scan period (0: 24 h; < 0: never) */
	int64_t drive_check_ms;    /* how often drives that were removed or wiped are looked
	                              for again (0: 5 s; < 0: never) */
	int64_t heal_max_sleep_ms; /* the background scan's pause after each object is twice
	                              the time the object took, at most this (0: 1 s, as
	                              MinIO's heal max_sleep; < 0: no pause, full speed) */
	int64_t drive_max_timeout_ms; /* a drive call running longer takes the drive offline
	                                 (HEALTH-1, HEALTH-6; 0: 30 s, as MinIO's
	                                 MINIO_DRIVE_MAX_TIMEOUT) */
} cn_obj_config;

/* A deployment's storage: pools of erasure sets of drive folders, as the cluster layer
 * computes them from the server's arguments (cluster/layout.h). */
typedef struct cn_obj_pool_spec {
	const char *const *drives;  /* nsets * set_size folders: set after set, slot after slot */
	size_t nsets;
	size_t set_size;            /* 1..16 */
} cn_obj_pool_spec;

typedef struct cn_obj_topology {
	const cn_obj_pool_spec *pools;
	size_t npools;
	unsigned parity_standard;   /* M of every set for STANDARD objects (0 only for 1 drive) */
	unsigned parity_rrs;        /* M for REDUCED_REDUNDANCY objects */
} cn_obj_topology;

/* Opens (formatting on first use) the store over the topology's drive folders and cleans
 * their tmp garbage. Every drive carries a format record (docs/FORMAT.md §1) naming the
 * deployment and its slot (pool, set, drive): a drive without one (new or wiped) is
 * formatted into its slot; a drive of another deployment or in another slot is refused
 * (logged, treated as offline). Errors: CN_ERR_INVALID (bad topology), CN_ERR_QUORUM
 * (fewer usable drives in a set than its write quorum on a fresh deployment, or its read
 * quorum otherwise), drive errors. */
cn_err cn_obj_store_open_topology(const cn_obj_topology *t, const cn_obj_config *cfg,
                                  cn_obj_store **out);
/* One pool of one set over the given folders, parity by MinIO's default for the set size
 * (1 drive: EC:0 — the single-drive layout). */
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
	/* Parts of a multipart object in object order (number as uploaded, size, etag);
	 * NULL/0 for a single PUT. Owned. */
	struct cn_obj_part *parts;
	size_t nparts;
	/* Versioning: "" for an object written while the bucket was never versioned (the
	 * null version; the s3 layer says "null" where AWS does), "null", or the id. */
	char version_id[40];
	bool delete_marker;     /* this version is a delete marker (no data, size 0) */
} cn_obj_info;

typedef struct cn_obj_part {
	uint32_t number;        /* the part number the client uploaded it as (1..10000) */
	int64_t size;
	char etag[72];          /* hex MD5 of the part, without quotes */
} cn_obj_part;
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
/* No-I/O mode for the calling thread (the event loop serving a small read): while on,
 * stat and open answer CN_ERR_BUSY instead of waiting for a drive (erasure.h cn_ec_no_io;
 * served from the record cache, or from records the kernel has cached, they answer as
 * usual), and the caller runs the request
 * again on a thread that may wait. cn_obj_reader_in_records: the opened version's bytes
 * came with its records, so reading them touches no drive. */
void cn_obj_no_io(bool on);
bool cn_obj_reader_in_records(const cn_obj_reader *r);
/* Writes bytes [off, off+len) of the version to w (0 <= off, off+len <= size). Uses
 * w->send_fd when available and the data sits in a plain file. Errors: the writer's error,
 * CN_ERR_IO, CN_ERR_CORRUPT. */
cn_err cn_obj_read(cn_obj_reader *r, int64_t off, int64_t len, cn_writer *w);
/* The reader as a cn_reader over the whole object (for copy). */
cn_reader *cn_obj_reader_stream(cn_obj_reader *r);
/* The same over bytes [off, off+len) only (UploadPartCopy ranges); CN_ERR_INVALID when the
 * range is outside the object. The stream stays valid until cn_obj_reader_close. */
cn_err cn_obj_reader_stream_range(cn_obj_reader *r, int64_t off, int64_t len, cn_reader **out);
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

/* --- versioning ------------------------------------------------------------------------
 * As AWS S3 documents it. A bucket starts unversioned (OFF); once ENABLED it can only be
 * SUSPENDED (and enabled again). In ENABLED, every put, completion and copy creates a new
 * version with a fresh id and a delete without version id adds a delete marker; in
 * SUSPENDED, writes create (replacing) the "null" version and a delete adds a "null"
 * delete marker; in OFF, writes replace the object and deletes remove it (no older
 * version is kept). Earlier versions stay readable by id. Version ids are 32 lowercase hex
 * chars (time-ordered) or "null". The functions without a version id (cn_obj_put,
 * cn_obj_stat, cn_obj_open, cn_obj_delete, cn_obj_upload_complete) follow these rules;
 * cn_obj_stat/cn_obj_open of a key whose latest version is a delete marker give
 * CN_ERR_NO_KEY with info->delete_marker and info->version_id set. */
typedef enum cn_versioning {
	CN_VERSIONING_OFF = 0,
	CN_VERSIONING_ENABLED,
	CN_VERSIONING_SUSPENDED,
} cn_versioning;
cn_err cn_obj_get_versioning(cn_obj_store *s, const char *bucket, cn_versioning *out);
/* The same without checking that the bucket exists, from the per-bucket cache (for reply
 * headers of requests that already found their object); OFF when it cannot be read. */
cn_versioning cn_obj_versioning_of(cn_obj_store *s, const char *bucket);
/* CN_ERR_INVALID for CN_VERSIONING_OFF (a versioned bucket cannot go back). */
cn_err cn_obj_set_versioning(cn_obj_store *s, const char *bucket, cn_versioning v);
/* Syntax of a version id given by a client ("null" or what cairn makes). */
bool cn_obj_version_id_valid(const char *vid);

/* Stat / open a given version (vid NULL: the latest, as cn_obj_stat / cn_obj_open).
 * CN_ERR_NO_VERSION when the key has no such version; a version that is a delete marker
 * gives CN_ERR_DELETE_MARKER with info filled (AWS answers 405). */
cn_err cn_obj_stat_version(cn_obj_store *s, const char *bucket, const char *key, const char *vid,
                           cn_obj_info *out);
cn_err cn_obj_open_version(cn_obj_store *s, const char *bucket, const char *key, const char *vid,
                           cn_obj_info *info, cn_obj_reader **out);

/* Deletes: vid NULL follows the bucket's state (above); a vid removes exactly that version
 * (when it is the latest, the next newest becomes the latest). out (may be NULL) says what
 * happened: the delete marker created or the version removed (version_id, delete_marker).
 * Errors: CN_ERR_NO_BUCKET; CN_ERR_NO_KEY (OFF, no such key); CN_ERR_NO_VERSION (no such
 * version: AWS answers 204 anyway). */
typedef struct cn_obj_deleted {
	char version_id[40];
	bool delete_marker;
} cn_obj_deleted;
cn_err cn_obj_delete_version(cn_obj_store *s, const char *bucket, const char *key, const char *vid,
                             cn_obj_deleted *out);

/* ListObjectVersions: keys as cn_obj_list (prefix, delimiter, common prefixes), each key's
 * versions newest first (the latest first), after the markers (key_marker NULL/"": from
 * the start; with vid_marker, the versions of key_marker older than that one, then later
 * keys; without, keys strictly after key_marker). max (1..1000) counts versions and
 * prefixes. next markers: the last version returned (or prefix: vid marker ""). */
typedef struct cn_version_entry {
	char *key;              /* owned */
	char version_id[40];    /* "null" for the null version */
	bool is_latest, delete_marker;
	char etag[72];
	int64_t size;
	int64_t mtime_ms;
	char storage_class[24];
} cn_version_entry;
typedef struct cn_version_list {
	cn_version_entry *versions; /* owned */
	size_t nversions;
	char **prefixes;            /* owned */
	size_t nprefixes;
	bool truncated;
	char *next_key_marker;      /* owned, NULL unless truncated */
	char next_version_id_marker[40];
} cn_version_list;
void cn_version_list_fini(cn_version_list *l);
cn_err cn_obj_list_versions(cn_obj_store *s, const char *bucket, const char *prefix,
                            const char *delimiter, const char *key_marker, const char *vid_marker,
                            size_t max, cn_version_list *out);

/* --- metadata updates (tagging, ...) --------------------------------------------------- */
/* Rewrites the stored metadata of the key's current version without touching its data,
 * atomically under the key's lock: fn gets the current info and edits info->meta / nmeta
 * in place (it may realloc the array and free or replace entries: every name and value is
 * malloc'd; cn_kvs_free frees). An error returned by fn changes nothing and is returned.
 * The mtime, ETag and size stay. Durable like put. On success fills out (may be NULL)
 * with the new info. Errors: CN_ERR_NO_BUCKET, CN_ERR_NO_KEY, fn's, CN_ERR_IO. */
typedef cn_err (*cn_obj_meta_fn)(void *ctx, cn_obj_info *info);
cn_err cn_obj_update_meta(cn_obj_store *s, const char *bucket, const char *key, cn_obj_meta_fn fn,
                          void *ctx, cn_obj_info *out);
/* The same for a given version (vid NULL: the latest). A delete marker:
 * CN_ERR_DELETE_MARKER (latest: CN_ERR_NO_KEY); no such version: CN_ERR_NO_VERSION. */
cn_err cn_obj_update_meta_version(cn_obj_store *s, const char *bucket, const char *key,
                                  const char *vid, cn_obj_meta_fn fn, void *ctx, cn_obj_info *out);

/* --- bucket configuration documents ----------------------------------------------------- */
/* Small per-bucket documents stored with the bucket on every drive, at most 256 KiB,
 * removed with the bucket. name is one of "tagging", "versioning", "policy", "lifecycle",
 * "notification", "encryption", "object-lock", "cors", "replication", "website",
 * "logging" (CN_ERR_INVALID otherwise). get: CN_ERR_NOT_FOUND when never put (or deleted); delete of an absent
 * one is CN_OK. All: CN_ERR_NO_BUCKET, CN_ERR_INVALID (bad name), CN_ERR_TOO_LARGE.
 * put/delete are durable. */
cn_err cn_obj_bucket_config_get(cn_obj_store *s, const char *bucket, const char *name, cn_buf *out);
cn_err cn_obj_bucket_config_put(cn_obj_store *s, const char *bucket, const char *name,
                                const void *p, size_t len);
cn_err cn_obj_bucket_config_delete(cn_obj_store *s, const char *bucket, const char *name);

/* --- multipart uploads ------------------------------------------------------------------ */
/* An upload belongs to bucket + key and is named by an upload id (opaque, URL-safe, at most
 * 127 chars). Parts are stored erasure-coded as they arrive, in the upload's own area; the
 * completion links them into the object's data folder and commits its record — no data is
 * copied. Contract: a completion is atomic like a put (a crash leaves the object whole with
 * the upload possibly still listed, or the upload pending and complete-able again, never a
 * partial object). Uploads older than the configured expiry are removed in the background.
 * Errors common to all: CN_ERR_NO_BUCKET, CN_ERR_NO_UPLOAD (unknown or finished upload id,
 * or one that belongs to another key), CN_ERR_IO, CN_ERR_QUORUM. */

#define CN_OBJ_MAX_PARTS 10000
#define CN_OBJ_MIN_PART_SIZE (5 * 1024 * 1024)     /* every part but the last */
#define CN_OBJ_MAX_PART_SIZE (5LL * 1024 * 1024 * 1024)
#define CN_OBJ_UPLOAD_ID_MAX 128

/* Starts an upload: meta are the headers to give the final object (content-type,
 * x-amz-meta-*, x-amz-storage-class, x-amz-tagging, x-amz-checksum-algorithm ...), copied.
 * upload_id gets the NUL-terminated id. Errors: CN_ERR_BAD_KEY, CN_ERR_KEY_TOO_LONG,
 * CN_ERR_TOO_LARGE (too much meta). */
cn_err cn_obj_upload_create(cn_obj_store *s, const char *bucket, const char *key, const cn_kv *meta,
                            size_t nmeta, char upload_id[CN_OBJ_UPLOAD_ID_MAX]);

/* Stores part `number` (1..10000) of the upload from body (re-uploading a number replaces
 * the part). opts as for cn_obj_put (meta: the part's own headers to keep, e.g. its
 * x-amz-checksum-*; seal runs before the part becomes visible). out (may be NULL) gets the
 * part's etag (hex MD5), size and meta. Errors: as cn_obj_put, CN_ERR_NO_UPLOAD,
 * CN_ERR_INVALID (bad number), CN_ERR_TOO_LARGE (over 5 GiB). */
cn_err cn_obj_upload_part(cn_obj_store *s, const char *bucket, const char *key, const char *upload_id,
                          uint32_t number, cn_reader *body, const cn_put_opts *opts, cn_obj_info *out);

/* The upload's own information. */
typedef struct cn_upload_info {
	char *key;              /* owned */
	char upload_id[CN_OBJ_UPLOAD_ID_MAX];
	int64_t initiated_ms;
	cn_kv *meta;            /* owned: the create-time headers */
	size_t nmeta;
} cn_upload_info;
void cn_upload_info_fini(cn_upload_info *u);
cn_err cn_obj_upload_stat(cn_obj_store *s, const char *bucket, const char *key, const char *upload_id,
                          cn_upload_info *out);

/* The upload's parts, sorted by number: *out is a malloc'd array of n infos (etag, size,
 * mtime_ms = upload time, meta = the part's kept headers; its parts/nparts hold exactly one
 * entry with the part number) — free each with cn_obj_info_fini and the array with free(). */
cn_err cn_obj_upload_list_parts(cn_obj_store *s, const char *bucket, const char *key,
                                const char *upload_id, cn_obj_info **out, size_t *n);

/* Completes the upload with the client's list (number + etag, quotes already stripped;
 * size ignored). Checks, in order: the list is non-empty and strictly ascending
 * (CN_ERR_PART_ORDER), every part exists with that etag (CN_ERR_BAD_PART), every part but
 * the last is at least CN_OBJ_MIN_PART_SIZE (CN_ERR_TOO_SMALL). Then seal (may be NULL)
 * gets the chosen parts' infos in list order (their meta hold their checksums) and may
 * verify them and add meta for the object (ownership as cn_put_opts.seal); its error
 * aborts and changes nothing. The object's ETag is hex(MD5(concatenated binary part
 * MD5s)) + "-" + count; its meta are the upload's create-time meta then seal's additions.
 * Parts not in the list are dropped. On success the upload is gone and out (may be NULL)
 * holds the object's info (with parts). */
typedef cn_err (*cn_obj_complete_seal)(void *ctx, const cn_obj_info *parts, size_t nparts,
                                       cn_kv **add, size_t *nadd);
cn_err cn_obj_upload_complete(cn_obj_store *s, const char *bucket, const char *key,
                              const char *upload_id, const cn_obj_part *list, size_t nlist,
                              cn_obj_complete_seal seal, void *seal_ctx, cn_obj_info *out);

/* Aborts: removes the upload and its parts (CN_ERR_NO_UPLOAD when unknown). */
cn_err cn_obj_upload_abort(cn_obj_store *s, const char *bucket, const char *key, const char *upload_id);

/* Lists the bucket's uploads whose key starts with prefix, sorted by key then initiated
 * time (then id), after the markers: key_marker NULL/"" = from the start; with
 * upload_id_marker NULL/"", keys strictly after key_marker; with both, uploads of
 * key_marker that sort after that upload, then later keys. With a delimiter, keys holding
 * it after the prefix roll up into common prefixes (each counts as one entry). At most
 * max_uploads (0..1000) entries; truncated says more remain; next markers are those of the
 * last entry returned (a prefix: next_key_marker = the prefix, no upload id). */
typedef struct cn_upload_list {
	cn_upload_info *uploads; /* owned */
	size_t nuploads;
	char **prefixes;         /* owned, sorted */
	size_t nprefixes;
	bool truncated;
	char *next_key_marker;   /* owned, NULL when not truncated */
	char next_upload_id_marker[CN_OBJ_UPLOAD_ID_MAX];
} cn_upload_list;
void cn_upload_list_fini(cn_upload_list *l);
cn_err cn_obj_upload_list(cn_obj_store *s, const char *bucket, const char *prefix, const char *delimiter,
                          const char *key_marker, const char *upload_id_marker, size_t max_uploads,
                          cn_upload_list *out);

/* --- healing ----------------------------------------------------------------------------
 * Restores full redundancy: every version of every object whose copy on some online drive
 * is missing, stale or corrupt is rebuilt from the others (erasure.h cn_ec_heal), under the
 * key's lock. Three ways in: reads that had to rebuild data queue their object (healed in
 * the background, at once); a background scanner walks everything every
 * cfg->heal_scan_ms (0: 24 h; < 0: never), pausing between objects so that foreground
 * traffic keeps most of its throughput; and cn_obj_heal on demand (the admin API). */
typedef struct cn_obj_heal_totals {
	uint64_t scanned;        /* object versions looked at */
	uint64_t healed;         /* ... found damaged and rebuilt (dry run: found damaged) */
	uint64_t failed;         /* ... damaged and not rebuilt (or unreadable: below quorum) */
	uint64_t drives_healed;  /* drive copies rewritten */
	int64_t bytes;           /* bytes written to drives (shards and inline records) */
	uint64_t orphans;        /* data folders no record references, removed (dry run: found;
	                            cn_ec_orphan_data: what crashes leave, FORMAT.md §2) */
	uint64_t dangling;       /* versions no read can return (on too few drives: deleted
	                            while those were away), removed (dry run: found; EC-10) */
	uint64_t dangling_buckets; /* bucket folders on too few drives to be a bucket (deleted
	                              while those were away), removed (dry run: found; EC-11) */
} cn_obj_heal_totals;
/* Progress: called at least every ~500 ms and at the end (last = true), with the running
 * totals and the object being looked at; returning false stops the heal (CN_ERR_ABORTED). */
typedef bool (*cn_obj_heal_progress)(void *ctx, const cn_obj_heal_totals *t, const char *bucket,
                                     const char *key, bool last);
/* Heals bucket (NULL or "": every bucket) / prefix (NULL: all). dry_run only counts.
 * Errors: CN_ERR_NO_BUCKET, CN_ERR_ABORTED (progress said stop), listing errors; damage
 * that cannot be repaired is counted in failed, not returned. */
cn_err cn_obj_heal(cn_obj_store *s, const char *bucket, const char *prefix, bool dry_run,
                   cn_obj_heal_progress progress, void *ctx, cn_obj_heal_totals *out);

/* The deployment as the admin API reports it. */
typedef struct cn_obj_drive_state {
	char endpoint[256];
	unsigned pool, set, slot;
	bool online;
	bool suspended; /* holds another slot's format, or an unmounted disk's mount point */
	uint64_t total, free;
	uint64_t outages, refused; /* cn_drive_info's: times taken offline, calls turned away */
} cn_obj_drive_state;
typedef struct cn_obj_state {
	char deployment[33];
	unsigned npools, nsets, set_size, parity_standard, parity_rrs;
	cn_obj_drive_state *drives; /* owned (free()) */
	size_t ndrives;
	uint64_t heal_queued, heal_done; /* background healing counters */
	/* the background scanner (every 24 h, and at once after a drive came back or was
	 * formatted in): the running scan's totals so far, else the last one's */
	bool scan_running;
	uint64_t scans;                    /* scans finished since the server started */
	int64_t scan_started_ms;           /* wall clock; 0: no scan yet */
	int64_t scan_finished_ms;          /* the last finished scan's end; 0: none yet */
	cn_obj_heal_totals scan;
	int64_t scan_max_sleep_ms; /* the scanner's longest pause after an object; 0: none */
	/* the record caches of all sets (docs/ARCHITECTURE.md, "Record cache") */
	uint64_t cache_budget, cache_bytes, cache_hits, cache_misses;
} cn_obj_state;
cn_err cn_obj_get_state(cn_obj_store *s, cn_obj_state *out);

#endif
