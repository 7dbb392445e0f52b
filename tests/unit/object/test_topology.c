/* Unit tests of the object layer's deployment topology (object.h cn_obj_store_open_topology,
 * place.c): SipHash-2-4 against the reference vectors, keys spread evenly over the
 * sets and each key in exactly one drive (also across pools and reopening), listings and
 * version listings merged across sets against a brute-force model, buckets on every set,
 * and the per-drive format: a wiped drive re-formatted into its slot, a drive of another
 * deployment refused, a drive moved to another slot refused (with the log lines that say so),
 * the one-drive format of earlier versions still opening. */
#include "object/object_int.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[64];

/* --- helpers ------------------------------------------------------------------------- */

typedef struct mem_reader {
	cn_reader r;
	const unsigned char *p;
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

static cn_err put_str(cn_obj_store *s, const char *b, const char *k, const char *v)
{
	mem_reader r = { { mem_read }, (const unsigned char *)v, strlen(v), 0 };
	cn_put_opts o = { .size = (int64_t)strlen(v) };
	return cn_obj_put(s, b, k, &r.r, &o, NULL);
}

typedef struct mem_writer {
	cn_writer w;
	cn_buf b;
} mem_writer;

static cn_err mem_write(cn_writer *w, const void *p, size_t len)
{
	return cn_buf_append(&((mem_writer *)w)->b, p, len);
}

/* The object's bytes as a string ("" on error, *errp set). */
static char *get_str(cn_obj_store *s, const char *b, const char *k, cn_err *errp)
{
	cn_obj_reader *r;
	cn_obj_info info;
	cn_obj_info_init(&info);
	cn_err e = cn_obj_open(s, b, k, &info, &r);
	mem_writer w = { { mem_write, NULL, NULL }, { 0 } };
	cn_buf_init(&w.b);
	if (!e) {
		e = cn_obj_read(r, 0, info.size, &w.w);
		cn_obj_reader_close(r);
	}
	cn_obj_info_fini(&info);
	*errp = e;
	cn_buf_append(&w.b, "", 1);
	return w.b.p;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	CN_ASSERT(n > 0 && (size_t)n < sizeof cmd && system(cmd) == 0);
}

static void fresh(void)
{
	sh("rm -rf %s && mkdir -p %s", base, base);
}

/* Drive folders named base/p<pool>s<set>d<slot>. */
static char drives[4][16][16][96];

static void drive_names(size_t npools, size_t nsets, size_t size)
{
	for (size_t p = 0; p < npools; p++)
		for (size_t k = 0; k < nsets; k++)
			for (size_t d = 0; d < size; d++)
				snprintf(drives[p][k][d], sizeof drives[p][k][d], "%s/p%us%ud%u", base,
				         (unsigned)(p & 3), (unsigned)(k & 15), (unsigned)(d & 15));
}

static int64_t topo_check_ms; /* the drive monitor's period in open_topo (0: 5 s) */
static int64_t topo_scan_ms = -1; /* the heal scanner's period in open_topo (-1: none) */

/* Opens pools x sets x size (same shape in every pool); parity 0 for one-drive sets. */
static cn_err open_topo(size_t npools, size_t nsets, size_t size, unsigned parity, cn_obj_store **out)
{
	drive_names(npools, nsets, size);
	static const char *list[4][256];
	cn_obj_pool_spec ps[4];
	for (size_t p = 0; p < npools; p++) {
		for (size_t k = 0; k < nsets; k++)
			for (size_t d = 0; d < size; d++)
				list[p][k * size + d] = drives[p][k][d];
		ps[p] = (cn_obj_pool_spec){ .drives = list[p], .nsets = nsets, .set_size = size };
	}
	cn_obj_topology t = { .pools = ps, .npools = npools, .parity_standard = parity,
	                      .parity_rrs = parity ? 1 : 0 };
	cn_obj_config cfg = { .durable = false, .inline_max = 128 * 1024, .heal_scan_ms = topo_scan_ms,
		                  .drive_check_ms = topo_check_ms };
	*out = NULL;
	return cn_obj_store_open_topology(&t, &cfg, out);
}

/* A fresh store of nsets sets of size drives with bucket "bkt"; uncached: no record cache
 * (the test changes records behind the store's back). NULL (a failed CHECK) if it does
 * not open. */
static cn_obj_store *open_bkt(size_t nsets, size_t size, unsigned parity, bool uncached)
{
	fresh();
	if (uncached)
		setenv("CAIRN_RECORD_CACHE_MB", "0", 1);
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, nsets, size, parity, &s), CN_OK);
	unsetenv("CAIRN_RECORD_CACHE_MB");
	if (s)
		CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	return s;
}

static bool exists(const char *drive, const char *rel)
{
	char p[512];
	struct stat st;
	if (snprintf(p, sizeof p, "%s/%s", drive, rel) >= (int)sizeof p)
		return false;
	return stat(p, &st) == 0;
}

/* stderr into a file while fn runs; the file's text is returned (malloc'd). */
static int saved_fd = -1;
static char logpath[128];

static void log_capture_begin(void)
{
	snprintf(logpath, sizeof logpath, "%s/log.txt", base);
	fflush(stderr);
	saved_fd = dup(2);
	int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CN_ASSERT(fd >= 0);
	dup2(fd, 2);
	close(fd);
	cn_log_min = CN_LOG_INFO;
}

static char *log_capture_end(void)
{
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	cn_log_min = CN_LOG_ERROR + 1;
	FILE *f = fopen(logpath, "r");
	char *t = calloc(1, 65536);
	if (f) {
		size_t n = fread(t, 1, 65535, f);
		t[n] = 0;
		fclose(f);
	}
	return t;
}

/* open_topo with the log captured: CN_OK expected; true when the log holds want. */
static bool open_topo_logs(size_t npools, size_t nsets, size_t size, unsigned parity,
                           cn_obj_store **out, const char *want)
{
	log_capture_begin();
	cn_err e = open_topo(npools, nsets, size, parity, out);
	char *log = log_capture_end();
	CHECK_EQ_INT(e, CN_OK);
	bool has = strstr(log, want) != NULL;
	if (!has)
		fprintf(stderr, "  log: %s\n", log);
	free(log);
	return has;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CN_ASSERT(f);
	fputs(text, f);
	fclose(f);
}

static void read_file(const char *path, char *out, size_t cap)
{
	out[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(out, 1, cap - 1, f);
	out[n] = 0;
	fclose(f);
}

/* --- SipHash ----------------------------------------------------------------------------- */

TEST(test_siphash_vectors)
{
	/* the reference vectors of the SipHash paper (key 00..0f, message 00..n-1) */
	unsigned char key[16], msg[64];
	for (int i = 0; i < 16; i++)
		key[i] = (unsigned char)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (unsigned char)i;
	CHECK(cn_obj__siphash(key, msg, 0) == 0x726fdb47dd0e0e31ull);
	CHECK(cn_obj__siphash(key, msg, 1) == 0x74f839c593dc67fdull);
	CHECK(cn_obj__siphash(key, msg, 7) == 0xab0200f58b01d137ull);
	CHECK(cn_obj__siphash(key, msg, 8) == 0x93f5f5799a932462ull);
	CHECK(cn_obj__siphash(key, msg, 15) == 0xa129ca6149be45e5ull);
	CHECK(cn_obj__siphash(key, msg, 63) == 0x958a324ceb064572ull);
}

/* --- routing ------------------------------------------------------------------------------ */

#define NKEYS 1000

TEST(test_keys_spread_and_stay)
{
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 4, 1, 0, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	char key[32], rel[64];
	for (int i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof key, "k%04d", i);
		CHECK_EQ_INT(put_str(s, "bkt", key, key), CN_OK);
	}
	int per[4] = { 0 }, home[NKEYS];
	for (int i = 0; i < NKEYS; i++) {
		snprintf(rel, sizeof rel, "bkt/%%m.k%04d", i);
		int n = 0;
		for (int k = 0; k < 4; k++)
			if (exists(drives[0][k][0], rel)) {
				n++;
				per[k]++;
				home[i] = k;
			}
		CHECK_EQ_INT(n, 1); /* each key in exactly one set */
	}
	for (int k = 0; k < 4; k++) /* 250 expected, sd ~14 */
		CHECK(per[k] > 175 && per[k] < 325);
	cn_obj_store_close(s);

	/* reopened: every key still readable, an overwrite stays in the key's set */
	CHECK_EQ_INT(open_topo(1, 4, 1, 0, &s), CN_OK);
	if (!s)
		return;
	for (int i = 0; i < NKEYS; i += 7) {
		snprintf(key, sizeof key, "k%04d", i);
		cn_err e;
		char *v = get_str(s, "bkt", key, &e);
		CHECK_EQ_INT(e, CN_OK);
		CHECK_EQ_STR(v, key);
		free(v);
		CHECK_EQ_INT(put_str(s, "bkt", key, "again"), CN_OK);
		snprintf(rel, sizeof rel, "bkt/%%m.k%04d", i);
		for (int k = 0; k < 4; k++)
			CHECK(exists(drives[0][k][0], rel) == (k == home[i]));
	}
	cn_obj_store_close(s);
}

