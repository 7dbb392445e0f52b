/* s3/object.c: the single-object handlers — PutObject (and CopyObject, a PUT with
 * x-amz-copy-source), GetObject / HeadObject, DeleteObject. They sit between the router
 * (src/s3/s3.c, which authenticates and builds cn_s3_req) and the object layer
 * (src/object/object.h), and follow AWS S3 behaviour: which request headers are stored as
 * object metadata and returned, Content-MD5 and x-amz-checksum-* verification while the body
 * streams (a wrapping cn_reader computes the checksum, the object layer's seal callback
 * compares before anything becomes visible), single byte ranges, RFC 7232 conditionals in
 * AWS's order, and response-* overrides. Memory per request is bounded: bodies stream from
 * the request reader (or the copy source) straight into cn_obj_put, and out through
 * cn_obj_read. Every handler sends exactly one response (s3_int.h). */
#include "s3/checksum.h"
#include "s3/s3_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define META_PREFIX "x-amz-meta-"
#define META_PREFIX_LEN (sizeof(META_PREFIX) - 1)
#define DEFAULT_CONTENT_TYPE "binary/octet-stream"

/* System metadata kept from a PUT and returned by GET/HEAD, besides x-amz-meta-*,
 * x-amz-storage-class and x-amz-checksum-*. */
static const char *const stored_headers[] = {
	"content-type", "content-encoding", "content-disposition", "content-language",
	"cache-control", "expires", "x-amz-website-redirect-location",
};
#define NSTORED (sizeof(stored_headers) / sizeof(stored_headers[0]))

/* GET query overrides, in the same order as the first six stored_headers. */
static const char *const response_overrides[] = {
	"response-content-type", "response-content-encoding", "response-content-disposition",
	"response-content-language", "response-cache-control", "response-expires",
};
#define NOVERRIDES (sizeof(response_overrides) / sizeof(response_overrides[0]))

/* ---- small helpers ------------------------------------------------------------------ */

static char *lower_dup(cn_s3_req *r, cn_str s)
{
	char *p = cn_s3_strndup(r, s.p, s.len);
	for (size_t i = 0; i < s.len; i++)
		p[i] = (char)tolower((unsigned char)p[i]);
	return p;
}

static bool is_stored_header(const char *lname)
{
	for (size_t i = 0; i < NSTORED; i++)
		if (!strcmp(lname, stored_headers[i]))
			return true;
	return false;
}

/* A metadata list in the request arena with a fixed capacity chosen by the caller. */
typedef struct meta_list {
	cn_kv *v;
	size_t n, cap;
} meta_list;

static void meta_init(cn_s3_req *r, meta_list *m, size_t cap)
{
	m->v = cn_s3_alloc(r, (cap ? cap : 1) * sizeof(cn_kv));
	m->n = 0;
	m->cap = cap;
}

static cn_kv *meta_find(meta_list *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].name, name))
			return &m->v[i];
	return NULL;
}

static void meta_remove(meta_list *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].name, name)) {
			memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(cn_kv));
			m->n--;
			return;
		}
}

static void meta_set(meta_list *m, char *name, char *value)
{
	cn_kv *kv = meta_find(m, name);
	if (kv) {
		kv->value = value;
		return;
	}
	CN_ASSERT(m->n < m->cap);
	m->v[m->n].name = name;
	m->v[m->n].value = value;
	m->n++;
}

/* Content-Encoding without the "aws-chunked" token (AWS strips it); NULL when empty. */
static char *strip_aws_chunked(cn_s3_req *r, cn_str v)
{
	char *out = cn_s3_alloc(r, v.len + 1);
	size_t n = 0, i = 0;

	while (i < v.len) {
		size_t j = i;
		while (j < v.len && v.p[j] != ',')
			j++;
		size_t a = i, b = j;
		while (a < b && (v.p[a] == ' ' || v.p[a] == '\t'))
			a++;
		while (b > a && (v.p[b - 1] == ' ' || v.p[b - 1] == '\t'))
			b--;
		cn_str tok = { v.p + a, b - a };
		if (tok.len && !cn_str_ieq_c(tok, "aws-chunked")) {
			if (n) {
				out[n++] = ',';
			}
			memcpy(out + n, tok.p, tok.len);
			n += tok.len;
		}
		i = j + 1;
	}
	out[n] = 0;
	return n ? out : NULL;
}

/* Validates x-amz-storage-class (when sent) into *out ("STANDARD"/"REDUCED_REDUNDANCY").
 * Returns false after sending InvalidStorageClass. */
static bool storage_class_header(cn_s3_req *r, const char **out)
{
	const char *sc = cn_s3_header(r, "x-amz-storage-class");
	*out = NULL;
	if (!sc)
		return true;
	if (strcmp(sc, "STANDARD") && strcmp(sc, "REDUCED_REDUNDANCY")) {
		cn_s3_error(r, CN_S3_InvalidStorageClass, NULL);
		return false;
	}
	*out = sc;
	return true;
}

/* Collects the metadata a PUT (or a copy with REPLACE) stores from the request headers:
 * the system headers of stored_headers, x-amz-meta-* (names lowercased, repeated names
 * joined with ','), x-amz-storage-class. Returns false after sending an error. */
