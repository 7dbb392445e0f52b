/* object/heal: healing (object.h "healing") — on demand (cn_obj_heal), from reads that had
 * to rebuild data (a bounded queue drained by one thread), and by a periodic scanner.
 *
 * Invariants:
 *  HEAL-1. An object version is healed under its key's lock (OBJ-2), so a heal never races a
 *      commit or delete of the same key: it rebuilds exactly the version it read.
 *  HEAL-2. Walking never holds a drive directory open across heals: keys are collected in
 *      batches (after the last one seen) and healed between batches.
 *  HEAL-3. The scanner sleeps after each object for twice the time the object took (at least
 *      1 ms, at most cfg.heal_max_sleep_ms: 1 s by default), so it uses at most about a
 *      third of one core's time and of the drives' — unless the cap is lower than twice
 *      what objects take (a negative cap: no pause at all).
 *  HEAL-4. The queue never blocks a reader: when full, the entry is dropped (the scanner will
 *      find the object).
 *  HEAL-5. A data folder is removed as unreferenced only under its key's lock, from a view of
 *      every drive's records (cn_ec_orphan_data), through OBJ-6 (cn_obj__drop_data).
 *  HEAL-6. Keys whose data folders outlived every record (no listing shows them) are found by
 *      the drives (cn_ec_data_keys) and go through HEAL-5 in the set that holds them.
 *  HEAL-7. Heal walks every drive (cn_ec_walk_all, cn_ec_version_list_all), so it also meets
 *      versions on too few drives to be read; one that its heal finds no read returns is
 *      removed where it lies if it is dangling (EC-10 decides, from every drive, under the
 *      key's lock).
 *  HEAL-8. A heal of everything first removes bucket folders too few drives hold to be a
 *      bucket (EC-11: deleted while those drives were away), under the namespace lock.
 *  HEAL-9. Previous records (quorum.c EC-15) a crash left over, or that a heal through them left
 *      on the drives whose current record already held the version, are dropped after a
 *      heal of the current version, under the key's lock, only while no commit of the key
 *      has kept its own (OBJ-7), and only on the drives that heal saw hold the version as
 *      their current record or rewrote so (cn_ec_heal_result.current_slots): there the
 *      previous record adds no vote for the version (a drive counts once), while a drive
 *      that did not answer the heal's read, or whose rewrite failed, may still hold a
 *      cut-short commit's record, and its previous record a vote for the version. The
 *      scanner finds them through the listing (cn_ec_meta.prev_seen), a queued heal
 *      through its read (cn_ec_heal_result.from_prev). Until then each listing confirms
 *      such a key with a quorum read. */
#include "object/object_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_CAP 1024
#define BATCH 1000
#define DATA_KEYS_MAX 10000
#define DEFAULT_SCAN_MS (24LL * 3600 * 1000)

typedef struct heal_item {
	char *bucket, *key, *vid;
} heal_item;

typedef struct cn_obj_healer {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	heal_item q[QUEUE_CAP];
	size_t head, count;
	bool stop, scan_now;
	pthread_t qthread, sthread;
	bool qstarted, sstarted;
	uint64_t queued, done;
	/* the scanner's state for cn_obj_get_state (under mu) */
	bool scanning;
	uint64_t scans;
	int64_t scan_started_ms, scan_finished_ms;
	cn_obj_heal_totals scan;
} cn_obj_healer;

/* The set holding bucket/key (place.c). */
static cn_ec_set *set_of(cn_obj_store *s, const char *bucket, const char *key)
{
	return cn_obj__key_set(s, bucket, key);
}

/* --- one version (HEAL-1) --------------------------------------------------------------------- */

/* The namespace read lock (OBJ-5) and the key's lock (OBJ-2), as commits take them. */
static pthread_mutex_t *lock_key(cn_obj_store *s, const char *bucket, const char *key)
{
	pthread_rwlock_rdlock(&s->ns_lock);
	pthread_mutex_t *kl = cn_obj__key_lock(s, bucket, key);
	pthread_mutex_lock(kl);
	return kl;
}

