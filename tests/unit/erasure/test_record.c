/* Unit tests of the metadata record codec (src/erasure/meta.c, docs/FORMAT.md §4): round
 * trip of every field, every single-bit flip and every truncation detected as corrupt,
 * unknown fields skipped unless critical, CRC32C matching the standard check value; the
 * partial decode from what cn_ec_rec_set_ident kept. */
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

/* cn_ec_rec_set_ident keeps what a partial decode gives; the partial decode then reads
 * none of the record's bytes and matches a full decode field by field. */
static cn_ec_rec *rec_of(const cn_buf *b)
{
	void *p = malloc(b->len);
	CN_ASSERT(p);
	memcpy(p, b->p, b->len);
	cn_ec_rec *r = cn_ec_rec_wrap(p, b->len);
	CN_ASSERT(r);
	return r;
}

static bool same_partial(const cn_ec_meta *f, const cn_ec_meta *p, const cn_ec_rec *r,
                         bool skip_inline)
{
	size_t rlen;
	const unsigned char *rp = cn_ec_rec_bytes(r, &rlen);
	bool ok = p->partial && p->size == f->size && p->mtime_ms == f->mtime_ms &&
	          p->block_size == f->block_size && p->k == f->k && p->m == f->m &&
	          p->index == f->index && p->ndist == f->ndist &&
	          !memcmp(p->dist, f->dist, sizeof p->dist) && p->delete_marker == f->delete_marker &&
	          p->has_inline == f->has_inline && p->inline_len == f->inline_len &&
	          !p->meta && !p->nmeta && !p->parts && !p->nparts && !p->etag[0] &&
	          !p->storage_class[0] && !p->data_id[0] && !p->version_id[0];
	if (!ok || !f->has_inline)
		return ok && !p->inline_data && !p->inline_rec;
	if (skip_inline)
		return !p->inline_data && !p->inline_rec;
	return p->inline_rec == r && p->inline_data >= rp && p->inline_data + p->inline_len <= rp + rlen &&
	       !memcmp(p->inline_data, f->inline_data, f->inline_len);
}

TEST(test_partial_from_shape)
{
	cn_ec_meta ms[3];
	cn_kv kv[2];
	cn_ec_part pt;
	sample(&ms[0], kv, &pt); /* inline, user metadata, a part */
	cn_ec_meta_init(&ms[1]);  /* shards in a data folder, 2+2 rotated */
	ms[1].size = 3 << 20;
	ms[1].mtime_ms = 1700000000999;
	strcpy(ms[1].etag, "abc-3");
	strcpy(ms[1].storage_class, "REDUCED_REDUNDANCY");
	ms[1].k = 2;
	ms[1].m = 2;
	ms[1].block_size = 1 << 20;
	ms[1].index = 3;
	ms[1].ndist = 4;
	memcpy(ms[1].dist, (uint8_t[]){ 2, 3, 0, 1 }, 4);
	strcpy(ms[1].data_id, "%d.0123456789abcdef");
	strcpy(ms[1].version_id, "v1");
	cn_ec_meta_init(&ms[2]); /* a delete marker: empty inline, a version */
	ms[2].mtime_ms = 7;
	ms[2].k = 1;
	ms[2].block_size = 1 << 20;
	ms[2].ndist = 1;
	ms[2].has_inline = true;
	ms[2].inline_data = (unsigned char *)"";
	ms[2].delete_marker = true;
	strcpy(ms[2].version_id, "dm");
	cn_buf bufs[3];
	for (int i = 0; i < 3; i++) {
		cn_buf_init(&bufs[i]);
		CHECK_EQ_INT(cn_ec_meta_encode(&ms[i], &bufs[i]), CN_OK);
	}
	for (int i = 0; i < 3; i++)
		for (int skip_at_set = 0; skip_at_set < 2; skip_at_set++) {
			cn_ec_rec *r = rec_of(&bufs[i]);
			cn_ec_meta f, set_from, p;
			uint64_t id = 0;
			CHECK_EQ_INT(cn_ec_meta_decode_rec_partial(r, false, &p), CN_ERR_INVALID);
			CHECK(!cn_ec_rec_get_ident(r, &id));
			CHECK_EQ_INT(cn_ec_meta_decode_rec(r, false, false, &f), CN_OK);
			/* the shape may be taken from a decode that left the inline stream out */
			CHECK_EQ_INT(cn_ec_meta_decode_rec(r, skip_at_set, false, &set_from), CN_OK);
			CHECK(cn_ec_rec_set_ident(r, 42 + (uint64_t)i, &set_from));
			CHECK(cn_ec_rec_get_ident(r, &id) && id == 42 + (uint64_t)i);
			/* no byte but the inline stream's is read: spoil the rest */
			size_t rlen;
			unsigned char *rp = (unsigned char *)cn_ec_rec_bytes(r, &rlen);
			unsigned char keep[4096];
			CN_ASSERT(rlen <= sizeof keep);
			memcpy(keep, rp, rlen);
			for (size_t j = 0; j < rlen; j++)
				if (!f.has_inline || rp + j < f.inline_data || rp + j >= f.inline_data + f.inline_len)
					rp[j] = 0xA5;
			for (int skip = 0; skip < 2; skip++) {
				CHECK_EQ_INT(cn_ec_meta_decode_rec_partial(r, skip, &p), CN_OK);
				CHECK(same_partial(&f, &p, r, skip));
				cn_ec_meta_fini(&p);
			}
			memcpy(rp, keep, rlen);
			cn_ec_meta_fini(&f);
			cn_ec_meta_fini(&set_from);
			cn_ec_rec_unref(r);
		}
	/* a meta that is not the record's: nothing kept */
	cn_ec_rec *r = rec_of(&bufs[1]);
	CHECK(!cn_ec_rec_set_ident(r, 1, &ms[0])); /* has_inline, the record has no stream */
	uint64_t id;
	CHECK(!cn_ec_rec_get_ident(r, &id));
	cn_ec_rec_unref(r);
	r = rec_of(&bufs[0]);
	ms[0].inline_len = 4; /* a stream of another length */
	CHECK(!cn_ec_rec_set_ident(r, 1, &ms[0]));
	cn_ec_rec_unref(r);
	for (int i = 0; i < 3; i++)
		cn_buf_fini(&bufs[i]);
}

int main(void)
{
	RUN(test_crc_check_value);
	RUN(test_roundtrip);
	RUN(test_unknown_fields);
	RUN(test_partial_from_shape);
	TEST_END();
}
