/* object_int.h: private to the object module — the store's state and the helpers shared by
 * object.c (buckets, put/get/delete, listing) and multipart.c (uploads, metadata updates,
 * bucket configuration). The commit invariants C1-C5 of object.c hold for both files. */
#ifndef CN_OBJECT_INT_H
#define CN_OBJECT_INT_H

#include "erasure/erasure.h"
#include "object/object.h"

#include <pthread.h>

#define OBJ_IO_BUF (1u << 20)
#define OBJ_KEY_LOCKS 256

struct cn_obj_store {
	cn_ec_set *set;
	cn_obj_config cfg;
	bool ready;
	char deployment[33];
	pthread_rwlock_t ns_lock;                  /* C5 */
	pthread_mutex_t key_locks[OBJ_KEY_LOCKS];  /* C2 (also one upload's changes) */
	/* background removal of stale multipart uploads (multipart.c) */
	pthread_t janitor;
	bool janitor_started, stopping;
	pthread_mutex_t janitor_mu;
	pthread_cond_t janitor_cv;
};

/* Per-thread I/O buffer of OBJ_IO_BUF bytes: slot 0 for bodies being written, 1 for reads. */
unsigned char *cn_obj__tls_buf(int slot);
/* The striped lock of bucket/key (C2). */
pthread_mutex_t *cn_obj__key_lock(cn_obj_store *s, const char *bucket, const char *key);
/* Bucket name and key rules: CN_ERR_NO_BUCKET, CN_ERR_BAD_KEY, CN_ERR_KEY_TOO_LONG. */
cn_err cn_obj__check_names(const char *bucket, const char *key);
/* The durability barrier of a commit (C3); CN_OK at once when not durable. */
cn_err cn_obj__barrier(cn_obj_store *s);
/* Deep copy of n pairs (*out NULL when n == 0). */
cn_err cn_obj__copy_kvs(const cn_kv *src, size_t n, cn_kv **out);
/* Moves the record's fields into info (info's previous content is released). */
void cn_obj__info_from_meta(cn_obj_info *info, cn_ec_meta *m);

/* Streams body through MD5 into buf-sized chunks. When allow_inline and the whole body
 * fits the first chunk and is at most inline_max, it stays in buf (*inline_data true, no
 * writer); otherwise the bytes go to a new writer (*w, abort it on any later failure).
 * A body longer than max (or than expect when expect >= 0) gives CN_ERR_TOO_LARGE /
 * CN_ERR_INVALID, a shorter one than expect CN_ERR_CLOSED; reader errors are mapped as
 * cn_obj_put documents. */
cn_err cn_obj__recv(cn_obj_store *s, cn_reader *body, int64_t expect, int64_t max, bool allow_inline,
                    unsigned char *buf, cn_ec_writer **w, int64_t *total, unsigned char md5[16],
                    bool *inline_data);

/* multipart.c: drops the bucket's configuration documents and uploads (cn_obj_delete_bucket,
 * under the exclusive ns_lock, after the bucket folder is gone). */
void cn_obj__bucket_gone(cn_obj_store *s, const char *bucket);
/* multipart.c: starts / stops the stale-upload janitor (store open / close). */
void cn_obj__janitor_start(cn_obj_store *s);
void cn_obj__janitor_stop(cn_obj_store *s);

#endif
