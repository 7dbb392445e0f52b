/* commit.c: the per-key state that commits and readers share — the key locks (OBJ-2,
 * object.c) and the wait for a commit in progress that they give reads (EC-13), the previous
 * records a commit keeps until its barrier (OBJ-7), and the readers' pins that delay removing
 * a replaced version's data (OBJ-6).
 *
 *  OBJ-6. A replaced or deleted version's data folder outlives the readers that may read it
 *      (cn_obj__drop_data, object_int.h): a GET that began before an overwrite streams the
 *      old version to its end.
 *  OBJ-7. A commit that replaces a current record keeps it as the key's previous record on
 *      every drive first (cn_ec_prev_keep in vprep, erasure.h: quorum.c EC-15 reads it when a
 *      crash cut the commit short), and drops it after the barrier (vfinish), under the
 *      key's lock and only when no later commit of the same key has kept its own previous
 *      records meanwhile (the lock's list of kept ones, cn_obj__prevk): those must stay
 *      until that commit's barrier, and it drops them. A later commit that failed marks
 *      the earlier ones not to drop (nodrop): it may have renamed its record onto fewer
 *      drives than its quorum, and the previous records hold the version it replaced. A
 *      previous record left over (a crash between barrier and drop) is never counted
 *      while the current one is at quorum; the next overwrite of the key replaces it, a
 *      delete removes it, and a heal of the key removes it on the drives it saw holding
 *      the current version (heal.c HEAL-9). */
#include "object/object_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cn_obj__key_locks_init(cn_obj_store *s)
{
	pthread_mutexattr_t ma; /* error-checking: cn_obj__split_wait */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	for (size_t i = 0; i < OBJ_KEY_LOCKS; i++)
		pthread_mutex_init(&s->key_locks[i], &ma);
	pthread_mutexattr_destroy(&ma);
	for (size_t i = 0; i < OBJ_PIN_STRIPES; i++)
		pthread_mutex_init(&s->pins[i].mu, NULL);
}

void cn_obj__key_locks_fini(cn_obj_store *s)
{
	for (size_t i = 0; i < OBJ_KEY_LOCKS; i++)
		pthread_mutex_destroy(&s->key_locks[i]);
	for (size_t i = 0; i < OBJ_PIN_STRIPES; i++)
		pthread_mutex_destroy(&s->pins[i].mu);
}

/* quorum.c EC-13 (erasure.h cn_ec_set_split_wait): a read found the drives split between
 * versions of bucket/key. Commits hold the key's lock while they rename records (OBJ-2), so
 * taking it and letting go waits for those in progress. A thread that holds it itself (a
 * delete, heal, a version change reading under it) gets EDEADLK at once: the key locks are
 * error-checking mutexes. Bounded: a commit stuck on a stalled drive must not hold up the
 * loop thread, which serves small GETs, for longer than SPLIT_WAIT_MS. */
#define SPLIT_WAIT_MS 100
bool cn_obj__split_wait(void *ctx, const char *vol, const char *key)
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

/* --- previous records (OBJ-7) ------------------------------------------------------------ */

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
	pk->h = cn_obj__key_hash(bucket, key);
	cn_obj__prevk **head = &s->prevk[pk->h % OBJ_KEY_LOCKS];
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
	for (cn_obj__prevk **pp = &s->prevk[pk->h % OBJ_KEY_LOCKS]; *pp; pp = &(*pp)->next) {
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
	uint64_t h = cn_obj__key_hash(bucket, key);
	for (const cn_obj__prevk *p = s->prevk[h % OBJ_KEY_LOCKS]; p; p = p->next)
		if (p->h == h)
			return true;
	return false;
}

/* --- open readers and removed data (OBJ-6) ------------------------------------------------ */

struct cn_obj__drop {
	cn_obj__drop *next;
	cn_ec_set *set;
	char *bucket, *key;
	char data_id[CN_DRIVE_ID_MAX + 1];
};

#define PIN_STRIPE(s, h) (&(s)->pins[((h) >> 32) % OBJ_PIN_STRIPES])

void cn_obj__pin_key(cn_obj_store *s, const char *bucket, const char *key, cn_obj__pin *p)
{
	p->h = cn_obj__key_hash(bucket, key);
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
	uint64_t h = cn_obj__key_hash(bucket, key);
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
		if (d) { /* out of memory: removed at once, readers or not */
			free(d->bucket);
			free(d);
		}
	}
	cn_ec_delete_data(set, bucket, key, data_id && data_id[0] ? data_id : NULL);
}
