/* erasure/heal: rebuilding one version of a key on the drives of a coded set that miss it
 * or hold it damaged (cn_ec_heal, erasure.h). Heal reads every slot's record (no early-out,
 * quorum.c EC-7; never through the record cache: erasure_int.h) and, for a version in files,
 * every shard (read.c EC-3's hash check) and each shard file's size. A slot whose record is
 * missing, stale or only its previous one (quorum.c EC-15), or whose shards are damaged, is
 * bad: each block is decoded from K good shards, encoded again and the bad slots' shards
 * written into their tmp areas; then each bad slot gets its data folder and record, a
 * commit of its own (write.c EC-1: the data before the record). */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One heal of one version. */
typedef struct heal_job {
	cn_ec_set *s;
	const char *vol, *key, *vid;          /* vid NULL: the current version */
	cn_ec_reader *r;                      /* the version, opened with a full read */
	cn_ec_meta m;                         /* its record */
	bool is_inline;                       /* its data is in the records */
	bool bad[CN_EC_MAX_DRIVES];           /* the slot is rewritten */
	char tmp_id[33];
	unsigned char *streams[CN_EC_MAX_DRIVES], *sbase; /* inline: each slot's shard stream */
	size_t slen[CN_EC_MAX_DRIVES];
	cn_ec_heal_result *res;
} heal_job;

/* The slots whose record is missing or stale, or holds the version as its previous record. */
static void find_bad_records(heal_job *h)
{
	cn_ec_set *s = h->s;
	cn_ec_reader *r = h->r;
	for (size_t d = 0; d < s->n; d++) {
		if (!D(s, d) || r->offline[d])
			continue; /* offline: nothing to write to */
		h->bad[d] = !r->good[d] || r->prev[d]; /* EC-15: a previous record is rewritten current */
		h->res->from_prev |= r->prev[d];
	}
}

/* The slots with a shard that is unreadable or fails its hash, or a shard file longer than
 * its record says (a version in files). */
static cn_err find_bad_shards(heal_job *h)
{
	cn_ec_set *s = h->s;
	cn_ec_reader *r = h->r;
	size_t fsl = cn_codec_shard_len(r->c, r->block_size);
	unsigned char *tmp = malloc(HASH_LEN + fsl);
	cn_err e = tmp ? CN_OK : CN_ERR_NOMEM;
	for (size_t p = 0; !e && p < r->nparts; p++) {
		int64_t psize = r->ends[p] - (p ? r->ends[p - 1] : 0);
		size_t nb = (size_t)((psize + r->block_size - 1) / r->block_size);
		for (size_t d = 0; d < s->n; d++) {
			if (!D(s, d) || h->bad[d])
				continue;
			for (size_t b = 0; b < nb && !h->bad[d]; b++) {
				size_t bl = psize - (int64_t)b * r->block_size < (int64_t)r->block_size
				            ? (size_t)(psize - (int64_t)b * r->block_size) : r->block_size;
				unsigned char *at;
				if (!cn_ec__read_shard(r, p, b, d, cn_codec_shard_len(r->c, bl), tmp, &at))
					h->bad[d] = true;
			}
			/* a longer file than its record says is also damage */
			if (!h->bad[d] && cn_ec__coded_file(r, p, d)) {
				int64_t want = cn_codec_shard_file_size(r->c, r->block_size, psize) +
				               (int64_t)nb * HASH_LEN;
				if (D(s, d)->ops->rfile_size(r->cf[d]) != want)
					h->bad[d] = true;
			}
		}
	}
	free(tmp);
	return e;
}

/* An inline version: its bytes decoded and encoded again into every slot's shard stream. */
static cn_err encode_inline(heal_job *h)
{
	size_t size = (size_t)h->m.size, got;
	unsigned char *all = malloc(size ? size : 1);
	cn_err e = all ? CN_OK : CN_ERR_NOMEM;
	if (!e)
		e = cn_ec_reader_read(h->r, 0, all, size, &got);
	if (!e)
		e = cn_ec__encode_streams(h->r->c, all, size, h->r->dist, h->s->n, &h->sbase, h->streams,
		                          h->slen);
	free(all);
	return e;
}

