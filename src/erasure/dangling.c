/* erasure/dangling: finding what no read can return, for heal to remove: data folders
 * no record of the key references (cn_ec_orphan_data), versions below their read quorum
 * on every drive that can answer (EC-10, cn_ec_purge_dangling), and the keys that have data
 * folders at all (cn_ec_data_keys). Every drive is asked; a drive that cannot answer may
 * hold anything, so it keeps everything from being called orphaned or dangling. */
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdlib.h>
#include <string.h>

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
		if (!e) /* EC-15: a previous record's data is still the key's */
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

/* EC-10. A version no read can ever return (erasure.h, cn_ec_purge_dangling): every drive's
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
	/* EC-15: a current version also counts the drives holding it as their previous record
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
	for (size_t d = s->n; d-- > 0;) { /* EC-16: from the last slot down, as deletes */
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
		cn_rcache_invalidate(s->rc, (unsigned)s->n, vol, key); /* RCACHE-1 */
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
		qsort(a.v, a.n, sizeof *a.v, cn_ec__name_cmp);
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