/* quorum.c EC-13 with the object layer's split_wait: a read that finds the drives split between
 * two versions (8 drives EC:2, K = 6: 4 and 4) while a "commit" holds the key's lock waits
 * for the lock and reads again, and gets the version the commit finished with. (With the
 * short sleeps of before, 4.2 ms in all, it answered QUORUM while the commit went on for
 * 20 ms.) A thread that holds the lock itself is not made to wait for itself: the key
 * locks are error-checking mutexes, so its read of a lasting split answers QUORUM at once,
 * not after the wait's 100 ms bound. */
typedef struct split_read {
	cn_obj_store *s;
	cn_err e;
	int64_t size;
} split_read;

static void *split_reader(void *arg)
{
	split_read *r = arg;
	cn_obj_info info;
	cn_obj_info_init(&info);
	r->e = cn_obj_stat(r->s, "bkt", "x", &info);
	r->size = info.size;
	cn_obj_info_fini(&info);
	return NULL;
}

/* Drive d's record of bkt/x saved as base/keep.<d> (save) or copied back over it. */
static void keep_x(size_t d, bool save)
{
	if (save)
		sh("cp '%s/bkt/%%m.x' '%s/keep.%zu'", drives[0][0][d], base, d);
	else
		sh("cp '%s/keep.%zu' '%s/bkt/x.tmp' && mv '%s/bkt/x.tmp' '%s/bkt/%%m.x'", base, d,
		   drives[0][0][d], drives[0][0][d], drives[0][0][d]); /* renamed in, as commits do */
}

/* How many of the set's n drives hold the file rel (below each drive's folder). */
static int on_drives(size_t n, const char *rel)
{
	int c = 0;
	for (size_t d = 0; d < n; d++) {
		cn_buf path;
		cn_buf_init(&path);
		struct stat st;
		CN_ASSERT(cn_buf_printf(&path, "%s/%s", drives[0][0][d], rel) == CN_OK);
		c += stat(path.p, &st) == 0;
		cn_buf_fini(&path);
	}
	return c;
}

/* How many of the set's n drives hold key's previous record (FORMAT.md §2 "%p.<leaf>"). */
static int prevs_on(size_t n, const char *key)
{
	char rel[128];
	snprintf(rel, sizeof rel, "bkt/%%p.%s", key);
	return on_drives(n, rel);
}

/* OBJ-7: an overwrite keeps the previous records until its barrier and drops them after;
 * a later commit of the same key in flight keeps them (its own), or one that failed, one
 * of another key under the same lock does not; a drop by a thread holding the key's lock
 * (an upload's) leaves the lock held. */