static bool collect_request_meta(cn_s3_req *r, meta_list *m)
{
	const cn_http_req *h = r->h;
	size_t user = 0;
	const char *sc;

	if (!storage_class_header(r, &sc))
		return false;
	for (size_t i = 0; i < h->nheaders; i++) {
		cn_str nm = h->headers[i].name, val = h->headers[i].value;
		if (nm.len > META_PREFIX_LEN && strncasecmp(nm.p, META_PREFIX, META_PREFIX_LEN) == 0) {
			char *ln = lower_dup(r, nm);
			user += nm.len - META_PREFIX_LEN + val.len;
			if (user > CN_S3_MAX_USER_META) {
				cn_s3_error(r, CN_S3_MetadataTooLarge, NULL);
				return false;
			}
			cn_kv *kv = meta_find(m, ln);
			if (kv) {
				size_t a = strlen(kv->value);
				char *j = cn_s3_alloc(r, a + 1 + val.len + 1);
				memcpy(j, kv->value, a);
				j[a] = ',';
				memcpy(j + a + 1, val.p, val.len);
				j[a + 1 + val.len] = 0;
				kv->value = j;
				user++;
			} else {
				meta_set(m, ln, cn_s3_strndup(r, val.p, val.len));
			}
			continue;
		}
		if (nm.len > 40)
			continue;
		char *ln = lower_dup(r, nm);
		if (!is_stored_header(ln) || meta_find(m, ln))
			continue;
		if (!strcmp(ln, "content-encoding")) {
			char *v = strip_aws_chunked(r, val);
			if (v)
				meta_set(m, ln, v);
			continue;
		}
		meta_set(m, ln, cn_s3_strndup(r, val.p, val.len));
	}
	if (!meta_find(m, "content-type"))
		meta_set(m, "content-type", DEFAULT_CONTENT_TYPE);
	if (sc)
		meta_set(m, "x-amz-storage-class", (char *)sc);
	return true;
}

bool cn_s3_collect_meta(cn_s3_req *r, size_t extra, cn_kv **out, size_t *n)
{
	meta_list m;

	meta_init(r, &m, r->h->nheaders + 4 + extra);
	if (!collect_request_meta(r, &m))
		return false;
	*out = m.v;
	*n = m.n;
	return true;
}

/* etag: a cn_obj_info's (NUL-terminated within its 72 bytes), sent quoted. */
static void send_etag(cn_s3_req *r, const cn_obj_info *info)
{
	char q[sizeof info->etag + 2];
	size_t n = strlen(info->etag);
	q[0] = '"';
	memcpy(q + 1, info->etag, n);
	q[n + 1] = '"';
	q[n + 2] = 0;
	cn_http_resp_header(r->x, "ETag", q);
}

/* ---- streaming checksum reader and the seal callback --------------------------------- */

/* The context of one streamed write (struct in s3_int.h: multipart.c shares it). */
typedef cn_s3_put_ctx put_ctx;

ssize_t cn_s3_put_read(cn_reader *rd, void *buf, size_t len)
{
	put_ctx *c = (put_ctx *)rd;
	ssize_t n = c->src->read(c->src, buf, len);

	if (n > 0) {
		c->nread += n;
		if (c->nread > c->limit) {
			c->fail = CN_S3_EntityTooLarge;
			return -CN_ERR_TOO_LARGE;
		}
		if (c->ck.algo != CN_CKSUM_NONE)
			cn_cksum_update(&c->ck, buf, (size_t)n);
	}
	return n;
}

static const char *mismatch_msg(cn_s3_req *r, cn_cksum_algo a)
{
	size_t n = 96;
	char *m = cn_s3_alloc(r, n);
	snprintf(m, n, "The %s you specified did not match the calculated checksum.",
	         cn_cksum_header(a));
	return m;
}

cn_err cn_s3_put_seal(void *ctx, const unsigned char md5[16], int64_t size, cn_kv **add,
                      size_t *nadd)
{
	put_ctx *c = ctx;
	cn_s3_req *r = c->r;
	unsigned char got[CN_CKSUM_MAX_DIGEST];

	*nadd = 0;
	if (c->have_md5 && memcmp(md5, c->md5, 16) != 0) {
		c->fail = CN_S3_BadDigest;
		return CN_ERR_DIGEST;
	}
	if (c->ck.algo == CN_CKSUM_NONE)
		return CN_OK;
	cn_cksum_final(&c->ck, got);
	cn_base64_encode(got, cn_cksum_len(c->ck.algo), c->value);
	if (c->from_trailer) {
		const char *name = NULL;
		const char *v = cn_s3_trailer_checksum(r, &name);
		if (!v || !name || cn_cksum_from_header(cn_str_c(name)) != c->ck.algo) {
			c->fail = CN_S3_InvalidRequest;
			c->fail_msg = "The checksum declared in x-amz-trailer was not received.";
			return CN_ERR_INVALID;
		}
		if (cn_cksum_decode(c->ck.algo, cn_str_c(v), c->expected) != CN_OK) {
			c->fail = CN_S3_InvalidRequest;
			c->fail_msg = "Value for the trailing checksum is invalid.";
			return CN_ERR_INVALID;
		}
		c->have_expected = true;
	}
	if (c->have_expected && memcmp(got, c->expected, cn_cksum_len(c->ck.algo)) != 0) {
		c->fail = CN_S3_BadDigest;
		c->fail_msg = mismatch_msg(r, c->ck.algo);
		return CN_ERR_DIGEST;
	}
	/* The object layer frees what the seal adds (free_kvs in src/object/object.c). */
	cn_kv *kv = calloc(1, sizeof(*kv));
	if (kv) {
		kv->name = strdup(cn_cksum_header(c->ck.algo));
		kv->value = strdup(c->value);
	}
	if (!kv || !kv->name || !kv->value) {
		if (kv) {
			free(kv->name);
			free(kv->value);
		}
		free(kv);
		return CN_ERR_NOMEM;
	}
	*add = kv;
	*nadd = 1;
	return CN_OK;
}

/* Sets up c->ck / expected / from_trailer from the request's checksum headers. Returns
 * false after sending an error. */
