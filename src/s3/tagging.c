/* s3/tagging.c: object and bucket tagging — PutObjectTagging / GetObjectTagging /
 * DeleteObjectTagging, PutBucketTagging / GetBucketTagging / DeleteBucketTagging, and the
 * x-amz-tagging request header that PutObject, CopyObject and CreateMultipartUpload take
 * (validated and normalised here, stored by src/s3/object.c and src/s3/multipart.c).
 *
 * Storage: an object's tags are one kept header of its metadata, "x-amz-tagging", holding
 * the canonical form: the tags sorted by key (bytewise), each key and value percent-encoded
 * (RFC 3986 unreserved set kept), joined as k1=v1&k2=v2. No tags = no header. GET/HEAD never
 * return it (s3/object.c returns only the headers it lists), they return
 * x-amz-tagging-count. An object's tags change through cn_obj_update_meta, which rewrites
 * the stored headers without touching the data or its mtime. A bucket's tags are the same
 * canonical form in the bucket configuration document "tagging"; an empty tag set is no
 * document (GetBucketTagging then answers NoSuchTagSet, as after DeleteBucketTagging).
 *
 * Rules (AWS S3): at most 10 tags per object, 50 per bucket; a key is 1..128 and a value
 * 0..256 characters, counted in UTF-16 code units as S3 does; keys unique; keys must not
 * start with "aws:"; keys and values hold only Unicode letters, numbers and separators
 * (\p{L} \p{N} \p{Z}) and _ . : / = + - @. Non-ASCII characters are classified with glibc's
 * C.UTF-8 tables (iswalnum/iswspace, plus the no-break spaces and the Latin-1 vulgar
 * fractions and superscripts that those classes miss); when that locale is unavailable every
 * non-control non-ASCII character is accepted. */
#include "s3/checksum.h"
#include "s3/s3_int.h"

#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wctype.h>

#define TAG_KEY_MAX 128          /* UTF-16 code units */
#define TAG_VALUE_MAX 256
#define OBJECT_TAGS_MAX 10
#define BUCKET_TAGS_MAX 50
#define TAGGING_BODY_MAX (256 * 1024)
#define CONFIG_NAME "tagging"

static const char MSG_HEADER[] =
	"The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.";
static const char MSG_KEY[] = "The TagKey you have provided is invalid";
static const char MSG_VALUE[] = "The TagValue you have provided is invalid";
static const char MSG_DUP[] = "Cannot provide multiple Tags with the same key";
static const char MSG_AWS[] = "Your TagKey cannot be prefixed with aws:";
static const char MSG_OBJ_COUNT[] = "Object tags cannot be greater than 10";
static const char MSG_BUCKET_COUNT[] = "Bucket tags cannot be greater than 50";

/* One tag: borrowed or arena bytes, NUL-terminated, lengths in bytes. */
typedef struct tag {
	const char *key, *value;
	size_t klen, vlen;
} tag;

/* A validation verdict: CN_S3_OK, or the code and message to send. */
typedef struct verdict {
	cn_s3_code code;
	const char *msg;
} verdict;

static const verdict OK_VERDICT = { CN_S3_OK, NULL };

/* ---- characters ------------------------------------------------------------------------- */

static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_locale_init(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* Decodes one code point of valid UTF-8 at p (len > 0); returns its byte length. */
static size_t utf8_next(const unsigned char *p, size_t len, uint32_t *cp)
{
	if (p[0] < 0x80 || len < 2) {
		*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xE0) == 0xC0) {
		*cp = ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
		return 2;
	}
	if ((p[0] & 0xF0) == 0xE0 && len >= 3) {
		*cp = ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
		return 3;
	}
	if (len >= 4) {
		*cp = ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
		      ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
		return 4;
	}
	*cp = p[0];
	return 1;
}

static bool char_allowed(uint32_t cp)
{
	if (cp < 0x80)
		return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') ||
		       (cp && strchr(" _.:/=+-@", (int)cp));
	if (cp < 0xA0)
		return false; /* C1 controls */
	switch (cp) {
	case 0xA0: case 0x2007: case 0x202F:            /* no-break spaces (Zs) */
	case 0xB2: case 0xB3: case 0xB9:                /* superscript digits (No) */
	case 0xBC: case 0xBD: case 0xBE:                /* vulgar fractions (No) */
		return true;
	}
	pthread_once(&utf8_once, utf8_locale_init);
	if (utf8_locale == (locale_t)0)
		return true;
	return iswalnum_l((wint_t)cp, utf8_locale) || iswspace_l((wint_t)cp, utf8_locale);
}

