/* object/multipart: multipart uploads, metadata-only updates and bucket configuration
 * documents (object.h), over the erasure layer's upload area (erasure.h).
 *
 * An upload's records, on every drive of the key's set:
 *   upload.meta      cn_ec_meta: mtime = initiated, meta = the internal key entry
 *                    (UPLOAD_KEY) then the create-time headers
 *   part.N.meta      cn_ec_meta of part N: size, etag (hex MD5), mtime, the part's kept
 *                    headers, data_id = the name of its shard file
 *   p<N>.<random>    the part's shard file (a fresh name per upload of N, so a record
 *                    always names a whole file; replaced files stay until the upload ends)
 * Invariants:
 *  MPU-1. Every change to one upload (part commit, completion, abort, expiry) holds the
 *      upload's lock: the key-lock stripe of bucket/upload_id, taken after ns_lock (OBJ-5)
 *      and before the object key's own stripe (OBJ-2) when both are needed.
 *  MPU-2. A part becomes visible only when its record is written, after its file is in the
 *      upload: a record never names a missing or partial file.
 *  MPU-3. Completion links the listed parts' files into a new data folder and commits the
 *      object's record (OBJ-1..OBJ-4 as for a put); only after the barrier is the upload
 *      removed. A crash in between leaves a whole object and the upload still listed; a
 *      crash before the record's rename leaves the upload intact (tmp garbage only). */
#include "object/object_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define UPLOAD_REC "upload.meta"
#define UPLOAD_KEY "x-cairn-upload-key"
#define DEFAULT_EXPIRY_MS (24LL * 3600 * 1000)
#define DEFAULT_CLEANUP_MS (3600LL * 1000)

/* --- metadata updates ---------------------------------------------------------------- */

cn_err cn_obj_update_meta(cn_obj_store *s, const char *bucket, const char *key, cn_obj_meta_fn fn,
                          void *ctx, cn_obj_info *out)
{
	return cn_obj_update_meta_version(s, bucket, key, NULL, fn, ctx, out);
}

cn_err cn_obj_update_meta_version(cn_obj_store *s, const char *bucket, const char *key,
                                  const char *vid, cn_obj_meta_fn fn, void *ctx, cn_obj_info *out)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	if (vid && !cn_obj_version_id_valid(vid))
		return CN_ERR_NO_VERSION;
	cn_ec_meta m;
	cn_obj_info info;
	cn_ec_meta_init(&m);
	cn_obj_info_init(&info);
	bool current = true;
	cn_ec_set *set = cn_obj__key_set(s, bucket, key);
	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl); /* OBJ-2 */
	e = cn_ec_read_meta(set, bucket, key, false, &m);
	if (vid && (e == CN_ERR_NO_KEY || (!e && strcmp(m.version_id[0] ? m.version_id : "null", vid)))) {
		/* not the current version: a noncurrent one */
		cn_ec_meta_fini(&m);
		current = false;
		e = cn_ec_version_read(set, bucket, key, vid, false, &m);
		if (e == CN_ERR_NO_KEY)
			e = CN_ERR_NO_VERSION;
	}
	if (!e && m.delete_marker)
		e = vid ? CN_ERR_DELETE_MARKER : CN_ERR_NO_KEY;
	if (!e) {
		cn_obj__info_from_meta(&info, &m); /* moves m's meta into info */
		e = fn(ctx, &info);
	}
	cn_obj__prevk pk = { .kept = false };
	if (!e) {
		if (info.nmeta > CN_EC_MAX_META) {
			e = CN_ERR_TOO_LARGE;
		} else {
			m.meta = info.meta; /* lent to the record while it is written */
			m.nmeta = info.nmeta;
			if (current)
				e = cn_obj__prev_keep(s, set, bucket, key, &m, &pk); /* OBJ-7 */
			if (!e)
				e = current ? cn_ec_update_meta(set, bucket, key, &m)
				            : cn_ec_update_version_meta(set, bucket, key, vid, &m);
			m.meta = NULL;
			m.nmeta = 0;
		}
	}
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier_set(s, set);
	cn_obj__prev_drop(s, set, bucket, key, &pk, !e, NULL); /* OBJ-7 */
	if (!e && out) {
		cn_obj_info_fini(out);
		*out = info;
		cn_obj_info_init(&info);
	}
	cn_obj_info_fini(&info);
	cn_ec_meta_fini(&m);
	return e;
}

/* --- bucket configuration ------------------------------------------------------------ */

static const char *const config_names[] = {
	"tagging", "versioning", "policy", "lifecycle", "notification", "encryption",
	"object-lock", "cors", "replication", "website", "logging", NULL
};

