/* object: the deployment's topology — pools of erasure sets over drive folders, each
 * drive's format record (docs/FORMAT.md §1.1), the set of every key (SipHash-2-4 of the key
 * keyed by the deployment id, mod the pool's sets, as MinIO; new keys to a pool drawn by
 * free space, existing keys stay in theirs) — and buckets (on every set), objects and
 * listing (one page per set, merged: L1-L3) over it (object.h). Names and keys are
 * validated here; the ETag (MD5) is computed while the body streams through one bounded
 * per-thread buffer; commits go through the key's erasure set and are made durable by its
 * group-commit barrier before any success returns (object.h contract 1).
 *
 * Commit order (numbered invariants, cited below):
 *  C1. Data is written under the drive's tmp area; nothing is visible before rename_data.
 *  C2. Commits of one key are serialized by a striped mutex keyed by hash(bucket/key).
 *      Rename atomicity alone would keep the RECORD whole, but the previous version's data
 *      folder must be known exactly (read under the lock) so that the loser of a race never
 *      deletes the winner's data; with the lock each commit reads the record it replaces.
 *      Puts of one key thus leave one whole winner (the last commit).
 *  C3. The barrier (cn_ec_sync) runs after the renames and before CN_OK; the lock is not
 *      held across it, so concurrent commits share one flush (group commit).
 *  C4. The replaced data folder is removed only after the barrier: a crash before the new
 *      record is durable then still finds the old record's data.
 *  C5. Bucket deletion takes the namespace lock exclusively; commits take it shared, so a
 *      put never lands in a bucket folder that is being removed.
 *  C6. A replaced or deleted version's data folder outlives the readers that may read it
 *      (cn_obj__drop_data, object_int.h): a GET that began before an overwrite streams the
 *      old version to its end.
 *  C7. A commit that replaces a current record keeps it as the key's previous record on
 *      every drive first (cn_ec_prev_keep in vprep, erasure.h: quorum.c E15 reads it when a
 *      crash cut the commit short), and drops it after the barrier (vfinish), under the
 *      key's lock and only when no later commit of the same key has kept its own previous
 *      records meanwhile (the lock's list of kept ones, cn_obj__prevk): those must stay
 *      until that commit's barrier, and it drops them. A later commit that failed marks
 *      the earlier ones not to drop (nodrop): it may have renamed its record onto fewer
 *      drives than its quorum, and the previous records hold the version it replaced. A
 *      previous record left over (a crash between barrier and drop) is never counted
 *      while the current one is at quorum; the next overwrite of the key replaces it, a
 *      delete removes it, and a heal of the key removes it on the drives it saw holding
 *      the current version (heal.c H9). */
#include "object/object_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>

#define IO_BUF OBJ_IO_BUF
#define VIEW_MIN (32 * 1024)
#define KEY_LOCKS OBJ_KEY_LOCKS
#define FORMAT_VERSION 2 /* 2: current records beside key folders (FORMAT.md §3) */
#define LIST_STOP CN_ERR__COUNT /* internal: the walk collected enough */

struct cn_obj_reader {
	cn_reader stream;  /* first: cn_obj_reader_stream casts back */
	cn_obj_store *s;
	cn_ec_reader *r;   /* NULL until attached */
	int64_t size;
	int64_t pos, end;  /* the stream's position and end */
	cn_obj__pin pin;   /* C6, while pinned */
	bool pinned;
};

/* --- per-thread I/O buffers (contract 4: memory bounded by the worker count) -------- */

typedef struct tls_bufs {
	unsigned char *b[2];
} tls_bufs;

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *p)
{
	tls_bufs *t = p;
	free(t->b[0]);
	free(t->b[1]);
	free(t);
}

static void tls_init(void)
{
	CN_ASSERT(pthread_key_create(&tls_key, tls_free) == 0);
}

/* Slot 0: put bodies; slot 1: reads. IO_BUF bytes each. */
unsigned char *cn_obj__tls_buf(int slot)
{
	pthread_once(&tls_once, tls_init);
	tls_bufs *t = pthread_getspecific(tls_key);
	if (!t) {
		t = calloc(1, sizeof *t);
		if (!t)
			return NULL;
		pthread_setspecific(tls_key, t);
	}
	if (!t->b[slot])
		t->b[slot] = malloc(IO_BUF);
	return t->b[slot];
}

/* --- names ---------------------------------------------------------------------------- */

static bool is_ipv4(const char *s)
{
	int parts = 0;
	while (*s) {
		int digits = 0;
		while (*s >= '0' && *s <= '9') {
			s++;
			digits++;
		}
		if (digits == 0 || digits > 3)
			return false;
		parts++;
		if (*s == '.')
			s++;
		else if (*s)
			return false;
	}
	return parts == 4;
}

bool cn_obj_bucket_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '.' && c != '-')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
		if (c == '.' && name[i + 1] == '.')
			return false;
	}
	if (is_ipv4(name) || strncmp(name, "xn--", 4) == 0)
		return false;
	if (n >= 8 && strcmp(name + n - 8, "-s3alias") == 0)
		return false;
	return true;
}

/* Key rules (object.h), plus the layout's own limit (docs/FORMAT.md §3): every component,
 * once escaped, must fit a 255-byte file name. */
cn_err cn_obj_key_check(const char *key, size_t len)
{
	if (len == 0)
		return CN_ERR_BAD_KEY;
	if (len > 1024)
		return CN_ERR_KEY_TOO_LONG;
	if (memchr(key, 0, len) || !cn_utf8_valid(key, len))
		return CN_ERR_BAD_KEY;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && key[i] != '/')
			continue;
		size_t cl = i - start;
		bool esc = cl == 0 || key[start] == '%' || (cl == 1 && key[start] == '.') ||
		           (cl == 2 && key[start] == '.' && key[start + 1] == '.');
		if (cl + (esc ? 2 : 0) > 255)
			return CN_ERR_BAD_KEY;
		start = i + 1;
	}
	return CN_OK;
}

