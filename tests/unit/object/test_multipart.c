/* Unit tests of the object layer's multipart uploads, metadata updates and bucket
 * configuration documents (object.h) over one local drive: completion byte-exact through
 * both read paths and across part boundaries, the ETag rule, the completion checks and
 * their order, re-uploaded parts, abort, listing with markers and delimiters, the
 * stale-upload janitor, and that nothing is left in the upload area afterwards. */
#include "object/object.h"
#include "test.h"

#include <dirent.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static char base[48], drive[56];

typedef struct mem_reader {
	cn_reader r;
	const unsigned char *p;
	size_t len, pos;
} mem_reader;

static ssize_t mem_read(cn_reader *r, void *buf, size_t len)
{
	mem_reader *m = (mem_reader *)r;
	size_t n = m->len - m->pos;
	if (n > len)
		n = len;
	if (n > 300000)
		n = 300000; /* uneven chunks */
	memcpy(buf, m->p + m->pos, n);
	m->pos += n;
	return (ssize_t)n;
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

static void md5_bin(const void *p, size_t len, unsigned char out[16])
{
	unsigned int n;
	EVP_Digest(p, len, out, &n, EVP_md5(), NULL);
}

static cn_obj_store *open_store(int64_t expiry_ms, int64_t cleanup_ms)
{
	cn_obj_config cfg = { .durable = true, .inline_max = 128 * 1024,
	                      .upload_expiry_ms = expiry_ms, .upload_cleanup_ms = cleanup_ms };
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

static cn_err put_part(cn_obj_store *s, const char *key, const char *id, uint32_t n,
                       const unsigned char *p, size_t len, cn_obj_info *out)
{
	mem_reader r = { { mem_read }, p, len, 0 };
	cn_put_opts o = { .size = (int64_t)len };
	return cn_obj_upload_part(s, "bkt", key, id, n, &r.r, &o, out);
}

/* Reads [off, off+len) of the object; NULL on error. */
static unsigned char *get_range(cn_obj_store *s, const char *key, int64_t off, int64_t len, bool use_fd)
{
	cn_obj_reader *r;
	cn_obj_info info;
	cn_obj_info_init(&info);
	if (cn_obj_open(s, "bkt", key, &info, &r))
		return NULL;
	mem_writer w = { { mem_write, use_fd ? mem_send_fd : NULL, NULL }, { 0 } };
	cn_buf_init(&w.b);
	cn_err e = cn_obj_read(r, off, len, &w.w);
	cn_obj_reader_close(r);
	cn_obj_info_fini(&info);
	if (e || (int64_t)w.b.len != len) {
		cn_buf_fini(&w.b);
		return NULL;
	}
	if (!w.b.p)
		w.b.p = malloc(1);
	return (unsigned char *)w.b.p;
}

static int upload_area_entries(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/.cairn.sys/multipart/bkt", drive);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

TEST(test_complete_roundtrip)
{
	fresh();
	cn_obj_store *s = open_store(0, 0);
	CHECK(s && cn_obj_make_bucket(s, "bkt") == CN_OK);
	cn_kv meta[] = { { "content-type", "text/plain" }, { "x-amz-meta-a", "1" } };
	char id[CN_OBJ_UPLOAD_ID_MAX];
	CHECK_EQ_INT(cn_obj_upload_create(s, "bkt", "dir/big", meta, 2, id), CN_OK);
	cn_upload_info ui;
	memset(&ui, 0, sizeof ui);
	CHECK_EQ_INT(cn_obj_upload_stat(s, "bkt", "dir/big", id, &ui), CN_OK);
	CHECK_EQ_STR(ui.key, "dir/big");
	CHECK_EQ_INT(ui.nmeta, 2);
	cn_upload_info_fini(&ui);
	CHECK_EQ_INT(cn_obj_upload_stat(s, "bkt", "other", id, NULL), CN_ERR_NO_UPLOAD);

	/* parts 1..3 of 5 MiB, 5 MiB + 1, 1234 bytes; uploaded out of order; part 2 twice */
	size_t sz[3] = { 5 * MiB, 5 * MiB + 1, 1234 };
	unsigned char *p[3], *junk = pattern(777, 99);
	for (int i = 0; i < 3; i++)
		p[i] = pattern(sz[i], (unsigned)i + 1);
	cn_obj_info pi[3];
	for (int i = 0; i < 3; i++)
		cn_obj_info_init(&pi[i]);
	CHECK_EQ_INT(put_part(s, "dir/big", id, 3, p[2], sz[2], &pi[2]), CN_OK);
	CHECK_EQ_INT(put_part(s, "dir/big", id, 2, junk, 777, NULL), CN_OK);
	CHECK_EQ_INT(put_part(s, "dir/big", id, 1, p[0], sz[0], &pi[0]), CN_OK);
	CHECK_EQ_INT(put_part(s, "dir/big", id, 2, p[1], sz[1], &pi[1]), CN_OK); /* replaces */
	CHECK_EQ_INT(put_part(s, "dir/big", id, 0, p[0], 10, NULL), CN_ERR_INVALID);
	CHECK_EQ_INT(put_part(s, "dir/big", id, 10001, p[0], 10, NULL), CN_ERR_INVALID);
	CHECK_EQ_INT(put_part(s, "dir/big", "0123456789abcdef0123456789abcdef", 1, p[0], 10, NULL),
	             CN_ERR_NO_UPLOAD);
	CHECK_EQ_INT(put_part(s, "dir/big", "../../etc", 1, p[0], 10, NULL), CN_ERR_NO_UPLOAD);

	cn_obj_info *lp;
	size_t nlp;
	CHECK_EQ_INT(cn_obj_upload_list_parts(s, "bkt", "dir/big", id, &lp, &nlp), CN_OK);
	CHECK_EQ_INT(nlp, 3);
	for (size_t i = 0; i < nlp && i < 3; i++) {
		CHECK_EQ_INT(lp[i].parts[0].number, i + 1);
		CHECK_EQ_INT(lp[i].size, (int64_t)sz[i]);
		CHECK_EQ_STR(lp[i].etag, pi[i].etag);
		cn_obj_info_fini(&lp[i]);
	}
	free(lp);

	/* the checks, in their order */
	cn_obj_part list[3];
	for (int i = 0; i < 3; i++) {
		list[i].number = (uint32_t)i + 1;
		list[i].size = 0;
		memcpy(list[i].etag, pi[i].etag, sizeof list[i].etag);
	}
	cn_obj_part swapped[2] = { list[1], list[0] };
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "dir/big", id, swapped, 2, NULL, NULL, NULL),
	             CN_ERR_PART_ORDER);
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "dir/big", id, list, 0, NULL, NULL, NULL),
	             CN_ERR_PART_ORDER);
	cn_obj_part bad[3] = { list[0], list[1], list[2] };
	bad[1].etag[0] = bad[1].etag[0] == 'a' ? 'b' : 'a';
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "dir/big", id, bad, 3, NULL, NULL, NULL),
	             CN_ERR_BAD_PART);
	cn_obj_part missing[2] = { list[0], { 7, 0, "00000000000000000000000000000000" } };
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "dir/big", id, missing, 2, NULL, NULL, NULL),
	             CN_ERR_BAD_PART);
	cn_obj_part small[2] = { list[2], { 4, 0, "" } }; /* 1234-byte part not last */
	CHECK_EQ_INT(put_part(s, "dir/big", id, 4, p[2], sz[2], &pi[2]), CN_OK);
	snprintf(small[1].etag, sizeof small[1].etag, "%s", pi[2].etag);
	small[0].number = 3;
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "dir/big", id, small, 2, NULL, NULL, NULL),
	             CN_ERR_TOO_SMALL);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "dir/big", NULL), CN_ERR_NO_KEY); /* nothing visible */

	/* complete 1,2,3 (part 4 dropped) */
	cn_obj_info oi;
	cn_obj_info_init(&oi);
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "dir/big", id, list, 3, NULL, NULL, &oi), CN_OK);
	unsigned char cat[48];
	for (int i = 0; i < 3; i++) {
		unsigned char *d = cat + 16 * i;
		md5_bin(p[i], sz[i], d);
	}
	unsigned char dd[16];
	char want[80];
	md5_bin(cat, sizeof cat, dd);
	cn_hex_encode(dd, 16, want);
	strcat(want, "-3");
	CHECK_EQ_STR(oi.etag, want);
	int64_t total = (int64_t)(sz[0] + sz[1] + sz[2]);
	CHECK_EQ_INT(oi.size, total);
	cn_obj_info_fini(&oi);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "dir/big", &oi), CN_OK);
	CHECK_EQ_STR(oi.etag, want);
	CHECK_EQ_INT(oi.nparts, 3);
	CHECK_EQ_STR(cn_obj_info_get(&oi, "content-type"), "text/plain");
	CHECK(cn_obj_info_get(&oi, "x-cairn-upload-key") == NULL);
	if (oi.nparts == 3)
		CHECK_EQ_INT(oi.parts[1].size, (int64_t)sz[1]);
	cn_obj_info_fini(&oi);

	unsigned char *all = malloc((size_t)total);
	memcpy(all, p[0], sz[0]);
	memcpy(all + sz[0], p[1], sz[1]);
	memcpy(all + sz[0] + sz[1], p[2], sz[2]);
	for (int fd = 0; fd < 2; fd++) {
		unsigned char *g = get_range(s, "dir/big", 0, total, fd);
		CHECK(g && memcmp(g, all, (size_t)total) == 0);
		free(g);
		/* a range across both part boundaries */
		int64_t off = (int64_t)sz[0] - 10, len = (int64_t)sz[1] + 20;
		g = get_range(s, "dir/big", off, len, fd);
		CHECK(g && memcmp(g, all + off, (size_t)len) == 0);
		free(g);
	}
	/* the stream reader over a range (UploadPartCopy) */
	cn_obj_reader *r;
	CHECK_EQ_INT(cn_obj_open(s, "bkt", "dir/big", NULL, &r), CN_OK);
	cn_reader *st;
	CHECK_EQ_INT(cn_obj_reader_stream_range(r, total - 100, 101, &st), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_obj_reader_stream_range(r, (int64_t)sz[0] - 5, 10, &st), CN_OK);
	unsigned char b10[16];
	CHECK_EQ_INT(cn_read_full(st, b10, sizeof b10), 10);
	CHECK(memcmp(b10, all + sz[0] - 5, 10) == 0);
	cn_obj_reader_close(r);

	/* the upload is gone */
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "dir/big", id, list, 3, NULL, NULL, NULL),
	             CN_ERR_NO_UPLOAD);
	CHECK_EQ_INT(put_part(s, "dir/big", id, 1, p[2], sz[2], NULL), CN_ERR_NO_UPLOAD);
	CHECK_EQ_INT(upload_area_entries(), 0);

	/* an overwrite by a single put, then delete, leaves no data behind */
	mem_reader mr = { { mem_read }, junk, 777, 0 };
	cn_put_opts po = { .size = 777 };
	CHECK_EQ_INT(cn_obj_put(s, "bkt", "dir/big", &mr.r, &po, NULL), CN_OK);
	unsigned char *g = get_range(s, "dir/big", 0, 777, false);
	CHECK(g && memcmp(g, junk, 777) == 0);
	free(g);
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "dir/big"), CN_OK);
	char path[128];
	struct stat stt;
	snprintf(path, sizeof path, "%s/bkt/dir", drive);
	CHECK(stat(path, &stt) != 0);

	for (int i = 0; i < 3; i++) {
		free(p[i]);
		cn_obj_info_fini(&pi[i]);
	}
	free(junk);
	free(all);
	cn_obj_store_close(s);
}