/* Checks valid UTF-8 (caller), allowed characters and at most max UTF-16 code units. */
static bool text_ok(const char *s, size_t len, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t units = 0;

	for (size_t i = 0; i < len;) {
		uint32_t cp;
		i += utf8_next(p + i, len - i, &cp);
		units += cp >= 0x10000 ? 2 : 1;
		if (units > max || !char_allowed(cp))
			return false;
	}
	return true;
}

/* ---- tag sets --------------------------------------------------------------------------- */

static int tag_cmp(const void *a, const void *b)
{
	const tag *x = a, *y = b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(x->key, y->key, n);
	if (c)
		return c;
	return x->klen < y->klen ? -1 : x->klen > y->klen;
}

/* Validates n tags and sorts them by key. from_header selects the header's error for
 * encoding problems and duplicates (InvalidArgument) instead of the XML ones. */
static verdict validate(tag *t, size_t n, size_t max, bool from_header)
{
	verdict bad_key = { CN_S3_InvalidTag, MSG_KEY }, bad_value = { CN_S3_InvalidTag, MSG_VALUE };

	/* Too many tags: AWS answers InvalidTag for an object's (MinIO: BadRequest); a
	 * bucket's keep MinIO's BadRequest (docs/S3-ERRORS.md). */
	if (n > max)
		return max == OBJECT_TAGS_MAX ? (verdict){ CN_S3_InvalidTag, MSG_OBJ_COUNT }
		                              : (verdict){ CN_S3_BadRequest, MSG_BUCKET_COUNT };
	for (size_t i = 0; i < n; i++) {
		if (!cn_utf8_valid(t[i].key, t[i].klen) || !cn_utf8_valid(t[i].value, t[i].vlen))
			return from_header ? (verdict){ CN_S3_InvalidArgument, MSG_HEADER } : bad_key;
		if (t[i].klen == 0 || !text_ok(t[i].key, t[i].klen, TAG_KEY_MAX))
			return bad_key;
		if (t[i].klen >= 4 && !strncasecmp(t[i].key, "aws:", 4))
			return (verdict){ CN_S3_InvalidTag, MSG_AWS };
		if (!text_ok(t[i].value, t[i].vlen, TAG_VALUE_MAX))
			return bad_value;
	}
	if (n > 1)
		qsort(t, n, sizeof(*t), tag_cmp);
	for (size_t i = 1; i < n; i++)
		if (!tag_cmp(&t[i - 1], &t[i]))
			return from_header ? (verdict){ CN_S3_InvalidArgument, MSG_HEADER }
			                   : (verdict){ CN_S3_InvalidTag, MSG_DUP };
	return OK_VERDICT;
}

/* A decoded tag set: the tags and the bytes they point to, both malloc'd (tagset_free). */
typedef struct tagset {
	tag *t;
	size_t n;
	char *bytes;
} tagset;

static void tagset_free(tagset *ts)
{
	free(ts->t);
	free(ts->bytes);
	memset(ts, 0, sizeof(*ts));
}

/* Percent-decodes [p, p+len) ('+' is a space, as in form-encoded queries) to *d (room for
 * len + 1 bytes), NUL-terminated; *d then moves past it. */
static bool decode_part(const char *p, size_t len, char **d, const char **out, size_t *outlen)
{
	if (cn_url_decode((cn_str){ p, len }, true, *d, len + 1, outlen) != CN_OK)
		return false;
	CN_ASSERT(*outlen <= len);
	(*d)[*outlen] = 0;
	*out = *d;
	*d += *outlen + 1;
	return true;
}

/* Parses a query-string tag set (the x-amz-tagging header, or the stored canonical form)
 * into ts. Empty segments are skipped; a segment without '=' is a key with the empty value.
 * More than max segments: ts->n = max + 1 and nothing decoded (the caller's validate
 * reports the count). A segment with two '=' or a bad escape: *v = InvalidArgument.
 * CN_ERR_NOMEM, else CN_OK (*v says whether the set parsed). */