TEST(test_previous_records_kept_until_the_barrier)
{
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 1, 4, 2, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(put_str(s, "bkt", "k", "A"), CN_OK);
	CHECK_EQ_INT(put_str(s, "bkt", "k", "BB"), CN_OK); /* an overwrite: kept, then dropped */
	CHECK_EQ_INT(prevs_on(4, "k"), 0);
	/* another key under the same lock */
	char other[32] = "";
	pthread_mutex_t *kl = cn_obj__key_lock(s, "bkt", "k");
	for (int i = 0; i < 100000 && !other[0]; i++) {
		char c[32];
		snprintf(c, sizeof c, "o%d", i);
		if (cn_obj__key_lock(s, "bkt", c) == kl)
			snprintf(other, sizeof other, "%s", c);
	}
	CHECK(other[0] != 0);
	CHECK_EQ_INT(put_str(s, "bkt", other, "O"), CN_OK);
	cn_ec_set *set = cn_obj__key_set(s, "bkt", "k"), *oset = cn_obj__key_set(s, "bkt", other);
	cn_ec_meta old;
	cn_ec_meta_init(&old); /* read through current records (from_prev false) */
	cn_obj__prevk p1, p2, p3;
	CHECK_EQ_INT(pthread_mutex_lock(kl), 0);
	CHECK_EQ_INT(cn_obj__prev_keep(s, set, "bkt", "k", &old, &p1), CN_OK);
	CHECK_EQ_INT(cn_obj__prev_keep(s, oset, "bkt", other, &old, &p2), CN_OK);
	CHECK_EQ_INT(cn_obj__prev_keep(s, set, "bkt", "k", &old, &p3), CN_OK); /* a later one */
	CHECK_EQ_INT(pthread_mutex_unlock(kl), 0);
	CHECK_EQ_INT(prevs_on(4, "k"), 4);
	CHECK_EQ_INT(prevs_on(4, other), 4);
	cn_obj__prev_drop(s, set, "bkt", "k", &p1, true, NULL);
	CHECK_EQ_INT(prevs_on(4, "k"), 4); /* p3's, until its barrier */
	CHECK(!p1.kept);
	cn_obj__prev_drop(s, oset, "bkt", other, &p2, true, NULL);
	CHECK_EQ_INT(prevs_on(4, other), 0); /* p3 is another key's */
	CHECK_EQ_INT(pthread_mutex_lock(kl), 0); /* held, as an upload's lock may be */
	cn_obj__prev_drop(s, set, "bkt", "k", &p3, true, NULL);
	CHECK_EQ_INT(pthread_mutex_unlock(kl), 0); /* still held: ours to release */
	CHECK_EQ_INT(prevs_on(4, "k"), 0);
	/* a failed commit takes itself off the list without dropping */
	CHECK_EQ_INT(pthread_mutex_lock(kl), 0);
	CHECK_EQ_INT(cn_obj__prev_keep(s, set, "bkt", "k", &old, &p1), CN_OK);
	CHECK_EQ_INT(pthread_mutex_unlock(kl), 0);
	cn_obj__prev_drop(s, set, "bkt", "k", &p1, false, NULL);
	CHECK_EQ_INT(prevs_on(4, "k"), 4);
	CHECK(s->prevk[p1.h % OBJ_KEY_LOCKS] == NULL);
	/* a later commit of the key that failed (renamed onto some drives, perhaps): the
	 * earlier one's drop after its barrier leaves the previous records, which hold the
	 * version the failed one replaced; another key's earlier commit still drops */
	CHECK_EQ_INT(pthread_mutex_lock(kl), 0);
	CHECK_EQ_INT(cn_obj__prev_keep(s, set, "bkt", "k", &old, &p1), CN_OK);
	CHECK_EQ_INT(cn_obj__prev_keep(s, oset, "bkt", other, &old, &p2), CN_OK);
	CHECK_EQ_INT(cn_obj__prev_keep(s, set, "bkt", "k", &old, &p3), CN_OK);
	CHECK_EQ_INT(pthread_mutex_unlock(kl), 0);
	cn_obj__prev_drop(s, set, "bkt", "k", &p3, false, NULL);
	CHECK(p1.nodrop && !p2.nodrop);
	cn_obj__prev_drop(s, oset, "bkt", other, &p2, true, NULL);
	CHECK_EQ_INT(prevs_on(4, other), 0);
	cn_obj__prev_drop(s, set, "bkt", "k", &p1, true, NULL);
	CHECK_EQ_INT(prevs_on(4, "k"), 4);
	CHECK(s->prevk[p1.h % OBJ_KEY_LOCKS] == NULL);
	CHECK_EQ_INT(put_str(s, "bkt", "k", "C"), CN_OK); /* replaced, then dropped */
	CHECK_EQ_INT(prevs_on(4, "k"), 0);
	/* deleting the current version promotes the next through a link: the deleted one
	 * stays the previous record and the promoted one's noncurrent copy stays until the
	 * barrier; after it neither is left */
	CHECK_EQ_INT(cn_obj_set_versioning(s, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	cn_obj_info i1, i2;
	cn_obj_info_init(&i1);
	cn_obj_info_init(&i2);
	mem_reader r1 = { { mem_read }, (const unsigned char *)"one", 3, 0 };
	mem_reader r2 = { { mem_read }, (const unsigned char *)"two", 3, 0 };
	cn_put_opts o = { .size = 3 };
	CHECK_EQ_INT(cn_obj_put(s, "bkt", "v", &r1.r, &o, &i1), CN_OK);
	CHECK_EQ_INT(cn_obj_put(s, "bkt", "v", &r2.r, &o, &i2), CN_OK);
	char copy[128]; /* "one"'s noncurrent record */
	snprintf(copy, sizeof copy, "bkt/v/%%v.%s", i1.version_id);
	CHECK_EQ_INT(on_drives(4, copy), 4);
	CHECK_EQ_INT(cn_obj_delete_version(s, "bkt", "v", i2.version_id, NULL), CN_OK);
	cn_err ge;
	char *got = get_str(s, "bkt", "v", &ge);
	CHECK_EQ_INT(ge, CN_OK);
	CHECK_EQ_STR(got, "one");
	free(got);
	CHECK_EQ_INT(on_drives(4, copy), 0); /* the promoted copy removed after the barrier */
	CHECK_EQ_INT(prevs_on(4, "v"), 0);
	cn_obj_info_fini(&i1);
	cn_obj_info_fini(&i2);
	cn_ec_meta_fini(&old);
	cn_obj_store_close(s);
}

/* heal.c HEAL-9: previous records a crash left beside a current version that every drive
 * holds are removed by a heal (not a dry run), and only while no commit of the key keeps
 * its own; those of a key read through them go once heal made the version whole. */
TEST(test_heal_removes_leftover_previous_records)
{
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 1, 8, 2, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(put_str(s, "bkt", "k", "A"), CN_OK);
	CHECK_EQ_INT(put_str(s, "bkt", "j", "J"), CN_OK);
	cn_ec_set *set = cn_obj__key_set(s, "bkt", "k");
	cn_ec_prev_keep(set, "bkt", "k"); /* a crash between a barrier and its drop */
	CHECK_EQ_INT(prevs_on(8, "k"), 8);
	cn_obj_heal_totals t;
	CHECK_EQ_INT(cn_obj_heal(s, "bkt", NULL, true, NULL, NULL, &t), CN_OK);
	CHECK_EQ_INT(prevs_on(8, "k"), 8); /* a dry run changes nothing */
	/* a commit of the key between its keep and its drop: its previous records stay */
	cn_ec_meta old;
	cn_ec_meta_init(&old);
	cn_obj__prevk pk;
	pthread_mutex_t *kl = cn_obj__key_lock(s, "bkt", "k");
	CHECK_EQ_INT(pthread_mutex_lock(kl), 0);
	CHECK_EQ_INT(cn_obj__prev_keep(s, set, "bkt", "k", &old, &pk), CN_OK);
	CHECK_EQ_INT(pthread_mutex_unlock(kl), 0);
	CHECK_EQ_INT(cn_obj_heal(s, "bkt", NULL, false, NULL, NULL, &t), CN_OK);
	CHECK_EQ_INT(prevs_on(8, "k"), 8);
	cn_obj__prev_drop(s, set, "bkt", "k", &pk, false, NULL); /* it failed: they stay */
	CHECK_EQ_INT(prevs_on(8, "k"), 8);
	CHECK_EQ_INT(cn_obj_heal(s, "bkt", NULL, false, NULL, NULL, &t), CN_OK);
	CHECK_EQ_INT(prevs_on(8, "k"), 0);
	CHECK_EQ_INT(t.failed, 0);
	cn_err ge;
	char *got = get_str(s, "bkt", "k", &ge);
	CHECK_EQ_INT(ge, CN_OK);
	CHECK_EQ_STR(got ? got : "", "A");
	free(got);
	/* an overwrite cut short (drives 0-2 took "BB", 3-7 kept "A", all kept "A" as the
	 * previous record) while drive 7 lost the key (EC:2 on 8 drives, K = 6): read through
	 * previous records, and the heal the read queues rewrites slots 0-2 and 7 and removes
	 * the previous records of drives 3-6 too */
	CHECK_EQ_INT(put_str(s, "bkt", "x", "BB"), CN_OK);
	for (size_t d = 0; d < 8; d++)
		keep_x(d, true);
	CHECK_EQ_INT(put_str(s, "bkt", "x", "A"), CN_OK);
	cn_ec_set *xset = cn_obj__key_set(s, "bkt", "x");
	cn_ec_prev_keep(xset, "bkt", "x");
	for (size_t d = 0; d < 3; d++)
		keep_x(d, false);
	sh("rm -f '%s/bkt/%%m.x' '%s/bkt/%%p.x'", drives[0][0][7], drives[0][0][7]);
	CHECK_EQ_INT(prevs_on(8, "x"), 7);
	cn_obj_state st;
	CHECK_EQ_INT(cn_obj_get_state(s, &st), CN_OK);
	uint64_t done0 = st.heal_done;
	free(st.drives);
	got = get_str(s, "bkt", "x", &ge); /* degraded: queues the heal */
	CHECK_EQ_INT(ge, CN_OK);
	CHECK_EQ_STR(got ? got : "", "A");
	free(got);
	for (int i = 0; i < 500; i++) { /* the queue's heal (its read tells from_prev) */
		CHECK_EQ_INT(cn_obj_get_state(s, &st), CN_OK);
		free(st.drives);
		if (st.heal_done > done0)
			break;
		usleep(10000);
	}
	CHECK(st.heal_done > done0);
	CHECK_EQ_INT(prevs_on(8, "x"), 0);
	CHECK_EQ_INT(on_drives(8, "bkt/%m.x"), 8);
	CHECK_EQ_INT(cn_obj_heal(s, "bkt", "x", false, NULL, NULL, &t), CN_OK);
	CHECK_EQ_INT(t.failed, 0);
	CHECK_EQ_INT(t.healed, 0);
	got = get_str(s, "bkt", "x", &ge);
	CHECK_EQ_INT(ge, CN_OK);
	CHECK_EQ_STR(got ? got : "", "A");
	free(got);
	CHECK_EQ_INT(prevs_on(8, "j"), 0);
	cn_ec_meta_fini(&old);
	cn_obj_store_close(s);
}

/* HEAL-9 drops only where the heal saw the version: a drive its read did not reach (here
 * slot 0, which reads skip) keeps the previous record, its vote for the acknowledged
 * version while it holds a cut-short overwrite's record; with M drives lost after that,
 * the version still reads (the review's experiment: QUORUM when HEAL-9 dropped everywhere). */
TEST(test_heal_keeps_previous_records_it_did_not_see)
{
	fresh();
	setenv("CAIRN_DEBUG_READ_OFFLINE_SLOTS", "1", 1); /* reads skip slot 0; drops reach it */
	setenv("CAIRN_RECORD_CACHE_MB", "0", 1);
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 1, 8, 2, &s), CN_OK);
	unsetenv("CAIRN_DEBUG_READ_OFFLINE_SLOTS");
	if (!s) {
		unsetenv("CAIRN_RECORD_CACHE_MB");
		return;
	}
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(put_str(s, "bkt", "x", "BB"), CN_OK);
	for (size_t d = 0; d < 8; d++)
		keep_x(d, true);
	CHECK_EQ_INT(put_str(s, "bkt", "x", "A"), CN_OK);
	cn_ec_prev_keep(cn_obj__key_set(s, "bkt", "x"), "bkt", "x");
	keep_x(0, false); /* an overwrite cut short after slot 0 */
	cn_obj_heal_totals t;
	CHECK_EQ_INT(cn_obj_heal(s, "bkt", NULL, false, NULL, NULL, &t), CN_OK);
	CHECK_EQ_INT(prevs_on(8, "x"), 1); /* slot 0's only */
	CHECK_EQ_INT(on_drives(1, "bkt/%p.x"), 1);
	cn_obj_store_close(s);
	CHECK_EQ_INT(open_topo(1, 1, 8, 2, &s), CN_OK);
	unsetenv("CAIRN_RECORD_CACHE_MB");
	if (!s)
		return;
	for (size_t d = 6; d < 8; d++) /* M drives lose the key */
		sh("rm -f '%s/bkt/%%m.x' '%s/bkt/%%p.x'", drives[0][0][d], drives[0][0][d]);
	cn_err ge;
	char *got = get_str(s, "bkt", "x", &ge);
	CHECK_EQ_INT(ge, CN_OK);
	CHECK_EQ_STR(got ? got : "", "A");
	free(got);
	cn_obj_store_close(s);
}