static cn_err seal_sum(void *ctx, const cn_obj_info *parts, size_t n, cn_kv **add, size_t *nadd)
{
	int *calls = ctx;
	(*calls)++;
	if (n == 1 && parts[0].size == 3)
		return CN_ERR_DIGEST; /* the test's "bad checksum" */
	*add = calloc(1, sizeof **add);
	(*add)[0].name = strdup("x-amz-checksum-crc32");
	(*add)[0].value = strdup("AAAAAA==-1");
	*nadd = 1;
	return CN_OK;
}

TEST(test_single_part_seal_abort)
{
	fresh();
	cn_obj_store *s = open_store(0, 0);
	CHECK(s && cn_obj_make_bucket(s, "bkt") == CN_OK);
	char id[CN_OBJ_UPLOAD_ID_MAX], id2[CN_OBJ_UPLOAD_ID_MAX];
	CHECK_EQ_INT(cn_obj_upload_create(s, "bkt", "k", NULL, 0, id), CN_OK);
	CHECK_EQ_INT(cn_obj_upload_create(s, "nobucket", "k", NULL, 0, id2), CN_ERR_NO_BUCKET);
	cn_obj_info pi;
	cn_obj_info_init(&pi);
	CHECK_EQ_INT(put_part(s, "k", id, 5, (const unsigned char *)"abc", 3, &pi), CN_OK);
	cn_obj_part l = { 5, 0, "" };
	snprintf(l.etag, sizeof l.etag, "%s", pi.etag);
	int calls = 0;
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "k", id, &l, 1, seal_sum, &calls, NULL), CN_ERR_DIGEST);
	CHECK_EQ_INT(calls, 1);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "k", NULL), CN_ERR_NO_KEY);
	/* a zero-byte part replaces it; the seal's meta lands on the object */
	CHECK_EQ_INT(put_part(s, "k", id, 5, (const unsigned char *)"", 0, &pi), CN_OK);
	snprintf(l.etag, sizeof l.etag, "%s", pi.etag);
	CHECK_EQ_STR(pi.etag, "d41d8cd98f00b204e9800998ecf8427e");
	cn_obj_info oi;
	cn_obj_info_init(&oi);
	CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", "k", id, &l, 1, seal_sum, &calls, &oi), CN_OK);
	CHECK_EQ_INT(oi.size, 0);
	CHECK_EQ_STR(cn_obj_info_get(&oi, "x-amz-checksum-crc32"), "AAAAAA==-1");
	cn_obj_info_fini(&oi);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "k", &oi), CN_OK);
	CHECK_EQ_STR(cn_obj_info_get(&oi, "x-amz-checksum-crc32"), "AAAAAA==-1");
	CHECK(strstr(oi.etag, "-1") != NULL);
	cn_obj_info_fini(&oi);
	unsigned char *g = get_range(s, "k", 0, 0, false);
	CHECK(g != NULL);
	free(g);

	/* abort */
	CHECK_EQ_INT(cn_obj_upload_create(s, "bkt", "k2", NULL, 0, id), CN_OK);
	CHECK_EQ_INT(put_part(s, "k2", id, 1, (const unsigned char *)"abc", 3, NULL), CN_OK);
	CHECK_EQ_INT(cn_obj_upload_abort(s, "bkt", "wrongkey", id), CN_ERR_NO_UPLOAD);
	CHECK_EQ_INT(cn_obj_upload_abort(s, "bkt", "k2", id), CN_OK);
	CHECK_EQ_INT(cn_obj_upload_abort(s, "bkt", "k2", id), CN_ERR_NO_UPLOAD);
	cn_obj_info *lp;
	size_t n;
	CHECK_EQ_INT(cn_obj_upload_list_parts(s, "bkt", "k2", id, &lp, &n), CN_ERR_NO_UPLOAD);
	CHECK_EQ_INT(upload_area_entries(), 0);
	cn_obj_info_fini(&pi);

	/* deleting the bucket drops its uploads */
	CHECK_EQ_INT(cn_obj_upload_create(s, "bkt", "k3", NULL, 0, id), CN_OK);
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "k"), CN_OK);
	CHECK_EQ_INT(cn_obj_delete_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	cn_upload_list ul;
	CHECK_EQ_INT(cn_obj_upload_list(s, "bkt", NULL, NULL, NULL, NULL, 1000, &ul), CN_OK);
	CHECK_EQ_INT(ul.nuploads, 0);
	cn_upload_list_fini(&ul);
	cn_obj_store_close(s);
}

