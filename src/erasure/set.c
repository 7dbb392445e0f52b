/* erasure/set: one erasure set over the drive API (erasure.h). Today the set is a single
 * drive with K=1, M=0: the object's bytes are the one shard, stored as
 * "<data id>/part.1" or inline in the record, and quorum is that drive's verdict. The
 * shape (per-drive loops reduced by reduce_quorum, per-drive records carrying the shard
 * index and distribution) is what issue 3 fills with ISA-L Reed-Solomon and many drives. */
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART_NAME "part.1"
#define OPEN_RETRIES 8

struct cn_ec_set {
	cn_drive *drives[CN_EC_MAX_DRIVES];
	size_t n;
	int k, m;
	cn_rcache *rc;  /* record cache (erasure_int.h), NULL when disabled */
};

struct cn_ec_writer {
	cn_ec_set *s;
	char tmp_id[33];
	char data_id[CN_DRIVE_ID_MAX + 1];
	cn_drive_file *f[CN_EC_MAX_DRIVES];
	int64_t written;
};

struct cn_ec_reader {
	cn_ec_set *s;
	int64_t size;
	unsigned char *inline_data; /* owned; NULL when the data is in files */
	cn_drive_rfile *f;          /* the open part file (index cur) */
	size_t cur;
	size_t nparts;              /* part files part.1 .. part.<nparts> */
	int64_t *ends;              /* owned: cumulative end offset of each part */
	char *vol, *key;            /* owned, for opening later parts */
	char data_id[CN_DRIVE_ID_MAX + 1];
};

/* Reduces per-drive results to one verdict: CN_OK when at least quorum drives succeeded,
 * otherwise the most frequent error (CN_ERR_QUORUM when errors disagree evenly). With one
 * drive this is that drive's result. */
static cn_err reduce_quorum(const cn_err *errs, size_t n, size_t quorum)
{
	size_t ok = 0;
	for (size_t i = 0; i < n; i++)
		ok += errs[i] == CN_OK;
	if (ok >= quorum)
		return CN_OK;
	cn_err best = CN_ERR_QUORUM;
	size_t best_n = 0;
	for (size_t i = 0; i < n; i++) {
		if (errs[i] == CN_OK)
			continue;
		size_t c = 0;
		for (size_t j = 0; j < n; j++)
			c += errs[j] == errs[i];
		if (c > best_n) {
			best = errs[i];
			best_n = c;
		}
	}
	return best;
}

static size_t write_quorum(const cn_ec_set *s)
{
	return (size_t)s->k + (s->k == s->m);
}

cn_err cn_ec_set_new(cn_drive **drives, size_t ndrives, int k, int m, cn_ec_set **out)
{
	if (ndrives != 1 || k != 1 || m != 0)
		return CN_ERR_UNSUPPORTED;
	cn_ec_set *s = calloc(1, sizeof *s);
	if (!s)
		return CN_ERR_NOMEM;
	memcpy(s->drives, drives, ndrives * sizeof *drives);
	s->n = ndrives;
	s->k = k;
	s->m = m;
	{
		/* CAIRN_RECORD_CACHE_MB (default 64; 0 disables): records up to 160 KiB */
		const char *mb = getenv("CAIRN_RECORD_CACHE_MB");
		size_t budget = (mb ? (size_t)strtoul(mb, NULL, 10) : 64) << 20;
		if (cn_rcache_new(budget, 160 * 1024, &s->rc) != CN_OK)
			s->rc = NULL;
	}
	*out = s;
	return CN_OK;
}

void cn_ec_set_free(cn_ec_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		cn_drive_close(s->drives[i]);
	cn_rcache_free(s->rc);
	free(s);
}

size_t cn_ec_set_ndrives(const cn_ec_set *s) { return s->n; }

bool cn_ec_set_online(cn_ec_set *s)
{
	size_t ok = 0;
	for (size_t i = 0; i < s->n; i++) {
		cn_drive_info di;
		if (s->drives[i]->ops->info(s->drives[i], &di) == CN_OK && di.online)
			ok++;
	}
	return ok >= write_quorum(s);
}