static uint64_t key_hash(const char *bucket, const char *key)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a of bucket "/" key */
	for (const char *p = bucket; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

pthread_mutex_t *cn_obj__key_lock(cn_obj_store *s, const char *bucket, const char *key)
{
	return &s->key_locks[key_hash(bucket, key) % KEY_LOCKS];
}

cn_err cn_obj__prev_keep(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                         const cn_ec_meta *old, cn_obj__prevk *pk)
{
	pk->kept = false;
	if (old->from_prev) {
		cn_ec_heal_result hr;
		cn_err e = cn_ec_heal(set, bucket, key, NULL, false, &hr);
		cn_ec_meta m;
		cn_ec_meta_init(&m);
		if (!e) /* healed whole enough: the current records alone hold it now */
			e = cn_ec_read_meta(set, bucket, key, true, &m);
		if (!e && m.from_prev)
			e = CN_ERR_QUORUM;
		cn_ec_meta_fini(&m);
		if (e) {
			cn_log(CN_LOG_WARN, NULL, "object: %s/%s: the version a cut-short commit left could not "
			       "be healed before replacing it: %s", bucket, key, cn_err_str(e));
			return e == CN_ERR_QUORUM ? e : CN_ERR_IO;
		}
	}
	pk->h = key_hash(bucket, key);
	cn_obj__prevk **head = &s->prevk[pk->h % KEY_LOCKS];
	pk->next = *head;
	*head = pk;
	pk->kept = true;
	pk->nodrop = false;
	cn_ec_prev_keep(set, bucket, key);
	return CN_OK;
}

void cn_obj__prev_drop(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                       cn_obj__prevk *pk, bool committed, const char *stale_vid)
{
	if (!pk->kept)
		return;
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	int rc = pthread_mutex_lock(kl); /* EDEADLK: the caller holds it (an upload's lock) */
	CN_ASSERT(rc == 0 || rc == EDEADLK);
	bool later = false; /* a commit of the key kept its own since (newer: nearer the head) */
	for (cn_obj__prevk **pp = &s->prevk[pk->h % KEY_LOCKS]; *pp; pp = &(*pp)->next) {
		if (*pp == pk) {
			*pp = pk->next;
			break;
		}
		later |= (*pp)->h == pk->h;
	}
	/* A failed commit may have renamed its record onto some drives (fewer than its
	 * quorum) before failing: the previous records hold what it replaced, which the
	 * earlier commits still on the list will have acknowledged by their drop. */
	if (!committed)
		for (cn_obj__prevk *o = pk->next; o; o = o->next)
			if (o->h == pk->h)
				o->nodrop = true;
	pk->kept = false;
	if (committed && !later && !pk->nodrop)
		cn_ec_prev_drop(set, bucket, key);
	/* the promoted version's copy goes only while that version is still the current one
	 * (a commit since may have made it noncurrent: then the copy is that version), also
	 * with a later commit in flight (a metadata update of it would leave the copy stale) */
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	if (committed && stale_vid && cn_ec_read_meta(set, bucket, key, true, &m) == CN_OK &&
	    !strcmp(m.version_id[0] ? m.version_id : "null", stale_vid))
		cn_ec_version_delete(set, bucket, key, stale_vid);
	cn_ec_meta_fini(&m);
	if (rc == 0)
		pthread_mutex_unlock(kl);
}

bool cn_obj__prev_pending(cn_obj_store *s, const char *bucket, const char *key)
{
	uint64_t h = key_hash(bucket, key);
	for (const cn_obj__prevk *p = s->prevk[h % KEY_LOCKS]; p; p = p->next)
		if (p->h == h)
			return true;
	return false;
}

/* quorum.c E13 (erasure.h cn_ec_set_split_wait): a read found the drives split between
 * versions of bucket/key. Commits hold the key's lock while they rename records (C2), so
 * taking it and letting go waits for those in progress. A thread that holds it itself (a
 * delete, heal, a version change reading under it) gets EDEADLK at once: the key locks are
 * error-checking mutexes. Bounded: a commit stuck on a stalled drive must not hold up the
 * loop thread, which serves small GETs, for longer than SPLIT_WAIT_MS. */
#define SPLIT_WAIT_MS 100
static bool split_wait(void *ctx, const char *vol, const char *key)
{
	pthread_mutex_t *kl = cn_obj__key_lock(ctx, vol, key);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += SPLIT_WAIT_MS * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	int rc = pthread_mutex_clocklock(kl, CLOCK_MONOTONIC, &ts);
	if (rc == 0)
		pthread_mutex_unlock(kl);
	return rc != ETIMEDOUT;
}

/* --- open readers and removed data (C6) ------------------------------------------------ */

struct cn_obj__drop {
	cn_obj__drop *next;
	cn_ec_set *set;
	char *bucket, *key;
	char data_id[CN_DRIVE_ID_MAX + 1];
};

#define PIN_STRIPE(s, h) (&(s)->pins[((h) >> 32) % OBJ_PIN_STRIPES])

void cn_obj__pin_key(cn_obj_store *s, const char *bucket, const char *key, cn_obj__pin *p)
{
	p->h = key_hash(bucket, key);
	p->drops = NULL;
	p->next = NULL;
	cn_obj__pins *st = PIN_STRIPE(s, p->h);
	pthread_mutex_lock(&st->mu);
	p->prev = st->tail;
	if (st->tail)
		st->tail->next = p;
	else
		st->head = p;
	st->tail = p;
	pthread_mutex_unlock(&st->mu);
}

static void run_drops(cn_obj__drop *d)
{
	while (d) {
		cn_obj__drop *next = d->next;
		cn_ec_delete_data(d->set, d->bucket, d->key, d->data_id);
		free(d->bucket);
		free(d->key);
		free(d);
		d = next;
	}
}

void cn_obj__unpin(cn_obj_store *s, cn_obj__pin *p)
{
	cn_obj__pins *st = PIN_STRIPE(s, p->h);
	cn_obj__drop *run = NULL;
	pthread_mutex_lock(&st->mu);
	if (p->drops) {
		/* they wait for every older reader of the key too: hand them to the next older */
		cn_obj__pin *q = p->prev;
		while (q && q->h != p->h)
			q = q->prev;
		cn_obj__drop **tail = q ? &q->drops : &run;
		while (*tail)
			tail = &(*tail)->next;
		*tail = p->drops;
		p->drops = NULL;
	}
	if (p->prev)
		p->prev->next = p->next;
	else
		st->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		st->tail = p->prev;
	pthread_mutex_unlock(&st->mu);
	run_drops(run);
}

void cn_obj__drop_data(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                       const char *data_id)
{
	uint64_t h = key_hash(bucket, key);
	cn_obj__pins *st = PIN_STRIPE(s, h);
	cn_obj__drop *d = NULL;
	if (data_id && data_id[0]) {
		pthread_mutex_lock(&st->mu);
		cn_obj__pin *newest = st->tail;
		while (newest && newest->h != h)
			newest = newest->prev;
		if (newest && (d = calloc(1, sizeof *d)) && (d->bucket = strdup(bucket)) &&
		    (d->key = strdup(key))) {
			d->set = set;
			cn_strlcpy(d->data_id, data_id, sizeof d->data_id);
			d->next = newest->drops;
			newest->drops = d;
			pthread_mutex_unlock(&st->mu);
			return;
		}
		pthread_mutex_unlock(&st->mu);
		if (d) { /* out of memory: removed now, as before C6 */
			free(d->bucket);
			free(d);
		}
	}
	cn_ec_delete_data(set, bucket, key, data_id && data_id[0] ? data_id : NULL);
}

/* --- store and format ----------------------------------------------------------------- */

#define FORMAT_MAX 4096
#define MAX_POOLS 64
#define MAX_SETS 4096

/* MinIO's default STANDARD parity for a set of n drives (the same table as
 * cn_layout_default_parity in cluster/layout.h, which the object layer may not include):
 * 1 -> 0, 2-3 -> 1, 4-5 -> 2, 6-7 -> 3, 8 and more -> 4. */
static unsigned default_parity(size_t n)
{
	return n <= 1 ? 0 : n < 4 ? 1 : n < 6 ? 2 : n < 8 ? 3 : 4;
}

/* One drive's format record (docs/FORMAT.md §1), parsed. */
typedef struct fmt {
	int version, pools, sets, per_set, pool, set, drive;
	char dep[33];
	char layout[512];   /* "" in formats written before pools ("1x1") */
} fmt;

enum { F_OFFLINE, F_NONE, F_OK, F_BAD };

/* "<sets>x<drives per set>" of each of the first npools pools, comma-separated. */
static void layout_string(const cn_obj_store *s, size_t npools, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = 0;
	for (size_t p = 0; p < npools && n < cap; p++) {
		int w = snprintf(out + n, cap - n, "%s%zux%zu", p ? "," : "", s->pools[p].nsets,
		                 s->pools[p].set_size);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

/* "key value" lines; unknown keys are skipped so the format can grow. */
static cn_err format_parse(const cn_buf *b, fmt *f)
{
	memset(f, 0, sizeof *f);
	f->version = f->pools = f->sets = f->per_set = f->pool = f->set = f->drive = -1;
	const char *p = b->p, *end = b->p + b->len;
	if (!p)
		return CN_ERR_CORRUPT;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[600];
		if (ll >= sizeof line)
			return CN_ERR_CORRUPT;
		memcpy(line, p, ll);
		line[ll] = 0;
		p += ll + (nl != NULL);
		char k[32], v[520];
		if (ll == 0 || sscanf(line, "%31s %519s", k, v) != 2)
			continue;
		char *iend;
		long iv = strtol(v, &iend, 10);
		bool num = *iend == 0 && iv >= 0 && iv < 1000000;
		if (!strcmp(k, "cairn-format"))
			f->version = num ? (int)iv : -2;
		else if (!strcmp(k, "deployment"))
			snprintf(f->dep, sizeof f->dep, "%.32s", v);
		else if (!strcmp(k, "layout"))
			snprintf(f->layout, sizeof f->layout, "%.511s", v);
		else if (!num)
			continue;
		else if (!strcmp(k, "pools"))
			f->pools = (int)iv;
		else if (!strcmp(k, "sets"))
			f->sets = (int)iv;
		else if (!strcmp(k, "drives-per-set"))
			f->per_set = (int)iv;
		else if (!strcmp(k, "pool"))
			f->pool = (int)iv;
		else if (!strcmp(k, "set"))
			f->set = (int)iv;
		else if (!strcmp(k, "drive"))
			f->drive = (int)iv;
	}
	unsigned char raw[16];
	if (f->version != FORMAT_VERSION || strlen(f->dep) != 32 ||
	    cn_hex_decode((cn_str){ f->dep, 32 }, raw, 16))
		return CN_ERR_CORRUPT;
	if (f->pools < 1 || f->sets < 1 || f->per_set < 1 || f->pool < 0 || f->set < 0 || f->drive < 0)
		return CN_ERR_CORRUPT;
	for (int i = 0; f->dep[i]; i++) /* one spelling: lowercase */
		if (f->dep[i] >= 'A' && f->dep[i] <= 'F')
			f->dep[i] = (char)(f->dep[i] - 'A' + 'a');
	return CN_OK;
}

static cn_err format_write(cn_obj_store *s, cn_ec_set *set, size_t pool, size_t idx, size_t slot)
{
	char layout[512], body[800];
	layout_string(s, s->npools, layout, sizeof layout);
	int n = snprintf(body, sizeof body,
	                 "cairn-format %d\ndeployment %s\npools %zu\nsets %zu\ndrives-per-set %zu\n"
	                 "pool %zu\nset %zu\ndrive %zu\nlayout %s\n",
	                 FORMAT_VERSION, s->deployment, s->npools, s->pools[pool].nsets,
	                 s->pools[pool].set_size, pool, idx, slot, layout);
	if (n < 0 || (size_t)n >= sizeof body)
		return CN_ERR_TOO_LARGE;
	return cn_ec_write_sys(set, slot, "format", body, (size_t)n);
}

/* Why a drive with format f cannot sit in (pool, idx, slot) of this deployment: a line for
 * the log in why, and true; false when it belongs there. */
static bool format_mismatch(const cn_obj_store *s, const fmt *f, size_t pool, size_t idx,
                            size_t slot, char *why, size_t cap)
{
	const cn_obj__pool *pl = &s->pools[pool];
	if (strcmp(f->dep, s->deployment)) {
		snprintf(why, cap, "it belongs to another deployment (%s; this one is %s)", f->dep,
		         s->deployment);
		return true;
	}
	if ((size_t)f->pools > s->npools) {
		snprintf(why, cap, "its deployment has %d pools but this server was given %zu", f->pools,
		         s->npools);
		return true;
	}
	if ((size_t)f->sets != pl->nsets || (size_t)f->per_set != pl->set_size) {
		snprintf(why, cap, "its pool is laid out as %d set(s) of %d drive(s), this server's pool "
		         "%zu as %zu set(s) of %zu", f->sets, f->per_set, pool, pl->nsets, pl->set_size);
		return true;
	}
	if (f->layout[0]) {
		char want[512];
		layout_string(s, (size_t)f->pools, want, sizeof want);
		if (strcmp(want, f->layout)) {
			snprintf(why, cap, "its deployment's pools are laid out as %.200s, this server's as %.200s",
			         f->layout, want);
			return true;
		}
	}
	if ((size_t)f->pool != pool || (size_t)f->set != idx || (size_t)f->drive != slot) {
		snprintf(why, cap, "its format names pool %d set %d slot %d: the drive was moved or the "
		         "drives were given in another order", f->pool, f->set, f->drive);
		return true;
	}
	return false;
}

static size_t write_quorum_of(size_t n, unsigned parity)
{
	size_t k = n - parity;
	return k + (k == parity);
}

static void restore_buckets(cn_obj_store *s, const bool *is_new);

static size_t total_drives(const cn_obj_store *s)
{
	size_t total = 0;
	for (size_t i = 0; i < s->nsets; i++)
		total += cn_ec_set_ndrives(s->sets[i]);
	return total;
}

/* Slot (p, k, d)'s format record: read (unless b already holds it), parsed into *f and
 * checked against the slot; CN_ERR_INVALID when it names another slot or deployment. */
static cn_err format_check(cn_obj_store *s, cn_ec_set *set, size_t p, size_t k, size_t d,
                           cn_buf *b, bool read, fmt *f)
{
	char why[700];
	if (read) {
		b->len = 0;
		cn_err e = cn_ec_read_sys(set, d, "format", FORMAT_MAX, b);
		if (e)
			return e;
	}
	if (format_parse(b, f) || format_mismatch(s, f, p, k, d, why, sizeof why))
		return CN_ERR_INVALID;
	return CN_OK;
}

/* An empty drive on the filesystem that holds the set's other drives' mount points, and
 * sharing it with none of them: a disk that is not mounted, its mount point a folder of the
 * parent filesystem (formatting it would put the slot's data there). Drives that are all
 * folders of one filesystem (a laptop, the tests) never look so. */
static bool looks_unmounted(cn_ec_set *set, size_t d)
{
	cn_drive_info me, o;
	if (cn_ec_set_drive_info(set, d, &me) || !me.online || !me.fs_id)
		return false;
	bool below_mounts = false;
	for (size_t e = 0; e < cn_ec_set_ndrives(set); e++) {
		if (e == d || cn_ec_set_drive_info(set, e, &o) || !o.online || !o.fs_id)
			continue;
		if (o.fs_id == me.fs_id)
			return false; /* folders of one filesystem */
		if (o.parent_fs_id != o.fs_id && o.parent_fs_id == me.fs_id)
			below_mounts = true; /* e is a disk mounted on this filesystem */
	}
	return below_mounts;
}

/* Suspends slot at (set, d) for the drive monitor to look at again (mon_suspended), or,
 * without a monitor, refuses it for good. */
static void suspend_slot(cn_obj_store *s, cn_ec_set *set, size_t d, size_t at)
{
	if (s->mon_suspended) {
		cn_ec_set_suspend(set, d, true);
		s->mon_suspended[at] = true;
		if (s->mon_offline)
			s->mon_offline[at] = true;
	} else {
		cn_ec_set_refuse(set, d);
	}
}

static void suspend_unmounted(cn_obj_store *s, cn_ec_set *set, size_t p, size_t k, size_t d,
                              size_t at)
{
	cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu) is empty and lies on "
	       "the filesystem that holds the other drives' mount points: its disk is not mounted? "
	       "Not formatted; %s", cn_ec_set_endpoint(set, d), p, k, d,
	       s->mon_suspended ? "suspended until a disk is mounted there" : "refused");
	suspend_slot(s, set, d, at);
}

