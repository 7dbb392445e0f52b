/* Unit tests of bucket versioning in the object layer (object.h "versioning"): the AWS
 * rules for unversioned -> enabled -> suspended buckets, version ids, delete markers,
 * deleting by version id (promotion of the next newest), listing versions with markers,
 * plain listing skipping deleted keys, metadata updates of old versions, and that the data
 * of every surviving version stays readable while removed ones leave nothing behind. */
#include "object/object.h"
#include "test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char base[48], drive[56];

typedef struct mem_reader {
	cn_reader r;
	const char *p;
	size_t len, pos;
} mem_reader;

static ssize_t mem_read(cn_reader *r, void *buf, size_t len)
{
	mem_reader *m = (mem_reader *)r;
	size_t n = m->len - m->pos < len ? m->len - m->pos : len;
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

static cn_obj_store *store;

/* Puts body (a string, or `big` bytes of it repeated when big > 0 to leave the inline
 * size) and returns the new version id in vid. */
static cn_err put(const char *key, const char *body, size_t big, char vid[40])
{
	size_t len = big ? big : strlen(body);
	char *p = malloc(len + 1);
	for (size_t i = 0; i < len; i++)
		p[i] = body[i % strlen(body)];
	mem_reader r = { { mem_read }, p, len, 0 };
	cn_put_opts o = { .size = (int64_t)len };
	cn_obj_info info;
	cn_obj_info_init(&info);
	cn_err e = cn_obj_put(store, "bkt", key, &r.r, &o, &info);
	if (vid)
		snprintf(vid, 40, "%s", info.version_id);
	cn_obj_info_fini(&info);
	free(p);
	return e;
}

/* The first bytes of version vid (NULL: latest) as a string in out; the error otherwise. */
static cn_err get(const char *key, const char *vid, char *out, size_t cap)
{
	cn_obj_reader *r;
	cn_obj_info info;
	cn_obj_info_init(&info);
	out[0] = 0;
	cn_err e = cn_obj_open_version(store, "bkt", key, vid, &info, &r);
	if (e) {
		cn_obj_info_fini(&info);
		return e;
	}
	mem_writer w = { { mem_write, NULL, NULL }, { 0 } };
	cn_buf_init(&w.b);
	int64_t n = info.size < (int64_t)cap - 1 ? info.size : (int64_t)cap - 1;
	e = cn_obj_read(r, 0, n, &w.w);
	if (!e) {
		memcpy(out, w.b.p ? w.b.p : "", (size_t)n);
		out[n] = 0;
	}
	cn_buf_fini(&w.b);
	cn_obj_reader_close(r);
	cn_obj_info_fini(&info);
	return e;
}

static size_t nversions(const char *key, cn_version_list *l)
{
	CHECK_EQ_INT(cn_obj_list_versions(store, "bkt", key, NULL, NULL, NULL, 1000, l), CN_OK);
	return l->nversions;
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A store on drive base/name with bucket "bkt"; not durable: many puts fall in one ms. */
static cn_obj_store *open_at(const char *name, bool durable)
{
	char dir[80], cmd[200];
	snprintf(dir, sizeof dir, "%s/%s", base, name);
	snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
	CN_ASSERT(system(cmd) == 0);
	cn_obj_config cfg = { .durable = durable, .inline_max = 128 * 1024 };
	const char *d[] = { dir };
	cn_obj_store *s;
	CN_ASSERT(cn_obj_store_open(d, 1, &cfg, &s) == CN_OK);
	CN_ASSERT(cn_obj_make_bucket(s, "bkt") == CN_OK);
	return s;
}

/* The barrier of a durable store is syncfs (drive/local_sync.c): this one also notes, while
 * a folder is watched, whether that folder was there at each flush. */
static const char *watched;
static int flushes, flushes_without;

int syncfs(int fd)
{
	struct stat st;
	if (watched) {
		flushes++;
		flushes_without += stat(watched, &st) != 0;
	}
	return (int)syscall(SYS_syncfs, fd);
}

/* The name of key's only data folder on drive base/name into path; false if not one. */
static bool only_data_folder(const char *name, const char *key, char *path, size_t cap)
{
	char dir[160];
	snprintf(dir, sizeof dir, "%s/%s/bkt/%s", base, name, key);
	DIR *d = opendir(dir);
	if (!d)
		return false;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "%d.", 3) && n++ == 0)
			CN_ASSERT(snprintf(path, cap, "%s/%.200s", dir, de->d_name) < (int)cap);
	closedir(d);
	return n == 1;
}