static void unlock_key(cn_obj_store *s, pthread_mutex_t *kl)
{
	pthread_mutex_unlock(kl);
	pthread_rwlock_unlock(&s->ns_lock);
}

/* Returns cn_ec_heal's answer: CN_ERR_NO_KEY or CN_ERR_NO_VERSION when no read returns the
 * version (deleted meanwhile, or dangling: HEAL-7). */
static cn_err heal_version(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                           const char *vid, bool prev_seen, bool dry_run, cn_obj_heal_totals *t)
{
	cn_ec_heal_result res;
	pthread_mutex_t *kl = lock_key(s, bucket, key);
	cn_err e = cn_ec_heal(set, bucket, key, vid, dry_run, &res);
	bool drop = !e && !vid && !dry_run && (prev_seen || res.from_prev) && res.current_slots &&
	            !cn_obj__prev_pending(s, bucket, key); /* HEAL-9 */
	if (drop)
		cn_ec_prev_drop_slots(set, bucket, key, res.current_slots);
	unlock_key(s, kl);
	if (drop)
		cn_log(CN_LOG_INFO, NULL, "heal: %s/%s: previous records removed from the drives holding "
		       "the current version (slots 0x%llx)", bucket, key, (unsigned long long)res.current_slots);
	if (e == CN_ERR_NO_KEY || e == CN_ERR_NO_BUCKET || e == CN_ERR_NO_VERSION)
		return e; /* deleted meanwhile */
	t->scanned++;
	if (e) {
		t->failed++;
		cn_log(CN_LOG_WARN, NULL, "heal: %s/%s%s%s: %s", bucket, key, vid ? " version " : "",
		       vid ? vid : "", cn_err_str(e));
		return e;
	}
	if (!res.drives_bad)
		return CN_OK;
	if (dry_run || res.drives_failed == 0)
		t->healed++;
	else
		t->failed++;
	t->drives_healed += res.drives_healed;
	t->bytes += res.bytes_written;
	if (!dry_run)
		cn_log(CN_LOG_INFO, NULL, "heal: %s/%s%s%s: %u drive(s) rebuilt, %u failed", bucket, key,
		       vid ? " version " : "", vid ? vid : "", res.drives_healed, res.drives_failed);
	return CN_OK;
}

/* HEAL-5: the key's data folders no record references (a crash after an overwrite's commit,
 * before its removal of the replaced data, or a removal OBJ-6 deferred) are removed under the
 * key's lock, as OBJ-6 removes replaced data: at once, or when the readers that may still
 * read them close. */
static void remove_orphans(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                           bool dry_run, cn_obj_heal_totals *t)
{
	char **ids = NULL;
	size_t n = 0;
	pthread_mutex_t *kl = lock_key(s, bucket, key);
	if (cn_ec_orphan_data(set, bucket, key, &ids, &n) == CN_OK && !dry_run)
		for (size_t i = 0; i < n; i++)
			cn_obj__drop_data(s, set, bucket, key, ids[i]);
	unlock_key(s, kl);
	for (size_t i = 0; i < n; i++)
		cn_log(CN_LOG_INFO, NULL, "heal: %s/%s: data folder %s is no version's: %s", bucket, key,
		       ids[i], dry_run ? "found (dry run)" : "removed");
	t->orphans += n;
	cn_drive_free_names(ids, n);
}

/* HEAL-7: a version no read can return (EC-10 in erasure/dangling.c: deleted or replaced
 * while the drives holding it were away, or a write that failed below quorum) is removed
 * from the drives that hold it, under its key's lock. */
static void purge_dangling(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                           const char *vid, bool dry_run, cn_obj_heal_totals *t)
{
	size_t purged = 0;
	pthread_mutex_t *kl = lock_key(s, bucket, key);
	cn_err e = cn_ec_purge_dangling(set, bucket, key, vid, dry_run, &purged);
	unlock_key(s, kl);
	if (e)
		cn_log(CN_LOG_WARN, NULL, "heal: %s/%s%s%s: removing a version no read returns: %s", bucket,
		       key, vid ? " version " : "", vid ? vid : "", cn_err_str(e));
	if (purged)
		t->dangling++;
}

