/* fuzz/versioning: the PutBucketVersioning body parser (src/s3/versioning.c,
 * cn_s3_versioning_parse) on arbitrary bytes. Besides "no crash, no leak": a refused body
 * names MalformedXML or NotImplemented (with its message); an accepted one says Enabled or
 * Suspended, and the document written back parses to the same state. */
#include "s3/s3_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cn_versioning v = CN_VERSIONING_OFF, again = CN_VERSIONING_OFF;
	cn_s3_code code = CN_S3_OK;
	const char *msg = NULL;

	cn_err e = cn_s3_versioning_parse((const char *)data, size, &v, &code, &msg);
	if (e == CN_ERR_NOMEM)
		return 0;
	if (e != CN_OK) {
		CN_ASSERT(e == CN_ERR_INVALID);
		CN_ASSERT(code == CN_S3_MalformedXML || (code == CN_S3_NotImplemented && msg));
		return 0;
	}
	CN_ASSERT(code == CN_S3_OK &&
	          (v == CN_VERSIONING_ENABLED || v == CN_VERSIONING_SUSPENDED));
	cn_buf b;
	cn_buf_init(&b);
	CN_ASSERT(cn_xml_open(&b, "VersioningConfiguration", CN_S3_XMLNS) == CN_OK &&
	          cn_xml_elem(&b, "Status", v == CN_VERSIONING_ENABLED ? "Enabled" : "Suspended") == CN_OK &&
	          cn_xml_close(&b, "VersioningConfiguration") == CN_OK);
	e = cn_s3_versioning_parse(b.p, b.len, &again, &code, &msg);
	CN_ASSERT(e == CN_ERR_NOMEM || (e == CN_OK && again == v));
	cn_buf_fini(&b);
	return 0;
}
