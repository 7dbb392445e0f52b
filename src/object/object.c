/* object.c: single objects — put (the body streams through MD5 into one bounded
 * per-thread buffer, or straight into the erasure writer's blocks, then commits), stat,
 * open and read (through a reader that pins its key, OBJ-6), and delete; and the object-info
 * helpers that multipart.c and versions.c share. Commits go through the key's erasure set
 * (place.c) and are made durable by its group-commit barrier before any success returns
 * (object.h contract 1).
 *
 * Commit order (numbered invariants, cited below and by the other files of the module;
 * OBJ-6 and OBJ-7 are in commit.c):
 *  OBJ-1. Data is written under the drive's tmp area; nothing is visible before rename_data.
 *  OBJ-2. Commits of one key are serialized by a striped mutex keyed by hash(bucket/key).
 *      Rename atomicity alone would keep the RECORD whole, but the previous version's data
 *      folder must be known exactly (read under the lock) so that the loser of a race never
 *      deletes the winner's data; with the lock each commit reads the record it replaces.
 *      Puts of one key thus leave one whole winner (the last commit).
 *  OBJ-3. The barrier (cn_ec_sync) runs after the renames and before CN_OK; the lock is not
 *      held across it, so concurrent commits share one flush (group commit).
 *  OBJ-4. The replaced data folder is removed only after the barrier: a crash before the new
 *      record is durable then still finds the old record's data.
 *  OBJ-5. Bucket deletion takes the namespace lock exclusively; commits take it shared, so a
 *      put never lands in a bucket folder that is being removed. */
#include "object/object_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_MIN (32 * 1024)