/* Reads, checks and writes the format record of every drive (docs/FORMAT.md §1), refusing
 * drives that belong elsewhere; then checks that every set has quorum. */
static cn_err format_all(cn_obj_store *s, const cn_err *open_err)
{
	size_t total = total_drives(s);
	fmt *f = calloc(total, sizeof *f);
	unsigned char *state = calloc(total, 1);
	cn_err *why_err = calloc(total, sizeof *why_err);
	bool *is_new = calloc(total, sizeof *is_new);
	cn_err e = CN_OK;
	if (!f || !state || !why_err || !is_new) {
		e = CN_ERR_NOMEM;
		goto out;
	}
	/* 1. read */
	size_t at = 0, formatted = 0;
	for (size_t i = 0; i < s->nsets; i++) {
		for (size_t d = 0; d < cn_ec_set_ndrives(s->sets[i]); d++, at++) {
			why_err[at] = open_err[at];
			if (open_err[at] || !cn_ec_set_endpoint(s->sets[i], d)) { /* held offline */
				state[at] = F_OFFLINE;
				continue;
			}
			cn_buf b;
			cn_buf_init(&b);
			cn_err re = cn_ec_read_sys(s->sets[i], d, "format", FORMAT_MAX, &b);
			if (re == CN_ERR_NOT_FOUND) {
				state[at] = F_NONE;
			} else if (re == CN_OK && format_parse(&b, &f[at]) == CN_OK) {
				state[at] = F_OK;
				formatted++;
			} else {
				state[at] = F_BAD;
				why_err[at] = re == CN_OK || re == CN_ERR_TOO_LARGE ? CN_ERR_CORRUPT : re;
				const char *why = re == CN_OK || re == CN_ERR_TOO_LARGE
				                          ? "unreadable or of an unknown version"
				                          : "not readable";
				if (re == CN_OK && f[at].version == 1)
					why = "of version 1, written by an earlier cairn whose key layout this "
					      "one does not read (docs/FORMAT.md)";
				cn_log(CN_LOG_ERROR, NULL, "object: drive %s refused: its format record is "
				       "%s (%s)", cn_ec_set_endpoint(s->sets[i], d), why, cn_err_str(why_err[at]));
				cn_ec_set_refuse(s->sets[i], d);
			}
			cn_buf_fini(&b);
		}
	}
	/* 2. the deployment: the id most formatted drives carry (a new one when none is) */
	bool fresh = formatted == 0;
	if (fresh) {
		cn_drive_random_id(s->deployment);
	} else {
		size_t best = 0;
		for (size_t a = 0; a < total; a++) {
			if (state[a] != F_OK)
				continue;
			size_t votes = 0;
			for (size_t b2 = 0; b2 < total; b2++)
				votes += state[b2] == F_OK && !strcmp(f[a].dep, f[b2].dep);
			if (votes > best) {
				best = votes;
				memcpy(s->deployment, f[a].dep, 33);
			}
		}
	}
	CN_ASSERT(cn_hex_decode((cn_str){ s->deployment, 32 }, s->dep_key, 16) == CN_OK);
	/* 3. check the formatted drives, format the empty ones */
	at = 0;
	size_t written = 0;
	for (size_t p = 0, i = 0; p < s->npools; p++) {
		for (size_t k = 0; k < s->pools[p].nsets; k++, i++) {
			cn_ec_set *set = s->sets[i];
			for (size_t d = 0; d < cn_ec_set_ndrives(set); d++, at++) {
				char why[700];
				const char *ep = cn_ec_set_endpoint(set, d);
				if (state[at] == F_OK && format_mismatch(s, &f[at], p, k, d, why, sizeof why)) {
					cn_log(CN_LOG_ERROR, NULL, "object: drive %s refused for pool %zu set %zu slot "
					       "%zu: %s", ep, p, k, d, why);
					why_err[at] = CN_ERR_INVALID;
					state[at] = F_BAD;
					cn_ec_set_refuse(set, d);
				} else if (state[at] == F_NONE && looks_unmounted(set, d)) {
					suspend_unmounted(s, set, p, k, d, at);
					why_err[at] = CN_ERR_OFFLINE;
					state[at] = F_BAD;
				} else if (state[at] == F_NONE) {
					cn_err we = format_write(s, set, p, k, d);
					if (we) {
						cn_log(CN_LOG_ERROR, NULL, "object: drive %s: cannot write its format "
						       "record (%s): offline", ep, cn_err_str(we));
						why_err[at] = we;
						state[at] = F_BAD;
						cn_ec_set_refuse(set, d);
						continue;
					}
					written++;
					if (!fresh) {
						cn_log(CN_LOG_WARN, NULL, "drive %s was empty: formatted into pool %zu set "
						       "%zu slot %zu (it will be healed)", ep, p, k, d);
						s->heal_at_start = true;
					}
				}
			}
		}
	}
	/* 4. what was just written must read back as its own slot: the same folder given twice
	 * (under two names) would otherwise hold one slot's record and serve two */
	at = 0;
	for (size_t p = 0, i = 0; p < s->npools && written; p++) {
		for (size_t k = 0; k < s->pools[p].nsets; k++, i++) {
			cn_ec_set *set = s->sets[i];
			bool synced = false;
			for (size_t d = 0; d < cn_ec_set_ndrives(set); d++, at++) {
				if (state[at] != F_NONE)
					continue;
				if (!synced && s->cfg.durable) {
					cn_ec_sync(set);
					synced = true;
				}
				cn_buf b;
				cn_buf_init(&b);
				fmt g;
				if (format_check(s, set, p, k, d, &b, true, &g)) {
					cn_log(CN_LOG_ERROR, NULL, "object: drive %s refused for pool %zu set %zu slot "
					       "%zu: its new format record does not read back as this slot (is the "
					       "same drive given twice?)", cn_ec_set_endpoint(set, d), p, k, d);
					why_err[at] = CN_ERR_INVALID;
					state[at] = F_BAD;
					cn_ec_set_refuse(set, d);
				} else {
					state[at] = F_OK; /* formatted now */
					is_new[at] = true;
					f[at] = g;
				}
				cn_buf_fini(&b);
			}
		}
	}
	if (fresh && written)
		cn_log(CN_LOG_INFO, NULL, "object: new deployment %s: formatted %zu drive(s)", s->deployment,
		       written);
	/* 5. quorum: a fresh deployment needs write quorum in every set, an existing one read
	 * quorum; below it, the reason a drive was refused is the answer */
	at = 0;
	for (size_t p = 0, i = 0; p < s->npools && !e; p++) {
		for (size_t k = 0; k < s->pools[p].nsets && !e; k++, i++) {
			cn_ec_set *set = s->sets[i];
			size_t n = cn_ec_set_ndrives(set), ok = 0;
			unsigned par, rrs;
			cn_ec_set_parity(set, &par, &rrs);
			cn_err first = CN_OK;
			for (size_t d = 0; d < n; d++, at++) {
				ok += cn_ec_set_endpoint(set, d) != NULL && state[at] != F_BAD; /* refused or suspended */
				if (!first && why_err[at])
					first = why_err[at];
			}
			size_t need = fresh ? write_quorum_of(n, par) : n - par;
			if (ok < need) {
				cn_log(CN_LOG_ERROR, NULL, "object: pool %zu set %zu: %zu of %zu drive(s) usable, "
				       "%zu needed: cannot serve", p, k, ok, n, need);
				e = first ? first : CN_ERR_QUORUM;
			}
		}
	}
	if (!e && !fresh && written)
		restore_buckets(s, is_new);
out:
	free(f);
	free(state);
	free(why_err);
	free(is_new);
	return e;
}

static int vol_cmp(const void *a, const void *b)
{
	return strcmp(((const cn_drive_vol *)a)->name, ((const cn_drive_vol *)b)->name);
}

/* Copies system file `name` from a drive that has it (not one of the new ones) to every
 * new drive. */
static void copy_sys(cn_obj_store *s, const bool *is_new, const char *name, cn_buf *b)
{
	bool got = false;
	for (size_t i = 0, at = 0; i < s->nsets && !got; i++)
		for (size_t d = 0; d < cn_ec_set_ndrives(s->sets[i]); d++, at++)
			if (!got && !is_new[at]) {
				b->len = 0;
				got = cn_ec_read_sys(s->sets[i], d, name, 256 * 1024, b) == CN_OK;
			}
	for (size_t i = 0, at = 0; i < s->nsets && got; i++)
		for (size_t d = 0; d < cn_ec_set_ndrives(s->sets[i]); d++, at++)
			if (is_new[at])
				cn_ec_write_sys(s->sets[i], d, name, b->p, b->len);
}

/* The buckets onto drives formatted into an existing deployment: their folders on every
 * set, and their system files (created_ms, configuration documents) copied from another
 * drive. Objects come back by healing. The buckets are the union of every old drive's (a
 * set's listing asks one drive, which may be a new one). */
static void restore_buckets(cn_obj_store *s, const bool *is_new)
{
	cn_drive_vol *all = NULL;
	size_t n = 0;
	for (size_t i = 0, at = 0; i < s->nsets; i++)
	for (size_t d = 0; d < cn_ec_set_ndrives(s->sets[i]); d++, at++) {
		cn_drive_vol *v;
		size_t nv;
		if (is_new[at] || cn_ec_list_vols_at(s->sets[i], d, &v, &nv))
			continue;
		cn_drive_vol *na = realloc(all, (n + nv + 1) * sizeof *na);
		if (!na) {
			free(v);
			break;
		}
		all = na;
		memcpy(all + n, v, nv * sizeof *v);
		n += nv;
		free(v);
	}
	if (n)
		qsort(all, n, sizeof *all, vol_cmp);
	cn_buf b;
	cn_buf_init(&b);
	for (size_t k = 0; k < n; k++) {
		if ((k && !strcmp(all[k].name, all[k - 1].name)) || !cn_obj_bucket_name_valid(all[k].name))
			continue;
		for (size_t i = 0; i < s->nsets; i++)
			cn_ec_make_vol(s->sets[i], all[k].name); /* created where missing */
		char path[160];
		snprintf(path, sizeof path, "buckets/%s", all[k].name);
		copy_sys(s, is_new, path, &b);
		for (size_t c = 0; cn_obj__config_path_at(c, all[k].name, path, sizeof path); c++)
			if (path[0])
				copy_sys(s, is_new, path, &b);
		cn_log(CN_LOG_INFO, NULL, "object: bucket %s restored onto the new drive(s)", all[k].name);
	}
	cn_buf_fini(&b);
	free(all);
	for (size_t i = 0; i < s->nsets && s->cfg.durable; i++)
		cn_ec_sync(s->sets[i]);
}

void cn_obj__heal_buckets(cn_obj_store *s)
{
	for (size_t i = 0; i < s->nsets; i++) {
		cn_drive_vol *v;
		size_t nv;
		if (cn_ec_list_vols(s->sets[i], &v, &nv))
			continue;
		for (size_t j = 0; j < nv; j++)
			if (cn_obj_bucket_name_valid(v[j].name))
				cn_ec_make_vol(s->sets[i], v[j].name); /* made where missing */
		free(v);
	}
	for (size_t i = 0; i < s->nsets && s->cfg.durable; i++)
		cn_ec_sync(s->sets[i]);
}

