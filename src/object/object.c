/* object: buckets, objects and listing over one erasure set (object.h). Names and keys are
 * validated here; the ETag (MD5) is computed while the body streams through one bounded
 * per-thread buffer; commits go through the erasure layer and are made durable by its
 * group-commit barrier before any success returns (object.h contract 1).
 *
 * Commit order (numbered invariants, cited below):
 *  C1. Data is written under the drive's tmp area; nothing is visible before rename_data.
 *  C2. Commits of one key are serialized by a striped mutex keyed by hash(bucket/key).
 *      Rename atomicity alone would keep the RECORD whole, but the previous version's data
 *      folder must be known exactly (read under the lock) so that the loser of a race never
 *      deletes the winner's data; with the lock each commit reads the record it replaces.
 *      Puts of one key thus leave one whole winner (the last commit).
 *  C3. The barrier (cn_ec_sync) runs after the renames and before CN_OK; the lock is not
 *      held across it, so concurrent commits share one flush (group commit).
 *  C4. The replaced data folder is removed only after the barrier: a crash before the new
 *      record is durable then still finds the old record's data.
 *  C5. Bucket deletion takes the namespace lock exclusively; commits take it shared, so a
 *      put never lands in a bucket folder that is being removed. */
#include "object/object_int.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IO_BUF OBJ_IO_BUF
#define KEY_LOCKS OBJ_KEY_LOCKS
#define FORMAT_VERSION 1
#define LIST_STOP CN_ERR__COUNT /* internal: the walk collected enough */

struct cn_obj_reader {
	cn_reader stream;  /* first: cn_obj_reader_stream casts back */
	cn_obj_store *s;
	cn_ec_reader *r;
	int64_t size;
	int64_t pos, end;  /* the stream's position and end */
};

/* --- per-thread I/O buffers (contract 4: memory bounded by the worker count) -------- */

typedef struct tls_bufs {
	unsigned char *b[2];
} tls_bufs;

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *p)
{
	tls_bufs *t = p;
	free(t->b[0]);
	free(t->b[1]);
	free(t);
}

static void tls_init(void)
{
	CN_ASSERT(pthread_key_create(&tls_key, tls_free) == 0);
}

/* Slot 0: put bodies; slot 1: reads. IO_BUF bytes each. */
unsigned char *cn_obj__tls_buf(int slot)
{
	pthread_once(&tls_once, tls_init);
	tls_bufs *t = pthread_getspecific(tls_key);
	if (!t) {
		t = calloc(1, sizeof *t);
		if (!t)
			return NULL;
		pthread_setspecific(tls_key, t);
	}
	if (!t->b[slot])
		t->b[slot] = malloc(IO_BUF);
	return t->b[slot];
}

/* --- names ---------------------------------------------------------------------------- */

static bool is_ipv4(const char *s)
{
	int parts = 0;
	while (*s) {
		int digits = 0;
		while (*s >= '0' && *s <= '9') {
			s++;
			digits++;
		}
		if (digits == 0 || digits > 3)
			return false;
		parts++;
		if (*s == '.')
			s++;
		else if (*s)
			return false;
	}
	return parts == 4;
}

bool cn_obj_bucket_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '.' && c != '-')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
		if (c == '.' && name[i + 1] == '.')
			return false;
	}
	if (is_ipv4(name) || strncmp(name, "xn--", 4) == 0)
		return false;
	if (n >= 8 && strcmp(name + n - 8, "-s3alias") == 0)
		return false;
	return true;
}

/* Key rules (object.h), plus the layout's own limit (docs/FORMAT.md §3): every component,
 * once escaped, must fit a 255-byte file name. */
cn_err cn_obj_key_check(const char *key, size_t len)
{
	if (len == 0)
		return CN_ERR_BAD_KEY;
	if (len > 1024)
		return CN_ERR_KEY_TOO_LONG;
	if (memchr(key, 0, len) || !cn_utf8_valid(key, len))
		return CN_ERR_BAD_KEY;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && key[i] != '/')
			continue;
		size_t cl = i - start;
		bool esc = cl == 0 || key[start] == '%' || (cl == 1 && key[start] == '.') ||
		           (cl == 2 && key[start] == '.' && key[start + 1] == '.');
		if (cl + (esc ? 2 : 0) > 255)
			return CN_ERR_BAD_KEY;
		start = i + 1;
	}
	return CN_OK;
}

