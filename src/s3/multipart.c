/* s3/multipart.c: the S3 multipart upload API — CreateMultipartUpload, UploadPart,
 * UploadPartCopy, CompleteMultipartUpload, AbortMultipartUpload, ListParts and
 * ListMultipartUploads — over cn_obj_upload_* (src/object/object.h), following AWS S3.
 *
 * Writes reuse the PutObject machinery of src/s3/object.c (s3_int.h): the same stored
 * headers, the same Content-MD5 / x-amz-checksum-* verification (header or aws-chunked
 * trailer) through the seal callback, so a part becomes visible only after its digests
 * matched. Checksums (AWS "additional checksums"):
 *  S3MPU-1. An upload created with x-amz-checksum-algorithm A keeps A and its type (COMPOSITE, or
 *     FULL_OBJECT; CRC64NVME is FULL_OBJECT only, SHA1/SHA256 COMPOSITE only) in its
 *     create-time metadata ("x-amz-checksum-algorithm", "x-amz-checksum-type").
 *  S3MPU-2. Every part of such an upload stores its A checksum: verified when the client sent
 *     one, computed otherwise; a part sent with another algorithm is refused.
 *  S3MPU-3. At completion each checksum named in the XML must equal the stored one (else
 *     InvalidPart); the object's checksum is COMPOSITE base64(A(raw part checksums))+"-N",
 *     or FULL_OBJECT the CRC of the whole object, combined from the part CRCs and sizes
 *     (crc_combine: GF(2) polynomial arithmetic, as zlib's crc32_combine).
 * The CompleteMultipartUpload body is parsed while it streams (expat, bounded: at most
 * CN_OBJ_MAX_PARTS parts, short element texts, no DOCTYPE), so memory stays bounded by the
 * part list itself. Every handler sends exactly one response (s3_int.h). */
#include "s3/checksum.h"
#include "s3/s3_int.h"

#include <expat.h>
#include <limits.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LIST_MAX 1000                 /* max-parts / max-uploads cap (AWS) */
#define COMPLETE_BODY_MAX (16 * 1024 * 1024)
#define COMPLETE_TEXT_MAX 256         /* one PartNumber / ETag / Checksum* text */
#define COMPLETE_MAX_DEPTH 16
#define MAX_COPY_SOURCE (5LL * 1024 * 1024 * 1024)

static const char part_number_msg[] =
	"Part number must be an integer between 1 and 10000, inclusive";

/* ---- small helpers ------------------------------------------------------------------ */

static const char *kv_get(const cn_kv *kv, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kv[i].name, name))
			return kv[i].value;
	return NULL;
}

/* The uploadId query parameter; false after sending NoSuchUpload when it cannot be one. */
static bool upload_id_arg(cn_s3_req *r, const char **out)
{
	const char *id = cn_s3_query(r, "uploadId");
	if (!id || !id[0] || strlen(id) >= CN_OBJ_UPLOAD_ID_MAX) {
		cn_s3_error(r, CN_S3_NoSuchUpload, NULL);
		return false;
	}
	*out = id;
	return true;
}

static bool key_ok(cn_s3_req *r)
{
	cn_err e = cn_obj_key_check(r->key, strlen(r->key));
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		return false;
	}
	return true;
}

static bool refuse_sse(cn_s3_req *r)
{
	if (cn_s3_header(r, "x-amz-server-side-encryption") ||
	    cn_s3_header(r, "x-amz-server-side-encryption-customer-algorithm") ||
	    cn_s3_header(r, "x-amz-copy-source-server-side-encryption-customer-algorithm")) {
		cn_s3_error(r, CN_S3_NotImplemented, "Server-side encryption is not implemented.");
		return true;
	}
	return false;
}

/* The upload's checksum algorithm and type (S3MPU-1). */
static cn_cksum_algo upload_algo(const cn_upload_info *u, bool *full_object)
{
	const char *a = kv_get(u->meta, u->nmeta, "x-amz-checksum-algorithm");
	const char *t = kv_get(u->meta, u->nmeta, "x-amz-checksum-type");
	*full_object = t && !strcmp(t, "FULL_OBJECT");
	return a ? cn_cksum_from_name(cn_str_c(a)) : CN_CKSUM_NONE;
}

/* Lowercase algorithm name for messages ("crc32"). */
static const char *algo_lower(cn_s3_req *r, cn_cksum_algo a)
{
	const char *n = cn_cksum_name(a);
	char *l = cn_s3_strndup(r, n, strlen(n));
	for (char *p = l; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return l;
}

static const char *msgf(cn_s3_req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *msgf(cn_s3_req *r, const char *fmt, ...)
{
	char tmp[320];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof tmp)
		n = sizeof tmp - 1;
	return cn_s3_strndup(r, tmp, (size_t)n);
}

static cn_err elem_owner(cn_buf *b, const char *tag, const char *owner)
{
	cn_err e = cn_xml_open(b, tag, NULL);
	if (!e)
		e = cn_xml_elem(b, "ID", owner);
	if (!e)
		e = cn_xml_elem(b, "DisplayName", "cairn");
	if (!e)
		e = cn_xml_close(b, tag);
	return e;
}

/* The first x-amz-checksum-<algo> entry of meta, as (algo, value); NONE when none. */
static cn_cksum_algo meta_checksum(const cn_kv *meta, size_t n, const char **value)
{
	for (size_t i = 0; i < n; i++) {
		cn_cksum_algo a = cn_cksum_from_header(cn_str_c(meta[i].name));
		if (a != CN_CKSUM_NONE) {
			*value = meta[i].value;
			return a;
		}
	}
	return CN_CKSUM_NONE;
}

static cn_err elem_checksum(cn_buf *b, cn_cksum_algo a, const char *value)
{
	char tag[32];
	snprintf(tag, sizeof tag, "Checksum%s", cn_cksum_name(a));
	return cn_xml_elem(b, tag, value);
}

/* ---- CRC combination (FULL_OBJECT checksums) ------------------------------------------ */

/* Reflected CRCs whose init and xorout are all ones (CRC32, CRC32C, CRC-64/NVME) satisfy
 * crc(A||B) = (crc(A) * x^(8*len(B)) mod P) ^ crc(B); the product is computed in the
 * reflected bit order (zlib 1.2.12 crc32.c multmodp / x2nmodp). */
typedef struct crc_poly {
	uint64_t poly;   /* reflected */
	int width;       /* 32 or 64 */
	uint64_t x2n[64];/* x^(2^k) mod P */
} crc_poly;

static uint64_t crc_multmodp(const crc_poly *c, uint64_t a, uint64_t b)
{
	uint64_t m = (uint64_t)1 << (c->width - 1), p = 0;
	if (a == 0)
		return 0;
	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ c->poly : b >> 1;
	}
	return p;
}

