/* list.c: ListObjects over the whole store (cn_obj_list). Each set walks its own keys in
 * order (cn_ec_walk) into one page of at most max_keys entries, rolling keys up into
 * common prefixes; with several sets the pages are merged (LIST-1..LIST-3, list_merge). Every key
 * lives in one set, so the merge sees an object once; a common prefix that several sets
 * return is one entry. */
#include "object/object_int.h"

#include <stdlib.h>
#include <string.h>

#define LIST_STOP CN_ERR__COUNT /* internal: the walk collected enough */

typedef struct list_ctx {
	cn_list_result *out;
	size_t max, cap_obj, cap_pre;
	size_t plen;
	const char *delim; /* generic (non-"/") delimiter or NULL */
	size_t dlen;
	const char *after;
	size_t alen;
	char *last;        /* last returned key or prefix (borrowed from out) */
} list_ctx;

static cn_err push_prefix(list_ctx *c, const char *p, size_t len)
{
	cn_list_result *o = c->out;
	if (o->nprefixes == c->cap_pre) {
		size_t nc = c->cap_pre ? c->cap_pre * 2 : 16;
		char **np = realloc(o->prefixes, nc * sizeof *np);
		if (!np)
			return CN_ERR_NOMEM;
		o->prefixes = np;
		c->cap_pre = nc;
	}
	char *d = strndup(p, len);
	if (!d)
		return CN_ERR_NOMEM;
	o->prefixes[o->nprefixes++] = d;
	c->last = d;
	return CN_OK;
}

static cn_err list_cb(void *vctx, const char *key, size_t keylen, bool is_prefix, const cn_ec_meta *m)
{
	list_ctx *c = vctx;
	cn_list_result *o = c->out;
	size_t plen = keylen;
	if (!is_prefix && m->delete_marker)
		return CN_OK; /* a key whose latest version is a delete marker is not listed */
	if (!is_prefix && c->delim && keylen > c->plen) {
		const char *d = memmem(key + c->plen, keylen - c->plen, c->delim, c->dlen);
		if (d) {
			plen = (size_t)(d - key) + c->dlen;
			is_prefix = true;
			/* a common prefix at or before the marker was returned on an earlier page */
			int cmp = memcmp(key, c->after, plen < c->alen ? plen : c->alen);
			if (cmp < 0 || (cmp == 0 && plen <= c->alen))
				return CN_OK;
			if (c->last && o->nprefixes && c->last == o->prefixes[o->nprefixes - 1] &&
			    strlen(c->last) == plen && !memcmp(c->last, key, plen))
				return CN_OK;
		}
	}
	if (o->nobjects + o->nprefixes == c->max) {
		o->truncated = true;
		return LIST_STOP;
	}
	if (is_prefix)
		return push_prefix(c, key, plen);
	if (o->nobjects == c->cap_obj) {
		size_t nc = c->cap_obj ? c->cap_obj * 2 : 16;
		cn_list_entry *ne = realloc(o->objects, nc * sizeof *ne);
		if (!ne)
			return CN_ERR_NOMEM;
		o->objects = ne;
		c->cap_obj = nc;
	}
	cn_list_entry *le = &o->objects[o->nobjects];
	memset(le, 0, sizeof *le);
	if (!(le->key = strndup(key, keylen)))
		return CN_ERR_NOMEM;
	cn_strlcpy(le->etag, m->etag, sizeof le->etag);
	le->size = m->size;
	le->mtime_ms = m->mtime_ms;
	cn_strlcpy(le->storage_class, m->storage_class[0] ? m->storage_class : "STANDARD",
	           sizeof le->storage_class);
	o->nobjects++;
	c->last = le->key;
	return CN_OK;
}

void cn_list_result_fini(cn_list_result *r)
{
	for (size_t i = 0; i < r->nobjects; i++)
		free(r->objects[i].key);
	free(r->objects);
	for (size_t i = 0; i < r->nprefixes; i++)
		free(r->prefixes[i]);
	free(r->prefixes);
	free(r->next_marker);
	memset(r, 0, sizeof *r);
}

/* One set's page: its keys after `after`, at most max_keys entries (as described for
 * cn_obj_list). */
