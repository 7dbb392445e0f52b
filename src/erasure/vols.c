/* erasure/vols: a set's buckets, which are folders (vols) on each of its drives: made and
 * removed with write quorum, listed when K drives hold them (EC-9), and the ones fewer than
 * K drives hold found for removal (EC-11). */
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdlib.h>
#include <string.h>

/* The first online slot at or after i (for one-drive questions), or n. */
static size_t first_drive(const cn_ec_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (D(s, i))
			return i;
	return s->n;
}

cn_err cn_ec_make_vol(cn_ec_set *s, const char *vol)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->make_vol(D(s, i), vol) : CN_ERR_OFFLINE;
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_stat_vol(cn_ec_set *s, const char *vol, int64_t *mtime_ms)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	size_t ok = 0, rq = read_quorum(s);
	for (size_t i = 0; i < s->n; i++)
		errs[i] = CN_ERR_OFFLINE;
	/* the drives in turn until a read quorum has the vol: the others cannot change that
	 * answer (a PUT asks this before its body; 2 of 4 stats instead of 4) */
	for (size_t i = 0; i < s->n && ok < rq; i++) {
		errs[i] = D(s, i) ? D(s, i)->ops->stat_vol(D(s, i), vol, ok ? NULL : mtime_ms)
		                  : CN_ERR_OFFLINE;
		if (coded(s))
			errs[i] = cn_ec__trust_miss(s, i, errs[i]);
		ok += errs[i] == CN_OK;
	}
	return cn_ec__reduce_quorum(errs, s->n, rq);
}

cn_err cn_ec_delete_vol(cn_ec_set *s, const char *vol)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	/* one drive at a time: the first that finds an object stops the deletion, and the
	 * drives that already removed the folder get it back */
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = D(s, i) ? D(s, i)->ops->delete_vol(D(s, i), vol) : CN_ERR_OFFLINE;
		if (errs[i] == CN_ERR_BUCKET_NOT_EMPTY) {
			for (size_t j = 0; j < i; j++)
				if (errs[j] == CN_OK)
					D(s, j)->ops->make_vol(D(s, j), vol);
			return CN_ERR_BUCKET_NOT_EMPTY;
		}
	}
	cn_rcache_clear(s->rc);
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

static int vol_name_cmp(const void *a, const void *b)
{
	return strcmp(((const cn_drive_vol *)a)->name, ((const cn_drive_vol *)b)->name);
}

/* EC-9. A bucket is made and removed on write-quorum drives: one made while a drive was
 *     offline is on at least W drives, the leftovers of a removed one on at most n - W < K.
 *     A set lists the vols at least K of its drives hold, asking every online drive (one
 *     drive's list hid a bucket made while it was offline, and showed one removed then);
 *     cn_obj's bucket heal makes the listed ones where missing. */

/* Every answering drive's vols, sorted by name (one entry per drive that holds it);
 * *answered: how many drives listed theirs; *last: the last listing error. */
static cn_err gather_vols(cn_ec_set *s, cn_drive_vol **out, size_t *total_out, size_t *answered,
                          cn_err *last)
{
	cn_drive_vol *all = NULL;
	size_t total = 0;
	*answered = 0;
	*last = CN_ERR_QUORUM;
	for (size_t d = 0; d < s->n; d++) {
		cn_drive_vol *v;
		size_t nv;
		/* a drive whose folder is gone lists nothing: that is no answer */
		cn_err e = cn_ec__drive_online(s, d) ? D(s, d)->ops->list_vols(D(s, d), &v, &nv) : CN_ERR_OFFLINE;
		if (e) {
			*last = e == CN_ERR_NOMEM ? e : *last;
			continue;
		}
		(*answered)++;
		cn_drive_vol *na = nv ? realloc(all, (total + nv) * sizeof *na) : all;
		if (nv && !na) {
			free(v);
			free(all);
			return CN_ERR_NOMEM;
		}
		all = na;
		if (nv)
			memcpy(all + total, v, nv * sizeof *v);
		total += nv;
		free(v);
	}
	if (total > 1)
		qsort(all, total, sizeof *all, vol_name_cmp);
	*out = all;
	*total_out = total;
	return CN_OK;
}

cn_err cn_ec_list_vols(cn_ec_set *s, cn_drive_vol **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!coded(s)) {
		size_t i = first_drive(s);
		return i == s->n ? CN_ERR_QUORUM : D(s, i)->ops->list_vols(D(s, i), out, n);
	}
	cn_drive_vol *all;
	size_t total, answered;
	cn_err last, e = gather_vols(s, &all, &total, &answered, &last);
	if (e)
		return e;
	if (answered < read_quorum(s)) {
		free(all);
		return last;
	}
	size_t k = 0;
	for (size_t i = 0; i < total;) {
		size_t j = i + 1;
		while (j < total && !strcmp(all[j].name, all[i].name))
			j++;
		if (j - i >= read_quorum(s))
			all[k++] = all[i];
		i = j;
	}
	*out = all;
	*n = k;
	return CN_OK;
}

/* EC-11. A vol (bucket folder) that fewer than K drives hold, even counting every drive
 *      that cannot list its vols, was deleted while those drives were away: no quorum
 *      listing shows it (EC-9) and no new bucket can be made from it; heal removes it with
 *      whatever stale records it holds. Only for names the caller does not keep (the
 *      buckets of every set), under the namespace lock (no bucket made or removed
 *      meanwhile). */
cn_err cn_ec_dangling_vols(cn_ec_set *s, const cn_drive_vol *keep, size_t nkeep, char ***out,
                           size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!coded(s))
		return CN_OK;
	cn_drive_vol *all;
	size_t total, answered;
	cn_err last, e = gather_vols(s, &all, &total, &answered, &last);
	if (e)
		return e;
	size_t unknown = s->n - answered, cap = 0;
	for (size_t i = 0; i < total && !e;) {
		size_t j = i + 1;
		while (j < total && !strcmp(all[j].name, all[i].name))
			j++;
		bool kept = false;
		for (size_t x = 0; x < nkeep && !kept; x++)
			kept = !strcmp(keep[x].name, all[i].name);
		if (!kept && (j - i) + unknown < read_quorum(s) &&
		    !cn_ec__names_add(out, n, &cap, all[i].name, false))
			e = CN_ERR_NOMEM;
		i = j;
	}
	free(all);
	if (e) {
		cn_drive_free_names(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return e;
}

cn_err cn_ec_purge_vol(cn_ec_set *s, const char *vol)
{
	cn_err e = CN_OK;
	for (size_t d = 0; d < s->n; d++) {
		if (!D(s, d) || !D(s, d)->ops->purge_vol)
			continue;
		cn_err de = D(s, d)->ops->purge_vol(D(s, d), vol);
		if (de && de != CN_ERR_NO_BUCKET && !e)
			e = de;
	}
	return e;
}

cn_err cn_ec_list_vols_at(cn_ec_set *s, size_t i, cn_drive_vol **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (i >= s->n || !D(s, i))
		return CN_ERR_OFFLINE;
	return D(s, i)->ops->list_vols(D(s, i), out, n);
}
