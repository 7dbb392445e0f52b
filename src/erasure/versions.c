/* erasure/versions: what a key holds besides its current record, and edits of records in
 * place: noncurrent versions (keep, read, promote, delete), previous records (quorum.c
 * E15), metadata rewrites, the name lists of versions and uploads merged across drives
 * (E8), and the checks that find data folders no record references and versions no read
 * can return (E10). */
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err cn_ec_version_keep(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* E12 */
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

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* E8. Name lists (a key's noncurrent versions, an upload's files, a vol's uploads) come
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
		qsort(all, total, sizeof *all, name_cmp);
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

/* Adds the data folder drive d's record of the kind (vid: REC_VERSION's) references to refs. */
static cn_err add_ref(cn_ec_set *s, size_t d, rec_kind kind, const char *vol, const char *key,
                      const char *vid, char ***refs, size_t *nr, size_t *cap)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_err e = cn_ec__read_one(s, d, kind, vol, key, vid, true, false, &m, NULL, NULL);
	if (e == CN_ERR_NO_KEY || e == CN_ERR_NOT_FOUND)
		e = CN_OK; /* none (removed meanwhile, or never there) */
	else if (!e && m.data_id[0] && !cn_ec__names_add(refs, nr, cap, m.data_id, false))
		e = CN_ERR_NOMEM;
	cn_ec_meta_fini(&m);
	return e;
}

cn_err cn_ec_orphan_data(cn_ec_set *s, const char *vol, const char *key, char ***ids, size_t *n)
{
	char **found = NULL, **refs = NULL;
	size_t nf = 0, capf = 0, nr = 0, capr = 0;
	cn_err e = CN_OK;
	*ids = NULL;
	*n = 0;
	for (size_t d = 0; !e && d < s->n; d++) {
		cn_drive *dr = D(s, d);
		if (!dr || d < s->read_skip) {
			e = CN_ERR_OFFLINE;
			break;
		}
		if (!dr->ops->data_list)
			continue;
		char **l = NULL;
		size_t ln = 0;
		e = dr->ops->data_list(dr, vol, key, &l, &ln);
		for (size_t i = 0; !e && i < ln; i++)
			if (!cn_ec__names_add(&found, &nf, &capf, l[i], true))
				e = CN_ERR_NOMEM;
		cn_drive_free_names(l, ln);
	}
	/* then what every drive's records reference (only when there is something to match:
	 * most keys have no data folder at all) */
	for (size_t d = 0; !e && nf && d < s->n; d++) {
		cn_drive *dr = D(s, d);
		char **vids = NULL;
		size_t nv = 0;
		e = add_ref(s, d, REC_CURRENT, vol, key, NULL, &refs, &nr, &capr);
		if (!e) /* E15: a previous record's data is still the key's */
			e = add_ref(s, d, REC_PREV, vol, key, NULL, &refs, &nr, &capr);
		if (!e)
			e = dr->ops->version_list(dr, vol, key, &vids, &nv);
		for (size_t i = 0; !e && i < nv; i++)
			e = add_ref(s, d, REC_VERSION, vol, key, vids[i], &refs, &nr, &capr);
		cn_drive_free_names(vids, nv);
	}
	size_t k = 0;
	for (size_t i = 0; i < nf; i++) {
		bool referenced = e != CN_OK; /* no whole view: nothing is called unreferenced */
		for (size_t j = 0; !referenced && j < nr; j++)
			referenced = !strcmp(found[i], refs[j]);
		if (referenced)
			free(found[i]);
		else
			found[k++] = found[i];
	}
	cn_drive_free_names(refs, nr);
	if (k == 0) {
		free(found);
		found = NULL;
	}
	*ids = found;
	*n = k;
	return e == CN_ERR_NOMEM ? e : CN_OK;
}

/* E10. A version no read can ever return (erasure.h, cn_ec_purge_dangling): every drive's
 *      record is read; each version present counts the drives holding it plus those that
 *      cannot answer (anything but the record or "no such key" from an online drive). When
 *      no version reaches its read quorum that way, the records are removed where they
 *      are. A drive that might hold a readable version keeps everything. */
cn_err cn_ec_purge_dangling(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                            bool dry_run, size_t *purged)
{
	*purged = 0;
	if (!coded(s))
		return CN_OK; /* one drive: what it holds is what reads return */
	cn_ec_meta ms[CN_EC_MAX_DRIVES];
	cn_err errs[CN_EC_MAX_DRIVES];
	uint64_t ids[CN_EC_MAX_DRIVES];
	size_t unknown = 0, have = 0;
	for (size_t d = 0; d < s->n; d++) {
		cn_ec_meta_init(&ms[d]);
		errs[d] = cn_ec__read_one(s, d, vid ? REC_VERSION : REC_CURRENT, vol, key, vid, true, false,
		                          &ms[d], NULL, NULL);
		if (errs[d] == CN_ERR_NOMEM) {
			for (size_t j = 0; j <= d; j++)
				cn_ec_meta_fini(&ms[j]);
			return CN_ERR_NOMEM;
		}
		if (!errs[d]) {
			ids[d] = cn_ec__rec_identity(&ms[d]);
			have++;
		} else if (errs[d] != CN_ERR_NO_KEY) {
			unknown++; /* offline, unreadable, corrupt, no bucket: it may hold anything */
		}
	}
	/* E15: a current version also counts the drives holding it as their previous record
	 * (and one held only so, too): it is readable */
	cn_ec_meta pm[CN_EC_MAX_DRIVES];
	cn_err pe[CN_EC_MAX_DRIVES];
	uint64_t pid[CN_EC_MAX_DRIVES];
	for (size_t d = 0; d < s->n; d++) {
		cn_ec_meta_init(&pm[d]);
		pe[d] = vid || !have || errs[d] == CN_ERR_OFFLINE
		        ? CN_ERR_NO_KEY
		        : cn_ec__read_one(s, d, REC_PREV, vol, key, NULL, true, false, &pm[d], &pid[d], NULL);
		if (pe[d] == CN_ERR_NOMEM) {
			for (size_t j = 0; j < s->n; j++)
				cn_ec_meta_fini(&ms[j]);
			for (size_t j = 0; j <= d; j++)
				cn_ec_meta_fini(&pm[j]);
			return CN_ERR_NOMEM;
		}
		if (pe[d] && pe[d] != CN_ERR_NO_KEY && errs[d] == CN_OK)
			unknown++; /* an unreadable previous record may hold anything */
	}
	bool dangling = have > 0;
	for (size_t c = 0; c < 2 * s->n && dangling; c++) {
		size_t d = c % s->n;
		bool cur = c < s->n;
		if (cur ? errs[d] != CN_OK : pe[d] != CN_OK)
			continue;
		uint64_t id = cur ? ids[d] : pid[d];
		size_t v = 0;
		for (size_t j = 0; j < s->n; j++)
			v += (!errs[j] && ids[j] == id) || (!pe[j] && pid[j] == id);
		const cn_ec_meta *cm = cur ? &ms[d] : &pm[d];
		if (v + unknown >= rec_quorum(s, cm) || v + unknown >= read_quorum(s))
			dangling = false; /* readable now, or maybe once the others answer */
	}
	for (size_t d = 0; d < s->n; d++)
		cn_ec_meta_fini(&pm[d]);
	cn_err e = CN_OK;
	for (size_t d = s->n; d-- > 0;) { /* E16: from the last slot down, as deletes */
		if (dangling && !errs[d]) {
			cn_err de = dry_run ? CN_OK
			            : vid ? D(s, d)->ops->version_delete(D(s, d), vol, key, vid)
			                  : D(s, d)->ops->delete_meta(D(s, d), vol, key);
			if (!de || de == CN_ERR_NO_KEY)
				(*purged)++;
			else if (!e)
				e = de;
			cn_log(CN_LOG_INFO, NULL, "erasure: %s/%s%s%s on drive %s is no readable version's "
			       "(%zu of %zu drives hold it)%s%s", vol, key, vid ? " version " : "", vid ? vid : "",
			       D(s, d)->endpoint, have, s->n, dry_run ? ": found (dry run)" : de ? ": " : ": removed",
			       de && !dry_run ? cn_err_str(de) : "");
		}
		cn_ec_meta_fini(&ms[d]);
	}
	if (dangling && !dry_run && !vid)
		cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* R1 */
	return e;
}

typedef struct dkeys_acc {
	char **v;
	size_t n, cap, max;
} dkeys_acc;

static cn_err dkeys_cb(void *ctx, const char *key, size_t keylen)
{
	(void)keylen;
	dkeys_acc *a = ctx;
	if (a->n == a->max)
		return CN_ERR__COUNT; /* full: stop this drive's listing */
	return cn_ec__names_add(&a->v, &a->n, &a->cap, key, false) ? CN_OK : CN_ERR_NOMEM;
}

cn_err cn_ec_data_keys(cn_ec_set *s, const char *vol, const char *prefix, size_t max, char ***keys,
                       size_t *n)
{
	dkeys_acc a = { NULL, 0, 0, max };
	cn_err e = CN_OK;
	for (size_t d = 0; d < s->n && !e && a.n < max; d++) {
		cn_drive *dr = D(s, d);
		if (!dr || d < s->read_skip || !dr->ops->data_keys)
			continue;
		cn_err de = dr->ops->data_keys(dr, vol, prefix, dkeys_cb, &a);
		if (de == CN_ERR_NOMEM)
			e = de; /* any other failure: this drive's keys wait for a later call */
	}
	if (a.n > 1)
		qsort(a.v, a.n, sizeof *a.v, name_cmp);
	size_t k = 0;
	for (size_t i = 0; i < a.n; i++) {
		if (k && !strcmp(a.v[k - 1], a.v[i]))
			free(a.v[i]);
		else
			a.v[k++] = a.v[i];
	}
	if (e || k == 0) {
		cn_drive_free_names(a.v, k);
		a.v = NULL;
		k = 0;
	}
	*keys = a.v;
	*n = k;
	return e;
}

cn_err cn_ec_version_list(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n)
{
	return cn_ec__union_names(s, false, false, vol, key, vids, n); /* E8 */
}

cn_err cn_ec_version_list_all(cn_ec_set *s, const char *vol, const char *key, char ***vids, size_t *n)
{
	return cn_ec__union_names(s, false, true, vol, key, vids, n); /* E8, E10 */
}

cn_err cn_ec_version_delete(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, s->n / 2 + 1))
		return CN_ERR_QUORUM; /* E12 */
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->version_delete(D(s, i), vol, key, vid) : CN_ERR_OFFLINE;
	return cn_ec__reduce_quorum(errs, s->n, s->n / 2 + 1);
}

cn_err cn_ec_version_promote(cn_ec_set *s, const char *vol, const char *key, const char *vid)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* E12 */
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->version_promote(D(s, i), vol, key, vid) : CN_ERR_OFFLINE;
	cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* R1: the current record changed */
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

/* Rewrites a record with edited meta on every drive holding the version: each drive keeps
 * its own erasure fields and inline shard stream (read back from that drive). */
static cn_err rewrite_meta(cn_ec_set *s, const char *vol, const char *key, const char *vid,
                           cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* E12 */
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
