/* erasure/read: the reader (GET, HEAD's data, heal's decoding). Plain sets: the version's
 * part files, or its inline bytes. Coded sets: the version's record read with quorum
 * (quorum.c), then block by block the K data shards, each checked against its hash, and
 * missing or damaged ones rebuilt from parity; cn_ec_reader_view hands out the decoded
 * bytes where they lie (no copy). The reader's path (view, load_block, read_shard) is the
 * GET hot path: its functions stay together in this file.
 *
 *  EC-3. Every shard block read is checked against its hash before use; a missing, short or
 *      corrupt shard is replaced by reconstruction from any K good ones, and the reader
 *      remembers that the object needs healing (cn_ec_reader_degraded).
 *  EC-4. A healthy read touches only the K data shards (no decode); a range read only the
 *      blocks it covers. */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPEN_RETRIES 8

/* Opens part file idx (0-based) of the reader's version as r->f, checking its size. */
static cn_err open_part(cn_ec_reader *r, size_t idx)
{
	cn_ec_set *s = r->s;
	char name[32];
	snprintf(name, sizeof name, "part.%zu", idx + 1);
	if (r->f) {
		D(s, 0)->ops->rfile_close(r->f);
		r->f = NULL;
	}
	cn_err e = D(s, 0)->ops->open_data(D(s, 0), r->vol, r->key, r->data_id, name, &r->f);
	if (e)
		return e;
	r->cur = idx;
	int64_t want = r->ends[idx] - (idx ? r->ends[idx - 1] : 0);
	if (D(s, 0)->ops->rfile_size(r->f) != want) {
		cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: %s/%s: %s size %lld != %lld",
		       D(s, 0)->endpoint, r->vol, r->key, name,
		       (long long)D(s, 0)->ops->rfile_size(r->f), (long long)want);
		D(s, 0)->ops->rfile_close(r->f);
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

/* Part layout of the version m into r (ends[], nparts, data_id). */
static cn_err reader_parts(cn_ec_reader *r, const cn_ec_meta *m)
{
	size_t np = m->nparts ? m->nparts : 1;
	free(r->ends);
	if (!(r->ends = malloc(np * sizeof *r->ends)))
		return CN_ERR_NOMEM;
	int64_t end = 0;
	for (size_t i = 0; i < np; i++) {
		end += m->nparts ? m->parts[i].size : m->size;
		r->ends[i] = end;
	}
	if (end != m->size) {
		cn_log(CN_LOG_ERROR, NULL, "erasure: %s/%s: parts add up to %lld, not %lld", r->vol, r->key,
		       (long long)end, (long long)m->size);
		return CN_ERR_CORRUPT;
	}
	r->nparts = np;
	cn_strlcpy(r->data_id, m->data_id, sizeof r->data_id);
	return CN_OK;
}

static cn_err open_plain(cn_ec_reader *r, const char *vid, cn_ec_meta *m)
{
	cn_ec_set *s = r->s;
	cn_err e = CN_OK;
	for (int tries = 0; tries < OPEN_RETRIES; tries++) {
		cn_ec_meta_fini(m);
		if ((e = vid ? cn_ec__read_one(s, 0, REC_VERSION, r->vol, r->key, vid, false, false, m, NULL,
		                               NULL)
		             : cn_ec__read_one(s, 0, REC_CURRENT, r->vol, r->key, NULL, false, true, m, NULL,
		                               NULL)))
			break;
		r->size = m->size;
		if (m->has_inline) {
			r->in_records = true;
			r->inline_data = m->inline_data;
			r->inline_rec = m->inline_rec;
			m->inline_data = NULL;
			m->inline_rec = NULL;
			break;
		}
		if ((e = reader_parts(r, m)))
			break;
		e = open_part(r, 0);
		if (e == CN_ERR_NO_KEY)
			continue; /* replaced between the record and the data: read the new record */
		break;
	}
	return e;
}

static void close_coded_files(cn_ec_reader *r)
{
	for (size_t d = 0; d < r->s->n; d++) {
		if (r->cf[d])
			D(r->s, d)->ops->rfile_close(r->cf[d]);
		r->cf[d] = NULL;
		r->cf_bad[d] = false;
	}
	r->cf_open = false;
}

/* Opens (lazily) slot d's file of part p; false when it cannot be read. */
bool cn_ec__coded_file(cn_ec_reader *r, size_t p, size_t d)
{
	if (!r->cf_open || r->cpart != p) {
		close_coded_files(r);
		r->cpart = p;
		r->cf_open = true;
	}
	if (r->cf[d])
		return true;
	if (r->cf_bad[d] || !r->good[d] || !D(r->s, d))
		return false;
	char name[32];
	snprintf(name, sizeof name, "part.%zu", p + 1);
	cn_err e = D(r->s, d)->ops->open_data(D(r->s, d), r->vol, r->key, r->data_id, name, &r->cf[d]);
	if (e) {
		r->cf_bad[d] = true;
		r->degraded = true;
		cn_log(CN_LOG_WARN, NULL, "erasure: drive %s: %s/%s %s: %s", D(r->s, d)->endpoint, r->vol,
		       r->key, name, cn_err_str(e));
		return false;
	}
	return true;
}

/* Reads slot d's [hash][shard] of block b of part p into out (HASH_LEN + sl bytes),
 * checks the hash (EC-3) and points *at at the shard's bytes: in out, or for an inline
 * stream where it already is in memory (no copy; a shared record's block is checked once:
 * cn_ec_rec_block_checked). */
bool cn_ec__read_shard(cn_ec_reader *r, size_t p, size_t b, size_t d, size_t sl, unsigned char *out,
                       unsigned char **at)
{
	size_t fsl = cn_codec_shard_len(r->c, r->block_size);
	int64_t off = (int64_t)b * (int64_t)(HASH_LEN + fsl);
	size_t want = HASH_LEN + sl, got = 0;
	if (r->inl[d]) {
		if (off + (int64_t)want > (int64_t)r->inl_len[d])
			return false;
		out = r->inl[d] + off;
		if (r->inl_rec[d] && cn_ec_rec_block_checked(r->inl_rec[d], b)) {
			*at = out + HASH_LEN; /* this record's copy was checked (a cached record) */
			return true;
		}
	} else {
		if (!cn_ec__coded_file(r, p, d))
			return false;
		cn_err e = D(r->s, d)->ops->rfile_read(r->cf[d], off, out, want, &got);
		if (e || got != want) {
			cn_log(CN_LOG_WARN, NULL, "erasure: drive %s: %s/%s: shard of block %zu %s",
			       D(r->s, d)->endpoint, r->vol, r->key, b, e ? cn_err_str(e) : "short");
			r->degraded = true;
			return false;
		}
	}
	if (cn_codec_hash_check(out + HASH_LEN, sl, out) != CN_OK) {
		cn_log(CN_LOG_WARN, NULL, "erasure: drive %s: %s/%s: block %zu: bitrot (hash mismatch)",
		       D(r->s, d) ? D(r->s, d)->endpoint : "?", r->vol, r->key, b);
		r->degraded = true;
		return false;
	}
	if (r->inl[d] && r->inl_rec[d])
		cn_ec_rec_mark_checked(r->inl_rec[d], b);
	*at = out + HASH_LEN;
	return true;
}

/* Slot d holds the chosen version (record m): it is good, serves its shard index, and
 * its inline stream (if any) moves into the reader. */
static void reader_take_slot(cn_ec_reader *r, size_t d, cn_ec_meta *m)
{
	r->good[d] = true;
	if (r->dist[d] < r->s->n)
		r->slot_of[r->dist[d]] = (int8_t)d;
	if (m->has_inline) {
		r->inl[d] = m->inline_data;
		r->inl_rec[d] = m->inline_rec;
		r->inl_len[d] = m->inline_len;
		m->inline_data = NULL;
		m->inline_rec = NULL;
	}
}

/* EC-7: reads the records of the slots an early-out open skipped; those that hold the chosen
 * version become good (their inline streams taken), others mark the object degraded.
 * Returns whether any slot became good. */
static bool reader_complete(cn_ec_reader *r)
{
	cn_ec_set *s = r->s;
	bool more = false;
	for (size_t d = 0; d < s->n; d++) {
		if (!r->unread[d])
			continue;
		r->unread[d] = false;
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		uint64_t id = 0;
		cn_err e = cn_ec__read_one(s, d, r->vid[0] ? REC_VERSION : REC_CURRENT, r->vol, r->key,
		                           r->vid[0] ? r->vid : NULL, false, false, &m, &id, NULL);
		if (!e && id == r->ident) {
			reader_take_slot(r, d, &m);
			more = true;
		} else if (e == CN_ERR_OFFLINE) {
			r->offline[d] = true;
		} else {
			r->degraded = true;
			/* the key changed since the open (overwritten or deleted): the record no
			 * longer names this version, but a file-backed version's shard files, named
			 * by its data id, may still be there (erasure.h cn_ec_open: the caller keeps
			 * them while the reader lives), and their hashes say whether they are this
			 * version's. (A drive
			 * holding an older version has no such file: a missing shard, rebuilt.) */
			if (r->data_id[0] && (e == CN_OK || e == CN_ERR_NO_KEY)) {
				r->good[d] = true;
				if (r->dist[d] < s->n)
					r->slot_of[r->dist[d]] = (int8_t)d;
				more = true;
			}
		}
		cn_ec_meta_fini(&m);
	}
	return more;
}

/* The reader's scratch (n x sh_stride), allocated on first use; NULL when out of memory. */
static unsigned char *reader_scratch(cn_ec_reader *r)
{
	if (!r->sh)
		r->sh = malloc(r->s->n * r->sh_stride);
	return r->sh;
}

/* Loads block b of part p: its K data shards verified, missing ones rebuilt (EC-4: data
 * shards first, parity only as needed), left in r->sh at r->dptr (the block's bytes are
 * their concatenation; block_at reads them, nothing is joined). */
cn_err cn_ec__load_block(cn_ec_reader *r, size_t p, size_t b)
{
	if (r->blk_valid && r->blk_part == p && r->blk_idx == b)
		return CN_OK;
	int64_t psize = r->ends[p] - (p ? r->ends[p - 1] : 0);
	int64_t boff = (int64_t)b * r->block_size;
	size_t bl = psize - boff < (int64_t)r->block_size ? (size_t)(psize - boff) : r->block_size;
	size_t sl = cn_codec_shard_len(r->c, bl), n = r->s->n;
	unsigned char *ptr[CN_EC_MAX_DRIVES];
	bool present[CN_EC_MAX_DRIVES];
	unsigned have;
again:
	have = 0;
	memset(present, 0, sizeof present);
	/* data shards first, then parity until K are good; shards read from files and
	 * missing ones rebuilt go to the scratch (sh), inline ones are used where they are */
	for (unsigned j = 0; j < n && have < r->k; j++) {
		int d = r->slot_of[j];
		ptr[j] = NULL;
		if (d < 0)
			continue;
		unsigned char *out = NULL;
		if (!r->inl[d]) {
			if (!reader_scratch(r))
				return CN_ERR_NOMEM;
			out = r->sh + (size_t)j * r->sh_stride;
		}
		if (cn_ec__read_shard(r, p, b, (size_t)d, sl, out, &ptr[j])) {
			present[j] = true;
			have++;
		}
	}
	if (have < r->k && reader_complete(r))
		goto again; /* EC-7: slots not read at open may hold the shards still needed */
	if (have < r->k) {
		cn_log(CN_LOG_ERROR, NULL, "erasure: %s/%s: block %zu of part %zu: only %u of %u shards "
		       "readable", r->vol, r->key, b, p + 1, have, r->k);
		return CN_ERR_QUORUM;
	}
	bool need = false;
	for (unsigned j = 0; j < r->k; j++)
		need |= !present[j];
	if (need && !reader_scratch(r))
		return CN_ERR_NOMEM;
	for (unsigned j = 0; j < n; j++) /* where missing shards are rebuilt */
		if (!present[j])
			ptr[j] = r->sh ? r->sh + (size_t)j * r->sh_stride + HASH_LEN : NULL;
	if (need) {
		bool want[CN_EC_MAX_DRIVES] = { false };
		for (unsigned j = 0; j < r->k; j++)
			want[j] = !present[j];
		cn_err e = cn_codec_reconstruct(r->c, sl, ptr, present, want);
		if (e)
			return e;
	}
	for (unsigned j = 0; j < r->k; j++)
		r->dptr[j] = ptr[j];
	r->blk_part = p;
	r->blk_idx = b;
	r->blk_len = bl;
	r->blk_sl = sl;
	r->blk_valid = true;
	return CN_OK;
}

/* The loaded block's bytes from in (< blk_len): where they are, and how many follow there
 * (to the end of their data shard). */
static const unsigned char *block_at(const cn_ec_reader *r, size_t in, size_t *avail)
{
	size_t j = in / r->blk_sl, end = (j + 1) * r->blk_sl;
	*avail = (end < r->blk_len ? end : r->blk_len) - in;
	return r->dptr[j] + in % r->blk_sl;
}

static cn_err open_coded(cn_ec_reader *r, const char *vid, bool full, cn_ec_meta *m)
{
	cn_ec_set *s = r->s;
	cn_ec_meta ms[CN_EC_MAX_DRIVES];
	bool agree[CN_EC_MAX_DRIVES];
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_init(&ms[d]);
	quorum_read q = { .kind = vid ? REC_VERSION : REC_CURRENT, .vol = r->vol, .key = r->key,
	                  .name = vid, .skip_inline = false, .ms = ms, .agree = agree, .errs = errs,
	                  .unread = full ? NULL : r->unread, .prev = r->prev };
	cn_err e = cn_ec__read_quorum_recs(s, &q);
	size_t pick = q.pick;
	if (!e) {
		const cn_ec_meta *c = &ms[pick];
		r->ident = cn_ec__rec_identity(c);
		r->size = c->size;
		r->k = c->k;
		r->m = c->m;
		r->block_size = c->block_size;
		r->c = codec_for(s, c->k, c->m);
		if (!r->c || c->block_size != CN_EC_BLOCK_SIZE || c->ndist != s->n) {
			cn_log(CN_LOG_ERROR, NULL, "erasure: %s/%s: record shape %u+%u/%u not servable by this "
			       "set", r->vol, r->key, c->k, c->m, c->ndist);
			e = CN_ERR_CORRUPT;
		}
	}
	if (!e) {
		const cn_ec_meta *c = &ms[pick];
		memcpy(r->dist, c->dist, s->n);
		for (size_t j = 0; j < s->n; j++)
			r->slot_of[j] = -1;
		for (size_t d = 0; d < s->n; d++) {
			r->offline[d] = errs[d] == CN_ERR_OFFLINE && !r->unread[d];
			if ((!agree[d] && errs[d] != CN_ERR_OFFLINE) || r->prev[d])
				r->degraded = true; /* missing or stale record on a drive we can write: heal */
			if (agree[d])
				reader_take_slot(r, d, &ms[d]);
		}
		r->in_records = c->has_inline;
		if (!c->has_inline)
			e = reader_parts(r, c);
		else {
			/* an inline version is one part */
			free(r->ends);
			r->ends = malloc(sizeof *r->ends);
			if (!r->ends)
				e = CN_ERR_NOMEM;
			else {
				r->ends[0] = c->size;
				r->nparts = 1;
			}
		}
	}
	if (!e) {
		/* scratch for the largest block the object has: a 64 KiB object on 16 drives
		 * needs 16 x 5.4 KiB, not 16 x 85 KiB. Allocated by the first cn_ec__load_block that
		 * needs it: a healthy inline object is served from its records alone. */
		size_t big = r->size < (int64_t)r->block_size ? (size_t)r->size : r->block_size;
		r->sh_stride = HASH_LEN + cn_codec_shard_len(r->c, big);
	}
	if (!e) {
		cn_ec_meta_fini(m);
		*m = ms[pick];
		cn_ec_meta_init(&ms[pick]);
		cn_ec_meta_drop_inline(m); /* the object's bytes are decoded from the shards */
	}
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_fini(&ms[d]);
	return e;
}

cn_err cn_ec_open(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m, cn_ec_reader **out)
{
	return cn_ec_open_version(s, vol, key, NULL, m, out);
}

cn_err cn_ec__open_version(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                           bool full, cn_ec_meta *m, cn_ec_reader **out)
{
	cn_ec_reader *r = calloc(1, sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	r->s = s;
	r->vol = strdup(vol);
	r->key = strdup(key);
	cn_strlcpy(r->vid, vid ? vid : "", sizeof r->vid);
	cn_err e = r->vol && r->key ? CN_OK : CN_ERR_NOMEM;
	if (!e)
		e = coded(s) ? open_coded(r, vid, full, m) : open_plain(r, vid, m);
	if (e) {
		cn_ec_reader_close(r);
		cn_ec_meta_fini(m);
		return e;
	}
	*out = r;
	return CN_OK;
}

cn_err cn_ec_open_version(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                          cn_ec_meta *m, cn_ec_reader **out)
{
	return cn_ec__open_version(s, vol, key, vid, false, m, out);
}

bool cn_ec_reader_in_records(const cn_ec_reader *r)
{
	return r->in_records;
}

void cn_ec_no_io(bool on)
{
	cn_drive_no_io(on);
}

bool cn_ec_reader_degraded(const cn_ec_reader *r)
{
	return r->degraded;
}

void cn_ec_reader_name(const cn_ec_reader *r, const char **vol, const char **key, const char **vid)
{
	*vol = r->vol;
	*key = r->key;
	*vid = r->vid[0] ? r->vid : NULL;
}

cn_err cn_ec_reader_read(cn_ec_reader *r, int64_t off, void *buf, size_t len, size_t *got)
{
	*got = 0;
	if (off < 0 || off >= r->size)
		return CN_OK;
	if ((int64_t)len > r->size - off)
		len = (size_t)(r->size - off);
	if (!coded(r->s) && !r->nparts) {
		memcpy(buf, r->inline_data + off, len);
		*got = len;
		return CN_OK;
	}
	while (*got < len) {
		size_t idx = part_of(r, off);
		int64_t start = idx ? r->ends[idx - 1] : 0;
		size_t want = len - *got;
		if ((int64_t)want > r->ends[idx] - off)
			want = (size_t)(r->ends[idx] - off);
		size_t n = 0;
		cn_err e = CN_OK;
		if (coded(r->s)) {
			int64_t poff = off - start;
			size_t b = (size_t)(poff / r->block_size), in = (size_t)(poff % r->block_size);
			if ((e = cn_ec__load_block(r, idx, b)))
				return e;
			const unsigned char *src = block_at(r, in, &n);
			if (n > want)
				n = want;
			memcpy((char *)buf + *got, src, n);
		} else {
			if (idx != r->cur || !r->f) {
				e = open_part(r, idx);
				if (e == CN_ERR_NO_KEY) {
					cn_log(CN_LOG_WARN, NULL, "erasure: %s/%s: replaced while being read", r->vol,
					       r->key);
					e = CN_ERR_IO;
				}
				if (e)
					return e;
			}
			e = D(r->s, 0)->ops->rfile_read(r->f, off - start, (char *)buf + *got, want, &n);
			if (!e && n < want) {
				cn_log(CN_LOG_ERROR, NULL, "erasure: drive %s: shard shorter than its record",
				       D(r->s, 0)->endpoint);
				e = CN_ERR_CORRUPT;
			}
			if (e)
				return e;
		}
		*got += n;
		off += (int64_t)n;
	}
	return CN_OK;
}

cn_err cn_ec_reader_view(cn_ec_reader *r, int64_t off, size_t max, const void **p, size_t *n)
{
	*p = NULL;
	*n = 0;
	if (off < 0 || off >= r->size || max == 0)
		return CN_OK;
	if ((int64_t)max > r->size - off)
		max = (size_t)(r->size - off);
	if (!coded(r->s)) {
		if (r->nparts)
			return CN_OK; /* in a file: cn_ec_reader_read or _plain_fd */
		*p = r->inline_data + off;
		*n = max;
		return CN_OK;
	}
	size_t idx = part_of(r, off);
	int64_t poff = off - (idx ? r->ends[idx - 1] : 0);
	cn_err e = cn_ec__load_block(r, idx, (size_t)(poff / r->block_size));
	if (e)
		return e;
	*p = block_at(r, (size_t)(poff % r->block_size), n);
	if (*n > max)
		*n = max;
	return CN_OK;
}

cn_err cn_ec_reader_viewv(cn_ec_reader *r, int64_t off, size_t max, struct iovec *iov, int maxiov,
                          int *niov, size_t *n)
{
	*niov = 0;
	*n = 0;
	while (*niov < maxiov && *n < max) {
		int64_t at = off + (int64_t)*n;
		if (*niov && coded(r->s)) { /* only the loaded block: the earlier views stay valid */
			if (at >= r->size)
				break;
			size_t idx = part_of(r, at);
			int64_t poff = at - (idx ? r->ends[idx - 1] : 0);
			if (!r->blk_valid || idx != r->blk_part || (size_t)(poff / r->block_size) != r->blk_idx)
				break;
		}
		const void *p;
		size_t got;
		cn_err e = cn_ec_reader_view(r, at, max - *n, &p, &got);
		if (e) {
			*niov = 0;
			*n = 0;
			return e;
		}
		if (!p || !got)
			break;
		iov[*niov] = (struct iovec){ (void *)p, got };
		(*niov)++;
		*n += got;
	}
	return CN_OK;
}

bool cn_ec_reader_plain_fd(cn_ec_reader *r, int64_t off, int *fd, int64_t *fd_off, int64_t *avail)
{
	if (coded(r->s) || !r->nparts || off < 0 || off >= r->size)
		return false;
	size_t idx = part_of(r, off);
	if ((idx != r->cur || !r->f) && open_part(r, idx))
		return false;
	int f = D(r->s, 0)->ops->rfile_fd(r->f);
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
		D(r->s, 0)->ops->rfile_close(r->f);
	close_coded_files(r);
	for (size_t d = 0; d < CN_EC_MAX_DRIVES; d++) {
		if (r->inl_rec[d])
			cn_ec_rec_unref(r->inl_rec[d]);
		else if (r->inl[d]) /* most slots hold nothing: no call into free per slot */
			free(r->inl[d]);
	}
	if (r->inline_rec)
		cn_ec_rec_unref(r->inline_rec);
	else
		free(r->inline_data);
	free(r->ends);
	free(r->vol);
	free(r->key);
	free(r->blk);
	free(r->sh);
	free(r);
}