TEST(test_states)
{
	cn_versioning v;
	CHECK_EQ_INT(cn_obj_get_versioning(store, "bkt", &v), CN_OK);
	CHECK_EQ_INT(v, CN_VERSIONING_OFF);
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_OFF), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_obj_set_versioning(store, "nobucket", CN_VERSIONING_ENABLED), CN_ERR_NO_BUCKET);
	CHECK(cn_obj_version_id_valid("null"));
	CHECK(!cn_obj_version_id_valid("NULL"));
	CHECK(!cn_obj_version_id_valid("../x"));
	CHECK(!cn_obj_version_id_valid(""));
}

TEST(test_unversioned_to_enabled)
{
	char v0[40], v1[40], v2[40], buf[64];
	CHECK_EQ_INT(put("k", "zero", 0, v0), CN_OK);
	CHECK_EQ_STR(v0, ""); /* never versioned: no id */
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	cn_versioning v;
	CHECK_EQ_INT(cn_obj_get_versioning(store, "bkt", &v), CN_OK);
	CHECK_EQ_INT(v, CN_VERSIONING_ENABLED);
	CHECK_EQ_INT(put("k", "one", 0, v1), CN_OK);
	CHECK_EQ_INT(put("k", "two-", 300000, v2), CN_OK); /* a data folder, not inline */
	CHECK(cn_obj_version_id_valid(v1) && strcmp(v1, "null"));
	CHECK(strcmp(v1, v2) < 0); /* time-ordered ids */
	CHECK_EQ_INT(get("k", NULL, buf, 5), CN_OK);
	CHECK_EQ_STR(buf, "two-");
	CHECK_EQ_INT(get("k", v1, buf, sizeof buf), CN_OK);
	CHECK_EQ_STR(buf, "one");
	CHECK_EQ_INT(get("k", "null", buf, sizeof buf), CN_OK); /* the pre-versioning object */
	CHECK_EQ_STR(buf, "zero");
	CHECK_EQ_INT(get("k", "0123456789abcdef0123456789abcdef", buf, sizeof buf), CN_ERR_NO_VERSION);

	cn_version_list l;
	CHECK_EQ_INT(nversions("k", &l), 3);
	if (l.nversions == 3) {
		CHECK_EQ_STR(l.versions[0].version_id, v2);
		CHECK(l.versions[0].is_latest);
		CHECK_EQ_STR(l.versions[1].version_id, v1);
		CHECK(!l.versions[1].is_latest);
		CHECK_EQ_STR(l.versions[2].version_id, "null");
		CHECK_EQ_INT(l.versions[0].size, 300000);
	}
	cn_version_list_fini(&l);

	/* a delete adds a marker: GET latest is "no key" with the marker's id */
	cn_obj_deleted d;
	CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "k", NULL, &d), CN_OK);
	CHECK(d.delete_marker && cn_obj_version_id_valid(d.version_id));
	cn_obj_info info;
	cn_obj_info_init(&info);
	CHECK_EQ_INT(cn_obj_stat(store, "bkt", "k", &info), CN_ERR_NO_KEY);
	CHECK(info.delete_marker);
	CHECK_EQ_STR(info.version_id, d.version_id);
	cn_obj_info_fini(&info);
	CHECK_EQ_INT(cn_obj_stat_version(store, "bkt", "k", d.version_id, &info), CN_ERR_DELETE_MARKER);
	cn_obj_info_fini(&info);
	CHECK_EQ_INT(get("k", v2, buf, 5), CN_OK); /* older versions stay */
	CHECK_EQ_STR(buf, "two-");
	cn_list_result lr;
	CHECK_EQ_INT(cn_obj_list(store, "bkt", "", NULL, NULL, 1000, &lr), CN_OK);
	CHECK_EQ_INT(lr.nobjects, 0); /* a deleted key is not listed */
	cn_list_result_fini(&lr);
	CHECK_EQ_INT(nversions("k", &l), 4);
	if (l.nversions == 4)
		CHECK(l.versions[0].delete_marker && l.versions[0].is_latest);
	cn_version_list_fini(&l);

	/* removing the marker by id brings v2 back */
	CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "k", d.version_id, &d), CN_OK);
	CHECK(d.delete_marker);
	CHECK_EQ_INT(get("k", NULL, buf, 5), CN_OK);
	CHECK_EQ_STR(buf, "two-");
	/* removing the latest (v2) by id promotes v1 */
	CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "k", v2, &d), CN_OK);
	CHECK(!d.delete_marker);
	CHECK_EQ_INT(get("k", NULL, buf, sizeof buf), CN_OK);
	CHECK_EQ_STR(buf, "one");
	CHECK_EQ_INT(get("k", v2, buf, sizeof buf), CN_ERR_NO_VERSION);
	/* a noncurrent one by id */
	CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "k", "null", &d), CN_OK);
	CHECK_EQ_INT(nversions("k", &l), 1);
	cn_version_list_fini(&l);
	CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "k", "null", &d), CN_ERR_NO_VERSION);
	/* the last one: the key is gone, its folder too */
	CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "k", v1, &d), CN_OK);
	CHECK_EQ_INT(cn_obj_stat(store, "bkt", "k", NULL), CN_ERR_NO_KEY);
	CHECK_EQ_INT(nversions("k", &l), 0);
	cn_version_list_fini(&l);
	char path[128];
	snprintf(path, sizeof path, "%s/bkt", drive);
	CHECK_EQ_INT(count_files(path), 0);
}