static bool crc_poly_init(crc_poly *c, cn_cksum_algo a)
{
	switch (a) {
	case CN_CKSUM_CRC32: c->poly = 0xEDB88320u; c->width = 32; break;
	case CN_CKSUM_CRC32C: c->poly = 0x82F63B78u; c->width = 32; break;
	case CN_CKSUM_CRC64NVME: c->poly = 0x9A6C9329AC4BC9B5ull; c->width = 64; break;
	default: return false;
	}
	uint64_t p = (uint64_t)1 << (c->width - 2); /* x^1 */
	for (int k = 0; k < 64; k++) {
		c->x2n[k] = p;
		p = crc_multmodp(c, p, p);
	}
	return true;
}

static uint64_t crc_combine(const crc_poly *c, uint64_t crc1, uint64_t crc2, uint64_t len2)
{
	uint64_t p = (uint64_t)1 << (c->width - 1); /* x^0 */
	for (int k = 3; len2 && k < 64; k++, len2 >>= 1)
		if (len2 & 1)
			p = crc_multmodp(c, c->x2n[k], p);
	return crc_multmodp(c, p, crc1) ^ crc2;
}

static uint64_t be_load(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static void be_store(uint64_t v, unsigned char *p, size_t n)
{
	for (size_t i = n; i-- > 0; v >>= 8)
		p[i] = (unsigned char)v;
}

/* ---- CreateMultipartUpload -------------------------------------------------------------- */

void cn_s3_create_multipart(cn_s3_req *r)
{
	char upload_id[CN_OBJ_UPLOAD_ID_MAX];
	cn_kv *meta;
	size_t n;
	cn_buf b;
	cn_err e;

	if (!key_ok(r) || refuse_sse(r) || !cn_s3_collect_meta(r, 3, &meta, &n))
		return;
	cn_cksum_algo algo = CN_CKSUM_NONE;
	const char *as = cn_s3_header(r, "x-amz-checksum-algorithm");
	if (as) {
		algo = cn_cksum_from_name(cn_str_c(as));
		if (algo == CN_CKSUM_NONE) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]");
			return;
		}
	}
	const char *ts = cn_s3_header(r, "x-amz-checksum-type");
	const char *type = NULL;
	if (ts) {
		if (!strcasecmp(ts, "COMPOSITE")) {
			type = "COMPOSITE";
		} else if (!strcasecmp(ts, "FULL_OBJECT")) {
			type = "FULL_OBJECT";
		} else {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "Value for x-amz-checksum-type header is invalid.");
			return;
		}
		if (algo == CN_CKSUM_NONE) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.");
			return;
		}
	}
	if (algo != CN_CKSUM_NONE) {
		bool crc = algo == CN_CKSUM_CRC32 || algo == CN_CKSUM_CRC32C ||
		           algo == CN_CKSUM_CRC64NVME;
		if (!type)
			type = algo == CN_CKSUM_CRC64NVME ? "FULL_OBJECT" : "COMPOSITE";
		if ((!strcmp(type, "FULL_OBJECT") && !crc) ||
		    (!strcmp(type, "COMPOSITE") && algo == CN_CKSUM_CRC64NVME)) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            msgf(r, "The %s checksum type cannot be used with the %s checksum algorithm.",
			                 type, algo_lower(r, algo)));
			return;
		}
		meta[n].name = "x-amz-checksum-algorithm";
		meta[n++].value = (char *)cn_cksum_name(algo);
		meta[n].name = "x-amz-checksum-type";
		meta[n++].value = (char *)type;
	}
	/* Validated and normalised now (src/s3/tagging.c); the object gets it at completion. */
	const char *tags;
	if (!cn_s3_tagging_from_request(r, &tags))
		return;
	if (tags && !kv_get(meta, n, CN_S3_TAGGING_META)) {
		meta[n].name = CN_S3_TAGGING_META;
		meta[n++].value = (char *)tags;
	}

	e = cn_obj_upload_create(r->store, r->bucket, r->key, meta, n, upload_id);
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		return;
	}
	cn_buf_init(&b);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "InitiateMultipartUploadResult", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_elem(&b, "Bucket", r->bucket);
	if (!e)
		e = cn_xml_elem(&b, "Key", r->key);
	if (!e)
		e = cn_xml_elem(&b, "UploadId", upload_id);
	if (!e)
		e = cn_xml_close(&b, "InitiateMultipartUploadResult");
	if (e) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
	} else {
		cn_s3_resp_start(r, 200);
		if (algo != CN_CKSUM_NONE) {
			cn_http_resp_header(r->x, "x-amz-checksum-algorithm", cn_cksum_name(algo));
			cn_http_resp_header(r->x, "x-amz-checksum-type", type);
		}
		cn_http_resp_header(r->x, "Content-Type", "application/xml");
		cn_http_resp_send(r->x, b.p, b.len);
	}
	cn_buf_fini(&b);
}

/* ---- UploadPart / UploadPartCopy ------------------------------------------------------- */

/* Stats the upload for its checksum algorithm; false after sending an error. */
static bool upload_checksum(cn_s3_req *r, const char *upload_id, cn_cksum_algo *algo)
{
	cn_upload_info u;
	bool full;

	memset(&u, 0, sizeof u);
	cn_err e = cn_obj_upload_stat(r->store, r->bucket, r->key, upload_id, &u);
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		return false;
	}
	*algo = upload_algo(&u, &full);
	cn_upload_info_fini(&u);
	return true;
}

/* x-amz-copy-source-range "bytes=first-last" within size. true when it is; else the error
 * is sent: InvalidArgument for a malformed value, InvalidRange for one outside the source. */