static void *close_store(void *arg)
{
	cn_obj_store_close(arg);
	return NULL;
}

/* heal.c at stop: the heal in progress finishes, the ones still queued are dropped (not
 * run; freed: the ASan build's leak check). A read queues a heal when it had to rebuild
 * (a data shard's drive lost the record), so which keys queue one depends on their shard
 * order: the test tells them by the counter. */
TEST(test_heal_queue_dropped_at_close)
{
	cn_obj_store *s = open_bkt(1, 4, 2, true);
	if (!s)
		return;
	enum { NK = 12 };
	char key[NK][16], rel[NK][40];
	for (int i = 0; i < NK; i++) {
		snprintf(key[i], sizeof key[i], "q%d", i);
		snprintf(rel[i], sizeof rel[i], "bkt/%%m.q%d", i);
		CHECK_EQ_INT(put_str(s, "bkt", key[i], "queued"), CN_OK);
		sh("rm -f '%s/%s'", drives[0][0][0], rel[i]);
	}
	for (size_t i = 0; i < OBJ_KEY_LOCKS; i++) /* the first heal waits for its key's lock */
		CHECK_EQ_INT(pthread_mutex_lock(&s->key_locks[i]), 0);
	cn_obj_state st;
	bool queued[NK];
	int nq = 0, first = -1;
	for (int i = 0; i < NK; i++) {
		cn_err ge;
		char *got = get_str(s, "bkt", key[i], &ge);
		CHECK_EQ_INT(ge, CN_OK);
		free(got);
		CHECK_EQ_INT(cn_obj_get_state(s, &st), CN_OK);
		free(st.drives);
		queued[i] = st.heal_queued > (uint64_t)nq;
		nq += queued[i];
		if (queued[i] && first < 0) {
			first = i;
			size_t waiting = 1; /* until the queue's thread takes it (and waits) */
			bool stopping;
			for (int w = 0; w < 1000 && waiting; w++) {
				cn_obj__heal_queue_state(s, &waiting, &stopping);
				if (waiting)
					usleep(5000);
			}
			CHECK_EQ_INT(waiting, 0);
		}
	}
	CHECK(nq >= 2 && first >= 0);
	CHECK_EQ_INT(st.heal_done, 0);
	if (first < 0)
		first = 0;
	pthread_mutex_t *kl = cn_obj__key_lock(s, "bkt", key[first]);
	for (size_t i = 0; i < OBJ_KEY_LOCKS; i++) /* all but the one the heal waits for */
		if (&s->key_locks[i] != kl)
			CHECK_EQ_INT(pthread_mutex_unlock(&s->key_locks[i]), 0);
	size_t waiting = 0;
	bool stopping = false;
	cn_obj__heal_queue_state(s, &waiting, &stopping);
	CHECK_EQ_INT(waiting, (size_t)(nq - 1));
	pthread_t t;
	CHECK_EQ_INT(pthread_create(&t, NULL, close_store, s), 0);
	for (int w = 0; w < 1000 && !stopping; w++) { /* the close tells the healer to stop */
		cn_obj__heal_queue_state(s, &waiting, &stopping); /* s lives: the close waits */
		if (!stopping)
			usleep(5000);
	}
	CHECK(stopping);
	CHECK_EQ_INT(pthread_mutex_unlock(kl), 0); /* the last use of s: the close frees it */
	pthread_join(t, NULL);
	for (int i = 0; i < NK; i++) /* the first healed; the rest dropped, or never queued */
		CHECK_EQ_INT(on_drives(4, rel[i]), i == first ? 4 : 3);
}

TEST(test_read_across_a_commit_waits_for_the_key_lock)
{
	cn_obj_store *s = open_bkt(1, 8, 2, true);
	if (!s)
		return;
	pthread_mutex_t *kl = cn_obj__key_lock(s, "bkt", "x");
	split_read r = { .s = s, .e = CN_ERR__COUNT };
	/* The reader's wait is bounded (100 ms): on a loaded machine this thread may not run
	 * again within it, and the reader then rightly answers QUORUM. Up to 5 tries; without
	 * the wait every try answers QUORUM. */
	for (int attempt = 0; attempt < 5; attempt++) {
		CHECK_EQ_INT(put_str(s, "bkt", "x", "new"), CN_OK);
		for (size_t d = 0; d < 8; d++)
			keep_x(d, true);
		CHECK_EQ_INT(put_str(s, "bkt", "x", "older"), CN_OK);
		for (size_t d = 4; d < 8; d++)
			keep_x(d, false); /* "new" renamed onto drives 4..7: mid-commit */
		CHECK_EQ_INT(pthread_mutex_lock(kl), 0); /* the commit holds the key's lock */
		r = (split_read){ .s = s, .e = CN_ERR__COUNT };
		pthread_t t;
		CHECK_EQ_INT(pthread_create(&t, NULL, split_reader, &r), 0);
		usleep(20000);
		for (size_t d = 0; d < 4; d++)
			keep_x(d, false); /* the commit's last renames */
		CHECK_EQ_INT(pthread_mutex_unlock(kl), 0);
		pthread_join(t, NULL);
		if (r.e != CN_ERR_QUORUM)
			break;
	}
	CHECK_EQ_INT(r.e, CN_OK);
	CHECK_EQ_INT(r.size, 3);

	/* a lasting split, read by the lock's holder: QUORUM without waiting for itself */
	CHECK_EQ_INT(put_str(s, "bkt", "x", "older"), CN_OK);
	for (size_t d = 4; d < 8; d++)
		keep_x(d, false);
	CHECK_EQ_INT(pthread_mutex_lock(kl), 0);
	int64_t t0 = cn_now_ms();
	split_reader(&r);
	int64_t took = cn_now_ms() - t0;
	CHECK_EQ_INT(pthread_mutex_unlock(kl), 0);
	CHECK_EQ_INT(r.e, CN_ERR_QUORUM);
	CHECK(took < 100); /* a plain mutex: the wait's 100 ms bound, then QUORUM */
	cn_obj_store_close(s);
}

/* A heal of bkt in a thread: its answer in e, the drive copies it rewrote in size. */
static void *heal_thread(void *arg)
{
	split_read *h = arg;
	cn_obj_heal_totals t;
	h->e = cn_obj_heal(h->s, "bkt", NULL, false, NULL, NULL, &t);
	h->size = (int64_t)t.drives_healed;
	return NULL;
}

/* heal.c HEAL-1: a heal rebuilds a version only under its key's lock: while a commit holds
 * it, a drive's lost record stays lost; once released the heal rewrites it. */
TEST(test_heal_waits_for_the_key_lock)
{
	cn_obj_store *s = open_bkt(1, 4, 2, true);
	if (!s)
		return;
	CHECK_EQ_INT(put_str(s, "bkt", "x", "healme"), CN_OK);
	sh("rm '%s/bkt/%%m.x'", drives[0][0][3]);
	CHECK_EQ_INT(on_drives(4, "bkt/%m.x"), 3);
	pthread_mutex_t *kl = cn_obj__key_lock(s, "bkt", "x");
	CHECK_EQ_INT(pthread_mutex_lock(kl), 0); /* a commit of the key holds its lock */
	split_read h = { .s = s, .e = CN_ERR__COUNT };
	pthread_t t;
	CHECK_EQ_INT(pthread_create(&t, NULL, heal_thread, &h), 0);
	usleep(300000);
	CHECK_EQ_INT(on_drives(4, "bkt/%m.x"), 3); /* not healed under the commit */
	CHECK_EQ_INT(pthread_mutex_unlock(kl), 0);
	pthread_join(t, NULL);
	CHECK_EQ_INT(h.e, CN_OK);
	CHECK_EQ_INT(h.size, 1);
	CHECK_EQ_INT(on_drives(4, "bkt/%m.x"), 4);
	cn_obj_store_close(s);
}