TEST(test_list_uploads)
{
	fresh();
	cn_obj_store *s = open_store(0, 0);
	CHECK(s && cn_obj_make_bucket(s, "bkt") == CN_OK);
	const char *keys[] = { "a/1", "a/2", "b", "b", "c/x/y", "d" };
	char ids[6][CN_OBJ_UPLOAD_ID_MAX];
	for (int i = 0; i < 6; i++) {
		CHECK_EQ_INT(cn_obj_upload_create(s, "bkt", keys[i], NULL, 0, ids[i]), CN_OK);
		usleep(2000); /* distinct initiated times */
	}
	cn_upload_list l;
	CHECK_EQ_INT(cn_obj_upload_list(s, "bkt", "", NULL, NULL, NULL, 1000, &l), CN_OK);
	CHECK_EQ_INT(l.nuploads, 6);
	CHECK(!l.truncated);
	for (size_t i = 0; i < l.nuploads && i < 6; i++)
		CHECK_EQ_STR(l.uploads[i].key, keys[i]);
	if (l.nuploads == 6)
		CHECK_EQ_STR(l.uploads[3].upload_id, ids[3]); /* same key: by initiated time */
	cn_upload_list_fini(&l);

	/* pagination: 2 at a time walks all 6 in order */
	char km[64] = "", um[CN_OBJ_UPLOAD_ID_MAX] = "";
	int seen = 0;
	for (int page = 0; page < 5; page++) {
		CHECK_EQ_INT(cn_obj_upload_list(s, "bkt", "", NULL, km, um, 2, &l), CN_OK);
		for (size_t i = 0; i < l.nuploads; i++, seen++)
			if (seen < 6)
				CHECK_EQ_STR(l.uploads[i].upload_id, ids[seen]);
		bool more = l.truncated;
		if (more) {
			snprintf(km, sizeof km, "%s", l.next_key_marker);
			snprintf(um, sizeof um, "%s", l.next_upload_id_marker);
		}
		cn_upload_list_fini(&l);
		if (!more)
			break;
	}
	CHECK_EQ_INT(seen, 6);

	/* delimiter and prefix */
	CHECK_EQ_INT(cn_obj_upload_list(s, "bkt", "", "/", NULL, NULL, 1000, &l), CN_OK);
	CHECK_EQ_INT(l.nprefixes, 2);
	CHECK_EQ_INT(l.nuploads, 3);
	if (l.nprefixes == 2) {
		CHECK_EQ_STR(l.prefixes[0], "a/");
		CHECK_EQ_STR(l.prefixes[1], "c/");
	}
	cn_upload_list_fini(&l);
	CHECK_EQ_INT(cn_obj_upload_list(s, "bkt", "a/", "/", NULL, NULL, 1000, &l), CN_OK);
	CHECK_EQ_INT(l.nuploads, 2);
	CHECK_EQ_INT(l.nprefixes, 0);
	cn_upload_list_fini(&l);
	/* key marker alone skips the whole key */
	CHECK_EQ_INT(cn_obj_upload_list(s, "bkt", "", NULL, "b", NULL, 1000, &l), CN_OK);
	CHECK_EQ_INT(l.nuploads, 2);
	if (l.nuploads)
		CHECK_EQ_STR(l.uploads[0].key, "c/x/y");
	cn_upload_list_fini(&l);
	CHECK_EQ_INT(cn_obj_upload_list(s, "nob", "", NULL, NULL, NULL, 10, &l), CN_ERR_NO_BUCKET);
	cn_obj_store_close(s);
}

