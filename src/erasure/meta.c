/* erasure/meta: the per-drive metadata record codec (docs/FORMAT.md §4). A record is a
 * 16-byte header (magic "CNMR", format version, header length, body length), a body of
 * TLV fields (type u16, length u32, value; little-endian) and a CRC32C of everything
 * before it. Unknown field types are skipped unless their critical bit (0x8000) is set, so
 * the format can grow. The decoder reads bytes that may be torn or rotted: every length is
 * checked against the remaining input, every string against its bound, and any violation
 * is CN_ERR_CORRUPT (fuzzed by fuzz/meta_record.c). */
#include "erasure/erasure.h"

#include <isa-l/crc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define REC_MAGIC "CNMR"
#define REC_VERSION 1
#define REC_HDR 16

enum {
	F_SIZE = 1,
	F_MTIME = 2,
	F_ETAG = 3,
	F_CLASS = 4,
	F_META = 5,
	F_ERASURE = 6,
	F_DATA_ID = 7,
	F_PART = 8,
	F_INLINE = 9,
	F_VERSION_ID = 10 | 0x8000, /* critical: an old reader must not confuse versions */
	F_DELETE_MARKER = 11 | 0x8000,
	F_CRITICAL = 0x8000,
};

static uint32_t rec_crc(const void *p, size_t len)
{
	/* CRC32C (Castagnoli) with the usual init and final xor: "123456789" -> 0xe3069283 */
	uint32_t c = 0xffffffffu;
	const unsigned char *b = p;
	while (len > 0) {
		int n = len > (1u << 30) ? (1 << 30) : (int)len;
		c = crc32_iscsi((unsigned char *)b, n, c);
		b += n;
		len -= (size_t)n;
	}
	cn_simd_settle(); /* ISA-L's AVX-512 CRC: keep the XXH3 that follows fast (util.h) */
	return c ^ 0xffffffffu;
}

static void put16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

void cn_ec_meta_init(cn_ec_meta *m)
{
	memset(m, 0, sizeof *m);
}

/* What a partial decode gives (cn_ec_meta_decode_rec_partial), kept with the record by
 * cn_ec_rec_set_ident: ~60 bytes beside a record of hundreds to 160 KiB. */
typedef struct rec_shape {
	int64_t size, mtime_ms;
	uint32_t block_size;
	uint32_t inline_off, inline_len; /* the inline stream's bytes in the record */
	uint8_t k, m, index, ndist;
	uint8_t dist[CN_EC_MAX_DRIVES];
	bool has_inline, delete_marker;
} rec_shape;

struct cn_ec_rec {
	atomic_uint refs;
	_Atomic uint64_t checked; /* inline blocks whose hash matched (cn_ec_rec_block_checked) */
	size_t len;
	unsigned char *p;
	uint64_t ident; /* cn_ec_rec_set_ident, before the record is shared */
	bool has_ident;
	rec_shape shape; /* valid with has_ident */
};

cn_ec_rec *cn_ec_rec_wrap(void *p, size_t len)
{
	cn_ec_rec *r = malloc(sizeof *r);
	if (!r)
		return NULL;
	atomic_init(&r->refs, 1);
	atomic_init(&r->checked, 0);
	r->len = len;
	r->p = p;
	r->ident = 0;
	r->has_ident = false;
	return r;
}

/* Where the F_INLINE field's value lies in a record decoded without error: false when it
 * has none. */
static bool inline_span(const cn_ec_rec *r, uint32_t *off, uint32_t *len)
{
	const unsigned char *p = r->p;
	size_t at = get16(p + 6), end = at + get32(p + 8);
	while (end - at >= 6) {
		uint16_t type = get16(p + at);
		uint32_t flen = get32(p + at + 2);
		at += 6;
		if (flen > end - at)
			return false;
		if (type == F_INLINE) {
			*off = (uint32_t)at;
			*len = flen;
			return true;
		}
		at += flen;
	}
	return false;
}