pthread_mutex_t *cn_obj__key_lock(cn_obj_store *s, const char *bucket, const char *key)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a of bucket "/" key */
	for (const char *p = bucket; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return &s->key_locks[h % KEY_LOCKS];
}

/* --- store and format ----------------------------------------------------------------- */

/* Format file (docs/FORMAT.md §1): "key value" lines. */
static cn_err format_check(cn_obj_store *s, const cn_buf *b)
{
	int version = -1, pools = -1, sets = -1, per_set = -1, pool = -1, set = -1, drive = -1;
	char dep[64] = "";
	const char *p = b->p, *end = b->p + b->len;
	if (!p)
		return CN_ERR_CORRUPT;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[128];
		if (ll >= sizeof line)
			return CN_ERR_CORRUPT;
		memcpy(line, p, ll);
		line[ll] = 0;
		p += ll + (nl != NULL);
		char k[32], v[64];
		if (ll == 0 || sscanf(line, "%31s %63s", k, v) != 2)
			continue;
		int iv = atoi(v);
		if (!strcmp(k, "cairn-format"))
			version = iv;
		else if (!strcmp(k, "deployment"))
			snprintf(dep, sizeof dep, "%s", v);
		else if (!strcmp(k, "pools"))
			pools = iv;
		else if (!strcmp(k, "sets"))
			sets = iv;
		else if (!strcmp(k, "drives-per-set"))
			per_set = iv;
		else if (!strcmp(k, "pool"))
			pool = iv;
		else if (!strcmp(k, "set"))
			set = iv;
		else if (!strcmp(k, "drive"))
			drive = iv;
	}
	unsigned char raw[16];
	if (version != FORMAT_VERSION || strlen(dep) != 32 || cn_hex_decode((cn_str){ dep, 32 }, raw, 16)) {
		cn_log(CN_LOG_ERROR, NULL, "object: drive format unreadable or of an unknown version");
		return CN_ERR_CORRUPT;
	}
	if (pools != 1 || sets != 1 || per_set != (int)cn_ec_set_ndrives(s->set) || pool != 0 ||
	    set != 0 || drive != 0) {
		cn_log(CN_LOG_ERROR, NULL,
		       "object: drive belongs to deployment %s laid out as %d pool(s) x %d set(s) x %d "
		       "drive(s), slot pool %d set %d drive %d; this server is 1 x 1 x %zu: refusing it",
		       dep, pools, sets, per_set, pool, set, drive, cn_ec_set_ndrives(s->set));
		return CN_ERR_INVALID;
	}
	if (s->deployment[0] && strcmp(s->deployment, dep)) {
		cn_log(CN_LOG_ERROR, NULL, "object: drive of deployment %s, expected %s: refusing it",
		       dep, s->deployment);
		return CN_ERR_INVALID;
	}
	memcpy(s->deployment, dep, 33);
	return CN_OK;
}

static cn_err format_load_or_create(cn_obj_store *s)
{
	cn_buf b;
	cn_buf_init(&b);
	cn_err e = cn_ec_read_sys(s->set, 0, "format", 4096, &b);
	if (e == CN_ERR_NOT_FOUND) {
		char dep[33];
		cn_drive_random_id(dep);
		b.len = 0;
		e = cn_buf_printf(&b,
		                  "cairn-format %d\ndeployment %s\npools 1\nsets 1\ndrives-per-set %zu\n"
		                  "pool 0\nset 0\ndrive 0\n",
		                  FORMAT_VERSION, dep, cn_ec_set_ndrives(s->set));
		if (!e)
			e = cn_ec_write_sys(s->set, 0, "format", b.p, b.len);
		if (!e && s->cfg.durable)
			e = cn_ec_sync(s->set);
		if (!e)
			snprintf(s->deployment, sizeof s->deployment, "%s", dep);
	} else if (!e) {
		e = format_check(s, &b);
	} else if (e == CN_ERR_TOO_LARGE) {
		e = CN_ERR_CORRUPT;
	}
	cn_buf_fini(&b);
	return e;
}