/* "bucket-config/<bucket>.<name>": unambiguous because no config name holds a '.'. */
static bool config_path(char *out, size_t cap, const char *bucket, const char *name)
{
	bool known = false;
	for (size_t i = 0; config_names[i]; i++)
		known |= !strcmp(config_names[i], name);
	int n = snprintf(out, cap, "bucket-config/%s.%s", bucket, name);
	return known && cn_obj_bucket_name_valid(bucket) && n > 0 && (size_t)n < cap;
}

#define CONFIG_MAX (256u * 1024)

bool cn_obj__config_path_at(size_t i, const char *bucket, char *out, size_t cap)
{
	for (size_t k = 0; k <= i; k++)
		if (!config_names[k])
			return false;
	if (!config_path(out, cap, bucket, config_names[i]))
		out[0] = 0;
	return true;
}

cn_err cn_obj_bucket_config_get(cn_obj_store *s, const char *bucket, const char *name, cn_buf *out)
{
	char path[160];
	cn_err e = cn_obj_head_bucket(s, bucket, NULL);
	if (e)
		return e;
	if (!config_path(path, sizeof path, bucket, name))
		return CN_ERR_INVALID;
	e = cn_obj__read_sys(s, path, CONFIG_MAX, out);
	return e == CN_ERR_TOO_LARGE ? CN_ERR_CORRUPT : e;
}

cn_err cn_obj_bucket_config_put(cn_obj_store *s, const char *bucket, const char *name,
                                const void *p, size_t len)
{
	char path[160];
	if (!config_path(path, sizeof path, bucket, name))
		return cn_obj_bucket_name_valid(bucket) ? CN_ERR_INVALID : CN_ERR_NO_BUCKET;
	if (len > CONFIG_MAX)
		return CN_ERR_TOO_LARGE;
	pthread_rwlock_rdlock(&s->ns_lock); /* OBJ-5: not into a bucket being deleted */
	cn_err e = cn_obj__stat_bucket(s, bucket);
	if (!e)
		e = cn_obj__write_sys_every(s, path, p, len);
	pthread_rwlock_unlock(&s->ns_lock);
	return e ? e : cn_obj__barrier(s);
}

cn_err cn_obj_bucket_config_delete(cn_obj_store *s, const char *bucket, const char *name)
{
	char path[160];
	if (!config_path(path, sizeof path, bucket, name))
		return cn_obj_bucket_name_valid(bucket) ? CN_ERR_INVALID : CN_ERR_NO_BUCKET;
	pthread_rwlock_rdlock(&s->ns_lock);
	cn_err e = cn_obj__stat_bucket(s, bucket);
	if (!e) {
		e = cn_obj__remove_sys_every(s, path);
		if (e == CN_ERR_NOT_FOUND)
			e = CN_OK;
	}
	pthread_rwlock_unlock(&s->ns_lock);
	return e ? e : cn_obj__barrier(s);
}

void cn_obj__bucket_gone(cn_obj_store *s, const char *bucket)
{
	char path[160];
	for (size_t i = 0; config_names[i]; i++)
		if (config_path(path, sizeof path, bucket, config_names[i]))
			cn_obj__remove_sys_every(s, path);
	for (size_t i = 0; i < s->nsets; i++)
		cn_ec_upload_remove(s->sets[i], bucket, NULL);
}

/* --- uploads: helpers ---------------------------------------------------------------- */

void cn_upload_info_fini(cn_upload_info *u)
{
	if (!u)
		return;
	free(u->key);
	cn_kvs_free(u->meta, u->nmeta);
	memset(u, 0, sizeof *u);
}

void cn_upload_list_fini(cn_upload_list *l)
{
	for (size_t i = 0; i < l->nuploads; i++)
		cn_upload_info_fini(&l->uploads[i]);
	free(l->uploads);
	for (size_t i = 0; i < l->nprefixes; i++)
		free(l->prefixes[i]);
	free(l->prefixes);
	free(l->next_key_marker);
	memset(l, 0, sizeof *l);
}

static bool upload_id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n != 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

static pthread_mutex_t *upload_lock(cn_obj_store *s, const char *bucket, const char *upload_id)
{
	return cn_obj__key_lock(s, bucket, upload_id); /* MPU-1 */
}

/* The set holding the upload of bucket/key: the key's set in the pool that has the upload
 * (with one pool, no I/O). */