static cn_err parse_query(const char *s, size_t max, tagset *ts, verdict *v)
{
	size_t count = 0, len = strlen(s);

	memset(ts, 0, sizeof(*ts));
	*v = OK_VERDICT;
	for (size_t i = 0; i < len;) {
		const char *amp = memchr(s + i, '&', len - i);
		size_t end = amp ? (size_t)(amp - s) : len;
		if (end > i)
			count++;
		i = end + 1;
	}
	if (count > max) {
		ts->n = max + 1;
		return CN_OK;
	}
	/* each segment decodes to at most its own length, plus two NULs */
	ts->t = malloc((count ? count : 1) * sizeof(*ts->t));
	ts->bytes = malloc(len + 2 * count + 1);
	if (!ts->t || !ts->bytes) {
		tagset_free(ts);
		return CN_ERR_NOMEM;
	}
	char *d = ts->bytes;
	for (size_t i = 0; i < len;) {
		const char *seg = s + i, *amp = memchr(seg, '&', len - i);
		size_t slen = amp ? (size_t)(amp - seg) : len - i;
		i += slen + 1;
		if (!slen)
			continue;
		const char *eq = memchr(seg, '=', slen);
		size_t klen = eq ? (size_t)(eq - seg) : slen;
		const char *val = eq ? eq + 1 : seg + slen;
		size_t vlen = eq ? slen - klen - 1 : 0;
		tag *tg = &ts->t[ts->n];
		if (memchr(val, '=', vlen) || !decode_part(seg, klen, &d, &tg->key, &tg->klen) ||
		    !decode_part(val, vlen, &d, &tg->value, &tg->vlen)) {
			tagset_free(ts);
			*v = (verdict){ CN_S3_InvalidArgument, MSG_HEADER };
			return CN_OK;
		}
		ts->n++;
	}
	return CN_OK;
}

/* The canonical form of sorted, validated tags into *out, malloc'd (NULL for none). */
static cn_err canonical(const tag *t, size_t n, char **out)
{
	cn_buf b;
	cn_err e = CN_OK;

	*out = NULL;
	if (n == 0)
		return CN_OK;
	cn_buf_init(&b);
	for (size_t i = 0; i < n && !e; i++) {
		if (i)
			e = cn_buf_append(&b, "&", 1);
		if (!e)
			e = cn_url_encode(&b, (cn_str){ t[i].key, t[i].klen }, false);
		if (!e)
			e = cn_buf_append(&b, "=", 1);
		if (!e)
			e = cn_url_encode(&b, (cn_str){ t[i].value, t[i].vlen }, false);
	}
	CN_ASSERT(e == CN_OK || e == CN_ERR_NOMEM);
	if (!e) {
		*out = strndup(b.p, b.len);
		if (!*out)
			e = CN_ERR_NOMEM;
	}
	cn_buf_fini(&b);
	return e;
}

/* A verdict and a result as the public parsers return them. */
static cn_err verdict_out(verdict v, cn_s3_code *code, const char **msg)
{
	*code = v.code;
	*msg = v.msg;
	return v.code == CN_S3_OK ? CN_OK : CN_ERR_INVALID;
}

cn_err cn_s3_tagging_parse_header(const char *h, char **canon, cn_s3_code *code,
                                  const char **msg)
{
	tagset ts;
	verdict v;

	*canon = NULL;
	*code = CN_S3_OK;
	*msg = NULL;
	cn_err e = parse_query(h, OBJECT_TAGS_MAX, &ts, &v);
	if (e)
		return e;
	if (v.code == CN_S3_OK)
		v = validate(ts.t, ts.n, OBJECT_TAGS_MAX, true);
	if (v.code == CN_S3_OK)
		e = canonical(ts.t, ts.n, canon);
	tagset_free(&ts);
	return e ? e : verdict_out(v, code, msg);
}