bool cn_ec_rec_set_ident(cn_ec_rec *r, uint64_t ident, const cn_ec_meta *m)
{
	rec_shape *sh = &r->shape;
	memset(sh, 0, sizeof *sh);
	if (m->has_inline && !inline_span(r, &sh->inline_off, &sh->inline_len))
		return false;
	if (m->has_inline && sh->inline_len != m->inline_len)
		return false;
	sh->size = m->size;
	sh->mtime_ms = m->mtime_ms;
	sh->block_size = m->block_size;
	sh->k = m->k;
	sh->m = m->m;
	sh->index = m->index;
	sh->ndist = m->ndist;
	memcpy(sh->dist, m->dist, sizeof sh->dist);
	sh->has_inline = m->has_inline;
	sh->delete_marker = m->delete_marker;
	r->ident = ident;
	r->has_ident = true;
	return true;
}

bool cn_ec_rec_get_ident(const cn_ec_rec *r, uint64_t *ident)
{
	*ident = r->ident;
	return r->has_ident;
}

cn_ec_rec *cn_ec_rec_ref(cn_ec_rec *r)
{
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
	return r;
}

void cn_ec_rec_unref(cn_ec_rec *r)
{
	if (r && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
		free(r->p);
		free(r);
	}
}

const unsigned char *cn_ec_rec_bytes(const cn_ec_rec *r, size_t *len)
{
	*len = r->len;
	return r->p;
}

bool cn_ec_rec_block_checked(const cn_ec_rec *r, size_t block)
{
	return block < 64 && (atomic_load_explicit(&r->checked, memory_order_relaxed) >> block & 1);
}

void cn_ec_rec_mark_checked(cn_ec_rec *r, size_t block)
{
	if (block < 64)
		atomic_fetch_or_explicit(&r->checked, (uint64_t)1 << block, memory_order_relaxed);
}

void cn_ec_meta_drop_inline(cn_ec_meta *m)
{
	if (m->inline_rec)
		cn_ec_rec_unref(m->inline_rec);
	else
		free(m->inline_data);
	m->inline_rec = NULL;
	m->inline_data = NULL;
}

void cn_ec_meta_fini(cn_ec_meta *m)
{
	cn_kvs_free(m->meta, m->nmeta);
	free(m->parts);
	cn_ec_meta_drop_inline(m);
	cn_ec_meta_init(m);
}

static cn_err field(cn_buf *out, uint16_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	unsigned char h[6];
	if (alen + blen > UINT32_MAX)
		return CN_ERR_TOO_LARGE;
	put16(h, type);
	put32(h + 2, (uint32_t)(alen + blen));
	cn_err e = cn_buf_append(out, h, 6);
	if (!e && alen)
		e = cn_buf_append(out, a, alen);
	if (!e && blen)
		e = cn_buf_append(out, b, blen);
	return e;
}

static cn_err field_i64(cn_buf *out, uint16_t type, int64_t v)
{
	unsigned char b[8];
	put64(b, (uint64_t)v);
	return field(out, type, b, 8, NULL, 0);
}