TEST(test_suspended)
{
	char va[40], vn[40], vn2[40], buf[64];
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	CHECK_EQ_INT(put("s", "a", 0, va), CN_OK);
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_SUSPENDED), CN_OK);
	CHECK_EQ_INT(put("s", "nullbig", 300000, vn), CN_OK);
	CHECK_EQ_STR(vn, "null");
	CHECK_EQ_INT(put("s", "null2", 0, vn2), CN_OK); /* replaces the null version */
	cn_version_list l;
	CHECK_EQ_INT(nversions("s", &l), 2);
	if (l.nversions == 2) {
		CHECK_EQ_STR(l.versions[0].version_id, "null");
		CHECK_EQ_STR(l.versions[1].version_id, va);
	}
	cn_version_list_fini(&l);
	CHECK_EQ_INT(get("s", "null", buf, sizeof buf), CN_OK);
	CHECK_EQ_STR(buf, "null2");
	/* delete in suspended: a "null" delete marker replaces the null version */
	cn_obj_deleted d;
	CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "s", NULL, &d), CN_OK);
	CHECK(d.delete_marker);
	CHECK_EQ_STR(d.version_id, "null");
	CHECK_EQ_INT(nversions("s", &l), 2);
	if (l.nversions == 2)
		CHECK(l.versions[0].delete_marker && !strcmp(l.versions[0].version_id, "null"));
	cn_version_list_fini(&l);
	/* enabled again: the null marker becomes noncurrent, a new version on top */
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	char vb[40];
	CHECK_EQ_INT(put("s", "b", 0, vb), CN_OK);
	CHECK_EQ_INT(nversions("s", &l), 3);
	cn_version_list_fini(&l);
	/* suspended put when the latest is not null: keeps it, replaces the noncurrent null */
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_SUSPENDED), CN_OK);
	CHECK_EQ_INT(put("s", "n3", 0, vn), CN_OK);
	CHECK_EQ_INT(nversions("s", &l), 3); /* n3(null), b, a */
	if (l.nversions == 3) {
		CHECK_EQ_STR(l.versions[0].version_id, "null");
		CHECK(!l.versions[0].delete_marker);
		CHECK_EQ_STR(l.versions[1].version_id, vb);
		CHECK_EQ_STR(l.versions[2].version_id, va);
	}
	cn_version_list_fini(&l);
	CHECK_EQ_INT(get("s", vb, buf, sizeof buf), CN_OK);
	CHECK_EQ_STR(buf, "b");
}

