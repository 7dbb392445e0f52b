/* bucket.c: buckets. A bucket is a folder on every drive of every set, with its creation
 * time and configuration documents as system files on every set. Make, head, delete and
 * list (object.h); the bucket-wide system files (object_int.h); and what keeps every drive
 * holding every bucket: bucket heal (EC-9), restoring the buckets onto drives formatted into
 * an existing deployment, and purging the folders of buckets deleted while some drives
 * were away (EC-11). Bucket creation and deletion hold the namespace lock exclusively (OBJ-5,
 * object.c). */
#include "object/object_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bucket-wide system files: on every set, read from the first set whose drives answer. */

cn_err cn_obj__read_sys(cn_obj_store *s, const char *name, size_t max, cn_buf *out)
{
	cn_err last = CN_ERR_QUORUM;
	for (size_t i = 0; i < s->nsets; i++) {
		cn_ec_set *set = s->sets[i];
		size_t n = cn_ec_set_ndrives(set), absent = 0;
		unsigned par, rrs;
		cn_ec_set_parity(set, &par, &rrs);
		for (size_t d = 0; d < n; d++) {
			out->len = 0;
			cn_err e = cn_ec_read_sys(set, d, name, max, out);
			if (e == CN_OK || e == CN_ERR_TOO_LARGE)
				return e;
			if (e == CN_ERR_NOT_FOUND && ++absent > par)
				return e; /* a write reached all but at most `par` drives */
			if (e != CN_ERR_NOT_FOUND)
				last = e;
		}
	}
	return last;
}

cn_err cn_obj__write_sys_every(cn_obj_store *s, const char *name, const void *p, size_t len)
{
	cn_err e = CN_OK;
	for (size_t i = 0; i < s->nsets; i++) {
		cn_err se = cn_ec_write_sys_all(s->sets[i], name, p, len);
		if (!e)
			e = se;
	}
	return e;
}

cn_err cn_obj__remove_sys_every(cn_obj_store *s, const char *name)
{
	cn_err e = CN_OK;
	for (size_t i = 0; i < s->nsets; i++) {
		cn_err se = cn_ec_remove_sys_all(s->sets[i], name);
		if (!e && se != CN_ERR_NOT_FOUND)
			e = se;
	}
	return e;
}

cn_err cn_obj__stat_bucket(cn_obj_store *s, const char *bucket)
{
	for (size_t i = 0; i < s->nsets; i++) {
		cn_err e = cn_ec_stat_vol(s->sets[i], bucket, NULL);
		if (e)
			return e;
	}
	return CN_OK;
}

static int64_t bucket_created(cn_obj_store *s, const char *name, int64_t fallback)
{
	char path[96];
	cn_buf b;
	cn_buf_init(&b);
	snprintf(path, sizeof path, "buckets/%s", name);
	int64_t ms = fallback;
	if (cn_obj__read_sys(s, path, 256, &b) == CN_OK && b.p) {
		long long v;
		if (sscanf(b.p, "created_ms %lld", &v) == 1 && v >= 0)
			ms = v;
	}
	cn_buf_fini(&b);
	return ms;
}

/* Bucket operations touch every set of every pool: a bucket is a folder on every drive. */
cn_err cn_obj_make_bucket(cn_obj_store *s, const char *name)
{
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_BAD_BUCKET_NAME;
	char path[96], body[64];
	pthread_rwlock_wrlock(&s->ns_lock);
	cn_err e = CN_OK;
	size_t existed = 0;
	for (size_t i = 0; i < s->nsets && !e; i++) {
		e = cn_ec_make_vol(s->sets[i], name);
		if (e == CN_ERR_BUCKET_EXISTS) { /* everywhere: it exists; somewhere: finish it */
			existed++;
			e = CN_OK;
		}
	}
	if (!e && existed == s->nsets)
		e = CN_ERR_BUCKET_EXISTS;
	if (!e) {
		snprintf(path, sizeof path, "buckets/%s", name);
		int n = snprintf(body, sizeof body, "created_ms %lld\n", (long long)cn_now_ms());
		e = cn_obj__write_sys_every(s, path, body, (size_t)n);
	}
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier(s);
	return e;
}

