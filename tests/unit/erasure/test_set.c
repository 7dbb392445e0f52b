/* Unit tests of coded erasure sets (erasure.h over local drives): for 2..16 drives and
 * every parity 1..n/2, objects of sizes around the inline and block boundaries written,
 * read back byte-exact with up to M drives' data gone or corrupt (and failing cleanly with
 * more), ranges across blocks, multipart-shaped versions, and healing that restores every
 * damaged drive's shards (checked by reading with the OTHER drives gone). */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"
#include "test.h"

#include <dlfcn.h>
#include <errno.h>
#include <isa-l/erasure_code.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static char base[64];
static int64_t put_mtime = 1000; /* the mtime put() gives its records */
static int put_fill = -1; /* put(): 1 every write through cn_ec_writer_space/fill, 0 none,
                           * -1 every other put() */
static unsigned put_count;

static unsigned char *pattern(size_t len, unsigned seed)
{
	unsigned char *p = malloc(len ? len : 1);
	uint32_t x = seed * 2654435761u + 7;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
	return p;
}

/* Empties (fresh) or removes the test folder. */
static void reset(bool fresh)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, fresh ? "rm -rf %s && mkdir -p %s" : "rm -rf %s", base, base);
	CN_ASSERT(system(cmd) == 0);
}

static cn_ec_set *open_set(size_t n, unsigned m)
{
	cn_drive *d[16];
	for (size_t i = 0; i < n; i++) {
		char path[128];
		snprintf(path, sizeof path, "%s/d%zu", base, i);
		CN_ASSERT(cn_drive_local_open(path, false, &d[i]) == CN_OK);
	}
	cn_ec_set *s = NULL;
	cn_err e = cn_ec_set_new(d, n, m, m, &s);
	CN_ASSERT(e == CN_OK);
	return s;
}

/* open_set without a record cache (the tests change records behind the set's back), with
 * the bucket "bkt" made. */
static cn_ec_set *open_uncached(size_t n, unsigned m)
{
	cn_ec_set *s = open_set(n, m);
	CN_ASSERT(cn_ec_set_cache(s, 0) == CN_OK);
	CN_ASSERT(cn_ec_make_vol(s, "bkt") == CN_OK);
	return s;
}

static cn_err put(cn_ec_set *s, const char *key, const unsigned char *p, size_t len, bool inl)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	m.size = (int64_t)len;
	m.mtime_ms = put_mtime;
	snprintf(m.etag, sizeof m.etag, "e%zu", len);
	snprintf(m.storage_class, sizeof m.storage_class, "STANDARD");
	cn_err e;
	if (inl) {
		m.has_inline = true;
		m.inline_data = (unsigned char *)p;
		m.inline_len = len;
		e = cn_ec_commit_inline(s, "bkt", key, &m);
		m.inline_data = NULL;
	} else {
		cn_ec_writer *w;
		e = cn_ec_writer_new(s, "bkt", key, NULL, &w);
		bool fill = put_fill < 0 ? put_count++ % 2 == 1 : put_fill == 1;
		/* uneven writes; with fill, pieces placed straight into the writer's block,
		 * mixed with a few plain writes */
		for (size_t off = 0, i = 0; !e && off < len; i++) {
			size_t n = len - off < 300001 ? len - off : 300001;
			unsigned char *at;
			size_t space = fill && i % 4 != 3 ? cn_ec_writer_space(w, &at) : 0;
			if (space) {
				CHECK(space <= CN_EC_BLOCK_SIZE);
				if (n > space)
					n = space;
				memcpy(at, p + off, n);
				e = cn_ec_writer_fill(w, n);
			} else {
				e = cn_ec_writer_write(w, p + off, n);
			}
			off += n;
		}
		if (!e)
			e = cn_ec_writer_commit(w, "bkt", key, &m);
		cn_ec_writer_abort(w);
	}
	cn_ec_meta_fini(&m);
	return e;
}

/* Reads [off, off+len) and compares; returns the read's error. */
static cn_err check(cn_ec_set *s, const char *key, const unsigned char *want, int64_t off, size_t len,
                    bool *degraded)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *r;
	cn_err e = cn_ec_open(s, "bkt", key, &m, &r);
	if (e)
		return e;
	unsigned char *buf = malloc(len ? len : 1);
	size_t got = 0;
	e = cn_ec_reader_read(r, off, buf, len, &got);
	if (!e && (got != len || memcmp(buf, want + off, len)))
		e = CN_ERR_CORRUPT;
	/* the same bytes through the zero-copy views (coded or inline: never empty before the
	 * end; they end at data shard boundaries), asking for odd amounts */
	for (size_t at = 0, ask = 1; !e && at < len; ask = ask * 3 + 7) {
		const void *p;
		size_t n;
		e = cn_ec_reader_view(r, off + (int64_t)at, ask < len - at ? ask : len - at, &p, &n);
		if (!e && !p)
			break; /* a plain file: cn_ec_reader_read only */
		if (!e && (n == 0 || n > ask || memcmp(p, want + off + at, n)))
			e = CN_ERR_CORRUPT;
		at += n;
	}
	/* and several views at once (one block's shards), checked after the call: every piece
	 * of one call stays valid until the next */
	for (size_t at = 0, ask = 5; !e && at < len; ask = ask * 5 + 11) {
		struct iovec iov[3];
		int niov;
		size_t n, sum = 0;
		e = cn_ec_reader_viewv(r, off + (int64_t)at, ask < len - at ? ask : len - at, iov, 3,
		                       &niov, &n);
		if (!e && !niov)
			break; /* a plain file */
		for (int k = 0; !e && k < niov; k++) {
			if (iov[k].iov_len == 0 || memcmp(iov[k].iov_base, want + off + at + sum, iov[k].iov_len))
				e = CN_ERR_CORRUPT;
			sum += iov[k].iov_len;
		}
		if (!e && (n == 0 || n != sum || n > ask))
			e = CN_ERR_CORRUPT;
		at += n;
	}
	if (degraded)
		*degraded = cn_ec_reader_degraded(r);
	free(buf);
	cn_ec_reader_close(r);
	cn_ec_meta_fini(&m);
	return e;
}

/* Removes drive i's copy of key (its record and folder) or corrupts one byte of its
 * shard file. Keys here have no '/': the record is bkt/%m.<key> (FORMAT.md §3). */
static void damage(size_t i, const char *key, bool corrupt)
{
	char path[256], rec[256], cmd[1200];
	snprintf(path, sizeof path, "%s/d%zu/bkt/%s", base, i, key);
	snprintf(rec, sizeof rec, "%s/d%zu/bkt/%%m.%s", base, i, key);
	if (!corrupt) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", path, rec);
	} else {
		/* flip a byte in the middle of the first shard file, or of the record when inline */
		snprintf(cmd, sizeof cmd,
		         "f=$(find '%s' -name part.1 2>/dev/null | head -1); [ -n \"$f\" ] || f='%s'; "
		         "sz=$(stat -c %%s \"$f\"); off=$((sz / 2)); "
		         "printf '\\xAA' | dd of=\"$f\" bs=1 seek=$off conv=notrunc status=none",
		         path, rec);
	}
	CN_ASSERT(system(cmd) == 0);
}

/* The bytes of drive i's shard file of key (one version) into out; false if none. */
static bool shard_file(const char *root, size_t i, const char *key, cn_buf *out)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cat \"$(find '%s/d%zu/bkt/%s' -name part.1 | head -1)\" 2>/dev/null",
	         root, i, key);
	FILE *f = popen(cmd, "r");
	CN_ASSERT(f);
	out->len = 0;
	unsigned char tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
		CN_ASSERT(cn_buf_append(out, tmp, n) == CN_OK);
	return pclose(f) == 0 && out->len > 0;
}

/* Drive d's shard file for p[0..len) as codec.h defines it, built block by block with
 * cn_codec_encode (which copies each block into its own shard buffers): per block, the
 * hash then the bytes of shard dist[d]. */
static void expected_shard_file(size_t n, unsigned m, const char *key, const unsigned char *p,
                                size_t len, size_t d, cn_buf *out)
{
	cn_codec *c;
	CN_ASSERT(cn_codec_new((unsigned)n - m, m, &c) == CN_OK);
	uint8_t dist[CN_EC_MAX_DRIVES];
	cn_codec_dist("bkt", key, strlen(key), (unsigned)n, dist);
	size_t full = cn_codec_shard_len(c, CN_EC_BLOCK_SIZE);
	unsigned char *buf = malloc(n * full), *ptr[CN_EC_MAX_DRIVES];
	unsigned char hashes[CN_EC_MAX_DRIVES][CN_CODEC_HASH_LEN];
	CN_ASSERT(buf);
	out->len = 0;
	for (size_t off = 0; off < len; off += CN_EC_BLOCK_SIZE) {
		size_t bl = len - off < CN_EC_BLOCK_SIZE ? len - off : CN_EC_BLOCK_SIZE;
		for (size_t j = 0; j < n; j++)
			ptr[j] = buf + j * full;
		CN_ASSERT(cn_codec_encode(c, p + off, bl, ptr, hashes) == CN_OK);
		CN_ASSERT(cn_buf_append(out, hashes[dist[d]], CN_CODEC_HASH_LEN) == CN_OK);
		CN_ASSERT(cn_buf_append(out, ptr[dist[d]], cn_codec_shard_len(c, bl)) == CN_OK);
	}
	free(buf);
	cn_codec_free(c);
}

/* EC-14: the writer encodes each block in place and writes every drive the shard file the
 * codec defines (checked against expected_shard_file), whether the bytes came through
 * cn_ec_writer_write or were placed straight into the writer's block
 * (cn_ec_writer_space/fill, in pieces that straddle blocks, mixed with plain writes); for
 * sets whose k shards of a full block are longer than the block (16 drives EC:4, k = 12)
 * or not, and tails of every kind (padding of the last data shard included). */