bool cn_s3_setup_checksum(cn_s3_req *r, put_ctx *c)
{
	const cn_http_req *h = r->h;
	cn_cksum_algo algo = CN_CKSUM_NONE, sdk = CN_CKSUM_NONE, trl = CN_CKSUM_NONE;
	char msg[128];

	for (size_t i = 0; i < h->nheaders; i++) {
		cn_cksum_algo a = cn_cksum_from_header(h->headers[i].name);
		if (a == CN_CKSUM_NONE)
			continue;
		if (algo != CN_CKSUM_NONE) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
			return false;
		}
		algo = a;
		if (cn_cksum_decode(a, h->headers[i].value, c->expected) != CN_OK) {
			snprintf(msg, sizeof(msg), "Value for %s header is invalid.", cn_cksum_header(a));
			cn_s3_error(r, CN_S3_InvalidRequest, cn_s3_strndup(r, msg, strlen(msg)));
			return false;
		}
		c->have_expected = true;
	}
	const char *s = cn_s3_header(r, "x-amz-sdk-checksum-algorithm");
	if (s) {
		sdk = cn_cksum_from_name(cn_str_c(s));
		if (sdk == CN_CKSUM_NONE) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "Value for x-amz-sdk-checksum-algorithm header is invalid.");
			return false;
		}
	}
	const char *t = cn_s3_declared_trailer(r);
	if (t) {
		trl = cn_cksum_from_header(cn_str_c(t));
		if (trl == CN_CKSUM_NONE) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "The value specified in the x-amz-trailer header is not supported");
			return false;
		}
	}
	if (trl != CN_CKSUM_NONE && algo != CN_CKSUM_NONE) {
		cn_s3_error(r, CN_S3_InvalidRequest,
		            "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
		return false;
	}
	if (trl != CN_CKSUM_NONE) {
		algo = trl;
		c->from_trailer = true;
	}
	if (sdk != CN_CKSUM_NONE) {
		if (algo == CN_CKSUM_NONE) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.");
			return false;
		}
		if (sdk != algo) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "Value for x-amz-sdk-checksum-algorithm header is invalid.");
			return false;
		}
	}
	if (algo != CN_CKSUM_NONE && cn_cksum_init(&c->ck, algo) != CN_OK) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
		return false;
	}
	return true;
}

/* Content-MD5 header: base64 of 16 bytes. Returns false after sending InvalidDigest. */
bool cn_s3_parse_content_md5(cn_s3_req *r, put_ctx *c)
{
	const char *v = cn_s3_header(r, "content-md5");
	unsigned char tmp[20];
	size_t n = 0;

	if (!v)
		return true;
	if (strlen(v) != 24 || cn_base64_decode(cn_str_c(v), tmp, sizeof(tmp), &n) != CN_OK ||
	    n != 16) {
		cn_s3_error(r, CN_S3_InvalidDigest, NULL);
		return false;
	}
	memcpy(c->md5, tmp, 16);
	c->have_md5 = true;
	return true;
}

/* ---- conditionals -------------------------------------------------------------------- */

/* True when the comma-separated entity-tag list matches etag ("*" matches anything;
 * weak prefixes and quotes are tolerated). */
static bool etag_list_match(const char *list, const char *etag)
{
	size_t el = strlen(etag);
	const char *p = list;

	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *s = p;
		while (*p && *p != ',')
			p++;
		const char *e = p;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e - s >= 2 && s[0] == 'W' && s[1] == '/')
			s += 2;
		if (e > s && *s == '"')
			s++;
		if (e > s && e[-1] == '"')
			e--;
		if (e - s == 1 && *s == '*')
			return true;
		if ((size_t)(e - s) == el && el && memcmp(s, etag, el) == 0)
			return true;
	}
	return false;
}

/* Parses an HTTP date header; false when absent or invalid (then it is ignored). */
static bool header_date(const char *v, int64_t *ms)
{
	return v && cn_time_parse_http(cn_str_c(v), ms) == CN_OK;
}

/* RFC 7232 §6 order as S3 applies it. Returns 0 to proceed, 412, or not_modified (304 for
 * GET/HEAD, 412 for copy-source conditions). */
int cn_s3_eval_conditions(const char *if_match, const char *if_unmod, const char *if_none,
                          const char *if_mod, const cn_obj_info *info, int not_modified)
{
	int64_t t, mtime_s = info->mtime_ms / 1000;

	if (if_match) {
		if (!etag_list_match(if_match, info->etag))
			return 412;
	} else if (header_date(if_unmod, &t) && mtime_s > t / 1000) {
		return 412;
	}
	if (if_none) {
		if (etag_list_match(if_none, info->etag))
			return not_modified;
	} else if (header_date(if_mod, &t) && t <= cn_now_ms() && mtime_s <= t / 1000) {
		return not_modified;
	}
	return 0;
}

/* ---- PutObject / CopyObject ------------------------------------------------------------ */

static void copy_object(cn_s3_req *r, const char *src);

/* s3_int.h; PutObject checks them before the body is read. */
bool cn_s3_write_conditions(cn_s3_req *r)
{
	const char *inm = cn_s3_header(r, "if-none-match");
	const char *im = cn_s3_header(r, "if-match");
	cn_obj_info cur;
	cn_err e;

	if (!inm && !im)
		return true;
	cn_obj_info_init(&cur);
	e = cn_obj_stat(r->store, r->bucket, r->key, &cur);
	bool ok = true;
	if (e != CN_OK && e != CN_ERR_NO_KEY) {
		cn_s3_error_from(r, e);
		ok = false;
	} else if (im && e == CN_ERR_NO_KEY) {
		cn_s3_error(r, CN_S3_NoSuchKey, NULL);
		ok = false;
	} else if ((im && !etag_list_match(im, cur.etag)) ||
	           (inm && e == CN_OK && etag_list_match(inm, cur.etag))) {
		cn_s3_error(r, CN_S3_PreconditionFailed, NULL);
		ok = false;
	}
	cn_obj_info_fini(&cur);
	return ok;
}

