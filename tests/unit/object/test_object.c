/* Unit tests of the object layer over one local drive (object.h): round trips at the
 * inline and buffer boundaries, key escaping (every valid key storable, nothing outside the
 * drive folder), listing against a brute-force model, concurrency, snapshots, corruption,
 * crash garbage, format checks and the abort paths of put. */
#include "object/object.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static char base[48], drive[56];
static int64_t inline_max = 128 * 1024;

/* --- helpers ------------------------------------------------------------------------- */

typedef struct mem_reader {
	cn_reader r;
	const unsigned char *p;
	size_t len, pos;
	size_t fail_at;   /* return fail_err once pos reaches this (SIZE_MAX: never) */
	cn_err fail_err;
	size_t step;      /* max bytes per read */
} mem_reader;

static ssize_t mem_read(cn_reader *r, void *buf, size_t len)
{
	mem_reader *m = (mem_reader *)r;
	if (m->pos >= m->fail_at)
		return -(ssize_t)m->fail_err;
	size_t n = m->len - m->pos;
	if (n > len)
		n = len;
	if (m->step && n > m->step)
		n = m->step;
	if (m->fail_at != SIZE_MAX && m->pos + n > m->fail_at)
		n = m->fail_at - m->pos;
	memcpy(buf, m->p + m->pos, n);
	m->pos += n;
	return (ssize_t)n;
}

static mem_reader mem(const void *p, size_t len)
{
	return (mem_reader){ { mem_read }, p, len, 0, SIZE_MAX, CN_OK, 777777 };
}

typedef struct mem_writer {
	cn_writer w;
	cn_buf b;
} mem_writer;

static cn_err mem_write(cn_writer *w, const void *p, size_t len)
{
	return cn_buf_append(&((mem_writer *)w)->b, p, len);
}

static cn_err mem_send_fd(cn_writer *w, int fd, int64_t off, int64_t len)
{
	mem_writer *m = (mem_writer *)w;
	if (cn_buf_reserve(&m->b, (size_t)len))
		return CN_ERR_NOMEM;
	ssize_t n = pread(fd, m->b.p + m->b.len, (size_t)len, off);
	if (n != len)
		return CN_ERR_IO;
	m->b.len += (size_t)len;
	return CN_OK;
}

static cn_err mem_writev(cn_writer *w, const struct iovec *iov, int n)
{
	CN_ASSERT(n >= 1 && n <= CN_WRITEV_MAX);
	cn_err e = CN_OK;
	for (int i = 0; !e && i < n; i++)
		e = cn_buf_append(&((mem_writer *)w)->b, iov[i].iov_base, iov[i].iov_len);
	return e;
}

static unsigned char *pattern(size_t len, unsigned seed)
{
	unsigned char *p = malloc(len ? len : 1);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
	return p;
}

static void md5_hex(const void *p, size_t len, char out[33])
{
	unsigned char d[16];
	unsigned int n;
	EVP_Digest(p, len, d, &n, EVP_md5(), NULL);
	cn_hex_encode(d, 16, out);
}

static cn_obj_store *open_store(bool durable)
{
	cn_obj_config cfg = { .durable = durable, .inline_max = inline_max };
	const char *d[] = { drive };
	cn_obj_store *s = NULL;
	cn_err e = cn_obj_store_open(d, 1, &cfg, &s);
	if (e)
		fprintf(stderr, "open: %s\n", cn_err_str(e));
	return s;
}

static void fresh(void)
{
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", base, base);
	CN_ASSERT(system(cmd) == 0);
}

static cn_err put_bytes(cn_obj_store *s, const char *b, const char *k, const void *p, size_t len)
{
	mem_reader r = mem(p, len);
	cn_put_opts o = { .size = (int64_t)len };
	return cn_obj_put(s, b, k, &r.r, &o, NULL);
}

/* Reads the whole object; NULL on error (errp gets it). */
static unsigned char *get_bytes(cn_obj_store *s, const char *b, const char *k, size_t *len,
                                bool use_fd, cn_err *errp)
{
	cn_obj_reader *r;
	cn_obj_info info;
	cn_obj_info_init(&info);
	*len = 0;
	cn_err e = cn_obj_open(s, b, k, &info, &r);
	if (errp)
		*errp = e;
	if (e)
		return NULL;
	/* use_fd: as the HTTP writer (sendfile, and shards in one writev) */
	mem_writer w = { { mem_write, use_fd ? mem_send_fd : NULL, use_fd ? mem_writev : NULL },
	                 { 0 } };
	cn_buf_init(&w.b);
	e = cn_obj_read(r, 0, info.size, &w.w);
	if (errp)
		*errp = e;
	cn_obj_reader_close(r);
	*len = w.b.len;
	cn_obj_info_fini(&info);
	if (e) {
		cn_buf_fini(&w.b);
		return NULL;
	}
	if (!w.b.p)
		w.b.p = malloc(1);
	return (unsigned char *)w.b.p;
}

static int count_entries(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Entries of folder drive/rel (-1 when it cannot be opened). */
static int count_in(const char *rel)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", drive, rel);
	return count_entries(p);
}

/* True when drive/rel exists. */
static bool exists(const char *rel)
{
	char p[1024];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", drive, rel);
	return stat(p, &st) == 0;
}

/* --- tests --------------------------------------------------------------------------- */


/* Entries in the tmp area below its shard folders (tmp/00..tmp/3f): crash garbage. */
static int tmp_garbage(void)
{
	char cmd[600];
	/* pool files (tmp/<xx>/p<n>: deleted records kept for reuse, drive/local_pool.c) are not */
	snprintf(cmd, sizeof cmd,
	         "test -z \"$(find %s/.cairn.sys/tmp -mindepth 2 ! -regex '.*/p[0-9]+' 2>/dev/null)\"",
	         drive);
	return system(cmd) == 0 ? 0 : 1;
}