TEST(test_writer_shard_files_match_the_codec)
{
	const size_t lens[] = { 200 * 1024, MiB, MiB + 1, 2 * MiB + 11, 3 * MiB + 5 };
	unsigned char *p = pattern(3 * MiB + 5, 7);
	const size_t ns[] = { 4, 6, 16 };
	const unsigned ms[] = { 2, 1, 4 };
	char root[64];
	snprintf(root, sizeof root, "%s", base);
	cn_buf a, b, want;
	cn_buf_init(&a);
	cn_buf_init(&b);
	cn_buf_init(&want);
	for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
		reset(true);
		cn_ec_set *sets[2];
		for (int v = 0; v < 2; v++) {
			snprintf(base, sizeof base, "%.60s/%c", root, 'a' + v);
			CN_ASSERT(mkdir(base, 0755) == 0);
			sets[v] = open_set(ns[t], ms[t]);
			CHECK_EQ_INT(cn_ec_make_vol(sets[v], "bkt"), CN_OK);
		}
		for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
			char key[32];
			snprintf(key, sizeof key, "k%zu", li);
			for (int v = 0; v < 2; v++) {
				put_fill = v;
				snprintf(base, sizeof base, "%.60s/%c", root, 'a' + v);
				CHECK_EQ_INT(put(sets[v], key, p, lens[li], false), CN_OK);
				CHECK_EQ_INT(check(sets[v], key, p, 0, lens[li], NULL), CN_OK);
			}
			for (size_t i = 0; i < ns[t]; i++) {
				char ra[80], rb[80];
				snprintf(ra, sizeof ra, "%s/a", root);
				snprintf(rb, sizeof rb, "%s/b", root);
				expected_shard_file(ns[t], ms[t], key, p, lens[li], i, &want);
				CHECK(shard_file(ra, i, key, &a));
				CHECK(shard_file(rb, i, key, &b));
				CHECK_EQ_INT((long)a.len, (long)want.len);
				CHECK_EQ_INT((long)b.len, (long)want.len);
				CHECK(a.len == want.len && memcmp(a.p, want.p, a.len) == 0);
				CHECK(b.len == want.len && memcmp(b.p, want.p, b.len) == 0);
			}
		}
		/* committed writes leave nothing in any drive's tmp */
		char cmd[200];
		snprintf(cmd, sizeof cmd, "test -z \"$(find %s/?/d*/.cairn.sys/tmp -mindepth 2)\"", root);
		CHECK(system(cmd) == 0);
		for (int v = 0; v < 2; v++)
			cn_ec_set_free(sets[v]);
		snprintf(base, sizeof base, "%s", root);
	}
	put_fill = -1;
	cn_buf_fini(&a);
	cn_buf_fini(&b);
	cn_buf_fini(&want);
	free(p);
}

static const size_t sizes[] = { 0, 1, 128 * 1024 - 1, 128 * 1024 + 1, MiB - 1, MiB, MiB + 1,
                                3 * MiB + 5 };

TEST(test_roundtrip_all_shapes)
{
	unsigned char *p = pattern(3 * MiB + 5, 1);
	size_t ns[] = { 2, 3, 4, 5, 6, 8, 12, 16 };
	for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
		size_t n = ns[ni];
		for (unsigned m = 1; m <= n / 2; m++) {
			if (n >= 8 && m != 1 && m != 2 && m != n / 2)
				continue; /* bounded run time: every parity for small sets, the edges for big */
			reset(true);
			/* half the shapes read through the record cache: its hits cannot see damage
			 * made behind the server's back (erasure_int.h), so only the uncached reads
			 * must report it; every read must return the right bytes */
			bool cached = (n + m) % 2 == 0;
			cn_ec_set *s = open_set(n, m);
			if (!cached)
				CHECK_EQ_INT(cn_ec_set_cache(s, 0), CN_OK);
			CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
			for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
				size_t len = sizes[si];
				char key[64];
				snprintf(key, sizeof key, "o%zu", si);
				bool inl = len <= 128 * 1024;
				CHECK_EQ_INT(put(s, key, p, len, inl), CN_OK);
				CHECK_EQ_INT(check(s, key, p, 0, len, NULL), CN_OK);
			}
			/* M drives' copies gone: everything still reads; an uncached read that met a
			 * damaged data slot says it is degraded (EC-7: parity slots are not read when
			 * the data slots agree), and heal, which reads every slot and never the
			 * cache, finds all M */
			for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
				char key[64];
				snprintf(key, sizeof key, "o%zu", si);
				if (n >= 8 && si % 2 == 1)
					continue; /* bounded run time */
				uint8_t dist[CN_EC_MAX_DRIVES];
				cn_codec_dist("bkt", key, strlen(key), (unsigned)n, dist);
				bool data_hit = false;
				for (unsigned g = 0; g < m; g++) {
					damage((si + g) % n, key, g % 2 == 1);
					data_hit |= dist[(si + g) % n] < n - m;
				}
				bool deg = false;
				CHECK_EQ_INT(check(s, key, p, 0, sizes[si], &deg), CN_OK);
				CHECK(cached || deg == data_hit);
				cn_ec_heal_result hr;
				CHECK_EQ_INT(cn_ec_heal(s, "bkt", key, NULL, true, &hr), CN_OK);
				CHECK_EQ_INT(hr.drives_bad, m);
			}
			cn_ec_set_free(s);
		}
	}
	free(p);
}

/* EC-7: the open reads only the data slots' records; when their shard files then fail, the
 * reader reads the parity slots' records and rebuilds from them. */
TEST(test_early_open_falls_back_to_parity)
{
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	size_t len = 3 * MiB + 11;
	unsigned char *p = pattern(len, 5);
	CHECK_EQ_INT(put(s, "f", p, len, false), CN_OK);
	uint8_t dist[CN_EC_MAX_DRIVES];
	cn_codec_dist("bkt", "f", 1, 4, dist);
	for (size_t d = 0; d < 4; d++)
		if (dist[d] < 2)
			damage(d, "f", true); /* data shards rotten, their records intact */
	bool deg = false;
	CHECK_EQ_INT(check(s, "f", p, 0, len, &deg), CN_OK);
	CHECK(deg);
	CHECK_EQ_INT(check(s, "f", p, MiB - 3, MiB + 9, NULL), CN_OK);
	cn_ec_set_free(s);
	free(p);
}

/* ---- EC-4's observation: shard reads per slot and decodes ---- */
/* This binary's ec_encode_data takes the place of ISA-L's for the codec (an executable's
 * definition wins at link time) and counts the calls: encodes and decodes alike. */
static int rs_calls;
void ec_encode_data(int len, int k, int rows, unsigned char *gftbls, unsigned char **data,
                    unsigned char **coding)
{
	static void (*real)(int, int, int, unsigned char *, unsigned char **, unsigned char **);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "ec_encode_data");
	rs_calls++;
	real(len, k, rows, gftbls, data, coding);
}

/* Drives whose ops are local's with open_data, rfile_read and rfile_close wrapped: every
 * rfile_read is counted for the drive that opened the file. Single-threaded use. */
static cn_drive_ops counted_ops;
static const cn_drive_ops *local_ops;
static cn_drive *counted[CN_EC_MAX_DRIVES];
static size_t ncounted;
static int reads_of[CN_EC_MAX_DRIVES];
static struct { cn_drive_rfile *f; size_t slot; } open_files[256];

static cn_err counted_open_data(cn_drive *d, const char *vol, const char *key,
                                const char *data_id, const char *name, cn_drive_rfile **out)
{
	cn_err e = local_ops->open_data(d, vol, key, data_id, name, out);
	for (size_t i = 0; !e && i < ncounted; i++)
		if (counted[i] == d)
			for (size_t j = 0; j < 256; j++)
				if (!open_files[j].f) {
					open_files[j].f = *out;
					open_files[j].slot = i;
					break;
				}
	return e;
}

static cn_err counted_rfile_read(cn_drive_rfile *f, int64_t off, void *buf, size_t len,
                                 size_t *got)
{
	for (size_t j = 0; j < 256; j++)
		if (open_files[j].f == f)
			reads_of[open_files[j].slot]++;
	return local_ops->rfile_read(f, off, buf, len, got);
}

static void counted_rfile_close(cn_drive_rfile *f)
{
	for (size_t j = 0; j < 256; j++)
		if (open_files[j].f == f)
			open_files[j].f = NULL;
	local_ops->rfile_close(f);
}

static cn_ec_set *open_counted(size_t n, unsigned m)
{
	cn_ec_set *s = open_set(n, m);
	for (size_t i = 0; i < n; i++) {
		cn_drive *d = D(s, i);
		local_ops = d->ops;
		counted_ops = *local_ops;
		counted_ops.open_data = counted_open_data;
		counted_ops.rfile_read = counted_rfile_read;
		counted_ops.rfile_close = counted_rfile_close;
		d->ops = &counted_ops;
		counted[i] = d;
	}
	ncounted = n;
	CN_ASSERT(cn_ec_make_vol(s, "bkt") == CN_OK);
	return s;
}

/* Whether shard files were read on every data slot (dist[d] < k) and on no parity slot. */
static bool only_data_slots_read(const uint8_t *dist, size_t n, unsigned k)
{
	for (size_t d = 0; d < n; d++)
		if (dist[d] < k ? reads_of[d] == 0 : reads_of[d] != 0) {
			fprintf(stderr, "slot %zu (shard %u): %d reads\n", d, dist[d], reads_of[d]);
			return false;
		}
	return true;
}

/* read.c EC-4: a healthy read touches only the K data shards, with no decode: over 6 drives
 * with parity 2, reading a 3-block object whole and in a range, opened as a GET opens it and
 * with every slot's record read, reads shard files of the 4 data slots only and runs no
 * ISA-L call; with a data shard rotten the same read reads
 * parity and decodes (the observation sees both). */