cn_err cn_obj_store_open(const char *const *drives, size_t ndrives, const cn_obj_config *cfg,
                         cn_obj_store **out)
{
	if (ndrives == 0 || !drives)
		return CN_ERR_INVALID;
	if (ndrives > 1)
		return CN_ERR_UNSUPPORTED;
	cn_obj_store *s = calloc(1, sizeof *s);
	if (!s)
		return CN_ERR_NOMEM;
	s->cfg = *cfg;
	if (s->cfg.inline_max < 0)
		s->cfg.inline_max = 128 * 1024;
	if (s->cfg.inline_max > (int64_t)IO_BUF - 1)
		s->cfg.inline_max = IO_BUF - 1; /* an inline body must fit the first read buffer */
	pthread_rwlock_init(&s->ns_lock, NULL);
	pthread_mutex_init(&s->vs_mu, NULL);
	for (size_t i = 0; i < KEY_LOCKS; i++)
		pthread_mutex_init(&s->key_locks[i], NULL);
	cn_drive *d = NULL;
	cn_err e = cn_drive_local_open(drives[0], cfg->durable, &d);
	if (!e) {
		e = cn_ec_set_new(&d, 1, 0, 0, &s->set);
		if (e)
			cn_drive_close(d);
	}
	if (!e)
		e = format_load_or_create(s);
	if (e) {
		cn_obj_store_close(s);
		return e;
	}
	s->ready = true;
	cn_obj__janitor_start(s);
	cn_obj__heal_start(s);
	*out = s;
	return CN_OK;
}

void cn_obj_store_close(cn_obj_store *s)
{
	if (!s)
		return;
	cn_obj__heal_stop(s);
	cn_obj__janitor_stop(s);
	cn_ec_set_free(s->set);
	pthread_rwlock_destroy(&s->ns_lock);
	pthread_mutex_destroy(&s->vs_mu);
	for (size_t i = 0; i < KEY_LOCKS; i++)
		pthread_mutex_destroy(&s->key_locks[i]);
	free(s);
}

bool cn_obj_store_ready(cn_obj_store *s)
{
	return s && s->ready && cn_ec_set_online(s->set);
}

cn_err cn_obj__barrier(cn_obj_store *s)
{
	return s->cfg.durable ? cn_ec_sync(s->set) : CN_OK;
}

/* --- buckets ------------------------------------------------------------------------ */

static int64_t bucket_created(cn_obj_store *s, const char *name, int64_t fallback)
{
	char path[96];
	cn_buf b;
	cn_buf_init(&b);
	snprintf(path, sizeof path, "buckets/%s", name);
	int64_t ms = fallback;
	if (cn_ec_read_sys(s->set, 0, path, 256, &b) == CN_OK && b.p) {
		long long v;
		if (sscanf(b.p, "created_ms %lld", &v) == 1 && v >= 0)
			ms = v;
	}
	cn_buf_fini(&b);
	return ms;
}

cn_err cn_obj_make_bucket(cn_obj_store *s, const char *name)
{
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_BAD_BUCKET_NAME;
	char path[96], body[64];
	pthread_rwlock_wrlock(&s->ns_lock);
	cn_err e = cn_ec_make_vol(s->set, name);
	if (!e) {
		snprintf(path, sizeof path, "buckets/%s", name);
		int n = snprintf(body, sizeof body, "created_ms %lld\n", (long long)cn_now_ms());
		e = cn_ec_write_sys_all(s->set, path, body, (size_t)n);
	}
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier(s);
	return e;
}

cn_err cn_obj_head_bucket(cn_obj_store *s, const char *name, cn_bucket_info *out)
{
	int64_t mtime = 0;
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_NO_BUCKET;
	cn_err e = cn_ec_stat_vol(s->set, name, &mtime);
	if (e)
		return e;
	if (out) {
		snprintf(out->name, sizeof out->name, "%s", name);
		out->created_ms = bucket_created(s, name, mtime);
	}
	return CN_OK;
}

