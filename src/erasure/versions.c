/* erasure/versions: what a key holds besides its current record, and edits of records in
 * place: noncurrent versions (keep, read, promote, delete), previous records (quorum.c
 * EC-15), metadata rewrites, and the name lists of versions and uploads merged across
 * drives (EC-8). */
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err cn_ec_version_keep(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* EC-12 */
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->version_keep(D(s, i), vol, key, vid) : CN_ERR_OFFLINE;
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

void cn_ec_prev_keep(cn_ec_set *s, const char *vol, const char *key)
{
	if (!coded(s))
		return; /* one drive: its rename is the whole commit */
	for (size_t i = 0; i < s->n; i++)
		if (D(s, i) && D(s, i)->ops->prev_keep)
			D(s, i)->ops->prev_keep(D(s, i), vol, key);
}

void cn_ec_prev_drop(cn_ec_set *s, const char *vol, const char *key)
{
	cn_ec_prev_drop_slots(s, vol, key, ~0ull);
}

void cn_ec_prev_drop_slots(cn_ec_set *s, const char *vol, const char *key, uint64_t slots)
{
	if (!coded(s))
		return;
	for (size_t i = 0; i < s->n; i++)
		if ((slots >> i & 1) && D(s, i) && D(s, i)->ops->prev_drop)
			D(s, i)->ops->prev_drop(D(s, i), vol, key);
}

cn_err cn_ec_version_read(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                          bool skip_inline, cn_ec_meta *m)
{
	return cn_ec__read_rec(s, REC_VERSION, vol, key, vid, skip_inline, m);
}

int cn_ec__name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* EC-8. Name lists (a key's noncurrent versions, an upload's files, a vol's uploads) come
 *     from M+1 drives, merged: a name written with write quorum is on all but at most M
 *     drives, so the union names every one whichever drive was wiped, replaced or offline
 *     during the write (one drive's list hid them from listings and from heal). A name
 *     the union shows may be a partial write or a leftover on a few drives: callers read
 *     each with quorum. Sorted, without duplicates; missing (CN_ERR_NOT_FOUND) only when
 *     every drive asked says so. */
cn_err cn_ec__union_names(cn_ec_set *s, bool uploads, bool every, const char *vol, const char *name,
                          char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t want = !coded(s) ? 1 : every ? s->n : (size_t)s->m + 1, asked = 0, missing = 0, total = 0;
	char **all = NULL;
	cn_err e = CN_OK, last = CN_ERR_QUORUM;
	for (size_t d = 0; d < s->n && asked < want && !e; d++) {
		if (!D(s, d))
			continue;
		char **v = NULL;
		size_t nv = 0;
		cn_err de = uploads ? D(s, d)->ops->upload_list(D(s, d), vol, name, &v, &nv)
		                    : D(s, d)->ops->version_list(D(s, d), vol, name, &v, &nv);
		if (de == CN_ERR_NOT_FOUND) {
			asked++;
			missing++;
			continue;
		}
		if (de) {
			last = de;
			continue;
		}
		asked++;
		if (nv) {
			char **na = realloc(all, (total + nv) * sizeof *na);
			if (!na) {
				cn_drive_free_names(v, nv);
				e = CN_ERR_NOMEM;
				break;
			}
			all = na;
			memcpy(all + total, v, nv * sizeof *v);
			total += nv;
		}
		free(v); /* the names moved into all */
	}
	if (!e && asked == 0)
		e = last;
	else if (!e && missing == asked)
		e = CN_ERR_NOT_FOUND;
	if (e) {
		cn_drive_free_names(all, total);
		return e;
	}
	if (total > 1)
		qsort(all, total, sizeof *all, cn_ec__name_cmp);
	size_t k = 0;
	for (size_t i = 0; i < total; i++) {
		if (k && !strcmp(all[k - 1], all[i]))
			free(all[i]);
		else
			all[k++] = all[i];
	}
	*out = all;
	*n = k;
	return CN_OK;
}

/* A name list (cn_drive_free_names' shape) that grows, name added unless unique is asked
 * and it is there already; false when out of memory. */
bool cn_ec__names_add(char ***v, size_t *n, size_t *cap, const char *name, bool unique)
{
	for (size_t i = 0; unique && i < *n; i++)
		if (!strcmp((*v)[i], name))
			return true;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		char **nv = realloc(*v, nc * sizeof *nv);
		if (!nv)
			return false;
		*v = nv;
		*cap = nc;
	}
	if (!((*v)[*n] = strdup(name)))
		return false;
	(*n)++;
	return true;
}

cn_err cn_ec_version_list(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n)
{
	return cn_ec__union_names(s, false, false, vol, key, vids, n); /* EC-8 */
}

cn_err cn_ec_version_list_all(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n)
{
	return cn_ec__union_names(s, false, true, vol, key, vids, n); /* EC-8, EC-10 */
}

cn_err cn_ec_version_delete(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, s->n / 2 + 1))
		return CN_ERR_QUORUM; /* EC-12 */
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->version_delete(D(s, i), vol, key, vid) : CN_ERR_OFFLINE;
	return cn_ec__reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_version_promote(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* EC-12 */
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->version_promote(D(s, i), vol, key, vid) : CN_ERR_OFFLINE;
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* RCACHE-1: a new current record */
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

/* Rewrites a record with edited meta on every drive holding the version: each drive keeps
 * its own erasure fields and inline shard stream (read back from that drive). */
static cn_err rewrite_meta(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                           cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* EC-12 */
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t d = 0; d < s->n; d++) {
		cn_ec_meta own;
		cn_ec_meta_init(&own);
		if (!D(s, d)) {
			errs[d] = CN_ERR_OFFLINE;
			continue;
		}
		if (coded(s)) {
			/* this drive's own record of the same version */
			errs[d] = cn_ec__read_one(s, d, vid ? REC_VERSION : REC_CURRENT, vol, key, vid, false,
			                          false, &own, NULL, NULL);
			if (!errs[d]) {
				cn_kv *mm = own.meta;
				size_t nm = own.nmeta;
				own.meta = m->meta;
				own.nmeta = m->nmeta;
				if (own.mtime_ms != m->mtime_ms || strcmp(own.data_id, m->data_id) ||
				    strcmp(own.version_id, m->version_id))
					errs[d] = CN_ERR_NO_KEY; /* stale: not this version; heal fixes it */
				rec.len = 0;
				if (!errs[d])
					errs[d] = cn_ec_meta_encode(&own, &rec);
				own.meta = mm;
				own.nmeta = nm;
			}
		} else {
			cn_ec__fill_erasure(s, m, d);
			rec.len = 0;
			errs[d] = cn_ec_meta_encode(m, &rec);
		}
		if (!errs[d]) {
			char tmp_id[33];
			cn_drive_random_id(tmp_id);
			errs[d] = vid ? D(s, d)->ops->version_write(D(s, d), vol, key, vid, rec.p, rec.len)
			              : D(s, d)->ops->rename_data(D(s, d), tmp_id, NULL, vol, key, rec.p, rec.len);
		}
		cn_ec_meta_fini(&own);
	}
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key);
	cn_buf_fini(&rec);
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_update_version_meta(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                                 cn_ec_meta *m)
{
	return rewrite_meta(s, vol, key, vid, m);
}

cn_err cn_ec_update_meta(cn_ec_set *s, const char *vol, const char *key, cn_ec_meta *m)
{
	if (!coded(s) && m->has_inline && m->inline_len != (size_t)m->size)
		return CN_ERR_INVALID;
	return rewrite_meta(s, vol, key, NULL, m);
}
