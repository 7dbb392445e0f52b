/* object/versions: bucket versioning (object.h "versioning") over the erasure layer's
 * current record + noncurrent version records (erasure.h "versions").
 *
 * Layout of one key: the current (latest) version's record is the key's record, as for an
 * unversioned bucket, so GET/HEAD/LIST of the latest cost what they always did; older
 * versions are records named by their version id beside it, each with its own data folder.
 * Invariants (with OBJ-1..OBJ-5 of object.c, under the key's lock):
 *  VER-1. A write that must keep the current version first makes it noncurrent
 *      (cn_ec_version_keep: a hard link, so the current record stays valid) and only then
 *      commits the new current record. A crash between leaves a noncurrent copy of the
 *      current version: readers treat a noncurrent record whose id equals the current's as
 *      the current one (skipped in listings, removed when that version is deleted).
 *  VER-2. Removing the current version promotes the newest noncurrent one by a rename over
 *      the current record (atomic), or removes the record when none is left.
 *  VER-3. Data folders of versions that are replaced ("null" in a suspended bucket, or any
 *      version in an unversioned one) or deleted are removed only after the barrier (OBJ-4).
 *  VER-4. Version ids are 12 hex digits of the ms clock, 4 of a per-process sequence and 16
 *      random: newer versions of one key sort after older ones, ties broken by the id.
 *  VER-5. A key's new current record is strictly newer than the one it replaces (mtime at
 *      least the old one's + 1 ms, cn_obj__vprep, under the key's lock): versions are
 *      ordered by mtime, and within one ms the id alone could not place the null version
 *      (a PUT right after versioning was enabled listed the null version as the newer). */
#include "object/object_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VS_SLOTS 256

/* --- versioning state ---------------------------------------------------------------- */

static uint64_t vs_hash(const char *b)
{
	uint64_t h = 1469598103934665603ull;
	for (; *b; b++)
		h = (h ^ (unsigned char)*b) * 1099511628211ull;
	return h;
}

static cn_err load_versioning(cn_obj_store *s, const char *bucket, cn_versioning *out)
{
	cn_buf b;
	cn_buf_init(&b);
	cn_err e = cn_obj_bucket_config_get(s, bucket, "versioning", &b);
	*out = CN_VERSIONING_OFF;
	if (e == CN_ERR_NOT_FOUND)
		e = CN_OK;
	else if (!e && b.p && !strncmp(b.p, "Enabled", 7))
		*out = CN_VERSIONING_ENABLED;
	else if (!e && b.p && !strncmp(b.p, "Suspended", 9))
		*out = CN_VERSIONING_SUSPENDED;
	cn_buf_fini(&b);
	return e;
}

cn_err cn_obj__versioning(cn_obj_store *s, const char *bucket, cn_versioning *v)
{
	size_t slot = vs_hash(bucket) % VS_SLOTS;
	pthread_mutex_lock(&s->vs_mu);
	bool hit = s->vs[slot].valid && !strcmp(s->vs[slot].bucket, bucket);
	if (hit)
		*v = s->vs[slot].state;
	uint64_t gen = s->vs_gen;
	pthread_mutex_unlock(&s->vs_mu);
	if (hit)
		return CN_OK;
	cn_err e = load_versioning(s, bucket, v);
	if (e)
		return e;
	pthread_mutex_lock(&s->vs_mu);
	if (gen == s->vs_gen) { /* no change since the read began (as RCACHE-2) */
		snprintf(s->vs[slot].bucket, sizeof s->vs[slot].bucket, "%s", bucket);
		s->vs[slot].state = *v;
		s->vs[slot].valid = true;
	}
	pthread_mutex_unlock(&s->vs_mu);
	return CN_OK;
}

void cn_obj__versioning_forget(cn_obj_store *s, const char *bucket)
{
	size_t slot = vs_hash(bucket) % VS_SLOTS;
	pthread_mutex_lock(&s->vs_mu);
	s->vs[slot].valid = false;
	s->vs_gen++;
	pthread_mutex_unlock(&s->vs_mu);
}