TEST(test_healthy_read_touches_only_data_shards)
{
	reset(true);
	cn_ec_set *s = open_counted(6, 2);
	size_t len = 2 * CN_EC_BLOCK_SIZE + 12345;
	unsigned char *p = pattern(len, 9);
	CHECK_EQ_INT(put(s, "h", p, len, false), CN_OK);
	uint8_t dist[CN_EC_MAX_DRIVES];
	cn_codec_dist("bkt", "h", 1, 6, dist);
	memset(reads_of, 0, sizeof reads_of);
	rs_calls = 0;
	bool deg = true;
	CHECK_EQ_INT(check(s, "h", p, 0, len, &deg), CN_OK);
	CHECK(!deg);
	CHECK_EQ_INT(check(s, "h", p, CN_EC_BLOCK_SIZE - 7, 100, NULL), CN_OK);
	CHECK_EQ_INT(rs_calls, 0);
	CHECK(only_data_slots_read(dist, 6, 4));
	/* the same with every slot's record read (heal's full open: parity slots known too),
	 * so only load_block's choice keeps parity away */
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *r = NULL;
	CHECK_EQ_INT(cn_ec__open_version(s, "bkt", "h", NULL, true, &m, &r), CN_OK);
	memset(reads_of, 0, sizeof reads_of);
	unsigned char *buf = malloc(len);
	size_t got = 0;
	if (r) {
		CHECK_EQ_INT(cn_ec_reader_read(r, 0, buf, len, &got), CN_OK);
		CHECK(got == len && !memcmp(buf, p, len));
		CHECK(!cn_ec_reader_degraded(r));
		cn_ec_reader_close(r);
	}
	free(buf);
	cn_ec_meta_fini(&m);
	CHECK_EQ_INT(rs_calls, 0);
	CHECK(only_data_slots_read(dist, 6, 4));
	for (size_t d = 0; d < 6; d++)
		if (dist[d] == 0)
			damage(d, "h", true);
	memset(reads_of, 0, sizeof reads_of);
	CHECK_EQ_INT(check(s, "h", p, 0, len, &deg), CN_OK);
	CHECK(deg);
	CHECK(rs_calls > 0);
	int parity_reads = 0;
	for (size_t d = 0; d < 6; d++)
		if (dist[d] >= 4)
			parity_reads += reads_of[d];
	CHECK(parity_reads > 0);
	cn_ec_set_free(s);
	ncounted = 0;
	free(p);
}

TEST(test_ranges_and_quorum)
{
	reset(true);
	cn_ec_set *s = open_set(6, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	size_t len = 5 * MiB + 123;
	unsigned char *p = pattern(len, 9);
	CHECK_EQ_INT(put(s, "big", p, len, false), CN_OK);
	int64_t offs[] = { 0, MiB - 10, 2 * MiB - 1, 4 * MiB + 7, (int64_t)len - 5 };
	for (size_t i = 0; i < 5; i++) {
		size_t l = (size_t)((int64_t)len - offs[i] < 20 + MiB ? (int64_t)len - offs[i] : 20 + MiB);
		CHECK_EQ_INT(check(s, "big", p, offs[i], l, NULL), CN_OK);
	}
	damage(0, "big", false);
	damage(3, "big", true);
	for (size_t i = 0; i < 5; i++) {
		size_t l = (size_t)((int64_t)len - offs[i] < 20 + MiB ? (int64_t)len - offs[i] : 20 + MiB);
		CHECK_EQ_INT(check(s, "big", p, offs[i], l, NULL), CN_OK);
	}
	/* M+1 drives gone: a clean error, no wrong bytes */
	damage(1, "big", false);
	cn_err e = check(s, "big", p, 0, len, NULL);
	CHECK(e == CN_ERR_QUORUM || e == CN_ERR_NO_KEY);
	/* one drive of K missing entirely (NULL slot): writes still reach quorum */
	cn_ec_set_refuse(s, 5);
	CHECK_EQ_INT(put(s, "k2", p, MiB + 3, false), CN_OK);
	CHECK_EQ_INT(check(s, "k2", p, 0, MiB + 3, NULL), CN_OK);
	cn_ec_set_free(s);
	free(p);
}

/* EC-2: a "not there" answer counts only from a drive that is there. A drive whose folder
 * was removed holds no vol, so it never answers "no such key" (drive.h), and its "no such
 * bucket" is asked whether the drive is there: with more than M folders gone, a missing
 * key, a missing bucket and a present key all end in a quorum error, never in a 404 (the
 * drives left saying "not here" cannot know: the key may be on the ones gone). */
static void rm_drive(size_t i)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s/d%zu", base, i);
	CN_ASSERT(system(cmd) == 0);
}

static cn_err read_current(cn_ec_set *s, const char *vol, const char *key)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_err e = cn_ec_read_meta(s, vol, key, true, &m);
	cn_ec_meta_fini(&m);
	return e;
}

/* What the set answers for key (present, or never read when more than M are gone), a
 * key never written (also below a prefix never made), a key of a bucket never made, and
 * the two buckets' stat_vol; false on any difference (the CHECK lines above say which). */
static bool answers(cn_ec_set *s, const char *key, cn_err present, cn_err missing,
                    cn_err no_bucket, cn_err vol, cn_err no_vol)
{
	int bad = t_failed_checks;
	CHECK_EQ_INT(read_current(s, "bkt", key), present);
	CHECK_EQ_INT(read_current(s, "bkt", "nokey"), missing);
	CHECK_EQ_INT(read_current(s, "bkt", "no/such/prefix"), missing);
	CHECK_EQ_INT(read_current(s, "nob", key), no_bucket);
	CHECK_EQ_INT(cn_ec_stat_vol(s, "bkt", NULL), vol);
	CHECK_EQ_INT(cn_ec_stat_vol(s, "nob", NULL), no_vol);
	return t_failed_checks == bad;
}

TEST(test_misses_count_only_from_drives_there)
{
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	unsigned char *p = pattern(100, 3);
	CHECK_EQ_INT(put(s, "k", p, 100, true), CN_OK);
	CHECK_EQ_INT(put(s, "unread", p, 100, true), CN_OK); /* never read: not cached */
	CHECK(answers(s, "k", CN_OK, CN_ERR_NO_KEY, CN_ERR_NO_BUCKET, CN_OK, CN_ERR_NO_BUCKET));
	/* M folders gone: the other two still answer for the set, as all four did */
	rm_drive(0);
	rm_drive(1);
	CHECK(answers(s, "k", CN_OK, CN_ERR_NO_KEY, CN_ERR_NO_BUCKET, CN_OK, CN_ERR_NO_BUCKET));
	/* M+1 gone: one drive cannot say what is there, or what is not */
	rm_drive(2);
	CHECK(answers(s, "unread", CN_ERR_QUORUM, CN_ERR_QUORUM, CN_ERR_QUORUM, CN_ERR_QUORUM,
	              CN_ERR_QUORUM));
	cn_ec_set_free(s);
	free(p);
}

TEST(test_heal)
{
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	size_t len = 2 * MiB + 77;
	unsigned char *p = pattern(len, 3);
	CHECK_EQ_INT(put(s, "obj", p, len, false), CN_OK);
	CHECK_EQ_INT(put(s, "small", p, 1000, true), CN_OK);
	damage(0, "obj", false);
	damage(1, "obj", true);
	damage(2, "small", false);
	cn_ec_heal_result hr;
	CHECK_EQ_INT(cn_ec_heal(s, "bkt", "obj", NULL, true, &hr), CN_OK);
	CHECK_EQ_INT(hr.drives_bad, 2);
	CHECK_EQ_INT(hr.drives_healed, 0); /* dry run */
	CHECK_EQ_INT(cn_ec_heal(s, "bkt", "obj", NULL, false, &hr), CN_OK);
	CHECK_EQ_INT(hr.drives_healed, 2);
	CHECK(hr.bytes_written > 0);
	CHECK_EQ_INT(cn_ec_heal(s, "bkt", "small", NULL, false, &hr), CN_OK);
	CHECK_EQ_INT(hr.drives_healed, 1);
	CHECK_EQ_INT(cn_ec_heal(s, "bkt", "obj", NULL, false, &hr), CN_OK);
	CHECK_EQ_INT(hr.drives_bad, 0);
	/* proof: the healed drives alone (the others' copies gone) give the bytes back */
	damage(2, "obj", false);
	damage(3, "obj", false);
	bool deg = false;
	CHECK_EQ_INT(check(s, "obj", p, 0, len, &deg), CN_OK);
	CHECK(deg);
	damage(0, "small", false);
	damage(1, "small", false);
	CHECK_EQ_INT(check(s, "small", p, 0, 1000, NULL), CN_OK);
	cn_ec_set_free(s);
	free(p);
}

TEST(test_debug_read_skip)
{
	/* benchmarks' degraded reads: slots 0..1 ignored by reads, not reported for healing */
	reset(true);
	setenv("CAIRN_DEBUG_READ_OFFLINE_SLOTS", "2", 1);
	cn_ec_set *s = open_set(4, 2);
	unsetenv("CAIRN_DEBUG_READ_OFFLINE_SLOTS");
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	size_t len = MiB + 9;
	unsigned char *p = pattern(len, 5);
	CHECK_EQ_INT(put(s, "o", p, len, false), CN_OK);
	CHECK_EQ_INT(put(s, "i", p, 100, true), CN_OK);
	bool deg = true;
	CHECK_EQ_INT(check(s, "o", p, 0, len, &deg), CN_OK);
	CHECK(!deg);
	CHECK_EQ_INT(check(s, "i", p, 0, 100, &deg), CN_OK);
	/* the drives really hold their shards (writes were not skipped) */
	damage(2, "o", false);
	CHECK_EQ_INT(check(s, "o", p, 0, len, NULL), CN_ERR_QUORUM);
	cn_ec_set_free(s);
	free(p);
}

/* Removes drive i's copy of noncurrent version "null" of key (record and data folder), or
 * flips a byte of its shard file. */