cn_err cn_obj_delete_bucket(cn_obj_store *s, const char *name)
{
	char path[96];
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_NO_BUCKET;
	pthread_rwlock_wrlock(&s->ns_lock); /* C5 */
	cn_err e = cn_ec_delete_vol(s->set, name);
	if (!e) {
		snprintf(path, sizeof path, "buckets/%s", name);
		cn_ec_remove_sys_all(s->set, path);
		cn_obj__bucket_gone(s, name);
		cn_obj__versioning_forget(s, name);
	}
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier(s);
	return e;
}

static int bucket_cmp(const void *a, const void *b)
{
	return strcmp(((const cn_bucket_info *)a)->name, ((const cn_bucket_info *)b)->name);
}

cn_err cn_obj_list_buckets(cn_obj_store *s, cn_bucket_info **out, size_t *n)
{
	cn_drive_vol *v;
	size_t nv;
	*out = NULL;
	*n = 0;
	cn_err e = cn_ec_list_vols(s->set, &v, &nv);
	if (e)
		return e;
	cn_bucket_info *b = calloc(nv ? nv : 1, sizeof *b);
	if (!b) {
		free(v);
		return CN_ERR_NOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < nv; i++) {
		if (!cn_obj_bucket_name_valid(v[i].name))
			continue;
		snprintf(b[k].name, sizeof b[k].name, "%s", v[i].name);
		b[k].created_ms = bucket_created(s, v[i].name, v[i].created_ms);
		k++;
	}
	free(v);
	qsort(b, k, sizeof *b, bucket_cmp);
	*out = b;
	*n = k;
	return CN_OK;
}

/* --- object info ---------------------------------------------------------------------- */

void cn_obj_info_init(cn_obj_info *i)
{
	memset(i, 0, sizeof *i);
}

void cn_obj_info_fini(cn_obj_info *i)
{
	cn_kvs_free(i->meta, i->nmeta);
	free(i->parts);
	cn_obj_info_init(i);
}

const char *cn_obj_info_get(const cn_obj_info *i, const char *name)
{
	for (size_t k = 0; k < i->nmeta; k++)
		if (!strcmp(i->meta[k].name, name))
			return i->meta[k].value;
	return NULL;
}

/* Moves the record's fields into info (info's previous content is released). */
void cn_obj__info_from_meta(cn_obj_info *info, cn_ec_meta *m)
{
	cn_obj_info_fini(info);
	snprintf(info->etag, sizeof info->etag, "%s", m->etag);
	info->size = m->size;
	info->mtime_ms = m->mtime_ms;
	snprintf(info->storage_class, sizeof info->storage_class, "%s",
	         m->storage_class[0] ? m->storage_class : "STANDARD");
	snprintf(info->version_id, sizeof info->version_id, "%s", m->version_id);
	info->delete_marker = m->delete_marker;
	info->meta = m->meta;
	info->nmeta = m->nmeta;
	m->meta = NULL;
	m->nmeta = 0;
	/* a multipart version (ETag "hex-N") reports its parts */
	if (strchr(m->etag, '-') && m->nparts && (info->parts = calloc(m->nparts, sizeof *info->parts))) {
		for (size_t i = 0; i < m->nparts; i++) {
			info->parts[i].number = m->parts[i].number;
			info->parts[i].size = m->parts[i].size;
			snprintf(info->parts[i].etag, sizeof info->parts[i].etag, "%s", m->parts[i].etag);
		}
		info->nparts = m->nparts;
	}
}

cn_err cn_obj__copy_kvs(const cn_kv *src, size_t n, cn_kv **out)
{
	*out = NULL;
	if (n == 0)
		return CN_OK;
	cn_kv *kv = calloc(n, sizeof *kv);
	if (!kv)
		return CN_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		kv[i].name = strdup(src[i].name);
		kv[i].value = strdup(src[i].value);
		if (!kv[i].name || !kv[i].value) {
			cn_kvs_free(kv, i + 1);
			return CN_ERR_NOMEM;
		}
	}
	*out = kv;
	return CN_OK;
}