/* Stores the object (cn_obj_put with c as the body); false after sending the error, the
 * body's own (c->fail: a checksum, a size) before the store's. */
static bool put_answered(cn_s3_req *r, put_ctx *c, const cn_put_opts *opts, cn_obj_info *out)
{
	cn_err e = cn_obj_put(r->store, r->bucket, r->key, &c->rd, opts, out);
	if (e == CN_OK)
		return true;
	if (c->fail != CN_S3_OK)
		cn_s3_error(r, c->fail, c->fail_msg);
	else
		cn_s3_error_from(r, e);
	return false;
}


void cn_s3_put_object(cn_s3_req *r)
{
	const char *src = cn_s3_header(r, "x-amz-copy-source");
	put_ctx c;
	meta_list m;
	cn_obj_info out;
	cn_err e;

	if (src) {
		copy_object(r, src);
		return;
	}
	memset(&c, 0, sizeof(c));
	cn_obj_info_init(&out);
	e = cn_obj_key_check(r->key, strlen(r->key));
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		goto done;
	}
	if (r->h->content_length < 0 && !r->h->chunked) {
		cn_s3_error(r, CN_S3_MissingContentLength, NULL);
		goto done;
	}
	if (r->body_len > CN_S3_MAX_SINGLE_PUT) {
		cn_s3_error(r, CN_S3_EntityTooLarge, NULL);
		goto done;
	}
	if (cn_s3_header(r, "x-amz-server-side-encryption") ||
	    cn_s3_header(r, "x-amz-server-side-encryption-customer-algorithm")) {
		cn_s3_error(r, CN_S3_NotImplemented, "Server-side encryption is not implemented.");
		goto done;
	}
	meta_init(r, &m, r->h->nheaders + 4);
	if (!collect_request_meta(r, &m) || !cn_s3_parse_content_md5(r, &c) ||
	    !cn_s3_setup_checksum(r, &c) || !cn_s3_write_conditions(r))
		goto done;
	const char *tags;
	if (!cn_s3_tagging_from_request(r, &tags))
		goto done;
	if (tags)
		meta_set(&m, CN_S3_TAGGING_META, (char *)tags);

	c.rd.read = cn_s3_put_read;
	c.r = r;
	c.src = r->body;
	c.limit = CN_S3_MAX_SINGLE_PUT;
	cn_put_opts opts = {
		.meta = m.v, .nmeta = m.n, .size = r->body_len, .seal = cn_s3_put_seal, .seal_ctx = &c,
	};
	if (!put_answered(r, &c, &opts, &out))
		goto done;
	cn_s3_resp_start(r, 200);
	send_etag(r, &out);
	if (c.ck.algo != CN_CKSUM_NONE)
		cn_http_resp_header(r->x, cn_cksum_header(c.ck.algo), c.value);
	cn_s3_reply_version_id(r, out.version_id);
	cn_s3_send_reply_headers(r);
	cn_http_resp_send_head(r->x, 0);
done:
	cn_cksum_fini(&c.ck);
	cn_obj_info_fini(&out);
}

/* Parses x-amz-copy-source ("/bucket/key" or "bucket/key", percent-encoded, optional
 * "?versionId=..."). Returns false after sending an error. */
bool cn_s3_parse_copy_source(cn_s3_req *r, const char *src, char **bucket, char **key,
                             const char **vid)
{
	static const char bad[] =
		"Copy Source must mention the source bucket and key: sourcebucket/sourcekey";
	const char *q = strchr(src, '?');
	size_t plen = q ? (size_t)(q - src) : strlen(src);

	*vid = NULL;
	if (q) {
		const char *qs = q + 1;
		if (strncmp(qs, "versionId=", 10) != 0) {
			cn_s3_error(r, CN_S3_InvalidArgument, bad);
			return false;
		}
		if (!cn_obj_version_id_valid(qs + 10)) {
			cn_s3_error(r, CN_S3_InvalidArgument, "Invalid version id specified");
			return false;
		}
	}
	*vid = q ? q + 11 : NULL;
	char *dec = cn_s3_alloc(r, plen + 1);
	size_t n = 0;
	if (cn_url_decode((cn_str){ src, plen }, false, dec, plen + 1, &n) != CN_OK ||
	    memchr(dec, 0, n)) {
		cn_s3_error(r, CN_S3_InvalidArgument, bad);
		return false;
	}
	char *p = dec;
	if (*p == '/')
		p++;
	char *slash = strchr(p, '/');
	if (!slash || slash == p || !slash[1]) {
		cn_s3_error(r, CN_S3_InvalidArgument, bad);
		return false;
	}
	*slash = 0;
	*bucket = p;
	*key = slash + 1;
	return true;
}

/* What a CopyObject request asks besides its source: the x-amz-*-directive headers, the
 * storage class, a new checksum algorithm. */
typedef struct copy_req {
	bool replace;            /* x-amz-metadata-directive: REPLACE */
	bool tag_replace;        /* x-amz-tagging-directive: REPLACE */
	const char *new_tags;    /* the tags the copy gets (NULL: none) */
	const char *sc;          /* x-amz-storage-class, or NULL */
	cn_cksum_algo newalgo;   /* x-amz-checksum-algorithm, or CN_CKSUM_NONE */
} copy_req;