cn_versioning cn_obj_versioning_of(cn_obj_store *s, const char *bucket)
{
	cn_versioning v = CN_VERSIONING_OFF;
	return cn_obj__versioning(s, bucket, &v) == CN_OK ? v : CN_VERSIONING_OFF;
}

cn_err cn_obj_get_versioning(cn_obj_store *s, const char *bucket, cn_versioning *out)
{
	cn_err e = cn_obj_head_bucket(s, bucket, NULL);
	return e ? e : cn_obj__versioning(s, bucket, out);
}

cn_err cn_obj_set_versioning(cn_obj_store *s, const char *bucket, cn_versioning v)
{
	if (v != CN_VERSIONING_ENABLED && v != CN_VERSIONING_SUSPENDED)
		return CN_ERR_INVALID;
	const char *doc = v == CN_VERSIONING_ENABLED ? "Enabled\n" : "Suspended\n";
	cn_err e = cn_obj_bucket_config_put(s, bucket, "versioning", doc, strlen(doc));
	cn_obj__versioning_forget(s, bucket);
	return e;
}

bool cn_obj_version_id_valid(const char *vid)
{
	if (!vid)
		return false;
	if (!strcmp(vid, "null"))
		return true;
	size_t n = strlen(vid);
	if (n != 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((vid[i] >= '0' && vid[i] <= '9') || (vid[i] >= 'a' && vid[i] <= 'f')))
			return false;
	return true;
}

static void new_version_id(char out[CN_EC_VERSION_ID_MAX + 1])
{
	static uint32_t seq;
	char rnd[33];
	cn_drive_random_id(rnd);
	uint32_t q = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
	snprintf(out, CN_EC_VERSION_ID_MAX + 1, "%012llx%04x%.16s",
	         (unsigned long long)cn_now_ms() & 0xffffffffffffull, q & 0xffffu, rnd); /* VER-4 */
}

/* The id a record answers to: "" (never-versioned) is the null version. */
static const char *rec_vid(const cn_ec_meta *m)
{
	return m->version_id[0] ? m->version_id : "null";
}

/* --- commits under versioning ---------------------------------------------------------- */

static void drop_add(cn_obj__vcommit *vc, const char *data_id)
{
	if (data_id && data_id[0] && vc->ndrop < 2)
		snprintf(vc->drop[vc->ndrop++], sizeof vc->drop[0], "%s", data_id);
}

cn_err cn_obj__vprep(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                     cn_versioning v, cn_ec_meta *m, cn_obj__vcommit *vc)
{
	memset(vc, 0, sizeof *vc);
	cn_ec_meta_init(&vc->old);
	vc->set = set;
	vc->v = v;
	cn_err oe = cn_ec_read_meta(set, bucket, key, true, &vc->old);
	if (oe && oe != CN_ERR_NO_KEY)
		cn_log(CN_LOG_WARN, NULL, "object: %s/%s: previous record unreadable (%s); its data "
		       "folder, if any, stays", bucket, key, cn_err_str(oe));
	vc->old_ok = oe == CN_OK;
	if (vc->old_ok && m->mtime_ms <= vc->old.mtime_ms)
		m->mtime_ms = vc->old.mtime_ms + 1; /* VER-5 */
	if (vc->old_ok) {
		cn_err pe = cn_obj__prev_keep(s, set, bucket, key, &vc->old, &vc->pk); /* OBJ-7 */
		if (pe)
			return pe;
	}
	switch (v) {
	case CN_VERSIONING_OFF:
		m->version_id[0] = 0;
		if (vc->old_ok)
			drop_add(vc, vc->old.data_id);
		return CN_OK;
	case CN_VERSIONING_ENABLED:
		new_version_id(m->version_id);
		/* VER-1 */
		return vc->old_ok ? cn_ec_version_keep(set, bucket, key, rec_vid(&vc->old)) : CN_OK;
	case CN_VERSIONING_SUSPENDED: {
		snprintf(m->version_id, sizeof m->version_id, "null");
		cn_err e = CN_OK;
		if (vc->old_ok && !strcmp(rec_vid(&vc->old), "null"))
			drop_add(vc, vc->old.data_id); /* the null version is replaced */
		else if (vc->old_ok)
			e = cn_ec_version_keep(set, bucket, key, rec_vid(&vc->old));
		cn_ec_meta nm;
		cn_ec_meta_init(&nm);
		if (!e && cn_ec_version_read(set, bucket, key, "null", true, &nm) == CN_OK) {
			vc->drop_null = true;
			if (!vc->ndrop || strcmp(vc->drop[0], nm.data_id))
				drop_add(vc, nm.data_id);
		}
		cn_ec_meta_fini(&nm);
		return e;
	}
	}
	return CN_ERR_INVALID;
}

