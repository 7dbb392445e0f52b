/* erasure/write: changing an object's current record. The writer (PUT) streams a body
 * into shard files in each drive's tmp area, block by block (coded: each block encoded
 * in place and written with its hash; plain: the bytes as they come), and its commit
 * renames each slot's data folder and record in, slot 0 first (quorum.c EC-16); a small
 * object is committed inline, its shard stream in the records. Deletes remove the current
 * record (slot n-1 first, EC-16) or a data folder. The writer's path (fill, flush_block,
 * commit) is the PUT hot path: its functions stay together in this file.
 *
 *  EC-1. A record is written to a drive only after that drive's shard file is complete and
 *      closed (file_close(keep) before rename_data); a commit succeeds when write quorum
 *      drives committed (K, or K+1 when K == M).
 *  EC-14. A coded writer encodes in place: its pending block is the start of its shard
 *      buffer (k data shards of a full block's shard length, then m parity shards), so
 *      data shard j of a block of len bytes is already at j * shard_len(len) and only the
 *      last data shard's padding (fewer than k bytes) is zeroed before the parity is
 *      computed; bodies may be read straight into it (cn_ec_writer_space/fill). The
 *      shard files are the codec's (tests: test_writer_shard_files_match_the_codec). */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART_NAME "part.1"

struct cn_ec_writer {
	cn_ec_set *s;
	char tmp_id[33];
	char data_id[CN_DRIVE_ID_MAX + 1];
	cn_drive_file *f[CN_EC_MAX_DRIVES];
	int64_t written;
	/* coded */
	cn_codec *c;
	unsigned k, m;
	uint8_t dist[CN_EC_MAX_DRIVES];
	unsigned char *block;               /* pending bytes of the current block: = shards */
	size_t blen;
	/* EC-14: k data shards of a full block's shard_len (the block, encoded in place: data
	 * shard j of a block of len bytes starts at j * shard_len(len)), then m parity */
	unsigned char *shards;
	bool ok[CN_EC_MAX_DRIVES];          /* slot still writing */
	bool done[CN_EC_MAX_DRIVES];        /* slot committed: nothing of it left in tmp */
};

cn_err cn_ec_writer_new(cn_ec_set *s, const char *vol, const char *key, const char *storage_class,
                        cn_ec_writer **out)
{
	cn_ec_writer *w = calloc(1, sizeof *w);
	if (!w)
		return CN_ERR_NOMEM;
	w->s = s;
	char id[33];
	cn_drive_random_id(w->tmp_id);
	cn_drive_random_id(id);
	snprintf(w->data_id, sizeof w->data_id, "%%d.%s", id);
	if (coded(s)) {
		w->m = parity_for(s, storage_class);
		w->k = (unsigned)s->n - w->m;
		w->c = codec_for(s, w->k, w->m);
		cn_codec_dist(vol, key, strlen(key), (unsigned)s->n, w->dist);
		/* EC-14: the block is the start of the shard buffer (blocks encode in place) */
		size_t sl = w->c ? cn_codec_shard_len(w->c, CN_EC_BLOCK_SIZE) : 0;
		w->shards = malloc(s->n * sl);
		w->block = w->shards;
		if (!w->c || !w->shards) {
			cn_ec_writer_abort(w);
			return w->c ? CN_ERR_NOMEM : CN_ERR_INVALID;
		}
	}
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = D(s, i) ? D(s, i)->ops->create_file(D(s, i), w->tmp_id, w->data_id, PART_NAME, &w->f[i])
		                  : CN_ERR_OFFLINE;
		w->ok[i] = errs[i] == CN_OK;
	}
	size_t q = coded(s) ? (size_t)w->k + (w->k == w->m) : write_quorum(s);
	cn_err e = cn_ec__reduce_quorum(errs, s->n, q);
	if (e) {
		cn_ec_writer_abort(w);
		return e;
	}
	*out = w;
	return CN_OK;
}

