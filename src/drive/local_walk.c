/* drive/local_walk: the local drive's listing walks, depth first over the key folders
 * of a volume. walk reports objects in key order: each folder's entries are decoded
 * (cn_local__decode_component) and sorted as keys, a flat record "%m.<leaf>" and the
 * folder of the same leaf each in their place; with a '/' delimiter a subtree holding an
 * object anywhere below it is reported once as a common prefix. data_keys reports the
 * key folders that hold data folders but whose key has no current record (what a crash
 * or a lost record leaves for heal). Neither holds a folder open across the recursion. */
#include "drive/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define WALK_REC_MAX (64u << 20)

typedef struct walk_state {
	local_drive *d;
	const char *prefix, *after;
	size_t plen, alen;
	bool slash;
	cn_drive_walk_fn fn;
	void *ctx;
	cn_buf rec;
	char path[PATH_CAP];  /* on-disk path of the current folder */
	char key[2200];       /* decoded key prefix of the current folder */
} walk_state;

typedef struct vent {
	const char *comp;     /* decoded component (points into names[]) */
	size_t clen;
	const char *disk;     /* on-disk name */
	bool subtree;         /* false: the object comp; true: the subtree comp + "/" */
	bool flat;            /* the object's record is disk itself, not disk/%meta */
	bool prev;            /* a flat object with a previous record beside it (walk fn) */
} vent;

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Compares two virtual entries as key strings: comp (+ "/" when subtree). */
static int vent_cmp(const void *pa, const void *pb)
{
	const vent *a = pa, *b = pb;
	size_t al = a->clen + a->subtree, bl = b->clen + b->subtree;
	size_t n = al < bl ? al : bl;
	for (size_t i = 0; i < n; i++) {
		unsigned char ca = i < a->clen ? (unsigned char)a->comp[i] : '/';
		unsigned char cb = i < b->clen ? (unsigned char)b->comp[i] : '/';
		if (ca != cb)
			return ca < cb ? -1 : 1;
	}
	return al < bl ? -1 : al > bl;
}

static bool starts_with(const char *s, size_t slen, const char *p, size_t plen)
{
	return slen >= plen && memcmp(s, p, plen) == 0;
}

