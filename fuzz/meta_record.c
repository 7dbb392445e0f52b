/* fuzz/meta_record: the metadata-record decoder (src/erasure/meta.c) on arbitrary bytes, as
 * read from a drive that may hold torn or rotted records. Besides "no crash", checks that a
 * record that decodes re-encodes to a record that decodes to the same fields. The checksum
 * makes random inputs fail early, so inputs whose first byte is '!' get a valid CRC32C
 * appended by the driver, letting the fuzzer explore the field parser. */
#include "erasure/erasure.h"

#include <isa-l/crc.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_roundtrip(const cn_ec_meta *m)
{
	cn_buf b;
	cn_buf_init(&b);
	CN_ASSERT(cn_ec_meta_encode(m, &b) == CN_OK);
	cn_ec_meta m2;
	CN_ASSERT(cn_ec_meta_decode(b.p, b.len, false, &m2) == CN_OK);
	CN_ASSERT(m2.size == m->size && m2.mtime_ms == m->mtime_ms && m2.nmeta == m->nmeta &&
	          m2.nparts == m->nparts && m2.inline_len == m->inline_len &&
	          !strcmp(m2.etag, m->etag) && !strcmp(m2.data_id, m->data_id));
	for (size_t i = 0; i < m->nmeta; i++)
		CN_ASSERT(!strcmp(m->meta[i].name, m2.meta[i].name) &&
		          !strcmp(m->meta[i].value, m2.meta[i].value));
	if (m->inline_len)
		CN_ASSERT(!memcmp(m->inline_data, m2.inline_data, m->inline_len));
	cn_ec_meta_fini(&m2);
	cn_buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 20))
		return 0;
	uint8_t *p = malloc(size + 4);
	if (!p)
		return 0;
	size_t len = size;
	if (size > 0)
		memcpy(p, data, size);
	if (size > 1 && data[0] == '!') {
		/* the rest is a record without its CRC: fix the magic and append a valid CRC */
		memmove(p, p + 1, size - 1);
		len = size - 1;
		if (len >= 4)
			memcpy(p, "CNMR", 4);
		uint32_t c = crc32_iscsi(p, (int)len, 0xffffffffu) ^ 0xffffffffu;
		for (int i = 0; i < 4; i++)
			p[len + (size_t)i] = (uint8_t)(c >> (8 * i));
		len += 4;
	}
	for (int skip = 0; skip < 2; skip++) {
		cn_ec_meta m;
		cn_err e = cn_ec_meta_decode(p, len, skip, &m);
		CN_ASSERT(e == CN_OK || e == CN_ERR_CORRUPT || e == CN_ERR_NOMEM);
		if (e == CN_OK && !skip)
			check_roundtrip(&m);
		cn_ec_meta_fini(&m);
	}
	free(p);
	return 0;
}