TEST(test_roundtrip_sizes)
{
	fresh();
	cn_obj_store *s = open_store(false);
	CHECK(s && cn_obj_store_ready(s));
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	int64_t sizes[] = { 0, 1, inline_max - 1, inline_max, inline_max + 1, MiB - 1, MiB, MiB + 1,
	                    5 * MiB };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t len = (size_t)sizes[i];
		unsigned char *p = pattern(len, (unsigned)i);
		char key[32], md5[33];
		snprintf(key, sizeof key, "obj/%zu", len);
		md5_hex(p, len, md5);
		mem_reader r = mem(p, len);
		r.step = 1000 + i * 3333; /* odd read sizes */
		cn_put_opts o = { .size = (i & 1) ? -1 : (int64_t)len };
		cn_obj_info out;
		cn_obj_info_init(&out);
		CHECK_EQ_INT(cn_obj_put(s, "bkt", key, &r.r, &o, &out), CN_OK);
		CHECK_EQ_STR(out.etag, md5);
		CHECK_EQ_INT(out.size, len);
		cn_obj_info_fini(&out);
		cn_obj_info info;
		cn_obj_info_init(&info);
		CHECK_EQ_INT(cn_obj_stat(s, "bkt", key, &info), CN_OK);
		CHECK_EQ_INT(info.size, len);
		CHECK_EQ_STR(info.etag, md5);
		CHECK_EQ_STR(info.storage_class, "STANDARD");
		cn_obj_info_fini(&info);
		for (int fd = 0; fd < 2; fd++) {
			size_t got;
			unsigned char *g = get_bytes(s, "bkt", key, &got, fd, NULL);
			CHECK(g != NULL);
			CHECK_EQ_INT(got, len);
			if (g && got == len)
				CHECK_MEM(g, p, len);
			free(g);
		}
		/* inline iff size <= inline_max: the key then has no folder, only its record
		 * beside where the folder would be; otherwise a folder with the data folder */
		char kd[128], rel[64];
		snprintf(kd, sizeof kd, "%s/bkt/obj/%zu", drive, len);
		snprintf(rel, sizeof rel, "bkt/obj/%%m.%zu", len);
		CHECK_EQ_INT(count_entries(kd), (int64_t)len <= inline_max ? -1 : 1);
		CHECK(exists(rel));
		/* a range in the middle */
		if (len > 10) {
			cn_obj_reader *rd;
			CHECK_EQ_INT(cn_obj_open(s, "bkt", key, NULL, &rd), CN_OK);
			mem_writer w = { { mem_write, NULL, NULL }, { 0 } };
			cn_buf_init(&w.b);
			CHECK_EQ_INT(cn_obj_read(rd, 3, (int64_t)len - 7, &w.w), CN_OK);
			CHECK_EQ_INT(w.b.len, len - 7);
			if (w.b.len == len - 7)
				CHECK_MEM(w.b.p, p + 3, len - 7);
			CHECK_EQ_INT(cn_obj_read(rd, 3, (int64_t)len, &w.w), CN_ERR_INVALID);
			/* the stream view (copy) */
			cn_reader *st = cn_obj_reader_stream(rd);
			unsigned char *all = malloc(len + 1);
			ssize_t n = cn_read_full(st, all, len + 1);
			CHECK_EQ_INT(n, len);
			if (n == (ssize_t)len)
				CHECK_MEM(all, p, len);
			free(all);
			cn_buf_fini(&w.b);
			cn_obj_reader_close(rd);
		}
		free(p);
	}
	CHECK_EQ_INT(count_entries(drive) >= 0, 1);
	CHECK_EQ_INT(tmp_garbage(), 0);
	cn_obj_store_close(s);
}

TEST(test_overwrite_and_delete)
{
	fresh();
	cn_obj_store *s = open_store(true);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	unsigned char *big = pattern(300000, 1), *small = pattern(10, 2);
	CHECK_EQ_INT(put_bytes(s, "bkt", "x/y/z", big, 300000), CN_OK);
	CHECK_EQ_INT(put_bytes(s, "bkt", "x/y/z", small, 10), CN_OK);
	size_t n;
	unsigned char *g = get_bytes(s, "bkt", "x/y/z", &n, false, NULL);
	CHECK(g && n == 10 && !memcmp(g, small, 10));
	free(g);
	char kd[400];
	snprintf(kd, sizeof kd, "%s/bkt/x/y/z", drive);
	CHECK_EQ_INT(count_entries(kd), -1); /* old data folder removed, and its folder */
	CHECK(exists("bkt/x/y/%m.z"));
	CHECK_EQ_INT(put_bytes(s, "bkt", "x/y/z", big, 300000), CN_OK);
	CHECK_EQ_INT(put_bytes(s, "bkt", "x/y/z", big, 300000), CN_OK);
	CHECK_EQ_INT(count_entries(kd), 1); /* the latest data folder */
	CHECK_EQ_INT(put_bytes(s, "bkt", "x/keep", small, 10), CN_OK);
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "x/y/z"), CN_OK);
	CHECK(!exists("bkt/x/y"));   /* empty parents removed ... */
	CHECK(exists("bkt/x/%m.keep")); /* ... up to a non-empty one */
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "x/y/z", NULL), CN_ERR_NO_KEY);
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "x/y/z"), CN_ERR_NO_KEY);
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "x"), CN_ERR_NO_KEY);
	CHECK_EQ_INT(cn_obj_delete(s, "nob", "x"), CN_ERR_NO_BUCKET);
	CHECK_EQ_INT(cn_obj_stat(s, "nob", "x", NULL), CN_ERR_NO_BUCKET);
	CHECK_EQ_INT(put_bytes(s, "nob", "x", small, 10), CN_ERR_NO_BUCKET);
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "x/keep"), CN_OK);
	CHECK_EQ_INT(count_entries(drive) , 2); /* .cairn.sys and bkt */
	char bd[400];
	snprintf(bd, sizeof bd, "%s/bkt", drive);
	CHECK_EQ_INT(count_entries(bd), 0);
	free(big);
	free(small);
	cn_obj_store_close(s);
}