static void damage_version(size_t i, const char *key, const char *data_id, bool corrupt)
{
	char cmd[600];
	if (corrupt)
		snprintf(cmd, sizeof cmd, "f='%s/d%zu/bkt/%s/%s/part.1'; printf '\\x55' | dd of=\"$f\" bs=1 "
		         "seek=100 conv=notrunc status=none", base, i, key, data_id);
	else
		snprintf(cmd, sizeof cmd, "rm -rf '%s/d%zu/bkt/%s/%s' '%s/d%zu/bkt/%s/%%v.null'", base, i, key,
		         data_id, base, i, key);
	CN_ASSERT(system(cmd) == 0);
}

TEST(test_heal_noncurrent_version)
{
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	size_t len = 2 * MiB + 5;
	unsigned char *p = pattern(len, 11);
	CHECK_EQ_INT(put(s, "v", p, len, false), CN_OK);
	CHECK_EQ_INT(cn_ec_version_keep(s, "bkt", "v", "null"), CN_OK);
	CHECK_EQ_INT(put(s, "v", p, 1000, true), CN_OK); /* a new current version on top */
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	CHECK_EQ_INT(cn_ec_version_read(s, "bkt", "v", "null", true, &m), CN_OK);
	char data_id[64];
	snprintf(data_id, sizeof data_id, "%s", m.data_id);
	cn_ec_meta_fini(&m);
	CHECK(data_id[0] != 0);
	damage_version(0, "v", data_id, false);
	damage_version(1, "v", data_id, true);
	cn_ec_heal_result hr;
	CHECK_EQ_INT(cn_ec_heal(s, "bkt", "v", "null", false, &hr), CN_OK);
	CHECK_EQ_INT(hr.drives_bad, 2);
	CHECK_EQ_INT(hr.drives_healed, 2);
	CHECK_EQ_INT(hr.drives_failed, 0);
	/* proof: drives 0 and 1 alone give the old version back */
	damage_version(2, "v", data_id, false);
	damage_version(3, "v", data_id, false);
	cn_ec_reader *r;
	CHECK_EQ_INT(cn_ec_open_version(s, "bkt", "v", "null", &m, &r), CN_OK);
	if (r) {
		unsigned char *buf = malloc(len);
		size_t got = 0;
		CHECK_EQ_INT(cn_ec_reader_read(r, 0, buf, len, &got), CN_OK);
		CHECK(got == len && memcmp(buf, p, len) == 0);
		free(buf);
		cn_ec_reader_close(r);
	}
	cn_ec_meta_fini(&m);
	/* the current version was not disturbed */
	CHECK_EQ_INT(check(s, "v", p, 0, 1000, NULL), CN_OK);
	cn_ec_set_free(s);
	free(p);
}

static cn_err count_cb(void *ctx, const char *key, size_t keylen, bool is_prefix, const cn_ec_meta *m)
{
	size_t *n = ctx;
	(*n)++;
	return CN_OK;
}

/* Removes drive i's record of an inline key (it has no folder: FORMAT.md §3). */
static void rm_inline_key(size_t i, const char *key)
{
	char path[256];
	snprintf(path, sizeof path, "%s/d%zu/bkt/%s", base, i, key);
	CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof path, "%s/d%zu/bkt/%%m.%s", base, i, key);
	unlink(path); /* ENOENT: no such key */
}

