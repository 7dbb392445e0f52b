/* fuzz/complete_mpu: the CompleteMultipartUpload body parser (src/s3/multipart.c, the
 * streaming expat parser the handler feeds) on arbitrary bytes, through
 * cn_s3_complete_parse. Besides "no crash, no leak": an accepted document holds 1..10000
 * parts with numbers 1..10000 and non-empty NUL-terminated ETags, and the parts written
 * back as a document parse to the same list (up to 256 parts); a refused one names one of
 * the errors the handler may send. Long part lists without huge inputs (which would slow every run): an
 * input "*COUNT\nHEAD\nREPEAT\nTAIL" is parsed as HEAD, COUNT (<= 20000) times REPEAT,
 * TAIL, when that stays under 2 MiB; the corpus reaches the 10000-part limit this way. */
#include "s3/s3_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void check(const uint8_t *data, size_t size);

static void write_doc(cn_buf *b, const cn_obj_part *parts, size_t n)
{
	CN_ASSERT(cn_xml_decl(b) == CN_OK && cn_xml_open(b, "CompleteMultipartUpload", CN_S3_XMLNS) == CN_OK);
	for (size_t i = 0; i < n; i++) {
		CN_ASSERT(cn_xml_open(b, "Part", NULL) == CN_OK);
		CN_ASSERT(cn_xml_elemf(b, "PartNumber", "%u", parts[i].number) == CN_OK);
		CN_ASSERT(cn_xml_open(b, "ETag", NULL) == CN_OK && cn_buf_puts(b, "&quot;") == CN_OK);
		CN_ASSERT(cn_xml_escape(b, parts[i].etag, strlen(parts[i].etag)) == CN_OK);
		CN_ASSERT(cn_buf_puts(b, "&quot;") == CN_OK && cn_xml_close(b, "ETag") == CN_OK);
		CN_ASSERT(cn_xml_close(b, "Part") == CN_OK);
	}
	CN_ASSERT(cn_xml_close(b, "CompleteMultipartUpload") == CN_OK);
}

/* The "*COUNT\n..." form expanded into b; false when data is not of that form. */
static bool expand(const char *p, size_t len, cn_buf *b)
{
	const char *end = p + len, *nl1, *nl2, *nl3;
	size_t count = 0;

	if (len < 2 || p[0] != '*')
		return false;
	for (p++; p < end && *p >= '0' && *p <= '9' && count <= 20000; p++)
		count = count * 10 + (size_t)(*p - '0');
	if (count > 20000 || p == end || *p != '\n')
		return false;
	p++;
	if (!(nl1 = memchr(p, '\n', (size_t)(end - p))) ||
	    !(nl2 = memchr(nl1 + 1, '\n', (size_t)(end - nl1 - 1))))
		return false;
	nl3 = nl2 + 1;
	size_t rlen = (size_t)(nl2 - nl1 - 1);
	if (rlen && count > (2u << 20) / rlen)
		return false;
	CN_ASSERT(cn_buf_append(b, p, (size_t)(nl1 - p)) == CN_OK);
	for (size_t i = 0; i < count; i++)
		CN_ASSERT(cn_buf_append(b, nl1 + 1, rlen) == CN_OK);
	CN_ASSERT(cn_buf_append(b, nl3, (size_t)(end - nl3)) == CN_OK);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cn_buf in;
	cn_buf_init(&in);
	if (expand((const char *)data, size, &in))
		check((const uint8_t *)(in.p ? in.p : ""), in.len);
	else
		check(data, size);
	cn_buf_fini(&in);
	return 0;
}

static void check(const uint8_t *data, size_t size)
{
	cn_obj_part *parts = NULL;
	size_t n = 0;
	cn_s3_code code = CN_S3_OK;
	const char *msg = NULL;

	cn_err e = cn_s3_complete_parse((const char *)data, size, &parts, &n, &code, &msg);
	if (e == CN_ERR_NOMEM)
		return;
	if (e != CN_OK) {
		CN_ASSERT(e == CN_ERR_INVALID && !parts && n == 0);
		CN_ASSERT(code == CN_S3_MalformedXML || code == CN_S3_InvalidArgument ||
		          code == CN_S3_InvalidPart);
		CN_ASSERT(code != CN_S3_InvalidArgument || msg);
		return;
	}
	CN_ASSERT(parts && n >= 1 && n <= CN_OBJ_MAX_PARTS && code == CN_S3_OK);
	for (size_t i = 0; i < n; i++) {
		CN_ASSERT(parts[i].number >= 1 && parts[i].number <= CN_OBJ_MAX_PARTS);
		size_t l = strnlen(parts[i].etag, sizeof parts[i].etag);
		CN_ASSERT(l >= 1 && l < sizeof parts[i].etag);
	}
	if (n > 256) { /* long lists: the round trip would only slow the run */
		free(parts);
		return;
	}
	cn_buf b;
	cn_buf_init(&b);
	write_doc(&b, parts, n);
	cn_obj_part *again = NULL;
	size_t n2 = 0;
	e = cn_s3_complete_parse(b.p, b.len, &again, &n2, &code, &msg);
	if (e != CN_ERR_NOMEM) {
		CN_ASSERT(e == CN_OK && n2 == n);
		for (size_t i = 0; i < n; i++)
			CN_ASSERT(again[i].number == parts[i].number &&
			          !strcmp(again[i].etag, parts[i].etag));
	}
	free(again);
	cn_buf_fini(&b);
	free(parts);
}