/* The current version and every noncurrent one (one that no read returns: purged if it
 * is dangling), then data no version references, in the set that listed the key. */
static void heal_key(cn_obj_store *s, cn_ec_set *set, const char *bucket, const char *key,
                     bool prev_seen, bool dry_run, cn_obj_heal_totals *t)
{
	cn_err e = heal_version(s, set, bucket, key, NULL, prev_seen, dry_run, t);
	if (e == CN_ERR_NO_KEY)
		purge_dangling(s, set, bucket, key, NULL, dry_run, t);
	char **vids;
	size_t n;
	if (cn_ec_version_list_all(set, bucket, key, &vids, &n) == CN_OK) {
		for (size_t i = 0; i < n; i++) {
			e = heal_version(s, set, bucket, key, vids[i], false, dry_run, t);
			if (e == CN_ERR_NO_KEY || e == CN_ERR_NO_VERSION)
				purge_dangling(s, set, bucket, key, vids[i], dry_run, t);
		}
		cn_drive_free_names(vids, n);
	}
	remove_orphans(s, set, bucket, key, dry_run, t);
}

/* --- walking (HEAL-2) ------------------------------------------------------------------------ */

typedef struct batch {
	char **keys;
	bool *prev; /* a walked drive holds a previous record of the key (HEAL-9) */
	size_t n;
} batch;

static cn_err batch_cb(void *ctx, const char *key, size_t keylen, bool is_prefix, const cn_ec_meta *m)
{
	batch *b = ctx;
	if (is_prefix)
		return CN_OK;
	if (b->n == BATCH)
		return CN_ERR__COUNT; /* full: stop the walk */
	if (!(b->keys[b->n] = strndup(key, keylen)))
		return CN_ERR_NOMEM;
	b->prev[b->n] = m && m->prev_seen;
	b->n++;
	return CN_OK;
}

typedef struct heal_run {
	cn_obj_store *s;
	bool dry_run, throttle;
	cn_obj_heal_progress progress;
	void *ctx;
	cn_obj_heal_totals *t;
	int64_t last_report;
	bool stopped;
} heal_run;

/* The scanner's longest pause after an object (HEAL-3); 0: none. */
static int64_t max_sleep_ms(const cn_obj_store *s)
{
	int64_t cap = s->cfg.heal_max_sleep_ms;
	return cap < 0 ? 0 : cap == 0 ? 1000 : cap;
}

/* After each key: the progress line (every 500 ms) and the scanner's pause (HEAL-3). */
static void paced(heal_run *h, const char *bucket, const char *key, int64_t t0)
{
	if (h->progress && cn_mono_ms() - h->last_report >= 500) {
		h->last_report = cn_mono_ms();
		if (!h->progress(h->ctx, h->t, bucket, key, false))
			h->stopped = true;
	}
	if (h->throttle) { /* HEAL-3 */
		int64_t pause = cn_mono_ms() - t0, cap = max_sleep_ms(h->s);
		pause = pause * 2 > 1 ? pause * 2 : 1;
		if (pause > cap)
			pause = cap;
		if (pause > 0)
			usleep((useconds_t)(pause * 1000));
		if (h->s->healer && h->s->healer->stop)
			h->stopped = true;
	}
}

/* Keys no listing shows (HEAL-6) because no drive has their record, while a drive still holds
 * data folders of theirs (a delete that crashed after its commit, FORMAT.md §2): each is
 * checked like a listed key's leftovers (HEAL-5), in the set that holds the folders. One
 * call per bucket and set, at most DATA_KEYS_MAX keys (more wait for the next run). */
static void heal_data_keys(heal_run *h, cn_ec_set *set, const char *bucket, const char *prefix)
{
	char **keys;
	size_t n;
	if (cn_ec_data_keys(set, bucket, prefix ? prefix : "", DATA_KEYS_MAX, &keys, &n))
		return;
	for (size_t i = 0; i < n && !h->stopped; i++) {
		int64_t t0 = cn_mono_ms();
		remove_orphans(h->s, set, bucket, keys[i], h->dry_run, h->t);
		paced(h, bucket, keys[i], t0);
	}
	cn_drive_free_names(keys, n);
}

