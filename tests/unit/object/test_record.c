/* Unit tests of the metadata record codec (src/erasure/meta.c, docs/FORMAT.md §4): round
 * trip of every field, every single-bit flip and every truncation detected as corrupt,
 * unknown fields skipped unless critical, CRC32C matching the standard check value. */
#include "erasure/erasure.h"
#include "test.h"

#include <isa-l/crc.h>

static void sample(cn_ec_meta *m, cn_kv *kv, cn_ec_part *pt)
{
	cn_ec_meta_init(m);
	m->size = 5;
	m->mtime_ms = 1700000000123;
	strcpy(m->etag, "5d41402abc4b2a76b9719d911017c592");
	strcpy(m->storage_class, "STANDARD");
	kv[0] = (cn_kv){ "content-type", "text/plain" };
	kv[1] = (cn_kv){ "x-amz-meta-empty", "" };
	m->meta = kv;
	m->nmeta = 2;
	m->k = 1;
	m->block_size = 1 << 20;
	m->ndist = 1;
	*pt = (cn_ec_part){ 1, 5, "abc" };
	m->parts = pt;
	m->nparts = 1;
	m->has_inline = true;
	m->inline_data = (unsigned char *)"hello";
	m->inline_len = 5;
}

static void fix_crc(cn_buf *b)
{
	uint32_t c = crc32_iscsi((unsigned char *)b->p, (int)(b->len - 4), 0xffffffffu) ^ 0xffffffffu;
	for (int i = 0; i < 4; i++)
		b->p[b->len - 4 + (size_t)i] = (char)(c >> (8 * i));
}

TEST(test_crc_check_value)
{
	CHECK_EQ_INT(crc32_iscsi((unsigned char *)"123456789", 9, 0xffffffffu) ^ 0xffffffffu,
	             0xe3069283u);
}

TEST(test_roundtrip)
{
	cn_ec_meta m, d;
	cn_kv kv[2];
	cn_ec_part pt;
	sample(&m, kv, &pt);
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_ec_meta_encode(&m, &b), CN_OK);
	CHECK(!memcmp(b.p, "CNMR", 4));
	CHECK_EQ_INT(cn_ec_meta_decode(b.p, b.len, false, &d), CN_OK);
	CHECK_EQ_INT(d.size, 5);
	CHECK_EQ_INT(d.mtime_ms, 1700000000123);
	CHECK_EQ_STR(d.etag, m.etag);
	CHECK_EQ_STR(d.storage_class, "STANDARD");
	CHECK_EQ_INT(d.nmeta, 2);
	if (d.nmeta == 2) {
		CHECK_EQ_STR(d.meta[0].value, "text/plain");
		CHECK_EQ_STR(d.meta[1].value, "");
	}
	CHECK(d.nparts == 1 && d.parts[0].size == 5 && !strcmp(d.parts[0].etag, "abc"));
	CHECK(d.has_inline && d.inline_len == 5 && !memcmp(d.inline_data, "hello", 5));
	CHECK(d.k == 1 && d.m == 0 && d.ndist == 1 && d.block_size == 1u << 20);
	cn_ec_meta_fini(&d);
	CHECK_EQ_INT(cn_ec_meta_decode(b.p, b.len, true, &d), CN_OK);
	CHECK(d.has_inline && d.inline_data == NULL);
	cn_ec_meta_fini(&d);
	/* every bit flip and every truncation is detected */
	int missed = 0;
	for (size_t i = 0; i < b.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			b.p[i] ^= (char)(1 << bit);
			if (cn_ec_meta_decode(b.p, b.len, false, &d) != CN_ERR_CORRUPT)
				missed++;
			cn_ec_meta_fini(&d);
			b.p[i] ^= (char)(1 << bit);
		}
	for (size_t n = 0; n < b.len; n++) {
		if (cn_ec_meta_decode(b.p, n, false, &d) != CN_ERR_CORRUPT)
			missed++;
		cn_ec_meta_fini(&d);
	}
	CHECK_EQ_INT(missed, 0);
	/* the record cache's decode skips only the CRC: a flipped CRC byte still decodes to the
	 * same fields there, truncations are still refused */
	b.p[b.len - 1] ^= 1;
	CHECK_EQ_INT(cn_ec_meta_decode(b.p, b.len, false, &d), CN_ERR_CORRUPT);
	cn_ec_meta_fini(&d);
	CHECK_EQ_INT(cn_ec_meta_decode_verified(b.p, b.len, false, &d), CN_OK);
	CHECK(d.size == 5 && !strcmp(d.etag, m.etag) && d.inline_len == 5 &&
	      !memcmp(d.inline_data, "hello", 5));
	cn_ec_meta_fini(&d);
	for (size_t n = 0; n < b.len; n++) {
		if (cn_ec_meta_decode_verified(b.p, n, false, &d) != CN_ERR_CORRUPT)
			missed++;
		cn_ec_meta_fini(&d);
	}
	CHECK_EQ_INT(missed, 0);
	cn_buf_fini(&b);
}

TEST(test_unknown_fields)
{
	cn_ec_meta m, d;
	cn_kv kv[2];
	cn_ec_part pt;
	sample(&m, kv, &pt);
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_ec_meta_encode(&m, &b), CN_OK);
	/* append a field of type 0x0777 before the CRC, growing the body length */
	b.len -= 4;
	const char f[] = { 0x77, 0x07, 3, 0, 0, 0, 'x', 'y', 'z' };
	cn_buf_append(&b, f, sizeof f);
	uint32_t bl = (uint32_t)(b.len - 16);
	for (int i = 0; i < 4; i++)
		b.p[8 + i] = (char)(bl >> (8 * i));
	cn_buf_append(&b, "\0\0\0\0", 4);
	fix_crc(&b);
	CHECK_EQ_INT(cn_ec_meta_decode(b.p, b.len, false, &d), CN_OK);
	CHECK_EQ_INT(d.size, 5);
	cn_ec_meta_fini(&d);
	/* the same field marked critical is refused */
	b.p[b.len - 4 - sizeof f + 1] |= (char)0x80;
	fix_crc(&b);
	CHECK_EQ_INT(cn_ec_meta_decode(b.p, b.len, false, &d), CN_ERR_CORRUPT);
	/* an unknown version is refused */
	b.p[b.len - 4 - sizeof f + 1] &= 0x7f;
	b.p[4] = 2;
	fix_crc(&b);
	CHECK_EQ_INT(cn_ec_meta_decode(b.p, b.len, false, &d), CN_ERR_CORRUPT);
	cn_buf_fini(&b);
	/* inline and data folder are exclusive; one is required */
	sample(&m, kv, &pt);
	strcpy(m.data_id, "%d.x");
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_ec_meta_encode(&m, &b), CN_OK);
	CHECK_EQ_INT(cn_ec_meta_decode(b.p, b.len, false, &d), CN_ERR_CORRUPT);
	cn_buf_fini(&b);
}

int main(void)
{
	RUN(test_crc_check_value);
	RUN(test_roundtrip);
	RUN(test_unknown_fields);
	TEST_END();
}