static cn_ec_set *upload_set(cn_obj_store *s, const char *bucket, const char *key, const char *upload_id)
{
	if (s->npools == 1 || !upload_id_ok(upload_id))
		return cn_obj__hashed_set(s, 0, key);
	for (size_t p = 0; p < s->npools; p++) {
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		cn_err e = cn_ec_upload_get_meta(cn_obj__hashed_set(s, p, key), bucket, upload_id, UPLOAD_REC, &m);
		cn_ec_meta_fini(&m);
		if (e != CN_ERR_NOT_FOUND && e != CN_ERR_NO_BUCKET)
			return cn_obj__hashed_set(s, p, key);
	}
	return cn_obj__hashed_set(s, 0, key);
}

/* Reads the upload's record in set into u (key, initiated, meta without the internal
 * entry). key NULL: any key. CN_ERR_NO_UPLOAD when unknown or of another key. */
static cn_err read_upload(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                          const char *upload_id, cn_upload_info *u)
{
	if (!upload_id_ok(upload_id))
		return CN_ERR_NO_UPLOAD;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_err e = cn_ec_upload_get_meta(set, bucket, upload_id, UPLOAD_REC, &m);
	if (e == CN_ERR_NOT_FOUND) {
		e = cn_ec_stat_vol(set, bucket, NULL);
		cn_ec_meta_fini(&m);
		return e ? e : CN_ERR_NO_UPLOAD;
	}
	if (e) {
		cn_ec_meta_fini(&m);
		return e;
	}
	if (m.nmeta == 0 || strcmp(m.meta[0].name, UPLOAD_KEY) || (key && strcmp(m.meta[0].value, key))) {
		cn_ec_meta_fini(&m);
		return CN_ERR_NO_UPLOAD;
	}
	if (u) {
		cn_upload_info_fini(u);
		u->key = m.meta[0].value;
		m.meta[0].value = NULL;
		snprintf(u->upload_id, sizeof u->upload_id, "%s", upload_id);
		u->initiated_ms = m.mtime_ms;
		e = cn_obj__copy_kvs(m.meta + 1, m.nmeta - 1, &u->meta);
		if (!e)
			u->nmeta = m.nmeta - 1;
	}
	cn_ec_meta_fini(&m);
	return e;
}

static void part_rec_name(char *out, size_t cap, uint32_t number)
{
	snprintf(out, cap, "part.%u.meta", (unsigned)number);
}

/* --- uploads: create, part, stat, list parts ----------------------------------------- */

cn_err cn_obj_upload_create(cn_obj_store *s, const char *bucket, const char *key, const cn_kv *meta,
                            size_t nmeta, char upload_id[CN_OBJ_UPLOAD_ID_MAX])
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e;
	if (nmeta + 1 > CN_EC_MAX_META)
		return CN_ERR_TOO_LARGE;
	cn_kv *all = calloc(nmeta + 1, sizeof *all);
	if (!all)
		return CN_ERR_NOMEM;
	all[0].name = (char *)UPLOAD_KEY;
	all[0].value = (char *)key;
	size_t n = 1;
	for (size_t i = 0; i < nmeta; i++)
		if (strcmp(meta[i].name, UPLOAD_KEY))
			all[n++] = meta[i]; /* borrowed */
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	m.meta = all;
	m.nmeta = n;
	m.mtime_ms = cn_now_ms();
	snprintf(m.storage_class, sizeof m.storage_class, "STANDARD");
	static unsigned char no_data[1];
	m.has_inline = true; /* a record's data lives in exactly one place: here, empty */
	m.inline_data = no_data;
	m.inline_len = 0;
	cn_drive_random_id(upload_id);
	cn_ec_set *set;
	e = cn_obj__put_set(s, bucket, key, &set);
	pthread_rwlock_rdlock(&s->ns_lock); /* OBJ-5 */
	if (!e)
		e = cn_ec_stat_vol(set, bucket, NULL);
	if (!e)
		e = cn_ec_upload_put_meta(set, bucket, upload_id, UPLOAD_REC, true, &m);
	pthread_rwlock_unlock(&s->ns_lock);
	m.meta = NULL;
	m.nmeta = 0;
	m.inline_data = NULL;
	cn_ec_meta_fini(&m);
	free(all);
	if (!e)
		e = cn_obj__barrier_set(s, set);
	if (e)
		upload_id[0] = 0;
	return e;
}