static size_t writer_quorum(const cn_ec_writer *w)
{
	return coded(w->s) ? (size_t)w->k + (w->k == w->m) : write_quorum(w->s);
}

/* A slot failed while writing: drop it; the write goes on while quorum slots remain. */
static void writer_drop(cn_ec_writer *w, size_t i, cn_err e)
{
	cn_log(CN_LOG_WARN, NULL, "erasure: drive %s: writing shard: %s; continuing without it",
	       D(w->s, i)->endpoint, cn_err_str(e));
	D(w->s, i)->ops->file_close(w->f[i], false);
	w->f[i] = NULL;
	w->ok[i] = false;
}

static cn_err writer_check(cn_ec_writer *w, cn_err last)
{
	size_t ok = 0;
	for (size_t i = 0; i < w->s->n; i++)
		ok += w->ok[i];
	if (ok >= writer_quorum(w))
		return CN_OK;
	return last && !(coded(w->s) && drive_fault(last)) ? last : CN_ERR_QUORUM;
}

/* Encodes and writes the pending block (coded sets). */
static cn_err flush_block(cn_ec_writer *w)
{
	cn_ec_set *s = w->s;
	size_t n = s->n, k = w->k, sl = cn_codec_shard_len(w->c, w->blen);
	size_t full = cn_codec_shard_len(w->c, CN_EC_BLOCK_SIZE);
	unsigned char *ptr[CN_EC_MAX_DRIVES];
	unsigned char hashes[CN_EC_MAX_DRIVES][HASH_LEN];
	/* EC-14: the block's bytes lie at the start of w->shards, so data shard j of this block
	 * (its bytes [j*sl, (j+1)*sl), the last padded with zeros) already starts at j*sl;
	 * the parity shards go after the data area of a full block (k*full >= the block). */
	for (size_t j = 0; j < n; j++)
		ptr[j] = j < k ? w->shards + j * sl : w->shards + k * full + (j - k) * sl;
	memset(w->shards + w->blen, 0, k * sl - w->blen);
	cn_err e = cn_codec_encode_parity(w->c, sl, ptr, hashes);
	if (e)
		return e;
	cn_err last = CN_OK;
	for (size_t d = 0; d < n; d++) {
		if (!w->ok[d])
			continue;
		unsigned j = w->dist[d];
		cn_err we = D(s, d)->ops->file_write(w->f[d], hashes[j], HASH_LEN);
		if (!we)
			we = D(s, d)->ops->file_write(w->f[d], ptr[j], sl);
		if (we) {
			last = we;
			writer_drop(w, d, we);
		}
	}
	w->blen = 0;
	return writer_check(w, last);
}

cn_err cn_ec_writer_write(cn_ec_writer *w, const void *p, size_t len)
{
	cn_ec_set *s = w->s;
	if (!coded(s)) {
		cn_err errs[CN_EC_MAX_DRIVES];
		for (size_t i = 0; i < s->n; i++)
			errs[i] = w->f[i] ? D(s, i)->ops->file_write(w->f[i], p, len) : CN_ERR_OFFLINE;
		w->written += (int64_t)len;
		return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
	}
	const unsigned char *c = p;
	while (len > 0) {
		size_t n = CN_EC_BLOCK_SIZE - w->blen;
		if (n > len)
			n = len;
		memcpy(w->block + w->blen, c, n);
		w->blen += n;
		w->written += (int64_t)n;
		c += n;
		len -= n;
		if (w->blen == CN_EC_BLOCK_SIZE) {
			cn_err e = flush_block(w);
			if (e)
				return e;
		}
	}
	return CN_OK;
}

size_t cn_ec_writer_space(cn_ec_writer *w, unsigned char **p)
{
	if (!coded(w->s)) {
		*p = NULL;
		return 0;
	}
	*p = w->block + w->blen; /* blen < CN_EC_BLOCK_SIZE: a full block is flushed at once */
	return CN_EC_BLOCK_SIZE - w->blen;
}