/* A bucket deletion or a put of bkt/x in a thread: its answer in e, done once it answered. */
typedef struct ns_call {
	cn_obj_store *s;
	bool del;
	cn_err e;
	volatile bool done;
} ns_call;

static void *ns_thread(void *arg)
{
	ns_call *c = arg;
	c->e = c->del ? cn_obj_delete_bucket(c->s, "bkt") : put_str(c->s, "bkt", "x", "late");
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* object.c OBJ-5: a bucket deletion waits for the commits in progress (the namespace lock
 * held shared, as a commit holds it) and a commit waits for a deletion in progress (held
 * exclusively): neither runs while the other holds the lock, so no put lands in a bucket
 * folder being removed. */
TEST(test_bucket_delete_and_commits_exclude_each_other)
{
	cn_obj_store *s = open_bkt(4, 1, 0, false);
	if (!s)
		return;
	pthread_t t;
	ns_call c = { .s = s, .del = true, .e = CN_ERR__COUNT };
	CHECK_EQ_INT(pthread_rwlock_rdlock(&s->ns_lock), 0); /* a commit in progress */
	CHECK_EQ_INT(pthread_create(&t, NULL, ns_thread, &c), 0);
	usleep(300000);
	CHECK(!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE));
	int held = 0;
	for (size_t k = 0; k < 4; k++)
		held += exists(drives[0][k][0], "bkt");
	CHECK_EQ_INT(held, 4);
	CHECK_EQ_INT(pthread_rwlock_unlock(&s->ns_lock), 0);
	pthread_join(t, NULL);
	CHECK_EQ_INT(c.e, CN_OK);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	c = (ns_call){ .s = s, .del = false, .e = CN_ERR__COUNT };
	CHECK_EQ_INT(pthread_rwlock_wrlock(&s->ns_lock), 0); /* a deletion in progress */
	CHECK_EQ_INT(pthread_create(&t, NULL, ns_thread, &c), 0);
	usleep(300000);
	CHECK(!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE));
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "x", NULL), CN_ERR_NO_KEY);
	CHECK_EQ_INT(pthread_rwlock_unlock(&s->ns_lock), 0);
	pthread_join(t, NULL);
	CHECK_EQ_INT(c.e, CN_OK);
	CHECK_EQ_INT(cn_obj_stat(s, "bkt", "x", NULL), CN_OK);
	cn_obj_store_close(s);
}

/* The wall-clock ms of one background scan, started now. */
static int64_t scan_ms(cn_obj_store *s)
{
	cn_obj_state st;
	CHECK_EQ_INT(cn_obj_get_state(s, &st), CN_OK);
	uint64_t before = st.scans;
	free(st.drives);
	cn_obj__heal_scan_now(s);
	for (int i = 0; i < 6000; i++) { /* 60 s at most */
		usleep(10000);
		CHECK_EQ_INT(cn_obj_get_state(s, &st), CN_OK);
		free(st.drives);
		if (st.scans > before && !st.scan_running)
			return st.scan_finished_ms - st.scan_started_ms;
	}
	CHECK(!"the scan ended");
	return -1;
}

/* The ms of an on-demand heal of everything (no pauses: HEAL-3 is the scanner's). */
static int64_t heal_ms(cn_obj_store *s)
{
	cn_obj_heal_totals t;
	int64_t t0 = cn_mono_ms();
	CHECK_EQ_INT(cn_obj_heal(s, NULL, NULL, false, NULL, NULL, &t), CN_OK);
	return cn_mono_ms() - t0;
}

/* heal.c HEAL-3: the scanner pauses after each object twice the time it took, at most
 * heal_max_sleep_ms (1 s here): a scan of objects that each take a few ms lasts about three
 * times the same heal without pauses (checked with wide bounds: at least 1.8 times the
 * quicker of two unpaused heals, at most 4 times the slower + 500 ms). A pause of a fixed
 * 1 ms, or of the cap, falls outside them; a cap ignored does not (the objects take less
 * than half of it). */
TEST(test_heal_scanner_paces_itself)
{
	topo_scan_ms = 3600 * 1000; /* the scanner runs, its period never ends in the test */
	cn_obj_store *s = open_bkt(1, 4, 2, false);
	topo_scan_ms = -1;
	if (!s)
		return;
	enum { N = 8, SIZE = 12 << 20 };
	char *big = malloc(SIZE + 1), key[16];
	memset(big, 'h', SIZE);
	big[SIZE] = 0;
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof key, "o%02d", i);
		CHECK_EQ_INT(put_str(s, "bkt", key, big), CN_OK);
	}
	free(big);
	/* Timings on a shared machine: up to 3 rounds, one within both bounds passes (a scan
	 * that does not pause, or always pauses the full cap, misses them every round). */
	int64_t w1 = 0, w2 = 0, wmin = 0, wmax = 0, paced = 0;
	for (int round = 0; round < 3; round++) {
		w1 = heal_ms(s);
		paced = scan_ms(s);
		w2 = heal_ms(s);
		wmin = w1 < w2 ? w1 : w2;
		wmax = w1 < w2 ? w2 : w1;
		if (wmin >= N && paced * 10 >= wmin * 18 && paced <= wmax * 4 + 500)
			break;
	}
	CHECK(wmin >= N); /* the objects take time enough to measure */
	CHECK(paced * 10 >= wmin * 18);
	CHECK(paced <= wmax * 4 + 500);
	cn_obj_store_close(s);
}

TEST(test_pools_existing_key_stays)
{
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(2, 2, 1, 0, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	char key[32], rel[64];
	int in_pool[2] = { 0 }, home[200];
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof key, "p%03d", i);
		CHECK_EQ_INT(put_str(s, "bkt", key, "v1"), CN_OK);
		snprintf(rel, sizeof rel, "bkt/%%m.%s", key);
		int n = 0;
		for (int p = 0; p < 2; p++)
			for (int k = 0; k < 2; k++)
				if (exists(drives[p][k][0], rel)) {
					n++;
					in_pool[p]++;
					home[i] = p * 2 + k;
				}
		CHECK_EQ_INT(n, 1);
	}
	/* both pools have about the same free space (one file system): both get keys */
	CHECK(in_pool[0] > 40 && in_pool[1] > 40);
	cn_obj_store_close(s);
	CHECK_EQ_INT(open_topo(2, 2, 1, 0, &s), CN_OK);
	if (!s)
		return;
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof key, "p%03d", i);
		CHECK_EQ_INT(put_str(s, "bkt", key, "v2"), CN_OK); /* stays in its pool */
		snprintf(rel, sizeof rel, "bkt/%%m.%s", key);
		for (int p = 0; p < 2; p++)
			for (int k = 0; k < 2; k++)
				CHECK(exists(drives[p][k][0], rel) == (p * 2 + k == home[i]));
		cn_err e;
		char *v = get_str(s, "bkt", key, &e);
		CHECK_EQ_INT(e, CN_OK);
		CHECK_EQ_STR(v, "v2");
		free(v);
	}
	/* deletes find the key in its pool */
	for (int i = 0; i < 200; i += 3) {
		snprintf(key, sizeof key, "p%03d", i);
		CHECK_EQ_INT(cn_obj_delete(s, "bkt", key), CN_OK);
		cn_obj_info info;
		cn_obj_info_init(&info);
		CHECK_EQ_INT(cn_obj_stat(s, "bkt", key, &info), CN_ERR_NO_KEY);
		cn_obj_info_fini(&info);
	}
	cn_obj_store_close(s);
}

/* --- listing ------------------------------------------------------------------------------- */

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The brute-force model: entries (keys and common prefixes) after `after`, sorted. */
static size_t model_list(char **keys, size_t n, const char *prefix, const char *delim,
                         const char *after, char **out)
{
	size_t m = 0, pl = strlen(prefix);
	for (size_t i = 0; i < n; i++) {
		if (strncmp(keys[i], prefix, pl))
			continue;
		char e[128];
		const char *d = delim ? strstr(keys[i] + pl, delim) : NULL;
		if (d)
			snprintf(e, sizeof e, "%.*s", (int)(d - keys[i] + strlen(delim)), keys[i]);
		else
			snprintf(e, sizeof e, "%s", keys[i]);
		if (strcmp(e, after) <= 0)
			continue;
		if (m && !strcmp(out[m - 1], e))
			continue;
		out[m++] = strdup(e);
	}
	return m;
}