static const char *weird_keys[] = {
	"a", "a/b", "a/b/c", "dir/", "dir/x", "a//b", "//", "/", "/lead", ".", "..", "../x", "x/../..",
	"./.", "%x", "%meta", "a/%meta", "%=", "%d.0123", "a-c", "a/", "é/ü/日本語", "emoji😀",
	"trail/ing/", "sp ace", "a\\b", "~", ".cairn.sys", "x/.cairn.sys/format",
};

/* Walks base recursively; returns false when a file outside drive/ exists. */
static bool nothing_outside(void)
{
	DIR *d = opendir(base);
	if (!d)
		return false;
	struct dirent *e;
	bool ok = true;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "d"))
			ok = false;
	closedir(d);
	DIR *r = opendir(drive);
	while (r && (e = readdir(r)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, "bkt"))
			ok = false;
	if (r)
		closedir(r);
	return ok;
}

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

TEST(test_weird_keys)
{
	fresh();
	cn_obj_store *s = open_store(false);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	size_t nk = sizeof weird_keys / sizeof *weird_keys;
	char long_key[1100], long_comp[400];
	memset(long_key, 0, sizeof long_key);
	for (int i = 0; i < 1024; i++)
		long_key[i] = (i % 8 == 7) ? '/' : (char)('a' + i % 7);
	long_key[1023] = 'z';
	for (size_t i = 0; i < nk; i++) {
		unsigned char *p = pattern(100 + i, (unsigned)i);
		CHECK_EQ_INT(put_bytes(s, "bkt", weird_keys[i], p, 100 + i), CN_OK);
		free(p);
	}
	CHECK_EQ_INT(put_bytes(s, "bkt", long_key, "L", 1), CN_OK);
	for (size_t i = 0; i < nk; i++) {
		size_t n;
		cn_err e;
		unsigned char *g = get_bytes(s, "bkt", weird_keys[i], &n, false, &e);
		unsigned char *p = pattern(100 + i, (unsigned)i);
		if (!g || n != 100 + i || memcmp(g, p, n))
			fprintf(stderr, "key %s: %s\n", weird_keys[i], cn_err_str(e));
		CHECK(g && n == 100 + i && !memcmp(g, p, n));
		free(g);
		free(p);
	}
	size_t n;
	unsigned char *g = get_bytes(s, "bkt", long_key, &n, false, NULL);
	CHECK(g && n == 1 && g[0] == 'L');
	free(g);
	/* rejected keys */
	long_key[1024] = 'q';
	CHECK_EQ_INT(put_bytes(s, "bkt", long_key, "L", 1), CN_ERR_KEY_TOO_LONG);
	CHECK_EQ_INT(cn_obj_key_check(long_key, 1025), CN_ERR_KEY_TOO_LONG);
	memset(long_comp, 'c', 300);
	long_comp[300] = 0;
	CHECK_EQ_INT(put_bytes(s, "bkt", long_comp, "L", 1), CN_ERR_BAD_KEY);
	long_comp[255] = 0;
	CHECK_EQ_INT(put_bytes(s, "bkt", long_comp, "L", 1), CN_OK);
	long_comp[0] = '%'; /* escaped: 257 bytes on disk */
	CHECK_EQ_INT(put_bytes(s, "bkt", long_comp, "L", 1), CN_ERR_BAD_KEY);
	long_comp[253] = 0;
	CHECK_EQ_INT(put_bytes(s, "bkt", long_comp, "L", 1), CN_OK);
	CHECK_EQ_INT(put_bytes(s, "bkt", "bad\xff", "L", 1), CN_ERR_BAD_KEY);
	CHECK_EQ_INT(put_bytes(s, "bkt", "\xc0\xaf", "L", 1), CN_ERR_BAD_KEY);
	CHECK_EQ_INT(put_bytes(s, "bkt", "", "L", 1), CN_ERR_BAD_KEY);
	CHECK_EQ_INT(cn_obj_key_check("a\0b", 3), CN_ERR_BAD_KEY);
	CHECK(nothing_outside());
	/* every stored key listed exactly once, in order */
	cn_list_result lr;
	CHECK_EQ_INT(cn_obj_list(s, "bkt", NULL, NULL, NULL, 1000, &lr), CN_OK);
	CHECK_EQ_INT(lr.nobjects, nk + 3);
	char *want[64];
	size_t nw = 0;
	for (size_t i = 0; i < nk; i++)
		want[nw++] = (char *)weird_keys[i];
	long_key[1024] = 0;
	want[nw++] = long_key;
	char c255[256], c253[256];
	memset(c255, 'c', 255);
	c255[255] = 0;
	memset(c253, 'c', 253);
	c253[0] = '%';
	c253[253] = 0;
	want[nw++] = c255;
	want[nw++] = c253;
	qsort(want, nw, sizeof *want, strp_cmp);
	for (size_t i = 0; i < nw && i < lr.nobjects; i++)
		CHECK_EQ_STR(lr.objects[i].key, want[i]);
	cn_list_result_fini(&lr);
	/* delete everything: the bucket folder ends empty */
	for (size_t i = 0; i < nw; i++)
		CHECK_EQ_INT(cn_obj_delete(s, "bkt", want[i]), CN_OK);
	char bd[400];
	snprintf(bd, sizeof bd, "%s/bkt", drive);
	CHECK_EQ_INT(count_entries(bd), 0);
	CHECK(nothing_outside());
	cn_obj_store_close(s);
}

/* --- listing against a model --------------------------------------------------------- */

typedef struct model_res {
	char *items[2000]; /* objects and prefixes in order; prefixes marked by is_p */
	bool is_p[2000];
	size_t n;
	bool truncated;
} model_res;