size_t cn_obj__purge_dangling_buckets(cn_obj_store *s, bool dry_run)
{
	cn_drive_vol *keep = NULL; /* the buckets every set lists */
	size_t nkeep = 0, found = 0;
	bool whole = true;
	for (size_t i = 0; i < s->nsets && whole; i++) {
		cn_drive_vol *v, *nk;
		size_t nv;
		if (cn_ec_list_vols(s->sets[i], &v, &nv)) {
			whole = false;
			break;
		}
		if ((nk = realloc(keep, (nkeep + nv + 1) * sizeof *nk))) {
			keep = nk;
			memcpy(keep + nkeep, v, nv * sizeof *v);
			nkeep += nv;
		}
		free(v);
		whole = nk != NULL;
	}
	for (size_t i = 0; i < s->nsets && whole; i++) {
		char **names;
		size_t n;
		if (cn_ec_dangling_vols(s->sets[i], keep, nkeep, &names, &n))
			continue;
		for (size_t j = 0; j < n; j++) {
			if (!cn_obj_bucket_name_valid(names[j]))
				continue;
			cn_err e = dry_run ? CN_OK : cn_ec_purge_vol(s->sets[i], names[j]);
			cn_log(e ? CN_LOG_WARN : CN_LOG_INFO, NULL, "heal: bucket folder %s (set %zu) is on too "
			       "few drives to be a bucket (deleted while they were away): %s%s", names[j], i,
			       dry_run ? "found (dry run)" : e ? "not removed: " : "removed",
			       e ? cn_err_str(e) : "");
			found++;
		}
		cn_drive_free_names(names, n);
	}
	free(keep);
	return found;
}

/* --- drive monitor: drives that come back ------------------------------------------------
 * Every drive_check_ms, each slot of a multi-drive set that answers "offline" or has no
 * format record, or whose path names another folder now (drive replaced), is looked at
 * again (drive reopen: the folder removed and made again, wiped in place, or replaced).
 * One that is there and empty is formatted into its slot, gets the buckets, and a heal
 * scan starts at once, as at start (format_all). A drive that now holds another slot's or
 * deployment's format is suspended (cn_ec_set_suspend: requests skip it; its pointer stays,
 * since requests use it without a lock) and logged, until another folder is at its path. */
static void check_drives(cn_obj_store *s)
{
	size_t total = total_drives(s), nnew = 0, nback = 0;
	bool *is_new = calloc(total ? total : 1, sizeof *is_new);
	if (!is_new)
		return;
	for (size_t p = 0, i = 0, at = 0; p < s->npools; p++) {
		for (size_t k = 0; k < s->pools[p].nsets; k++, i++) {
			cn_ec_set *set = s->sets[i];
			size_t n = cn_ec_set_ndrives(set);
			for (size_t d = 0; d < n; d++, at++) {
				if (n < 2 || !cn_ec_set_endpoint(set, d))
					continue;
				cn_drive_info di;
				cn_buf b;
				cn_buf_init(&b);
				cn_err re;
				bool moved = false;
				fmt f;
				if (s->mon_suspended[at]) {
					/* suspended for a foreign format: until another folder is at its path,
					 * nothing (then switch, and judge that one's format as below) */
					if (!cn_ec_set_replaced(set, d) || cn_ec_set_reopen(set, d) != CN_OK) {
						cn_buf_fini(&b);
						continue;
					}
					moved = true;
					re = cn_ec_read_sys(set, d, "format", FORMAT_MAX, &b); /* read while suspended */
					if (re == CN_OK && format_check(s, set, p, k, d, &b, false, &f)) {
						cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu): the "
						       "folder now at its path holds a format record that is not this slot's "
						       "either: still suspended", cn_ec_set_endpoint(set, d), p, k, d);
						cn_buf_fini(&b);
						continue;
					}
					cn_ec_set_suspend(set, d, false);
					s->mon_suspended[at] = false;
					cn_log(CN_LOG_WARN, NULL, "object: drive %s (pool %zu set %zu slot %zu): another "
					       "folder is in place of the suspended one: back in service",
					       cn_ec_set_endpoint(set, d), p, k, d);
					cn_ec_set_drive_info(set, d, &di);
				} else {
					bool online = cn_ec_set_drive_info(set, d, &di) == CN_OK && di.online;
					re = online ? cn_ec_read_sys(set, d, "format", FORMAT_MAX, &b) : CN_ERR_OFFLINE;
					/* another folder at the drive's path while the old one lives (moved away,
					 * a new disk mounted after the old one was detached): switch to it, and
					 * take it as a drive that came back (formatted when empty, healed) */
					moved = re == CN_OK && cn_ec_set_replaced(set, d);
					if (re == CN_ERR_OFFLINE || re == CN_ERR_NOT_FOUND || moved) {
						if (cn_ec_set_reopen(set, d) == CN_OK) {
							b.len = 0;
							re = cn_ec_read_sys(set, d, "format", FORMAT_MAX, &b);
						} else {
							moved = false; /* still the old folder: the next check tries again */
						}
					}
				}
				if (re == CN_OK && format_check(s, set, p, k, d, &b, false, &f)) {
					/* another slot's or deployment's drive: no request may read or write it
					 * (at start such a slot is refused for good; here the drive stays, so
					 * that a folder put in its place is seen) */
					suspend_slot(s, set, d, at);
					cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu) now holds "
					       "a format record that is not this slot's: suspended (requests skip it) "
					       "until another folder is put at its path, or refused at the next start",
					       cn_ec_set_endpoint(set, d), p, k, d);
					cn_buf_fini(&b);
					continue;
				}
				bool formatted = false;
				if (re == CN_ERR_NOT_FOUND && looks_unmounted(set, d)) {
					suspend_unmounted(s, set, p, k, d, at);
					cn_buf_fini(&b);
					continue;
				}
				if (re == CN_ERR_NOT_FOUND) {
					cn_err we = format_write(s, set, p, k, d);
					if (!we && s->cfg.durable)
						we = cn_ec_sync(set);
					if (!we)
						we = format_check(s, set, p, k, d, &b, true, &f);
					if (we) {
						cn_log(CN_LOG_ERROR, NULL, "object: drive %s is back but empty and cannot be "
						       "formatted into pool %zu set %zu slot %zu: %s",
						       cn_ec_set_endpoint(set, d), p, k, d, cn_err_str(we));
					} else {
						cn_log(CN_LOG_WARN, NULL, "drive %s is back and was empty: formatted into "
						       "pool %zu set %zu slot %zu (it will be healed)",
						       cn_ec_set_endpoint(set, d), p, k, d);
						is_new[at] = true;
						nnew++;
						formatted = true;
					}
				} else if (re == CN_OK && (s->mon_offline[at] || moved ||
				                           di.outages != s->mon_outages[at])) {
					/* back from offline, or away and back between two checks (an outage
					 * counted meanwhile): it may lack buckets made meanwhile (E9) */
					nback++;
				}
				/* formatted now: in service (a later check must not take it for a return
				 * and heal it again) */
				s->mon_offline[at] = re != CN_OK && !formatted;
				s->mon_outages[at] = di.outages;
				cn_buf_fini(&b);
			}
		}
	}
	if (nnew || nback) {
		pthread_rwlock_wrlock(&s->ns_lock); /* C5: no bucket created or deleted meanwhile */
		if (nnew)
			restore_buckets(s, is_new);
		cn_obj__heal_buckets(s);
		pthread_rwlock_unlock(&s->ns_lock);
		cn_obj__heal_scan_now(s);
	}
	free(is_new);
}

static void monitor_run(void *arg)
{
	check_drives(arg);
}

/* The monitor's state, before format_all (which may suspend a slot): none when the
 * monitor is off or every set has one drive. */
static void monitor_alloc(cn_obj_store *s)
{
	size_t total = total_drives(s);
	if (s->cfg.drive_check_ms < 0 || total <= s->nsets) /* off, or one-drive sets only */
		return;
	s->mon_suspended = calloc(total, sizeof *s->mon_suspended);
	s->mon_offline = calloc(total, sizeof *s->mon_offline);
	s->mon_outages = calloc(total, sizeof *s->mon_outages);
	if (!s->mon_suspended || !s->mon_offline || !s->mon_outages) {
		free(s->mon_suspended);
		free(s->mon_offline);
		free(s->mon_outages);
		s->mon_suspended = NULL;
		s->mon_offline = NULL;
		s->mon_outages = NULL;
	}
}

static void monitor_start(cn_obj_store *s)
{
	if (s->mon_suspended)
		cn_periodic_start(&s->monitor, s->cfg.drive_check_ms > 0 ? s->cfg.drive_check_ms : 5000,
		                  monitor_run, s);
}

static void monitor_stop(cn_obj_store *s)
{
	cn_periodic_stop(&s->monitor);
	free(s->mon_suspended);
	s->mon_suspended = NULL;
	free(s->mon_offline);
	s->mon_offline = NULL;
	free(s->mon_outages);
	s->mon_outages = NULL;
}

/* The record caches' budget for the whole store, shared evenly by its sets: 1/64 of the
 * machine's memory, at least 64 MiB and at most 1 GiB (24 GiB -> 384 MiB); the hot set of
 * 64 KiB objects needs ~66 KiB per object (K records of a 64 KiB / K share), so 64 MiB held
 * only ~1,000 of them (docs/PERF.md). CAIRN_RECORD_CACHE_MB overrides; 0 turns it off. */
static size_t record_cache_budget(void)
{
	const char *mb = getenv("CAIRN_RECORD_CACHE_MB");
	if (mb && *mb) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(mb, &end, 10);
		if (!errno && *end == '\0' && *mb != '-' && v <= (1ul << 20))
			return (size_t)v << 20;
		cn_log(CN_LOG_WARN, NULL, "CAIRN_RECORD_CACHE_MB=%s is not a number of MiB (0..1048576): "
		       "using the default", mb);
	}
	struct sysinfo si;
	uint64_t ram = sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : 0;
	uint64_t b = ram / 64;
	if (b < (64ull << 20))
		b = 64ull << 20;
	if (b > (1ull << 30))
		b = 1ull << 30;
	return (size_t)b;
}