TEST(test_expiry)
{
	fresh();
	cn_obj_store *s = open_store(300, 50);
	CHECK(s && cn_obj_make_bucket(s, "bkt") == CN_OK);
	char id[CN_OBJ_UPLOAD_ID_MAX];
	CHECK_EQ_INT(cn_obj_upload_create(s, "bkt", "old", NULL, 0, id), CN_OK);
	CHECK_EQ_INT(put_part(s, "old", id, 1, (const unsigned char *)"abc", 3, NULL), CN_OK);
	CHECK_EQ_INT(cn_obj_upload_stat(s, "bkt", "old", id, NULL), CN_OK); /* not yet */
	cn_err e = CN_OK;
	for (int i = 0; i < 100 && e == CN_OK; i++) { /* up to 5 s */
		usleep(50000);
		e = cn_obj_upload_stat(s, "bkt", "old", id, NULL);
	}
	CHECK_EQ_INT(e, CN_ERR_NO_UPLOAD);
	CHECK_EQ_INT(upload_area_entries(), 0);
	cn_obj_store_close(s);
}

static cn_err add_tag(void *ctx, cn_obj_info *info)
{
	if (ctx)
		return CN_ERR_INVALID;
	cn_kv *n = realloc(info->meta, (info->nmeta + 1) * sizeof *n);
	if (!n)
		return CN_ERR_NOMEM;
	info->meta = n;
	n[info->nmeta].name = strdup("x-amz-tagging");
	n[info->nmeta].value = strdup("a=b");
	info->nmeta++;
	return CN_OK;
}