cn_err cn_ec_writer_fill(cn_ec_writer *w, size_t n)
{
	if (!coded(w->s) || n > CN_EC_BLOCK_SIZE - w->blen)
		return CN_ERR_INVALID;
	w->blen += n;
	w->written += (int64_t)n;
	return w->blen == CN_EC_BLOCK_SIZE ? flush_block(w) : CN_OK;
}

/* Erasure fields of slot d's record. */
void cn_ec__fill_erasure_kd(cn_ec_meta *m, unsigned k, unsigned mm, const uint8_t *dist, size_t n,
                            size_t d)
{
	m->k = (uint8_t)k;
	m->m = (uint8_t)mm;
	m->block_size = CN_EC_BLOCK_SIZE;
	m->index = (uint8_t)d;
	m->ndist = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		m->dist[i] = dist ? dist[i] : (uint8_t)i;
}

void cn_ec__fill_erasure(cn_ec_set *s, cn_ec_meta *m, size_t drive)
{
	/* records without data of their own (uploads, markers): the set's STANDARD shape */
	cn_ec__fill_erasure_kd(m, (unsigned)s->k, (unsigned)s->m, NULL, s->n, drive);
}

/* Closes the writer's files (flushing the tail block): EC-1's first half. */
static cn_err writer_finish(cn_ec_writer *w)
{
	cn_ec_set *s = w->s;
	cn_err e = CN_OK;
	if (coded(s) && w->blen > 0 && (e = flush_block(w)))
		return e;
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = w->f[i] ? D(s, i)->ops->file_close(w->f[i], true) : CN_ERR_OFFLINE;
		w->f[i] = NULL;
		if (errs[i])
			w->ok[i] = false;
	}
	return cn_ec__reduce_quorum(errs, s->n, writer_quorum(w));
}

/* Writes slot d's record for m (data_id NULL: record only) and renames it in. */
cn_err cn_ec__commit_slot(cn_ec_set *s, size_t d, const char *tmp_id, const char *data_id,
                          const char *vol, const char *key, cn_ec_meta *m, cn_buf *rec)
{
	rec->len = 0;
	cn_err e = cn_ec_meta_encode(m, rec);
	if (!e)
		e = D(s, d)->ops->rename_data(D(s, d), tmp_id, data_id, vol, key, rec->p, rec->len);
	return e;
}

cn_err cn_ec__commit(cn_ec_set *s, const char *tmp_id, const char *data_id, const char *vol,
                     const char *key, cn_ec_meta *m, unsigned k, unsigned mm, const uint8_t *dist,
                     const bool *ok, bool *done)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (s->n > 1 && cn_ec__slots_up(s, ok) < (size_t)k + (k == mm)) { /* EC-12 */
		for (size_t i = 0; i < s->n; i++)
			if (D(s, i))
				D(s, i)->ops->abort_tmp(D(s, i), tmp_id);
		return CN_ERR_QUORUM;
	}
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
		if (!D(s, i) || (ok && !ok[i])) {
			errs[i] = CN_ERR_OFFLINE;
			if (D(s, i))
				D(s, i)->ops->abort_tmp(D(s, i), tmp_id);
			continue;
		}
		cn_ec__fill_erasure_kd(m, k, mm, dist, s->n, i);
		errs[i] = cn_ec__commit_slot(s, i, tmp_id, data_id, vol, key, m, &rec);
		if (done)
			done[i] = errs[i] == CN_OK; /* rename_data left nothing in tmp */
	}
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* RCACHE-1: after the renames */
	if (added_part) {
		m->parts = NULL;
		m->nparts = 0;
	}
	cn_buf_fini(&rec);
	return cn_ec__reduce_quorum(errs, s->n, (size_t)k + (k == mm));
}