static cn_err topology_check(const cn_obj_topology *t)
{
	if (!t || !t->pools || t->npools == 0 || t->npools > MAX_POOLS) {
		cn_log(CN_LOG_ERROR, NULL, "object: a topology needs 1 to %d pools", MAX_POOLS);
		return CN_ERR_INVALID;
	}
	size_t nsets = 0;
	for (size_t p = 0; p < t->npools; p++) {
		const cn_obj_pool_spec *ps = &t->pools[p];
		if (!ps->drives || ps->nsets == 0 || ps->set_size == 0 || ps->set_size > CN_EC_MAX_DRIVES ||
		    ps->nsets > MAX_SETS) {
			cn_log(CN_LOG_ERROR, NULL, "object: pool %zu: %zu set(s) of %zu drive(s) is not a "
			       "valid layout (1..%d drives per set)", p, ps->nsets, ps->set_size,
			       CN_EC_MAX_DRIVES);
			return CN_ERR_INVALID;
		}
		nsets += ps->nsets;
		if (nsets > MAX_SETS)
			return CN_ERR_INVALID;
		if (ps->set_size > 1 && (t->parity_standard < 1 || t->parity_standard > ps->set_size / 2 ||
		                         t->parity_rrs > t->parity_standard)) {
			cn_log(CN_LOG_ERROR, NULL, "object: pool %zu: parity EC:%u (RRS EC:%u) does not fit "
			       "sets of %zu drives (1..%zu, RRS <= STANDARD)", p, t->parity_standard,
			       t->parity_rrs, ps->set_size, ps->set_size / 2);
			return CN_ERR_INVALID;
		}
		for (size_t i = 0; i < ps->nsets * ps->set_size; i++)
			if (!ps->drives[i] || !ps->drives[i][0])
				return CN_ERR_INVALID;
	}
	/* the same folder twice would serve two slots from one drive */
	for (size_t p = 0; p < t->npools; p++) {
		size_t n = t->pools[p].nsets * t->pools[p].set_size;
		for (size_t i = 0; i < n; i++)
			for (size_t q = p; q < t->npools; q++) {
				size_t m = t->pools[q].nsets * t->pools[q].set_size;
				for (size_t j = q == p ? i + 1 : 0; j < m; j++)
					if (!strcmp(t->pools[p].drives[i], t->pools[q].drives[j])) {
						cn_log(CN_LOG_ERROR, NULL, "object: drive %s is given twice",
						       t->pools[p].drives[i]);
						return CN_ERR_INVALID;
					}
			}
	}
	return CN_OK;
}

cn_err cn_obj_store_open_topology(const cn_obj_topology *t, const cn_obj_config *cfg,
                                  cn_obj_store **out)
{
	cn_err e = topology_check(t);
	if (e)
		return e;
	cn_obj_store *s = calloc(1, sizeof *s);
	if (!s)
		return CN_ERR_NOMEM;
	s->cfg = *cfg;
	if (s->cfg.inline_max < 0)
		s->cfg.inline_max = 128 * 1024;
	if (s->cfg.inline_max > (int64_t)IO_BUF - 1)
		s->cfg.inline_max = IO_BUF - 1; /* an inline body must fit the first read buffer */
	pthread_rwlock_init(&s->ns_lock, NULL);
	pthread_mutex_init(&s->vs_mu, NULL);
	pthread_mutexattr_t ma; /* error-checking: split_wait */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	for (size_t i = 0; i < KEY_LOCKS; i++)
		pthread_mutex_init(&s->key_locks[i], &ma);
	pthread_mutexattr_destroy(&ma);
	for (size_t i = 0; i < OBJ_PIN_STRIPES; i++)
		pthread_mutex_init(&s->pins[i].mu, NULL);
	size_t nsets = 0, ndrives = 0;
	for (size_t p = 0; p < t->npools; p++) {
		nsets += t->pools[p].nsets;
		ndrives += t->pools[p].nsets * t->pools[p].set_size;
	}
	s->pools = calloc(t->npools, sizeof *s->pools);
	s->sets = calloc(nsets, sizeof *s->sets);
	cn_err *open_err = calloc(ndrives, sizeof *open_err);
	if (!s->pools || !s->sets || !open_err) {
		free(open_err);
		cn_obj_store_close(s);
		return CN_ERR_NOMEM;
	}
	s->npools = t->npools;
	size_t at = 0;
	for (size_t p = 0; p < t->npools && !e; p++) {
		const cn_obj_pool_spec *ps = &t->pools[p];
		s->pools[p].sets = s->sets + s->nsets;
		s->pools[p].set_size = ps->set_size;
		unsigned par = ps->set_size > 1 ? t->parity_standard : 0;
		unsigned rrs = ps->set_size > 1 ? (t->parity_rrs ? t->parity_rrs : 1) : 0;
		for (size_t k = 0; k < ps->nsets && !e; k++) {
			cn_drive *dv[CN_EC_MAX_DRIVES] = { 0 };
			for (size_t d = 0; d < ps->set_size; d++, at++) {
				const char *path = ps->drives[k * ps->set_size + d];
				cn_drive *local = NULL;
				open_err[at] = cn_drive_local_open(path, cfg->durable, &local);
				if (!open_err[at] && ps->set_size == 1) {
					/* one drive: nothing to skip to, so no health gate (an odd file's
					 * I/O error must not take the whole store offline) */
					dv[d] = local;
				} else if (!open_err[at]) { /* errors and stalls take it offline (drive.h) */
					cn_drive_health_cfg hc = { .stall_ms = cfg->drive_max_timeout_ms };
					if ((open_err[at] = cn_drive_health_wrap(local, &hc, &dv[d])))
						cn_drive_close(local);
				}
				if (open_err[at]) {
					dv[d] = NULL;
					/* several drives: the slot holds the drive offline on a placeholder,
					 * and the drive monitor takes it in once a folder is at its path */
					cn_drive *absent = NULL, *wrapped = NULL;
					cn_drive_health_cfg hc = { .stall_ms = cfg->drive_max_timeout_ms };
					if (ps->set_size > 1 && cn_drive_local_open_absent(path, cfg->durable, &absent) == CN_OK) {
						if (cn_drive_health_wrap(absent, &hc, &wrapped) == CN_OK) {
							cn_drive_health_set_offline(wrapped, "it cannot be opened");
							dv[d] = wrapped;
						} else {
							cn_drive_close(absent);
						}
					}
					cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu) cannot "
					       "be opened (%s): offline%s", path, p, k, d, cn_err_str(open_err[at]),
					       dv[d] ? "; looked at again every few seconds" : "");
				}
			}
			e = cn_ec_set_new(dv, ps->set_size, par, rrs, &s->sets[s->nsets]);
			if (e) {
				for (size_t d = 0; d < ps->set_size; d++)
					cn_drive_close(dv[d]);
				break;
			}
			s->nsets++;
			s->pools[p].nsets++;
		}
	}
	size_t cache = record_cache_budget();
	for (size_t i = 0; i < s->nsets && !e; i++) {
		e = cn_ec_set_cache(s->sets[i], cache / s->nsets);
		cn_ec_set_split_wait(s->sets[i], split_wait, s);
	}
	if (!e) {
		monitor_alloc(s);
		e = format_all(s, open_err);
	}
	free(open_err);
	if (e) {
		cn_obj_store_close(s);
		return e;
	}
	cn_obj__heal_buckets(s); /* drives that were offline when buckets were made (E9) */
	s->ready = true;
	cn_obj__janitor_start(s);
	cn_obj__heal_start(s);
	if (s->heal_at_start) /* a drive formatted into its slot: fill it now, not in 24 h */
		cn_obj__heal_scan_now(s);
	monitor_start(s);
	*out = s;
	return CN_OK;
}

cn_err cn_obj_store_open(const char *const *drives, size_t ndrives, const cn_obj_config *cfg,
                         cn_obj_store **out)
{
	if (ndrives == 0 || !drives || ndrives > CN_EC_MAX_DRIVES)
		return CN_ERR_INVALID;
	cn_obj_pool_spec pool = { .drives = drives, .nsets = 1, .set_size = ndrives };
	cn_obj_topology t = { .pools = &pool, .npools = 1, .parity_standard = default_parity(ndrives),
	                      .parity_rrs = ndrives > 1 ? 1 : 0 };
	return cn_obj_store_open_topology(&t, cfg, out);
}

void cn_obj_store_close(cn_obj_store *s)
{
	if (!s)
		return;
	monitor_stop(s);
	cn_obj__heal_stop(s);
	cn_obj__janitor_stop(s);
	for (size_t i = 0; i < s->nsets; i++)
		cn_ec_set_free(s->sets[i]);
	free(s->sets);
	free(s->pools);
	pthread_rwlock_destroy(&s->ns_lock);
	pthread_mutex_destroy(&s->vs_mu);
	for (size_t i = 0; i < KEY_LOCKS; i++)
		pthread_mutex_destroy(&s->key_locks[i]);
	for (size_t i = 0; i < OBJ_PIN_STRIPES; i++)
		pthread_mutex_destroy(&s->pins[i].mu);
	free(s);
}

bool cn_obj_store_ready(cn_obj_store *s)
{
	if (!s || !s->ready)
		return false;
	for (size_t i = 0; i < s->nsets; i++)
		if (!cn_ec_set_online(s->sets[i]))
			return false;
	return true;
}

cn_err cn_obj__barrier_set(cn_obj_store *s, cn_ec_set *set)
{
	return s->cfg.durable ? cn_ec_sync(set) : CN_OK;
}

cn_err cn_obj__barrier(cn_obj_store *s)
{
	cn_err e = CN_OK;
	for (size_t i = 0; i < s->nsets && s->cfg.durable; i++) {
		cn_err se = cn_ec_sync(s->sets[i]);
		if (!e)
			e = se;
	}
	return e;
}

/* --- routing ------------------------------------------------------------------------------ */

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#define ROTL64(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                      \
	do {                                                                          \
		v0 += v1; v1 = ROTL64(v1, 13); v1 ^= v0; v0 = ROTL64(v0, 32);         \
		v2 += v3; v3 = ROTL64(v3, 16); v3 ^= v2;                              \
		v0 += v3; v3 = ROTL64(v3, 21); v3 ^= v0;                              \
		v2 += v1; v1 = ROTL64(v1, 17); v1 ^= v2; v2 = ROTL64(v2, 32);         \
	} while (0)

/* SipHash-2-4 (Aumasson & Bernstein), 64-bit output: what MinIO's sipHashMod uses, with
 * the deployment id's 16 bytes as k0 || k1 (little-endian). */