static bool copy_range(cn_s3_req *r, const char *v, int64_t size, int64_t *off, int64_t *len)
{
	uint64_t a, b;
	const char *dash;

	if (strncmp(v, "bytes=", 6) != 0 || !(dash = strchr(v + 6, '-'))) {
		goto bad;
	}
	char *first = cn_s3_strndup(r, v + 6, (size_t)(dash - (v + 6)));
	if (!cn_s3_parse_uint(first, INT64_MAX, &a) || !cn_s3_parse_uint(dash + 1, INT64_MAX, &b) || b < a)
		goto bad;
	/* Well-formed but outside the source: AWS's 416 InvalidRange (MinIO: InvalidArgument). */
	if ((int64_t)b >= size) {
		r->error_elem = "RangeRequested";
		r->error_elem_value = v;
		cn_s3_error(r, CN_S3_InvalidRange, NULL);
		return false;
	}
	*off = (int64_t)a;
	*len = (int64_t)(b - a + 1);
	return true;
bad:
	cn_s3_error(r, CN_S3_InvalidArgument,
	            "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy");
	return false;
}

static void upload_part_copy(cn_s3_req *r, const char *srchdr, const char *upload_id,
                             uint32_t number)
{
	char *sbucket, *skey;
	const char *svid;
	cn_obj_info sinfo, out;
	cn_obj_reader *rd = NULL;
	cn_s3_put_ctx c;
	cn_cksum_algo algo;
	cn_buf b;
	cn_err e;

	memset(&c, 0, sizeof c);
	cn_obj_info_init(&sinfo);
	cn_obj_info_init(&out);
	cn_buf_init(&b);
	if (!cn_s3_parse_copy_source(r, srchdr, &sbucket, &skey, &svid) ||
	    !upload_checksum(r, upload_id, &algo))
		goto done;
	if (!cn_s3_open_copy_source(r, sbucket, skey, svid, &sinfo, &rd))
		goto done;
	int64_t off = 0, len = sinfo.size;
	const char *range = cn_s3_header(r, "x-amz-copy-source-range");
	if (range && !copy_range(r, range, sinfo.size, &off, &len))
		goto done;
	if (len > MAX_COPY_SOURCE) {
		cn_s3_error(r, CN_S3_InvalidRequest,
		            "The specified copy source is larger than the maximum allowable size for a copy source: 5368709120");
		goto done;
	}
	cn_reader *src;
	if (range) {
		e = cn_obj_reader_stream_range(rd, off, len, &src);
		if (e != CN_OK) {
			cn_s3_error_from(r, e);
			goto done;
		}
	} else {
		src = cn_obj_reader_stream(rd);
	}
	if (algo != CN_CKSUM_NONE && cn_cksum_init(&c.ck, algo) != CN_OK) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
		goto done;
	}
	c.rd.read = cn_s3_put_read;
	c.r = r;
	c.src = src;
	c.limit = MAX_COPY_SOURCE;
	cn_put_opts opts = { .size = len, .seal = cn_s3_put_seal, .seal_ctx = &c };
	e = cn_obj_upload_part(r->store, r->bucket, r->key, upload_id, number, &c.rd, &opts, &out);
	if (e != CN_OK) {
		if (c.fail != CN_S3_OK)
			cn_s3_error(r, c.fail, c.fail_msg);
		else
			cn_s3_error_from(r, e);
		goto done;
	}
	char lm[25];
	cn_time_iso8601(out.mtime_ms ? out.mtime_ms : cn_now_ms(), lm);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "CopyPartResult", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_elem(&b, "LastModified", lm);
	if (!e)
		e = cn_xml_elemf(&b, "ETag", "\"%s\"", out.etag);
	if (!e && c.ck.algo != CN_CKSUM_NONE)
		e = elem_checksum(&b, c.ck.algo, c.value);
	if (!e)
		e = cn_xml_close(&b, "CopyPartResult");
	if (e) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
		goto done;
	}
	if (svid || sinfo.version_id[0])
		cn_s3_reply_header(r, "x-amz-copy-source-version-id",
		                   sinfo.version_id[0] ? sinfo.version_id : "null");
	cn_s3_send_xml(r, 200, &b);
done:
	if (rd)
		cn_obj_reader_close(rd);
	cn_cksum_fini(&c.ck);
	cn_obj_info_fini(&sinfo);
	cn_obj_info_fini(&out);
	cn_buf_fini(&b);
}

void cn_s3_upload_part(cn_s3_req *r)
{
	const char *upload_id;
	uint64_t number;
	cn_s3_put_ctx c;
	cn_obj_info out;
	cn_cksum_algo algo;
	cn_err e;

	if (!cn_s3_parse_uint(cn_s3_query(r, "partNumber"), CN_OBJ_MAX_PARTS, &number) || number < 1) {
		cn_s3_error(r, CN_S3_InvalidArgument, part_number_msg);
		return;
	}
	if (!upload_id_arg(r, &upload_id) || !key_ok(r) || refuse_sse(r))
		return;
	const char *src = cn_s3_header(r, "x-amz-copy-source");
	if (src) {
		upload_part_copy(r, src, upload_id, (uint32_t)number);
		return;
	}
	if (r->h->content_length < 0 && !r->h->chunked) {
		cn_s3_error(r, CN_S3_MissingContentLength, NULL);
		return;
	}
	if (r->body_len > CN_OBJ_MAX_PART_SIZE) {
		cn_s3_error(r, CN_S3_EntityTooLarge, NULL);
		return;
	}
	memset(&c, 0, sizeof c);
	cn_obj_info_init(&out);
	if (!upload_checksum(r, upload_id, &algo) || !cn_s3_parse_content_md5(r, &c) ||
	    !cn_s3_setup_checksum(r, &c))
		goto done;
	if (algo != CN_CKSUM_NONE) {
		/* S3MPU-2. */
		if (c.ck.algo == CN_CKSUM_NONE) {
			if (cn_cksum_init(&c.ck, algo) != CN_OK) {
				cn_s3_error(r, CN_S3_InternalError, NULL);
				goto done;
			}
		} else if (c.ck.algo != algo) {
			cn_s3_error(r, CN_S3_InvalidRequest,
			            msgf(r, "Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum Type: %s",
			                 algo_lower(r, algo), algo_lower(r, c.ck.algo)));
			goto done;
		}
	}
	c.rd.read = cn_s3_put_read;
	c.r = r;
	c.src = r->body;
	c.limit = CN_OBJ_MAX_PART_SIZE;
	cn_put_opts opts = { .size = r->body_len, .seal = cn_s3_put_seal, .seal_ctx = &c };
	e = cn_obj_upload_part(r->store, r->bucket, r->key, upload_id, (uint32_t)number, &c.rd,
	                       &opts, &out);
	if (e != CN_OK) {
		if (c.fail != CN_S3_OK)
			cn_s3_error(r, c.fail, c.fail_msg);
		else
			cn_s3_error_from(r, e);
		goto done;
	}
	cn_s3_resp_start(r, 200);
	cn_http_resp_headerf(r->x, "ETag", "\"%s\"", out.etag);
	if (c.ck.algo != CN_CKSUM_NONE)
		cn_http_resp_header(r->x, cn_cksum_header(c.ck.algo), c.value);
	cn_http_resp_send_head(r->x, 0);
done:
	cn_cksum_fini(&c.ck);
	cn_obj_info_fini(&out);
}