static void model_list(char **keys, size_t nk, const char *prefix, const char *delim,
                       const char *after, size_t max, model_res *r)
{
	size_t pl = strlen(prefix);
	r->n = 0;
	r->truncated = false;
	char *lastp = NULL;
	for (size_t i = 0; i < nk; i++) {
		const char *k = keys[i];
		if (strncmp(k, prefix, pl) || strcmp(k, after) <= 0)
			continue;
		const char *d = delim && *delim ? strstr(k + pl, delim) : NULL;
		if (d) {
			size_t cl = (size_t)(d - k) + strlen(delim);
			char *cp = strndup(k, cl);
			if (strcmp(cp, after) <= 0 || (lastp && !strcmp(lastp, cp))) {
				free(cp);
				continue;
			}
			if (r->n == max) {
				r->truncated = true;
				free(cp);
				return;
			}
			lastp = cp;
			r->is_p[r->n] = true;
			r->items[r->n++] = cp;
		} else {
			if (r->n == max) {
				r->truncated = true;
				return;
			}
			r->is_p[r->n] = false;
			r->items[r->n++] = strdup(k);
		}
	}
}

static void model_free(model_res *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->items[i]);
	r->n = 0;
}

/* Compares a list result (objects and prefixes merged in key order) with the model. */
static bool same_as_model(const cn_list_result *lr, const model_res *m)
{
	if (lr->nobjects + lr->nprefixes != m->n || lr->truncated != m->truncated)
		return false;
	size_t oi = 0, pi = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (m->is_p[i]) {
			if (pi >= lr->nprefixes || strcmp(lr->prefixes[pi++], m->items[i]))
				return false;
		} else if (oi >= lr->nobjects || strcmp(lr->objects[oi++].key, m->items[i])) {
			return false;
		}
	}
	return true;
}

TEST(test_list_model)
{
	fresh();
	cn_obj_store *s = open_store(false);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	static const char alpha[] = "ab-/%.";
	char *keys[400];
	size_t nk = 0;
	uint32_t x = 12345;
	while (nk < 250) {
		char k[16];
		x = x * 1103515245u + 12345u;
		int len = 1 + (int)((x >> 16) % 7);
		for (int i = 0; i < len; i++) {
			x = x * 1103515245u + 12345u;
			k[i] = alpha[(x >> 16) % 6];
		}
		k[len] = 0;
		bool dup = false;
		for (size_t i = 0; i < nk; i++)
			dup |= !strcmp(keys[i], k);
		if (dup)
			continue;
		keys[nk++] = strdup(k);
	}
	keys[nk++] = strdup("a-c");
	keys[nk++] = strdup("a/b");
	for (size_t i = 0; i < nk; i++)
		CHECK_EQ_INT(put_bytes(s, "bkt", keys[i], keys[i], strlen(keys[i])), CN_OK);
	qsort(keys, nk, sizeof *keys, strp_cmp);
	/* the classic ordering case */
	cn_list_result lr;
	CHECK_EQ_INT(cn_obj_list(s, "bkt", "a", NULL, NULL, 1000, &lr), CN_OK);
	size_t ia = SIZE_MAX, ib = SIZE_MAX;
	for (size_t i = 0; i < lr.nobjects; i++) {
		if (!strcmp(lr.objects[i].key, "a-c"))
			ia = i;
		if (!strcmp(lr.objects[i].key, "a/b"))
			ib = i;
	}
	CHECK(ia < ib && ib != SIZE_MAX);
	cn_list_result_fini(&lr);
	CHECK_EQ_INT(cn_obj_list(s, "bkt", "a-c", NULL, "a-b", 2, &lr), CN_OK);
	CHECK(lr.nobjects >= 1 && !strcmp(lr.objects[0].key, "a-c"));
	CHECK_EQ_INT(lr.objects[0].size, 3);
	CHECK_EQ_STR(lr.objects[0].storage_class, "STANDARD");
	cn_list_result_fini(&lr);
	/* random queries against the model, and full pagination */
	const char *delims[] = { NULL, "/", "-", "%.", "a" };
	int bad = 0;
	for (int q = 0; q < 300; q++) {
		x = x * 1103515245u + 12345u;
		const char *delim = delims[(x >> 16) % 5];
		char prefix[8] = "", after[8] = "";
		x = x * 1103515245u + 12345u;
		int pl = (int)((x >> 16) % 3);
		for (int i = 0; i < pl; i++) {
			x = x * 1103515245u + 12345u;
			prefix[i] = alpha[(x >> 16) % 6];
		}
		x = x * 1103515245u + 12345u;
		if ((x >> 16) % 2) {
			const char *k = keys[(x >> 8) % nk];
			snprintf(after, sizeof after, "%.*s", (int)((x >> 4) % 5) + 1, k);
		}
		x = x * 1103515245u + 12345u;
		size_t max = 1 + (x >> 16) % 9;
		if (q % 10 == 0)
			max = 1000;
		model_res m;
		model_list(keys, nk, prefix, delim, after, max, &m);
		cn_err e = cn_obj_list(s, "bkt", prefix, delim, after, max, &lr);
		if (e || !same_as_model(&lr, &m)) {
			if (bad++ < 5)
				fprintf(stderr, "list mismatch prefix=%s delim=%s after=%s max=%zu: got %zu+%zu "
				        "trunc %d, want %zu trunc %d\n", prefix, delim ? delim : "-", after, max,
				        lr.nobjects, lr.nprefixes, lr.truncated, m.n, m.truncated);
		}
		if (!e && lr.truncated) {
			/* next_marker is the last item returned */
			CHECK(m.n > 0 && !strcmp(lr.next_marker, m.items[m.n - 1]));
		}
		cn_list_result_fini(&lr);
		model_free(&m);
		/* pagination reproduces the full listing */
		if (q % 15 == 0) {
			model_res full;
			model_list(keys, nk, prefix, delim, "", 2000, &full);
			size_t got = 0;
			char marker[1100] = "";
			for (int page = 0; page < 2000; page++) {
				CHECK_EQ_INT(cn_obj_list(s, "bkt", prefix, delim, marker, max, &lr), CN_OK);
				size_t oi = 0, pi = 0;
				while (oi < lr.nobjects || pi < lr.nprefixes) {
					const char *it;
					if (pi >= lr.nprefixes ||
					    (oi < lr.nobjects && strcmp(lr.objects[oi].key, lr.prefixes[pi]) < 0))
						it = lr.objects[oi++].key;
					else
						it = lr.prefixes[pi++];
					if (got >= full.n || strcmp(it, full.items[got]))
						bad++;
					got++;
				}
				bool more = lr.truncated;
				if (more)
					snprintf(marker, sizeof marker, "%s", lr.next_marker);
				cn_list_result_fini(&lr);
				if (!more)
					break;
			}
			if (got != full.n)
				bad++;
			model_free(&full);
		}
	}
	CHECK_EQ_INT(bad, 0);
	/* delimiter "/" rolls a subtree up without listing it */
	CHECK_EQ_INT(cn_obj_list(s, "bkt", "", "/", NULL, 1000, &lr), CN_OK);
	for (size_t i = 0; i < lr.nprefixes; i++)
		CHECK(strchr(lr.prefixes[i], '/') == lr.prefixes[i] + strlen(lr.prefixes[i]) - 1);
	cn_list_result_fini(&lr);
	CHECK_EQ_INT(cn_obj_list(s, "nob", "", "/", NULL, 1000, &lr), CN_ERR_NO_BUCKET);
	for (size_t i = 0; i < nk; i++)
		free(keys[i]);
	cn_obj_store_close(s);
}