/* Reads the copy's directives into cr. False after sending an error. */
static bool copy_directives(cn_s3_req *r, copy_req *cr)
{
	memset(cr, 0, sizeof *cr);
	const char *dir = cn_s3_header(r, "x-amz-metadata-directive");
	if (dir) {
		if (!strcmp(dir, "REPLACE")) {
			cr->replace = true;
		} else if (strcmp(dir, "COPY")) {
			cn_s3_error(r, CN_S3_InvalidArgument, "Unknown metadata directive.");
			return false;
		}
	}
	/* x-amz-tagging-directive: COPY (default) keeps the source's tags, REPLACE takes
	 * x-amz-tagging (none when absent). */
	const char *tdir = cn_s3_header(r, "x-amz-tagging-directive");
	cr->tag_replace = tdir && !strcmp(tdir, "REPLACE");
	if (tdir && !cr->tag_replace && strcmp(tdir, "COPY")) {
		cn_s3_error(r, CN_S3_InvalidArgument, "Unknown tagging directive.");
		return false;
	}
	if (cr->tag_replace && !cn_s3_tagging_from_request(r, &cr->new_tags))
		return false;
	if (!storage_class_header(r, &cr->sc))
		return false;
	if (cn_s3_header(r, "x-amz-server-side-encryption") ||
	    cn_s3_header(r, "x-amz-server-side-encryption-customer-algorithm") ||
	    cn_s3_header(r, "x-amz-copy-source-server-side-encryption-customer-algorithm")) {
		cn_s3_error(r, CN_S3_NotImplemented, "Server-side encryption is not implemented.");
		return false;
	}
	const char *calgo = cn_s3_header(r, "x-amz-checksum-algorithm");
	cr->newalgo = CN_CKSUM_NONE;
	if (calgo) {
		cr->newalgo = cn_cksum_from_name(cn_str_c(calgo));
		if (cr->newalgo == CN_CKSUM_NONE) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "Value for x-amz-checksum-algorithm header is invalid.");
			return false;
		}
	}
	return true;
}

bool cn_s3_open_copy_source(cn_s3_req *r, const char *bucket, const char *key, const char *vid,
                            cn_obj_info *info, cn_obj_reader **rd)
{
	cn_err e = cn_obj_open_version(r->store, bucket, key, vid, info, rd);
	if (e == CN_ERR_DELETE_MARKER) {
		cn_s3_error(r, CN_S3_InvalidRequest,
		            "The source of a copy request may not specifically refer to a delete marker by version id.");
		return false;
	}
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		return false;
	}
	if (cn_s3_eval_conditions(cn_s3_header(r, "x-amz-copy-source-if-match"),
	                          cn_s3_header(r, "x-amz-copy-source-if-unmodified-since"),
	                          cn_s3_header(r, "x-amz-copy-source-if-none-match"),
	                          cn_s3_header(r, "x-amz-copy-source-if-modified-since"), info, 412)) {
		cn_s3_error(r, CN_S3_PreconditionFailed, NULL);
		return false;
	}
	return true;
}

/* The opened source may be copied as asked: a copy onto itself changes something, it is
 * within the single-copy size. False after sending an error. */
static bool copy_allowed(cn_s3_req *r, const copy_req *cr, const char *sbucket, const char *skey,
                         const char *svid, const cn_obj_info *sinfo)
{
	/* Copying a given version onto its own key restores it (AWS allows that). */
	bool self = !strcmp(sbucket, r->bucket) && !strcmp(skey, r->key) && !svid;
	if (self && !cr->replace && !cr->tag_replace && !cr->sc &&
	    !cn_s3_header(r, "x-amz-website-redirect-location") && cr->newalgo == CN_CKSUM_NONE) {
		cn_s3_error(r, CN_S3_InvalidRequest,
		            "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.");
		return false;
	}
	if (sinfo->size > CN_S3_MAX_SINGLE_PUT) {
		cn_s3_error(r, CN_S3_InvalidRequest,
		            "The specified copy source is larger than the maximum allowable size for a copy source: 5368709120");
		return false;
	}
	return true;
}

/* The copy's stored headers into m: the request's (REPLACE, keeping the data's checksum) or
 * the source's (COPY, with a new storage class or redirect), then its tags; with a new
 * checksum algorithm the old checksums go and c's checksum starts. False after sending an
 * error. */
static bool copy_meta(cn_s3_req *r, copy_req *cr, const cn_obj_info *sinfo, meta_list *m, put_ctx *c)
{
	meta_init(r, m, sinfo->nmeta + r->h->nheaders + 4);
	if (cr->replace) {
		if (!collect_request_meta(r, m))
			return false;
		/* The data is unchanged: keep its checksum. */
		for (size_t i = 0; i < sinfo->nmeta; i++)
			if (cn_cksum_from_header(cn_str_c(sinfo->meta[i].name)) != CN_CKSUM_NONE)
				meta_set(m, sinfo->meta[i].name, sinfo->meta[i].value);
	} else {
		for (size_t i = 0; i < sinfo->nmeta; i++)
			if (strcmp(sinfo->meta[i].name, "x-amz-storage-class"))
				meta_set(m, sinfo->meta[i].name, sinfo->meta[i].value);
		if (cr->sc)
			meta_set(m, "x-amz-storage-class", (char *)cr->sc);
		const char *wr = cn_s3_header(r, "x-amz-website-redirect-location");
		if (wr)
			meta_set(m, "x-amz-website-redirect-location", (char *)wr);
	}
	meta_remove(m, CN_S3_TAGGING_META);
	meta_remove(m, CN_S3_UPLOAD_ID_META); /* the copy is no upload's completion */
	if (!cr->tag_replace)
		cr->new_tags = cn_obj_info_get(sinfo, CN_S3_TAGGING_META);
	if (cr->new_tags)
		meta_set(m, CN_S3_TAGGING_META, (char *)cr->new_tags);
	if (cr->newalgo != CN_CKSUM_NONE) {
		for (int a = CN_CKSUM_NONE + 1; a < CN_CKSUM__COUNT; a++)
			meta_remove(m, cn_cksum_header((cn_cksum_algo)a));
		if (cn_cksum_init(&c->ck, cr->newalgo) != CN_OK) {
			cn_s3_error(r, CN_S3_InternalError, NULL);
			return false;
		}
	}
	return true;
}