void cn_obj__vpost(cn_obj_store *s, const char *bucket, const char *key, cn_obj__vcommit *vc)
{
	if (vc->drop_null)
		cn_ec_version_delete(vc->set, bucket, key, "null");
}

void cn_obj__vfinish(cn_obj_store *s, const char *bucket, const char *key, cn_obj__vcommit *vc,
                     const char *new_data_id, bool committed)
{
	cn_obj__prev_drop(s, vc->set, bucket, key, &vc->pk, committed, NULL); /* OBJ-7 */
	for (int i = 0; committed && i < vc->ndrop; i++)
		if (!new_data_id || strcmp(vc->drop[i], new_data_id))
			cn_obj__drop_data(s, vc->set, bucket, key, vc->drop[i]); /* VER-3, OBJ-6 */
	cn_ec_meta_fini(&vc->old);
}

/* --- stat, open ------------------------------------------------------------------------ */

/* Reads version vid's record (current or noncurrent) into m. */
static cn_err read_version(cn_obj_store *s, const char *bucket, const char *key, const char *vid,
                           bool skip_inline, cn_ec_meta *m)
{
	cn_ec_set *set = cn_obj__key_set(s, bucket, key);
	cn_err e = cn_ec_read_meta(set, bucket, key, skip_inline, m);
	if (e == CN_ERR_NO_BUCKET)
		return e;
	if (!e && !strcmp(rec_vid(m), vid))
		return CN_OK;
	cn_ec_meta_fini(m);
	e = cn_ec_version_read(set, bucket, key, vid, skip_inline, m);
	if (e == CN_ERR_NO_KEY)
		return CN_ERR_NO_VERSION;
	return e;
}

cn_err cn_obj_stat_version(cn_obj_store *s, const char *bucket, const char *key, const char *vid,
                           cn_obj_info *out)
{
	if (!vid)
		return cn_obj_stat(s, bucket, key, out);
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_VERSION;
	if (!cn_obj_version_id_valid(vid))
		return CN_ERR_NO_VERSION;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	e = read_version(s, bucket, key, vid, true, &m);
	if (!e) {
		if (m.delete_marker)
			e = CN_ERR_DELETE_MARKER;
		if (out)
			cn_obj__info_from_meta(out, &m);
	}
	cn_ec_meta_fini(&m);
	return e;
}