TEST(test_walk_merges_drives)
{
	reset(true);
	cn_ec_set *s = open_set(6, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	unsigned char *p = pattern(200, 1);
	char key[32];
	for (int i = 0; i < 1100; i++) { /* more than one merge round (1000 per drive) */
		snprintf(key, sizeof key, "k%05d", i);
		CHECK_EQ_INT(put(s, key, p, 200, true), CN_OK);
	}
	/* drive 0 lost some keys, drive 1 others (as after outages), drive 2 its whole bucket */
	for (int i = 0; i < 1100; i += 7) {
		snprintf(key, sizeof key, "k%05d", i);
		rm_inline_key(0, key);
		snprintf(key, sizeof key, "k%05d", i + 3);
		rm_inline_key(1, key);
	}
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf %s/d2/bkt", base);
	CHECK(system(cmd) == 0);
	size_t n = 0;
	CHECK_EQ_INT(cn_ec_walk(s, "bkt", "", NULL, false, count_cb, &n), CN_OK);
	CHECK_EQ_INT(n, 1100);
	n = 0;
	CHECK_EQ_INT(cn_ec_walk(s, "bkt", "k00", "k00500", false, count_cb, &n), CN_OK);
	CHECK_EQ_INT(n, 499);
	cn_ec_set_free(s);
	free(p);
}

typedef struct seen {
	int n;
	int64_t size; /* of the last key listed */
} seen;

static cn_err seen_cb(void *ctx, const char *key, size_t keylen, bool is_prefix, const cn_ec_meta *m)
{
	seen *v = ctx;
	v->n++;
	v->size = m ? m->size : -1;
	return CN_OK;
}

/* Copies (save) drive i's record of inline key to base/keep.<i> or back over it (restore). */
static void keep_record(size_t i, const char *key, bool save)
{
	char rec[256], keep[256], cmd[600];
	snprintf(rec, sizeof rec, "%s/d%zu/bkt/%%m.%s", base, i, key);
	snprintf(keep, sizeof keep, "%s/keep.%zu", base, i);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", save ? rec : keep, save ? keep : rec);
	CN_ASSERT(system(cmd) == 0);
}

/* EC-13: a read that finds the drives split between two versions, none at quorum, may be
 * reading across a commit in progress: it reads again (here the "commit" finishes at the
 * first retry, so the new version is read) and answers QUORUM only when the split lasts. */
static int split_retries;
static void finish_commit(void)
{
	if (split_retries++ == 0)
		for (size_t i = 0; i < 4; i++)
			keep_record(i, "x", false); /* B onto the drives that still had A */
}

TEST(test_read_across_a_commit_reads_again)
{
	reset(true);
	cn_ec_set *s = open_set(8, 2); /* K = 6: A on 4 drives and B on 4 is a split */
	/* no record cache: the "commit" below changes records behind the set's back, without
	 * the invalidation a real commit does after its renames (RCACHE-1) */
	CHECK_EQ_INT(cn_ec_set_cache(s, 0), CN_OK);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	unsigned char *p = pattern(300, 2);
	CHECK_EQ_INT(put(s, "x", p, 200, true), CN_OK); /* B, saved */
	for (size_t i = 0; i < 8; i++)
		keep_record(i, "x", true);
	CHECK_EQ_INT(put(s, "x", p, 100, true), CN_OK); /* A everywhere ... */
	for (size_t i = 4; i < 8; i++)
		keep_record(i, "x", false); /* ... then B renamed onto drives 4..7: mid-commit */
	cn_ec__split_retry_hook = finish_commit;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", "x", true, &m), CN_OK);
	CHECK_EQ_INT(m.size, 200);
	CHECK_EQ_INT(split_retries, 1);
	cn_ec_meta_fini(&m);
	/* a split that lasts (A back on drives 0..3): QUORUM after the retries */
	CHECK_EQ_INT(put(s, "x", p, 100, true), CN_OK);
	for (size_t i = 4; i < 8; i++)
		keep_record(i, "x", false);
	cn_ec__split_retry_hook = NULL;
	cn_ec_meta_init(&m);
	CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", "x", true, &m), CN_ERR_QUORUM);
	cn_ec_meta_fini(&m);
	/* too few drives answering is no split: no retry */
	split_retries = 100;
	cn_ec__split_retry_hook = finish_commit;
	for (size_t i = 0; i < 3; i++)
		rm_drive(i);
	cn_ec_meta_init(&m);
	CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", "x", true, &m), CN_ERR_QUORUM);
	CHECK_EQ_INT(split_retries, 100);
	cn_ec_meta_fini(&m);
	cn_ec__split_retry_hook = NULL;
	cn_ec_set_free(s);
	free(p);
}

/* EC-13 with the object layer's wait (cn_ec_set_split_wait): the read waits for the key's
 * commits in progress instead of sleeping, and reads again; here the wait "finishes the
 * commit" at its first call. A lasting split asks it 6 times, then QUORUM; a wait that
 * gives up ends the retries after one more read. */
static int waits, waits_finish;
static char waited_for[64];
static bool wait_commit(void *ctx, const char *vol, const char *key)
{
	CN_ASSERT(ctx == &waits);
	snprintf(waited_for, sizeof waited_for, "%s/%s", vol, key);
	if (waits++ == 0 && waits_finish > 0)
		for (size_t i = 0; i < 4; i++)
			keep_record(i, "x", false);
	return waits_finish >= 0;
}

TEST(test_read_across_a_commit_waits_for_it)
{
	reset(true);
	cn_ec_set *s = open_set(8, 2);
	CHECK_EQ_INT(cn_ec_set_cache(s, 0), CN_OK);
	cn_ec_set_split_wait(s, wait_commit, &waits);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	unsigned char *p = pattern(300, 2);
	CHECK_EQ_INT(put(s, "x", p, 200, true), CN_OK); /* B, saved */
	for (size_t i = 0; i < 8; i++)
		keep_record(i, "x", true);
	cn_ec_meta m;
	int want_waits[] = { 1, 6, 1 }, finish[] = { 1, 0, -1 };
	cn_err want[] = { CN_OK, CN_ERR_QUORUM, CN_ERR_QUORUM };
	for (size_t t = 0; t < 3; t++) {
		CHECK_EQ_INT(put(s, "x", p, 100, true), CN_OK); /* A everywhere ... */
		for (size_t i = 4; i < 8; i++)
			keep_record(i, "x", false); /* ... B on drives 4..7: mid-commit */
		waits = 0;
		waits_finish = finish[t];
		waited_for[0] = 0;
		cn_ec_meta_init(&m);
		CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", "x", true, &m), want[t]);
		if (!want[t])
			CHECK_EQ_INT(m.size, 200);
		CHECK_EQ_INT(waits, want_waits[t]);
		CHECK_EQ_STR(waited_for, "bkt/x");
		cn_ec_meta_fini(&m);
	}
	cn_ec_set_free(s);
	free(p);
}

/* A reader opened before an overwrite (EC-7: it read only the data slots' records) that then
 * needs a parity shard finds the parity slots' records naming the new version; the old
 * version's shard files, named by its data id, are still there (the object layer keeps
 * them while the reader lives, OBJ-6): it reads them, and the old bytes come back. It had
 * failed the read (a GET then broke its connection after the head). */
TEST(test_reader_reads_its_version_after_an_overwrite)
{
	reset(true);
	cn_ec_set *s = open_uncached(8, 2); /* K = 6: the open reads 6 records, 2 left unread */
	size_t len = 300 * 1024;
	unsigned char *a = pattern(len, 5), *b = pattern(len, 6);
	CHECK_EQ_INT(put(s, "y", a, len, false), CN_OK);
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *r = NULL;
	CHECK_EQ_INT(cn_ec_open(s, "bkt", "y", &m, &r), CN_OK);
	put_mtime++;
	CHECK_EQ_INT(put(s, "y", b, len, false), CN_OK); /* the overwrite */
	size_t data_slot = 0;
	while (m.dist[data_slot] != 0)
		data_slot++;
	rm_drive(data_slot); /* the drive with data shard 0: a parity shard is needed now */
	unsigned char *buf = malloc(len);
	size_t got = 0;
	CHECK_EQ_INT(cn_ec_reader_read(r, 0, buf, len, &got), CN_OK);
	CHECK(got == len && memcmp(buf, a, len) == 0);
	cn_ec_reader_close(r);
	cn_ec_meta_fini(&m);
	free(buf);
	free(a);
	free(b);
	cn_ec_set_free(s);
}

/* A partial commit over an older version (a crash during a put's renames) leaves walked
 * drives that disagree: the listing shows the version a quorum read picks, or nothing
 * when none has quorum, never the record of whichever drive comes first (EC-6). */
TEST(test_walk_lists_what_reads_pick)
{
	reset(true);
	cn_ec_set *s = open_set(8, 4); /* K = 4; the walk reads drives 0..4 */
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	unsigned char *p = pattern(300, 1);
	struct {
		size_t b_until, a_until; /* drives [0, b_until) hold B, [b_until, a_until) A */
		int64_t want;            /* the size listed (-1: not listed) */
	} cases[] = {
		{ 3, 8, 100 },  /* B B B A A A A A: A has quorum */
		{ 2, 8, 100 },  /* B B A A A A A A */
		{ 3, 4, -1 },   /* B B B A - - - -: nothing has quorum */
		{ 5, 8, 200 },  /* B on 5 drives: B */
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		CHECK_EQ_INT(put(s, "x", p, 100, true), CN_OK); /* A */
		for (size_t i = 0; i < 8; i++)
			keep_record(i, "x", true);
		CHECK_EQ_INT(put(s, "x", p, 200, true), CN_OK); /* B */
		for (size_t i = cases[c].b_until; i < 8; i++) {
			if (i < cases[c].a_until)
				keep_record(i, "x", false);
			else
				rm_inline_key(i, "x");
		}
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		cn_err re = cn_ec_read_meta(s, "bkt", "x", true, &m);
		CHECK_EQ_INT(re == CN_OK ? m.size : -1, cases[c].want);
		cn_ec_meta_fini(&m);
		seen v = { 0, -1 };
		CHECK_EQ_INT(cn_ec_walk(s, "bkt", "", NULL, false, seen_cb, &v), CN_OK);
		CHECK_EQ_INT(v.n, cases[c].want < 0 ? 0 : 1);
		CHECK_EQ_INT(v.size, cases[c].want);
		cn_ec_set_free(s); /* no record cache between the cases */
		s = open_set(8, 4);
	}
	cn_ec_set_free(s);
	free(p);
}

static cn_err prefix_cb(void *ctx, const char *key, size_t keylen, bool is_prefix, const cn_ec_meta *m)
{
	seen *v = ctx;
	if (is_prefix)
		v->n++;
	return CN_OK;
}

/* A common prefix whose objects are on too few walked drives is listed only when a key
 * below it is readable (EC-6): a put that died under a new prefix leaves its folder on a
 * few drives. */
TEST(test_walk_prefix_needs_a_listed_key)
{
	reset(true);
	cn_ec_set *s = open_set(8, 4); /* K = 4; the walk reads drives 0..4 */
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	unsigned char *p = pattern(100, 3);
	char path[256], key[32];
	for (int k = 0; k < 40; k++) { /* more than the check's rounds of 16 */
		snprintf(key, sizeof key, "dir/a%02d", k);
		CHECK_EQ_INT(put(s, key, p, 100, true), CN_OK);
		for (size_t i = 0; i < 8; i++) { /* on drive 3 only: unreadable */
			snprintf(path, sizeof path, "%s/d%zu/bkt/dir/%%m.a%02d", base, i, k);
			if (i != 3)
				CHECK(unlink(path) == 0);
		}
	}
	seen v = { 0, -1 };
	CHECK_EQ_INT(cn_ec_walk(s, "bkt", "", NULL, true, prefix_cb, &v), CN_OK);
	CHECK_EQ_INT(v.n, 0);
	CHECK_EQ_INT(put(s, "dir/y", p, 100, true), CN_OK);
	for (size_t i = 0; i < 4; i++) { /* dir/y on drives 4..7: readable, walked on one */
		snprintf(path, sizeof path, "%s/d%zu/bkt/dir/%%m.y", base, i);
		CHECK(unlink(path) == 0);
	}
	v.n = 0;
	CHECK_EQ_INT(cn_ec_walk(s, "bkt", "", NULL, true, prefix_cb, &v), CN_OK);
	CHECK_EQ_INT(v.n, 1);
	cn_ec_set_free(s);
	free(p);
}

/* EC-2's tie: with n == 2K, a put that died after renaming its record on half the drives
 * leaves two versions with K records each. An early-out read (GET, listing), a full one
 * and heal must pick the same one, and heal must not turn the object into the other. */
TEST(test_tie_at_half_is_read_one_way)
{
	unsigned char *p = pattern(300, 2);
	for (int half = 0; half < 2; half++) {
		reset(true);
		cn_ec_set *s = open_set(8, 4); /* K = M = 4 */
		CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
		put_mtime = 1000;
		CHECK_EQ_INT(put(s, "x", p, 100, true), CN_OK); /* A */
		for (size_t i = 0; i < 8; i++)
			keep_record(i, "x", true);
		put_mtime = 2000; /* B, newer */
		CHECK_EQ_INT(put(s, "x", p, 200, true), CN_OK);
		put_mtime = 1000;
		for (size_t i = 0; i < 4; i++) /* A back on one half */
			keep_record(half ? i : i + 4, "x", false);
		cn_ec_set_free(s); /* no record cache */
		s = open_set(8, 4);
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", "x", true, &m), CN_OK);
		int64_t got = m.size;
		cn_ec_meta_fini(&m);
		seen v = { 0, -1 };
		CHECK_EQ_INT(cn_ec_walk(s, "bkt", "", NULL, false, seen_cb, &v), CN_OK);
		CHECK_EQ_INT(v.size, got);
		cn_ec_heal_result hr;
		CHECK_EQ_INT(cn_ec_heal(s, "bkt", "x", NULL, false, &hr), CN_OK);
		CHECK_EQ_INT(hr.drives_healed, 4);
		cn_ec_set_free(s);
		s = open_set(8, 4);
		cn_ec_meta_init(&m);
		CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", "x", true, &m), CN_OK);
		CHECK_EQ_INT(m.size, got); /* healed to the version reads returned */
		cn_ec_meta_fini(&m);
		CHECK_EQ_INT(check(s, "x", p, 0, (size_t)got, NULL), CN_OK);
		cn_ec_set_free(s);
	}
	free(p);
}

/* Drive i's record of key, decoded (inline stream copied); flip: one byte of its inline
 * shard is flipped and the record re-encoded, so its checksum is right (a fresh encode)
 * and only the shard hash can see the damage. Returns the shard index the record holds. */
static unsigned inline_record(size_t i, const char *key, bool flip)
{
	char rec[256];
	snprintf(rec, sizeof rec, "%s/d%zu/bkt/%%m.%s", base, i, key);
	FILE *f = fopen(rec, "rb");
	CN_ASSERT(f);
	static unsigned char buf[1 << 20];
	size_t len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	cn_ec_meta m;
	CN_ASSERT(cn_ec_meta_decode(buf, len, false, &m) == CN_OK && m.has_inline);
	CN_ASSERT(m.inline_len > CN_CODEC_HASH_LEN);
	if (flip) {
		m.inline_data[CN_CODEC_HASH_LEN] ^= 0x5A; /* the shard's first byte, after its hash */
		cn_buf enc;
		cn_buf_init(&enc);
		CN_ASSERT(cn_ec_meta_encode(&m, &enc) == CN_OK);
		f = fopen(rec, "wb");
		CN_ASSERT(f && fwrite(enc.p, 1, enc.len, f) == enc.len && fclose(f) == 0);
		cn_buf_fini(&enc);
	}
	unsigned idx = m.index;
	cn_ec_meta_fini(&m);
	return idx;
}

/* EC-3 through the record cache: a cached record's inline shard is hash-checked once (the
 * bytes cannot change in memory), but only once it matched: a rotten shard inside a
 * record whose checksum is right is caught, and rebuilt from parity, on every read. */
TEST(test_cached_inline_shard_checked_until_good)
{
	unsigned char *p = pattern(1000, 9);
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	CHECK_EQ_INT(put(s, "k", p, 1000, true), CN_OK);
	bool deg = false;
	CHECK_EQ_INT(check(s, "k", p, 0, 1000, &deg), CN_OK); /* good records: cached, checked */
	CHECK(!deg);
	CHECK_EQ_INT(check(s, "k", p, 0, 1000, &deg), CN_OK); /* the same from the cache */
	CHECK(!deg);
	cn_ec_set_free(s);
	/* a data shard rots: every read through the cache (the first loads the record)
	 * must see it, rebuild the shard and return the right bytes */
	size_t rotten = 4;
	for (size_t i = 0; i < 4 && rotten == 4; i++)
		if (inline_record(i, "k", false) == 0)
			rotten = i;
	CHECK(rotten < 4);
	inline_record(rotten, "k", true);
	s = open_set(4, 2);
	for (int r = 0; r < 3; r++) {
		deg = false;
		CHECK_EQ_INT(check(s, "k", p, 0, 1000, &deg), CN_OK);
		CHECK(deg);
	}
	cn_ec_set_free(s);
	free(p);
}

/* An inline put whose record carries one user metadata pair name=value. */
static cn_err put_meta(cn_ec_set *s, const char *key, const unsigned char *p, size_t len,
                       const char *name, const char *value)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	m.size = (int64_t)len;
	m.mtime_ms = put_mtime;
	snprintf(m.etag, sizeof m.etag, "e%zu", len);
	snprintf(m.storage_class, sizeof m.storage_class, "STANDARD");
	cn_kv kv = { (char *)name, (char *)value };
	m.meta = &kv;
	m.nmeta = 1;
	m.has_inline = true;
	m.inline_data = (unsigned char *)p;
	m.inline_len = len;
	cn_err e = cn_ec_commit_inline(s, "bkt", key, &m);
	m.inline_data = NULL;
	m.meta = NULL;
	m.nmeta = 0;
	cn_ec_meta_fini(&m);
	return e;
}