cn_err cn_ec_meta_encode(const cn_ec_meta *m, cn_buf *out)
{
	size_t start = out->len;
	unsigned char hdr[REC_HDR] = { 0 };
	cn_err e = cn_buf_append(out, hdr, REC_HDR);
	if (!e)
		e = field_i64(out, F_SIZE, m->size);
	if (!e)
		e = field_i64(out, F_MTIME, m->mtime_ms);
	if (!e)
		e = field(out, F_ETAG, m->etag, strnlen(m->etag, sizeof m->etag - 1), NULL, 0);
	if (!e)
		e = field(out, F_CLASS, m->storage_class,
		          strnlen(m->storage_class, sizeof m->storage_class - 1), NULL, 0);
	for (size_t i = 0; i < m->nmeta && !e; i++) {
		size_t nl = strlen(m->meta[i].name), vl = strlen(m->meta[i].value);
		unsigned char *tmp = malloc(8 + nl + vl);
		if (!tmp)
			return CN_ERR_NOMEM;
		put32(tmp, (uint32_t)nl);
		memcpy(tmp + 4, m->meta[i].name, nl);
		put32(tmp + 4 + nl, (uint32_t)vl);
		memcpy(tmp + 8 + nl, m->meta[i].value, vl);
		e = field(out, F_META, tmp, 8 + nl + vl, NULL, 0);
		free(tmp);
	}
	if (!e) {
		unsigned char er[8 + CN_EC_MAX_DRIVES];
		CN_ASSERT(m->ndist <= CN_EC_MAX_DRIVES);
		er[0] = m->k;
		er[1] = m->m;
		put32(er + 2, m->block_size);
		er[6] = m->index;
		er[7] = m->ndist;
		memcpy(er + 8, m->dist, m->ndist);
		e = field(out, F_ERASURE, er, 8u + m->ndist, NULL, 0);
	}
	if (!e && m->data_id[0])
		e = field(out, F_DATA_ID, m->data_id, strlen(m->data_id), NULL, 0);
	for (size_t i = 0; i < m->nparts && !e; i++) {
		unsigned char pb[12];
		put32(pb, m->parts[i].number);
		put64(pb + 4, (uint64_t)m->parts[i].size);
		e = field(out, F_PART, pb, 12, m->parts[i].etag,
		          strnlen(m->parts[i].etag, sizeof m->parts[i].etag - 1));
	}
	if (!e && m->has_inline)
		e = field(out, F_INLINE, m->inline_data, m->inline_len, NULL, 0);
	if (!e && m->version_id[0])
		e = field(out, F_VERSION_ID, m->version_id, strnlen(m->version_id, sizeof m->version_id - 1),
		          NULL, 0);
	if (!e && m->delete_marker)
		e = field(out, F_DELETE_MARKER, NULL, 0, NULL, 0);
	if (!e && out->len - start - REC_HDR > UINT32_MAX)
		e = CN_ERR_TOO_LARGE;
	if (!e)
		e = cn_buf_reserve(out, 4);
	if (e) {
		out->len = start;
		return e;
	}
	unsigned char *h = (unsigned char *)out->p + start;
	memcpy(h, REC_MAGIC, 4);
	put16(h + 4, REC_VERSION);
	put16(h + 6, REC_HDR);
	put32(h + 8, (uint32_t)(out->len - start - REC_HDR));
	put32(h + 12, 0);
	unsigned char crc[4];
	put32(crc, rec_crc(out->p + start, out->len - start));
	return cn_buf_append(out, crc, 4);
}

static bool str_ok(const unsigned char *p, size_t len, size_t cap)
{
	return len < cap && !memchr(p, 0, len);
}

static char *dup_str(const unsigned char *p, size_t len)
{
	char *s = malloc(len + 1);
	if (s) {
		memcpy(s, p, len);
		s[len] = 0;
	}
	return s;
}

/* share: the record p lies in (inline bytes referenced, not copied), or NULL. partial:
 * the meta and part fields are skipped unchecked (a record checked in full before). */