cn_err cn_obj_upload_part(cn_obj_store *s, const char *bucket, const char *key, const char *upload_id,
                          uint32_t number, cn_reader *body, const cn_put_opts *opts, cn_obj_info *out)
{
	static const cn_put_opts no_opts = { .size = -1 };
	if (!opts)
		opts = &no_opts;
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e;
	if (number < 1 || number > CN_OBJ_MAX_PARTS)
		return CN_ERR_INVALID;
	if (opts->size > CN_OBJ_MAX_PART_SIZE)
		return CN_ERR_TOO_LARGE;
	cn_upload_info up;
	memset(&up, 0, sizeof up);
	cn_ec_set *set = upload_set(s, bucket, key, upload_id);
	if ((e = read_upload(s, set, bucket, key, upload_id, &up))) /* fail fast, before the body */
		return e;
	char sc[24] = "STANDARD"; /* parts take the upload's storage class */
	for (size_t i = 0; i < up.nmeta; i++)
		if (!strcmp(up.meta[i].name, "x-amz-storage-class"))
			snprintf(sc, sizeof sc, "%s", up.meta[i].value);
	cn_upload_info_fini(&up);
	unsigned char *buf = cn_obj__tls_buf(0);
	if (!buf)
		return CN_ERR_NOMEM;
	cn_ec_writer *w = NULL;
	cn_kv *add = NULL, *all = NULL;
	size_t nadd = 0;
	int64_t total = 0;
	bool inl;
	unsigned char md5[16];
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	if ((e = cn_obj__recv(s, set, bucket, key, sc, body, opts->size, CN_OBJ_MAX_PART_SIZE, false,
	                      buf, &w, &total, md5, &inl)))
		goto out;
	if (opts->seal && (e = opts->seal(opts->seal_ctx, md5, total, &add, &nadd)))
		goto out;
	size_t nall = opts->nmeta + nadd;
	if (nall > CN_EC_MAX_META) {
		e = CN_ERR_TOO_LARGE;
		goto out;
	}
	if (!(all = calloc(nall ? nall : 1, sizeof *all))) {
		e = CN_ERR_NOMEM;
		goto out;
	}
	if (opts->nmeta)
		memcpy(all, opts->meta, opts->nmeta * sizeof *all);
	if (nadd)
		memcpy(all + opts->nmeta, add, nadd * sizeof *all);
	m.meta = all; /* borrowed */
	m.nmeta = nall;
	m.size = total;
	m.mtime_ms = cn_now_ms();
	cn_hex_encode(md5, 16, m.etag);
	snprintf(m.storage_class, sizeof m.storage_class, "STANDARD");
	char rid[33], recname[32];
	cn_drive_random_id(rid);
	snprintf(m.data_id, sizeof m.data_id, "p%u.%.16s", (unsigned)number, rid);
	part_rec_name(recname, sizeof recname, number);

	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_t *ul = upload_lock(s, bucket, upload_id);
	pthread_mutex_lock(ul); /* MPU-1 */
	e = cn_ec_upload_take(w, bucket, upload_id, m.data_id, &m); /* MPU-2: file first */
	if (!e)
		e = cn_ec_upload_put_meta(set, bucket, upload_id, recname, false, &m);
	pthread_mutex_unlock(ul);
	pthread_rwlock_unlock(&s->ns_lock);
	if (e == CN_ERR_NOT_FOUND)
		e = CN_ERR_NO_UPLOAD; /* aborted or completed meanwhile */
	if (!e)
		e = cn_obj__barrier_set(s, set);
	if (!e && out) {
		cn_obj_info_fini(out);
		snprintf(out->etag, sizeof out->etag, "%s", m.etag);
		out->size = m.size;
		out->mtime_ms = m.mtime_ms;
		snprintf(out->storage_class, sizeof out->storage_class, "STANDARD");
		if ((e = cn_obj__copy_kvs(all, nall, &out->meta)) == CN_OK)
			out->nmeta = nall;
	}
out:
	m.meta = NULL;
	m.nmeta = 0;
	cn_ec_meta_fini(&m);
	free(all);
	cn_kvs_free(add, nadd);
	cn_ec_writer_abort(w);
	return e;
}

cn_err cn_obj_upload_stat(cn_obj_store *s, const char *bucket, const char *key, const char *upload_id,
                          cn_upload_info *out)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_UPLOAD;
	return read_upload(s, upload_set(s, bucket, key, upload_id), bucket, key, upload_id, out);
}

/* Part N's record as an info (parts = { N, size, etag }); *file gets its shard file name. */
static cn_err read_part(cn_ec_set *set, const char *bucket, const char *upload_id, uint32_t number,
                        cn_obj_info *out, char file[CN_DRIVE_ID_MAX + 1])
{
	char recname[32];
	part_rec_name(recname, sizeof recname, number);
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_err e = cn_ec_upload_get_meta(set, bucket, upload_id, recname, &m);
	if (!e && !m.data_id[0])
		e = CN_ERR_CORRUPT;
	if (!e) {
		if (file)
			snprintf(file, CN_DRIVE_ID_MAX + 1, "%s", m.data_id);
		cn_obj__info_from_meta(out, &m);
		if (!(out->parts = calloc(1, sizeof *out->parts))) {
			e = CN_ERR_NOMEM;
		} else {
			out->nparts = 1;
			out->parts[0].number = number;
			out->parts[0].size = out->size;
			snprintf(out->parts[0].etag, sizeof out->parts[0].etag, "%s", out->etag);
		}
	}
	cn_ec_meta_fini(&m);
	return e;
}