struct cn_obj_reader {
	cn_reader stream;  /* first: cn_obj_reader_stream casts back */
	cn_obj_store *s;
	cn_ec_reader *r;   /* NULL until attached */
	int64_t size;
	int64_t pos, end;  /* the stream's position and end */
	cn_obj__pin pin;   /* OBJ-6, while pinned */
	bool pinned;
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

/* Slot 0: put bodies; slot 1: reads. OBJ_IO_BUF bytes each. */
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
		t->b[slot] = malloc(OBJ_IO_BUF);
	return t->b[slot];
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
	cn_strlcpy(info->etag, m->etag, sizeof info->etag);
	info->size = m->size;
	info->mtime_ms = m->mtime_ms;
	cn_strlcpy(info->storage_class, m->storage_class[0] ? m->storage_class : "STANDARD",
	           sizeof info->storage_class);
	cn_strlcpy(info->version_id, m->version_id, sizeof info->version_id);
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
			cn_strlcpy(info->parts[i].etag, m->parts[i].etag, sizeof info->parts[i].etag);
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

/* --- put ---------------------------------------------------------------------------- */

cn_err cn_obj__recv(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                    const char *storage_class, cn_reader *body, int64_t expect, int64_t max,
                    bool allow_inline, unsigned char *buf, cn_ec_writer **w, int64_t *total,
                    unsigned char md5[16], bool *inline_data)
{
	cn_md5 md;
	cn_md5_init(&md);
	cn_err e = CN_OK;
	*w = NULL;
	*total = 0;
	*inline_data = false;
	/* The first read (inline_max + 1 bytes) decides whether the body is inline; past it,
	 * the body is read straight into the erasure writer's block (no copy) where the set
	 * has one. A PUT refused after it (503, no write quorum) leaves most of its body
	 * unread: the HTTP layer then closes with a drain (net.h CN_CONN_DRAIN_CLOSE), so the
	 * client still reads the 503 (no larger first read is needed for that). */
	if (!allow_inline && (e = cn_ec_writer_new(set, bucket, key, storage_class, w)))
		return e;
	for (bool first = true;; first = false) {
		unsigned char *dst = buf;
		size_t cap = OBJ_IO_BUF;
		if (allow_inline && first && (size_t)s->cfg.inline_max < cap)
			cap = (size_t)s->cfg.inline_max + 1;
		unsigned char *wp;
		size_t space = *w ? cn_ec_writer_space(*w, &wp) : 0;
		if (space) {
			dst = wp;
			cap = space;
		}
		ssize_t n = cn_read_full(body, dst, cap);
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
		cn_md5_update(&md, dst, (size_t)n);
		bool eof = (size_t)n < cap;
		if (allow_inline && first && eof && *total <= s->cfg.inline_max) {
			*inline_data = true;
			break;
		}
		if (!*w && (e = cn_ec_writer_new(set, bucket, key, storage_class, w)))
			break;
		if (n > 0 && (e = dst == buf ? cn_ec_writer_write(*w, buf, (size_t)n)
		                             : cn_ec_writer_fill(*w, (size_t)n)))
			break;
		if (eof)
			break;
	}
	if (!e && expect >= 0 && *total < expect)
		e = CN_ERR_CLOSED;
	if (!e)
		cn_md5_final(&md, md5);
	return e;
}

/* The record's headers: the caller's then the seal's (add), borrowed into *all (free()
 * it; the names and values stay theirs), and the storage class they name. */
static cn_err put_meta(cn_ec_meta *m, const cn_put_opts *opts, const cn_kv *add, size_t nadd,
                       cn_kv **all)
{
	size_t nall = opts->nmeta + nadd;
	if (nall > CN_EC_MAX_META)
		return CN_ERR_TOO_LARGE;
	*all = calloc(nall ? nall : 1, sizeof **all);
	if (!*all)
		return CN_ERR_NOMEM;
	if (opts->nmeta)
		memcpy(*all, opts->meta, opts->nmeta * sizeof **all);
	if (nadd)
		memcpy(*all + opts->nmeta, add, nadd * sizeof **all);
	m->meta = *all;
	m->nmeta = nall;
	snprintf(m->storage_class, sizeof m->storage_class, "STANDARD");
	for (size_t i = 0; i < nall; i++)
		if (!strcmp(m->meta[i].name, "x-amz-storage-class") &&
		    strlen(m->meta[i].value) < sizeof m->storage_class)
			cn_strlcpy(m->storage_class, m->meta[i].value, sizeof m->storage_class);
	return CN_OK;
}

/* Commits m (its inline data, or w's) as the new version of bucket/key under the bucket's
 * versioning state (OBJ-5, OBJ-2), makes it durable (OBJ-3), then lets what it replaced go
 * (OBJ-4). */
static cn_err put_commit(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                         cn_ec_writer *w, cn_ec_meta *m)
{
	cn_versioning v;
	cn_err e = cn_obj__versioning(s, bucket, &v);
	if (e)
		return e;
	cn_obj__vcommit vc;
	pthread_rwlock_rdlock(&s->ns_lock); /* OBJ-5 */
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl); /* OBJ-2 */
	e = cn_obj__vprep(s, set, bucket, key, v, m, &vc);
	if (!e && m->has_inline)
		e = cn_ec_commit_inline(set, bucket, key, m);
	else if (!e)
		e = cn_ec_writer_commit(w, bucket, key, m);
	if (!e)
		cn_obj__vpost(s, bucket, key, &vc);
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier_set(s, set); /* OBJ-3 */
	cn_obj__vfinish(s, bucket, key, &vc, m->data_id, !e); /* OBJ-4 */
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
	cn_ec_set *set;
	if ((e = cn_obj__put_set(s, bucket, key, &set)))
		return e;
	if ((e = cn_ec_stat_vol(set, bucket, NULL)))
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
	if ((e = cn_obj__recv(s, set, bucket, key, sc, body, opts->size, INT64_MAX, true, buf, &w,
	                      &total, md5, &inline_data)))
		goto fail;
	if (opts->seal && (e = opts->seal(opts->seal_ctx, md5, total, &add, &nadd)))
		goto fail;
	if ((e = put_meta(&m, opts, add, nadd, &all)))
		goto fail;
	m.size = total;
	m.mtime_ms = cn_now_ms();
	cn_hex_encode(md5, 16, m.etag);
	if (inline_data) {
		m.has_inline = true;
		m.inline_data = buf;
		m.inline_len = (size_t)total;
	}
	if ((e = put_commit(s, set, bucket, key, w, &m)))
		goto fail;
	if (out) {
		cn_obj_info_fini(out);
		cn_strlcpy(out->etag, m.etag, sizeof out->etag);
		out->size = m.size;
		out->mtime_ms = m.mtime_ms;
		cn_strlcpy(out->storage_class, m.storage_class, sizeof out->storage_class);
		cn_strlcpy(out->version_id, m.version_id, sizeof out->version_id);
		if ((e = cn_obj__copy_kvs(m.meta, m.nmeta, &out->meta)) == CN_OK)
			out->nmeta = m.nmeta;
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
	e = cn_ec_read_meta(cn_obj__key_set(s, bucket, key), bucket, key, true, &m);
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

cn_err cn_obj__reader_new(cn_obj_store *s, const char *bucket, const char *key,
                          cn_obj_reader **out)
{
	cn_obj_reader *r = calloc(1, sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	r->s = s;
	r->stream.read = stream_read;
	cn_obj__pin_key(s, bucket, key, &r->pin);
	r->pinned = true;
	*out = r;
	return CN_OK;
}

void cn_obj__reader_attach(cn_obj_reader *r, cn_ec_reader *er, cn_ec_meta *m, cn_obj_info *info)
{
	r->r = er;
	r->size = m->size;
	r->end = m->size;
	if (!m->data_id[0] && r->pinned) { /* inline: no folder to keep */
		cn_obj__unpin(r->s, &r->pin);
		r->pinned = false;
	}
	if (info)
		cn_obj__info_from_meta(info, m);
}

cn_err cn_obj_open(cn_obj_store *s, const char *bucket, const char *key, cn_obj_info *info,
                   cn_obj_reader **out)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	cn_obj_reader *r;
	if ((e = cn_obj__reader_new(s, bucket, key, &r)))
		return e;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *er;
	e = cn_ec_open(cn_obj__key_set(s, bucket, key), bucket, key, &m, &er); /* after the pin */
	if (!e && m.delete_marker) {
		cn_ec_reader_close(er);
		if (info)
			cn_obj__info_from_meta(info, &m);
		e = CN_ERR_NO_KEY; /* the latest version is a delete marker: info says so */
	} else if (!e) {
		cn_obj__reader_attach(r, er, &m, info);
		*out = r;
		r = NULL;
	}
	cn_obj_reader_close(r);
	cn_ec_meta_fini(&m);
	return e;
}

void cn_obj_no_io(bool on)
{
	cn_ec_no_io(on);
}

bool cn_obj_reader_in_records(const cn_obj_reader *r)
{
	return r->r && cn_ec_reader_in_records(r->r);
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
		size_t want = len > (int64_t)OBJ_IO_BUF ? OBJ_IO_BUF : (size_t)len, got;
		if (w->writev) { /* a block's data shards in one write: no copy, one syscall */
			struct iovec iov[CN_WRITEV_MAX];
			int niov;
			cn_err e = cn_ec_reader_viewv(r->r, off, want, iov, CN_WRITEV_MAX, &niov, &got);
			if (e)
				return e;
			if (niov) {
				if ((e = w->writev(w, iov, niov)))
					return e;
				off += (int64_t)got;
				len -= (int64_t)got;
				continue;
			}
		}
		const void *p;
		cn_err e = cn_ec_reader_view(r->r, off, want, &p, &got);
		/* decoded shard bytes sent from where they are, no copy; short pieces (a small
		 * object's shards on many drives) are gathered by a copy instead, one write each
		 * OBJ_IO_BUF rather than one per shard */
		if (!e && p && (got >= VIEW_MIN || got == (size_t)len)) {
			if ((e = w->write(w, p, got)))
				return e;
			off += (int64_t)got;
			len -= (int64_t)got;
			continue;
		}
		if (e)
			return e;
		if (!buf && !(buf = cn_obj__tls_buf(1)))
			return CN_ERR_NOMEM;
		e = cn_ec_reader_read(r->r, off, buf, want, &got);
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
	if (r->r && cn_ec_reader_degraded(r->r)) /* the read rebuilt data: heal it */
		cn_obj__heal_enqueue(r->s, r->r);
	cn_ec_reader_close(r->r);
	if (r->pinned)
		cn_obj__unpin(r->s, &r->pin); /* after its files are closed; may run removals (OBJ-6) */
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
	cn_ec_set *set = cn_obj__key_set(s, bucket, key);
	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl);
	e = cn_ec_read_meta(set, bucket, key, true, &old);
	if (e == CN_ERR_CORRUPT) {
		cn_log(CN_LOG_WARN, NULL, "object: delete %s/%s: removing a corrupt record; its data "
		       "folder stays", bucket, key);
		e = CN_OK;
	}
	if (!e)
		e = cn_ec_delete_meta(set, bucket, key);
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier_set(s, set);
	if (!e) /* OBJ-4: data and empty parents only after the record's removal is durable */
		cn_obj__drop_data(s, set, bucket, key, old.data_id);
	cn_ec_meta_fini(&old);
	return e;
}