static cn_err decode_body(const unsigned char *p, size_t len, bool skip_inline, cn_ec_rec *share,
                          bool partial, cn_ec_meta *m)
{
	bool have_size = false, have_mtime = false, have_ec = false;
	size_t meta_cap = 0, parts_cap = 0;
	while (len > 0) {
		if (len < 6)
			return CN_ERR_CORRUPT;
		uint16_t type = get16(p);
		uint32_t flen = get32(p + 2);
		p += 6;
		len -= 6;
		if (flen > len)
			return CN_ERR_CORRUPT;
		const unsigned char *v = p;
		p += flen;
		len -= flen;
		if (partial && (type == F_META || type == F_PART))
			continue;
		switch (type) {
		case F_SIZE:
		case F_MTIME: {
			if (flen != 8)
				return CN_ERR_CORRUPT;
			int64_t x = (int64_t)get64(v);
			if (x < 0)
				return CN_ERR_CORRUPT;
			if (type == F_SIZE) {
				m->size = x;
				have_size = true;
			} else {
				m->mtime_ms = x;
				have_mtime = true;
			}
			break;
		}
		case F_ETAG:
			if (!str_ok(v, flen, sizeof m->etag))
				return CN_ERR_CORRUPT;
			memcpy(m->etag, v, flen);
			m->etag[flen] = 0;
			break;
		case F_CLASS:
			if (!str_ok(v, flen, sizeof m->storage_class))
				return CN_ERR_CORRUPT;
			memcpy(m->storage_class, v, flen);
			m->storage_class[flen] = 0;
			break;
		case F_META: {
			if (flen < 8)
				return CN_ERR_CORRUPT;
			uint32_t nl = get32(v);
			if (nl > flen - 8)
				return CN_ERR_CORRUPT;
			uint32_t vl = get32(v + 4 + nl);
			if (vl != flen - 8 - nl || !str_ok(v + 4, nl, 1u << 20) ||
			    !str_ok(v + 8 + nl, vl, 1u << 30))
				return CN_ERR_CORRUPT;
			if (m->nmeta == CN_EC_MAX_META)
				return CN_ERR_CORRUPT;
			if (m->nmeta == meta_cap) {
				size_t nc = meta_cap ? meta_cap * 2 : 8;
				cn_kv *nk = realloc(m->meta, nc * sizeof *nk);
				if (!nk)
					return CN_ERR_NOMEM;
				m->meta = nk;
				meta_cap = nc;
			}
			cn_kv kv = { dup_str(v + 4, nl), dup_str(v + 8 + nl, vl) };
			if (!kv.name || !kv.value) {
				free(kv.name);
				free(kv.value);
				return CN_ERR_NOMEM;
			}
			m->meta[m->nmeta++] = kv;
			break;
		}
		case F_ERASURE:
			if (flen < 8 || v[7] > CN_EC_MAX_DRIVES || flen != 8u + v[7])
				return CN_ERR_CORRUPT;
			m->k = v[0];
			m->m = v[1];
			m->block_size = get32(v + 2);
			m->index = v[6];
			m->ndist = v[7];
			memcpy(m->dist, v + 8, m->ndist);
			if (m->k < 1 || m->k + m->m > CN_EC_MAX_DRIVES || m->ndist != m->k + m->m ||
			    m->index >= m->ndist || m->block_size == 0)
				return CN_ERR_CORRUPT;
			for (size_t i = 0; i < m->ndist; i++)
				if (m->dist[i] >= m->ndist)
					return CN_ERR_CORRUPT;
			have_ec = true;
			break;
		case F_DATA_ID:
			if (flen == 0 || !str_ok(v, flen, sizeof m->data_id) || memchr(v, '/', flen) ||
			    v[0] == '.')
				return CN_ERR_CORRUPT;
			memcpy(m->data_id, v, flen);
			m->data_id[flen] = 0;
			break;
		case F_PART: {
			if (flen < 12 || !str_ok(v + 12, flen - 12, sizeof m->parts[0].etag))
				return CN_ERR_CORRUPT;
			if (m->nparts == CN_EC_MAX_PARTS)
				return CN_ERR_CORRUPT;
			if (m->nparts == parts_cap) {
				size_t nc = parts_cap ? parts_cap * 2 : 4;
				cn_ec_part *np = realloc(m->parts, nc * sizeof *np);
				if (!np)
					return CN_ERR_NOMEM;
				m->parts = np;
				parts_cap = nc;
			}
			cn_ec_part *pt = &m->parts[m->nparts++];
			pt->number = get32(v);
			pt->size = (int64_t)get64(v + 4);
			if (pt->size < 0)
				return CN_ERR_CORRUPT;
			memcpy(pt->etag, v + 12, flen - 12);
			pt->etag[flen - 12] = 0;
			break;
		}
		case F_INLINE:
			if (flen > CN_EC_INLINE_CAP || m->has_inline)
				return CN_ERR_CORRUPT;
			m->has_inline = true;
			m->inline_len = flen;
			if (!skip_inline && share) {
				m->inline_data = (unsigned char *)v; /* read-only: the record is shared */
				m->inline_rec = cn_ec_rec_ref(share);
			} else if (!skip_inline) {
				m->inline_data = malloc(flen ? flen : 1);
				if (!m->inline_data)
					return CN_ERR_NOMEM;
				memcpy(m->inline_data, v, flen);
			}
			break;
		case F_VERSION_ID:
			if (flen == 0 || !str_ok(v, flen, sizeof m->version_id) || memchr(v, '/', flen) ||
			    v[0] == '.')
				return CN_ERR_CORRUPT;
			memcpy(m->version_id, v, flen);
			m->version_id[flen] = 0;
			break;
		case F_DELETE_MARKER:
			if (flen != 0)
				return CN_ERR_CORRUPT;
			m->delete_marker = true;
			break;
		default:
			if (type & F_CRITICAL)
				return CN_ERR_CORRUPT; /* a field we must understand but do not */
			break;
		}
	}
	if (!have_size || !have_mtime || !have_ec)
		return CN_ERR_CORRUPT;
	if (m->has_inline == (m->data_id[0] != 0))
		return CN_ERR_CORRUPT; /* exactly one home for the data */
	if (m->has_inline && m->k == 1 && m->m == 0 && m->inline_len != (uint64_t)m->size)
		return CN_ERR_CORRUPT;
	return CN_OK;
}