TEST(test_list_skips_empty_dirs_and_corrupt)
{
	fresh();
	cn_obj_store *s = open_store(false);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(put_bytes(s, "bkt", "d/x", "1", 1), CN_OK);
	CHECK_EQ_INT(put_bytes(s, "bkt", "e", "1", 1), CN_OK);
	char p[600];
	snprintf(p, sizeof p, "mkdir -p %s/bkt/empty/deeper/still %s/bkt/d/gone", drive, drive);
	CHECK(system(p) == 0);
	cn_list_result lr;
	CHECK_EQ_INT(cn_obj_list(s, "bkt", "", "/", NULL, 1000, &lr), CN_OK);
	CHECK_EQ_INT(lr.nprefixes, 1);
	CHECK_EQ_INT(lr.nobjects, 1);
	if (lr.nprefixes == 1)
		CHECK_EQ_STR(lr.prefixes[0], "d/");
	cn_list_result_fini(&lr);
	/* corrupt record: stat says so, listing skips it */
	snprintf(p, sizeof p, "%s/bkt/%%m.e", drive);
	int fd = open(p, O_RDWR);
	unsigned char c;
	CHECK(pread(fd, &c, 1, 20) == 1);
	c ^= 0x40;
	CHECK(pwrite(fd, &c, 1, 20) == 1);
	close(fd);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "e", NULL), CN_ERR_CORRUPT);
	cn_obj_reader *r;
	CHECK_EQ_INT(cn_obj_open(s, "bkt", "e", NULL, &r), CN_ERR_CORRUPT);
	CHECK_EQ_INT(cn_obj_list(s, "bkt", "", NULL, NULL, 1000, &lr), CN_OK);
	CHECK_EQ_INT(lr.nobjects, 1);
	cn_list_result_fini(&lr);
	/* a truncated (torn) record too */
	CHECK(truncate(p, 10) == 0);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "e", NULL), CN_ERR_CORRUPT);
	/* overwriting a corrupt record works */
	CHECK_EQ_INT(put_bytes(s, "bkt", "e", "22", 2), CN_OK);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "e", NULL), CN_OK);
	cn_obj_store_close(s);
}

/* --- concurrency and snapshots ------------------------------------------------------- */

#define NTHREADS 8
#define CBODY 200000

typedef struct cput {
	cn_obj_store *s;
	int id;
	unsigned char *body;
	cn_err e;
} cput;

static void *cput_run(void *arg)
{
	cput *c = arg;
	for (int i = 0; i < 5; i++) {
		size_t len = (c->id & 1) ? 1000 : CBODY; /* mix inline and file versions */
		cn_err e = put_bytes(c->s, "bkt", "hot/key", c->body, len);
		if (e)
			c->e = e;
	}
	return NULL;
}