cn_err cn_obj_open_version(cn_obj_store *s, const char *bucket, const char *key, const char *vid,
                           cn_obj_info *info, cn_obj_reader **out)
{
	if (!vid)
		return cn_obj_open(s, bucket, key, info, out);
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_VERSION;
	if (!cn_obj_version_id_valid(vid))
		return CN_ERR_NO_VERSION;
	cn_ec_set *set = cn_obj__key_set(s, bucket, key);
	cn_obj_reader *r;
	if ((e = cn_obj__reader_new(s, bucket, key, &r))) /* pinned before the records are read */
		return e;
	for (int tries = 0; tries < 3; tries++) {
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		cn_ec_reader *er = NULL;
		/* noncurrent first; then the current one, whose id must match (also when the
		 * noncurrent copy answers QUORUM: a promoted version's copy, which the promotion
		 * removes after its barrier, may be split by a crash in that removal) */
		e = cn_ec_open_version(set, bucket, key, vid, &m, &er);
		if (e == CN_ERR_QUORUM) {
			cn_ec_meta cm;
			cn_ec_meta_init(&cm);
			if (cn_ec_read_meta(set, bucket, key, true, &cm) == CN_OK && !strcmp(rec_vid(&cm), vid))
				e = CN_ERR_NO_KEY;
			cn_ec_meta_fini(&cm);
		}
		if (e == CN_ERR_NO_KEY) {
			e = cn_ec_open(set, bucket, key, &m, &er);
			if (!e && strcmp(rec_vid(&m), vid)) {
				cn_ec_reader_close(er);
				er = NULL;
				e = CN_ERR_NO_VERSION; /* maybe made noncurrent meanwhile: look again */
				cn_ec_meta_fini(&m);
				continue;
			}
			if (e == CN_ERR_NO_KEY) {
				e = CN_ERR_NO_VERSION;
				cn_ec_meta_fini(&m);
				continue;
			}
		}
		if (!e && m.delete_marker) {
			cn_ec_reader_close(er);
			er = NULL;
			e = CN_ERR_DELETE_MARKER;
			if (info)
				cn_obj__info_from_meta(info, &m);
			cn_ec_meta_fini(&m);
			break;
		}
		if (!e) {
			cn_obj__reader_attach(r, er, &m, info);
			*out = r;
			r = NULL;
		}
		cn_ec_meta_fini(&m);
		break;
	}
	cn_obj_reader_close(r);
	return e;
}

/* --- delete ------------------------------------------------------------------------------ */

/* The newest noncurrent version other than skip_vid: *best gets its id ("" when none). */
static cn_err newest_noncurrent(cn_ec_set *set, const char *bucket, const char *key,
                                const char *skip_vid, char best[CN_EC_VERSION_ID_MAX + 1])
{
	best[0] = 0;
	char **vids;
	size_t n;
	cn_err e = cn_ec_version_list(set, bucket, key, &vids, &n);
	if (e)
		return e;
	int64_t best_ms = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(vids[i], skip_vid))
			continue;
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		if (cn_ec_version_read(set, bucket, key, vids[i], true, &m) == CN_OK &&
		    (m.mtime_ms > best_ms || (m.mtime_ms == best_ms && strcmp(vids[i], best) > 0))) {
			best_ms = m.mtime_ms;
			snprintf(best, CN_EC_VERSION_ID_MAX + 1, "%s", vids[i]);
		}
		cn_ec_meta_fini(&m);
	}
	cn_drive_free_names(vids, n);
	return CN_OK;
}

static cn_err delete_marker(cn_obj_store *s, const char *bucket, const char *key, cn_versioning v,
                            cn_obj_deleted *out)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	m.mtime_ms = cn_now_ms();
	m.delete_marker = true;
	m.has_inline = true; /* no data: an empty inline body */
	snprintf(m.storage_class, sizeof m.storage_class, "STANDARD");
	cn_obj__vcommit vc;
	cn_ec_set *set;
	cn_err e = cn_obj__put_set(s, bucket, key, &set);
	pthread_rwlock_rdlock(&s->ns_lock);
	if (!e)
		e = cn_ec_stat_vol(set, bucket, NULL);
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl);
	if (!e)
		e = cn_obj__vprep(s, set, bucket, key, v, &m, &vc);
	else
		memset(&vc, 0, sizeof vc);
	if (!e)
		e = cn_ec_commit_inline(set, bucket, key, &m);
	if (!e)
		cn_obj__vpost(s, bucket, key, &vc);
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier_set(s, set);
	cn_obj__vfinish(s, bucket, key, &vc, NULL, !e);
	if (!e && out) {
		snprintf(out->version_id, sizeof out->version_id, "%s", m.version_id);
		out->delete_marker = true;
	}
	cn_ec_meta_fini(&m);
	return e;
}