/* --- system files and volumes ------------------------------------------------------ */

cn_err cn_ec_read_sys(cn_ec_set *s, size_t drive, const char *name, size_t max, cn_buf *out)
{
	CN_ASSERT(drive < s->n);
	return s->drives[drive]->ops->read_sys(s->drives[drive], name, max, out);
}

cn_err cn_ec_write_sys(cn_ec_set *s, size_t drive, const char *name, const void *p, size_t len)
{
	CN_ASSERT(drive < s->n);
	return s->drives[drive]->ops->write_sys(s->drives[drive], name, p, len);
}

cn_err cn_ec_write_sys_all(cn_ec_set *s, const char *name, const void *p, size_t len)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->write_sys(s->drives[i], name, p, len);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_remove_sys_all(cn_ec_set *s, const char *name)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = s->drives[i]->ops->remove_sys(s->drives[i], name);
		if (errs[i] == CN_ERR_NOT_FOUND)
			errs[i] = CN_OK;
	}
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_make_vol(cn_ec_set *s, const char *vol)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->make_vol(s->drives[i], vol);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_stat_vol(cn_ec_set *s, const char *vol, int64_t *mtime_ms)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->stat_vol(s->drives[i], vol, i == 0 ? mtime_ms : NULL);
	return reduce_quorum(errs, s->n, (size_t)s->k);
}

cn_err cn_ec_delete_vol(cn_ec_set *s, const char *vol)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->delete_vol(s->drives[i], vol);
	cn_rcache_clear(s->rc);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_list_vols(cn_ec_set *s, cn_drive_vol **out, size_t *n)
{
	return s->drives[0]->ops->list_vols(s->drives[0], out, n);
}

cn_err cn_ec_sync(cn_ec_set *s)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = cn_drive_sync(s->drives[i]);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

/* --- writing ----------------------------------------------------------------------- */

cn_err cn_ec_writer_new(cn_ec_set *s, cn_ec_writer **out)
{
	cn_ec_writer *w = calloc(1, sizeof *w);
	if (!w)
		return CN_ERR_NOMEM;
	w->s = s;
	char id[33];
	cn_drive_random_id(w->tmp_id);
	cn_drive_random_id(id);
	snprintf(w->data_id, sizeof w->data_id, "%%d.%s", id);
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->create_file(s->drives[i], w->tmp_id, w->data_id,
		                                         PART_NAME, &w->f[i]);
	cn_err e = reduce_quorum(errs, s->n, write_quorum(s));
	if (e) {
		cn_ec_writer_abort(w);
		return e;
	}
	*out = w;
	return CN_OK;
}

cn_err cn_ec_writer_write(cn_ec_writer *w, const void *p, size_t len)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < w->s->n; i++)
		errs[i] = w->f[i] ? w->s->drives[i]->ops->file_write(w->f[i], p, len) : CN_ERR_OFFLINE;
	w->written += (int64_t)len;
	return reduce_quorum(errs, w->s->n, write_quorum(w->s));
}

static void fill_erasure(cn_ec_set *s, cn_ec_meta *m, size_t drive)
{
	m->k = (uint8_t)s->k;
	m->m = (uint8_t)s->m;
	m->block_size = CN_EC_BLOCK_SIZE;
	m->index = (uint8_t)drive;
	m->ndist = (uint8_t)(s->k + s->m);
	for (size_t i = 0; i < m->ndist; i++)
		m->dist[i] = (uint8_t)i;
}