static cn_err heal_bucket(heal_run *h, cn_ec_set *set, const char *bucket, const char *prefix)
{
	batch b = { calloc(BATCH, sizeof(char *)), calloc(BATCH, sizeof(bool)), 0 };
	if (!b.keys || !b.prev) {
		free(b.keys);
		free(b.prev);
		return CN_ERR_NOMEM;
	}
	char *after = NULL;
	cn_err e = CN_OK;
	for (;;) {
		b.n = 0;
		e = cn_ec_walk_all(set, bucket, prefix ? prefix : "", after, batch_cb, &b);
		if (e == CN_ERR__COUNT)
			e = CN_OK;
		if (e)
			break;
		for (size_t i = 0; i < b.n && !h->stopped; i++) {
			int64_t t0 = cn_mono_ms();
			heal_key(h->s, set, bucket, b.keys[i], b.prev[i], h->dry_run, h->t);
			paced(h, bucket, b.keys[i], t0);
		}
		bool more = b.n == BATCH && !h->stopped;
		char *next = b.n ? b.keys[b.n - 1] : NULL; /* the walk resumes after it */
		for (size_t i = 0; i + 1 < b.n; i++)
			free(b.keys[i]);
		free(after);
		after = next;
		if (!more)
			break;
	}
	free(after);
	free(b.keys);
	free(b.prev);
	if (!e && !h->stopped)
		heal_data_keys(h, set, bucket, prefix);
	return h->stopped ? CN_ERR_ABORTED : e;
}

static cn_err heal_all(heal_run *h, const char *bucket, const char *prefix)
{
	cn_obj_store *s = h->s;
	bool all = !bucket || !bucket[0];
	if (!h->dry_run || all) {
		pthread_rwlock_wrlock(&s->ns_lock); /* OBJ-5 */
		if (!h->dry_run) /* buckets first: a drive that lacks one cannot take its objects */
			cn_obj__heal_buckets(s);
		if (all) /* HEAL-8: bucket folders deleted while their drives were away (EC-11) */
			h->t->dangling_buckets += cn_obj__purge_dangling_buckets(s, h->dry_run);
		pthread_rwlock_unlock(&s->ns_lock);
	}
	/* every set holds its own share of each bucket's keys: walk them all */
	if (!all) {
		cn_err e = cn_obj_head_bucket(s, bucket, NULL);
		for (size_t k = 0; !e && k < s->nsets; k++)
			e = heal_bucket(h, s->sets[k], bucket, prefix);
		return e;
	}
	cn_bucket_info *bs;
	size_t nb;
	cn_err e = cn_obj_list_buckets(s, &bs, &nb);
	if (e)
		return e;
	for (size_t i = 0; i < nb && !e; i++)
		for (size_t k = 0; !e && k < s->nsets; k++)
			e = heal_bucket(h, s->sets[k], bs[i].name, prefix);
	free(bs);
	return e;
}

cn_err cn_obj_heal(cn_obj_store *s, const char *bucket, const char *prefix, bool dry_run,
                   cn_obj_heal_progress progress, void *ctx, cn_obj_heal_totals *out)
{
	memset(out, 0, sizeof *out);
	heal_run h = { .s = s, .dry_run = dry_run, .progress = progress, .ctx = ctx, .t = out,
	               .last_report = cn_mono_ms() };
	cn_err e = heal_all(&h, bucket, prefix);
	if (progress)
		progress(ctx, out, bucket ? bucket : "", "", true);
	return e;
}

/* --- background: queue and scanner -------------------------------------------------------- */