/* CopyObjectResult into b: LastModified, ETag and the copy's checksum (the new one, else
 * the stored one). */
static cn_err copy_result(const cn_obj_info *out, const meta_list *m, const put_ctx *c, cn_buf *b)
{
	char lm[25];
	cn_time_iso8601(out->mtime_ms, lm);
	const char *ckname = NULL, *ckval = NULL;
	for (int a = CN_CKSUM_NONE + 1; a < CN_CKSUM__COUNT && !ckval; a++) {
		ckval = cn_obj_info_get(out, cn_cksum_header((cn_cksum_algo)a));
		ckname = cn_cksum_name((cn_cksum_algo)a);
	}
	if (ckval == NULL)
		for (size_t i = 0; i < m->n && !ckval; i++) {
			cn_cksum_algo a = cn_cksum_from_header(cn_str_c(m->v[i].name));
			if (a != CN_CKSUM_NONE) {
				ckval = m->v[i].value;
				ckname = cn_cksum_name(a);
			}
		}
	if (c->ck.algo != CN_CKSUM_NONE) {
		ckval = c->value;
		ckname = cn_cksum_name(c->ck.algo);
	}
	char ckelem[32];
	cn_err e = cn_xml_decl(b);
	if (!e)
		e = cn_xml_open(b, "CopyObjectResult", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_elem(b, "LastModified", lm);
	if (!e)
		e = cn_xml_elemf(b, "ETag", "\"%s\"", out->etag);
	if (!e && ckval) {
		snprintf(ckelem, sizeof(ckelem), "Checksum%s", ckname);
		e = cn_xml_elem(b, ckelem, ckval);
	}
	if (!e)
		e = cn_xml_close(b, "CopyObjectResult");
	return e;
}

static void copy_object(cn_s3_req *r, const char *srchdr)
{
	char *sbucket, *skey;
	const char *svid;
	cn_obj_info sinfo, out;
	cn_obj_reader *rd = NULL;
	put_ctx c;
	meta_list m;
	copy_req cr;
	cn_buf b;
	cn_err e;

	memset(&c, 0, sizeof(c));
	cn_obj_info_init(&sinfo);
	cn_obj_info_init(&out);
	cn_buf_init(&b);
	if (!cn_s3_parse_copy_source(r, srchdr, &sbucket, &skey, &svid))
		goto done;
	e = cn_obj_key_check(r->key, strlen(r->key));
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		goto done;
	}
	if (!copy_directives(r, &cr))
		goto done;
	if (!cn_s3_open_copy_source(r, sbucket, skey, svid, &sinfo, &rd) ||
	    !copy_allowed(r, &cr, sbucket, skey, svid, &sinfo) || !copy_meta(r, &cr, &sinfo, &m, &c))
		goto done;

	c.rd.read = cn_s3_put_read;
	c.r = r;
	c.src = cn_obj_reader_stream(rd);
	c.limit = CN_S3_MAX_SINGLE_PUT;
	cn_put_opts opts = {
		.meta = m.v, .nmeta = m.n, .size = sinfo.size, .seal = cn_s3_put_seal, .seal_ctx = &c,
	};
	if (!put_answered(r, &c, &opts, &out))
		goto done;
	if (copy_result(&out, &m, &c, &b)) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
		goto done;
	}
	if (svid || sinfo.version_id[0])
		cn_s3_reply_header(r, "x-amz-copy-source-version-id",
		                   sinfo.version_id[0] ? sinfo.version_id : "null");
	cn_s3_reply_version_id(r, out.version_id);
	cn_s3_send_xml(r, 200, &b);
done:
	if (rd)
		cn_obj_reader_close(rd);
	cn_cksum_fini(&c.ck);
	cn_obj_info_fini(&sinfo);
	cn_obj_info_fini(&out);
	cn_buf_fini(&b);
}

/* ---- GetObject / HeadObject -------------------------------------------------------------- */

/* Non-negative decimal with saturation at INT64_MAX; advances *p. False if no digit. */
static bool parse_dec(const char **p, int64_t *out)
{
	const char *s = *p;
	int64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return false;
	while (isdigit((unsigned char)*s)) {
		int d = *s++ - '0';
		v = v > (INT64_MAX - d) / 10 ? INT64_MAX : v * 10 + d;
	}
	*p = s;
	*out = v;
	return true;
}

/* Range header: 0 = absent/invalid/multiple (serve the whole object), 1 = one satisfiable
 * range [*off, *off + *len), -1 = unsatisfiable (416). */
static int parse_range(const char *v, int64_t size, int64_t *off, int64_t *len)
{
	int64_t a, b;
	const char *p;

	if (!v || strncasecmp(v, "bytes=", 6) != 0 || strchr(v, ','))
		return 0;
	p = v + 6;
	while (*p == ' ')
		p++;
	if (*p == '-') {
		p++;
		if (!parse_dec(&p, &b))
			return 0;
		while (*p == ' ')
			p++;
		if (*p)
			return 0;
		if (b == 0 || size == 0)
			return -1;
		*len = b < size ? b : size;
		*off = size - *len;
		return 1;
	}
	if (!parse_dec(&p, &a) || *p != '-')
		return 0;
	p++;
	b = -1;
	if (*p && *p != ' ') {
		if (!parse_dec(&p, &b))
			return 0;
	}
	while (*p == ' ')
		p++;
	if (*p || (b >= 0 && b < a))
		return 0;
	if (a >= size)
		return -1;
	if (b < 0 || b >= size)
		b = size - 1;
	*off = a;
	*len = b - a + 1;
	return 1;
}