TEST(test_update_meta_and_config)
{
	fresh();
	cn_obj_store *s = open_store(0, 0);
	CHECK(s && cn_obj_make_bucket(s, "bkt") == CN_OK);
	for (int big = 0; big < 2; big++) {
		size_t len = big ? 300000 : 1000;
		unsigned char *p = pattern(len, 7);
		mem_reader r = { { mem_read }, p, len, 0 };
		cn_put_opts o = { .size = (int64_t)len };
		cn_obj_info before, after;
		cn_obj_info_init(&before);
		cn_obj_info_init(&after);
		CHECK_EQ_INT(cn_obj_put(s, "bkt", "t", &r.r, &o, &before), CN_OK);
		CHECK_EQ_INT(cn_obj_update_meta(s, "bkt", "t", add_tag, (void *)1, NULL), CN_ERR_INVALID);
		CHECK_EQ_INT(cn_obj_update_meta(s, "bkt", "t", add_tag, NULL, &after), CN_OK);
		CHECK_EQ_STR(cn_obj_info_get(&after, "x-amz-tagging"), "a=b");
		cn_obj_info_fini(&after);
		CHECK_EQ_INT(cn_obj_stat(s, "bkt", "t", &after), CN_OK);
		CHECK_EQ_STR(cn_obj_info_get(&after, "x-amz-tagging"), "a=b");
		CHECK_EQ_STR(after.etag, before.etag);
		CHECK_EQ_INT(after.mtime_ms, before.mtime_ms);
		unsigned char *g = get_range(s, "t", 0, (int64_t)len, false);
		CHECK(g && memcmp(g, p, len) == 0);
		free(g);
		cn_obj_info_fini(&before);
		cn_obj_info_fini(&after);
		free(p);
	}
	CHECK_EQ_INT(cn_obj_update_meta(s, "bkt", "missing", add_tag, NULL, NULL), CN_ERR_NO_KEY);
	CHECK_EQ_INT(cn_obj_update_meta(s, "nob", "t", add_tag, NULL, NULL), CN_ERR_NO_BUCKET);

	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_obj_bucket_config_get(s, "bkt", "tagging", &b), CN_ERR_NOT_FOUND);
	CHECK_EQ_INT(cn_obj_bucket_config_put(s, "bkt", "tagging", "<x/>", 4), CN_OK);
	CHECK_EQ_INT(cn_obj_bucket_config_get(s, "bkt", "tagging", &b), CN_OK);
	CHECK(b.len == 4 && memcmp(b.p, "<x/>", 4) == 0);
	CHECK_EQ_INT(cn_obj_bucket_config_put(s, "bkt", "../etc", "x", 1), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_obj_bucket_config_put(s, "nob", "tagging", "x", 1), CN_ERR_NO_BUCKET);
	CHECK_EQ_INT(cn_obj_bucket_config_get(s, "nob", "tagging", &b), CN_ERR_NO_BUCKET);
	CHECK_EQ_INT(cn_obj_bucket_config_delete(s, "bkt", "tagging"), CN_OK);
	CHECK_EQ_INT(cn_obj_bucket_config_delete(s, "bkt", "tagging"), CN_OK);
	CHECK_EQ_INT(cn_obj_bucket_config_get(s, "bkt", "tagging", &b), CN_ERR_NOT_FOUND);
	/* removed with the bucket */
	CHECK_EQ_INT(cn_obj_bucket_config_put(s, "bkt", "tagging", "<y/>", 4), CN_OK);
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "t"), CN_OK);
	CHECK_EQ_INT(cn_obj_delete_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(cn_obj_bucket_config_get(s, "bkt", "tagging", &b), CN_ERR_NOT_FOUND);
	cn_buf_fini(&b);
	cn_obj_store_close(s);
}