cn_err cn_obj__check_names(const char *bucket, const char *key)
{
	if (!cn_obj_bucket_name_valid(bucket))
		return CN_ERR_NO_BUCKET;
	return cn_obj_key_check(key, strlen(key));
}

/* --- put ---------------------------------------------------------------------------- */

cn_err cn_obj__recv(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                    const char *storage_class, cn_reader *body, int64_t expect, int64_t max,
                    bool allow_inline, unsigned char *buf, cn_ec_writer **w, int64_t *total,
                    unsigned char md5[16], bool *inline_data)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (!md)
		return CN_ERR_NOMEM;
	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	cn_err e = CN_OK;
	*w = NULL;
	*total = 0;
	*inline_data = false;
	for (bool first = true;; first = false) {
		ssize_t n = cn_read_full(body, buf, IO_BUF);
		if (n < 0) {
			e = (cn_err)-n;
			if (e <= CN_OK || e >= CN_ERR__COUNT)
				e = CN_ERR_ABORTED;
			break;
		}
		*total += n;
		if (expect >= 0 && *total > expect) {
			e = CN_ERR_INVALID;
			break;
		}
		if (*total > max) {
			e = CN_ERR_TOO_LARGE;
			break;
		}
		EVP_DigestUpdate(md, buf, (size_t)n);
		bool eof = (size_t)n < IO_BUF;
		if (allow_inline && first && eof && *total <= s->cfg.inline_max) {
			*inline_data = true;
			break;
		}
		if (!*w && (e = cn_ec_writer_new(set, bucket, key, storage_class, w)))
			break;
		if (n > 0 && (e = cn_ec_writer_write(*w, buf, (size_t)n)))
			break;
		if (eof)
			break;
	}
	if (!e && expect >= 0 && *total < expect)
		e = CN_ERR_CLOSED;
	if (!e)
		EVP_DigestFinal_ex(md, md5, NULL);
	EVP_MD_CTX_free(md);
	return e;
}

cn_err cn_obj_put(cn_obj_store *s, const char *bucket, const char *key, cn_reader *body,
                  const cn_put_opts *opts, cn_obj_info *out)
{
	static const cn_put_opts no_opts = { .size = -1 };
	if (!opts)
		opts = &no_opts;
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e;
	if ((e = cn_ec_stat_vol(s->set, bucket, NULL)))
		return e;
	unsigned char *buf = cn_obj__tls_buf(0);
	if (!buf)
		return CN_ERR_NOMEM;
	cn_ec_writer *w = NULL;
	cn_kv *add = NULL, *all = NULL;
	size_t nadd = 0;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	int64_t total = 0;
	bool inline_data = false;
	unsigned char md5[16];
	const char *sc = NULL;
	for (size_t i = 0; i < opts->nmeta; i++)
		if (!strcmp(opts->meta[i].name, "x-amz-storage-class"))
			sc = opts->meta[i].value;
	if ((e = cn_obj__recv(s, s->set, bucket, key, sc, body, opts->size, INT64_MAX, true, buf, &w,
	                      &total, md5, &inline_data)))
		goto fail;
	if (opts->seal && (e = opts->seal(opts->seal_ctx, md5, total, &add, &nadd)))
		goto fail;

	/* the record: the caller's headers then the seal's, borrowed (released below) */
	size_t nall = opts->nmeta + nadd;
	if (nall > CN_EC_MAX_META) {
		e = CN_ERR_TOO_LARGE;
		goto fail;
	}
	all = calloc(nall ? nall : 1, sizeof *all);
	if (!all) {
		e = CN_ERR_NOMEM;
		goto fail;
	}
	if (opts->nmeta)
		memcpy(all, opts->meta, opts->nmeta * sizeof *all);
	if (nadd)
		memcpy(all + opts->nmeta, add, nadd * sizeof *all);
	m.meta = all;
	m.nmeta = nall;
	m.size = total;
	m.mtime_ms = cn_now_ms();
	cn_hex_encode(md5, 16, m.etag);
	snprintf(m.storage_class, sizeof m.storage_class, "STANDARD");
	for (size_t i = 0; i < nall; i++)
		if (!strcmp(all[i].name, "x-amz-storage-class") && strlen(all[i].value) < sizeof m.storage_class)
			snprintf(m.storage_class, sizeof m.storage_class, "%s", all[i].value);
	if (inline_data) {
		m.has_inline = true;
		m.inline_data = buf;
		m.inline_len = (size_t)total;
	}

	cn_versioning v;
	if ((e = cn_obj__versioning(s, bucket, &v)))
		goto fail;
	cn_obj__vcommit vc;
	pthread_rwlock_rdlock(&s->ns_lock); /* C5 */
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl); /* C2 */
	e = cn_obj__vprep(s, bucket, key, v, &m, &vc);
	if (!e && inline_data)
		e = cn_ec_commit_inline(s->set, bucket, key, &m);
	else if (!e)
		e = cn_ec_writer_commit(w, bucket, key, &m);
	if (!e)
		cn_obj__vpost(s, bucket, key, &vc);
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier(s); /* C3 */
	cn_obj__vfinish(s, bucket, key, &vc, m.data_id, !e); /* C4 */
	if (e)
		goto fail;
	if (!e && out) {
		cn_obj_info_fini(out);
		snprintf(out->etag, sizeof out->etag, "%s", m.etag);
		out->size = m.size;
		out->mtime_ms = m.mtime_ms;
		snprintf(out->storage_class, sizeof out->storage_class, "%s", m.storage_class);
		snprintf(out->version_id, sizeof out->version_id, "%s", m.version_id);
		if ((e = cn_obj__copy_kvs(all, nall, &out->meta)) == CN_OK)
			out->nmeta = nall;
	}