cn_err cn_ec_writer_commit(cn_ec_writer *w, const char *vol, const char *key, cn_ec_meta *m)
{
	cn_err e = writer_finish(w);
	if (e)
		return e;
	if (m->size != w->written)
		return CN_ERR_INVALID;
	m->has_inline = false;
	cn_strlcpy(m->data_id, w->data_id, sizeof m->data_id);
	if (!coded(w->s))
		return cn_ec__commit(w->s, w->tmp_id, w->data_id, vol, key, m, 1, 0, NULL, NULL, w->done);
	return cn_ec__commit(w->s, w->tmp_id, w->data_id, vol, key, m, w->k, w->m, w->dist, w->ok,
	                     w->done);
}

void cn_ec_writer_abort(cn_ec_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->s->n; i++) {
		if (w->f[i])
			D(w->s, i)->ops->file_close(w->f[i], false);
		if (D(w->s, i) && !w->done[i])
			D(w->s, i)->ops->abort_tmp(D(w->s, i), w->tmp_id);
	}
	free(w->shards); /* w->block is its start (EC-14) */
	free(w);
}

/* The coded shard stream of data[0..len) for every slot: streams[d] gets [hash][shard] per
 * block of shard dist[d] (a permutation of 0..n). All streams live in one allocation,
 * returned in *base (the caller frees it, also on error); each block is encoded in place
 * into the streams, so the object's bytes are copied once and no scratch is needed. */
cn_err cn_ec__encode_streams(cn_codec *c, const unsigned char *data, size_t len, const uint8_t *dist,
                             size_t n, unsigned char **base, unsigned char **streams, size_t *slen)
{
	size_t full = len / CN_EC_BLOCK_SIZE, tail = len % CN_EC_BLOCK_SIZE;
	size_t fsl = cn_codec_shard_len(c, CN_EC_BLOCK_SIZE), tsl = cn_codec_shard_len(c, tail);
	size_t total = full * (HASH_LEN + fsl) + (tail ? HASH_LEN + tsl : 0);
	*base = malloc(total ? n * total : 1);
	if (!*base)
		return CN_ERR_NOMEM;
	for (size_t d = 0; d < n; d++) {
		streams[d] = *base + d * total;
		slen[d] = 0;
	}
	for (size_t b = 0; b * CN_EC_BLOCK_SIZE < len; b++) {
		size_t bl = len - b * CN_EC_BLOCK_SIZE < CN_EC_BLOCK_SIZE ? len - b * CN_EC_BLOCK_SIZE
		                                                          : CN_EC_BLOCK_SIZE;
		size_t sl = cn_codec_shard_len(c, bl);
		unsigned char *ptr[CN_EC_MAX_DRIVES], hashes[CN_EC_MAX_DRIVES][HASH_LEN];
		for (size_t d = 0; d < n; d++)
			ptr[dist[d]] = streams[d] + slen[d] + HASH_LEN;
		cn_err e = cn_codec_encode(c, data + b * CN_EC_BLOCK_SIZE, bl, ptr, hashes);
		if (e)
			return e;
		for (size_t d = 0; d < n; d++) {
			memcpy(streams[d] + slen[d], hashes[dist[d]], HASH_LEN);
			slen[d] += HASH_LEN + sl;
		}
	}
	return CN_OK;
}