/* Lexicographic byte compare of a[0..al) and b[0..bl). */
static int bcmp_len(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

/* The folder's entries (names, isdir: n of them) as virtual entries in key order into
 * *out (malloc'd; *nout of them): each current record "%m.<leaf>" an object, with prev
 * set when "%p.<leaf>" is beside it; each folder a subtree, and also an object when its
 * leaf is too long for a record beside it (its record is inside: cn_local__rec_path). */
static cn_err walk_entries(char **names, const bool *isdir, size_t n, vent **out, size_t *nout)
{
	vent *v = malloc((n ? n : 1) * 2 * sizeof *v);
	size_t nv = 0;
	if (!v)
		return CN_ERR_NOMEM;
	/* previous records' leaves ("%p.<leaf>", prev_keep): usually none */
	const char **prevs = NULL;
	size_t np = 0;
	for (size_t i = 0; i < n; i++) {
		if (isdir[i] || strncmp(names[i], "%p.", 3) != 0)
			continue;
		if (!prevs && !(prevs = malloc(n * sizeof *prevs))) {
			free(v);
			return CN_ERR_NOMEM;
		}
		prevs[np++] = names[i] + 3;
	}
	if (np > 1)
		qsort(prevs, np, sizeof *prevs, str_cmp);
	for (size_t i = 0; i < n; i++) {
		const char *c;
		if (cn_local__flat_record(names[i], isdir[i], &c)) {
			bool p = np && bsearch(&c, prevs, np, sizeof *prevs, str_cmp);
			v[nv++] = (vent){ c, strlen(c), names[i], false, true, p };
			continue;
		}
		if (!isdir[i] || !cn_local__decode_component(names[i], &c))
			continue;
		size_t cl = strlen(c);
		if (cl > FLAT_MAX)
			v[nv++] = (vent){ c, cl, names[i], false, false, false };
		v[nv++] = (vent){ c, cl, names[i], true, false, false };
	}
	free(prevs);
	if (nv > 1)
		qsort(v, nv, sizeof *v, vent_cmp);
	*out = v;
	*nout = nv;
	return CN_OK;
}

/* The object entry v, whose key is w->key[0..fk) and whose folder entry is
 * w->path[0..pd): reported with its record when it matches the prefix, the after key and
 * the delimiter. A record gone meanwhile is skipped, and so is one that fails to read
 * (logged): one bad record does not end the listing. */
static cn_err walk_object(walk_state *w, const vent *v, size_t pd, size_t fk, bool check_after)
{
	w->key[fk] = 0;
	if (!starts_with(w->key, fk, w->prefix, w->plen))
		return CN_OK;
	if (check_after && bcmp_len(w->key, fk, w->after, w->alen) <= 0)
		return CN_OK;
	if (w->slash && memchr(w->key + w->plen, '/', fk - w->plen))
		return CN_OK; /* cannot happen: such keys are rolled up */
	if (!v->flat)
		memcpy(w->path + pd, "/" REC_NAME, sizeof("/" REC_NAME));
	cn_err re = cn_local__read_file_at(w->d, w->path, WALK_REC_MAX, &w->rec, CN_ERR_NO_KEY);
	if (re == CN_ERR_NO_KEY)
		return CN_OK;
	if (re) {
		cn_log(CN_LOG_WARN, NULL, "drive %s: listing: skipping %s: %s", w->d->base.endpoint,
		       w->path, cn_err_str(re));
		return CN_OK;
	}
	bool prev = v->prev;
	if (!v->flat) { /* a long leaf's previous record is beside its %meta */
		struct stat st;
		memcpy(w->path + pd, "/" PREV_NAME, sizeof("/" PREV_NAME));
		prev = fstatat(w->d->root_fd, w->path, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		       (errno != ENOENT && errno != ENOTDIR); /* unsure: say so */
	}
	return w->fn(w->ctx, w->key, fk, false, w->rec.p, w->rec.len, prev);
}

static cn_err walk_dir(walk_state *w, size_t plen_disk, size_t klen, bool check_after);

/* The subtree entry whose key prefix is w->key[0..fk) + "/" and whose folder is
 * w->path[0..pd): skipped when no key in it can match the prefix or sort after the after
 * key, reported as one common prefix when the delimiter rolls it up, else walked. */
static cn_err walk_subtree(walk_state *w, size_t pd, size_t fk, bool check_after)
{
	w->key[fk] = '/';
	size_t sl = fk + 1;
	w->key[sl] = 0;
	bool below_prefix = starts_with(w->key, sl, w->prefix, w->plen);
	bool toward_prefix = starts_with(w->prefix, w->plen, w->key, sl);
	if (!below_prefix && !toward_prefix)
		return CN_OK;
	bool ca = check_after;
	if (ca && !starts_with(w->after, w->alen, w->key, sl)) {
		if (bcmp_len(w->key, sl, w->after, w->alen) < 0)
			return CN_OK; /* every key in it sorts before after */
		ca = false;       /* every key in it sorts after after */
	}
	if (w->slash && below_prefix && sl > w->plen) {
		/* the common prefix is the subtree name itself */
		if (check_after && bcmp_len(w->key, sl, w->after, w->alen) <= 0)
			return CN_OK;
		bool found;
		cn_err e = cn_local__has_object_below(w->d, w->path, pd, &found);
		if (!e && found)
			e = w->fn(w->ctx, w->key, sl, true, NULL, 0, false);
		return e;
	}
	return walk_dir(w, pd, sl, ca);
}

/* Walks the folder w->path[0..plen_disk), whose keys start with w->key[0..klen), in key
 * order; check_after: some of its keys may sort at or before the after key. */
static cn_err walk_dir(walk_state *w, size_t plen_disk, size_t klen, bool check_after)
{
	char **names;
	bool *isdir;
	size_t n, nv;
	vent *v;
	cn_err e = cn_local__list_dir(w->d, w->path, &names, &isdir, &n);
	if (e == CN_ERR_NOT_FOUND)
		return CN_OK;
	if (e)
		return e;
	if ((e = walk_entries(names, isdir, n, &v, &nv))) {
		cn_local__free_names(names, isdir, n);
		return e;
	}
	for (size_t i = 0; i < nv && !e; i++) {
		size_t dl = strlen(v[i].disk);
		size_t fk = klen + v[i].clen; /* key length of prefix+comp */
		if (fk + 2 > sizeof w->key || plen_disk + 1 + dl + sizeof("/" REC_NAME) > PATH_CAP)
			continue;
		memcpy(w->key + klen, v[i].comp, v[i].clen);
		w->path[plen_disk] = '/';
		memcpy(w->path + plen_disk + 1, v[i].disk, dl);
		size_t pd = plen_disk + 1 + dl;
		w->path[pd] = 0;
		e = v[i].subtree ? walk_subtree(w, pd, fk, check_after)
		                 : walk_object(w, &v[i], pd, fk, check_after);
		w->path[plen_disk] = 0;
	}
	free(v);
	cn_local__free_names(names, isdir, n);
	return e;
}

cn_err cn_local__walk(cn_drive *dd, const char *vol, const char *prefix, const char *after,
                      bool slash_delim, cn_drive_walk_fn fn, void *ctx)
{
	cn_err e = cn_local__stat_vol(dd, vol, NULL);
	if (e)
		return e;
	walk_state *w = calloc(1, sizeof *w);
	if (!w)
		return CN_ERR_NOMEM;
	w->d = L(dd);
	w->prefix = prefix ? prefix : "";
	w->plen = strlen(w->prefix);
	w->after = after ? after : "";
	w->alen = strlen(w->after);
	w->slash = slash_delim;
	w->fn = fn;
	w->ctx = ctx;
	cn_buf_init(&w->rec);
	snprintf(w->path, sizeof w->path, "%s", vol);
	e = walk_dir(w, strlen(w->path), 0, w->alen > 0);
	cn_buf_fini(&w->rec);
	free(w);
	return e;
}

/* data_keys: key folders with data folders and no current record. */

/* True when the folder path (a key folder or a vol) holds an object record anywhere
 * below it: the records of the keys one component longer sit in it
 * (cn_local__rec_path). */
cn_err cn_local__has_object_below(local_drive *d, char *path, size_t len, bool *found)
{
	char **names;
	bool *isdir;
	size_t n;
	*found = false;
	cn_err e = cn_local__list_dir(d, path, &names, &isdir, &n);
	if (e == CN_ERR_NOT_FOUND)
		return CN_OK;
	if (e)
		return e;
	for (size_t i = 0; i < n && !*found; i++) {
		const char *c;
		*found = cn_local__flat_record(names[i], isdir[i], &c);
	}
	for (size_t i = 0; i < n && !e && !*found; i++) {
		const char *c;
		if (!isdir[i] || !cn_local__decode_component(names[i], &c))
			continue;
		size_t nl = strlen(names[i]);
		if (len + 1 + nl + sizeof(REC_NAME) + 1 > PATH_CAP)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, names[i], nl);
		memcpy(path + len + 1 + nl, "/" REC_NAME, sizeof("/" REC_NAME));
		struct stat st;
		if (strlen(c) > FLAT_MAX && fstatat(d->root_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			*found = true; /* a long leaf's record, in its own folder */
		} else {
			path[len + 1 + nl] = 0;
			e = cn_local__has_object_below(d, path, len + 1 + nl, found);
		}
		path[len] = 0;
	}
	cn_local__free_names(names, isdir, n);
	return e;
}

typedef struct dkeys_state {
	local_drive *d;
	const char *vol, *prefix;
	size_t plen;
	cn_drive_key_fn fn;
	void *ctx;
	cn_buf rp;           /* a record's path */
	char path[PATH_CAP]; /* on-disk path of the current folder */
	char key[1030];      /* its key (kl bytes, at most 1024), then the keys below it */
} dkeys_state;

/* path[0..pl) is the folder of key[0..kl) (kl 0: the vol): reports the key when the
 * folder holds a data folder and the key's record is not there, then looks below. */
static cn_err dkeys_dir(dkeys_state *w, size_t pl, size_t kl)
{
	char **names;
	bool *isdir;
	size_t n;
	cn_err e = cn_local__list_dir(w->d, w->path, &names, &isdir, &n);
	if (e == CN_ERR_NOT_FOUND)
		return CN_OK;
	if (e)
		return e;
	bool data = false;
	for (size_t i = 0; kl && i < n && !data; i++)
		data = isdir[i] && !strncmp(names[i], "%d.", 3) && cn_local__id_ok(names[i]);
	if (data && starts_with(w->key, kl, w->prefix, w->plen)) {
		w->key[kl] = 0;
		size_t dl;
		struct stat st;
		e = cn_local__rec_path(&w->rp, w->vol, w->key, &dl);
		if (!e && fstatat(w->d->root_fd, w->rp.p, &st, AT_SYMLINK_NOFOLLOW) < 0)
			e = errno == ENOENT || errno == ENOTDIR
			            ? w->fn(w->ctx, w->key, kl)
			            : cn_local__map_errno(w->d, errno, "looking for", w->rp.p);
	}
	for (size_t i = 0; i < n && !e; i++) {
		const char *c;
		if (!isdir[i] || !cn_local__decode_component(names[i], &c))
			continue;
		size_t cl = strlen(c), nl = strlen(names[i]);
		size_t ck = (kl ? kl + 1 : 0) + cl; /* the child's key length */
		if (ck > 1024 || pl + 1 + nl + 64 >= PATH_CAP)
			continue; /* no key of ours lives there */
		if (kl)
			w->key[kl] = '/';
		memcpy(w->key + ck - cl, c, cl);
		/* its keys all start with the child's key: none can match unless one of the
		 * two starts with the other */
		if (!starts_with(w->key, ck, w->prefix, w->plen) && !starts_with(w->prefix, w->plen, w->key, ck))
			continue;
		w->path[pl] = '/';
		memcpy(w->path + pl + 1, names[i], nl + 1);
		e = dkeys_dir(w, pl + 1 + nl, ck);
		w->path[pl] = 0;
	}
	cn_local__free_names(names, isdir, n);
	return e;
}

cn_err cn_local__data_keys(cn_drive *dd, const char *vol, const char *prefix, cn_drive_key_fn fn,
                           void *ctx)
{
	cn_err e = cn_local__stat_vol(dd, vol, NULL);
	if (e)
		return e;
	dkeys_state *w = calloc(1, sizeof *w);
	if (!w)
		return CN_ERR_NOMEM;
	*w = (dkeys_state){ .d = L(dd), .vol = vol, .prefix = prefix ? prefix : "", .fn = fn, .ctx = ctx };
	w->plen = strlen(w->prefix);
	cn_buf_init(&w->rp);
	snprintf(w->path, sizeof w->path, "%s", vol);
	e = dkeys_dir(w, strlen(w->path), 0);
	cn_buf_fini(&w->rp);
	free(w);
	return e;
}
