/* fuzz/cors: the CORSConfiguration validator of src/s3/cors.c on arbitrary bytes. Besides
 * "no crash, no leak": a refusal names MalformedXML or InvalidRequest (with a message); an
 * accepted document's canonical form is accepted again and canonicalizes to itself. */
#include "s3/s3_int.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cn_buf a, b;
	cn_s3_code code;
	const char *msg;

	cn_buf_init(&a);
	cn_buf_init(&b);
	cn_err e = cn_s3_cors_parse((const char *)data, size, &a, &code, &msg);
	if (e == CN_ERR_INVALID) {
		CN_ASSERT(code == CN_S3_MalformedXML || (code == CN_S3_InvalidRequest && msg));
	} else if (e == CN_OK) {
		CN_ASSERT(a.len > 0);
		CN_ASSERT(cn_s3_cors_parse(a.p, a.len, &b, &code, &msg) == CN_OK);
		CN_ASSERT(a.len == b.len && memcmp(a.p, b.p, a.len) == 0);
	} else {
		CN_ASSERT(e == CN_ERR_NOMEM);
	}
	cn_buf_fini(&a);
	cn_buf_fini(&b);
	return 0;
}