static int info_part_cmp(const void *a, const void *b)
{
	uint32_t x = ((const cn_obj_info *)a)->parts[0].number, y = ((const cn_obj_info *)b)->parts[0].number;
	return x < y ? -1 : x > y;
}

cn_err cn_obj_upload_list_parts(cn_obj_store *s, const char *bucket, const char *key,
                                const char *upload_id, cn_obj_info **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_UPLOAD;
	cn_ec_set *set = upload_set(s, bucket, key, upload_id);
	if ((e = read_upload(s, set, bucket, key, upload_id, NULL)))
		return e;
	char **names;
	size_t nn;
	if ((e = cn_ec_upload_list(set, bucket, upload_id, &names, &nn)))
		return e == CN_ERR_NOT_FOUND ? CN_ERR_NO_UPLOAD : e;
	cn_obj_info *v = calloc(nn ? nn : 1, sizeof *v);
	size_t k = 0;
	if (!v)
		e = CN_ERR_NOMEM;
	for (size_t i = 0; i < nn && !e; i++) {
		unsigned num;
		int end = 0;
		if (sscanf(names[i], "part.%u.meta%n", &num, &end) != 1 || names[i][end] ||
		    num < 1 || num > CN_OBJ_MAX_PARTS)
			continue;
		cn_obj_info_init(&v[k]);
		e = read_part(set, bucket, upload_id, num, &v[k], NULL);
		if (e == CN_ERR_NOT_FOUND) {
			/* a part on a few drives only (a failed upload of it: EC-8), or the upload
			 * ended meanwhile */
			cn_obj_info_fini(&v[k]);
			if ((e = read_upload(s, set, bucket, key, upload_id, NULL)))
				break;
			continue;
		}
		if (!e)
			k++;
	}
	cn_drive_free_names(names, nn);
	if (e) {
		for (size_t i = 0; i < k; i++)
			cn_obj_info_fini(&v[i]);
		free(v);
		return e;
	}
	qsort(v, k, sizeof *v, info_part_cmp);
	*out = v;
	*n = k;
	return CN_OK;
}

/* --- uploads: complete, abort ---------------------------------------------------------- */