uint64_t cn_obj__siphash(const unsigned char key[16], const void *data, size_t len)
{
	const unsigned char *in = data;
	uint64_t k0 = le64(key), k1 = le64(key + 8);
	uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
	uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
	size_t full = len - len % 8;
	for (size_t i = 0; i < full; i += 8) {
		uint64_t m = le64(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	uint64_t b = (uint64_t)len << 56;
	for (size_t i = 0; i < len % 8; i++)
		b |= (uint64_t)in[full + i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

cn_ec_set *cn_obj__hashed_set(cn_obj_store *s, size_t pool, const char *key)
{
	const cn_obj__pool *p = &s->pools[pool];
	if (p->nsets == 1)
		return p->sets[0];
	return p->sets[cn_obj__siphash(s->dep_key, key, strlen(key)) % p->nsets];
}

/* Whether pool p's set of bucket/key has its record: CN_OK (or CN_ERR_CORRUPT: it is
 * there), CN_ERR_NO_KEY / CN_ERR_NO_BUCKET, or why it cannot tell. */
static cn_err key_in_pool(cn_obj_store *s, size_t p, const char *bucket, const char *key)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_err e = cn_ec_read_meta(cn_obj__hashed_set(s, p, key), bucket, key, true, &m);
	cn_ec_meta_fini(&m);
	return e;
}

cn_ec_set *cn_obj__key_set(cn_obj_store *s, const char *bucket, const char *key)
{
	if (s->npools == 1)
		return cn_obj__hashed_set(s, 0, key);
	for (size_t p = 0; p < s->npools; p++) {
		cn_err e = key_in_pool(s, p, bucket, key);
		if (e != CN_ERR_NO_KEY && e != CN_ERR_NO_BUCKET)
			return cn_obj__hashed_set(s, p, key);
	}
	return cn_obj__hashed_set(s, 0, key);
}

cn_err cn_obj__put_set(cn_obj_store *s, const char *bucket, const char *key, cn_ec_set **out)
{
	*out = cn_obj__hashed_set(s, 0, key);
	if (s->npools == 1)
		return CN_OK;
	/* an existing key stays in its pool (MinIO looks in every pool first, too) */
	uint64_t free_b[MAX_POOLS], total = 0;
	for (size_t p = 0; p < s->npools; p++) {
		cn_err e = key_in_pool(s, p, bucket, key);
		if (e == CN_OK || e == CN_ERR_CORRUPT) {
			*out = cn_obj__hashed_set(s, p, key);
			return CN_OK;
		}
		if (e != CN_ERR_NO_KEY && e != CN_ERR_NO_BUCKET)
			return e; /* it may be there: writing elsewhere could make two copies */
		free_b[p] = cn_ec_set_free_bytes(cn_obj__hashed_set(s, p, key)) >> 20; /* MiB: no overflow */
		total += free_b[p];
	}
	/* a new key: a pool at random, weighted by the free space of the key's set there */
	if (total == 0)
		return CN_OK;
	char id[33];
	unsigned char raw[16];
	cn_drive_random_id(id);
	CN_ASSERT(cn_hex_decode((cn_str){ id, 32 }, raw, 16) == CN_OK);
	uint64_t r = le64(raw) % total;
	for (size_t p = 0, acc = 0; p < s->npools; p++) {
		acc += free_b[p];
		if (free_b[p] && r < acc) {
			*out = cn_obj__hashed_set(s, p, key);
			break;
		}
	}
	return CN_OK;
}

/* --- bucket-wide system files ---------------------------------------------------------- */

cn_err cn_obj__read_sys(cn_obj_store *s, const char *name, size_t max, cn_buf *out)
{
	cn_err last = CN_ERR_QUORUM;
	for (size_t i = 0; i < s->nsets; i++) {
		cn_ec_set *set = s->sets[i];
		size_t n = cn_ec_set_ndrives(set), absent = 0;
		unsigned par, rrs;
		cn_ec_set_parity(set, &par, &rrs);
		for (size_t d = 0; d < n; d++) {
			out->len = 0;
			cn_err e = cn_ec_read_sys(set, d, name, max, out);
			if (e == CN_OK || e == CN_ERR_TOO_LARGE)
				return e;
			if (e == CN_ERR_NOT_FOUND && ++absent > par)
				return e; /* a write reached all but at most `par` drives */
			if (e != CN_ERR_NOT_FOUND)
				last = e;
		}
	}
	return last;
}

cn_err cn_obj__write_sys_every(cn_obj_store *s, const char *name, const void *p, size_t len)
{
	cn_err e = CN_OK;
	for (size_t i = 0; i < s->nsets; i++) {
		cn_err se = cn_ec_write_sys_all(s->sets[i], name, p, len);
		if (!e)
			e = se;
	}
	return e;
}

cn_err cn_obj__remove_sys_every(cn_obj_store *s, const char *name)
{
	cn_err e = CN_OK;
	for (size_t i = 0; i < s->nsets; i++) {
		cn_err se = cn_ec_remove_sys_all(s->sets[i], name);
		if (!e && se != CN_ERR_NOT_FOUND)
			e = se;
	}
	return e;
}

cn_err cn_obj__stat_bucket(cn_obj_store *s, const char *bucket)
{
	for (size_t i = 0; i < s->nsets; i++) {
		cn_err e = cn_ec_stat_vol(s->sets[i], bucket, NULL);
		if (e)
			return e;
	}
	return CN_OK;
}

/* --- buckets ------------------------------------------------------------------------ */

static int64_t bucket_created(cn_obj_store *s, const char *name, int64_t fallback)
{
	char path[96];
	cn_buf b;
	cn_buf_init(&b);
	snprintf(path, sizeof path, "buckets/%s", name);
	int64_t ms = fallback;
	if (cn_obj__read_sys(s, path, 256, &b) == CN_OK && b.p) {
		long long v;
		if (sscanf(b.p, "created_ms %lld", &v) == 1 && v >= 0)
			ms = v;
	}
	cn_buf_fini(&b);
	return ms;
}

/* Bucket operations touch every set of every pool: a bucket is a folder on every drive. */
cn_err cn_obj_make_bucket(cn_obj_store *s, const char *name)
{
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_BAD_BUCKET_NAME;
	char path[96], body[64];
	pthread_rwlock_wrlock(&s->ns_lock);
	cn_err e = CN_OK;
	size_t existed = 0;
	for (size_t i = 0; i < s->nsets && !e; i++) {
		e = cn_ec_make_vol(s->sets[i], name);
		if (e == CN_ERR_BUCKET_EXISTS) { /* everywhere: it exists; somewhere: finish it */
			existed++;
			e = CN_OK;
		}
	}
	if (!e && existed == s->nsets)
		e = CN_ERR_BUCKET_EXISTS;
	if (!e) {
		snprintf(path, sizeof path, "buckets/%s", name);
		int n = snprintf(body, sizeof body, "created_ms %lld\n", (long long)cn_now_ms());
		e = cn_obj__write_sys_every(s, path, body, (size_t)n);
	}
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier(s);
	return e;
}

cn_err cn_obj_head_bucket(cn_obj_store *s, const char *name, cn_bucket_info *out)
{
	int64_t mtime = 0;
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_NO_BUCKET;
	cn_err e = cn_ec_stat_vol(s->sets[0], name, &mtime);
	for (size_t i = 1; i < s->nsets && !e; i++)
		e = cn_ec_stat_vol(s->sets[i], name, NULL);
	if (e)
		return e;
	if (out) {
		cn_strlcpy(out->name, name, sizeof out->name);
		out->created_ms = bucket_created(s, name, mtime);
	}
	return CN_OK;
}

cn_err cn_obj_delete_bucket(cn_obj_store *s, const char *name)
{
	char path[96];
	if (!cn_obj_bucket_name_valid(name))
		return CN_ERR_NO_BUCKET;
	pthread_rwlock_wrlock(&s->ns_lock); /* C5 */
	cn_err e = CN_OK;
	size_t gone = 0, i;
	bool *deleted = calloc(s->nsets, sizeof *deleted);
	if (!deleted) {
		pthread_rwlock_unlock(&s->ns_lock);
		return CN_ERR_NOMEM;
	}
	/* set by set; a set that still holds objects stops it, and the sets already emptied
	 * get their folder back (no commit can run meanwhile: C5) */
	for (i = 0; i < s->nsets; i++) {
		cn_err de = cn_ec_delete_vol(s->sets[i], name);
		if (de == CN_ERR_NO_BUCKET)
			continue;
		if (de) {
			e = de;
			break;
		}
		deleted[i] = true;
		gone++;
	}
	if (e) {
		for (size_t j = 0; j < i; j++)
			if (deleted[j])
				cn_ec_make_vol(s->sets[j], name);
	} else if (gone == 0) {
		e = CN_ERR_NO_BUCKET;
	}
	if (!e) {
		snprintf(path, sizeof path, "buckets/%s", name);
		cn_obj__remove_sys_every(s, path);
		cn_obj__bucket_gone(s, name);
		cn_obj__versioning_forget(s, name);
	}
	pthread_rwlock_unlock(&s->ns_lock);
	free(deleted);
	if (!e)
		e = cn_obj__barrier(s);
	return e;
}

static int bucket_cmp(const void *a, const void *b)
{
	return strcmp(((const cn_bucket_info *)a)->name, ((const cn_bucket_info *)b)->name);
}

cn_err cn_obj_list_buckets(cn_obj_store *s, cn_bucket_info **out, size_t *n)
{
	cn_drive_vol *v = NULL;
	size_t nv = 0;
	*out = NULL;
	*n = 0;
	cn_err e = CN_ERR_QUORUM;
	for (size_t i = 0; i < s->nsets && e; i++) /* every set has every bucket: the first that answers */
		e = cn_ec_list_vols(s->sets[i], &v, &nv);
	if (e)
		return e;
	cn_bucket_info *b = calloc(nv ? nv : 1, sizeof *b);
	if (!b) {
		free(v);
		return CN_ERR_NOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < nv; i++) {
		if (!cn_obj_bucket_name_valid(v[i].name))
			continue;
		cn_strlcpy(b[k].name, v[i].name, sizeof b[k].name);
		b[k].created_ms = bucket_created(s, v[i].name, v[i].created_ms);
		k++;
	}
	free(v);
	qsort(b, k, sizeof *b, bucket_cmp);
	*out = b;
	*n = k;
	return CN_OK;
}

/* --- object info ---------------------------------------------------------------------- */

void cn_obj_info_init(cn_obj_info *i)
{
	memset(i, 0, sizeof *i);
}

void cn_obj_info_fini(cn_obj_info *i)
{
	cn_kvs_free(i->meta, i->nmeta);
	free(i->parts);
	cn_obj_info_init(i);
}

const char *cn_obj_info_get(const cn_obj_info *i, const char *name)
{
	for (size_t k = 0; k < i->nmeta; k++)
		if (!strcmp(i->meta[k].name, name))
			return i->meta[k].value;
	return NULL;
}

/* Moves the record's fields into info (info's previous content is released). */
void cn_obj__info_from_meta(cn_obj_info *info, cn_ec_meta *m)
{
	cn_obj_info_fini(info);
	cn_strlcpy(info->etag, m->etag, sizeof info->etag);
	info->size = m->size;
	info->mtime_ms = m->mtime_ms;
	cn_strlcpy(info->storage_class, m->storage_class[0] ? m->storage_class : "STANDARD",
	           sizeof info->storage_class);
	cn_strlcpy(info->version_id, m->version_id, sizeof info->version_id);
	info->delete_marker = m->delete_marker;
	info->meta = m->meta;
	info->nmeta = m->nmeta;
	m->meta = NULL;
	m->nmeta = 0;
	/* a multipart version (ETag "hex-N") reports its parts */
	if (strchr(m->etag, '-') && m->nparts && (info->parts = calloc(m->nparts, sizeof *info->parts))) {
		for (size_t i = 0; i < m->nparts; i++) {
			info->parts[i].number = m->parts[i].number;
			info->parts[i].size = m->parts[i].size;
			cn_strlcpy(info->parts[i].etag, m->parts[i].etag, sizeof info->parts[i].etag);
		}
		info->nparts = m->nparts;
	}
}

cn_err cn_obj__copy_kvs(const cn_kv *src, size_t n, cn_kv **out)
{
	*out = NULL;
	if (n == 0)
		return CN_OK;
	cn_kv *kv = calloc(n, sizeof *kv);
	if (!kv)
		return CN_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		kv[i].name = strdup(src[i].name);
		kv[i].value = strdup(src[i].value);
		if (!kv[i].name || !kv[i].value) {
			cn_kvs_free(kv, i + 1);
			return CN_ERR_NOMEM;
		}
	}
	*out = kv;
	return CN_OK;
}

cn_err cn_obj__check_names(const char *bucket, const char *key)
{
	if (!cn_obj_bucket_name_valid(bucket))
		return CN_ERR_NO_BUCKET;
	return cn_obj_key_check(key, strlen(key));
}

/* --- put ---------------------------------------------------------------------------- */

cn_err cn_obj__recv(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                    const char *storage_class, cn_reader *body, int64_t expect, int64_t max,
                    bool allow_inline, unsigned char *buf, cn_ec_writer **w, int64_t *total,
                    unsigned char md5[16], bool *inline_data)
{
	cn_md5 md;
	cn_md5_init(&md);
	cn_err e = CN_OK;
	*w = NULL;
	*total = 0;
	*inline_data = false;
	/* The first read (inline_max + 1 bytes) decides whether the body is inline; past it,
	 * the body is read straight into the erasure writer's block (no copy) where the set
	 * has one. A PUT refused after it (503, no write quorum) leaves most of its body
	 * unread: the HTTP layer then closes with a drain (net.h CN_CONN_DRAIN_CLOSE), so the
	 * client still reads the 503 (14fce24 had gone back to a 1 MiB first read for that). */
	if (!allow_inline && (e = cn_ec_writer_new(set, bucket, key, storage_class, w)))
		return e;
	for (bool first = true;; first = false) {
		unsigned char *dst = buf;
		size_t cap = IO_BUF;
		if (allow_inline && first && (size_t)s->cfg.inline_max < cap)
			cap = (size_t)s->cfg.inline_max + 1;
		unsigned char *wp;
		size_t space = *w ? cn_ec_writer_space(*w, &wp) : 0;
		if (space) {
			dst = wp;
			cap = space;
		}
		ssize_t n = cn_read_full(body, dst, cap);
		if (n < 0) {
			e = (cn_err)-n;
			if (e <= CN_OK || e >= CN_ERR__COUNT)
				e = CN_ERR_ABORTED;
			break;
		}
		*total += n;
		if (expect >= 0 && *total > expect) {
			e = CN_ERR_INVALID;
			break;
		}
		if (*total > max) {
			e = CN_ERR_TOO_LARGE;
			break;
		}
		cn_md5_update(&md, dst, (size_t)n);
		bool eof = (size_t)n < cap;
		if (allow_inline && first && eof && *total <= s->cfg.inline_max) {
			*inline_data = true;
			break;
		}
		if (!*w && (e = cn_ec_writer_new(set, bucket, key, storage_class, w)))
			break;
		if (n > 0 && (e = dst == buf ? cn_ec_writer_write(*w, buf, (size_t)n)
		                             : cn_ec_writer_fill(*w, (size_t)n)))
			break;
		if (eof)
			break;
	}
	if (!e && expect >= 0 && *total < expect)
		e = CN_ERR_CLOSED;
	if (!e)
		cn_md5_final(&md, md5);
	return e;
}

cn_err cn_obj_put(cn_obj_store *s, const char *bucket, const char *key, cn_reader *body,
                  const cn_put_opts *opts, cn_obj_info *out)
{
	static const cn_put_opts no_opts = { .size = -1 };
	if (!opts)
		opts = &no_opts;
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e;
	cn_ec_set *set;
	if ((e = cn_obj__put_set(s, bucket, key, &set)))
		return e;
	if ((e = cn_ec_stat_vol(set, bucket, NULL)))
		return e;
	unsigned char *buf = cn_obj__tls_buf(0);
	if (!buf)
		return CN_ERR_NOMEM;
	cn_ec_writer *w = NULL;
	cn_kv *add = NULL, *all = NULL;
	size_t nadd = 0;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	int64_t total = 0;
	bool inline_data = false;
	unsigned char md5[16];
	const char *sc = NULL;
	for (size_t i = 0; i < opts->nmeta; i++)
		if (!strcmp(opts->meta[i].name, "x-amz-storage-class"))
			sc = opts->meta[i].value;
	if ((e = cn_obj__recv(s, set, bucket, key, sc, body, opts->size, INT64_MAX, true, buf, &w,
	                      &total, md5, &inline_data)))
		goto fail;
	if (opts->seal && (e = opts->seal(opts->seal_ctx, md5, total, &add, &nadd)))
		goto fail;

	/* the record: the caller's headers then the seal's, borrowed (released below) */
	size_t nall = opts->nmeta + nadd;
	if (nall > CN_EC_MAX_META) {
		e = CN_ERR_TOO_LARGE;
		goto fail;
	}
	all = calloc(nall ? nall : 1, sizeof *all);
	if (!all) {
		e = CN_ERR_NOMEM;
		goto fail;
	}
	if (opts->nmeta)
		memcpy(all, opts->meta, opts->nmeta * sizeof *all);
	if (nadd)
		memcpy(all + opts->nmeta, add, nadd * sizeof *all);
	m.meta = all;
	m.nmeta = nall;
	m.size = total;
	m.mtime_ms = cn_now_ms();
	cn_hex_encode(md5, 16, m.etag);
	snprintf(m.storage_class, sizeof m.storage_class, "STANDARD");
	for (size_t i = 0; i < nall; i++)
		if (!strcmp(all[i].name, "x-amz-storage-class") && strlen(all[i].value) < sizeof m.storage_class)
			cn_strlcpy(m.storage_class, all[i].value, sizeof m.storage_class);
	if (inline_data) {
		m.has_inline = true;
		m.inline_data = buf;
		m.inline_len = (size_t)total;
	}

	cn_versioning v;
	if ((e = cn_obj__versioning(s, bucket, &v)))
		goto fail;
	cn_obj__vcommit vc;
	pthread_rwlock_rdlock(&s->ns_lock); /* C5 */
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl); /* C2 */
	e = cn_obj__vprep(s, set, bucket, key, v, &m, &vc);
	if (!e && inline_data)
		e = cn_ec_commit_inline(set, bucket, key, &m);
	else if (!e)
		e = cn_ec_writer_commit(w, bucket, key, &m);
	if (!e)
		cn_obj__vpost(s, bucket, key, &vc);
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier_set(s, set); /* C3 */
	cn_obj__vfinish(s, bucket, key, &vc, m.data_id, !e); /* C4 */
	if (e)
		goto fail;
	if (!e && out) {
		cn_obj_info_fini(out);
		cn_strlcpy(out->etag, m.etag, sizeof out->etag);
		out->size = m.size;
		out->mtime_ms = m.mtime_ms;
		cn_strlcpy(out->storage_class, m.storage_class, sizeof out->storage_class);
		cn_strlcpy(out->version_id, m.version_id, sizeof out->version_id);
		if ((e = cn_obj__copy_kvs(all, nall, &out->meta)) == CN_OK)
			out->nmeta = nall;
	}
fail:
	m.meta = NULL; /* borrowed */
	m.nmeta = 0;
	m.inline_data = NULL;
	cn_ec_meta_fini(&m);
	free(all);
	cn_kvs_free(add, nadd);
	cn_ec_writer_abort(w);
	return e;
}

/* --- stat, open, read ------------------------------------------------------------------ */

cn_err cn_obj_stat(cn_obj_store *s, const char *bucket, const char *key, cn_obj_info *out)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	e = cn_ec_read_meta(cn_obj__key_set(s, bucket, key), bucket, key, true, &m);
	if (!e && m.delete_marker)
		e = CN_ERR_NO_KEY; /* the latest version is a delete marker: out says so */
	if ((!e || m.delete_marker) && out)
		cn_obj__info_from_meta(out, &m);
	cn_ec_meta_fini(&m);
	return e;
}