cn_err cn_obj_head_bucket(cn_obj_store *s, const char *name, cn_bucket_info *out)
{
	int64_t mtime = 0;
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_NO_BUCKET;
	cn_err e = cn_ec_stat_vol(s->sets[0], name, &mtime);
	for (size_t i = 1; i < s->nsets && !e; i++)
		e = cn_ec_stat_vol(s->sets[i], name, NULL);
	if (e)
		return e;
	if (out) {
		cn_strlcpy(out->name, name, sizeof out->name);
		out->created_ms = bucket_created(s, name, mtime);
	}
	return CN_OK;
}

cn_err cn_obj_delete_bucket(cn_obj_store *s, const char *name)
{
	char path[96];
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_NO_BUCKET;
	pthread_rwlock_wrlock(&s->ns_lock); /* OBJ-5 */
	cn_err e = CN_OK;
	size_t gone = 0, i;
	bool *deleted = calloc(s->nsets, sizeof *deleted);
	if (!deleted) {
		pthread_rwlock_unlock(&s->ns_lock);
		return CN_ERR_NOMEM;
	}
	/* set by set; a set that still holds objects stops it, and the sets already emptied
	 * get their folder back (no commit can run meanwhile: OBJ-5) */
	for (i = 0; i < s->nsets; i++) {
		cn_err de = cn_ec_delete_vol(s->sets[i], name);
		if (de == CN_ERR_NO_BUCKET)
			continue;
		if (de) {
			e = de;
			break;
		}
		deleted[i] = true;
		gone++;
	}
	if (e) {
		for (size_t j = 0; j < i; j++)
			if (deleted[j])
				cn_ec_make_vol(s->sets[j], name);
	} else if (gone == 0) {
		e = CN_ERR_NO_BUCKET;
	}
	if (!e) {
		snprintf(path, sizeof path, "buckets/%s", name);
		cn_obj__remove_sys_every(s, path);
		cn_obj__bucket_gone(s, name);
		cn_obj__versioning_forget(s, name);
	}
	pthread_rwlock_unlock(&s->ns_lock);
	free(deleted);
	if (!e)
		e = cn_obj__barrier(s);
	return e;
}

static int bucket_cmp(const void *a, const void *b)
{
	return strcmp(((const cn_bucket_info *)a)->name, ((const cn_bucket_info *)b)->name);
}

cn_err cn_obj_list_buckets(cn_obj_store *s, cn_bucket_info **out, size_t *n)
{
	cn_drive_vol *v = NULL;
	size_t nv = 0;
	*out = NULL;
	*n = 0;
	cn_err e = CN_ERR_QUORUM;
	for (size_t i = 0; i < s->nsets && e; i++) /* every set has every bucket: the first that answers */
		e = cn_ec_list_vols(s->sets[i], &v, &nv);
	if (e)
		return e;
	cn_bucket_info *b = calloc(nv ? nv : 1, sizeof *b);
	if (!b) {
		free(v);
		return CN_ERR_NOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < nv; i++) {
		if (!cn_obj_bucket_name_valid(v[i].name))
			continue;
		cn_strlcpy(b[k].name, v[i].name, sizeof b[k].name);
		b[k].created_ms = bucket_created(s, v[i].name, v[i].created_ms);
		k++;
	}
	free(v);
	qsort(b, k, sizeof *b, bucket_cmp);
	*out = b;
	*n = k;
	return CN_OK;
}

/* Every drive holds every bucket: restored onto new drives, made where missing (EC-9),
 * removed where deleted while the drive was away (EC-11). */

static int vol_cmp(const void *a, const void *b)
{
	return strcmp(((const cn_drive_vol *)a)->name, ((const cn_drive_vol *)b)->name);
}

/* Copies system file `name` from a drive that has it (not one of the new ones) to every
 * new drive. */
static void copy_sys(cn_obj_store *s, const bool *is_new, const char *name, cn_buf *b)
{
	bool got = false;
	for (size_t i = 0, at = 0; i < s->nsets && !got; i++)
		for (size_t d = 0; d < cn_ec_set_ndrives(s->sets[i]); d++, at++)
			if (!got && !is_new[at]) {
				b->len = 0;
				got = cn_ec_read_sys(s->sets[i], d, name, 256 * 1024, b) == CN_OK;
			}
	for (size_t i = 0, at = 0; i < s->nsets && got; i++)
		for (size_t d = 0; d < cn_ec_set_ndrives(s->sets[i]); d++, at++)
			if (is_new[at])
				cn_ec_write_sys(s->sets[i], d, name, b->p, b->len);
}