cn_err cn_obj_upload_complete(cn_obj_store *s, const char *bucket, const char *key,
                              const char *upload_id, const cn_obj_part *list, size_t nlist,
                              cn_obj_complete_seal seal, void *seal_ctx, cn_obj_info *out)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_UPLOAD;
	if (nlist == 0 || nlist > CN_OBJ_MAX_PARTS)
		return CN_ERR_PART_ORDER;
	for (size_t i = 0; i < nlist; i++)
		if (list[i].number < 1 || list[i].number > CN_OBJ_MAX_PARTS ||
		    (i && list[i].number <= list[i - 1].number))
			return CN_ERR_PART_ORDER;

	cn_upload_info up;
	memset(&up, 0, sizeof up);
	cn_obj_info *parts = calloc(nlist, sizeof *parts);
	char (*files)[CN_DRIVE_ID_MAX + 1] = calloc(nlist, sizeof *files);
	const char **srcs = calloc(nlist, sizeof *srcs);
	cn_ec_part *ecp = calloc(nlist, sizeof *ecp);
	cn_kv *add = NULL, *all = NULL;
	size_t nadd = 0;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	bool locked = false;
	pthread_mutex_t *ul = upload_lock(s, bucket, upload_id), *kl = cn_obj__key_lock(s, bucket, key);
	cn_ec_set *set = upload_set(s, bucket, key, upload_id);
	if (!parts || !files || !srcs || !ecp) {
		e = CN_ERR_NOMEM;
		goto out;
	}
	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_lock(ul); /* MPU-1 */
	locked = true;
	if ((e = read_upload(s, set, bucket, key, upload_id, &up)))
		goto out;
	cn_md5 md;
	cn_md5_init(&md);
	int64_t total = 0;
	for (size_t i = 0; i < nlist && !e; i++) {
		e = read_part(set, bucket, upload_id, list[i].number, &parts[i], files[i]);
		if (e == CN_ERR_NOT_FOUND) {
			e = CN_ERR_BAD_PART;
			break;
		}
		if (e)
			break;
		unsigned char bin[16];
		if (strcasecmp(parts[i].etag, list[i].etag) || strlen(parts[i].etag) != 32 ||
		    cn_hex_decode(cn_str_c(parts[i].etag), bin, sizeof bin)) {
			e = CN_ERR_BAD_PART;
			break;
		}
		cn_md5_update(&md, bin, sizeof bin);
		srcs[i] = files[i];
		ecp[i].number = list[i].number;
		ecp[i].size = parts[i].size;
		snprintf(ecp[i].etag, sizeof ecp[i].etag, "%s", parts[i].etag);
		total += parts[i].size;
	}
	for (size_t i = 0; !e && i + 1 < nlist; i++)
		if (parts[i].size < CN_OBJ_MIN_PART_SIZE)
			e = CN_ERR_TOO_SMALL;
	unsigned char digest[16];
	cn_md5_final(&md, digest);
	if (e)
		goto out;
	if (seal && (e = seal(seal_ctx, parts, nlist, &add, &nadd)))
		goto out;

	size_t nall = up.nmeta + nadd;
	if (nall > CN_EC_MAX_META) {
		e = CN_ERR_TOO_LARGE;
		goto out;
	}
	if (!(all = calloc(nall ? nall : 1, sizeof *all))) {
		e = CN_ERR_NOMEM;
		goto out;
	}
	if (up.nmeta)
		memcpy(all, up.meta, up.nmeta * sizeof *all);
	if (nadd)
		memcpy(all + up.nmeta, add, nadd * sizeof *all);
	m.meta = all; /* borrowed */
	m.nmeta = nall;
	m.size = total;
	m.mtime_ms = cn_now_ms();
	cn_hex_encode(digest, 16, m.etag);
	snprintf(m.etag + 32, sizeof m.etag - 32, "-%zu", nlist);
	snprintf(m.storage_class, sizeof m.storage_class, "STANDARD");
	for (size_t i = 0; i < nall; i++)
		if (!strcmp(all[i].name, "x-amz-storage-class") && strlen(all[i].value) < sizeof m.storage_class)
			snprintf(m.storage_class, sizeof m.storage_class, "%s", all[i].value);
	m.parts = ecp; /* borrowed */
	m.nparts = nlist;

	cn_versioning v;
	if ((e = cn_obj__versioning(s, bucket, &v)))
		goto out;
	cn_obj__vcommit vc;
	if (kl != ul)
		pthread_mutex_lock(kl); /* OBJ-2 */
	e = cn_obj__vprep(s, set, bucket, key, v, &m, &vc);
	if (!e)
		e = cn_ec_upload_commit(set, bucket, upload_id, srcs, nlist, key, &m); /* MPU-3 */
	if (!e)
		cn_obj__vpost(s, bucket, key, &vc);
	if (kl != ul)
		pthread_mutex_unlock(kl);
	if (!e)
		e = cn_obj__barrier_set(s, set); /* OBJ-3 */
	cn_obj__vfinish(s, bucket, key, &vc, m.data_id, !e); /* OBJ-4 */
	if (e)
		goto out;
	cn_ec_upload_remove(set, bucket, upload_id); /* MPU-3: after the object is durable */
	if (out) {
		cn_obj_info_fini(out);
		snprintf(out->etag, sizeof out->etag, "%s", m.etag);
		out->size = m.size;
		out->mtime_ms = m.mtime_ms;
		snprintf(out->storage_class, sizeof out->storage_class, "%s", m.storage_class);
		snprintf(out->version_id, sizeof out->version_id, "%s", m.version_id);
		if ((e = cn_obj__copy_kvs(all, nall, &out->meta)) == CN_OK)
			out->nmeta = nall;
		if (!e && (out->parts = calloc(nlist, sizeof *out->parts))) {
			out->nparts = nlist;
			for (size_t i = 0; i < nlist; i++) {
				out->parts[i].number = ecp[i].number;
				out->parts[i].size = ecp[i].size;
				snprintf(out->parts[i].etag, sizeof out->parts[i].etag, "%s", ecp[i].etag);
			}
		}
	}
out:
	if (locked) {
		pthread_mutex_unlock(ul);
		pthread_rwlock_unlock(&s->ns_lock);
	}
	m.meta = NULL;
	m.nmeta = 0;
	m.parts = NULL;
	m.nparts = 0;
	cn_ec_meta_fini(&m);
	if (parts)
		for (size_t i = 0; i < nlist; i++)
			cn_obj_info_fini(&parts[i]);
	free(parts);
	free(files);
	free(srcs);
	free(ecp);
	free(all);
	cn_kvs_free(add, nadd);
	cn_upload_info_fini(&up);
	return e;
}