TEST(test_list_merged_equals_model)
{
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 4, 1, 0, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	static char *keys[400];
	size_t n = 0;
	uint32_t x = 12345;
	static const char *dirs[] = { "", "a/", "a/b/", "b/", "c-d/", "c-d/e/" };
	while (n < 300) {
		x = x * 1103515245u + 12345u;
		char k[64];
		snprintf(k, sizeof k, "%s%c%u", dirs[(x >> 8) % 6], 'a' + (int)((x >> 12) % 5), (x >> 16) % 50);
		bool dup = false;
		for (size_t i = 0; i < n && !dup; i++)
			dup = !strcmp(keys[i], k);
		if (dup)
			continue;
		keys[n++] = strdup(k);
		CHECK_EQ_INT(put_str(s, "bkt", k, "x"), CN_OK);
	}
	qsort(keys, n, sizeof *keys, strp_cmp);
	static const char *prefixes[] = { "", "a/", "c-d/", "a/b/", "zz" };
	static const char *delims[] = { NULL, "/", "-" };
	static const size_t maxes[] = { 1, 3, 7, 1000 };
	char *model[400];
	for (size_t pi = 0; pi < 5; pi++)
		for (size_t di = 0; di < 3; di++)
			for (size_t mi = 0; mi < 4; mi++) {
				size_t nm = model_list(keys, n, prefixes[pi], delims[di], "", model);
				size_t got = 0;
				bool ok = true;
				char after[128] = "";
				for (int page = 0; page < 400 && ok; page++) {
					cn_list_result r;
					cn_err e = cn_obj_list(s, "bkt", prefixes[pi], delims[di], after, maxes[mi], &r);
					CHECK_EQ_INT(e, CN_OK);
					if (e)
						break;
					CHECK(r.nobjects + r.nprefixes <= maxes[mi]);
					/* objects and prefixes, merged back in order, continue the model */
					size_t io = 0, ip = 0;
					while (io < r.nobjects || ip < r.nprefixes) {
						const char *e1 = io < r.nobjects ? r.objects[io].key : NULL;
						const char *e2 = ip < r.nprefixes ? r.prefixes[ip] : NULL;
						const char *pick = !e2 || (e1 && strcmp(e1, e2) < 0) ? e1 : e2;
						if (pick == e1)
							io++;
						else
							ip++;
						if (got >= nm || strcmp(model[got], pick)) {
							ok = false;
							break;
						}
						got++;
					}
					if (!r.truncated) {
						cn_list_result_fini(&r);
						break;
					}
					CHECK(r.next_marker != NULL);
					snprintf(after, sizeof after, "%s", r.next_marker ? r.next_marker : "");
					cn_list_result_fini(&r);
				}
				CHECK(ok);
				CHECK_EQ_INT(got, nm);
				if (!ok || got != nm)
					fprintf(stderr, "  prefix '%s' delim '%s' max %zu: next expected %s\n", prefixes[pi],
					        delims[di] ? delims[di] : "(none)", maxes[mi], got < nm ? model[got] : "-");
				for (size_t i = 0; i < nm; i++)
					free(model[i]);
			}
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	cn_obj_store_close(s);
}

TEST(test_list_versions_merged)
{
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 3, 1, 0, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "vbk"), CN_OK);
	CHECK_EQ_INT(cn_obj_set_versioning(s, "vbk", CN_VERSIONING_ENABLED), CN_OK);
	/* key i has (i % 3) + 1 versions; keys d/... roll up under "d/" */
	char key[32];
	size_t total = 0;
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof key, i % 10 == 9 ? "d/k%02d" : "k%02d", i);
		for (int v = 0; v <= i % 3; v++) {
			CHECK_EQ_INT(put_str(s, "vbk", key, "x"), CN_OK);
			if (i % 10 != 9)
				total++;
		}
	}
	/* expected sequence: keys in order, each with its versions; "d/" once */
	for (size_t max = 1; max <= 7; max += 3) {
		char km[64] = "", vm[40] = "";
		size_t seen = 0, prefixes = 0, pages = 0;
		char last_key[32] = "";
		int last_count = 0;
		bool order_ok = true;
		for (;;) {
			cn_version_list l;
			cn_err e = cn_obj_list_versions(s, "vbk", "", "/", km, vm, max, &l);
			CHECK_EQ_INT(e, CN_OK);
			if (e)
				break;
			pages++;
			CHECK(l.nversions + l.nprefixes <= max);
			for (size_t i = 0; i < l.nversions; i++) {
				if (strcmp(l.versions[i].key, last_key)) {
					if (last_key[0]) { /* the previous key had all its versions */
						int want = atoi(last_key + 1) % 3 + 1;
						order_ok &= last_count == want;
					}
					order_ok &= strcmp(l.versions[i].key, last_key) > 0;
					snprintf(last_key, sizeof last_key, "%s", l.versions[i].key);
					last_count = 0;
					order_ok &= l.versions[i].is_latest;
				}
				last_count++;
			}
			seen += l.nversions;
			prefixes += l.nprefixes;
			for (size_t i = 0; i < l.nprefixes; i++)
				CHECK_EQ_STR(l.prefixes[i], "d/");
			bool more = l.truncated;
			if (more) {
				snprintf(km, sizeof km, "%s", l.next_key_marker ? l.next_key_marker : "");
				snprintf(vm, sizeof vm, "%s", l.next_version_id_marker);
			}
			cn_version_list_fini(&l);
			if (!more || pages > 500)
				break;
		}
		CHECK(order_ok);
		CHECK_EQ_INT(seen, total);
		CHECK_EQ_INT(prefixes, 1);
	}
	cn_obj_store_close(s);
}

/* --- buckets, multipart ------------------------------------------------------------------ */