static ssize_t stream_read(cn_reader *rd, void *buf, size_t len)
{
	cn_obj_reader *r = (cn_obj_reader *)rd;
	size_t got;
	if ((int64_t)len > r->end - r->pos)
		len = (size_t)(r->end - r->pos);
	if (len == 0)
		return 0;
	cn_err e = cn_ec_reader_read(r->r, r->pos, buf, len, &got);
	if (e)
		return -(ssize_t)e;
	r->pos += (int64_t)got;
	return (ssize_t)got;
}

cn_err cn_obj__reader_new(cn_obj_store *s, const char *bucket, const char *key,
                          cn_obj_reader **out)
{
	cn_obj_reader *r = calloc(1, sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	r->s = s;
	r->stream.read = stream_read;
	cn_obj__pin_key(s, bucket, key, &r->pin);
	r->pinned = true;
	*out = r;
	return CN_OK;
}

void cn_obj__reader_attach(cn_obj_reader *r, cn_ec_reader *er, cn_ec_meta *m, cn_obj_info *info)
{
	r->r = er;
	r->size = m->size;
	r->end = m->size;
	if (!m->data_id[0] && r->pinned) { /* inline: no folder to keep */
		cn_obj__unpin(r->s, &r->pin);
		r->pinned = false;
	}
	if (info)
		cn_obj__info_from_meta(info, m);
}

cn_err cn_obj_open(cn_obj_store *s, const char *bucket, const char *key, cn_obj_info *info,
                   cn_obj_reader **out)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	cn_obj_reader *r;
	if ((e = cn_obj__reader_new(s, bucket, key, &r)))
		return e;
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	cn_ec_reader *er;
	e = cn_ec_open(cn_obj__key_set(s, bucket, key), bucket, key, &m, &er); /* after the pin */
	if (!e && m.delete_marker) {
		cn_ec_reader_close(er);
		if (info)
			cn_obj__info_from_meta(info, &m);
		e = CN_ERR_NO_KEY; /* the latest version is a delete marker: info says so */
	} else if (!e) {
		cn_obj__reader_attach(r, er, &m, info);
		*out = r;
		r = NULL;
	}
	cn_obj_reader_close(r);
	cn_ec_meta_fini(&m);
	return e;
}

void cn_obj_no_io(bool on)
{
	cn_ec_no_io(on);
}

bool cn_obj_reader_in_records(const cn_obj_reader *r)
{
	return r->r && cn_ec_reader_in_records(r->r);
}

cn_err cn_obj_read(cn_obj_reader *r, int64_t off, int64_t len, cn_writer *w)
{
	if (off < 0 || len < 0 || off > r->size || len > r->size - off)
		return CN_ERR_INVALID;
	int fd;
	int64_t fd_off, avail;
	unsigned char *buf = NULL;
	while (len > 0) {
		if (w->send_fd && cn_ec_reader_plain_fd(r->r, off, &fd, &fd_off, &avail)) {
			int64_t n = avail < len ? avail : len;
			cn_err e = w->send_fd(w, fd, fd_off, n);
			if (e)
				return e;
			off += n;
			len -= n;
			continue;
		}
		size_t want = len > (int64_t)IO_BUF ? IO_BUF : (size_t)len, got;
		if (w->writev) { /* a block's data shards in one write: no copy, one syscall */
			struct iovec iov[CN_WRITEV_MAX];
			int niov;
			cn_err e = cn_ec_reader_viewv(r->r, off, want, iov, CN_WRITEV_MAX, &niov, &got);
			if (e)
				return e;
			if (niov) {
				if ((e = w->writev(w, iov, niov)))
					return e;
				off += (int64_t)got;
				len -= (int64_t)got;
				continue;
			}
		}
		const void *p;
		cn_err e = cn_ec_reader_view(r->r, off, want, &p, &got);
		/* decoded shard bytes sent from where they are, no copy; short pieces (a small
		 * object's shards on many drives) are gathered by a copy instead, one write each
		 * IO_BUF rather than one per shard */
		if (!e && p && (got >= VIEW_MIN || got == (size_t)len)) {
			if ((e = w->write(w, p, got)))
				return e;
			off += (int64_t)got;
			len -= (int64_t)got;
			continue;
		}
		if (e)
			return e;
		if (!buf && !(buf = cn_obj__tls_buf(1)))
			return CN_ERR_NOMEM;
		e = cn_ec_reader_read(r->r, off, buf, want, &got);
		if (!e && got != want)
			e = CN_ERR_CORRUPT;
		if (!e)
			e = w->write(w, buf, got);
		if (e)
			return e;
		off += (int64_t)got;
		len -= (int64_t)got;
	}
	return CN_OK;
}