/* The buckets onto drives formatted into an existing deployment: their folders on every
 * set, and their system files (created_ms, configuration documents) copied from another
 * drive. Objects come back by healing. The buckets are the union of every old drive's (a
 * set's listing asks one drive, which may be a new one). */
void cn_obj__restore_buckets(cn_obj_store *s, const bool *is_new)
{
	cn_drive_vol *all = NULL;
	size_t n = 0;
	for (size_t i = 0, at = 0; i < s->nsets; i++)
	for (size_t d = 0; d < cn_ec_set_ndrives(s->sets[i]); d++, at++) {
		cn_drive_vol *v;
		size_t nv;
		if (is_new[at] || cn_ec_list_vols_at(s->sets[i], d, &v, &nv))
			continue;
		cn_drive_vol *na = realloc(all, (n + nv + 1) * sizeof *na);
		if (!na) {
			free(v);
			break;
		}
		all = na;
		memcpy(all + n, v, nv * sizeof *v);
		n += nv;
		free(v);
	}
	if (n)
		qsort(all, n, sizeof *all, vol_cmp);
	cn_buf b;
	cn_buf_init(&b);
	for (size_t k = 0; k < n; k++) {
		if ((k && !strcmp(all[k].name, all[k - 1].name)) || !cn_obj_bucket_name_valid(all[k].name))
			continue;
		for (size_t i = 0; i < s->nsets; i++)
			cn_ec_make_vol(s->sets[i], all[k].name); /* created where missing */
		char path[160];
		snprintf(path, sizeof path, "buckets/%s", all[k].name);
		copy_sys(s, is_new, path, &b);
		for (size_t c = 0; cn_obj__config_path_at(c, all[k].name, path, sizeof path); c++)
			if (path[0])
				copy_sys(s, is_new, path, &b);
		cn_log(CN_LOG_INFO, NULL, "object: bucket %s restored onto the new drive(s)", all[k].name);
	}
	cn_buf_fini(&b);
	free(all);
	for (size_t i = 0; i < s->nsets && s->cfg.durable; i++)
		cn_ec_sync(s->sets[i]);
}

void cn_obj__heal_buckets(cn_obj_store *s)
{
	for (size_t i = 0; i < s->nsets; i++) {
		cn_drive_vol *v;
		size_t nv;
		if (cn_ec_list_vols(s->sets[i], &v, &nv))
			continue;
		for (size_t j = 0; j < nv; j++)
			if (cn_obj_bucket_name_valid(v[j].name))
				cn_ec_make_vol(s->sets[i], v[j].name); /* made where missing */
		free(v);
	}
	for (size_t i = 0; i < s->nsets && s->cfg.durable; i++)
		cn_ec_sync(s->sets[i]);
}

size_t cn_obj__purge_dangling_buckets(cn_obj_store *s, bool dry_run)
{
	cn_drive_vol *keep = NULL; /* the buckets every set lists */
	size_t nkeep = 0, found = 0;
	bool whole = true;
	for (size_t i = 0; i < s->nsets && whole; i++) {
		cn_drive_vol *v, *nk;
		size_t nv;
		if (cn_ec_list_vols(s->sets[i], &v, &nv)) {
			whole = false;
			break;
		}
		if ((nk = realloc(keep, (nkeep + nv + 1) * sizeof *nk))) {
			keep = nk;
			memcpy(keep + nkeep, v, nv * sizeof *v);
			nkeep += nv;
		}
		free(v);
		whole = nk != NULL;
	}
	for (size_t i = 0; i < s->nsets && whole; i++) {
		char **names;
		size_t n;
		if (cn_ec_dangling_vols(s->sets[i], keep, nkeep, &names, &n))
			continue;
		for (size_t j = 0; j < n; j++) {
			if (!cn_obj_bucket_name_valid(names[j]))
				continue;
			cn_err e = dry_run ? CN_OK : cn_ec_purge_vol(s->sets[i], names[j]);
			cn_log(e ? CN_LOG_WARN : CN_LOG_INFO, NULL, "heal: bucket folder %s (set %zu) is on too "
			       "few drives to be a bucket (deleted while they were away): %s%s", names[j], i,
			       dry_run ? "found (dry run)" : e ? "not removed: " : "removed",
			       e ? cn_err_str(e) : "");
			found++;
		}
		cn_drive_free_names(names, n);
	}
	free(keep);
	return found;
}