/* ---- CompleteMultipartUpload: the streamed XML list ----------------------------------- */

enum { F_NONE, F_NUMBER, F_ETAG, F_CHECKSUM };

typedef struct given_checksum {
	cn_cksum_algo algo;   /* NONE when the XML named none for the part */
	char value[CN_CKSUM_MAX_B64];
} given_checksum;

typedef struct complete_doc {
	XML_Parser p;
	int depth;
	bool seen_root;
	bool in_part, has_number, has_etag;
	int field;
	cn_cksum_algo field_algo;
	char text[COMPLETE_TEXT_MAX + 1];
	size_t tlen;
	cn_obj_part *parts;   /* malloc'd, n of cap */
	given_checksum *given;
	size_t n, cap;
	cn_s3_code err;
	const char *msg;
} complete_doc;

static void doc_fail(complete_doc *d, cn_s3_code code, const char *msg)
{
	if (!d->err) {
		d->err = code;
		d->msg = msg;
	}
	XML_StopParser(d->p, XML_FALSE);
}

static const char *xml_local(const char *name)
{
	const char *colon = strrchr(name, ':');
	return colon ? colon + 1 : name;
}

/* The text without surrounding XML whitespace, NUL-terminated in place. */
static char *doc_trimmed(complete_doc *d)
{
	char *s = d->text;
	size_t n = d->tlen;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	s[n] = 0;
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return s;
}

static void XMLCALL doc_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
	complete_doc *d = ud;
	const char *ln = xml_local(name);

	if (d->err)
		return;
	d->depth++;
	if (d->depth > COMPLETE_MAX_DEPTH) {
		doc_fail(d, CN_S3_MalformedXML, NULL);
		return;
	}
	if (d->depth == 1) {
		if (strcmp(ln, "CompleteMultipartUpload"))
			doc_fail(d, CN_S3_MalformedXML, NULL);
		d->seen_root = true;
		return;
	}
	if (d->depth == 2 && !strcmp(ln, "Part")) {
		if (d->n >= CN_OBJ_MAX_PARTS) {
			doc_fail(d, CN_S3_MalformedXML,
			         "A CompleteMultipartUpload request lists at most 10000 parts.");
			return;
		}
		if (d->n == d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 64;
			if (cap > CN_OBJ_MAX_PARTS)
				cap = CN_OBJ_MAX_PARTS;
			cn_obj_part *p = realloc(d->parts, cap * sizeof *p);
			if (p)
				d->parts = p;
			given_checksum *g = p ? realloc(d->given, cap * sizeof *g) : NULL;
			if (!g) {
				doc_fail(d, CN_S3_InternalError, NULL);
				return;
			}
			d->given = g;
			d->cap = cap;
		}
		memset(&d->parts[d->n], 0, sizeof d->parts[d->n]);
		memset(&d->given[d->n], 0, sizeof d->given[d->n]);
		d->in_part = true;
		d->has_number = d->has_etag = false;
		return;
	}
	if (d->depth == 3 && d->in_part) {
		d->tlen = 0;
		d->field = F_NONE;
		if (!strcmp(ln, "PartNumber")) {
			d->field = F_NUMBER;
		} else if (!strcmp(ln, "ETag")) {
			d->field = F_ETAG;
		} else if (!strncmp(ln, "Checksum", 8)) {
			d->field_algo = cn_cksum_from_name(cn_str_c(ln + 8));
			if (d->field_algo != CN_CKSUM_NONE)
				d->field = F_CHECKSUM;
		}
	}
}

static void XMLCALL doc_text(void *ud, const XML_Char *s, int len)
{
	complete_doc *d = ud;
	if (d->err || d->depth != 3 || !d->in_part || d->field == F_NONE || len <= 0)
		return;
	if ((size_t)len > COMPLETE_TEXT_MAX - d->tlen) {
		doc_fail(d, CN_S3_MalformedXML, NULL);
		return;
	}
	memcpy(d->text + d->tlen, s, (size_t)len);
	d->tlen += (size_t)len;
}

static void doc_field_end(complete_doc *d)
{
	cn_obj_part *p = &d->parts[d->n];
	char *t = doc_trimmed(d);
	uint64_t v;

	switch (d->field) {
	case F_NUMBER:
		if (!cn_s3_parse_uint(t, UINT32_MAX, &v)) {
			doc_fail(d, CN_S3_MalformedXML, NULL);
			return;
		}
		if (v < 1 || v > CN_OBJ_MAX_PARTS) {
			doc_fail(d, CN_S3_InvalidArgument, part_number_msg);
			return;
		}
		p->number = (uint32_t)v;
		d->has_number = true;
		break;
	case F_ETAG: {
		size_t n = strlen(t);
		if (n >= 2 && t[0] == '"' && t[n - 1] == '"') {
			t++;
			n -= 2;
		}
		if (n == 0 || n >= sizeof p->etag) {
			doc_fail(d, CN_S3_InvalidPart, NULL);
			return;
		}
		memcpy(p->etag, t, n);
		p->etag[n] = 0;
		d->has_etag = true;
		break;
	}
	case F_CHECKSUM:
		if (strlen(t) >= sizeof d->given[d->n].value) {
			doc_fail(d, CN_S3_InvalidPart, NULL);
			return;
		}
		d->given[d->n].algo = d->field_algo;
		strcpy(d->given[d->n].value, t);
		break;
	}
}