void cn_obj__heal_enqueue(cn_obj_store *s, const cn_ec_reader *r)
{
	cn_obj_healer *h = s ? s->healer : NULL;
	if (!h)
		return;
	const char *vol, *key, *vid;
	cn_ec_reader_name(r, &vol, &key, &vid);
	heal_item it = { strdup(vol), strdup(key), vid ? strdup(vid) : NULL };
	if (!it.bucket || !it.key || (vid && !it.vid)) {
		free(it.bucket);
		free(it.key);
		free(it.vid);
		return;
	}
	pthread_mutex_lock(&h->mu);
	bool dup = false;
	for (size_t i = 0; i < h->count && !dup; i++) {
		heal_item *q = &h->q[(h->head + i) % QUEUE_CAP];
		dup = !strcmp(q->bucket, it.bucket) && !strcmp(q->key, it.key) &&
		      ((!q->vid && !it.vid) || (q->vid && it.vid && !strcmp(q->vid, it.vid)));
	}
	bool take = !dup && h->count < QUEUE_CAP && !h->stop; /* HEAL-4 */
	if (take) {
		h->q[(h->head + h->count) % QUEUE_CAP] = it;
		h->count++;
		h->queued++;
		pthread_cond_broadcast(&h->cv); /* the scanner waits on it too */
	}
	pthread_mutex_unlock(&h->mu);
	if (!take) {
		free(it.bucket);
		free(it.key);
		free(it.vid);
	}
}

void cn_obj__heal_scan_now(cn_obj_store *s)
{
	cn_obj_healer *h = s ? s->healer : NULL;
	if (!h || !h->sstarted)
		return;
	pthread_mutex_lock(&h->mu);
	h->scan_now = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

void cn_obj__heal_queue_state(cn_obj_store *s, size_t *waiting, bool *stopping)
{
	cn_obj_healer *h = s->healer;
	*waiting = 0;
	*stopping = false;
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	*waiting = h->count;
	*stopping = h->stop;
	pthread_mutex_unlock(&h->mu);
}

static void *queue_thread(void *arg)
{
	cn_obj_store *s = arg;
	cn_obj_healer *h = s->healer;
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->stop && h->count == 0)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->stop)
			break;
		heal_item it = h->q[h->head];
		h->head = (h->head + 1) % QUEUE_CAP;
		h->count--;
		pthread_mutex_unlock(&h->mu);
		cn_obj_heal_totals t = { 0 };
		heal_version(s, set_of(s, it.bucket, it.key), it.bucket, it.key, it.vid, false, false, &t);
		free(it.bucket);
		free(it.key);
		free(it.vid);
		pthread_mutex_lock(&h->mu);
		h->done++;
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* The scan's progress (every ~500 ms) into the healer, where cn_obj_get_state reads it. */
static bool scan_progress(void *ctx, const cn_obj_heal_totals *t, const char *bucket, const char *key,
                          bool last)
{
	(void)bucket, (void)key, (void)last;
	cn_obj_healer *h = ctx;
	pthread_mutex_lock(&h->mu);
	h->scan = *t;
	pthread_mutex_unlock(&h->mu);
	return true;
}