cn_err cn_obj_delete_version(cn_obj_store *s, const char *bucket, const char *key, const char *vid_in,
                             cn_obj_deleted *out)
{
	char vidbuf[CN_EC_VERSION_ID_MAX + 1];
	const char *vid = NULL;
	if (vid_in) { /* copied first: it may point into *out */
		if (strlen(vid_in) > CN_EC_VERSION_ID_MAX)
			return CN_ERR_NO_VERSION;
		vid = strcpy(vidbuf, vid_in);
	}
	if (out)
		memset(out, 0, sizeof *out);
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	if (!vid) {
		cn_versioning v;
		if ((e = cn_obj__versioning(s, bucket, &v)))
			return e;
		if (v == CN_VERSIONING_OFF)
			return cn_obj_delete(s, bucket, key);
		return delete_marker(s, bucket, key, v, out);
	}
	if (!cn_obj_version_id_valid(vid))
		return CN_ERR_NO_VERSION;
	cn_ec_meta cur, ver;
	cn_ec_meta_init(&cur);
	cn_ec_meta_init(&ver);
	char drop[CN_DRIVE_ID_MAX + 1] = "";
	char promoted[CN_EC_VERSION_ID_MAX + 1] = "";
	bool dm = false;
	cn_obj__prevk pk = { .kept = false };
	cn_ec_set *set = cn_obj__key_set(s, bucket, key);
	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl);
	e = cn_ec_read_meta(set, bucket, key, true, &cur);
	if (e == CN_ERR_NO_KEY || e == CN_ERR_CORRUPT)
		e = CN_OK; /* no (readable) current version: look among the noncurrent ones */
	else if (!e && !strcmp(rec_vid(&cur), vid)) {
		/* the latest: VER-1's stale copy goes, then VER-2 */
		char next[CN_EC_VERSION_ID_MAX + 1];
		cn_ec_version_delete(set, bucket, key, vid);
		e = newest_noncurrent(set, bucket, key, vid, next);
		/* OBJ-7: the promotion replaces the current record drive by drive: the deleted
		 * version stays as the previous record, and the promoted one's noncurrent copy,
		 * until the change is durable (quorum.c EC-15) */
		if (!e && next[0])
			e = cn_obj__prev_keep(s, set, bucket, key, &cur, &pk);
		if (!e && next[0] && !(e = cn_ec_version_promote(set, bucket, key, next)))
			snprintf(promoted, sizeof promoted, "%s", next);
		else if (!e && !next[0])
			e = cn_ec_delete_meta(set, bucket, key);
		if (!e) {
			snprintf(drop, sizeof drop, "%s", cur.data_id);
			dm = cur.delete_marker;
		}
		goto unlock;
	}
	if (!e) {
		e = cn_ec_version_read(set, bucket, key, vid, true, &ver);
		if (e == CN_ERR_NO_KEY)
			e = CN_ERR_NO_VERSION;
		if (!e)
			e = cn_ec_version_delete(set, bucket, key, vid);
		if (!e) {
			/* a stale VER-1 copy of the current version shares its data folder */
			if (strcmp(ver.data_id, cur.data_id))
				snprintf(drop, sizeof drop, "%s", ver.data_id);
			dm = ver.delete_marker;
		}
	}
unlock:
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier_set(s, set);
	cn_obj__prev_drop(s, set, bucket, key, &pk, !e, promoted[0] ? promoted : NULL); /* OBJ-7 */
	if (!e) /* VER-3, OBJ-6; also removes the key's folders once empty */
		cn_obj__drop_data(s, set, bucket, key, drop);
	if (!e && out) {
		snprintf(out->version_id, sizeof out->version_id, "%s", vid);
		out->delete_marker = dm;
	}
	cn_ec_meta_fini(&cur);
	cn_ec_meta_fini(&ver);
	return e;
}

/* --- listing versions ------------------------------------------------------------------ */