cn_err cn_obj_upload_abort(cn_obj_store *s, const char *bucket, const char *key, const char *upload_id)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_UPLOAD;
	cn_ec_set *set = upload_set(s, bucket, key, upload_id);
	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_t *ul = upload_lock(s, bucket, upload_id);
	pthread_mutex_lock(ul); /* MPU-1 */
	e = read_upload(s, set, bucket, key, upload_id, NULL);
	if (!e)
		e = cn_ec_upload_remove(set, bucket, upload_id);
	pthread_mutex_unlock(ul);
	pthread_rwlock_unlock(&s->ns_lock);
	return e ? e : cn_obj__barrier_set(s, set);
}

/* --- uploads: listing ---------------------------------------------------------------- */

static int upload_cmp(const void *pa, const void *pb)
{
	const cn_upload_info *a = pa, *b = pb;
	int c = strcmp(a->key, b->key);
	if (c)
		return c;
	if (a->initiated_ms != b->initiated_ms)
		return a->initiated_ms < b->initiated_ms ? -1 : 1;
	return strcmp(a->upload_id, b->upload_id);
}

/* Every upload of the bucket in every set (unsorted), read from the records. */
static cn_err all_uploads(cn_obj_store *s, const char *bucket, cn_upload_info **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	cn_upload_info *v = NULL;
	size_t k = 0, cap = 0;
	cn_err e = CN_OK;
	for (size_t si = 0; si < s->nsets && !e; si++) {
		char **ids;
		size_t nid;
		if ((e = cn_ec_upload_list(s->sets[si], bucket, NULL, &ids, &nid)))
			break;
		if (k + nid + 1 > cap) {
			size_t nc = k + nid + 1;
			cn_upload_info *nv = realloc(v, nc * sizeof *nv);
			if (!nv)
				e = CN_ERR_NOMEM;
			else {
				memset(nv + cap, 0, (nc - cap) * sizeof *nv);
				v = nv;
				cap = nc;
			}
		}
		for (size_t i = 0; i < nid && !e; i++) {
			cn_err re = read_upload(s, s->sets[si], bucket, NULL, ids[i], &v[k]);
			if (re == CN_OK)
				k++;
			else if (re != CN_ERR_NO_UPLOAD && re != CN_ERR_CORRUPT)
				e = re; /* a vanished or unreadable upload is skipped */
		}
		cn_drive_free_names(ids, nid);
	}
	if (!e && !v && !(v = calloc(1, sizeof *v)))
		e = CN_ERR_NOMEM;
	if (e) {
		for (size_t i = 0; i < k; i++)
			cn_upload_info_fini(&v[i]);
		free(v);
		return e;
	}
	*out = v;
	*n = k;
	return CN_OK;
}