TEST(test_buckets_on_every_set)
{
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 4, 1, 0, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_ERR_BUCKET_EXISTS);
	for (int k = 0; k < 4; k++) {
		CHECK(exists(drives[0][k][0], "bkt"));
		CHECK(exists(drives[0][k][0], ".cairn.sys/buckets/bkt"));
	}
	/* a bucket config document on every set too */
	CHECK_EQ_INT(cn_obj_bucket_config_put(s, "bkt", "tagging", "<T/>", 4), CN_OK);
	for (int k = 0; k < 4; k++)
		CHECK(exists(drives[0][k][0], ".cairn.sys/bucket-config/bkt.tagging"));
	/* one object in one set: the bucket is not empty, and stays whole */
	CHECK_EQ_INT(put_str(s, "bkt", "only", "1"), CN_OK);
	CHECK_EQ_INT(cn_obj_delete_bucket(s, "bkt"), CN_ERR_BUCKET_NOT_EMPTY);
	for (int k = 0; k < 4; k++)
		CHECK(exists(drives[0][k][0], "bkt"));
	CHECK_EQ_INT(cn_obj_head_bucket(s, "bkt", NULL), CN_OK);
	cn_err e;
	char *v = get_str(s, "bkt", "only", &e);
	CHECK_EQ_INT(e, CN_OK);
	CHECK_EQ_STR(v, "1");
	free(v);
	/* a bucket missing from one set (a crash between sets) is made whole again */
	sh("rm -rf %s/bkt2", drives[0][2][0]);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt2"), CN_OK);
	sh("rm -rf %s/bkt2", drives[0][2][0]);
	CHECK_EQ_INT(cn_obj_head_bucket(s, "bkt2", NULL), CN_ERR_NO_BUCKET);
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt2"), CN_OK);
	CHECK(exists(drives[0][2][0], "bkt2"));
	CHECK_EQ_INT(cn_obj_head_bucket(s, "bkt2", NULL), CN_OK);

	/* multipart: uploads of keys in different sets, listed together, completed */
	char ids[6][CN_OBJ_UPLOAD_ID_MAX];
	char key[32];
	for (int i = 0; i < 6; i++) {
		snprintf(key, sizeof key, "mp%d", i);
		CHECK_EQ_INT(cn_obj_upload_create(s, "bkt", key, NULL, 0, ids[i]), CN_OK);
	}
	cn_upload_list ul;
	CHECK_EQ_INT(cn_obj_upload_list(s, "bkt", "", NULL, NULL, NULL, 1000, &ul), CN_OK);
	CHECK_EQ_INT(ul.nuploads, 6);
	for (size_t i = 0; i < ul.nuploads; i++) {
		snprintf(key, sizeof key, "mp%zu", i);
		CHECK_EQ_STR(ul.uploads[i].key, key);
	}
	cn_upload_list_fini(&ul);
	for (int i = 0; i < 6; i++) {
		snprintf(key, sizeof key, "mp%d", i);
		mem_reader r = { { mem_read }, (const unsigned char *)key, strlen(key), 0 };
		cn_put_opts o = { .size = (int64_t)strlen(key) };
		cn_obj_info pi;
		cn_obj_info_init(&pi);
		CHECK_EQ_INT(cn_obj_upload_part(s, "bkt", key, ids[i], 1, &r.r, &o, &pi), CN_OK);
		cn_obj_part part = { .number = 1 };
		snprintf(part.etag, sizeof part.etag, "%s", pi.etag);
		cn_obj_info_fini(&pi);
		CHECK_EQ_INT(cn_obj_upload_complete(s, "bkt", key, ids[i], &part, 1, NULL, NULL, NULL), CN_OK);
		char *got = get_str(s, "bkt", key, &e);
		CHECK_EQ_INT(e, CN_OK);
		CHECK_EQ_STR(got, key);
		free(got);
		/* wrong key for an upload: no such upload */
		CHECK_EQ_INT(cn_obj_upload_abort(s, "bkt", "other", ids[i]), CN_ERR_NO_UPLOAD);
	}
	CHECK_EQ_INT(cn_obj_upload_list(s, "bkt", "", NULL, NULL, NULL, 1000, &ul), CN_OK);
	CHECK_EQ_INT(ul.nuploads, 0);
	cn_upload_list_fini(&ul);

	/* emptied: the bucket goes from every set */
	CHECK_EQ_INT(cn_obj_delete(s, "bkt", "only"), CN_OK);
	for (int i = 0; i < 6; i++) {
		snprintf(key, sizeof key, "mp%d", i);
		CHECK_EQ_INT(cn_obj_delete(s, "bkt", key), CN_OK);
	}
	CHECK_EQ_INT(cn_obj_delete_bucket(s, "bkt"), CN_OK);
	for (int k = 0; k < 4; k++) {
		CHECK(!exists(drives[0][k][0], "bkt"));
		CHECK(!exists(drives[0][k][0], ".cairn.sys/buckets/bkt"));
		CHECK(!exists(drives[0][k][0], ".cairn.sys/bucket-config/bkt.tagging"));
	}
	CHECK_EQ_INT(cn_obj_head_bucket(s, "bkt", NULL), CN_ERR_NO_BUCKET);
	cn_bucket_info *bl;
	size_t nb;
	CHECK_EQ_INT(cn_obj_list_buckets(s, &bl, &nb), CN_OK);
	CHECK_EQ_INT(nb, 1);
	free(bl);
	cn_obj_store_close(s);
}

/* --- format ---------------------------------------------------------------------------------- */

TEST(test_wiped_drive_reformatted)
{
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 4, 1, 0, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	CHECK_EQ_INT(cn_obj_set_versioning(s, "bkt", CN_VERSIONING_ENABLED), CN_OK);
	char dep[33];
	snprintf(dep, sizeof dep, "%s", s->deployment);
	cn_obj_store_close(s);
	sh("rm -rf %s", drives[0][2][0]);
	char want[256];
	snprintf(want, sizeof want, "drive %s was empty: formatted into pool 0 set 2 slot 0 (it will "
	         "be healed)", drives[0][2][0]);
	CHECK(open_topo_logs(1, 4, 1, 0, &s, want));
	if (!s)
		return;
	CHECK_EQ_STR(s->deployment, dep);
	char path[256], text[1024];
	snprintf(path, sizeof path, "%s/.cairn.sys/format", drives[0][2][0]);
	read_file(path, text, sizeof text);
	CHECK(strstr(text, dep) && strstr(text, "\nset 2\n") && strstr(text, "\ndrive 0\n") &&
	      strstr(text, "\nsets 4\n") && strstr(text, "\nlayout 4x1\n"));

	/* the bucket's folder and its files are back on the new drive */
	CHECK(exists(drives[0][2][0], "bkt"));
	CHECK(exists(drives[0][2][0], ".cairn.sys/buckets/bkt"));
	CHECK(exists(drives[0][2][0], ".cairn.sys/bucket-config/bkt.versioning"));
	CHECK_EQ_INT(cn_obj_head_bucket(s, "bkt", NULL), CN_OK);
	cn_versioning v = CN_VERSIONING_OFF;
	CHECK_EQ_INT(cn_obj_get_versioning(s, "bkt", &v), CN_OK);
	CHECK_EQ_INT(v, CN_VERSIONING_ENABLED);
	cn_obj_store_close(s);
}

TEST(test_foreign_and_moved_drives_refused)
{
	/* one-drive sets: a refused drive leaves its set without quorum: the store does not open */
	fresh();
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 4, 1, 0, &s), CN_OK);
	cn_obj_store_close(s);
	char path[256], text[1024], other[1024];
	snprintf(path, sizeof path, "%s/.cairn.sys/format", drives[0][1][0]);
	read_file(path, text, sizeof text);
	char *dl = strstr(text, "deployment ");
	CHECK(dl != NULL);
	if (!dl)
		return;
	snprintf(other, sizeof other, "%.*sdeployment 00112233445566778899aabbccddeeff%s",
	         (int)(dl - text), text, dl + 11 + 32);
	write_file(path, other);
	log_capture_begin();
	cn_err e = open_topo(1, 4, 1, 0, &s);
	char *log = log_capture_end();
	CHECK_EQ_INT(e, CN_ERR_INVALID);
	CHECK(strstr(log, "belongs to another deployment (00112233445566778899aabbccddeeff") != NULL);
	free(log);
	write_file(path, text); /* back: opens again */
	CHECK_EQ_INT(open_topo(1, 4, 1, 0, &s), CN_OK);
	cn_obj_store_close(s);
	/* drives of sets 0 and 3 swapped */
	char tmp[128];
	snprintf(tmp, sizeof tmp, "%s/swap", base);
	sh("mv %s %s", drives[0][0][0], tmp);
	sh("mv %s %s", drives[0][3][0], drives[0][0][0]);
	sh("mv %s %s", tmp, drives[0][3][0]);
	log_capture_begin();
	e = open_topo(1, 4, 1, 0, &s);
	log = log_capture_end();
	CHECK_EQ_INT(e, CN_ERR_INVALID);
	CHECK(strstr(log, "its format names pool 0 set 3 slot 0: the drive was moved") != NULL);
	free(log);
	/* swapped back: opens again */
	sh("mv %s %s", drives[0][0][0], tmp);
	sh("mv %s %s", drives[0][3][0], drives[0][0][0]);
	sh("mv %s %s", tmp, drives[0][3][0]);
	CHECK_EQ_INT(open_topo(1, 4, 1, 0, &s), CN_OK);
	cn_obj_store_close(s);
}