static cn_err tag(void *ctx, cn_obj_info *info)
{
	cn_kv *n = realloc(info->meta, (info->nmeta + 1) * sizeof *n);
	if (!n)
		return CN_ERR_NOMEM;
	info->meta = n;
	n[info->nmeta].name = strdup("x-amz-tagging");
	n[info->nmeta].value = strdup(ctx);
	info->nmeta++;
	return CN_OK;
}

TEST(test_list_pagination_and_meta)
{
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	char ids[3][3][40];
	const char *keys[] = { "p/a", "p/b", "q" };
	for (int r = 0; r < 3; r++)
		for (int k = 0; k < 3; k++)
			CHECK_EQ_INT(put(keys[k], "x", 0, ids[k][r]), CN_OK);
	/* pages of 2 walk all 9 versions of p/a, p/b, q in order, newest first per key */
	char km[64] = "", vm[40] = "";
	int seen = 0;
	for (int page = 0; page < 10; page++) {
		cn_version_list l;
		CHECK_EQ_INT(cn_obj_list_versions(store, "bkt", "", NULL, km, vm, 2, &l), CN_OK);
		for (size_t i = 0; i < l.nversions; i++, seen++) {
			int k = seen / 3, r = 2 - seen % 3;
			if (k < 3 && !strcmp(l.versions[i].key, keys[k]))
				CHECK_EQ_STR(l.versions[i].version_id, ids[k][r]);
			else if (k < 3)
				CHECK_EQ_STR(l.versions[i].key, keys[k]);
		}
		bool more = l.truncated;
		if (more) {
			snprintf(km, sizeof km, "%s", l.next_key_marker);
			snprintf(vm, sizeof vm, "%s", l.next_version_id_marker);
		}
		cn_version_list_fini(&l);
		if (!more)
			break;
	}
	/* + the versions of "s" from test_suspended sort after "q"? no: "s" > "q" */
	CHECK(seen >= 9);
	cn_version_list l;
	CHECK_EQ_INT(cn_obj_list_versions(store, "bkt", "", "/", NULL, NULL, 1000, &l), CN_OK);
	CHECK_EQ_INT(l.nprefixes, 1);
	if (l.nprefixes == 1)
		CHECK_EQ_STR(l.prefixes[0], "p/");
	cn_version_list_fini(&l);
	/* tagging a noncurrent version leaves the others alone */
	cn_obj_info info;
	cn_obj_info_init(&info);
	CHECK_EQ_INT(cn_obj_update_meta_version(store, "bkt", "q", ids[2][0], tag, "v=old", NULL), CN_OK);
	CHECK_EQ_INT(cn_obj_stat_version(store, "bkt", "q", ids[2][0], &info), CN_OK);
	CHECK_EQ_STR(cn_obj_info_get(&info, "x-amz-tagging"), "v=old");
	cn_obj_info_fini(&info);
	CHECK_EQ_INT(cn_obj_stat(store, "bkt", "q", &info), CN_OK);
	CHECK(cn_obj_info_get(&info, "x-amz-tagging") == NULL);
	CHECK_EQ_STR(info.version_id, ids[2][2]);
	cn_obj_info_fini(&info);
	CHECK_EQ_INT(cn_obj_update_meta_version(store, "bkt", "q", "0123456789abcdef0123456789abcdef",
	                                        tag, "x", NULL), CN_ERR_NO_VERSION);
}