TEST(test_concurrent_puts)
{
	fresh();
	cn_obj_store *s = open_store(true);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	pthread_t th[NTHREADS];
	cput c[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		c[i] = (cput){ s, i, pattern(CBODY, 100 + (unsigned)i), CN_OK };
		pthread_create(&th[i], NULL, cput_run, &c[i]);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	size_t n;
	unsigned char *g = get_bytes(s, "bkt", "hot/key", &n, false, NULL);
	int matches = 0;
	for (int i = 0; i < NTHREADS; i++) {
		CHECK_EQ_INT(c[i].e, CN_OK);
		size_t len = (i & 1) ? 1000 : CBODY;
		if (g && n == len && !memcmp(g, c[i].body, len))
			matches++;
		free(c[i].body);
	}
	CHECK_EQ_INT(matches, 1);
	free(g);
	char kd[400];
	snprintf(kd, sizeof kd, "%s/bkt/hot/key", drive);
	int ents = count_entries(kd);
	/* the record (beside the folder) and at most the winner's data folder: none when the
	 * winner was inline (the folder went with the last data folder), else one */
	CHECK(exists("bkt/hot/%m.key"));
	CHECK_EQ_INT(ents, (n == 1000) ? -1 : 1);
	cn_obj_store_close(s);
}

TEST(test_reader_snapshot)
{
	fresh();
	cn_obj_store *s = open_store(false);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	size_t sizes[] = { 500, 400000 };
	for (int k = 0; k < 2; k++) {
		unsigned char *a = pattern(sizes[k], 1), *b = pattern(sizes[k], 2);
		CHECK_EQ_INT(put_bytes(s, "bkt", "snap", a, sizes[k]), CN_OK);
		cn_obj_reader *r;
		cn_obj_info info;
		cn_obj_info_init(&info);
		CHECK_EQ_INT(cn_obj_open(s, "bkt", "snap", &info, &r), CN_OK);
		CHECK_EQ_INT(put_bytes(s, "bkt", "snap", b, sizes[k]), CN_OK);
		mem_writer w = { { mem_write, k ? mem_send_fd : NULL, NULL }, { 0 } };
		cn_buf_init(&w.b);
		CHECK_EQ_INT(cn_obj_read(r, 0, info.size, &w.w), CN_OK);
		CHECK(w.b.len == sizes[k] && !memcmp(w.b.p, a, sizes[k]));
		CHECK_EQ_INT(cn_obj_delete(s, "bkt", "snap"), CN_OK);
		w.b.len = 0;
		CHECK_EQ_INT(cn_obj_read(r, 0, info.size, &w.w), CN_OK);
		CHECK(w.b.len == sizes[k] && !memcmp(w.b.p, a, sizes[k]));
		cn_buf_fini(&w.b);
		cn_obj_reader_close(r);
		cn_obj_info_fini(&info);
		free(a);
		free(b);
	}
	cn_obj_store_close(s);
}

/* OBJ-6: a replaced version's data folder stays while a reader that opened before the
 * replacement is open (older readers of the key included), and goes with the last of
 * them; readers opened after the replacement, and readers of other keys, never hold it. */
TEST(test_readers_keep_replaced_data)
{
	fresh();
	cn_obj_store *s = open_store(false);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	size_t big = 400000; /* above inline_max: a data folder in bkt/k/ */
	unsigned char *a = pattern(big, 1), *b = pattern(big, 2);
	CHECK_EQ_INT(put_bytes(s, "bkt", "k", a, big), CN_OK);
	CHECK_EQ_INT(put_bytes(s, "bkt", "other", b, big), CN_OK);
	cn_obj_reader *r1, *r2, *ro, *r3;
	CHECK_EQ_INT(cn_obj_open(s, "bkt", "k", NULL, &r1), CN_OK);
	CHECK_EQ_INT(cn_obj_open(s, "bkt", "k", NULL, &r2), CN_OK);
	CHECK_EQ_INT(cn_obj_open(s, "bkt", "other", NULL, &ro), CN_OK);
	CHECK_EQ_INT(put_bytes(s, "bkt", "k", "small", 5), CN_OK); /* inline now */
	CHECK(exists("bkt/k"));
	cn_obj_reader_close(r2); /* the newest reader: r1 still holds it */
	CHECK(exists("bkt/k"));
	cn_obj_reader_close(ro); /* another key's reader */
	CHECK(exists("bkt/k"));
	cn_obj_reader_close(r1); /* the last: the data folder and the empty key folder go */
	CHECK(!exists("bkt/k"));
	/* a reader opened after a replacement does not hold the replaced data */
	CHECK_EQ_INT(put_bytes(s, "bkt", "k", a, big), CN_OK);
	CHECK_EQ_INT(count_in("bkt/k"), 1);
	CHECK_EQ_INT(cn_obj_open(s, "bkt", "k", NULL, &r1), CN_OK);
	CHECK_EQ_INT(cn_obj_open(s, "bkt", "other", NULL, &ro), CN_OK);
	CHECK_EQ_INT(put_bytes(s, "bkt", "k", b, big), CN_OK);
	CHECK_EQ_INT(count_in("bkt/k"), 2); /* r1's version kept */
	CHECK_EQ_INT(cn_obj_open(s, "bkt", "k", NULL, &r3), CN_OK);
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "k"), CN_OK);
	cn_obj_reader_close(r1);
	CHECK_EQ_INT(count_in("bkt/k"), 1); /* r3's (deleted) version only */
	mem_writer w = { { mem_write, mem_send_fd, NULL }, { 0 } };
	cn_buf_init(&w.b);
	CHECK_EQ_INT(cn_obj_read(r3, 0, (int64_t)big, &w.w), CN_OK);
	CHECK(w.b.len == big && !memcmp(w.b.p, b, big));
	cn_buf_fini(&w.b);
	cn_obj_reader_close(r3);
	CHECK(!exists("bkt/k"));
	cn_obj_reader_close(ro);
	cn_obj_store_close(s);
	free(a);
	free(b);
}

/* --- start-up, format ---------------------------------------------------------------- */

