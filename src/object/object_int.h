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
	/* versioning state per bucket (versions.c): a direct-mapped cache of the
	 * "versioning" bucket document; vs_gen counts changes (insert only if unchanged) */
	pthread_mutex_t vs_mu;
	uint64_t vs_gen;
	struct {
		char bucket[64];
		cn_versioning state;
		bool valid;
	} vs[256];
	/* background healing (heal.c) */
	struct cn_obj_healer *healer;
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
 * writer); otherwise the bytes go to a new writer on set for bucket/key with the parity of
 * storage_class (*w, abort it on any later failure).
 * A body longer than max (or than expect when expect >= 0) gives CN_ERR_TOO_LARGE /
 * CN_ERR_INVALID, a shorter one than expect CN_ERR_CLOSED; reader errors are mapped as
 * cn_obj_put documents. */
cn_err cn_obj__recv(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                    const char *storage_class, cn_reader *body, int64_t expect, int64_t max,
                    bool allow_inline, unsigned char *buf, cn_ec_writer **w, int64_t *total,
                    unsigned char md5[16], bool *inline_data);

/* object.c: wraps an open erasure reader of the version m (already checked) as an object
 * reader; fills info (may be NULL) from m (moves m's meta). On error nothing is taken. */
cn_err cn_obj__reader_wrap(cn_obj_store *s, cn_ec_reader *er, cn_ec_meta *m, cn_obj_info *info,
                           cn_obj_reader **out);

/* heal.c: the background healer (queue + scanner threads), started and stopped with the
 * store; enqueue copies the reader's object name (never blocks: a full queue drops it, the
 * scanner finds it later). */
void cn_obj__heal_start(cn_obj_store *s);
void cn_obj__heal_stop(cn_obj_store *s);
void cn_obj__heal_enqueue(cn_obj_store *s, const cn_ec_reader *r);

/* versions.c: committing a new current version under the bucket's versioning state.
 * Under the key's lock: vprep (reads the current version, picks the new version id into
 * m->version_id, keeps the current one as noncurrent when it must survive, notes what a
 * replaced version leaves to remove), then the caller's commit, then vpost (only after a
 * successful commit). After the barrier, vfinish removes the replaced data (only when
 * committed) and releases vc, whatever happened (also after a failed vprep). */
typedef struct cn_obj__vcommit {
	cn_versioning v;
	cn_ec_meta old;   /* the version that was current (skip_inline), when old_ok */
	bool old_ok;
	bool drop_null;   /* suspended: the noncurrent "null" version goes after the commit */
	int ndrop;
	char drop[2][CN_DRIVE_ID_MAX + 1];
} cn_obj__vcommit;
cn_err cn_obj__versioning(cn_obj_store *s, const char *bucket, cn_versioning *v);
void cn_obj__versioning_forget(cn_obj_store *s, const char *bucket);
cn_err cn_obj__vprep(cn_obj_store *s, const char *bucket, const char *key, cn_versioning v,
                     cn_ec_meta *m, cn_obj__vcommit *vc);
void cn_obj__vpost(cn_obj_store *s, const char *bucket, const char *key, cn_obj__vcommit *vc);
void cn_obj__vfinish(cn_obj_store *s, const char *bucket, const char *key, cn_obj__vcommit *vc,
                     const char *new_data_id, bool committed);

/* multipart.c: drops the bucket's configuration documents and uploads (cn_obj_delete_bucket,
 * under the exclusive ns_lock, after the bucket folder is gone). */
void cn_obj__bucket_gone(cn_obj_store *s, const char *bucket);
/* multipart.c: starts / stops the stale-upload janitor (store open / close). */
void cn_obj__janitor_start(cn_obj_store *s);
void cn_obj__janitor_stop(cn_obj_store *s);

#endif