TEST(test_multipart_versioned)
{
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	char v1[40], buf[16];
	CHECK_EQ_INT(put("mp", "first", 0, v1), CN_OK);
	char id[CN_OBJ_UPLOAD_ID_MAX];
	CHECK_EQ_INT(cn_obj_upload_create(store, "bkt", "mp", NULL, 0, id), CN_OK);
	mem_reader r = { { mem_read }, "second", 6, 0 };
	cn_obj_info pi, oi;
	cn_obj_info_init(&pi);
	cn_obj_info_init(&oi);
	CHECK_EQ_INT(cn_obj_upload_part(store, "bkt", "mp", id, 1, &r.r, NULL, &pi), CN_OK);
	cn_obj_part l = { 1, 0, "" };
	snprintf(l.etag, sizeof l.etag, "%s", pi.etag);
	CHECK_EQ_INT(cn_obj_upload_complete(store, "bkt", "mp", id, &l, 1, NULL, NULL, &oi), CN_OK);
	CHECK(cn_obj_version_id_valid(oi.version_id) && strcmp(oi.version_id, v1));
	CHECK_EQ_INT(get("mp", NULL, buf, sizeof buf), CN_OK);
	CHECK_EQ_STR(buf, "second");
	CHECK_EQ_INT(get("mp", v1, buf, sizeof buf), CN_OK);
	CHECK_EQ_STR(buf, "first");
	cn_obj_info_fini(&pi);
	cn_obj_info_fini(&oi);
}

/* VER-5: puts of one key in quick succession (a store without fsync: many within one ms)
 * get strictly increasing mtimes, so the versions list in the order they were made, the
 * null version of before versioning last, and deleting the latest by id promotes each
 * previous one in turn. Before VER-5 a null version and the first versioned PUT in the same
 * ms listed the null version as the newer (the id decided the tie). */
TEST(test_versions_in_one_ms_keep_their_order)
{
	cn_obj_store *saved = store;
	store = open_at("fast", false);
	enum { N = 40 };
	char vids[N][40], body[16], buf[16];
	CHECK_EQ_INT(put("k", "b0", 0, vids[0]), CN_OK);
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	for (int i = 1; i < N; i++) {
		snprintf(body, sizeof body, "b%d", i);
		CHECK_EQ_INT(put("k", body, 0, vids[i]), CN_OK);
	}
	cn_version_list l;
	CHECK_EQ_INT(nversions("k", &l), N);
	for (size_t i = 0; i < l.nversions && l.nversions == N; i++) {
		CHECK_EQ_STR(l.versions[i].version_id, i == N - 1 ? "null" : vids[N - 1 - i]);
		if (i > 0)
			CHECK(l.versions[i].mtime_ms < l.versions[i - 1].mtime_ms);
	}
	cn_version_list_fini(&l);
	for (int i = N - 1; i > 0; i--) {
		cn_obj_deleted del;
		CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "k", vids[i], &del), CN_OK);
		snprintf(body, sizeof body, "b%d", i - 1);
		CHECK_EQ_INT(get("k", NULL, buf, sizeof buf), CN_OK);
		CHECK_EQ_STR(buf, body);
	}
	cn_obj_store_close(store);
	store = saved;
}

/* VER-4: a version id is 12 hex digits of the ms clock, 4 of a sequence and 16 random, so
 * ids made one after another (many in one ms) are well formed, carry the time they were
 * made and sort strictly in the order they were made. */