TEST(test_tmp_cleanup_and_format)
{
	fresh();
	cn_obj_store *s = open_store(true);
	CHECK(s != NULL);
	cn_obj_store_close(s);
	char cmd[900];
	snprintf(cmd, sizeof cmd, "mkdir -p %s/.cairn.sys/tmp/junk/deep && echo x > "
	         "%s/.cairn.sys/tmp/junk/deep/f && echo y > %s/.cairn.sys/tmp/top", drive, drive, drive);
	CHECK(system(cmd) == 0);
	s = open_store(true);
	CHECK(s != NULL);
	CHECK_EQ_INT(tmp_garbage(), 0);
	cn_obj_store_close(s);
	/* the format survives reopening unchanged */
	char fpath[400], before[512] = "", after_[512] = "";
	snprintf(fpath, sizeof fpath, "%s/.cairn.sys/format", drive);
	FILE *f = fopen(fpath, "r");
	CHECK(f && fread(before, 1, sizeof before - 1, f) > 0);
	if (f)
		fclose(f);
	CHECK(strstr(before, "cairn-format 2\n") && strstr(before, "deployment "));
	s = open_store(false);
	cn_obj_store_close(s);
	f = fopen(fpath, "r");
	CHECK(f && fread(after_, 1, sizeof after_ - 1, f) > 0);
	if (f)
		fclose(f);
	CHECK_EQ_STR(after_, before);
	/* a drive of another deployment's layout (slot 3 of 4) is refused */
	f = fopen(fpath, "w");
	fprintf(f, "cairn-format 2\ndeployment 00112233445566778899aabbccddeeff\npools 1\nsets 1\n"
	        "drives-per-set 4\npool 0\nset 0\ndrive 3\n");
	fclose(f);
	cn_obj_config cfg = { .durable = false, .inline_max = inline_max };
	const char *d[] = { drive };
	cn_obj_store *s2 = NULL;
	CHECK_EQ_INT(cn_obj_store_open(d, 1, &cfg, &s2), CN_ERR_INVALID);
	f = fopen(fpath, "w");
	fprintf(f, "cairn-format 9\ndeployment 00112233445566778899aabbccddeeff\n");
	fclose(f);
	CHECK_EQ_INT(cn_obj_store_open(d, 1, &cfg, &s2), CN_ERR_CORRUPT);
	f = fopen(fpath, "w");
	fprintf(f, "garbage\n");
	fclose(f);
	CHECK_EQ_INT(cn_obj_store_open(d, 1, &cfg, &s2), CN_ERR_CORRUPT);
	const char *d2[] = { drive, drive };
	CHECK_EQ_INT(cn_obj_store_open(d2, 2, &cfg, &s2), CN_ERR_INVALID);
}

/* --- put abort paths ----------------------------------------------------------------- */

static cn_err seal_reject(void *ctx, const unsigned char md5[16], int64_t size, cn_kv **add,
                          size_t *nadd)
{
	return CN_ERR_DIGEST;
}

static cn_err seal_add(void *ctx, const unsigned char md5[16], int64_t size, cn_kv **add,
                       size_t *nadd)
{
	*(int64_t *)ctx = size;
	*add = calloc(1, sizeof **add);
	(*add)[0].name = strdup("x-amz-checksum-crc32");
	(*add)[0].value = strdup("AAAAAA==");
	*nadd = 1;
	return CN_OK;
}

static bool tmp_empty(void)
{
	return tmp_garbage() == 0;
}

TEST(test_put_aborts)
{
	fresh();
	cn_obj_store *s = open_store(false);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	unsigned char *old = pattern(3 * MiB, 7), *nw = pattern(3 * MiB, 8);
	CHECK_EQ_INT(put_bytes(s, "bkt", "k", old, 3 * MiB), CN_OK);
	size_t sizes[] = { 100, 3 * MiB };
	for (int i = 0; i < 2; i++) {
		mem_reader r = mem(nw, sizes[i]);
		cn_put_opts o = { .size = -1, .seal = seal_reject };
		CHECK_EQ_INT(cn_obj_put(s, "bkt", "k", &r.r, &o, NULL), CN_ERR_DIGEST);
		r = mem(nw, sizes[i]);
		r.fail_at = sizes[i] / 2;
		r.fail_err = CN_ERR_TIMEOUT;
		o.seal = NULL;
		CHECK_EQ_INT(cn_obj_put(s, "bkt", "k", &r.r, &o, NULL), CN_ERR_TIMEOUT);
		r = mem(nw, sizes[i]);
		o.size = (int64_t)sizes[i] + 1;
		CHECK_EQ_INT(cn_obj_put(s, "bkt", "k", &r.r, &o, NULL), CN_ERR_CLOSED);
		r = mem(nw, sizes[i]);
		o.size = (int64_t)sizes[i] - 1;
		CHECK_EQ_INT(cn_obj_put(s, "bkt", "k", &r.r, &o, NULL), CN_ERR_INVALID);
		CHECK(tmp_empty());
	}
	size_t n;
	unsigned char *g = get_bytes(s, "bkt", "k", &n, false, NULL);
	CHECK(g && n == 3 * MiB && !memcmp(g, old, n));
	free(g);
	/* seal adds metadata; caller's meta kept in order */
	int64_t sealed = -1;
	cn_kv meta[] = { { "content-type", "text/plain" }, { "x-amz-meta-foo", "bar" } };
	mem_reader r = mem("hello", 5);
	cn_put_opts o = { .meta = meta, .nmeta = 2, .size = 5, .seal = seal_add, .seal_ctx = &sealed };
	CHECK_EQ_INT(cn_obj_put(s, "bkt", "k", &r.r, &o, NULL), CN_OK);
	CHECK_EQ_INT(sealed, 5);
	cn_obj_info info;
	cn_obj_info_init(&info);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "k", &info), CN_OK);
	CHECK_EQ_INT(info.nmeta, 3);
	if (info.nmeta == 3) {
		CHECK_EQ_STR(info.meta[0].name, "content-type");
		CHECK_EQ_STR(info.meta[2].name, "x-amz-checksum-crc32");
	}
	CHECK_EQ_STR(cn_obj_info_get(&info, "x-amz-meta-foo"), "bar");
	CHECK(cn_obj_info_get(&info, "nope") == NULL);
	CHECK_EQ_STR(info.etag, "5d41402abc4b2a76b9719d911017c592");
	cn_obj_info_fini(&info);
	/* storage class from the header */
	cn_kv rrs[] = { { "x-amz-storage-class", "REDUCED_REDUNDANCY" } };
	r = mem("x", 1);
	cn_put_opts o2 = { .meta = rrs, .nmeta = 1, .size = 1 };
	CHECK_EQ_INT(cn_obj_put(s, "bkt", "rrs", &r.r, &o2, NULL), CN_OK);
	cn_obj_info_init(&info);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "rrs", &info), CN_OK);
	CHECK_EQ_STR(info.storage_class, "REDUCED_REDUNDANCY");
	cn_obj_info_fini(&info);
	CHECK(tmp_empty());
	free(old);
	free(nw);
	cn_obj_store_close(s);
}