cn_err cn_s3_tagging_parse_xml(const char *p, size_t len, bool bucket, char **canon,
                               cn_s3_code *code, const char **msg)
{
	size_t max = bucket ? BUCKET_TAGS_MAX : OBJECT_TAGS_MAX;
	cn_xml_node *root = NULL;

	*canon = NULL;
	*code = CN_S3_OK;
	*msg = NULL;
	cn_err e = len ? cn_xml_parse(p, len, &root) : CN_ERR_INVALID;
	if (e == CN_ERR_NOMEM)
		return e;
	/* Schema: Tagging { TagSet { Tag { Key, Value } * } }, each element once. */
	const cn_xml_node *set = NULL;
	size_t count = 0;
	bool valid = e == CN_OK && !strcmp(root->name, "Tagging");
	for (const cn_xml_node *c = valid ? root->child : NULL; c && valid; c = c->next) {
		valid = !strcmp(c->name, "TagSet") && !set;
		set = c;
	}
	valid = valid && set;
	for (const cn_xml_node *c = valid ? set->child : NULL; c && valid; c = c->next) {
		size_t nk = 0, nv = 0;
		valid = !strcmp(c->name, "Tag");
		for (const cn_xml_node *f = valid ? c->child : NULL; f && valid; f = f->next) {
			nk += !strcmp(f->name, "Key");
			nv += !strcmp(f->name, "Value");
			valid = (!strcmp(f->name, "Key") || !strcmp(f->name, "Value")) && !f->child;
		}
		valid = valid && nk == 1 && nv == 1;
		count++;
	}
	if (!valid) {
		cn_xml_free(root);
		return verdict_out((verdict){ CN_S3_MalformedXML, NULL }, code, msg);
	}
	/* Over the limit: validate reports the count before looking at any tag. The tags
	 * point into the tree (its texts are NUL-terminated). */
	tag *t = count <= max ? malloc((count ? count : 1) * sizeof(*t)) : NULL;
	if (count <= max && !t) {
		cn_xml_free(root);
		return CN_ERR_NOMEM;
	}
	size_t i = 0;
	for (const cn_xml_node *c = t ? set->child : NULL; c; c = c->next, i++) {
		const cn_xml_node *k = cn_xml_child(c, "Key"), *v = cn_xml_child(c, "Value");
		t[i] = (tag){ k->text, v->text, k->text_len, v->text_len };
	}
	verdict vd = validate(t, count, max, false);
	e = vd.code == CN_S3_OK ? canonical(t, count, canon) : CN_OK;
	free(t);
	cn_xml_free(root);
	return e ? e : verdict_out(vd, code, msg);
}

/* ---- the x-amz-tagging header (PutObject, CopyObject, CreateMultipartUpload) ------------- */

/* A public parser's result as the handler's: *canon (arena, NULL for no tags), or false
 * after sending the error. */
static bool canon_result(cn_s3_req *r, cn_err e, char *c, cn_s3_code code, const char *msg,
                         const char **canon)
{
	*canon = NULL;
	if (e == CN_ERR_INVALID)
		cn_s3_error(r, code, msg);
	else if (e)
		cn_s3_error_from(r, e);
	else if (c)
		*canon = cn_s3_strndup(r, c, strlen(c));
	free(c);
	return e == CN_OK;
}

bool cn_s3_tagging_from_request(cn_s3_req *r, const char **canon)
{
	const char *h = cn_s3_header(r, "x-amz-tagging");
	cn_s3_code code;
	const char *msg;
	char *c;

	*canon = NULL;
	if (!h)
		return true;
	cn_err e = cn_s3_tagging_parse_header(h, &c, &code, &msg);
	return canon_result(r, e, c, code, msg, canon);
}

size_t cn_s3_tagging_count(const char *stored)
{
	size_t n = 0;

	if (!stored || !*stored)
		return 0;
	for (const char *p = stored; *p; p++)
		n += *p == '&';
	return n + 1;
}

/* ---- request bodies --------------------------------------------------------------------- */

/* x-amz-checksum-* of a small body, sent as a header or an aws-chunked trailer: verified
 * when present. Returns false after sending an error. */
static bool body_checksum_ok(cn_s3_req *r, const cn_buf *body)
{
	const cn_http_req *h = r->h;
	cn_cksum_algo algo = CN_CKSUM_NONE;
	cn_str val = { NULL, 0 };
	unsigned char want[CN_CKSUM_MAX_DIGEST], got[CN_CKSUM_MAX_DIGEST];
	char msg[128];

	for (size_t i = 0; i < h->nheaders && algo == CN_CKSUM_NONE; i++) {
		algo = cn_cksum_from_header(h->headers[i].name);
		val = h->headers[i].value;
	}
	if (algo == CN_CKSUM_NONE) {
		const char *name = NULL, *v = cn_s3_trailer_checksum(r, &name);
		if (!v || !name)
			return true;
		algo = cn_cksum_from_header(cn_str_c(name));
		if (algo == CN_CKSUM_NONE)
			return true;
		val = cn_str_c(v);
	}
	if (cn_cksum_decode(algo, val, want) != CN_OK) {
		snprintf(msg, sizeof(msg), "Value for %s header is invalid.", cn_cksum_header(algo));
		cn_s3_error(r, CN_S3_InvalidRequest, cn_s3_strndup(r, msg, strlen(msg)));
		return false;
	}
	cn_cksum ck;
	memset(&ck, 0, sizeof(ck));
	if (cn_cksum_init(&ck, algo) != CN_OK) {
		cn_s3_error_from(r, CN_ERR_NOMEM);
		return false;
	}
	cn_cksum_update(&ck, body->p ? body->p : "", body->len);
	cn_cksum_final(&ck, got);
	cn_cksum_fini(&ck);
	if (memcmp(want, got, cn_cksum_len(algo)) != 0) {
		snprintf(msg, sizeof(msg), "The %s you specified did not match the calculated checksum.",
		         cn_cksum_header(algo));
		cn_s3_error(r, CN_S3_BadDigest, cn_s3_strndup(r, msg, strlen(msg)));
		return false;
	}
	return true;
}