/* Opens key and says whether it is served degraded and with metadata name=value (whole,
 * not a partial decode). */
static bool open_has_meta(cn_ec_set *s, const char *key, const char *name, const char *value,
                          bool *degraded)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *r;
	if (cn_ec_open(s, "bkt", key, &m, &r) != CN_OK)
		return false;
	*degraded = cn_ec_reader_degraded(r);
	bool ok = !m.partial && m.nmeta == 1 && !strcmp(m.meta[0].name, name) &&
	          !strcmp(m.meta[0].value, value);
	cn_ec_reader_close(r);
	cn_ec_meta_fini(&m);
	cn_ec_meta_init(&m);
	ok = ok && cn_ec_read_meta(s, "bkt", key, true, &m) == CN_OK && !m.partial && m.nmeta == 1 &&
	     !strcmp(m.meta[0].value, value);
	cn_ec_meta_fini(&m);
	return ok;
}

/* Reads served from the record cache compare drives by the identity computed when each
 * record was read (user metadata included) and decode only the chosen record in full:
 * the metadata comes back whole on every read, and a drive holding a version that differs
 * only in its metadata still disagrees (degraded) when its record is a cache hit. */
TEST(test_cached_reads_compare_whole_versions)
{
	unsigned char *p = pattern(700, 4);
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	CHECK_EQ_INT(put_meta(s, "k", p, 700, "x-amz-meta-color", "red"), CN_OK);
	keep_record(0, "k", true);
	/* the same size, mtime and etag, other metadata */
	CHECK_EQ_INT(put_meta(s, "k", p, 700, "x-amz-meta-color", "blue"), CN_OK);
	cn_ec_set_free(s);
	keep_record(0, "k", false); /* drive 0 holds the red version again */
	s = open_set(4, 2);
	for (int round = 0; round < 3; round++) { /* a miss loads the cache, then hits */
		bool deg = false;
		CHECK(open_has_meta(s, "k", "x-amz-meta-color", "blue", &deg));
		CHECK(deg);
		CHECK_EQ_INT(check(s, "k", p, 0, 700, NULL), CN_OK);
	}
	cn_ec_cache_stats st;
	cn_ec_set_cache_stats(s, &st);
	CHECK(st.hits >= 4); /* the later rounds were served from the cache */
	cn_ec_set_free(s);
	free(p);
}

static char *current_data_id(cn_ec_set *s, const char *key, char *out, size_t cap)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	CN_ASSERT(cn_ec_read_meta(s, "bkt", key, true, &m) == CN_OK);
	snprintf(out, cap, "%s", m.data_id);
	cn_ec_meta_fini(&m);
	return out;
}

/* The data folders no record references are found (an overwrite's replaced data, which
 * the object layer removes after the commit, or a crash forgot); a kept version's are
 * not; a drive that cannot answer, or a record on one drive only, keeps them. */
/* The 4-drive set s closed and opened again with drive d offline (its folder moved away
 * after opening: the drive answers "offline"), or with it back. */
static cn_ec_set *reopen_with_away(cn_ec_set *s, int d)
{
	char cmd[600];
	cn_ec_set_free(s);
	snprintf(cmd, sizeof cmd, "mv %s/d%d %s/d%d.away", base, d, base, d);
	CN_ASSERT(system(cmd) == 0);
	s = open_set(4, 2);
	snprintf(cmd, sizeof cmd, "rm -rf %s/d%d", base, d);
	CN_ASSERT(system(cmd) == 0);
	return s;
}

static cn_ec_set *reopen_with_back(cn_ec_set *s, int d)
{
	char cmd[600];
	cn_ec_set_free(s);
	snprintf(cmd, sizeof cmd, "rm -rf %s/d%d && mv %s/d%d.away %s/d%d", base, d, base, d, base, d);
	CN_ASSERT(system(cmd) == 0);
	return open_set(4, 2);
}

TEST(test_orphan_data)
{
	unsigned char *p = pattern(300000, 4);
	reset(true);
	cn_ec_set *s = open_uncached(4, 2);
	char **ids;
	size_t n;
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK); /* no such key */
	CHECK_EQ_INT(n, 0);
	char a[64], b[64], c[64];
	CHECK_EQ_INT(put(s, "k", p, 300000, false), CN_OK);
	current_data_id(s, "k", a, sizeof a);
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK); /* referenced */
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(cn_ec_version_keep(s, "bkt", "k", "v1"), CN_OK); /* a keeps a version */
	CHECK_EQ_INT(put(s, "k", p, 250000, false), CN_OK);
	current_data_id(s, "k", b, sizeof b);
	/* drive 1 alone keeps b's record as a version (a partial write, say) */
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cp '%s/d1/bkt/%%m.k' '%s/d1/bkt/k/%%v.v9'", base, base);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(put(s, "k", p, 200000, false), CN_OK); /* b is replaced */
	current_data_id(s, "k", c, sizeof c);
	CHECK(strcmp(a, b) && strcmp(b, c) && strcmp(a, c));
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 0); /* one drive's record still names b: kept */
	cn_drive_free_names(ids, n);
	snprintf(cmd, sizeof cmd, "rm '%s/d1/bkt/k/%%v.v9'", base);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 1); /* nobody's now */
	if (n == 1)
		CHECK_EQ_STR(ids[0], b);
	cn_drive_free_names(ids, n);
	/* with a drive offline (its folder gone) nothing is called unreferenced */
	s = reopen_with_away(s, 3);
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 0);
	s = reopen_with_back(s, 3);
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 1);
	cn_drive_free_names(ids, n);
	/* a corrupt record on one drive (it might have named b): nothing is called orphan */
	snprintf(cmd, sizeof cmd, "cp '%s/d2/bkt/k/%%v.v1' %s/v1.keep && printf '\\x55' | dd "
	         "of='%s/d2/bkt/k/%%v.v1' bs=1 seek=20 conv=notrunc status=none", base, base, base);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 0);
	snprintf(cmd, sizeof cmd, "mv %s/v1.keep '%s/d2/bkt/k/%%v.v1'", base, base);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 1);
	cn_drive_free_names(ids, n);
	/* removed (as the object layer does), the versions still read back */
	CHECK_EQ_INT(cn_ec_delete_data(s, "bkt", "k", b), CN_OK);
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(check(s, "k", p, 0, 200000, NULL), CN_OK);
	cn_ec_set_free(s);
	free(p);
}

/* cn_ec_data_keys: keys whose data folders a drive holds without their record, merged
 * over the drives (one drive's folders are enough), sorted, each once, at most max. */
TEST(test_data_keys)
{
	unsigned char *p = pattern(300000, 5);
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	for (int i = 0; i < 3; i++) {
		char k[16];
		snprintf(k, sizeof k, "k%d", i);
		CHECK_EQ_INT(put(s, k, p, 300000, false), CN_OK);
	}
	char **keys;
	size_t n;
	CHECK_EQ_INT(cn_ec_data_keys(s, "bkt", "", 100, &keys, &n), CN_OK);
	CHECK(n == 0 && keys == NULL); /* every key has its records */
	char cmd[512];
	/* k0: records gone everywhere; k2: on drive 2 only, its other drives' data removed */
	snprintf(cmd, sizeof cmd, "cd %s && rm d*/bkt/%%m.k0 d2/bkt/%%m.k2 && rm -r d0/bkt/k2 d1/bkt/k2 d3/bkt/k2",
	         base);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(cn_ec_data_keys(s, "bkt", "", 100, &keys, &n), CN_OK);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK_EQ_STR(keys[0], "k0");
		CHECK_EQ_STR(keys[1], "k2");
	}
	cn_drive_free_names(keys, n);
	CHECK_EQ_INT(cn_ec_data_keys(s, "bkt", "", 1, &keys, &n), CN_OK);
	CHECK_EQ_INT(n, 1);
	cn_drive_free_names(keys, n);
	CHECK_EQ_INT(cn_ec_data_keys(s, "bkt", "k2", 100, &keys, &n), CN_OK);
	CHECK(n == 1 && !strcmp(keys[0], "k2"));
	cn_drive_free_names(keys, n);
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "k0", &keys, &n), CN_OK); /* no record: all of it */
	CHECK_EQ_INT(n, 1);
	cn_drive_free_names(keys, n);
	cn_ec_set_free(s);
	free(p);
}

static bool rec_on(int d, const char *rel)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof path, "%s/d%d/bkt/%s", base, d, rel);
	return stat(path, &st) == 0;
}