static void XMLCALL doc_end(void *ud, const XML_Char *name)
{
	complete_doc *d = ud;
	if (d->err)
		return;
	if (d->depth == 3 && d->in_part && d->field != F_NONE) {
		doc_field_end(d);
		d->field = F_NONE;
	} else if (d->depth == 2 && d->in_part) {
		if (!d->has_number || !d->has_etag) {
			doc_fail(d, CN_S3_MalformedXML, NULL);
			return;
		}
		d->in_part = false;
		d->n++;
	}
	d->depth--;
}

static void XMLCALL doc_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                                const XML_Char *pubid, int has_internal_subset)
{
	doc_fail(ud, CN_S3_MalformedXML, NULL);
}

static void XMLCALL doc_entity(void *ud, const XML_Char *name, int is_param,
                               const XML_Char *value, int value_len, const XML_Char *base,
                               const XML_Char *sysid, const XML_Char *pubid,
                               const XML_Char *notation)
{
	doc_fail(ud, CN_S3_MalformedXML, NULL);
}

/* The one parser of the document, fed by read_complete_doc as the body streams and by
 * cn_s3_complete_parse with a body in memory. doc_begin starts it on a zeroed d (false when
 * out of memory); doc_feed parses the next bytes (final with the last, possibly empty,
 * chunk), a no-op once d->err is set; doc_finish frees the parser and, when no error came
 * first, checks the document was whole (root seen and closed, at least one part). */
static bool doc_begin(complete_doc *d)
{
	d->p = XML_ParserCreate(NULL);
	if (!d->p)
		return false;
	XML_SetUserData(d->p, d);
	XML_SetElementHandler(d->p, doc_start, doc_end);
	XML_SetCharacterDataHandler(d->p, doc_text);
	XML_SetStartDoctypeDeclHandler(d->p, doc_doctype);
	XML_SetEntityDeclHandler(d->p, doc_entity);
	XML_SetParamEntityParsing(d->p, XML_PARAM_ENTITY_PARSING_NEVER);
	return true;
}

static void doc_feed(complete_doc *d, const char *buf, size_t n, bool final)
{
	CN_ASSERT(n <= COMPLETE_BODY_MAX);
	if (!d->err && XML_Parse(d->p, buf, (int)n, final) != XML_STATUS_OK && !d->err)
		d->err = CN_S3_MalformedXML;
}

static void doc_finish(complete_doc *d)
{
	if (!d->err && (!d->seen_root || d->depth != 0 || d->n == 0))
		d->err = CN_S3_MalformedXML;
	XML_ParserFree(d->p);
	d->p = NULL;
}

cn_err cn_s3_complete_parse(const char *p, size_t len, cn_obj_part **parts, size_t *nparts,
                            cn_s3_code *code, const char **msg)
{
	complete_doc d;

	*parts = NULL;
	*nparts = 0;
	*code = CN_S3_OK;
	*msg = NULL;
	memset(&d, 0, sizeof d);
	if (len > COMPLETE_BODY_MAX) {
		*code = CN_S3_MalformedXML;
		return CN_ERR_INVALID;
	}
	if (!doc_begin(&d))
		return CN_ERR_NOMEM;
	doc_feed(&d, p, len, true);
	doc_finish(&d);
	free(d.given);
	if (d.err) {
		free(d.parts);
		*code = d.err;
		*msg = d.msg;
		return d.err == CN_S3_InternalError ? CN_ERR_NOMEM : CN_ERR_INVALID;
	}
	*parts = d.parts;
	*nparts = d.n;
	return CN_OK;
}

/* Reads and parses the request body into d (Content-MD5 checked when sent). False after
 * sending an error. */
static bool read_complete_doc(cn_s3_req *r, complete_doc *d)
{
	char buf[16384];
	size_t total = 0;
	cn_md5 md5;
	const char *cmd5 = cn_s3_header(r, "content-md5");
	unsigned char want[16];
	bool ok = false;

	if (cmd5) {
		size_t wl = 0;
		if (strlen(cmd5) != 24 || cn_base64_decode(cn_str_c(cmd5), want, sizeof want, &wl) ||
		    wl != 16) {
			cn_s3_error(r, CN_S3_InvalidDigest, NULL);
			return false;
		}
		cn_md5_init(&md5);
	}
	if (!doc_begin(d)) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
		return false;
	}
	for (;;) {
		ssize_t n = r->body->read(r->body, buf, sizeof buf);
		if (n < 0) {
			cn_s3_error_from(r, (cn_err)-n);
			goto out;
		}
		total += (size_t)n;
		if (total > COMPLETE_BODY_MAX) {
			cn_s3_error(r, CN_S3_MalformedXML, NULL);
			goto out;
		}
		if (cmd5 && n > 0)
			cn_md5_update(&md5, buf, (size_t)n);
		doc_feed(d, buf, (size_t)n, n == 0);
		if (n == 0)
			break;
	}
	if (cmd5) {
		unsigned char got[16];
		cn_md5_final(&md5, got);
		if (memcmp(got, want, 16) != 0) {
			cn_s3_error(r, CN_S3_BadDigest, NULL);
			goto out;
		}
	}
	doc_finish(d);
	if (d->err) {
		cn_s3_error(r, d->err, d->msg);
		goto out;
	}
	ok = true;
out:
	if (d->p)
		doc_finish(d);
	return ok;
}

/* ---- CompleteMultipartUpload: the seal computes and checks checksums ------------------- */

typedef struct complete_ctx {
	cn_s3_req *r;
	const complete_doc *doc;
	cn_cksum_algo algo;
	bool full_object;
	const char *expected;     /* x-amz-checksum-<algo> header of the request, or NULL */
	const char *upload_id;    /* recorded in the object's meta (CN_S3_UPLOAD_ID_META) */
	char value[CN_CKSUM_MAX_B64 + 8];
	cn_s3_code fail;
	const char *fail_msg;
} complete_ctx;

/* The entries a completion adds to the object's meta: name = value, and name2 = value2
 * when name2 is not NULL. Ownership passes to the object layer (cn_obj_complete_seal). */
static cn_err add_meta(cn_kv **add, size_t *nadd, const char *name, const char *value,
                       const char *name2, const char *value2)
{
	size_t n = name2 ? 2 : 1;
	cn_kv *kv = calloc(n, sizeof *kv);
	bool ok = kv != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		kv[i].name = strdup(i ? name2 : name);
		kv[i].value = strdup(i ? value2 : value);
		ok = kv[i].name && kv[i].value;
	}
	if (!ok) {
		if (kv)
			cn_kvs_free(kv, n);
		return CN_ERR_NOMEM;
	}
	*add = kv;
	*nadd = n;
	return CN_OK;
}