static cn_err decode(const void *vp, size_t len, bool skip_inline, bool check_crc,
                     cn_ec_rec *share, bool partial, cn_ec_meta *m)
{
	const unsigned char *p = vp;
	cn_ec_meta_init(m);
	if (len < REC_HDR + 4 || len > CN_EC_RECORD_MAX || memcmp(p, REC_MAGIC, 4))
		return CN_ERR_CORRUPT;
	uint16_t ver = get16(p + 4), hlen = get16(p + 6);
	uint32_t blen = get32(p + 8);
	if (ver != REC_VERSION || hlen < REC_HDR || hlen > len - 4 || blen != len - 4 - hlen)
		return CN_ERR_CORRUPT;
	if (check_crc && rec_crc(p, len - 4) != get32(p + len - 4))
		return CN_ERR_CORRUPT;
	cn_err e = decode_body(p + hlen, blen, skip_inline, share, partial, m);
	if (e) {
		cn_ec_meta_fini(m);
		return e == CN_ERR_NOMEM ? e : CN_ERR_CORRUPT;
	}
	m->partial = partial;
	return CN_OK;
}

cn_err cn_ec_meta_decode(const void *p, size_t len, bool skip_inline, cn_ec_meta *m)
{
	return decode(p, len, skip_inline, true, NULL, false, m);
}

cn_err cn_ec_meta_decode_verified(const void *p, size_t len, bool skip_inline, cn_ec_meta *m)
{
	return decode(p, len, skip_inline, false, NULL, false, m);
}

cn_err cn_ec_meta_decode_rec(cn_ec_rec *r, bool skip_inline, bool verified, cn_ec_meta *m)
{
	return decode(r->p, r->len, skip_inline, !verified, r, false, m);
}

cn_err cn_ec_meta_decode_rec_partial(cn_ec_rec *r, bool skip_inline, cn_ec_meta *m)
{
	cn_ec_meta_init(m);
	if (!r->has_ident)
		return CN_ERR_INVALID;
	/* from the shape kept when the record was decoded in full: its bytes are not read
	 * (but for the inline stream, by whoever sends it) */
	const rec_shape *sh = &r->shape;
	m->size = sh->size;
	m->mtime_ms = sh->mtime_ms;
	m->block_size = sh->block_size;
	m->k = sh->k;
	m->m = sh->m;
	m->index = sh->index;
	m->ndist = sh->ndist;
	memcpy(m->dist, sh->dist, sizeof m->dist);
	m->delete_marker = sh->delete_marker;
	m->has_inline = sh->has_inline;
	if (sh->has_inline) {
		m->inline_len = sh->inline_len;
		if (!skip_inline) {
			m->inline_data = r->p + sh->inline_off; /* read-only: the record is shared */
			m->inline_rec = cn_ec_rec_ref(r);
		}
	}
	m->partial = true;
	return CN_OK;
}