TEST(test_refused_drives_in_coded_sets)
{
	/* 2 sets of 4 drives, EC:2: two refused drives in one set leave read quorum (2) */
	fresh();
	cn_obj_store *s;
	cn_err e = open_topo(1, 2, 4, 2, &s);
	CHECK_EQ_INT(e, CN_OK);
	if (e)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	char key[16];
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof key, "c%02d", i);
		CHECK_EQ_INT(put_str(s, "bkt", key, key), CN_OK);
	}
	cn_obj_store_close(s);
	char tmp[128];
	snprintf(tmp, sizeof tmp, "%s/swap", base);
	sh("mv %s %s", drives[0][0][0], tmp);
	sh("mv %s %s", drives[0][0][1], drives[0][0][0]);
	sh("mv %s %s", tmp, drives[0][0][1]);
	log_capture_begin();
	e = open_topo(1, 2, 4, 2, &s);
	char *log = log_capture_end();
	CHECK_EQ_INT(e, CN_OK);
	CHECK(strstr(log, "refused for pool 0 set 0 slot 0: its format names pool 0 set 0 slot 1") != NULL);
	CHECK(strstr(log, "refused for pool 0 set 0 slot 1: its format names pool 0 set 0 slot 0") != NULL);
	free(log);
	if (e)
		return;
	cn_obj_state st;
	CHECK_EQ_INT(cn_obj_get_state(s, &st), CN_OK);
	CHECK_EQ_INT(st.ndrives, 8);
	CHECK_EQ_INT(st.nsets, 2);
	CHECK_EQ_STR(st.drives[0].endpoint, "(refused)");
	CHECK_EQ_STR(st.drives[1].endpoint, "(refused)");
	CHECK_EQ_STR(st.drives[2].endpoint, drives[0][0][2]);
	CHECK_EQ_INT(st.drives[5].set, 1);
	free(st.drives);
	for (int i = 0; i < 20; i++) { /* every object still reads (read quorum 2 of 4) */
		snprintf(key, sizeof key, "c%02d", i);
		char *v = get_str(s, "bkt", key, &e);
		CHECK_EQ_INT(e, CN_OK);
		CHECK_EQ_STR(v, key);
		free(v);
	}
	cn_obj_store_close(s);
	/* a drive of another deployment in set 1 */
	fresh();
	CHECK_EQ_INT(open_topo(1, 2, 4, 2, &s), CN_OK);
	cn_obj_store_close(s);
	/* set 1 slot 3 holds a record of another deployment, then one of format 1 (an earlier
	 * cairn: records inside key folders): refused, the others serve */
	static const char *const refused[2][2] = {
		{ "2", "refused for pool 0 set 1 slot 3: it belongs to another deployment" },
		{ "1", "its format record is of version 1, written by an earlier cairn" },
	};
	char path[256], text[300];
	snprintf(path, sizeof path, "%s/.cairn.sys/format", drives[0][1][3]);
	for (int i = 0; i < 2; i++) {
		snprintf(text, sizeof text, "cairn-format %s\ndeployment ffeeddccbbaa99887766554433221100\n"
		         "pools 1\nsets 2\ndrives-per-set 4\npool 0\nset 1\ndrive 3\nlayout 1x2\n",
		         refused[i][0]);
		write_file(path, text);
		log_capture_begin();
		e = open_topo(1, 2, 4, 2, &s);
		log = log_capture_end();
		CHECK_EQ_INT(e, CN_OK);
		CHECK(strstr(log, refused[i][1]) != NULL);
		free(log);
		cn_obj_store_close(s);
	}
}

TEST(test_old_single_drive_format_opens)
{
	fresh();
	char d[128], path[256];
	snprintf(d, sizeof d, "%s/single", base);
	sh("mkdir -p %s/.cairn.sys", d);
	snprintf(path, sizeof path, "%s/.cairn.sys/format", d);
	write_file(path, "cairn-format 2\ndeployment 0123456789abcdef0123456789abcdef\npools 1\nsets 1\n"
	                 "drives-per-set 1\npool 0\nset 0\ndrive 0\n");
	const char *dl[] = { d };
	cn_obj_config cfg = { .durable = false, .inline_max = 1024, .heal_scan_ms = -1 };
	cn_obj_store *s = NULL;
	CHECK_EQ_INT(cn_obj_store_open(dl, 1, &cfg, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_STR(s->deployment, "0123456789abcdef0123456789abcdef");
	cn_obj_store_close(s);
	/* the old record is left as it was */
	char text[512];
	read_file(path, text, sizeof text);
	CHECK(strstr(text, "layout") == NULL);
	/* topology errors */
	cn_obj_topology t = { 0 };
	CHECK_EQ_INT(cn_obj_store_open_topology(&t, &cfg, &s), CN_ERR_INVALID);
	const char *two[] = { d, d };
	cn_obj_pool_spec ps = { .drives = two, .nsets = 1, .set_size = 2 };
	t = (cn_obj_topology){ .pools = &ps, .npools = 1, .parity_standard = 1, .parity_rrs = 1 };
	CHECK_EQ_INT(cn_obj_store_open_topology(&t, &cfg, &s), CN_ERR_INVALID); /* twice */
	ps.set_size = 17;
	CHECK_EQ_INT(cn_obj_store_open_topology(&t, &cfg, &s), CN_ERR_INVALID);
	ps.set_size = 2;
	t.parity_standard = 2; /* more than half */
	CHECK_EQ_INT(cn_obj_store_open_topology(&t, &cfg, &s), CN_ERR_INVALID);
}

/* A disk that is not mounted: its mount point, an empty folder of the filesystem that holds
 * the other drives' mount points, is not formatted (its slot would fill the parent
 * filesystem) but suspended; once a disk is mounted there, the drive monitor formats it
 * into its slot. Drives are tmpfs mounts in a private mount namespace (root only). */
TEST(test_unmounted_disk_not_formatted)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		SKIP("no private mount namespace here (%s)", strerror(errno));
	}
	fresh();
	drive_names(1, 1, 4);
	for (int d = 0; d < 4; d++) {
		sh("mkdir -p %s", drives[0][0][d]);
		CN_ASSERT(mount("tmpfs", drives[0][0][d], "tmpfs", 0, "size=32m") == 0);
	}
	topo_check_ms = 50;
	cn_obj_store *s;
	CHECK_EQ_INT(open_topo(1, 1, 4, 2, &s), CN_OK);
	if (!s)
		return;
	CHECK_EQ_INT(cn_obj_make_bucket(s, "bkt"), CN_OK);
	cn_obj_store_close(s);
	const char *d2 = drives[0][0][2];
	CN_ASSERT(umount2(d2, MNT_DETACH) == 0); /* its disk is gone: the bare mount point */
	char want[300];
	snprintf(want, sizeof want, "drive %s (pool 0 set 0 slot 2) is empty and lies on the "
	         "filesystem that holds the other drives' mount points", d2);
	CHECK(open_topo_logs(1, 1, 4, 2, &s, want));
	if (!s)
		return;
	CHECK(!exists(d2, ".cairn.sys/format") && !exists(d2, "bkt"));
	usleep(300000); /* several drive checks: still nothing written there */
	CHECK(!exists(d2, ".cairn.sys/format"));
	CHECK_EQ_INT(cn_obj_head_bucket(s, "bkt", NULL), CN_OK);
	/* a disk mounted there: formatted into slot 2, the bucket restored */
	CN_ASSERT(mount("tmpfs", d2, "tmpfs", 0, "size=32m") == 0);
	for (int i = 0; i < 200 && !exists(d2, "bkt"); i++)
		usleep(20000);
	CHECK(exists(d2, ".cairn.sys/format") && exists(d2, "bkt"));
	char path[256], text[1024];
	snprintf(path, sizeof path, "%s/.cairn.sys/format", d2);
	read_file(path, text, sizeof text);
	CHECK(strstr(text, "\ndrive 2\n") != NULL);
	cn_obj_store_close(s);
	topo_check_ms = 0;
	for (int d = 0; d < 4; d++)
		umount2(drives[0][0][d], MNT_DETACH);
}

int main(void)
{
	cn_log_min = CN_LOG_ERROR + 1;
	snprintf(base, sizeof base, "/tmp/cn_topo_test.%d", (int)getpid());
	RUN(test_siphash_vectors);
	RUN(test_keys_spread_and_stay);
	RUN(test_pools_existing_key_stays);
	RUN(test_list_merged_equals_model);
	RUN(test_list_versions_merged);
	RUN(test_buckets_on_every_set);
	RUN(test_bucket_delete_and_commits_exclude_each_other);
	RUN(test_read_across_a_commit_waits_for_the_key_lock);
	RUN(test_previous_records_kept_until_the_barrier);
	RUN(test_heal_removes_leftover_previous_records);
	RUN(test_heal_queue_dropped_at_close);
	RUN(test_heal_waits_for_the_key_lock);
	RUN(test_heal_scanner_paces_itself);
	RUN(test_heal_keeps_previous_records_it_did_not_see);
	RUN(test_wiped_drive_reformatted);
	RUN(test_foreign_and_moved_drives_refused);
	RUN(test_refused_drives_in_coded_sets);
	RUN(test_old_single_drive_format_opens);
	RUN(test_unmounted_disk_not_formatted);
	sh("rm -rf %s", base);
	TEST_END();
}