/* EC-10: a version held by fewer drives than its read quorum, counting those that cannot
 * answer, is removed where it lies; one that some drive away might complete is kept. */
TEST(test_purge_dangling)
{
	unsigned char *p = pattern(300000, 6);
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	size_t purged = 9;
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "none", NULL, false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 0);
	const char *keys[] = { "a", "b", "c", "d" };
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(put(s, keys[i], p, i == 3 ? 1000 : 300000, i == 3), CN_OK);
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "a", NULL, false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 0); /* on every drive */
	char cmd[600];
	/* a: on drive 3 only (deleted while it was away); b: on drives 2 and 3 (its quorum);
	 * d (inline): on drive 0 only */
	snprintf(cmd, sizeof cmd, "cd %s && rm d0/bkt/%%m.a d1/bkt/%%m.a d2/bkt/%%m.a "
	         "d0/bkt/%%m.b d1/bkt/%%m.b d1/bkt/%%m.d d2/bkt/%%m.d d3/bkt/%%m.d", base);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "a", NULL, true, &purged), CN_OK);
	CHECK_EQ_INT(purged, 1);
	CHECK(rec_on(3, "%m.a")); /* dry run */
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "a", NULL, false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 1);
	CHECK(!rec_on(3, "%m.a") && rec_on(3, "a")); /* its data folder is now an orphan's */
	char **ids;
	size_t n;
	CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", "a", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 1);
	cn_drive_free_names(ids, n);
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "b", NULL, false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 0);
	CHECK_EQ_INT(check(s, "b", p, 0, 300000, NULL), CN_OK);
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "d", NULL, false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 1);
	CHECK(!rec_on(0, "%m.d"));
	/* c on drive 0 only, another version of c on drive 1 only: neither is readable */
	snprintf(cmd, sizeof cmd, "cd %s && rm d2/bkt/%%m.c d3/bkt/%%m.c && cp d1/bkt/%%m.c d1/c.keep", base);
	CHECK(system(cmd) == 0);
	put_mtime++;
	CHECK_EQ_INT(put(s, "c", p, 200000, false), CN_OK); /* the new one everywhere */
	snprintf(cmd, sizeof cmd, "cd %s && mv d1/c.keep d1/bkt/%%m.c && rm d2/bkt/%%m.c d3/bkt/%%m.c", base);
	CHECK(system(cmd) == 0);
	/* with drive 3 away, one more drive might hold either: kept */
	s = reopen_with_away(s, 3);
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "c", NULL, false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 0);
	CHECK(rec_on(0, "%m.c") && rec_on(1, "%m.c"));
	s = reopen_with_back(s, 3);
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "c", NULL, false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 2);
	CHECK(!rec_on(0, "%m.c") && !rec_on(1, "%m.c"));
	/* a noncurrent version on one drive only (the last: version_list asks M+1 drives) */
	CHECK_EQ_INT(put(s, "e", p, 300000, false), CN_OK);
	CHECK_EQ_INT(cn_ec_version_keep(s, "bkt", "e", "v1"), CN_OK);
	snprintf(cmd, sizeof cmd, "cd %s && rm d0/bkt/e/%%v.v1 d1/bkt/e/%%v.v1 d2/bkt/e/%%v.v1", base);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(cn_ec_version_list(s, "bkt", "e", &ids, &n), CN_OK);
	CHECK_EQ_INT(n, 0); /* drives 0-2 answer: none */
	cn_drive_free_names(ids, n);
	CHECK_EQ_INT(cn_ec_version_list_all(s, "bkt", "e", &ids, &n), CN_OK);
	CHECK(n == 1 && !strcmp(ids[0], "v1"));
	cn_drive_free_names(ids, n);
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "e", "v1", false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 1);
	CHECK(!rec_on(3, "e/%v.v1"));
	CHECK_EQ_INT(check(s, "e", p, 0, 300000, NULL), CN_OK); /* the current one untouched */
	cn_ec_set_free(s);
	free(p);
}

/* EC-11: a vol too few drives hold, counting those that cannot answer, and not kept, is
 * dangling; purge_vol removes it with what it holds. */
TEST(test_dangling_vols)
{
	unsigned char *p = pattern(300000, 7);
	reset(true);
	cn_ec_set *s = open_set(4, 2);
	CHECK_EQ_INT(cn_ec_make_vol(s, "bkt"), CN_OK);
	CHECK_EQ_INT(put(s, "k", p, 300000, false), CN_OK);
	char cmd[600];
	/* "one" on drive 3 only, with a record; "two" on drives 2 and 3 */
	snprintf(cmd, sizeof cmd, "cd %s && mkdir d2/two d3/two && cp -r d3/bkt d3/one", base);
	CHECK(system(cmd) == 0);
	char **v;
	size_t n;
	cn_drive_vol keep[] = { { .name = "bkt" } };
	CHECK_EQ_INT(cn_ec_dangling_vols(s, keep, 1, &v, &n), CN_OK);
	CHECK(n == 1 && !strcmp(v[0], "one"));
	cn_drive_free_names(v, n);
	cn_drive_vol keep2[] = { { .name = "bkt" }, { .name = "one" } };
	CHECK_EQ_INT(cn_ec_dangling_vols(s, keep2, 2, &v, &n), CN_OK);
	CHECK_EQ_INT(n, 0);
	cn_drive_free_names(v, n);
	/* with drive 0 away (its folder gone: an empty listing is no answer), "one" might be
	 * on it too: kept */
	s = reopen_with_away(s, 0);
	CHECK_EQ_INT(cn_ec_dangling_vols(s, keep, 1, &v, &n), CN_OK);
	CHECK_EQ_INT(n, 0);
	cn_drive_free_names(v, n);
	s = reopen_with_back(s, 0);
	CHECK_EQ_INT(cn_ec_purge_vol(s, "one"), CN_OK);
	snprintf(cmd, sizeof cmd, "test ! -e %s/d3/one && test -d %s/d3/bkt/k && test -d %s/d2/two", base,
	         base, base);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(cn_ec_dangling_vols(s, keep, 1, &v, &n), CN_OK);
	CHECK_EQ_INT(n, 0);
	cn_drive_free_names(v, n);
	CHECK_EQ_INT(check(s, "k", p, 0, 300000, NULL), CN_OK);
	cn_ec_set_free(s);
	free(p);
}

/* Removes every trace of key from drive i (a drive lost and not healed yet for it): its
 * current and previous records and its folder. */
static void lose_key(size_t i, const char *key)
{
	char cmd[900];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/d%zu/bkt/%%m.%s' '%s/d%zu/bkt/%%p.%s' '%s/d%zu/bkt/%s'", base,
	         i, key, base, i, key, base, i, key);
	CN_ASSERT(system(cmd) == 0);
}

/* EC-15: an overwrite cut short by a crash (the new version Y renamed onto drives 0, 3, 4
 * only) while drives 1 and 2 miss the key (lost, not healed yet): neither version is on K =
 * 4 drives' current records, but the replaced one X is the previous record of the drives Y
 * reached. Reads, listing and heal find X; EC-10 keeps it; the orphan check keeps its data. */
TEST(test_cut_short_overwrite_reads_the_replaced_version)
{
	static const struct { const char *key; size_t len; bool inl; } objs[] = {
		{ "i", 3000, true }, { "b", MiB + 1, false } };
	unsigned char *px = pattern(MiB + 1, 31), *py = pattern(MiB + 1, 32);
	for (size_t o = 0; o < 2; o++) {
		const char *key = objs[o].key;
		size_t len = objs[o].len;
		reset(true);
		cn_ec_set *s = open_uncached(8, 4); /* K = 4, write quorum 5 */
		put_mtime = 1000;
		CHECK_EQ_INT(put(s, key, px, len, objs[o].inl), CN_OK); /* X */
		for (size_t i = 0; i < 8; i++)
			keep_record(i, key, true);
		char rel[64]; /* the previous record's name */
		snprintf(rel, sizeof rel, "%%p.%s", key);
		/* the overwrite: previous records kept everywhere, then Y committed ... */
		cn_ec_prev_keep(s, "bkt", key);
		CHECK(rec_on(6, rel));
		put_mtime = 2000;
		CHECK_EQ_INT(put(s, key, py, len - 1, objs[o].inl), CN_OK);
		/* ... but only drives 0, 3 and 4 got it before the crash */
		for (size_t i = 5; i < 8; i++)
			keep_record(i, key, false);
		lose_key(1, key);
		lose_key(2, key);
		bool degraded = false;
		CHECK_EQ_INT(check(s, key, px, 0, len, &degraded), CN_OK);
		CHECK(degraded);
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", key, true, &m), CN_OK);
		CHECK_EQ_INT(m.size, (int64_t)len);
		CHECK(m.from_prev);
		cn_ec_meta_fini(&m);
		seen v = { 0, 0 };
		CHECK_EQ_INT(cn_ec_walk(s, "bkt", "", NULL, false, seen_cb, &v), CN_OK);
		CHECK_EQ_INT(v.n, 1);
		CHECK_EQ_INT(v.size, (int64_t)len);
		size_t purged = 9;
		CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", key, NULL, false, &purged), CN_OK);
		CHECK_EQ_INT(purged, 0);
		/* X's data folders are referenced by the previous records alone once drives 5..7
		 * lose their current ones too: still not orphans */
		for (size_t i = 5; i < 8; i++) {
			char rec[256];
			snprintf(rec, sizeof rec, "%s/d%zu/bkt/%%m.%s", base, i, key);
			CN_ASSERT(unlink(rec) == 0);
		}
		char **ids = NULL;
		size_t nids = 0;
		CHECK_EQ_INT(cn_ec_orphan_data(s, "bkt", key, &ids, &nids), CN_OK);
		CHECK_EQ_INT(nids, 0);
		cn_drive_free_names(ids, nids);
		for (size_t i = 5; i < 8; i++)
			keep_record(i, key, false);
		/* heal rewrites X on the five drives (three held it as previous record only) */
		cn_ec_heal_result res;
		CHECK_EQ_INT(cn_ec_heal(s, "bkt", key, NULL, false, &res), CN_OK);
		CHECK_EQ_INT(res.drives_bad, 5);
		CHECK_EQ_INT(res.drives_healed, 5);
		CHECK(res.from_prev); /* the object layer drops the rest after it (heal.c HEAL-9) */
		CHECK(!rec_on(0, rel) && !rec_on(3, rel) && !rec_on(4, rel)); /* dropped by heal */
		cn_ec_meta_init(&m);
		CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", key, true, &m), CN_OK);
		CHECK(!m.from_prev);
		cn_ec_meta_fini(&m);
		/* now X is current at quorum on its own: drives 0..3 can go */
		for (size_t i = 0; i < 4; i++)
			lose_key(i, key);
		degraded = false;
		CHECK_EQ_INT(check(s, key, px, 0, len, &degraded), CN_OK);
		CHECK_EQ_INT(cn_ec_heal(s, "bkt", key, NULL, false, &res), CN_OK);
		CHECK_EQ_INT(res.drives_healed, 4);
		CHECK(!res.from_prev);
		/* a commit that completes, whose previous records were not dropped (a crash after
		 * it): the current version is read, and a delete removes both records */
		cn_ec_prev_keep(s, "bkt", key);
		put_mtime = 3000;
		CHECK_EQ_INT(put(s, key, py, len, objs[o].inl), CN_OK);
		CHECK(rec_on(5, rel));
		CHECK_EQ_INT(check(s, key, py, 0, len, &degraded), CN_OK);
		CHECK(!degraded);
		CHECK_EQ_INT(cn_ec_delete_meta(s, "bkt", key), CN_OK);
		CHECK(!rec_on(5, rel));
		cn_ec_meta_init(&m);
		CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", key, true, &m), CN_ERR_NO_KEY);
		cn_ec_meta_fini(&m);
		/* without previous records the cut-short overwrite is unreadable (what EC-15 fixes) */
		put_mtime = 4000;
		CHECK_EQ_INT(put(s, key, px, len, objs[o].inl), CN_OK);
		for (size_t i = 0; i < 8; i++)
			keep_record(i, key, true);
		put_mtime = 5000;
		CHECK_EQ_INT(put(s, key, py, len - 1, objs[o].inl), CN_OK);
		for (size_t i = 5; i < 8; i++)
			keep_record(i, key, false);
		lose_key(1, key);
		lose_key(2, key);
		CHECK_EQ_INT(check(s, key, px, 0, len, NULL), CN_ERR_QUORUM);
		cn_ec_set_free(s);
	}
	put_mtime = 1000;
	free(px);
	free(py);
}