static cn_err complete_seal(void *ctx, const cn_obj_info *parts, size_t nparts, cn_kv **add,
                            size_t *nadd)
{
	complete_ctx *c = ctx;
	cn_s3_req *r = c->r;
	size_t dlen = cn_cksum_len(c->algo);
	unsigned char raw[CN_CKSUM_MAX_DIGEST];
	cn_cksum h;
	crc_poly poly;
	uint64_t crc = 0;
	cn_err e = CN_OK;

	*nadd = 0;
	if (c->algo == CN_CKSUM_NONE)
		return add_meta(add, nadd, CN_S3_UPLOAD_ID_META, c->upload_id, NULL, NULL);
	CN_ASSERT(nparts == c->doc->n);
	memset(&h, 0, sizeof h);
	memset(&poly, 0, sizeof poly);
	if (c->full_object) {
		if (!crc_poly_init(&poly, c->algo))
			return CN_ERR_INVALID;
	} else if (cn_cksum_init(&h, c->algo) != CN_OK) {
		return CN_ERR_NOMEM;
	}
	for (size_t i = 0; i < nparts; i++) {
		const char *stored = cn_obj_info_get(&parts[i], cn_cksum_header(c->algo));
		const given_checksum *g = &c->doc->given[i];
		uint32_t num = c->doc->parts[i].number;
		if (!stored || cn_cksum_decode(c->algo, cn_str_c(stored), raw) != CN_OK) {
			c->fail = CN_S3_InvalidPart;
			c->fail_msg = msgf(r, "The upload was created using a %s checksum; part %u has none stored.",
			                   algo_lower(r, c->algo), num);
			e = CN_ERR_BAD_PART;
			goto out;
		}
		if (g->algo != CN_CKSUM_NONE && (g->algo != c->algo || strcmp(g->value, stored))) {
			c->fail = CN_S3_InvalidPart;
			c->fail_msg = msgf(r, "The %s checksum given for part %u does not match the uploaded part.",
			                   algo_lower(r, g->algo), num);
			e = CN_ERR_BAD_PART;
			goto out;
		}
		if (c->full_object && i == 0)
			crc = be_load(raw, dlen);
		else if (c->full_object)
			crc = crc_combine(&poly, crc, be_load(raw, dlen), (uint64_t)parts[i].size);
		else
			cn_cksum_update(&h, raw, dlen);
	}
	if (c->full_object) {
		be_store(crc, raw, dlen);
		cn_base64_encode(raw, dlen, c->value);
	} else {
		cn_cksum_final_base64(&h, c->value);
		size_t l = strlen(c->value);
		snprintf(c->value + l, sizeof c->value - l, "-%zu", nparts);
	}
	if (c->expected && strcmp(c->expected, c->value)) {
		c->fail = CN_S3_BadDigest;
		c->fail_msg = msgf(r, "The %s you specified did not match the calculated checksum.",
		                   cn_cksum_header(c->algo));
		e = CN_ERR_DIGEST;
		goto out;
	}
	e = add_meta(add, nadd, CN_S3_UPLOAD_ID_META, c->upload_id, cn_cksum_header(c->algo), c->value);
out:
	cn_cksum_fini(&h);
	return e;
}

/* The object's URL for <Location>. */
static cn_err location(cn_s3_req *r, cn_buf *out)
{
	cn_err e = cn_buf_printf(out, "http://%.*s/", (int)r->h->host.len, r->h->host.p);
	if (!e && !r->vhost) {
		e = cn_url_encode(out, cn_str_c(r->bucket), false);
		if (!e)
			e = cn_buf_puts(out, "/");
	}
	if (!e)
		e = cn_url_encode(out, cn_str_c(r->key), true);
	return e;
}

/* Sends CompleteMultipartUploadResult: the object's ETag, its checksum (algo NONE: none)
 * and x-amz-version-id when the object has a version id. */
static void send_complete_result(cn_s3_req *r, const char *etag, cn_cksum_algo algo,
                                 const char *cksum, bool full_object, const char *version_id)
{
	cn_buf b, loc;
	cn_buf_init(&b);
	cn_buf_init(&loc);
	cn_err e = location(r, &loc);
	if (!e)
		e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "CompleteMultipartUploadResult", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_elem_n(&b, "Location", loc.p, loc.len);
	if (!e)
		e = cn_xml_elem(&b, "Bucket", r->bucket);
	if (!e)
		e = cn_xml_elem(&b, "Key", r->key);
	if (!e)
		e = cn_xml_elemf(&b, "ETag", "\"%s\"", etag);
	if (!e && algo != CN_CKSUM_NONE)
		e = elem_checksum(&b, algo, cksum);
	if (!e && algo != CN_CKSUM_NONE)
		e = cn_xml_elem(&b, "ChecksumType", full_object ? "FULL_OBJECT" : "COMPOSITE");
	if (!e)
		e = cn_xml_close(&b, "CompleteMultipartUploadResult");
	if (e) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
	} else {
		cn_s3_reply_version_id(r, version_id);
		cn_s3_send_xml(r, 200, &b);
	}
	cn_buf_fini(&b);
	cn_buf_fini(&loc);
}

/* A completion repeated after it succeeded (a client retrying after a lost answer) gets the
 * first answer again, as from AWS. The object a completion makes records its upload id
 * (CN_S3_UPLOAD_ID_META; CopyObject does not carry it over); while the key's current
 * version is that object and the request lists the same parts (numbers and ETags), the
 * answer is that object's. Otherwise the upload is unknown: NoSuchUpload, as AWS after it
 * forgets a completed upload. True when the answer was sent. */