fail:
	m.meta = NULL; /* borrowed */
	m.nmeta = 0;
	m.inline_data = NULL;
	cn_ec_meta_fini(&m);
	free(all);
	cn_kvs_free(add, nadd);
	cn_ec_writer_abort(w);
	return e;
}

/* --- stat, open, read ------------------------------------------------------------------ */

cn_err cn_obj_stat(cn_obj_store *s, const char *bucket, const char *key, cn_obj_info *out)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	e = cn_ec_read_meta(s->set, bucket, key, true, &m);
	if (!e && m.delete_marker)
		e = CN_ERR_NO_KEY; /* the latest version is a delete marker: out says so */
	if ((!e || m.delete_marker) && out)
		cn_obj__info_from_meta(out, &m);
	cn_ec_meta_fini(&m);
	return e;
}

static ssize_t stream_read(cn_reader *rd, void *buf, size_t len)
{
	cn_obj_reader *r = (cn_obj_reader *)rd;
	size_t got;
	if ((int64_t)len > r->end - r->pos)
		len = (size_t)(r->end - r->pos);
	if (len == 0)
		return 0;
	cn_err e = cn_ec_reader_read(r->r, r->pos, buf, len, &got);
	if (e)
		return -(ssize_t)e;
	r->pos += (int64_t)got;
	return (ssize_t)got;
}

cn_err cn_obj__reader_wrap(cn_obj_store *s, cn_ec_reader *er, cn_ec_meta *m, cn_obj_info *info,
                           cn_obj_reader **out)
{
	cn_obj_reader *r = calloc(1, sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	r->s = s;
	r->r = er;
	r->stream.read = stream_read;
	r->size = m->size;
	r->end = m->size;
	if (info)
		cn_obj__info_from_meta(info, m);
	*out = r;
	return CN_OK;
}

cn_err cn_obj_open(cn_obj_store *s, const char *bucket, const char *key, cn_obj_info *info,
                   cn_obj_reader **out)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *er;
	e = cn_ec_open(s->set, bucket, key, &m, &er);
	if (!e && m.delete_marker) {
		cn_ec_reader_close(er);
		if (info)
			cn_obj__info_from_meta(info, &m);
		cn_ec_meta_fini(&m);
		return CN_ERR_NO_KEY; /* the latest version is a delete marker: info says so */
	}
	if (!e && (e = cn_obj__reader_wrap(s, er, &m, info, out)))
		cn_ec_reader_close(er);
	cn_ec_meta_fini(&m);
	return e;
}