/* Part p's shard files of the bad slots, written into their tmp areas: each block decoded
 * (from K good shards), joined, encoded again; shards: n shards of a full block. */
static cn_err rebuild_part(heal_job *h, size_t p, unsigned char *shards)
{
	cn_ec_set *s = h->s;
	cn_ec_reader *r = h->r;
	size_t n = s->n;
	cn_drive_file *f[CN_EC_MAX_DRIVES] = { 0 };
	cn_err e = CN_OK;
	char name[32];
	snprintf(name, sizeof name, "part.%zu", p + 1);
	for (size_t d = 0; d < n && !e; d++)
		if (h->bad[d] &&
		    (e = D(s, d)->ops->create_file(D(s, d), h->tmp_id, h->m.data_id, name, &f[d])))
			cn_log(CN_LOG_WARN, NULL, "erasure: heal %s/%s: drive %s: %s", h->vol, h->key,
			       D(s, d)->endpoint, cn_err_str(e));
	int64_t psize = r->ends[p] - (p ? r->ends[p - 1] : 0);
	for (int64_t boff = 0; !e && boff < psize; boff += r->block_size) {
		size_t bl = psize - boff < (int64_t)r->block_size ? (size_t)(psize - boff) : r->block_size;
		if (!r->blk && !(r->blk = malloc(r->block_size))) {
			e = CN_ERR_NOMEM;
			break;
		}
		if ((e = cn_ec__load_block(r, p, (size_t)(boff / r->block_size))))
			break;
		cn_codec_join(r->c, r->dptr, bl, r->blk);
		size_t sl = cn_codec_shard_len(r->c, bl);
		unsigned char *ptr[CN_EC_MAX_DRIVES], hashes[CN_EC_MAX_DRIVES][HASH_LEN];
		for (size_t j = 0; j < n; j++)
			ptr[j] = shards + j * sl;
		if ((e = cn_codec_encode(r->c, r->blk, bl, ptr, hashes)))
			break;
		for (size_t d = 0; d < n && !e; d++) {
			if (!h->bad[d])
				continue;
			unsigned j = r->dist[d];
			e = D(s, d)->ops->file_write(f[d], hashes[j], HASH_LEN);
			if (!e)
				e = D(s, d)->ops->file_write(f[d], ptr[j], sl);
		}
	}
	for (size_t d = 0; d < n; d++) {
		if (!f[d])
			continue;
		cn_err ce = D(s, d)->ops->file_close(f[d], !e);
		f[d] = NULL;
		if (!e)
			e = ce;
	}
	return e;
}

/* A version in files: every part's shard files of the bad slots, in their tmp areas. */
static cn_err rebuild_files(heal_job *h)
{
	unsigned char *shards = malloc(h->s->n * cn_codec_shard_len(h->r->c, h->r->block_size));
	cn_err e = shards ? CN_OK : CN_ERR_NOMEM;
	for (size_t p = 0; !e && p < h->r->nparts; p++)
		e = rebuild_part(h, p, shards);
	free(shards);
	return e;
}