TEST(test_version_ids_carry_the_clock_and_sort_in_order)
{
	cn_obj_store *saved = store;
	store = open_at("ids", false); /* not durable: many puts fall in one ms */
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	enum { N = 400 };
	static char vids[N][40];
	int64_t t0 = cn_now_ms();
	for (int i = 0; i < N; i++)
		CHECK_EQ_INT(put("ids", "x", 0, vids[i]), CN_OK);
	int64_t t1 = cn_now_ms();
	int bad_form = 0, bad_clock = 0, bad_order = 0;
	for (int i = 0; i < N; i++) {
		size_t len = strlen(vids[i]);
		bool hex = len == 32;
		for (size_t j = 0; hex && j < len; j++)
			hex = (vids[i][j] >= '0' && vids[i][j] <= '9') ||
			      (vids[i][j] >= 'a' && vids[i][j] <= 'f');
		bad_form += !hex;
		char clk[13];
		memcpy(clk, vids[i], 12);
		clk[12] = 0;
		long long ms = strtoll(clk, NULL, 16);
		bad_clock += ms < (t0 & 0xffffffffffffll) || ms > (t1 & 0xffffffffffffll);
		if (i > 0)
			bad_order += strcmp(vids[i - 1], vids[i]) >= 0;
	}
	CHECK_EQ_INT(bad_form, 0);
	CHECK_EQ_INT(bad_clock, 0);
	CHECK_EQ_INT(bad_order, 0);
	cn_version_list l;
	CHECK_EQ_INT(nversions("ids", &l), N);
	for (size_t i = 0; i < l.nversions && l.nversions == N; i++)
		CHECK_EQ_STR(l.versions[i].version_id, vids[N - 1 - i]);
	cn_version_list_fini(&l);
	cn_obj_store_close(store);
	store = saved;
}

/* VER-3: the data folder of a version an overwrite replaces (unversioned bucket) or a
 * delete by id removes is still there at the barrier's flush, and gone after. */
TEST(test_replaced_and_deleted_data_kept_until_the_barrier)
{
	cn_obj_store *saved = store;
	store = open_at("barrier", true);
	char old[512], gone[512];
	CHECK_EQ_INT(put("k", "first", 200000, NULL), CN_OK);
	CHECK(only_data_folder("barrier", "k", old, sizeof old));
	watched = old;
	flushes = flushes_without = 0;
	CHECK_EQ_INT(put("k", "second", 200000, NULL), CN_OK);
	watched = NULL;
	CHECK(flushes > 0);
	CHECK_EQ_INT(flushes_without, 0);
	struct stat st;
	CHECK(stat(old, &st) != 0); /* removed after the barrier */
	CHECK(only_data_folder("barrier", "k", gone, sizeof gone) && strcmp(gone, old));

	char vid[40];
	CHECK_EQ_INT(cn_obj_set_versioning(store, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	CHECK_EQ_INT(put("v", "only", 200000, vid), CN_OK);
	CHECK(only_data_folder("barrier", "v", old, sizeof old));
	watched = old;
	flushes = flushes_without = 0;
	cn_obj_deleted del;
	CHECK_EQ_INT(cn_obj_delete_version(store, "bkt", "v", vid, &del), CN_OK);
	watched = NULL;
	CHECK(flushes > 0);
	CHECK_EQ_INT(flushes_without, 0);
	CHECK(stat(old, &st) != 0);
	cn_obj_store_close(store);
	store = saved;
}

int main(void)
{
	cn_log_min = CN_LOG_ERROR + 1;
	snprintf(base, sizeof base, "/tmp/cn_ver_test.%d", (int)getpid());
	snprintf(drive, sizeof drive, "%s/d", base);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", base, base);
	CN_ASSERT(system(cmd) == 0);
	cn_obj_config cfg = { .durable = true, .inline_max = 128 * 1024 };
	const char *d[] = { drive };
	CN_ASSERT(cn_obj_store_open(d, 1, &cfg, &store) == CN_OK);
	CN_ASSERT(cn_obj_make_bucket(store, "bkt") == CN_OK);
	RUN(test_states);
	RUN(test_unversioned_to_enabled);
	RUN(test_suspended);
	RUN(test_list_pagination_and_meta);
	RUN(test_multipart_versioned);
	RUN(test_versions_in_one_ms_keep_their_order);
	RUN(test_version_ids_carry_the_clock_and_sort_in_order);
	RUN(test_replaced_and_deleted_data_kept_until_the_barrier);
	cn_obj_store_close(store);
	snprintf(cmd, sizeof cmd, "rm -rf %s", base);
	if (system(cmd) != 0)
		return 1;
	TEST_END();
}