cn_reader *cn_obj_reader_stream(cn_obj_reader *r)
{
	r->pos = 0;
	r->end = r->size;
	return &r->stream;
}

cn_err cn_obj_reader_stream_range(cn_obj_reader *r, int64_t off, int64_t len, cn_reader **out)
{
	if (off < 0 || len < 0 || off > r->size || len > r->size - off)
		return CN_ERR_INVALID;
	r->pos = off;
	r->end = off + len;
	*out = &r->stream;
	return CN_OK;
}

void cn_obj_reader_close(cn_obj_reader *r)
{
	if (!r)
		return;
	if (r->r && cn_ec_reader_degraded(r->r)) /* the read rebuilt data: heal it */
		cn_obj__heal_enqueue(r->s, r->r);
	cn_ec_reader_close(r->r);
	if (r->pinned)
		cn_obj__unpin(r->s, &r->pin); /* after its files are closed; may run removals (C6) */
	free(r);
}

/* --- delete --------------------------------------------------------------------------- */

cn_err cn_obj_delete(cn_obj_store *s, const char *bucket, const char *key)
{
	cn_err e = cn_obj__check_names(bucket, key);
	if (e)
		return e == CN_ERR_NO_BUCKET ? e : CN_ERR_NO_KEY;
	cn_ec_meta old;
	cn_ec_meta_init(&old);
	cn_ec_set *set = cn_obj__key_set(s, bucket, key);
	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl);
	e = cn_ec_read_meta(set, bucket, key, true, &old);
	if (e == CN_ERR_CORRUPT) {
		cn_log(CN_LOG_WARN, NULL, "object: delete %s/%s: removing a corrupt record; its data "
		       "folder stays", bucket, key);
		e = CN_OK;
	}
	if (!e)
		e = cn_ec_delete_meta(set, bucket, key);
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
	if (!e)
		e = cn_obj__barrier_set(s, set);
	if (!e) /* C4: data and empty parents only after the record's removal is durable */
		cn_obj__drop_data(s, set, bucket, key, old.data_id);
	cn_ec_meta_fini(&old);
	return e;
}

/* --- listing ---------------------------------------------------------------------------- */

typedef struct list_ctx {
	cn_list_result *out;
	size_t max, cap_obj, cap_pre;
	size_t plen;
	const char *delim; /* generic (non-"/") delimiter or NULL */
	size_t dlen;
	const char *after;
	size_t alen;
	char *last;        /* last returned key or prefix (borrowed from out) */
} list_ctx;

static cn_err push_prefix(list_ctx *c, const char *p, size_t len)
{
	cn_list_result *o = c->out;
	if (o->nprefixes == c->cap_pre) {
		size_t nc = c->cap_pre ? c->cap_pre * 2 : 16;
		char **np = realloc(o->prefixes, nc * sizeof *np);
		if (!np)
			return CN_ERR_NOMEM;
		o->prefixes = np;
		c->cap_pre = nc;
	}
	char *d = strndup(p, len);
	if (!d)
		return CN_ERR_NOMEM;
	o->prefixes[o->nprefixes++] = d;
	c->last = d;
	return CN_OK;
}

static cn_err list_cb(void *vctx, const char *key, size_t keylen, bool is_prefix, const cn_ec_meta *m)
{
	list_ctx *c = vctx;
	cn_list_result *o = c->out;
	size_t plen = keylen;
	if (!is_prefix && m->delete_marker)
		return CN_OK; /* a key whose latest version is a delete marker is not listed */
	if (!is_prefix && c->delim && keylen > c->plen) {
		const char *d = memmem(key + c->plen, keylen - c->plen, c->delim, c->dlen);
		if (d) {
			plen = (size_t)(d - key) + c->dlen;
			is_prefix = true;
			/* a common prefix at or before the marker was returned on an earlier page */
			int cmp = memcmp(key, c->after, plen < c->alen ? plen : c->alen);
			if (cmp < 0 || (cmp == 0 && plen <= c->alen))
				return CN_OK;
			if (c->last && o->nprefixes && c->last == o->prefixes[o->nprefixes - 1] &&
			    strlen(c->last) == plen && !memcmp(c->last, key, plen))
				return CN_OK;
		}
	}
	if (o->nobjects + o->nprefixes == c->max) {
		o->truncated = true;
		return LIST_STOP;
	}
	if (is_prefix)
		return push_prefix(c, key, plen);
	if (o->nobjects == c->cap_obj) {
		size_t nc = c->cap_obj ? c->cap_obj * 2 : 16;
		cn_list_entry *ne = realloc(o->objects, nc * sizeof *ne);
		if (!ne)
			return CN_ERR_NOMEM;
		o->objects = ne;
		c->cap_obj = nc;
	}
	cn_list_entry *le = &o->objects[o->nobjects];
	memset(le, 0, sizeof *le);
	if (!(le->key = strndup(key, keylen)))
		return CN_ERR_NOMEM;
	cn_strlcpy(le->etag, m->etag, sizeof le->etag);
	le->size = m->size;
	le->mtime_ms = m->mtime_ms;
	cn_strlcpy(le->storage_class, m->storage_class[0] ? m->storage_class : "STANDARD",
	           sizeof le->storage_class);
	o->nobjects++;
	c->last = le->key;
	return CN_OK;
}

void cn_list_result_fini(cn_list_result *r)
{
	for (size_t i = 0; i < r->nobjects; i++)
		free(r->objects[i].key);
	free(r->objects);
	for (size_t i = 0; i < r->nprefixes; i++)
		free(r->prefixes[i]);
	free(r->prefixes);
	free(r->next_marker);
	memset(r, 0, sizeof *r);
}

/* One set's page: its keys after `after`, at most max_keys entries (as described for
 * cn_obj_list). */
static cn_err list_set(cn_ec_set *set, const char *bucket, const char *prefix, const char *delimiter,
                       const char *after, size_t max_keys, cn_list_result *out)
{
	bool slash = delimiter && !strcmp(delimiter, "/");
	list_ctx c = { .out = out, .max = max_keys, .plen = strlen(prefix), .after = after,
	               .alen = strlen(after) };
	if (delimiter && delimiter[0] && !slash) {
		c.delim = delimiter;
		c.dlen = strlen(delimiter);
	}
	cn_err e = cn_ec_walk(set, bucket, prefix, after[0] ? after : NULL, slash, list_cb, &c);
	if (e == LIST_STOP)
		e = CN_OK;
	if (!e && out->truncated && c.last && !(out->next_marker = strdup(c.last)))
		e = CN_ERR_NOMEM;
	if (e)
		cn_list_result_fini(out);
	return e;
}

/* Merges the sets' sorted pages r[0..n) into out (L1-L3 below), taking their strings. */
static cn_err list_merge(cn_list_result *r, size_t n, size_t max, cn_list_result *out)
{
	/* L1. Every set's page is sorted and holds its first entries after the marker.
	 * L2. Nothing can be returned past the end of a truncated page: its set's next entries
	 *     are unknown, so the merge stops when such a page runs out (truncated).
	 * L3. A common prefix that several sets return is one entry. */
	size_t *oi = calloc(n, sizeof *oi), *pi = calloc(n, sizeof *pi);
	cn_err e = CN_OK;
	const char *last = NULL;
	if (!oi || !pi)
		e = CN_ERR_NOMEM;
	size_t count = 0;
	if (!e && !(out->objects = calloc(max, sizeof *out->objects)))
		e = CN_ERR_NOMEM;
	if (!e && !(out->prefixes = calloc(max, sizeof *out->prefixes)))
		e = CN_ERR_NOMEM;
	while (!e) {
		size_t best = n;
		bool best_pre = false;
		const char *bn = NULL;
		bool stop = false;
		for (size_t i = 0; i < n; i++) {
			bool more_o = oi[i] < r[i].nobjects, more_p = pi[i] < r[i].nprefixes;
			if (!more_o && !more_p) {
				stop |= r[i].truncated; /* L2 */
				continue;
			}
			if (more_o && (!bn || strcmp(r[i].objects[oi[i]].key, bn) < 0)) {
				best = i;
				best_pre = false;
				bn = r[i].objects[oi[i]].key;
			}
			if (more_p && (!bn || strcmp(r[i].prefixes[pi[i]], bn) < 0)) {
				best = i;
				best_pre = true;
				bn = r[i].prefixes[pi[i]];
			}
		}
		if (stop) {
			out->truncated = true;
			break;
		}
		if (best == n)
			break;
		if (best_pre && out->nprefixes && !strcmp(out->prefixes[out->nprefixes - 1], bn)) {
			pi[best]++; /* L3 */
			continue;
		}
		if (count == max) {
			out->truncated = true;
			break;
		}
		if (best_pre) {
			out->prefixes[out->nprefixes++] = r[best].prefixes[pi[best]];
			r[best].prefixes[pi[best]++] = NULL;
			last = out->prefixes[out->nprefixes - 1];
		} else {
			out->objects[out->nobjects++] = r[best].objects[oi[best]];
			r[best].objects[oi[best]++].key = NULL;
			last = out->objects[out->nobjects - 1].key;
		}
		count++;
	}
	if (!e && out->truncated && last && !(out->next_marker = strdup(last)))
		e = CN_ERR_NOMEM;
	free(oi);
	free(pi);
	return e;
}

cn_err cn_obj_list(cn_obj_store *s, const char *bucket, const char *prefix, const char *delimiter,
                   const char *after, size_t max_keys, cn_list_result *out)
{
	memset(out, 0, sizeof *out);
	if (!cn_obj_bucket_name_valid(bucket))
		return CN_ERR_NO_BUCKET;
	if (!prefix)
		prefix = "";
	if (!after)
		after = "";
	if (strlen(prefix) > 1024 || strlen(after) > 1024 || (delimiter && strlen(delimiter) > 1024))
		return CN_ERR_INVALID;
	if (max_keys > 1000)
		max_keys = 1000;
	if (max_keys == 0)
		return cn_obj__stat_bucket(s, bucket);
	if (s->nsets == 1) /* one set: its page is the answer */
		return list_set(s->sets[0], bucket, prefix, delimiter, after, max_keys, out);
	/* several sets: each one's page, then a merge (every key lives in one set) */
	cn_list_result *r = calloc(s->nsets, sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	cn_err e = CN_OK;
	for (size_t i = 0; i < s->nsets && !e; i++)
		e = list_set(s->sets[i], bucket, prefix, delimiter, after, max_keys, &r[i]);
	if (!e)
		e = list_merge(r, s->nsets, max_keys, out);
	for (size_t i = 0; i < s->nsets; i++)
		cn_list_result_fini(&r[i]);
	free(r);
	if (e)
		cn_list_result_fini(out);
	return e;
}