/* Reads, verifies and parses a Tagging document (at most 10 tags, 50 for a bucket) into
 * its canonical form: *canon (arena), NULL for an empty set. Returns false after sending
 * an error. */
static bool read_tagging(cn_s3_req *r, bool bucket, const char **canon)
{
	cn_buf b;
	cn_s3_code code;
	const char *msg;
	char *c;
	bool ok = false;

	*canon = NULL;
	cn_buf_init(&b);
	cn_err e = cn_s3_read_body(r, TAGGING_BODY_MAX, &b);
	if (e == CN_ERR_TOO_LARGE)
		cn_s3_error(r, CN_S3_MalformedXML, NULL);
	else if (e)
		cn_s3_error_from(r, e);
	else if (body_checksum_ok(r, &b)) {
		e = cn_s3_tagging_parse_xml(b.p, b.len, bucket, &c, &code, &msg);
		ok = canon_result(r, e, c, code, msg, canon);
	}
	cn_buf_fini(&b);
	return ok;
}

/* <Tagging xmlns><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging>, 200. */
static void send_tagging(cn_s3_req *r, const tag *t, size_t n)
{
	cn_buf b;

	cn_buf_init(&b);
	cn_err e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "Tagging", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_open(&b, "TagSet", NULL);
	for (size_t i = 0; i < n && !e; i++) {
		e = cn_xml_open(&b, "Tag", NULL);
		if (!e)
			e = cn_xml_elem_n(&b, "Key", t[i].key, t[i].klen);
		if (!e)
			e = cn_xml_elem_n(&b, "Value", t[i].value, t[i].vlen);
		if (!e)
			e = cn_xml_close(&b, "Tag");
	}
	if (!e)
		e = cn_xml_close(&b, "TagSet");
	if (!e)
		e = cn_xml_close(&b, "Tagging");
	if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_xml(r, 200, &b);
	cn_buf_fini(&b);
}

/* Decodes a stored canonical form and sends it. */
static void send_stored(cn_s3_req *r, const char *stored)
{
	tagset ts;
	verdict v = OK_VERDICT;

	memset(&ts, 0, sizeof(ts));
	if (stored && parse_query(stored, (size_t)-2, &ts, &v) != CN_OK) {
		cn_s3_error_from(r, CN_ERR_NOMEM);
		return;
	}
	if (v.code != CN_S3_OK) {
		cn_log(CN_LOG_ERROR, r->reqid, "tagging %s/%s: stored tag set is corrupt", r->bucket,
		       r->key);
		cn_s3_error_from(r, CN_ERR_CORRUPT);
		return;
	}
	send_tagging(r, ts.t, ts.n);
	tagset_free(&ts);
}

/* ---- object tagging --------------------------------------------------------------------- */

/* cn_obj_update_meta callback: sets "x-amz-tagging" to ctx (a canonical form), or removes
 * it when ctx is NULL. */