/* Replaces bad slot d's data folder and record (its own commit) and counts the outcome. */
static void replace_slot(heal_job *h, size_t d, cn_buf *rec)
{
	cn_ec_set *s = h->s;
	cn_ec_reader *r = h->r;
	cn_ec_meta *m = &h->m;
	cn_ec__fill_erasure_kd(m, r->k, r->m, r->dist, s->n, d);
	unsigned char *saved = m->inline_data;
	size_t saved_len = m->inline_len;
	if (h->is_inline) {
		m->has_inline = true;
		m->inline_data = h->streams[d];
		m->inline_len = h->slen[d];
	} else {
		/* the damaged folder goes first: a rename cannot replace a non-empty one */
		D(s, d)->ops->delete_data(D(s, d), h->vol, h->key, m->data_id);
	}
	cn_err de = CN_OK;
	if (h->vid) {
		/* a noncurrent version: its data folder (moved in on its own), then its record */
		if (!h->is_inline)
			de = D(s, d)->ops->move_data(D(s, d), h->tmp_id, m->data_id, h->vol, h->key);
		rec->len = 0;
		if (!de)
			de = cn_ec_meta_encode(m, rec);
		if (!de)
			de = D(s, d)->ops->version_write(D(s, d), h->vol, h->key, h->vid, rec->p, rec->len);
	} else {
		de = cn_ec__commit_slot(s, d, h->tmp_id, h->is_inline ? NULL : m->data_id, h->vol, h->key,
		                        m, rec);
	}
	m->inline_data = saved;
	m->inline_len = saved_len;
	if (de) {
		cn_log(CN_LOG_WARN, NULL, "erasure: heal %s/%s: drive %s: %s", h->vol, h->key,
		       D(s, d)->endpoint, cn_err_str(de));
		h->res->drives_failed++;
	} else {
		h->res->drives_healed++;
		h->res->current_slots |= 1ull << d;
		h->res->bytes_written += h->is_inline
		                         ? (int64_t)h->slen[d]
		                         : cn_codec_shard_file_size(r->c, r->block_size, m->size);
		if (!h->vid && D(s, d)->ops->prev_drop) /* EC-15: not the rewritten record's */
			D(s, d)->ops->prev_drop(D(s, d), h->vol, h->key);
	}
}

/* Rebuilds the bad slots' data and replaces their records; whatever a failed rebuild
 * left in tmp is removed. */
static cn_err rebuild(heal_job *h)
{
	cn_ec_set *s = h->s;
	cn_drive_random_id(h->tmp_id);
	cn_err e = h->is_inline ? encode_inline(h) : rebuild_files(h);
	if (!e) {
		cn_buf rec;
		cn_buf_init(&rec);
		for (size_t d = 0; d < s->n; d++)
			if (h->bad[d])
				replace_slot(h, d, &rec);
		cn_buf_fini(&rec);
	}
	for (size_t d = 0; d < s->n; d++)
		if (h->bad[d] && D(s, d))
			D(s, d)->ops->abort_tmp(D(s, d), h->tmp_id);
	cn_rcache_invalidate(s->rc, (unsigned)s->n, h->vol, h->key);
	free(h->sbase);
	return e;
}

cn_err cn_ec_heal(cn_ec_set *s, const char *vol, const char *key, const char *vid, bool dry_run,
                  cn_ec_heal_result *res)
{
	memset(res, 0, sizeof *res);
	if (!coded(s))
		return CN_OK; /* one drive: nothing to rebuild from */
	heal_job h = { .s = s, .vol = vol, .key = key, .vid = vid, .res = res };
	cn_ec_meta_init(&h.m);
	cn_err e = cn_ec__open_version(s, vol, key, vid, true, &h.m, &h.r);
	if (e) {
		cn_ec_meta_fini(&h.m);
		return e;
	}
	h.is_inline = h.m.has_inline || h.m.data_id[0] == 0;
	find_bad_records(&h);
	if (!h.is_inline)
		e = find_bad_shards(&h);
	size_t nbad = 0;
	for (size_t d = 0; d < s->n; d++) {
		nbad += h.bad[d];
		if (D(s, d) && !h.r->offline[d] && !h.bad[d])
			res->current_slots |= 1ull << d;
	}
	res->drives_bad = (unsigned)nbad;
	if (!e && nbad > 0 && !dry_run)
		e = rebuild(&h);
	cn_ec_reader_close(h.r);
	cn_ec_meta_fini(&h.m);
	return e;
}