static cn_err commit(cn_ec_set *s, const char *tmp_id, const char *data_id, const char *vol,
                     const char *key, cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	cn_ec_part one = { 1, m->size, "" };
	bool added_part = false;
	if (m->nparts == 0) {
		m->parts = &one;
		m->nparts = 1;
		added_part = true;
	}
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t i = 0; i < s->n; i++) {
		rec.len = 0;
		fill_erasure(s, m, i);
		errs[i] = cn_ec_meta_encode(m, &rec);
		if (!errs[i])
			errs[i] = s->drives[i]->ops->rename_data(s->drives[i], tmp_id, data_id, vol, key,
			                                         rec.p, rec.len);
	}
	cn_rcache_invalidate(s->rc, vol, key); /* R1: after the renames */
	if (added_part) {
		m->parts = NULL;
		m->nparts = 0;
	}
	cn_buf_fini(&rec);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_writer_commit(cn_ec_writer *w, const char *vol, const char *key, cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < w->s->n; i++) {
		errs[i] = w->f[i] ? w->s->drives[i]->ops->file_close(w->f[i], true) : CN_ERR_OFFLINE;
		w->f[i] = NULL;
	}
	cn_err e = reduce_quorum(errs, w->s->n, write_quorum(w->s));
	if (e)
		return e;
	if (m->size != w->written)
		return CN_ERR_INVALID;
	m->has_inline = false;
	snprintf(m->data_id, sizeof m->data_id, "%s", w->data_id);
	return commit(w->s, w->tmp_id, w->data_id, vol, key, m);
}

void cn_ec_writer_abort(cn_ec_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->s->n; i++) {
		if (w->f[i])
			w->s->drives[i]->ops->file_close(w->f[i], false);
		w->s->drives[i]->ops->abort_tmp(w->s->drives[i], w->tmp_id);
	}
	free(w);
}

cn_err cn_ec_commit_inline(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m)
{
	char tmp_id[33];
	if (!m->has_inline || m->inline_len != (size_t)m->size || m->inline_len > CN_EC_INLINE_CAP)
		return CN_ERR_INVALID;
	m->data_id[0] = 0;
	cn_drive_random_id(tmp_id);
	return commit(s, tmp_id, NULL, vol, key, m);
}

/* --- records ----------------------------------------------------------------------- */

static cn_err read_meta_drive(cn_ec_set *s, size_t i, const char *vol, const char *key,
                              bool skip_inline, cn_ec_meta *m)
{
	cn_buf rec;
	cn_buf_init(&rec);
	uint64_t gen = 0;
	bool cached = s->n == 1 && cn_rcache_get(s->rc, vol, key, &rec, &gen);
	cn_err e = cached ? CN_OK
	                  : s->drives[i]->ops->read_meta(s->drives[i], vol, key, CN_EC_RECORD_MAX, &rec);
	if (e == CN_ERR_TOO_LARGE)
		e = CN_ERR_CORRUPT;
	if (!e) {
		e = cn_ec_meta_decode(rec.p, rec.len, skip_inline, m);
		if (!e && !cached && s->n == 1)
			cn_rcache_put(s->rc, vol, key, rec.p, rec.len, gen); /* R2 */
		if (e == CN_ERR_CORRUPT)
			cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: corrupt record of %s/%s",
			       s->drives[i]->endpoint, vol, key);
	}
	if (e == CN_ERR_NO_KEY && s->drives[i]->ops->stat_vol(s->drives[i], vol, NULL) == CN_ERR_NO_BUCKET)
		e = CN_ERR_NO_BUCKET;
	cn_buf_fini(&rec);
	return e;
}

cn_err cn_ec_read_meta(cn_ec_set *s, const char *vol, const char *key, bool skip_inline,
                       cn_ec_meta *m)
{
	return read_meta_drive(s, 0, vol, key, skip_inline, m);
}

cn_err cn_ec_delete_meta(cn_ec_set *s, const char *vol, const char *key)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->delete_meta(s->drives[i], vol, key);
	cn_rcache_invalidate(s->rc, vol, key); /* R1 */
	return reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_delete_data(cn_ec_set *s, const char *vol, const char *key, const char *data_id)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->delete_data(s->drives[i], vol, key,
		                                         data_id && data_id[0] ? data_id : NULL);
	return reduce_quorum(errs, s->n, s->n / 2 + 1);
}

/* --- reading ----------------------------------------------------------------------- */