static bool checksum_mode_enabled(cn_s3_req *r)
{
	const char *m = cn_s3_header(r, "x-amz-checksum-mode");
	return m && !strcasecmp(m, "ENABLED");
}

/* The headers every GET/HEAD (and 304) carries. */
static void send_validators(cn_s3_req *r, const cn_obj_info *info)
{
	char lm[30];
	cn_time_http(info->mtime_ms, lm);
	cn_http_resp_header(r->x, "Last-Modified", lm);
	send_etag(r, info);
}

static void send_object_headers(cn_s3_req *r, const cn_obj_info *info, bool whole)
{
	bool ck = whole && checksum_mode_enabled(r);

	send_validators(r, info);
	for (size_t i = 0; i < NOVERRIDES; i++) {
		const char *v = cn_s3_query(r, response_overrides[i]);
		if (!v)
			v = cn_obj_info_get(info, stored_headers[i]);
		if (!v && i == 0)
			v = DEFAULT_CONTENT_TYPE;
		if (v)
			cn_http_resp_header(r->x, stored_headers[i], v);
	}
	const char *ck_value = NULL;
	for (size_t i = 0; i < info->nmeta; i++) {
		const char *n = info->meta[i].name, *v = info->meta[i].value;
		bool is_ck = ck && cn_cksum_from_header(cn_str_c(n)) != CN_CKSUM_NONE;
		if (is_ck)
			ck_value = v;
		if (!strncmp(n, META_PREFIX, META_PREFIX_LEN) ||
		    !strcmp(n, "x-amz-website-redirect-location") || is_ck)
			cn_http_resp_header(r->x, n, v);
	}
	if (ck_value) {
		/* AWS sends the checksum's type with it: the one chosen at CreateMultipartUpload,
		 * else COMPOSITE for a checksum of part checksums ("...-N"), else FULL_OBJECT */
		const char *t = cn_obj_info_get(info, "x-amz-checksum-type");
		const char *dash = strrchr(ck_value, '-');
		if (!t)
			t = dash && dash[1] >= '0' && dash[1] <= '9' ? "COMPOSITE" : "FULL_OBJECT";
		cn_http_resp_header(r->x, "x-amz-checksum-type", t);
	}
	const char *sc = cn_obj_info_get(info, "x-amz-storage-class");
	if (!sc)
		sc = info->storage_class;
	if (sc[0] && strcmp(sc, "STANDARD"))
		cn_http_resp_header(r->x, "x-amz-storage-class", sc);
	size_t ntags = cn_s3_tagging_count(cn_obj_info_get(info, CN_S3_TAGGING_META));
	if (ntags)
		cn_http_resp_headerf(r->x, "x-amz-tagging-count", "%zu", ntags);
	cn_http_resp_header(r->x, "Accept-Ranges", "bytes");
	if (info->version_id[0])
		cn_http_resp_header(r->x, "x-amz-version-id", info->version_id);
	else if (cn_obj_versioning_of(r->store, r->bucket) != CN_VERSIONING_OFF)
		cn_http_resp_header(r->x, "x-amz-version-id", "null"); /* AWS: the null version */
}

/* 416 InvalidRange with Content-Range: bytes * /size, which cn_s3_error cannot add; the
 * body is the S3 error document AWS sends for it. */
static void send_invalid_range(cn_s3_req *r, const char *range, int64_t size)
{
	cn_buf b;
	cn_err e;

	cn_buf_init(&b);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "Error", NULL);
	if (!e)
		e = cn_xml_elem(&b, "Code", "InvalidRange");
	if (!e)
		e = cn_xml_elem(&b, "Message", "The requested range is not satisfiable");
	if (!e)
		e = cn_xml_elem(&b, "RangeRequested", range);
	if (!e)
		e = cn_xml_elemf(&b, "ActualObjectSize", "%lld", (long long)size);
	if (!e)
		e = cn_xml_elem(&b, "RequestId", r->reqid ? r->reqid : "");
	if (!e)
		e = cn_xml_close(&b, "Error");
	if (e) {
		cn_s3_error(r, CN_S3_InvalidRange, NULL);
	} else {
		cn_log(CN_LOG_INFO, r->reqid, "get %s/%s: InvalidRange %s (size %lld)", r->bucket,
		       r->key, range, (long long)size);
		cn_s3_resp_start(r, 416);
		cn_http_resp_headerf(r->x, "Content-Range", "bytes */%lld", (long long)size);
		cn_http_resp_header(r->x, "Content-Type", "application/xml");
		cn_http_resp_send(r->x, b.p, b.len);
	}
	cn_buf_fini(&b);
}