static bool answer_completed(cn_s3_req *r, const char *upload_id, const complete_doc *d)
{
	cn_obj_info info;
	cn_obj_info_init(&info);
	bool same = cn_obj_stat(r->store, r->bucket, r->key, &info) == CN_OK && !info.delete_marker;
	const char *uid = same ? cn_obj_info_get(&info, CN_S3_UPLOAD_ID_META) : NULL;
	same = uid && !strcmp(uid, upload_id) && info.nparts == d->n;
	for (size_t i = 0; same && i < d->n; i++)
		same = info.parts[i].number == d->parts[i].number &&
		       !strcasecmp(info.parts[i].etag, d->parts[i].etag);
	if (same) {
		cn_cksum_algo algo = CN_CKSUM_NONE;
		const char *cksum = NULL;
		for (size_t i = 0; i < info.nmeta && algo == CN_CKSUM_NONE; i++) {
			algo = cn_cksum_from_header(cn_str_c(info.meta[i].name));
			cksum = info.meta[i].value;
		}
		const char *t = cn_obj_info_get(&info, "x-amz-checksum-type");
		send_complete_result(r, info.etag, algo, cksum, t && !strcmp(t, "FULL_OBJECT"),
		                     info.version_id);
	}
	cn_obj_info_fini(&info);
	return same;
}

void cn_s3_complete_multipart(cn_s3_req *r)
{
	const char *upload_id;
	complete_doc d;
	complete_ctx c;
	cn_upload_info u;
	cn_obj_info out;
	cn_err e;

	if (!upload_id_arg(r, &upload_id) || !key_ok(r))
		return;
	memset(&d, 0, sizeof d);
	memset(&c, 0, sizeof c);
	memset(&u, 0, sizeof u);
	cn_obj_info_init(&out);
	if (!read_complete_doc(r, &d))
		goto done;
	e = cn_obj_upload_stat(r->store, r->bucket, r->key, upload_id, &u);
	if (e == CN_ERR_NO_UPLOAD && answer_completed(r, upload_id, &d))
		goto done;
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		goto done;
	}
	if (!cn_s3_write_conditions(r))
		goto done; /* the upload stays: AWS lets the client complete it otherwise */
	c.r = r;
	c.doc = &d;
	c.upload_id = upload_id;
	c.algo = upload_algo(&u, &c.full_object);
	if (c.algo != CN_CKSUM_NONE)
		c.expected = cn_s3_header(r, cn_cksum_header(c.algo));
	e = cn_obj_upload_complete(r->store, r->bucket, r->key, upload_id, d.parts, d.n,
	                           complete_seal, &c, &out);
	/* A concurrent completion of the same upload may have finished first. */
	if (e == CN_ERR_NO_UPLOAD && answer_completed(r, upload_id, &d))
		goto done;
	if (e != CN_OK) {
		if (c.fail != CN_S3_OK)
			cn_s3_error(r, c.fail, c.fail_msg);
		else
			cn_s3_error_from(r, e);
		goto done;
	}
	send_complete_result(r, out.etag, c.algo, c.value, c.full_object, out.version_id);
done:
	free(d.parts);
	free(d.given);
	cn_upload_info_fini(&u);
	cn_obj_info_fini(&out);
}

/* ---- AbortMultipartUpload ----------------------------------------------------------------- */

void cn_s3_abort_multipart(cn_s3_req *r)
{
	const char *upload_id;

	if (!upload_id_arg(r, &upload_id) || !key_ok(r))
		return;
	cn_err e = cn_obj_upload_abort(r->store, r->bucket, r->key, upload_id);
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		return;
	}
	cn_s3_send_empty(r, 204);
}

/* ---- ListParts ------------------------------------------------------------------------------ */

void cn_s3_list_parts(cn_s3_req *r)
{
	const char *upload_id;
	uint64_t max = LIST_MAX, marker = 0;
	cn_upload_info u;
	cn_obj_info *parts = NULL;
	size_t nparts = 0;
	cn_buf b;
	cn_err e;
	char owner[65], when[25];

	if (!upload_id_arg(r, &upload_id) || !key_ok(r))
		return;
	const char *mp = cn_s3_query(r, "max-parts");
	if (mp && !cn_s3_parse_uint(mp, INT32_MAX, &max)) {
		cn_s3_error(r, CN_S3_InvalidArgument,
		            "Argument max-parts must be an integer between 0 and 2147483647");
		return;
	}
	if (max > LIST_MAX)
		max = LIST_MAX;
	const char *pm = cn_s3_query(r, "part-number-marker");
	if (pm && pm[0] && !cn_s3_parse_uint(pm, INT32_MAX, &marker)) {
		cn_s3_error(r, CN_S3_InvalidArgument, "Argument partNumberMarker must be an integer.");
		return;
	}
	memset(&u, 0, sizeof u);
	cn_buf_init(&b);
	e = cn_obj_upload_stat(r->store, r->bucket, r->key, upload_id, &u);
	if (!e)
		e = cn_obj_upload_list_parts(r->store, r->bucket, r->key, upload_id, &parts, &nparts);
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		goto done;
	}
	size_t first = 0;
	while (first < nparts && parts[first].nparts && parts[first].parts[0].number <= marker)
		first++;
	size_t last = first + max < nparts ? first + max : nparts; /* exclusive */
	bool truncated = last < nparts;
	uint32_t next = last > first && parts[last - 1].nparts ? parts[last - 1].parts[0].number : 0;
	bool full;
	cn_cksum_algo algo = upload_algo(&u, &full);
	const char *sc = kv_get(u.meta, u.nmeta, "x-amz-storage-class");
	cn_s3_owner_id(r, owner);

	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "ListPartsResult", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_elem(&b, "Bucket", r->bucket);
	if (!e)
		e = cn_xml_elem(&b, "Key", r->key);
	if (!e)
		e = cn_xml_elem(&b, "UploadId", upload_id);
	if (!e)
		e = cn_xml_elemf(&b, "PartNumberMarker", "%llu", (unsigned long long)marker);
	if (!e)
		e = cn_xml_elemf(&b, "NextPartNumberMarker", "%u", next);
	if (!e)
		e = cn_xml_elemf(&b, "MaxParts", "%llu", (unsigned long long)max);
	if (!e)
		e = cn_xml_elem(&b, "IsTruncated", truncated ? "true" : "false");
	for (size_t i = first; i < last && !e; i++) {
		const cn_obj_info *p = &parts[i];
		const char *cv = NULL;
		cn_cksum_algo ca = meta_checksum(p->meta, p->nmeta, &cv);
		cn_time_iso8601(p->mtime_ms, when);
		e = cn_xml_open(&b, "Part", NULL);
		if (!e)
			e = cn_xml_elemf(&b, "PartNumber", "%u", p->nparts ? p->parts[0].number : 0);
		if (!e)
			e = cn_xml_elem(&b, "LastModified", when);
		if (!e)
			e = cn_xml_elemf(&b, "ETag", "\"%s\"", p->etag);
		if (!e)
			e = cn_xml_elemf(&b, "Size", "%lld", (long long)p->size);
		if (!e && ca != CN_CKSUM_NONE)
			e = elem_checksum(&b, ca, cv);
		if (!e)
			e = cn_xml_close(&b, "Part");
	}
	if (!e)
		e = elem_owner(&b, "Initiator", owner);
	if (!e)
		e = elem_owner(&b, "Owner", owner);
	if (!e)
		e = cn_xml_elem(&b, "StorageClass", sc ? sc : "STANDARD");
	if (!e && algo != CN_CKSUM_NONE)
		e = cn_xml_elem(&b, "ChecksumAlgorithm", cn_cksum_name(algo));
	if (!e && algo != CN_CKSUM_NONE)
		e = cn_xml_elem(&b, "ChecksumType", full ? "FULL_OBJECT" : "COMPOSITE");
	if (!e)
		e = cn_xml_close(&b, "ListPartsResult");
	if (e) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
		goto done;
	}
	cn_s3_send_xml(r, 200, &b);