/* Opens part file idx (0-based) of the reader's version as r->f, checking its size. */
static cn_err open_part(cn_ec_reader *r, size_t idx)
{
	cn_ec_set *s = r->s;
	char name[32];
	snprintf(name, sizeof name, "part.%zu", idx + 1);
	if (r->f) {
		s->drives[0]->ops->rfile_close(r->f);
		r->f = NULL;
	}
	cn_err e = s->drives[0]->ops->open_data(s->drives[0], r->vol, r->key, r->data_id, name, &r->f);
	if (e)
		return e;
	r->cur = idx;
	int64_t want = r->ends[idx] - (idx ? r->ends[idx - 1] : 0);
	if (s->drives[0]->ops->rfile_size(r->f) != want) {
		cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: %s/%s: %s size %lld != %lld",
		       s->drives[0]->endpoint, r->vol, r->key, name,
		       (long long)s->drives[0]->ops->rfile_size(r->f), (long long)want);
		s->drives[0]->ops->rfile_close(r->f);
		r->f = NULL;
		return CN_ERR_CORRUPT;
	}
	return CN_OK;
}

/* The part holding byte off (off < size). */
static size_t part_of(const cn_ec_reader *r, int64_t off)
{
	size_t lo = 0, hi = r->nparts - 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->ends[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

cn_err cn_ec_open(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m, cn_ec_reader **out)
{
	return cn_ec_open_version(s, vol, key, NULL, m, out);
}

cn_err cn_ec_open_version(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                          cn_ec_meta *m, cn_ec_reader **out)
{
	cn_ec_reader *r = calloc(1, sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	r->s = s;
	r->vol = strdup(vol);
	r->key = strdup(key);
	cn_err e = r->vol && r->key ? CN_OK : CN_ERR_NOMEM;
	for (int tries = 0; !e && tries < OPEN_RETRIES; tries++) {
		cn_ec_meta_fini(m);
		if ((e = vid ? cn_ec_version_read(s, vol, key, vid, false, m)
		             : read_meta_drive(s, 0, vol, key, false, m)))
			break;
		r->size = m->size;
		if (m->has_inline) {
			r->inline_data = m->inline_data;
			m->inline_data = NULL;
			break;
		}
		/* parts: a single PUT has one (part.1); a record without parts is one too */
		size_t np = m->nparts ? m->nparts : 1;
		free(r->ends);
		if (!(r->ends = malloc(np * sizeof *r->ends))) {
			e = CN_ERR_NOMEM;
			break;
		}
		int64_t end = 0;
		for (size_t i = 0; i < np; i++) {
			end += m->nparts ? m->parts[i].size : m->size;
			r->ends[i] = end;
		}
		if (end != m->size) {
			cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: %s/%s: parts add up to %lld, not %lld",
			       s->drives[0]->endpoint, vol, key, (long long)end, (long long)m->size);
			e = CN_ERR_CORRUPT;
			break;
		}
		r->nparts = np;
		snprintf(r->data_id, sizeof r->data_id, "%s", m->data_id);
		e = open_part(r, 0);
		if (e == CN_ERR_NO_KEY)
			continue; /* replaced between the record and the data: read the new record */
		break;
	}
	if (e) {
		cn_ec_reader_close(r);
		cn_ec_meta_fini(m);
		return e;
	}
	*out = r;
	return CN_OK;
}

cn_err cn_ec_reader_read(cn_ec_reader *r, int64_t off, void *buf, size_t len, size_t *got)
{
	*got = 0;
	if (off < 0 || off >= r->size)
		return CN_OK;
	if ((int64_t)len > r->size - off)
		len = (size_t)(r->size - off);
	if (!r->nparts) {
		memcpy(buf, r->inline_data + off, len);
		*got = len;
		return CN_OK;
	}
	while (*got < len) {
		size_t idx = part_of(r, off);
		cn_err e = CN_OK;
		if (idx != r->cur || !r->f) {
			e = open_part(r, idx);
			if (e == CN_ERR_NO_KEY) {
				cn_log(CN_LOG_WARN, NULL, "erasure: %s/%s: replaced while being read", r->vol, r->key);
				e = CN_ERR_IO;
			}
			if (e)
				return e;
		}
		int64_t start = idx ? r->ends[idx - 1] : 0;
		size_t want = len - *got;
		if ((int64_t)want > r->ends[idx] - off)
			want = (size_t)(r->ends[idx] - off);
		size_t n = 0;
		e = r->s->drives[0]->ops->rfile_read(r->f, off - start, (char *)buf + *got, want, &n);
		if (!e && n < want) {
			cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: shard shorter than its record",
			       r->s->drives[0]->endpoint);
			e = CN_ERR_CORRUPT;
		}
		if (e)
			return e;
		*got += n;
		off += (int64_t)n;
	}
	return CN_OK;
}

bool cn_ec_reader_plain_fd(cn_ec_reader *r, int64_t off, int *fd, int64_t *fd_off, int64_t *avail)
{
	if (!r->nparts || off < 0 || off >= r->size)
		return false;
	size_t idx = part_of(r, off);
	if ((idx != r->cur || !r->f) && open_part(r, idx))
		return false;
	int f = r->s->drives[0]->ops->rfile_fd(r->f);
	if (f < 0)
		return false;
	int64_t start = idx ? r->ends[idx - 1] : 0;
	*fd = f;
	*fd_off = off - start;
	*avail = r->ends[idx] - off;
	return true;
}

void cn_ec_reader_close(cn_ec_reader *r)
{
	if (!r)
		return;
	if (r->f)
		r->s->drives[0]->ops->rfile_close(r->f);
	free(r->inline_data);
	free(r->ends);
	free(r->vol);
	free(r->key);
	free(r);
}

/* --- versions ---------------------------------------------------------------------- */

cn_err cn_ec_version_keep(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->version_keep(s->drives[i], vol, key, vid);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_version_read(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                          bool skip_inline, cn_ec_meta *m)
{
	cn_buf rec;
	cn_buf_init(&rec);
	cn_err e = s->drives[0]->ops->version_read(s->drives[0], vol, key, vid, CN_EC_RECORD_MAX, &rec);
	if (e == CN_ERR_TOO_LARGE)
		e = CN_ERR_CORRUPT;
	if (!e && (e = cn_ec_meta_decode(rec.p, rec.len, skip_inline, m)) == CN_ERR_CORRUPT)
		cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: corrupt record of %s/%s version %s",
		       s->drives[0]->endpoint, vol, key, vid);
	cn_buf_fini(&rec);
	return e;
}

cn_err cn_ec_version_list(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n)
{
	return s->drives[0]->ops->version_list(s->drives[0], vol, key, vids, n);
}

cn_err cn_ec_version_delete(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->version_delete(s->drives[i], vol, key, vid);
	return reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_version_promote(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->version_promote(s->drives[i], vol, key, vid);
	cn_rcache_invalidate(s->rc, vol, key); /* R1: the current record changed */
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_update_version_meta(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                                 cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t i = 0; i < s->n; i++) {
		rec.len = 0;
		fill_erasure(s, m, i);
		errs[i] = cn_ec_meta_encode(m, &rec);
		if (!errs[i])
			errs[i] = s->drives[i]->ops->version_write(s->drives[i], vol, key, vid, rec.p, rec.len);
	}
	cn_buf_fini(&rec);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

/* --- multipart uploads ------------------------------------------------------------- */

cn_err cn_ec_upload_put_meta(cn_ec_set *s, const char *vol, const char *upload_id, const char *name,
                             bool create, cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t i = 0; i < s->n; i++) {
		rec.len = 0;
		fill_erasure(s, m, i);
		errs[i] = cn_ec_meta_encode(m, &rec);
		if (!errs[i])
			errs[i] = s->drives[i]->ops->upload_write(s->drives[i], vol, upload_id, name, create,
			                                          rec.p, rec.len);
	}
	cn_buf_fini(&rec);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_upload_get_meta(cn_ec_set *s, const char *vol, const char *upload_id, const char *name,
                             cn_ec_meta *m)
{
	cn_buf rec;
	cn_buf_init(&rec);
	cn_err e = s->drives[0]->ops->upload_read(s->drives[0], vol, upload_id, name, CN_EC_RECORD_MAX, &rec);
	if (e == CN_ERR_TOO_LARGE)
		e = CN_ERR_CORRUPT;
	if (!e && (e = cn_ec_meta_decode(rec.p, rec.len, false, m)) == CN_ERR_CORRUPT)
		cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: corrupt upload record %s/%s/%s",
		       s->drives[0]->endpoint, vol, upload_id, name);
	cn_buf_fini(&rec);
	return e;
}

cn_err cn_ec_upload_list(cn_ec_set *s, const char *vol, const char *upload_id, char ***names,
                         size_t *n)
{
	return s->drives[0]->ops->upload_list(s->drives[0], vol, upload_id, names, n);
}

cn_err cn_ec_upload_take(cn_ec_writer *w, const char *vol, const char *upload_id, const char *dst,
                         const cn_ec_meta *m)
{
	cn_ec_set *s = w->s;
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = w->f[i] ? s->drives[i]->ops->file_close(w->f[i], true) : CN_ERR_OFFLINE;
		w->f[i] = NULL;
	}
	cn_err e = reduce_quorum(errs, s->n, write_quorum(s));
	if (e)
		return e;
	if (m->size != w->written)
		return CN_ERR_INVALID;
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->upload_take(s->drives[i], w->tmp_id, w->data_id, PART_NAME,
		                                         vol, upload_id, dst);
	return reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_upload_commit(cn_ec_set *s, const char *vol, const char *upload_id,
                           const char *const *srcs, size_t n, const char *key, cn_ec_meta *m)
{
	if (n == 0 || n != m->nparts)
		return CN_ERR_INVALID;
	char tmp_id[33], id[33], name[32];
	cn_drive_random_id(tmp_id);
	cn_drive_random_id(id);
	snprintf(m->data_id, sizeof m->data_id, "%%d.%s", id);
	m->has_inline = false;
	cn_err errs[CN_EC_MAX_DRIVES] = { CN_OK };
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = CN_OK;
		for (size_t p = 0; p < n && !errs[i]; p++) {
			snprintf(name, sizeof name, "part.%zu", p + 1);
			errs[i] = s->drives[i]->ops->upload_link(s->drives[i], vol, upload_id, srcs[p], tmp_id,
			                                         m->data_id, name);
		}
	}
	cn_err e = reduce_quorum(errs, s->n, write_quorum(s));
	if (!e)
		e = commit(s, tmp_id, m->data_id, vol, key, m);
	if (e)
		for (size_t i = 0; i < s->n; i++)
			s->drives[i]->ops->abort_tmp(s->drives[i], tmp_id);
	return e;
}

cn_err cn_ec_upload_remove(cn_ec_set *s, const char *vol, const char *upload_id)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = s->drives[i]->ops->upload_remove(s->drives[i], vol, upload_id);
	return reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_update_meta(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m)
{
	char tmp_id[33];
	if (m->has_inline && m->inline_len != (size_t)m->size)
		return CN_ERR_INVALID;
	cn_drive_random_id(tmp_id);
	return commit(s, tmp_id, NULL, vol, key, m);
}

/* --- listing ----------------------------------------------------------------------- */

typedef struct walk_ctx {
	cn_ec_set *s;
	const char *vol;
	cn_ec_walk_fn fn;
	void *ctx;
} walk_ctx;

static cn_err walk_cb(void *vctx, const char *key, size_t keylen, bool is_prefix, const void *rec,
                      size_t reclen)
{
	walk_ctx *w = vctx;
	if (is_prefix)
		return w->fn(w->ctx, key, keylen, true, NULL);
	cn_ec_meta m;
	cn_err e = cn_ec_meta_decode(rec, reclen, true, &m);
	if (e == CN_ERR_CORRUPT) {
		cn_log(CN_LOG_WARN, NULL, "erasure: listing %s: skipping corrupt record of %s", w->vol, key);
		return CN_OK;
	}
	if (e)
		return e;
	e = w->fn(w->ctx, key, keylen, false, &m);
	cn_ec_meta_fini(&m);
	return e;
}

cn_err cn_ec_walk(cn_ec_set *s, const char *vol, const char *prefix, const char *after,
                  bool slash_delim, cn_ec_walk_fn fn, void *ctx)
{
	walk_ctx w = { s, vol, fn, ctx };
	return s->drives[0]->ops->walk(s->drives[0], vol, prefix, after, slash_delim, walk_cb, &w);
}