static cn_err list_set(cn_ec_set *set, const char *bucket, const char *prefix, const char *delimiter,
                       const char *after, size_t max_keys, cn_list_result *out)
{
	bool slash = delimiter && !strcmp(delimiter, "/");
	list_ctx c = { .out = out, .max = max_keys, .plen = strlen(prefix), .after = after,
	               .alen = strlen(after) };
	if (delimiter && delimiter[0] && !slash) {
		c.delim = delimiter;
		c.dlen = strlen(delimiter);
	}
	cn_err e = cn_ec_walk(set, bucket, prefix, after[0] ? after : NULL, slash, list_cb, &c);
	if (e == LIST_STOP)
		e = CN_OK;
	if (!e && out->truncated && c.last && !(out->next_marker = strdup(c.last)))
		e = CN_ERR_NOMEM;
	if (e)
		cn_list_result_fini(out);
	return e;
}

/* Merges the sets' sorted pages r[0..n) into out (LIST-1..LIST-3 below), taking their strings. */
static cn_err list_merge(cn_list_result *r, size_t n, size_t max, cn_list_result *out)
{
	/* LIST-1. Every set's page is sorted and holds its first entries after the marker.
	 * LIST-2. Nothing can be returned past the end of a truncated page: its set's next entries
	 *     are unknown, so the merge stops when such a page runs out (truncated).
	 * LIST-3. A common prefix that several sets return is one entry. */
	size_t *oi = calloc(n, sizeof *oi), *pi = calloc(n, sizeof *pi);
	cn_err e = CN_OK;
	const char *last = NULL;
	if (!oi || !pi)
		e = CN_ERR_NOMEM;
	size_t count = 0;
	if (!e && !(out->objects = calloc(max, sizeof *out->objects)))
		e = CN_ERR_NOMEM;
	if (!e && !(out->prefixes = calloc(max, sizeof *out->prefixes)))
		e = CN_ERR_NOMEM;
	while (!e) {
		size_t best = n;
		bool best_pre = false;
		const char *bn = NULL;
		bool stop = false;
		for (size_t i = 0; i < n; i++) {
			bool more_o = oi[i] < r[i].nobjects, more_p = pi[i] < r[i].nprefixes;
			if (!more_o && !more_p) {
				stop |= r[i].truncated; /* LIST-2 */
				continue;
			}
			if (more_o && (!bn || strcmp(r[i].objects[oi[i]].key, bn) < 0)) {
				best = i;
				best_pre = false;
				bn = r[i].objects[oi[i]].key;
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
			pi[best]++; /* LIST-3 */
			continue;
		}
		if (count == max) {
			out->truncated = true;
			break;
		}
		if (best_pre) {
			out->prefixes[out->nprefixes++] = r[best].prefixes[pi[best]];
			r[best].prefixes[pi[best]++] = NULL;
			last = out->prefixes[out->nprefixes - 1];
		} else {
			out->objects[out->nobjects++] = r[best].objects[oi[best]];
			r[best].objects[oi[best]++].key = NULL;
			last = out->objects[out->nobjects - 1].key;
		}
		count++;
	}
	if (!e && out->truncated && last && !(out->next_marker = strdup(last)))
		e = CN_ERR_NOMEM;
	free(oi);
	free(pi);
	return e;
}

cn_err cn_obj_list(cn_obj_store *s, const char *bucket, const char *prefix, const char *delimiter,
                   const char *after, size_t max_keys, cn_list_result *out)
{
	memset(out, 0, sizeof *out);
	if (!cn_obj_bucket_name_valid(bucket))
		return CN_ERR_NO_BUCKET;
	if (!prefix)
		prefix = "";
	if (!after)
		after = "";
	if (strlen(prefix) > 1024 || strlen(after) > 1024 || (delimiter && strlen(delimiter) > 1024))
		return CN_ERR_INVALID;
	if (max_keys > 1000)
		max_keys = 1000;
	if (max_keys == 0)
		return cn_obj__stat_bucket(s, bucket);
	if (s->nsets == 1) /* one set: its page is the answer */
		return list_set(s->sets[0], bucket, prefix, delimiter, after, max_keys, out);
	/* several sets: each one's page, then a merge (every key lives in one set) */
	cn_list_result *r = calloc(s->nsets, sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	cn_err e = CN_OK;
	for (size_t i = 0; i < s->nsets && !e; i++)
		e = list_set(s->sets[i], bucket, prefix, delimiter, after, max_keys, &r[i]);
	if (!e)
		e = list_merge(r, s->nsets, max_keys, out);
	for (size_t i = 0; i < s->nsets; i++)
		cn_list_result_fini(&r[i]);
	free(r);
	if (e)
		cn_list_result_fini(out);
	return e;
}
