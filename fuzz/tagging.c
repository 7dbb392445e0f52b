/* fuzz/tagging: the tag-set parsers of src/s3/tagging.c on arbitrary bytes. The first byte
 * picks the mode: 0 the x-amz-tagging header (the rest, NUL-terminated at its first NUL),
 * 1 an object's Tagging XML document, 2 a bucket's. Besides "no crash, no leak": a refused
 * set names one of the errors the handlers send; an accepted one has a canonical form that
 * is NULL or non-empty, counts at most 10 (50) tags, parses as a header to itself (when it
 * fits a header's 10), and, written back as a Tagging document, parses to itself again. */
#include "s3/s3_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(cn_err e, const char *canon, cn_s3_code code, const char *msg)
{
	CN_ASSERT(e == CN_ERR_INVALID && !canon);
	CN_ASSERT(code == CN_S3_InvalidTag || code == CN_S3_InvalidArgument ||
	          code == CN_S3_BadRequest || code == CN_S3_MalformedXML);
	CN_ASSERT(code == CN_S3_MalformedXML || msg);
}

/* Percent-decodes [p, p+len) and appends it XML-escaped. */
static void put_decoded(cn_buf *b, const char *p, size_t len)
{
	char *d = malloc(len + 1);
	size_t dl = 0;
	CN_ASSERT(d && cn_url_decode((cn_str){ p, len }, true, d, len + 1, &dl) == CN_OK);
	CN_ASSERT(cn_xml_escape(b, d, dl) == CN_OK);
	free(d);
}

/* The canonical form k1=v1&k2=v2 as a Tagging document. */
static void write_doc(cn_buf *b, const char *canon)
{
	CN_ASSERT(cn_xml_decl(b) == CN_OK && cn_xml_open(b, "Tagging", CN_S3_XMLNS) == CN_OK &&
	          cn_xml_open(b, "TagSet", NULL) == CN_OK);
	for (const char *s = canon; s && *s;) {
		const char *amp = strchr(s, '&');
		size_t len = amp ? (size_t)(amp - s) : strlen(s);
		const char *eq = memchr(s, '=', len);
		CN_ASSERT(eq);
		CN_ASSERT(cn_xml_open(b, "Tag", NULL) == CN_OK && cn_xml_open(b, "Key", NULL) == CN_OK);
		put_decoded(b, s, (size_t)(eq - s));
		CN_ASSERT(cn_xml_close(b, "Key") == CN_OK && cn_xml_open(b, "Value", NULL) == CN_OK);
		put_decoded(b, eq + 1, len - (size_t)(eq - s) - 1);
		CN_ASSERT(cn_xml_close(b, "Value") == CN_OK && cn_xml_close(b, "Tag") == CN_OK);
		s += len + (amp ? 1 : 0);
	}
	CN_ASSERT(cn_xml_close(b, "TagSet") == CN_OK && cn_xml_close(b, "Tagging") == CN_OK);
}

static void check_canon(const char *canon, bool bucket)
{
	cn_s3_code code;
	const char *msg;
	char *again = NULL;

	if (!canon)
		return;
	size_t n = cn_s3_tagging_count(canon);
	CN_ASSERT(n >= 1 && n <= (bucket ? 50u : 10u));
	if (n <= 10) {
		cn_err e = cn_s3_tagging_parse_header(canon, &again, &code, &msg);
		CN_ASSERT(e == CN_ERR_NOMEM || (e == CN_OK && again && !strcmp(again, canon)));
		free(again);
		again = NULL;
	}
	cn_buf b;
	cn_buf_init(&b);
	write_doc(&b, canon);
	cn_err e = cn_s3_tagging_parse_xml(b.p, b.len, bucket, &again, &code, &msg);
	CN_ASSERT(e == CN_ERR_NOMEM || (e == CN_OK && again && !strcmp(again, canon)));
	free(again);
	cn_buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cn_s3_code code = CN_S3_OK;
	const char *msg = NULL;
	char *canon = NULL;
	cn_err e;

	if (size < 1)
		return 0;
	int mode = data[0] % 3;
	const char *p = (const char *)data + 1;
	size_t len = size - 1;
	if (mode == 0) {
		char *h = malloc(len + 1);
		CN_ASSERT(h);
		memcpy(h, p, len);
		h[len] = 0;
		e = cn_s3_tagging_parse_header(h, &canon, &code, &msg);
		free(h);
	} else {
		e = cn_s3_tagging_parse_xml(p, len, mode == 2, &canon, &code, &msg);
	}
	if (e == CN_ERR_NOMEM)
		return 0;
	if (e != CN_OK) {
		check_refusal(e, canon, code, msg);
		return 0;
	}
	CN_ASSERT(code == CN_S3_OK && (!canon || *canon));
	check_canon(canon, mode == 2);
	free(canon);
	return 0;
}