static void *scan_thread(void *arg)
{
	cn_obj_store *s = arg;
	cn_obj_healer *h = s->healer;
	int64_t every = s->cfg.heal_scan_ms > 0 ? s->cfg.heal_scan_ms : DEFAULT_SCAN_MS;
	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		struct timespec ts;
		cn_deadline_after_ms(every, &ts);
		/* the queue's wake-ups share the condition variable: only the period's end, a
		 * scan_now or stop ends the wait */
		while (!h->stop && !h->scan_now && pthread_cond_timedwait(&h->cv, &h->mu, &ts) != ETIMEDOUT)
			;
		if (h->stop)
			break;
		h->scan_now = false;
		h->scanning = true;
		h->scan_started_ms = cn_now_ms();
		memset(&h->scan, 0, sizeof h->scan);
		pthread_mutex_unlock(&h->mu);
		cn_obj_heal_totals t = { 0 };
		heal_run run = { .s = s, .throttle = true, .t = &t, .progress = scan_progress, .ctx = h,
		                 .last_report = cn_mono_ms() };
		cn_err e = heal_all(&run, NULL, NULL);
		pthread_mutex_lock(&h->mu);
		h->scan = t;
		h->scanning = false;
		h->scans++;
		h->scan_finished_ms = cn_now_ms();
		pthread_mutex_unlock(&h->mu);
		if (t.healed || t.failed || (e && e != CN_ERR_ABORTED))
			cn_log(CN_LOG_INFO, NULL, "heal: scan done: %llu versions, %llu healed, %llu failed%s%s",
			       (unsigned long long)t.scanned, (unsigned long long)t.healed,
			       (unsigned long long)t.failed, e ? ": " : "", e ? cn_err_str(e) : "");
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

void cn_obj__heal_start(cn_obj_store *s)
{
	cn_obj_healer *h = calloc(1, sizeof *h);
	if (!h)
		return;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	s->healer = h;
	h->qstarted = cn_thread_create(&h->qthread, NULL, queue_thread, s) == 0;
	if (s->cfg.heal_scan_ms >= 0)
		h->sstarted = cn_thread_create(&h->sthread, NULL, scan_thread, s) == 0;
}

void cn_obj__heal_stop(cn_obj_store *s)
{
	cn_obj_healer *h = s->healer;
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (h->qstarted)
		pthread_join(h->qthread, NULL);
	if (h->sstarted)
		pthread_join(h->sthread, NULL);
	for (size_t i = 0; i < h->count; i++) {
		heal_item *it = &h->q[(h->head + i) % QUEUE_CAP];
		free(it->bucket);
		free(it->key);
		free(it->vid);
	}
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	s->healer = NULL;
	free(h);
}

/* --- state ------------------------------------------------------------------------------- */

cn_err cn_obj_get_state(cn_obj_store *s, cn_obj_state *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->deployment, sizeof out->deployment, "%s", s->deployment);
	out->npools = (unsigned)s->npools;
	out->nsets = (unsigned)s->nsets;
	out->set_size = s->npools ? (unsigned)s->pools[0].set_size : 0;
	if (s->nsets)
		cn_ec_set_parity(s->sets[0], &out->parity_standard, &out->parity_rrs);
	size_t total = 0;
	for (size_t k = 0; k < s->nsets; k++)
		total += cn_ec_set_ndrives(s->sets[k]);
	out->drives = calloc(total ? total : 1, sizeof *out->drives);
	if (!out->drives)
		return CN_ERR_NOMEM;
	size_t n = 0;
	for (size_t p = 0; p < s->npools; p++) {
		for (size_t k = 0; k < s->pools[p].nsets; k++) {
			cn_ec_set *set = s->pools[p].sets[k];
			for (size_t i = 0; i < cn_ec_set_ndrives(set) && n < total; i++, n++) {
				cn_obj_drive_state *d = &out->drives[n];
				d->pool = (unsigned)p;
				d->set = (unsigned)k;
				d->slot = (unsigned)i;
				const char *ep = cn_ec_set_endpoint(set, i);
				snprintf(d->endpoint, sizeof d->endpoint, "%s", ep ? ep : "(refused)");
				cn_drive_info di = { 0 };
				d->suspended = cn_ec_set_suspended(set, i);
				if (cn_ec_set_drive_info(set, i, &di) == CN_OK) {
					d->online = di.online;
					d->total = di.total;
					d->free = di.free;
				}
				d->outages = di.outages; /* counters: the health wrapper fills them always */
				d->refused = di.refused;
			}
		}
	}
	out->ndrives = n;
	out->scan_max_sleep_ms = max_sleep_ms(s);
	for (size_t k = 0; k < s->nsets; k++) {
		cn_ec_cache_stats cs;
		cn_ec_set_cache_stats(s->sets[k], &cs);
		out->cache_budget += cs.budget;
		out->cache_bytes += cs.bytes;
		out->cache_hits += cs.hits;
		out->cache_misses += cs.misses;
	}
	if (s->healer) {
		pthread_mutex_lock(&s->healer->mu);
		out->heal_queued = s->healer->queued;
		out->heal_done = s->healer->done;
		out->scan_running = s->healer->scanning;
		out->scans = s->healer->scans;
		out->scan_started_ms = s->healer->scan_started_ms;
		out->scan_finished_ms = s->healer->scan_finished_ms;
		out->scan = s->healer->scan;
		pthread_mutex_unlock(&s->healer->mu);
	}
	return CN_OK;
}