cn_err cn_ec_commit_inline(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m)
{
	char tmp_id[33];
	if (!m->has_inline || m->inline_len != (size_t)m->size || m->inline_len > CN_EC_INLINE_CAP)
		return CN_ERR_INVALID;
	m->data_id[0] = 0;
	cn_drive_random_id(tmp_id);
	if (!coded(s))
		return cn_ec__commit(s, tmp_id, NULL, vol, key, m, 1, 0, NULL, NULL, NULL);
	unsigned mm = parity_for(s, m->storage_class), k = (unsigned)s->n - mm;
	cn_codec *c = codec_for(s, k, mm);
	if (!c)
		return CN_ERR_INVALID;
	if (!cn_ec__quorum_up(s, (size_t)k + (k == mm)))
		return CN_ERR_QUORUM; /* EC-12 */
	uint8_t dist[CN_EC_MAX_DRIVES];
	cn_codec_dist(vol, key, strlen(key), (unsigned)s->n, dist);
	unsigned char *streams[CN_EC_MAX_DRIVES], *sbase = NULL;
	size_t slen[CN_EC_MAX_DRIVES];
	cn_err e = cn_ec__encode_streams(c, m->inline_data, m->inline_len, dist, s->n, &sbase, streams,
	                                 slen);
	cn_err errs[CN_EC_MAX_DRIVES];
	unsigned char *whole = m->inline_data;
	size_t whole_len = m->inline_len;
	cn_ec_part one = { 1, m->size, "" };
	bool added_part = m->nparts == 0;
	if (added_part) {
		m->parts = &one;
		m->nparts = 1;
	}
	cn_buf rec;
	cn_buf_init(&rec);
	/* the record's fields (a few hundred bytes; user metadata is at most 2 KiB) and its
	 * shard stream, reserved once for every drive: growing by doubling would copy the
	 * stream and touch fresh pages on each step (a larger record still just grows) */
	if (!e)
		e = cn_buf_reserve(&rec, slen[0] + 4096);
	for (size_t d = 0; d < s->n; d++) {
		if (e || !D(s, d)) {
			errs[d] = e ? e : CN_ERR_OFFLINE;
			continue;
		}
		cn_ec__fill_erasure_kd(m, k, mm, dist, s->n, d);
		m->inline_data = streams[d];
		m->inline_len = slen[d];
		errs[d] = cn_ec__commit_slot(s, d, tmp_id, NULL, vol, key, m, &rec);
	}
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* RCACHE-1: after the renames */
	m->inline_data = whole;
	m->inline_len = whole_len;
	if (added_part) {
		m->parts = NULL;
		m->nparts = 0;
	}
	cn_buf_fini(&rec);
	free(sbase);
	return e ? e : cn_ec__reduce_quorum(errs, s->n, (size_t)k + (k == mm));
}

cn_err cn_ec_delete_meta(cn_ec_set *s, const char *vol, const char *key)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, s->n / 2 + 1))
		return CN_ERR_QUORUM; /* EC-12 */
	for (size_t j = s->n; j-- > 0;) /* EC-16: the walked drives first */
		errs[j] = D(s, j) ? D(s, j)->ops->delete_meta(D(s, j), vol, key) : CN_ERR_OFFLINE;
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* RCACHE-1 */
	size_t ok = 0;
	for (size_t i = 0; i < s->n; i++) /* a drive that never had it agrees */
		ok += errs[i] == CN_OK;
	for (size_t i = 0; i < s->n && ok; i++)
		if (errs[i] == CN_ERR_NO_KEY)
			errs[i] = CN_OK;
	return cn_ec__reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_delete_data(cn_ec_set *s, const char *vol, const char *key, const char *data_id)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->delete_data(D(s, i), vol, key,
		                                              data_id && data_id[0] ? data_id : NULL)
		                  : CN_ERR_OFFLINE;
	return cn_ec__reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_upload_take(cn_ec_writer *w, const char *vol, const char *upload_id, const char *dst,
                         const cn_ec_meta *m)
{
	cn_ec_set *s = w->s;
	cn_err e = writer_finish(w);
	if (e)
		return e;
	if (m->size != w->written)
		return CN_ERR_INVALID;
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) && w->ok[i]
		          ? D(s, i)->ops->upload_take(D(s, i), w->tmp_id, w->data_id, PART_NAME, vol, upload_id, dst)
		          : CN_ERR_OFFLINE;
	return cn_ec__reduce_quorum(errs, s->n, writer_quorum(w));
}