done:
	for (size_t i = 0; i < nparts; i++)
		cn_obj_info_fini(&parts[i]);
	free(parts);
	cn_upload_info_fini(&u);
	cn_buf_fini(&b);
}

/* ---- ListMultipartUploads -------------------------------------------------------------------- */

void cn_s3_list_multipart_uploads(cn_s3_req *r)
{
	uint64_t max = LIST_MAX;
	cn_upload_list l;
	cn_buf b;
	cn_err e;
	char owner[65], when[25];

	const char *prefix = cn_s3_query(r, "prefix");
	const char *delim = cn_s3_query(r, "delimiter");
	const char *key_marker = cn_s3_query(r, "key-marker");
	const char *id_marker = cn_s3_query(r, "upload-id-marker");
	const char *enc = cn_s3_query(r, "encoding-type");
	const char *mu = cn_s3_query(r, "max-uploads");
	if (enc && strcmp(enc, "url")) {
		cn_s3_error(r, CN_S3_InvalidEncodingType, NULL);
		return;
	}
	bool url = enc != NULL;
	if (mu && !cn_s3_parse_uint(mu, INT32_MAX, &max)) {
		cn_s3_error(r, CN_S3_InvalidArgument,
		            "Argument max-uploads must be an integer between 0 and 2147483647");
		return;
	}
	if (max > LIST_MAX)
		max = LIST_MAX;
	if (!key_marker || !key_marker[0])
		id_marker = NULL; /* AWS ignores upload-id-marker without key-marker */

	memset(&l, 0, sizeof l);
	cn_buf_init(&b);
	e = cn_obj_upload_list(r->store, r->bucket, prefix ? prefix : "",
	                       delim && delim[0] ? delim : NULL, key_marker, id_marker, (size_t)max, &l);
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		goto done;
	}
	cn_s3_owner_id(r, owner);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "ListMultipartUploadsResult", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_elem(&b, "Bucket", r->bucket);
	if (!e)
		e = cn_s3_xml_key(&b, "KeyMarker", key_marker ? key_marker : "", url);
	if (!e)
		e = cn_xml_elem(&b, "UploadIdMarker", id_marker ? id_marker : "");
	if (!e)
		e = cn_s3_xml_key(&b, "NextKeyMarker",
		             l.truncated && l.next_key_marker ? l.next_key_marker : "", url);
	if (!e)
		e = cn_xml_elem(&b, "NextUploadIdMarker", l.truncated ? l.next_upload_id_marker : "");
	if (!e && delim && delim[0])
		e = cn_s3_xml_key(&b, "Delimiter", delim, url);
	if (!e)
		e = cn_s3_xml_key(&b, "Prefix", prefix ? prefix : "", url);
	if (!e)
		e = cn_xml_elemf(&b, "MaxUploads", "%llu", (unsigned long long)max);
	if (!e)
		e = cn_xml_elem(&b, "IsTruncated", l.truncated ? "true" : "false");
	if (!e && url)
		e = cn_xml_elem(&b, "EncodingType", "url");
	for (size_t i = 0; i < l.nuploads && !e; i++) {
		const cn_upload_info *u = &l.uploads[i];
		bool full;
		cn_cksum_algo algo = upload_algo(u, &full);
		const char *sc = kv_get(u->meta, u->nmeta, "x-amz-storage-class");
		cn_time_iso8601(u->initiated_ms, when);
		e = cn_xml_open(&b, "Upload", NULL);
		if (!e)
			e = cn_s3_xml_key(&b, "Key", u->key, url);
		if (!e)
			e = cn_xml_elem(&b, "UploadId", u->upload_id);
		if (!e)
			e = elem_owner(&b, "Initiator", owner);
		if (!e)
			e = elem_owner(&b, "Owner", owner);
		if (!e)
			e = cn_xml_elem(&b, "StorageClass", sc ? sc : "STANDARD");
		if (!e)
			e = cn_xml_elem(&b, "Initiated", when);
		if (!e && algo != CN_CKSUM_NONE)
			e = cn_xml_elem(&b, "ChecksumAlgorithm", cn_cksum_name(algo));
		if (!e && algo != CN_CKSUM_NONE)
			e = cn_xml_elem(&b, "ChecksumType", full ? "FULL_OBJECT" : "COMPOSITE");
		if (!e)
			e = cn_xml_close(&b, "Upload");
	}
	for (size_t i = 0; i < l.nprefixes && !e; i++) {
		e = cn_xml_open(&b, "CommonPrefixes", NULL);
		if (!e)
			e = cn_s3_xml_key(&b, "Prefix", l.prefixes[i], url);
		if (!e)
			e = cn_xml_close(&b, "CommonPrefixes");
	}
	if (!e)
		e = cn_xml_close(&b, "ListMultipartUploadsResult");
	if (e) {
		cn_s3_error(r, CN_S3_InternalError, NULL);
		goto done;
	}
	cn_s3_send_xml(r, 200, &b);
done:
	cn_upload_list_fini(&l);
	cn_buf_fini(&b);
}