/* EC-15 and EC-6 in a set whose walk asks fewer drives than K (8 drives EC:2: the last 3
 * walked, K 6): a new version on exactly the 3 walked drives, the previous records kept
 * (commits reach those last, EC-16, so this is a layout only a failed or partial commit
 * leaves), is listed as reads return it (the replaced one), not as the walked drives'
 * records say. */
TEST(test_walk_lists_what_reads_pick_after_a_cut_short_overwrite)
{
	reset(true);
	cn_ec_set *s = open_uncached(8, 2);
	unsigned char *p = pattern(3000, 41);
	CHECK_EQ_INT(put(s, "x", p, 3000, true), CN_OK); /* X */
	for (size_t i = 0; i < 8; i++)
		keep_record(i, "x", true);
	cn_ec_prev_keep(s, "bkt", "x");
	CHECK_EQ_INT(put(s, "x", p, 2999, true), CN_OK); /* Y ... */
	for (size_t i = 0; i < 5; i++)
		keep_record(i, "x", false); /* ... left on the walked drives 5..7 only */
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	CHECK_EQ_INT(cn_ec_read_meta(s, "bkt", "x", true, &m), CN_OK);
	CHECK_EQ_INT(m.size, 3000);
	cn_ec_meta_fini(&m);
	seen v = { 0, 0 };
	CHECK_EQ_INT(cn_ec_walk(s, "bkt", "", NULL, false, seen_cb, &v), CN_OK);
	CHECK_EQ_INT(v.n, 1);
	CHECK_EQ_INT(v.size, 3000);
	cn_ec_set_free(s);
	free(p);
}

/* EC-16: a first commit cut short (the new key's record on drives 0..2 of 8, K = 6) and a
 * delete cut short (it goes from the last drive down: records gone from drives 5..7) read
 * as missing, and neither is listed (the walk asks the last M+1 drives); with a drive
 * that cannot answer the first one stays QUORUM (it might hold the key). */
TEST(test_cut_short_first_commit_and_delete_read_as_missing)
{
	reset(true);
	cn_ec_set *s = open_uncached(8, 2);
	unsigned char *p = pattern(3000, 43);
	CHECK_EQ_INT(put(s, "n", p, 3000, true), CN_OK);
	CHECK_EQ_INT(put(s, "d", p, 2000, true), CN_OK);
	for (size_t i = 3; i < 8; i++)
		lose_key(i, "n");
	for (size_t i = 5; i < 8; i++)
		lose_key(i, "d");
	CHECK_EQ_INT(read_current(s, "bkt", "n"), CN_ERR_NO_KEY);
	CHECK_EQ_INT(read_current(s, "bkt", "d"), CN_ERR_NO_KEY);
	seen v = { 0, 0 };
	CHECK_EQ_INT(cn_ec_walk(s, "bkt", "", NULL, false, seen_cb, &v), CN_OK);
	CHECK_EQ_INT(v.n, 0);
	size_t purged = 0;
	CHECK_EQ_INT(cn_ec_purge_dangling(s, "bkt", "n", NULL, false, &purged), CN_OK);
	CHECK_EQ_INT(purged, 3);
	/* drives that cannot answer may hold it: 4 records + 2 gone drives could be 6 */
	CHECK_EQ_INT(put(s, "m", p, 3000, true), CN_OK);
	for (size_t i = 4; i < 6; i++)
		lose_key(i, "m");
	rm_drive(6);
	rm_drive(7);
	CHECK_EQ_INT(read_current(s, "bkt", "m"), CN_ERR_QUORUM);
	lose_key(3, "m"); /* 3 + 2 cannot */
	CHECK_EQ_INT(read_current(s, "bkt", "m"), CN_ERR_NO_KEY);
	cn_ec_set_free(s);
	free(p);
}

/* The slots a heal reports holding the version after it (cn_ec_heal_result.current_slots,
 * which heal.c HEAL-9 drops previous records on): those seen holding it and those rewritten,
 * not one whose rewrite failed (its record path a folder here: the read fails, and so
 * does the rename over it; raw drives, no health wrapper to take it offline). */
TEST(test_heal_reports_the_slots_that_hold_the_version)
{
	reset(true);
	cn_ec_set *s = open_uncached(8, 2);
	unsigned char *p = pattern(3000, 44);
	char cmd[600];
	for (int inl = 0; inl < 2; inl++) {
		cn_ec_heal_result res;
		CHECK_EQ_INT(put(s, "h", p, 3000, inl), CN_OK);
		CHECK_EQ_INT(cn_ec_heal(s, "bkt", "h", NULL, false, &res), CN_OK);
		CHECK_EQ_INT(res.drives_bad, 0);
		CHECK(res.current_slots == 0xff);
		lose_key(2, "h");
		lose_key(7, "h");
		snprintf(cmd, sizeof cmd, "mkdir -p '%s/d7/bkt/%%m.h/in'", base);
		CHECK(system(cmd) == 0);
		CHECK_EQ_INT(cn_ec_heal(s, "bkt", "h", NULL, false, &res), CN_OK);
		CHECK_EQ_INT(res.drives_bad, 2);
		CHECK_EQ_INT(res.drives_healed, 1);
		CHECK_EQ_INT(res.drives_failed, 1);
		CHECK(res.current_slots == 0x7f);
		CHECK(rec_on(2, "%m.h"));
		lose_key(7, "h");
		CHECK_EQ_INT(cn_ec_heal(s, "bkt", "h", NULL, false, &res), CN_OK);
		CHECK(res.current_slots == 0xff && res.drives_healed == 1);
		CHECK_EQ_INT(cn_ec_delete_meta(s, "bkt", "h"), CN_OK);
	}
	cn_ec_set_free(s);
	free(p);
}

int main(void)
{
	cn_log_min = CN_LOG_ERROR + 1;
	snprintf(base, sizeof base, "/tmp/cn_set_test.%d", (int)getpid());
	RUN(test_roundtrip_all_shapes);
	RUN(test_writer_shard_files_match_the_codec);
	RUN(test_early_open_falls_back_to_parity);
	RUN(test_healthy_read_touches_only_data_shards);
	RUN(test_ranges_and_quorum);
	RUN(test_misses_count_only_from_drives_there);
	RUN(test_heal);
	RUN(test_debug_read_skip);
	RUN(test_walk_merges_drives);
	RUN(test_walk_lists_what_reads_pick);
	RUN(test_read_across_a_commit_reads_again);
	RUN(test_read_across_a_commit_waits_for_it);
	RUN(test_reader_reads_its_version_after_an_overwrite);
	RUN(test_tie_at_half_is_read_one_way);
	RUN(test_walk_prefix_needs_a_listed_key);
	RUN(test_heal_noncurrent_version);
	RUN(test_cached_inline_shard_checked_until_good);
	RUN(test_cached_reads_compare_whole_versions);
	RUN(test_orphan_data);
	RUN(test_data_keys);
	RUN(test_purge_dangling);
	RUN(test_dangling_vols);
	RUN(test_cut_short_overwrite_reads_the_replaced_version);
	RUN(test_walk_lists_what_reads_pick_after_a_cut_short_overwrite);
	RUN(test_cut_short_first_commit_and_delete_read_as_missing);
	RUN(test_heal_reports_the_slots_that_hold_the_version);
	reset(false);
	TEST_END();
}