cn_err cn_obj_read(cn_obj_reader *r, int64_t off, int64_t len, cn_writer *w)
{
	if (off < 0 || len < 0 || off > r->size || len > r->size - off)
		return CN_ERR_INVALID;
	int fd;
	int64_t fd_off, avail;
	unsigned char *buf = NULL;
	while (len > 0) {
		if (w->send_fd && cn_ec_reader_plain_fd(r->r, off, &fd, &fd_off, &avail)) {
			int64_t n = avail < len ? avail : len;
			cn_err e = w->send_fd(w, fd, fd_off, n);
			if (e)
				return e;
			off += n;
			len -= n;
			continue;
		}
		if (!buf && !(buf = cn_obj__tls_buf(1)))
			return CN_ERR_NOMEM;
		size_t want = len > (int64_t)IO_BUF ? IO_BUF : (size_t)len, got;
		cn_err e = cn_ec_reader_read(r->r, off, buf, want, &got);
		if (!e && got != want)
			e = CN_ERR_CORRUPT;
		if (!e)
			e = w->write(w, buf, got);
		if (e)
			return e;
		off += (int64_t)got;
		len -= (int64_t)got;
	}
	return CN_OK;
}

cn_reader *cn_obj_reader_stream(cn_obj_reader *r)
{
	r->pos = 0;
	r->end = r->size;
	return &r->stream;
}

cn_err cn_obj_reader_stream_range(cn_obj_reader *r, int64_t off, int64_t len, cn_reader **out)
{
	if (off < 0 || len < 0 || off > r->size || len > r->size - off)
		return CN_ERR_INVALID;
	r->pos = off;
	r->end = off + len;
	*out = &r->stream;
	return CN_OK;
}

void cn_obj_reader_close(cn_obj_reader *r)
{
	if (!r)
		return;
	if (cn_ec_reader_degraded(r->r)) /* the read rebuilt data: heal it in the background */
		cn_obj__heal_enqueue(r->s, r->r);
	cn_ec_reader_close(r->r);
	free(r);
}

/* --- delete --------------------------------------------------------------------------- */

cn_err cn_obj_delete(cn_obj_store *s, const char *bucket, const char *key)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	cn_ec_meta old;
	cn_ec_meta_init(&old);
	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl);
	e = cn_ec_read_meta(s->set, bucket, key, true, &old);
	if (e == CN_ERR_CORRUPT) {
		cn_log(CN_LOG_WARN, NULL, "object: delete %s/%s: removing a corrupt record; its data "
		       "folder stays", bucket, key);
		e = CN_OK;
	}
	if (!e)
		e = cn_ec_delete_meta(s->set, bucket, key);
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier(s);
	if (!e) /* C4: data and empty parents only after the record's removal is durable */
		cn_ec_delete_data(s->set, bucket, key, old.data_id[0] ? old.data_id : NULL);
	cn_ec_meta_fini(&old);
	return e;
}

/* --- listing ---------------------------------------------------------------------------- */

typedef struct list_ctx {
	cn_list_result *out;
	size_t max, cap_obj, cap_pre;
	size_t plen;
	const char *delim; /* generic (non-"/") delimiter or NULL */
	size_t dlen;
	const char *after;
	size_t alen;
	char *last;        /* last returned key or prefix (borrowed from out) */
} list_ctx;

static cn_err push_prefix(list_ctx *c, const char *p, size_t len)
{
	cn_list_result *o = c->out;
	if (o->nprefixes == c->cap_pre) {
		size_t nc = c->cap_pre ? c->cap_pre * 2 : 16;
		char **np = realloc(o->prefixes, nc * sizeof *np);
		if (!np)
			return CN_ERR_NOMEM;
		o->prefixes = np;
		c->cap_pre = nc;
	}
	char *d = strndup(p, len);
	if (!d)
		return CN_ERR_NOMEM;
	o->prefixes[o->nprefixes++] = d;
	c->last = d;
	return CN_OK;
}

