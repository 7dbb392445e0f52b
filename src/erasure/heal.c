/* erasure/heal: rebuilding one version of a key on the drives of a coded set that miss it
 * or hold it damaged (cn_ec_heal, erasure.h). Heal reads every slot's record (no early-out,
 * quorum.c E7; never through the record cache: erasure_int.h) and, for a version in files,
 * every shard (read.c E3's hash check) and each shard file's size. A slot whose record is
 * missing, stale or only its previous one (quorum.c E15), or whose shards are damaged, is
 * bad: each block is decoded from K good shards, encoded again and the bad slots' shards
 * written into their tmp areas; then each bad slot gets its data folder and record, a
 * commit of its own (write.c E1: the data before the record). */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err cn_ec_heal(cn_ec_set *s, const char *vol, const char *key, const char *vid, bool dry_run,
                  cn_ec_heal_result *res)
{
	memset(res, 0, sizeof *res);
	if (!coded(s))
		return CN_OK; /* one drive: nothing to rebuild from */
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *r = NULL;
	cn_err e = cn_ec__open_version(s, vol, key, vid, true, &m, &r);
	if (e) {
		cn_ec_meta_fini(&m);
		return e;
	}
	/* which slots need a rewrite: a missing/stale record, or any unreadable shard */
	bool bad[CN_EC_MAX_DRIVES] = { false };
	size_t nbad = 0;
	bool is_inline = m.has_inline || m.data_id[0] == 0;
	for (size_t d = 0; d < s->n; d++) {
		if (!D(s, d) || r->offline[d])
			continue; /* offline: nothing to write to */
		bad[d] = !r->good[d] || r->prev[d]; /* E15: a previous record is rewritten current */
		res->from_prev |= r->prev[d];
	}
	if (!is_inline) {
		size_t fsl = cn_codec_shard_len(r->c, r->block_size);
		unsigned char *tmp = malloc(HASH_LEN + fsl);
		if (!tmp)
			e = CN_ERR_NOMEM;
		for (size_t p = 0; !e && p < r->nparts; p++) {
			int64_t psize = r->ends[p] - (p ? r->ends[p - 1] : 0);
			size_t nb = (size_t)((psize + r->block_size - 1) / r->block_size);
			for (size_t d = 0; d < s->n; d++) {
				if (!D(s, d) || bad[d])
					continue;
				for (size_t b = 0; b < nb && !bad[d]; b++) {
					size_t bl = psize - (int64_t)b * r->block_size < (int64_t)r->block_size
					            ? (size_t)(psize - (int64_t)b * r->block_size) : r->block_size;
					unsigned char *at;
					if (!cn_ec__read_shard(r, p, b, d, cn_codec_shard_len(r->c, bl), tmp, &at))
						bad[d] = true;
				}
				/* a longer file than its record says is also damage */
				if (!bad[d] && cn_ec__coded_file(r, p, d)) {
					int64_t want = cn_codec_shard_file_size(r->c, r->block_size, psize) +
					               (int64_t)nb * HASH_LEN;
					if (D(s, d)->ops->rfile_size(r->cf[d]) != want)
						bad[d] = true;
				}
			}
		}
		free(tmp);
	}
	for (size_t d = 0; d < s->n; d++) {
		nbad += bad[d];
		if (D(s, d) && !r->offline[d] && !bad[d])
			res->current_slots |= 1ull << d;
	}
	res->drives_bad = (unsigned)nbad;
	if (e || nbad == 0 || dry_run) {
		cn_ec_reader_close(r);
		cn_ec_meta_fini(&m);
		return e;
	}
	/* rebuild: decode every block, re-encode, write the bad slots' shards */
	char tmp_id[33];
	cn_drive_random_id(tmp_id);
	cn_drive_file *f[CN_EC_MAX_DRIVES] = { 0 };
	size_t n = s->n;
	size_t fsl = cn_codec_shard_len(r->c, r->block_size);
	unsigned char *shards = malloc(n * fsl);
	unsigned char *streams[CN_EC_MAX_DRIVES] = { 0 }, *sbase = NULL;
	size_t slen[CN_EC_MAX_DRIVES] = { 0 };
	if (!shards)
		e = CN_ERR_NOMEM;
	if (!e && is_inline) {
		unsigned char *all = malloc(m.size ? (size_t)m.size : 1);
		size_t got;
		if (!all)
			e = CN_ERR_NOMEM;
		if (!e)
			e = cn_ec_reader_read(r, 0, all, (size_t)m.size, &got);
		if (!e)
			e = cn_ec__encode_streams(r->c, all, (size_t)m.size, r->dist, n, &sbase, streams, slen);
		free(all);
	}
	for (size_t p = 0; !e && !is_inline && p < r->nparts; p++) {
		char name[32];
		snprintf(name, sizeof name, "part.%zu", p + 1);
		for (size_t d = 0; d < n && !e; d++)
			if (bad[d] && (e = D(s, d)->ops->create_file(D(s, d), tmp_id, m.data_id, name, &f[d])))
				cn_log(CN_LOG_WARN, NULL, "erasure: heal %s/%s: drive %s: %s", vol, key,
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
				if (!bad[d])
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
	}
	/* replace the bad slots' data folder and record (per slot: its own commit) */
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t d = 0; d < n && !e; d++) {
		if (!bad[d])
			continue;
		cn_ec__fill_erasure_kd(&m, r->k, r->m, r->dist, n, d);
		unsigned char *saved = m.inline_data;
		size_t saved_len = m.inline_len;
		if (is_inline) {
			m.has_inline = true;
			m.inline_data = streams[d];
			m.inline_len = slen[d];
		} else {
			/* the damaged folder goes first: a rename cannot replace a non-empty one */
			D(s, d)->ops->delete_data(D(s, d), vol, key, m.data_id);
		}
		cn_err de = CN_OK;
		if (vid) {
			/* a noncurrent version: its data folder (moved in on its own), then its record */
			if (!is_inline)
				de = D(s, d)->ops->move_data(D(s, d), tmp_id, m.data_id, vol, key);
			rec.len = 0;
			if (!de)
				de = cn_ec_meta_encode(&m, &rec);
			if (!de)
				de = D(s, d)->ops->version_write(D(s, d), vol, key, vid, rec.p, rec.len);
		} else {
			de = cn_ec__commit_slot(s, d, tmp_id, is_inline ? NULL : m.data_id, vol, key, &m, &rec);
		}
		m.inline_data = saved;
		m.inline_len = saved_len;
		if (de) {
			cn_log(CN_LOG_WARN, NULL, "erasure: heal %s/%s: drive %s: %s", vol, key,
			       D(s, d)->endpoint, cn_err_str(de));
			res->drives_failed++;
		} else {
			res->drives_healed++;
			res->current_slots |= 1ull << d;
			res->bytes_written += is_inline ? (int64_t)slen[d]
			                                : cn_codec_shard_file_size(r->c, r->block_size, m.size);
			if (!vid && D(s, d)->ops->prev_drop) /* E15: not the rewritten record's */
				D(s, d)->ops->prev_drop(D(s, d), vol, key);
		}
	}
	for (size_t d = 0; d < n; d++) /* whatever a failed rebuild left in tmp */
		if (bad[d] && D(s, d))
			D(s, d)->ops->abort_tmp(D(s, d), tmp_id);
	cn_buf_fini(&rec);
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key);
	free(sbase);
	free(shards);
	cn_ec_reader_close(r);
	cn_ec_meta_fini(&m);
	return e;
}