void cn_version_list_fini(cn_version_list *l)
{
	for (size_t i = 0; i < l->nversions; i++)
		free(l->versions[i].key);
	free(l->versions);
	for (size_t i = 0; i < l->nprefixes; i++)
		free(l->prefixes[i]);
	free(l->prefixes);
	free(l->next_key_marker);
	memset(l, 0, sizeof *l);
}

typedef struct vlist_ctx {
	cn_obj_store *s;
	cn_ec_set *set;         /* the set being walked */
	const char *bucket;
	cn_version_list *out;
	size_t max, count, capv, capp;
	size_t plen;
	const char *delim;      /* generic delimiter (not "/"), or NULL */
	const char *key_marker; /* "" when none */
	const char *vid_marker; /* versions of key_marker after this one ("" when none) */
	bool stop;
} vlist_ctx;

#define VLIST_STOP CN_ERR__COUNT

static int ver_cmp(const void *pa, const void *pb)
{
	const cn_version_entry *a = pa, *b = pb;
	if (a->is_latest != b->is_latest)
		return a->is_latest ? -1 : 1;
	if (a->mtime_ms != b->mtime_ms)
		return a->mtime_ms > b->mtime_ms ? -1 : 1; /* newest first */
	return -strcmp(a->version_id, b->version_id);
}

static void entry_from(cn_version_entry *v, const cn_ec_meta *m, bool latest)
{
	snprintf(v->version_id, sizeof v->version_id, "%s", rec_vid(m));
	v->is_latest = latest;
	v->delete_marker = m->delete_marker;
	snprintf(v->etag, sizeof v->etag, "%s", m->etag);
	v->size = m->size;
	v->mtime_ms = m->mtime_ms;
	snprintf(v->storage_class, sizeof v->storage_class, "%s",
	         m->storage_class[0] ? m->storage_class : "STANDARD");
}

static cn_err push_vprefix(vlist_ctx *c, const char *p, size_t len)
{
	cn_version_list *o = c->out;
	if (o->nprefixes && strlen(o->prefixes[o->nprefixes - 1]) == len &&
	    !memcmp(o->prefixes[o->nprefixes - 1], p, len))
		return CN_OK; /* the same prefix as the last one */
	size_t km = strlen(c->key_marker);
	int cmp = memcmp(p, c->key_marker, len < km ? len : km);
	if (km && (cmp < 0 || (cmp == 0 && len <= km)))
		return CN_OK; /* returned on an earlier page */
	if (c->count == c->max) {
		o->truncated = true;
		return VLIST_STOP;
	}
	if (o->nprefixes == c->capp) {
		size_t nc = c->capp ? c->capp * 2 : 8;
		char **np = realloc(o->prefixes, nc * sizeof *np);
		if (!np)
			return CN_ERR_NOMEM;
		o->prefixes = np;
		c->capp = nc;
	}
	char *d = strndup(p, len);
	if (!d)
		return CN_ERR_NOMEM;
	o->prefixes[o->nprefixes++] = d;
	c->count++;
	free(o->next_key_marker);
	o->next_key_marker = strdup(d);
	o->next_version_id_marker[0] = 0;
	return CN_OK;
}