/* --- buckets ------------------------------------------------------------------------- */

TEST(test_buckets)
{
	fresh();
	cn_obj_store *s = open_store(true);
	const char *good[] = { "abc", "a-b.c", "my.bucket-1", "123", "a1.b2" };
	const char *bad[] = { "ab", "ABC", "a_b", "-abc", "abc-", ".abc", "abc.", "a..b", "192.168.1.1",
	                      "xn--abc", "abc-s3alias", "a b", "",
	                      "0123456789012345678901234567890123456789012345678901234567890123" };
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		CHECK(cn_obj_bucket_name_valid(good[i]));
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		CHECK(!cn_obj_bucket_name_valid(bad[i]));
	CHECK_EQ_INT(cn_obj_make_bucket(s, "zeta"), CN_OK);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "alpha"), CN_OK);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "alpha"), CN_ERR_BUCKET_EXISTS);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "Bad_Name"), CN_ERR_BAD_BUCKET_NAME);
	cn_bucket_info bi;
	int64_t now = cn_now_ms();
	CHECK_EQ_INT(cn_obj_head_bucket(s, "alpha", &bi), CN_OK);
	CHECK_EQ_STR(bi.name, "alpha");
	CHECK(bi.created_ms <= now && bi.created_ms > now - 60000);
	CHECK_EQ_INT(cn_obj_head_bucket(s, "nope", &bi), CN_ERR_NO_BUCKET);
	cn_bucket_info *l;
	size_t n;
	CHECK_EQ_INT(cn_obj_list_buckets(s, &l, &n), CN_OK);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK_EQ_STR(l[0].name, "alpha");
		CHECK_EQ_STR(l[1].name, "zeta");
	}
	free(l);
	CHECK_EQ_INT(put_bytes(s, "alpha", "a/b/c", "x", 1), CN_OK);
	CHECK_EQ_INT(cn_obj_delete_bucket(s, "alpha"), CN_ERR_BUCKET_NOT_EMPTY);
	CHECK_EQ_INT(cn_obj_delete(s, "alpha", "a/b/c"), CN_OK);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "mkdir -p %s/alpha/left/over", drive);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(cn_obj_delete_bucket(s, "alpha"), CN_OK);
	CHECK_EQ_INT(cn_obj_delete_bucket(s, "alpha"), CN_ERR_NO_BUCKET);
	CHECK_EQ_INT(cn_obj_head_bucket(s, "alpha", NULL), CN_ERR_NO_BUCKET);
	CHECK(!exists("alpha"));
	CHECK(tmp_empty());
	CHECK_EQ_INT(cn_obj_list_buckets(s, &l, &n), CN_OK);
	CHECK_EQ_INT(n, 1);
	free(l);
	cn_obj_store_close(s);
}

/* A body of len generated bytes (no buffer of its size anywhere in the test). */
typedef struct gen_reader {
	cn_reader r;
	size_t len, pos;
} gen_reader;

static ssize_t gen_read(cn_reader *r, void *buf, size_t len)
{
	gen_reader *g = (gen_reader *)r;
	size_t n = g->len - g->pos < len ? g->len - g->pos : len;
	for (size_t i = 0; i < n; i++)
		((unsigned char *)buf)[i] = (unsigned char)((g->pos + i) * 131 >> 7);
	g->pos += n;
	return (ssize_t)n;
}

/* The process's peak resident size in KiB since the last reset (VmHWM); -1 unknown. */
static long peak_rss_kib(bool reset)
{
	if (reset) {
		FILE *c = fopen("/proc/self/clear_refs", "w");
		if (!c)
			return -1;
		bool ok = fputs("5", c) >= 0;
		if (fclose(c) != 0 || !ok)
			return -1;
	}
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmHWM:", 6))
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

/* STORE-4: a put streams its body through the thread's I/O buffers: the peak resident size
 * grows by far less than the object during a 192 MiB put (after a small one made the
 * buffers). */
TEST(test_put_memory_bounded)
{
	fresh();
	cn_obj_store *s = open_store(false);
	CHECK(s && cn_obj_make_bucket(s, "bkt") == CN_OK);
	gen_reader small = { { gen_read }, 1 << 20, 0 };
	cn_put_opts o = { .size = 1 << 20 };
	CHECK_EQ_INT(cn_obj_put(s, "bkt", "small", &small.r, &o, NULL), CN_OK);
	long before = peak_rss_kib(true);
	if (before < 0) {
		cn_obj_store_close(s);
		SKIP("no /proc/self/clear_refs or VmHWM");
	}
	gen_reader big = { { gen_read }, (size_t)192 << 20, 0 };
	o.size = (int64_t)big.len;
	CHECK_EQ_INT(cn_obj_put(s, "bkt", "big", &big.r, &o, NULL), CN_OK);
	long after = peak_rss_kib(false);
	CHECK(after - before < 48 * 1024);
	cn_obj_store_close(s);
}

int main(void)
{
	cn_log_min = CN_LOG_ERROR + 1;
	snprintf(base, sizeof base, "/tmp/cn_obj_test.%d", (int)getpid());
	snprintf(drive, sizeof drive, "%s/d", base);
	RUN(test_roundtrip_sizes);
	RUN(test_overwrite_and_delete);
	RUN(test_weird_keys);
	RUN(test_list_model);
	RUN(test_list_skips_empty_dirs_and_corrupt);
	RUN(test_concurrent_puts);
	RUN(test_reader_snapshot);
	RUN(test_readers_keep_replaced_data);
	RUN(test_tmp_cleanup_and_format);
	RUN(test_put_aborts);
	RUN(test_buckets);
	RUN(test_put_memory_bounded);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", base);
	if (system(cmd) != 0)
		return 1;
	TEST_END();
}