void cn_s3_get_object(cn_s3_req *r)
{
	cn_obj_info info;
	cn_obj_reader *rd = NULL;
	cn_err e;
	int64_t off = 0, len = 0;
	int partno = 0;

	cn_obj_info_init(&info);
	const char *vid = cn_s3_query(r, "versionId"); /* well-formed: the router checked */
	const char *pn = cn_s3_query(r, "partNumber");
	if (pn) {
		const char *p = pn;
		int64_t v;
		if (!parse_dec(&p, &v) || *p || v < 1 || v > 10000) {
			cn_s3_error(r, CN_S3_InvalidArgument,
			            "Part number must be an integer between 1 and 10000, inclusive");
			goto done;
		}
		partno = (int)v;
	}
	bool anonymous = r->auth.kind == CN_AUTH_KIND_NONE;
	for (size_t i = 0; i < NOVERRIDES; i++) {
		const char *v = cn_s3_query(r, response_overrides[i]);
		if (v && anonymous) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "Request specific response headers cannot be used for anonymous GET requests.");
			goto done;
		}
		if (v && !cn_http_field_value_ok(v, strlen(v))) {
			char msg[128];
			snprintf(msg, sizeof msg, "Invalid %s: a control character is not allowed.",
			         response_overrides[i]);
			cn_s3_error(r, CN_S3_InvalidArgument, msg);
			goto done;
		}
	}
	const char *range = cn_s3_header(r, "range");
	if (partno && range) {
		cn_s3_error(r, CN_S3_InvalidRequest,
		            "Cannot specify both Range header and partNumber query parameter");
		goto done;
	}

	/* On the loop thread (net.h) nothing may wait for a drive: served from the record
	 * cache or from records the kernel has cached (drive.h no-wait mode), or run again on
	 * a worker — so one hung drive cannot stop the loop (HEALTH-6, HEALTH-7). */
	bool on_loop = cn_http_inline(r->x);
	if (on_loop)
		cn_obj_no_io(true);
	if (r->head)
		e = cn_obj_stat_version(r->store, r->bucket, r->key, vid, &info);
	else
		e = cn_obj_open_version(r->store, r->bucket, r->key, vid, &info, &rd);
	if (on_loop) {
		cn_obj_no_io(false);
		if (e == CN_ERR_BUSY || (!e && rd && !cn_obj_reader_in_records(rd))) {
			cn_http_defer(r->x); /* the bytes are in shard files, or a record was not cached */
			goto done;
		}
	}
	if ((e == CN_ERR_NO_KEY && info.delete_marker) || e == CN_ERR_DELETE_MARKER)
		cn_s3_reply_delete_marker(r, &info, e == CN_ERR_DELETE_MARKER);
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		goto done;
	}

	int st = cn_s3_eval_conditions(cn_s3_header(r, "if-match"),
	                               cn_s3_header(r, "if-unmodified-since"),
	                               cn_s3_header(r, "if-none-match"),
	                               cn_s3_header(r, "if-modified-since"), &info, 304);
	if (st == 412) {
		cn_s3_error(r, CN_S3_PreconditionFailed, NULL);
		goto done;
	}
	if (st == 304) {
		cn_s3_resp_start(r, 304);
		send_validators(r, &info);
		cn_http_resp_send_head(r->x, 0);
		goto done;
	}

	/* partNumber=N: the Nth part of a multipart object, as a 206 range (AWS); a single-PUT
	 * object has one part, served whole. */
	int rs = 0;
	if (partno) {
		if ((size_t)partno > (info.nparts ? info.nparts : 1)) {
			cn_s3_error(r, CN_S3_InvalidPartNumber, NULL);
			goto done;
		}
		for (int i = 0; i + 1 < partno; i++)
			off += info.parts[i].size;
		if (info.nparts && info.parts[partno - 1].size > 0) {
			len = info.parts[partno - 1].size;
			rs = 1;
		}
	} else {
		rs = parse_range(range, info.size, &off, &len);
	}
	if (rs < 0) {
		send_invalid_range(r, range, info.size);
		goto done;
	}
	if (rs == 0 && !(partno && info.nparts)) {
		off = 0;
		len = info.size;
	}
	cn_s3_resp_start(r, rs ? 206 : 200);
	send_object_headers(r, &info, rs == 0 && !(partno && info.nparts));
	if (partno && info.nparts)
		cn_http_resp_headerf(r->x, "x-amz-mp-parts-count", "%zu", info.nparts);
	if (rs)
		cn_http_resp_headerf(r->x, "Content-Range", "bytes %lld-%lld/%lld", (long long)off,
		                     (long long)(off + len - 1), (long long)info.size);
	e = cn_http_resp_send_head(r->x, len);
	if (e != CN_OK) {
		if (!cn_http_deferred(r->x)) /* a deferral is not a failure: a worker sends it */
			cn_log(CN_LOG_INFO, r->reqid, "get %s/%s: sending head: %s", r->bucket, r->key,
			       cn_err_str(e));
		goto done;
	}
	if (!r->head && len > 0) {
		e = cn_obj_read(rd, off, len, cn_http_resp_writer(r->x));
		if (e != CN_OK)
			cn_s3_error_from(r, e);
	}
done:
	if (rd)
		cn_obj_reader_close(rd);
	cn_obj_info_fini(&info);
}

/* ---- DeleteObject ---------------------------------------------------------------------- */

void cn_s3_delete_object(cn_s3_req *r)
{
	const char *vid = cn_s3_query(r, "versionId"); /* well-formed: the router checked */
	cn_obj_deleted d;
	cn_err e;

	/* Without a version id the bucket's state decides (a delete marker when versioned);
	 * with one, exactly that version goes. An unknown key or version is a 204 (AWS). */
	e = cn_obj_delete_version(r->store, r->bucket, r->key, vid, &d);
	if (e != CN_OK && e != CN_ERR_NO_KEY && e != CN_ERR_NO_VERSION) {
		cn_s3_error_from(r, e);
		return;
	}
	if (e == CN_OK && d.delete_marker)
		cn_s3_reply_header(r, "x-amz-delete-marker", "true");
	cn_s3_reply_version_id(r, e == CN_OK ? d.version_id : vid);
	cn_s3_send_empty(r, 204);
}