cn_err cn_obj_upload_list(cn_obj_store *s, const char *bucket, const char *prefix, const char *delimiter,
                          const char *key_marker, const char *upload_id_marker, size_t max_uploads,
                          cn_upload_list *out)
{
	memset(out, 0, sizeof *out);
	if (!cn_obj_bucket_name_valid(bucket))
		return CN_ERR_NO_BUCKET;
	cn_err e = cn_obj__stat_bucket(s, bucket);
	if (e)
		return e;
	prefix = prefix ? prefix : "";
	key_marker = key_marker ? key_marker : "";
	upload_id_marker = upload_id_marker ? upload_id_marker : "";
	if (delimiter && !delimiter[0])
		delimiter = NULL;
	if (max_uploads > 1000)
		max_uploads = 1000;
	cn_upload_info *v;
	size_t n;
	if ((e = all_uploads(s, bucket, &v, &n)))
		return e;
	qsort(v, n, sizeof *v, upload_cmp);
	/* the marker upload's place: uploads of key_marker after it (by initiated time, as
	 * sorted) follow; without an upload id marker, the whole key is skipped */
	int64_t marker_ms = INT64_MIN;
	bool marker_found = false;
	if (key_marker[0] && upload_id_marker[0])
		for (size_t i = 0; i < n; i++)
			if (!strcmp(v[i].key, key_marker) && !strcmp(v[i].upload_id, upload_id_marker)) {
				marker_ms = v[i].initiated_ms;
				marker_found = true;
			}
	size_t plen = strlen(prefix), count = 0, capp = 0, capu = 0;
	const char *last_prefix = NULL;
	for (size_t i = 0; i < n && !e; i++) {
		cn_upload_info *u = &v[i];
		if (strncmp(u->key, prefix, plen))
			continue;
		if (key_marker[0]) {
			int c = strcmp(u->key, key_marker);
			if (c < 0)
				continue;
			if (c == 0) {
				if (!upload_id_marker[0] || !marker_found)
					continue;
				if (u->initiated_ms < marker_ms ||
				    (u->initiated_ms == marker_ms && strcmp(u->upload_id, upload_id_marker) <= 0))
					continue;
			}
		}
		const char *d = delimiter ? strstr(u->key + plen, delimiter) : NULL;
		if (d) {
			size_t cl = (size_t)(d - u->key) + strlen(delimiter);
			if (last_prefix && strlen(last_prefix) == cl && !strncmp(last_prefix, u->key, cl))
				continue; /* same common prefix as the previous one */
			/* a common prefix at or before the key marker was already returned */
			if (key_marker[0] && strncmp(u->key, key_marker, cl) == 0 && strlen(key_marker) >= cl)
				continue;
			if (count == max_uploads) {
				out->truncated = true;
				break;
			}
			if (out->nprefixes == capp) {
				size_t nc = capp ? capp * 2 : 8;
				char **np = realloc(out->prefixes, nc * sizeof *np);
				if (!np) {
					e = CN_ERR_NOMEM;
					break;
				}
				out->prefixes = np;
				capp = nc;
			}
			char *p = strndup(u->key, cl);
			if (!p) {
				e = CN_ERR_NOMEM;
				break;
			}
			out->prefixes[out->nprefixes++] = p;
			last_prefix = p;
			free(out->next_key_marker);
			out->next_key_marker = strdup(p);
			out->next_upload_id_marker[0] = 0;
			count++;
			continue;
		}
		if (count == max_uploads) {
			out->truncated = true;
			break;
		}
		if (out->nuploads == capu) {
			size_t nc = capu ? capu * 2 : 16;
			cn_upload_info *nu = realloc(out->uploads, nc * sizeof *nu);
			if (!nu) {
				e = CN_ERR_NOMEM;
				break;
			}
			out->uploads = nu;
			capu = nc;
		}
		out->uploads[out->nuploads++] = *u; /* moved */
		memset(u, 0, sizeof *u);
		free(out->next_key_marker);
		out->next_key_marker = strdup(out->uploads[out->nuploads - 1].key);
		snprintf(out->next_upload_id_marker, sizeof out->next_upload_id_marker, "%s",
		         out->uploads[out->nuploads - 1].upload_id);
		count++;
	}
	for (size_t i = 0; i < n; i++)
		cn_upload_info_fini(&v[i]);
	free(v);
	if (!e && !out->truncated) {
		free(out->next_key_marker);
		out->next_key_marker = NULL;
		out->next_upload_id_marker[0] = 0;
	}
	if (e)
		cn_upload_list_fini(out);
	return e;
}

/* --- stale uploads ------------------------------------------------------------------- */

static void expire_uploads(cn_obj_store *s, int64_t expiry_ms)
{
	cn_drive_vol *vols;
	size_t nv;
	if (cn_ec_list_vols(s->sets[0], &vols, &nv))
		return;
	int64_t now = cn_now_ms();
	for (size_t b = 0; b < nv && !cn_periodic_stopping(&s->janitor); b++) {
		if (!cn_obj_bucket_name_valid(vols[b].name))
			continue;
		cn_upload_info *v;
		size_t n;
		if (all_uploads(s, vols[b].name, &v, &n))
			continue;
		for (size_t i = 0; i < n; i++) {
			if (now - v[i].initiated_ms >= expiry_ms &&
			    cn_obj_upload_abort(s, vols[b].name, v[i].key, v[i].upload_id) == CN_OK)
				cn_log(CN_LOG_INFO, NULL, "object: removed stale upload %s of %s/%s (started %lld s ago)",
				       v[i].upload_id, vols[b].name, v[i].key,
				       (long long)((now - v[i].initiated_ms) / 1000));
			cn_upload_info_fini(&v[i]);
		}
		free(v);
	}
	free(vols);
}

static void janitor_run(void *arg)
{
	cn_obj_store *s = arg;
	expire_uploads(s, s->cfg.upload_expiry_ms > 0 ? s->cfg.upload_expiry_ms : DEFAULT_EXPIRY_MS);
}

void cn_obj__janitor_start(cn_obj_store *s)
{
	int64_t every = s->cfg.upload_cleanup_ms > 0 ? s->cfg.upload_cleanup_ms : DEFAULT_CLEANUP_MS;
	if (cn_periodic_start(&s->janitor, every, janitor_run, s))
		cn_log(CN_LOG_WARN, NULL, "object: cannot start the stale-upload cleaner; stale "
		       "uploads stay until aborted");
}

void cn_obj__janitor_stop(cn_obj_store *s)
{
	cn_periodic_stop(&s->janitor);
}