static cn_err list_cb(void *vctx, const char *key, size_t keylen, bool is_prefix, const cn_ec_meta *m)
{
	list_ctx *c = vctx;
	cn_list_result *o = c->out;
	size_t plen = keylen;
	if (!is_prefix && m->delete_marker)
		return CN_OK; /* a key whose latest version is a delete marker is not listed */
	if (!is_prefix && c->delim && keylen > c->plen) {
		const char *d = memmem(key + c->plen, keylen - c->plen, c->delim, c->dlen);
		if (d) {
			plen = (size_t)(d - key) + c->dlen;
			is_prefix = true;
			/* a common prefix at or before the marker was returned on an earlier page */
			int cmp = memcmp(key, c->after, plen < c->alen ? plen : c->alen);
			if (cmp < 0 || (cmp == 0 && plen <= c->alen))
				return CN_OK;
			if (c->last && o->nprefixes && c->last == o->prefixes[o->nprefixes - 1] &&
			    strlen(c->last) == plen && !memcmp(c->last, key, plen))
				return CN_OK;
		}
	}
	if (o->nobjects + o->nprefixes == c->max) {
		o->truncated = true;
		return LIST_STOP;
	}
	if (is_prefix)
		return push_prefix(c, key, plen);
	if (o->nobjects == c->cap_obj) {
		size_t nc = c->cap_obj ? c->cap_obj * 2 : 16;
		cn_list_entry *ne = realloc(o->objects, nc * sizeof *ne);
		if (!ne)
			return CN_ERR_NOMEM;
		o->objects = ne;
		c->cap_obj = nc;
	}
	cn_list_entry *le = &o->objects[o->nobjects];
	memset(le, 0, sizeof *le);
	if (!(le->key = strndup(key, keylen)))
		return CN_ERR_NOMEM;
	snprintf(le->etag, sizeof le->etag, "%s", m->etag);
	le->size = m->size;
	le->mtime_ms = m->mtime_ms;
	snprintf(le->storage_class, sizeof le->storage_class, "%s",
	         m->storage_class[0] ? m->storage_class : "STANDARD");
	o->nobjects++;
	c->last = le->key;
	return CN_OK;
}

void cn_list_result_fini(cn_list_result *r)
{
	for (size_t i = 0; i < r->nobjects; i++)
		free(r->objects[i].key);
	free(r->objects);
	for (size_t i = 0; i < r->nprefixes; i++)
		free(r->prefixes[i]);
	free(r->prefixes);
	free(r->next_marker);
	memset(r, 0, sizeof *r);
}

cn_err cn_obj_list(cn_obj_store *s, const char *bucket, const char *prefix, const char *delimiter,
                   const char *after, size_t max_keys, cn_list_result *out)
{
	memset(out, 0, sizeof *out);
	if (!cn_obj_bucket_name_valid(bucket))
		return CN_ERR_NO_BUCKET;
	if (!prefix)
		prefix = "";
	if (!after)
		after = "";
	if (strlen(prefix) > 1024 || strlen(after) > 1024 || (delimiter && strlen(delimiter) > 1024))
		return CN_ERR_INVALID;
	if (max_keys > 1000)
		max_keys = 1000;
	if (max_keys == 0)
		return cn_ec_stat_vol(s->set, bucket, NULL);
	bool slash = delimiter && !strcmp(delimiter, "/");
	list_ctx c = { .out = out, .max = max_keys, .plen = strlen(prefix), .after = after,
	               .alen = strlen(after) };
	if (delimiter && delimiter[0] && !slash) {
		c.delim = delimiter;
		c.dlen = strlen(delimiter);
	}
	cn_err e = cn_ec_walk(s->set, bucket, prefix, after[0] ? after : NULL, slash, list_cb, &c);
	if (e == LIST_STOP)
		e = CN_OK;
	if (!e && out->truncated && c.last && !(out->next_marker = strdup(c.last)))
		e = CN_ERR_NOMEM;
	if (e)
		cn_list_result_fini(out);
	return e;
}