/* All versions of key (current m first, noncurrent by age), appended after the markers. */
static cn_err push_key_versions(vlist_ctx *c, const char *key, const cn_ec_meta *cur)
{
	cn_version_list *o = c->out;
	char **vids = NULL;
	size_t nv = 0;
	cn_err e = cn_ec_version_list(c->set, c->bucket, key, &vids, &nv);
	if (e)
		return e;
	cn_version_entry *all = calloc(nv + 1, sizeof *all);
	size_t n = 0;
	if (!all) {
		cn_drive_free_names(vids, nv);
		return CN_ERR_NOMEM;
	}
	if (cur)
		entry_from(&all[n++], cur, true);
	for (size_t i = 0; i < nv; i++) {
		if (cur && !strcmp(vids[i], rec_vid(cur)))
			continue; /* VER-1's stale copy of the current version */
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		if (cn_ec_version_read(c->set, c->bucket, key, vids[i], true, &m) == CN_OK)
			entry_from(&all[n++], &m, false);
		cn_ec_meta_fini(&m);
	}
	cn_drive_free_names(vids, nv);
	qsort(all, n, sizeof *all, ver_cmp);
	size_t start = 0;
	if (c->vid_marker[0] && !strcmp(key, c->key_marker)) {
		start = n; /* an unknown marker version: nothing more of this key */
		for (size_t i = 0; i < n; i++)
			if (!strcmp(all[i].version_id, c->vid_marker))
				start = i + 1;
	}
	for (size_t i = start; i < n && !e; i++) {
		if (c->count == c->max) {
			o->truncated = true;
			e = VLIST_STOP;
			break;
		}
		if (o->nversions == c->capv) {
			size_t nc = c->capv ? c->capv * 2 : 16;
			cn_version_entry *nvv = realloc(o->versions, nc * sizeof *nvv);
			if (!nvv) {
				e = CN_ERR_NOMEM;
				break;
			}
			o->versions = nvv;
			c->capv = nc;
		}
		cn_version_entry *v = &o->versions[o->nversions];
		*v = all[i];
		if (!(v->key = strdup(key))) {
			e = CN_ERR_NOMEM;
			break;
		}
		o->nversions++;
		c->count++;
		free(o->next_key_marker);
		o->next_key_marker = strdup(key);
		snprintf(o->next_version_id_marker, sizeof o->next_version_id_marker, "%s", v->version_id);
	}
	free(all);
	return e;
}

static cn_err vlist_cb(void *vctx, const char *key, size_t keylen, bool is_prefix, const cn_ec_meta *m)
{
	vlist_ctx *c = vctx;
	if (is_prefix)
		return push_vprefix(c, key, keylen);
	if (c->delim && keylen > c->plen) {
		const char *d = strstr(key + c->plen, c->delim);
		if (d)
			return push_vprefix(c, key, (size_t)(d - key) + strlen(c->delim));
	}
	return push_key_versions(c, key, m);
}

/* One set's page (as cn_obj_list_versions, over the keys of that set). */
static cn_err vlist_set(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *prefix,
                        const char *delimiter, const char *key_marker, const char *vid_marker,
                        size_t max, cn_version_list *out)
{
	cn_err e = CN_OK;
	bool slash = delimiter && !strcmp(delimiter, "/");
	vlist_ctx c = { .s = s, .set = set, .bucket = bucket, .out = out, .max = max,
	                .plen = strlen(prefix), .key_marker = key_marker, .vid_marker = vid_marker };
	if (delimiter && delimiter[0] && !slash)
		c.delim = delimiter;
	/* the rest of the marker key's versions first (the walk starts after it) */
	if (key_marker[0] && vid_marker[0] && !strncmp(key_marker, prefix, c.plen) &&
	    !cn_obj__check_names(bucket, key_marker)) {
		cn_ec_meta cur;
		cn_ec_meta_init(&cur);
		cn_err ce = cn_ec_read_meta(set, bucket, key_marker, true, &cur);
		if (ce == CN_OK)
			e = push_key_versions(&c, key_marker, &cur);
		cn_ec_meta_fini(&cur);
	}
	if (!e)
		e = cn_ec_walk(set, bucket, prefix, key_marker[0] ? key_marker : NULL, slash, vlist_cb, &c);
	if (e == VLIST_STOP)
		e = CN_OK;
	if (e)
		cn_version_list_fini(out);
	return e;
}

/* Merges the sets' pages r[0..n) into out, taking their strings: by key (a key's versions
 * come from its one set, in their order), equal common prefixes once, and never past the
 * end of a truncated page (that set's next entries are unknown: the result is truncated). */