/* A part's seal that loses the part's file before it is taken into the upload (as a crash
 * or a failing drive may): every drive's in-flight tmp data removed. */
static cn_err seal_lose_file(void *ctx, const unsigned char md5[16], int64_t size, cn_kv **add,
                             size_t *nadd)
{
	(void)md5, (void)size, (void)add, (void)nadd;
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s/.cairn.sys/tmp/*/*.d", drive);
	*(int *)ctx = system(cmd);
	return CN_OK;
}

/* MPU-2: a part is listed only once its file is in the upload; a part whose file never got
 * there leaves no record naming it (nor replaces the part of that number). */
TEST(test_part_without_its_file_is_not_visible)
{
	fresh();
	cn_obj_store *s = open_store(0, 0);
	CHECK(s && cn_obj_make_bucket(s, "bkt") == CN_OK);
	char id[CN_OBJ_UPLOAD_ID_MAX];
	CHECK_EQ_INT(cn_obj_upload_create(s, "bkt", "k", NULL, 0, id), CN_OK);
	size_t len = 256 * 1024; /* over inline_max: the part is a file */
	unsigned char *p = pattern(len, 7);
	CHECK_EQ_INT(put_part(s, "k", id, 1, p, len, NULL), CN_OK);
	int rc = -1;
	mem_reader r = { { mem_read }, p, len, 0 };
	cn_put_opts o = { .size = (int64_t)len, .seal = seal_lose_file, .seal_ctx = &rc };
	CHECK(cn_obj_upload_part(s, "bkt", "k", id, 2, &r.r, &o, NULL) != CN_OK);
	CHECK_EQ_INT(rc, 0);
	cn_obj_info *lp = NULL;
	size_t n = 0;
	CHECK_EQ_INT(cn_obj_upload_list_parts(s, "bkt", "k", id, &lp, &n), CN_OK);
	CHECK_EQ_INT(n, 1);
	for (size_t i = 0; i < n; i++)
		cn_obj_info_fini(&lp[i]);
	free(lp);
	free(p);
	cn_obj_store_close(s);
}

int main(void)
{
	cn_log_min = CN_LOG_ERROR + 1;
	snprintf(base, sizeof base, "/tmp/cn_mp_test.%d", (int)getpid());
	snprintf(drive, sizeof drive, "%s/d", base);
	RUN(test_complete_roundtrip);
	RUN(test_single_part_seal_abort);
	RUN(test_list_uploads);
	RUN(test_expiry);
	RUN(test_update_meta_and_config);
	RUN(test_part_without_its_file_is_not_visible);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", base);
	if (system(cmd) != 0)
		return 1;
	TEST_END();
}