static cn_err set_tags_meta(void *ctx, cn_obj_info *info)
{
	const char *canon = ctx;

	for (size_t i = 0; i < info->nmeta; i++) {
		if (strcmp(info->meta[i].name, CN_S3_TAGGING_META))
			continue;
		if (canon) {
			char *v = strdup(canon);
			if (!v)
				return CN_ERR_NOMEM;
			free(info->meta[i].value);
			info->meta[i].value = v;
		} else {
			free(info->meta[i].name);
			free(info->meta[i].value);
			memmove(&info->meta[i], &info->meta[i + 1], (info->nmeta - i - 1) * sizeof(cn_kv));
			info->nmeta--;
		}
		return CN_OK;
	}
	if (!canon)
		return CN_OK;
	cn_kv *m = realloc(info->meta, (info->nmeta + 1) * sizeof(cn_kv));
	if (!m)
		return CN_ERR_NOMEM;
	info->meta = m;
	char *name = strdup(CN_S3_TAGGING_META), *value = strdup(canon);
	if (!name || !value) {
		free(name);
		free(value);
		return CN_ERR_NOMEM;
	}
	m[info->nmeta].name = name;
	m[info->nmeta].value = value;
	info->nmeta++;
	return CN_OK;
}

/* With ?versionId (well-formed: the router checked) the tags of that version; the reply
 * names the version (x-amz-version-id) when the bucket is or was versioned. */
static void update_object_tags(cn_s3_req *r, const char *canon, int status)
{
	cn_obj_info out;

	cn_obj_info_init(&out);
	cn_err e = cn_obj_update_meta_version(r->store, r->bucket, r->key,
	                                      cn_s3_query(r, "versionId"), set_tags_meta,
	                                      (void *)canon, &out);
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
	} else {
		cn_s3_reply_version_id(r, out.version_id);
		cn_s3_send_empty(r, status);
	}
	cn_obj_info_fini(&out);
}

void cn_s3_get_object_tagging(cn_s3_req *r)
{
	cn_obj_info info;

	cn_obj_info_init(&info);
	cn_err e = cn_obj_stat_version(r->store, r->bucket, r->key, cn_s3_query(r, "versionId"),
	                               &info);
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
	} else {
		cn_s3_reply_version_id(r, info.version_id);
		send_stored(r, cn_obj_info_get(&info, CN_S3_TAGGING_META));
	}
	cn_obj_info_fini(&info);
}

void cn_s3_put_object_tagging(cn_s3_req *r)
{
	const char *canon;

	if (!read_tagging(r, false, &canon))
		return;
	update_object_tags(r, canon, 200);
}

void cn_s3_delete_object_tagging(cn_s3_req *r)
{
	update_object_tags(r, NULL, 204);
}

/* ---- bucket tagging --------------------------------------------------------------------- */

void cn_s3_get_bucket_tagging(cn_s3_req *r)
{
	cn_buf b;

	cn_buf_init(&b);
	cn_err e = cn_obj_bucket_config_get(r->store, r->bucket, CONFIG_NAME, &b);
	if (e == CN_ERR_NOT_FOUND || (e == CN_OK && b.len == 0))
		cn_s3_error(r, CN_S3_NoSuchTagSet, NULL);
	else if (e != CN_OK)
		cn_s3_error_from(r, e);
	else
		send_stored(r, cn_s3_strndup(r, b.p, b.len));
	cn_buf_fini(&b);
}

/* PutBucketTagging answers 204 No Content, as AWS S3 does; MinIO answers 200, and MinIO's
 * SDKs were written against that: minio-js 8 (setBucketTagging) takes any other status for
 * an error, and so fails against AWS S3 as well. A request from one of MinIO's SDKs (their
 * User-Agent starts "MinIO (", e.g. "MinIO (linux; x64) minio-js/8.0.7") gets MinIO's 200;
 * every other client AWS's 204 (tests/integration/js/minio.test.mjs, test_tagging.py). */
static bool from_minio_sdk(cn_s3_req *r)
{
	const char *ua = cn_s3_header(r, "user-agent");
	return ua && strncmp(ua, "MinIO (", 7) == 0;
}

void cn_s3_put_bucket_tagging(cn_s3_req *r)
{
	const char *canon;
	cn_err e;

	if (!read_tagging(r, true, &canon))
		return;
	if (!canon)
		e = cn_obj_bucket_config_delete(r->store, r->bucket, CONFIG_NAME);
	else
		e = cn_obj_bucket_config_put(r->store, r->bucket, CONFIG_NAME, canon, strlen(canon));
	if (e != CN_OK)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_empty(r, from_minio_sdk(r) ? 200 : 204);
}

void cn_s3_delete_bucket_tagging(cn_s3_req *r)
{
	cn_err e = cn_obj_bucket_config_delete(r->store, r->bucket, CONFIG_NAME);
	if (e != CN_OK)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_empty(r, 204);
}