static cn_err vlist_merge(cn_version_list *r, size_t n, size_t max, cn_version_list *out)
{
	size_t *vi = calloc(n, sizeof *vi), *pi = calloc(n, sizeof *pi);
	cn_err e = CN_OK;
	if (!vi || !pi || !(out->versions = calloc(max, sizeof *out->versions)) ||
	    !(out->prefixes = calloc(max, sizeof *out->prefixes)))
		e = CN_ERR_NOMEM;
	size_t count = 0;
	bool last_pre = false;
	while (!e) {
		size_t best = n;
		bool best_pre = false, stop = false;
		const char *bn = NULL;
		for (size_t i = 0; i < n; i++) {
			bool more_v = vi[i] < r[i].nversions, more_p = pi[i] < r[i].nprefixes;
			if (!more_v && !more_p) {
				stop |= r[i].truncated;
				continue;
			}
			if (more_v && (!bn || strcmp(r[i].versions[vi[i]].key, bn) < 0)) {
				best = i;
				best_pre = false;
				bn = r[i].versions[vi[i]].key;
			}
			if (more_p && (!bn || strcmp(r[i].prefixes[pi[i]], bn) < 0)) {
				best = i;
				best_pre = true;
				bn = r[i].prefixes[pi[i]];
			}
		}
		if (stop) {
			out->truncated = true;
			break;
		}
		if (best == n)
			break;
		if (best_pre && out->nprefixes && !strcmp(out->prefixes[out->nprefixes - 1], bn)) {
			pi[best]++;
			continue;
		}
		if (count == max) {
			out->truncated = true;
			break;
		}
		if (best_pre) {
			out->prefixes[out->nprefixes++] = r[best].prefixes[pi[best]];
			r[best].prefixes[pi[best]++] = NULL;
		} else {
			out->versions[out->nversions++] = r[best].versions[vi[best]];
			r[best].versions[vi[best]++].key = NULL;
		}
		last_pre = best_pre;
		count++;
	}
	if (!e && out->truncated && count) {
		if (last_pre) {
			out->next_key_marker = strdup(out->prefixes[out->nprefixes - 1]);
		} else {
			const cn_version_entry *v = &out->versions[out->nversions - 1];
			out->next_key_marker = strdup(v->key);
			snprintf(out->next_version_id_marker, sizeof out->next_version_id_marker, "%s",
			         v->version_id);
		}
		if (!out->next_key_marker)
			e = CN_ERR_NOMEM;
	}
	free(vi);
	free(pi);
	return e;
}

cn_err cn_obj_list_versions(cn_obj_store *s, const char *bucket, const char *prefix,
                            const char *delimiter, const char *key_marker, const char *vid_marker,
                            size_t max, cn_version_list *out)
{
	memset(out, 0, sizeof *out);
	if (!cn_obj_bucket_name_valid(bucket))
		return CN_ERR_NO_BUCKET;
	cn_err e = cn_obj__stat_bucket(s, bucket);
	if (e)
		return e;
	prefix = prefix ? prefix : "";
	key_marker = key_marker ? key_marker : "";
	vid_marker = vid_marker ? vid_marker : "";
	if (max > 1000)
		max = 1000;
	if (max == 0)
		return CN_OK;
	if (s->nsets == 1) {
		e = vlist_set(s, s->sets[0], bucket, prefix, delimiter, key_marker, vid_marker, max, out);
	} else {
		cn_version_list *r = calloc(s->nsets, sizeof *r);
		if (!r)
			return CN_ERR_NOMEM;
		for (size_t i = 0; i < s->nsets && !e; i++)
			e = vlist_set(s, s->sets[i], bucket, prefix, delimiter, key_marker, vid_marker, max, &r[i]);
		if (!e)
			e = vlist_merge(r, s->nsets, max, out);
		for (size_t i = 0; i < s->nsets; i++)
			cn_version_list_fini(&r[i]);
		free(r);
	}
	if (!e && !out->truncated) {
		free(out->next_key_marker);
		out->next_key_marker = NULL;
		out->next_version_id_marker[0] = 0;
	}
	if (e)
		cn_version_list_fini(out);
	return e;
}
