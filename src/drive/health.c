/* drive/health: a drive decorator (drive.h cn_drive_health_wrap) that takes a failing or
 * stalling drive out of service and brings it back when it recovers.
 *
 * Invariants:
 *  HEALTH-1. A call that fails with CN_ERR_IO / CN_ERR_OFFLINE or takes longer than the stall
 *      limit marks the drive offline (logged once per outage), and so does finding its
 *      folder gone (online, info): a caller that asks `online` before a mutation then counts
 *      it down instead of finding it by a write. Data-level answers
 *      (NO_KEY, NO_BUCKET, NOT_FOUND, NOSPACE, CORRUPT ...) say nothing about the drive.
 *  HEALTH-2. While offline every call returns CN_ERR_OFFLINE at once, without touching the inner
 *      drive, so one bad drive costs requests nothing but its share of the quorum; handles
 *      opened before the outage keep working (their own errors still count).
 *  HEALTH-3. One prober thread per wrapped drive checks an offline drive every probe interval
 *      (info, then writing and reading back a small system file) and puts it back online
 *      when that succeeds within the stall limit (logged).
 *  HEALTH-4. A call already blocked inside the inner drive cannot be interrupted (POSIX I/O);
 *      the limit bounds how long the NEXT requests wait: after one stalled call the drive
 *      is skipped.
 *  HEALTH-5. A refused drive (cn_drive_health_refuse: it holds another slot's or deployment's
 *      format) answers like an offline one, but no probe brings it back: only its owner
 *      admits it again. reopen, replaced and reading the "format" system file still reach
 *      it (they decide whether it stays refused); nothing else is read or written.
 *  HEALTH-6. Timed calls in progress are tracked (their start, in a slot of inflight[]); while
 *      the drive is online the prober looks at them every stall/4 (10 ms to 1 s) and
 *      takes the drive offline as soon as one has run longer than the stall limit, so a
 *      drive that hangs is skipped by the next requests without waiting for the hung call
 *      to return (HEALTH-4: the callers already inside still wait). A call finding no free slot
 *      (more than INFLIGHT_SLOTS at once) is judged when it returns only, as before. A
 *      probe does not pass while such a call is still hung (no flapping back online).
 *  HEALTH-7. A thread in no-I/O mode (cn_drive_no_io) gets CN_ERR_BUSY from every call, before
 *      anything else, and the drive is not judged by it; except read_meta and
 *      version_read, which reach an online drive in its no-wait mode (drive.h): untimed
 *      and not tracked (they cannot wait), judged by their errors only (HEALTH-1).
 *  HEALTH-8. Between a hang's start and HEALTH-6's verdict every new call would join the
 *      hung ones and hold its thread too, until every worker of the server waits on one drive. So while
 *      at least late_cap tracked calls of an online drive have each run longer than late_ms
 *      (a tenth of the stall limit by default), new calls are refused with CN_ERR_OFFLINE
 *      at once, without touching the drive or marking it offline (callers use the other
 *      drives, as for an offline one); once fewer are late, calls go through again. The
 *      prober counts late calls at each look (HEALTH-6's, every late/4 or stall/4, 10 ms to 1 s),
 *      and while it refuses every returning call counts them again, so refusals end as
 *      soon as enough late calls have returned. sync calls are tracked for HEALTH-6 but
 *      not counted late: a group commit's wait grows with the load, not with a hang, and a
 *      busy filesystem must not turn every PUT away; for that reason neither are the writing
 *      calls that sync themselves on a drive with writes_sync (drive.h: file_close(keep),
 *      rename_data, version_write, upload_write under CAIRN_SYNC=fsync); every other call
 *      counts (file_write too, which dirty-page throttling can slow on a busy
 *      filesystem: a bounded wait, not the flush itself). Handles opened before (file_write,
 *      rfile_read) are not refused (HEALTH-2). Calls finding no slot (HEALTH-6) are not counted.
 *      While refusing, info answers the last figures the drive gave (online) and reopen
 *      fails, so metrics and the drive monitor do not hang on it either. */
#include "drive/drive.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INFLIGHT_SLOTS 64

typedef struct hslot {
	_Atomic int64_t t0; /* start of the call holding it (monotonic ms), negated for a sync
	                       call (HEALTH-8: not counted late); 0: free */
	char pad[56];       /* one cache line each: threads take different slots */
} hslot;

typedef struct hdrive {
	cn_drive base; /* first: H() casts */
	cn_drive *in;
	cn_drive_health_cfg cfg;
	atomic_bool offline;
	atomic_bool refused;     /* HEALTH-5 */
	atomic_uint_fast64_t outages;
	atomic_uint_fast64_t refused_calls; /* HEALTH-8 */
	pthread_mutex_t mu;
	cn_drive_info last_info; /* under mu: the drive's last answer (HEALTH-8: info while refusing) */
	pthread_cond_t cv;
	bool stop;
	pthread_t prober;
	bool started;
	hslot inflight[INFLIGHT_SLOTS]; /* HEALTH-6 */
	atomic_int late;                /* HEALTH-8: calls past late_ms at the prober's last look */
	atomic_bool refusing;           /* HEALTH-8: logged once per episode */
} hdrive;

typedef struct hfile {
	hdrive *d;
	cn_drive_file *in;
} hfile;

typedef struct hrfile {
	hdrive *d;
	cn_drive_rfile *in;
} hrfile;

static hdrive *H(cn_drive *d) { return (hdrive *)d; }

static void mark_offline(hdrive *d, const char *why)
{
	bool was = atomic_exchange(&d->offline, true);
	if (!was) {
		atomic_fetch_add(&d->outages, 1);
		cn_log(CN_LOG_ERROR, NULL, "drive %s: taken offline (%s); requests skip it, probing "
		       "every %lld ms", d->in->endpoint, why, (long long)d->cfg.probe_ms);
		pthread_mutex_lock(&d->mu);
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->mu);
	}
}

/* HEALTH-6: a timed call's start, tracked in a slot while it runs (slot -1: none was free). */
typedef struct htick {
	int64_t t0;
	int slot;
} htick;

static htick tick_kind(hdrive *d, bool sync)
{
	static atomic_uint next_hint;
	static __thread int hint = -1; /* a thread makes one call at a time: its own slot */
	if (hint < 0)
		hint = (int)(atomic_fetch_add(&next_hint, 1) % INFLIGHT_SLOTS);
	htick t = { cn_mono_ms(), -1 };
	int64_t start = t.t0 > 0 ? t.t0 : 1;
	if (sync)
		start = -start;
	for (int i = 0; i < INFLIGHT_SLOTS; i++) {
		int j = (hint + i) % INFLIGHT_SLOTS;
		int64_t free_ = 0;
		if (atomic_compare_exchange_strong(&d->inflight[j].t0, &free_, start)) {
			t.slot = j;
			break;
		}
	}
	return t;
}

static htick tick(hdrive *d) { return tick_kind(d, false); }

/* HEALTH-1: the verdict on one call (and HEALTH-6: its slot freed). */
static int64_t oldest_call_ms(hdrive *d);

static cn_err judge(hdrive *d, cn_err e, htick t, const char *what)
{
	if (t.slot >= 0) {
		atomic_store(&d->inflight[t.slot].t0, 0);
		if (atomic_load_explicit(&d->late, memory_order_relaxed) >= d->cfg.late_cap)
			oldest_call_ms(d); /* HEALTH-8: refusing; count again now that one returned */
	}
	int64_t took = cn_mono_ms() - t.t0;
	if (e == CN_ERR_IO || e == CN_ERR_OFFLINE) {
		char why[96];
		snprintf(why, sizeof why, "%s failed: %s", what, cn_err_str(e));
		mark_offline(d, why);
	} else if (d->cfg.stall_ms > 0 && took > d->cfg.stall_ms) {
		char why[96];
		snprintf(why, sizeof why, "%s took %lld ms", what, (long long)took);
		mark_offline(d, why);
	}
	return e;
}

static __thread bool no_io; /* HEALTH-7 */

void cn_drive_no_io(bool on)
{
	no_io = on;
}

bool cn_drive_nowait(void)
{
	return no_io;
}

/* HEALTH-8: too many calls of this drive are late; logged once per episode. */
static bool too_late(hdrive *d)
{
	if (atomic_load_explicit(&d->late, memory_order_relaxed) < d->cfg.late_cap)
		return false;
	atomic_fetch_add_explicit(&d->refused_calls, 1, memory_order_relaxed);
	if (!atomic_exchange(&d->refusing, true))
		cn_log(CN_LOG_WARN, NULL, "drive %s: %d calls have not returned for over %lld ms; new "
		       "calls skip it until they do", d->in->endpoint, atomic_load(&d->late),
		       (long long)d->cfg.late_ms);
	return true;
}

#define GUARD(d)                                  \
	do {                                          \
		if (no_io)                                \
			return CN_ERR_BUSY; /* HEALTH-7 */    \
		if (atomic_load(&(d)->offline) ||         \
		    atomic_load(&(d)->refused))           \
			return CN_ERR_OFFLINE; /* HEALTH-2, HEALTH-5 */ \
		if (too_late(d))                          \
			return CN_ERR_OFFLINE; /* HEALTH-8 */ \
	} while (0)

#define CALL(d, what, expr)                       \
	do {                                          \
		GUARD(d);                                 \
		htick _t0 = tick(d);                      \
		cn_err _e = (expr);                       \
		return judge((d), _e, _t0, (what));       \
	} while (0)

/* A call that writes and, on a drive with writes_sync, waits for the device (HEALTH-8). */
#define CALL_WRITE(d, what, expr)                 \
	do {                                          \
		GUARD(d);                                 \
		htick _t0 = tick_kind(d, (d)->in->writes_sync); \
		cn_err _e = (expr);                       \
		return judge((d), _e, _t0, (what));       \
	} while (0)

/* HEALTH-7: a read the drive answers in no-wait mode on a no-I/O thread; timed otherwise. */
#define CALL_NOWAIT(d, what, expr)                \
	do {                                          \
		if (!no_io)                               \
			CALL(d, what, expr);                  \
		if (atomic_load(&(d)->offline) ||         \
		    atomic_load(&(d)->refused))           \
			return CN_ERR_OFFLINE; /* HEALTH-2, HEALTH-5 */ \
		cn_err _e = (expr);                       \
		if (_e == CN_ERR_IO || _e == CN_ERR_OFFLINE) \
			mark_offline((d), what " failed");    \
		return _e;                                \
	} while (0)

/* A call whose length depends on the data, not on the drive's health (a walk, a folder's
 * removal): no time bound, only its I/O errors take the drive offline. */
#define CALL_UNTIMED(d, what, expr)               \
	do {                                          \
		GUARD(d);                                 \
		cn_err _e = (expr);                       \
		if (_e == CN_ERR_IO)                      \
			mark_offline((d), what " failed");    \
		return _e;                                \
	} while (0)

static void h_close(cn_drive *dd)
{
	hdrive *d = H(dd);
	if (d->started) {
		pthread_mutex_lock(&d->mu);
		d->stop = true;
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->prober, NULL);
	}
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	cn_drive_close(d->in);
	free(d);
}

static cn_err h_info(cn_drive *dd, cn_drive_info *out)
{
	hdrive *d = H(dd);
	if (no_io)
		return CN_ERR_BUSY; /* HEALTH-7 */
	cn_err e = CN_OK;
	if (atomic_load(&d->offline) || atomic_load(&d->refused)) {
		memset(out, 0, sizeof *out); /* answered: online = false */
		goto counters;
	}
	if (too_late(d)) { /* HEALTH-8: the statvfs could hang too; answer the last figures */
		pthread_mutex_lock(&d->mu);
		*out = d->last_info;
		pthread_mutex_unlock(&d->mu);
		out->online = true;
		goto counters;
	}
	htick t0 = tick(d);
	e = judge(d, d->in->ops->info(d->in, out), t0, "info");
	if (e == CN_OK) {
		pthread_mutex_lock(&d->mu);
		d->last_info = *out;
		pthread_mutex_unlock(&d->mu);
	}
	if (e == CN_OK && !out->online)
		mark_offline(d, "its folder is gone"); /* HEALTH-1 */
	if (atomic_load(&d->offline))
		out->online = false;
counters:
	out->outages = atomic_load(&d->outages);
	out->refused = atomic_load(&d->refused_calls);
	return e;
}

/* Not timed or judged: one fstat of the drive's folder (what info adds is the statvfs). */
static bool h_online(cn_drive *dd)
{
	hdrive *d = H(dd);
	if (atomic_load(&d->offline))
		return false;
	if (atomic_load(&d->refused))
		return false;
	if (no_io)
		return true; /* HEALTH-7: as far as is known */
	if (d->in->ops->online) {
		if (!d->in->ops->online(d->in)) {
			mark_offline(d, "its folder is gone"); /* HEALTH-1 */
			return false;
		}
		return !atomic_load(&d->offline);
	}
	cn_drive_info di;
	return h_info(dd, &di) == CN_OK && di.online;
}

static bool probe(hdrive *d);

/* Not gated by HEALTH-2 (bringing a drive back is what it is for); an offline drive that reopens
 * and passes a probe is online again at once. */
static cn_err h_reopen(cn_drive *dd)
{
	hdrive *d = H(dd);
	if (!d->in->ops->reopen || too_late(d))
		return CN_ERR_OFFLINE; /* HEALTH-8: its folder calls could hang too */
	cn_err e = d->in->ops->reopen(d->in);
	if (!e && atomic_load(&d->offline) && probe(d) && atomic_exchange(&d->offline, false))
		cn_log(CN_LOG_INFO, NULL, "drive %s: back online (re-opened)", d->in->endpoint);
	return e;
}

/* Not gated either: a replaced folder is what brings a failed disk's slot back. */
static bool h_replaced(cn_drive *dd)
{
	hdrive *d = H(dd);
	return d->in->ops->replaced && d->in->ops->replaced(d->in);
}

static cn_err h_read_sys(cn_drive *dd, const char *name, size_t max, cn_buf *out)
{
	hdrive *d = H(dd);
	if (no_io)
		return CN_ERR_BUSY; /* HEALTH-7 */
	if (atomic_load(&d->refused) && !atomic_load(&d->offline) && strcmp(name, "format") == 0) {
		htick t0 = tick(d); /* HEALTH-5: what decides whether it stays refused */
		return judge(d, d->in->ops->read_sys(d->in, name, max, out), t0, "read_sys");
	}
	CALL(d, "read_sys", d->in->ops->read_sys(d->in, name, max, out));
}
static cn_err h_write_sys(cn_drive *dd, const char *name, const void *p, size_t len)
{
	hdrive *d = H(dd);
	CALL(d, "write_sys", d->in->ops->write_sys(d->in, name, p, len));
}
static cn_err h_remove_sys(cn_drive *dd, const char *name)
{
	hdrive *d = H(dd);
	CALL(d, "remove_sys", d->in->ops->remove_sys(d->in, name));
}
static cn_err h_make_vol(cn_drive *dd, const char *vol)
{
	hdrive *d = H(dd);
	CALL(d, "make_vol", d->in->ops->make_vol(d->in, vol));
}
static cn_err h_stat_vol(cn_drive *dd, const char *vol, int64_t *mtime_ms)
{
	hdrive *d = H(dd);
	CALL(d, "stat_vol", d->in->ops->stat_vol(d->in, vol, mtime_ms));
}
static cn_err h_delete_vol(cn_drive *dd, const char *vol)
{
	hdrive *d = H(dd);
	CALL(d, "delete_vol", d->in->ops->delete_vol(d->in, vol));
}
static cn_err h_purge_vol(cn_drive *dd, const char *vol)
{
	hdrive *d = H(dd);
	if (!d->in->ops->purge_vol)
		return CN_OK;
	CALL_UNTIMED(d, "purge_vol", d->in->ops->purge_vol(d->in, vol));
}
static cn_err h_list_vols(cn_drive *dd, cn_drive_vol **out, size_t *n)
{
	hdrive *d = H(dd);
	CALL(d, "list_vols", d->in->ops->list_vols(d->in, out, n));
}

static cn_err h_create_file(cn_drive *dd, const char *tmp_id, const char *data_id, const char *name,
                            cn_drive_file **out)
{
	hdrive *d = H(dd);
	GUARD(d);
	hfile *f = calloc(1, sizeof *f);
	if (!f)
		return CN_ERR_NOMEM;
	htick t0 = tick(d);
	cn_err e = judge(d, d->in->ops->create_file(d->in, tmp_id, data_id, name, &f->in), t0, "create");
	if (e) {
		free(f);
		return e;
	}
	f->d = d;
	*out = (cn_drive_file *)(void *)f;
	return CN_OK;
}

static cn_err h_file_write(cn_drive_file *ff, const void *p, size_t len)
{
	hfile *f = (hfile *)(void *)ff;
	if (no_io)
		return CN_ERR_BUSY; /* HEALTH-7 */
	htick t0 = tick(f->d);
	return judge(f->d, f->d->in->ops->file_write(f->in, p, len), t0, "write");
}

static cn_err h_file_close(cn_drive_file *ff, bool keep)
{
	hfile *f = (hfile *)(void *)ff;
	htick t0 = tick_kind(f->d, keep && f->d->in->writes_sync); /* HEALTH-8 */
	cn_err e = judge(f->d, f->d->in->ops->file_close(f->in, keep), t0, "close");
	free(f);
	return e;
}

static void h_abort_tmp(cn_drive *dd, const char *tmp_id)
{
	hdrive *d = H(dd);
	if (!atomic_load(&d->offline) && !no_io)
		d->in->ops->abort_tmp(d->in, tmp_id);
}

static cn_err h_rename_data(cn_drive *dd, const char *tmp_id, const char *data_id, const char *vol,
                            const char *key, const void *rec, size_t reclen)
{
	hdrive *d = H(dd);
	CALL_WRITE(d, "rename_data", d->in->ops->rename_data(d->in, tmp_id, data_id, vol, key, rec, reclen));
}
/* The previous record (drive.h): an inner drive without one keeps none (CN_ERR_NO_KEY). */
static cn_err h_prev_keep(cn_drive *dd, const char *vol, const char *key)
{
	hdrive *d = H(dd);
	if (!d->in->ops->prev_keep)
		return CN_ERR_NO_KEY;
	CALL(d, "prev_keep", d->in->ops->prev_keep(d->in, vol, key));
}
static cn_err h_prev_read(cn_drive *dd, const char *vol, const char *key, size_t max, cn_buf *out)
{
	hdrive *d = H(dd);
	if (!d->in->ops->prev_read)
		return CN_ERR_NO_KEY;
	CALL(d, "prev_read", d->in->ops->prev_read(d->in, vol, key, max, out));
}
static cn_err h_prev_drop(cn_drive *dd, const char *vol, const char *key)
{
	hdrive *d = H(dd);
	if (!d->in->ops->prev_drop)
		return CN_OK;
	CALL(d, "prev_drop", d->in->ops->prev_drop(d->in, vol, key));
}
static cn_err h_read_meta(cn_drive *dd, const char *vol, const char *key, size_t max, cn_buf *out)
{
	hdrive *d = H(dd);
	CALL_NOWAIT(d, "read_meta", d->in->ops->read_meta(d->in, vol, key, max, out));
}
static cn_err h_delete_meta(cn_drive *dd, const char *vol, const char *key)
{
	hdrive *d = H(dd);
	CALL(d, "delete_meta", d->in->ops->delete_meta(d->in, vol, key));
}
static cn_err h_delete_data(cn_drive *dd, const char *vol, const char *key, const char *data_id)
{
	hdrive *d = H(dd);
	CALL(d, "delete_data", d->in->ops->delete_data(d->in, vol, key, data_id));
}

static cn_err h_open_data(cn_drive *dd, const char *vol, const char *key, const char *data_id,
                          const char *name, cn_drive_rfile **out)
{
	hdrive *d = H(dd);
	GUARD(d);
	hrfile *f = calloc(1, sizeof *f);
	if (!f)
		return CN_ERR_NOMEM;
	htick t0 = tick(d);
	cn_err e = judge(d, d->in->ops->open_data(d->in, vol, key, data_id, name, &f->in), t0, "open");
	if (e) {
		free(f);
		return e;
	}
	f->d = d;
	*out = (cn_drive_rfile *)(void *)f;
	return CN_OK;
}

static cn_err h_rfile_read(cn_drive_rfile *ff, int64_t off, void *buf, size_t len, size_t *got)
{
	hrfile *f = (hrfile *)(void *)ff;
	if (no_io)
		return CN_ERR_BUSY; /* HEALTH-7 */
	htick t0 = tick(f->d);
	return judge(f->d, f->d->in->ops->rfile_read(f->in, off, buf, len, got), t0, "read");
}
static int h_rfile_fd(cn_drive_rfile *ff)
{
	hrfile *f = (hrfile *)(void *)ff;
	return f->d->in->ops->rfile_fd(f->in);
}
static int64_t h_rfile_size(cn_drive_rfile *ff)
{
	hrfile *f = (hrfile *)(void *)ff;
	return f->d->in->ops->rfile_size(f->in);
}
static void h_rfile_close(cn_drive_rfile *ff)
{
	hrfile *f = (hrfile *)(void *)ff;
	if (!f)
		return;
	f->d->in->ops->rfile_close(f->in);
	free(f);
}

static cn_err h_walk(cn_drive *dd, const char *vol, const char *prefix, const char *after,
                     bool slash_delim, cn_drive_walk_fn fn, void *ctx)
{
	hdrive *d = H(dd);
	CALL_UNTIMED(d, "walk", d->in->ops->walk(d->in, vol, prefix, after, slash_delim, fn, ctx));
}

static cn_err h_version_keep(cn_drive *dd, const char *vol, const char *key, const char *vid)
{
	hdrive *d = H(dd);
	CALL(d, "version_keep", d->in->ops->version_keep(d->in, vol, key, vid));
}
static cn_err h_version_read(cn_drive *dd, const char *vol, const char *key, const char *vid,
                             size_t max, cn_buf *out)
{
	hdrive *d = H(dd);
	CALL_NOWAIT(d, "version_read", d->in->ops->version_read(d->in, vol, key, vid, max, out));
}
static cn_err h_version_list(cn_drive *dd, const char *vol, const char *key, char ***vids, size_t *n)
{
	hdrive *d = H(dd);
	CALL(d, "version_list", d->in->ops->version_list(d->in, vol, key, vids, n));
}
static cn_err h_data_list(cn_drive *dd, const char *vol, const char *key, char ***ids, size_t *n)
{
	hdrive *d = H(dd);
	*ids = NULL;
	*n = 0;
	if (!d->in->ops->data_list)
		return CN_OK;
	CALL(d, "data_list", d->in->ops->data_list(d->in, vol, key, ids, n));
}
static cn_err h_data_keys(cn_drive *dd, const char *vol, const char *prefix, cn_drive_key_fn fn,
                          void *ctx)
{
	hdrive *d = H(dd);
	if (!d->in->ops->data_keys)
		return CN_OK;
	CALL_UNTIMED(d, "data_keys", d->in->ops->data_keys(d->in, vol, prefix, fn, ctx));
}
static cn_err h_version_delete(cn_drive *dd, const char *vol, const char *key, const char *vid)
{
	hdrive *d = H(dd);
	CALL(d, "version_delete", d->in->ops->version_delete(d->in, vol, key, vid));
}
static cn_err h_version_promote(cn_drive *dd, const char *vol, const char *key, const char *vid)
{
	hdrive *d = H(dd);
	CALL(d, "version_promote", d->in->ops->version_promote(d->in, vol, key, vid));
}
static cn_err h_version_write(cn_drive *dd, const char *vol, const char *key, const char *vid,
                              const void *rec, size_t reclen)
{
	hdrive *d = H(dd);
	CALL_WRITE(d, "version_write", d->in->ops->version_write(d->in, vol, key, vid, rec, reclen));
}
static cn_err h_move_data(cn_drive *dd, const char *tmp_id, const char *data_id, const char *vol,
                          const char *key)
{
	hdrive *d = H(dd);
	CALL(d, "move_data", d->in->ops->move_data(d->in, tmp_id, data_id, vol, key));
}
static cn_err h_upload_write(cn_drive *dd, const char *vol, const char *upload_id, const char *name,
                             bool create, const void *p, size_t len)
{
	hdrive *d = H(dd);
	CALL_WRITE(d, "upload_write", d->in->ops->upload_write(d->in, vol, upload_id, name, create, p, len));
}
static cn_err h_upload_read(cn_drive *dd, const char *vol, const char *upload_id, const char *name,
                            size_t max, cn_buf *out)
{
	hdrive *d = H(dd);
	CALL(d, "upload_read", d->in->ops->upload_read(d->in, vol, upload_id, name, max, out));
}
static cn_err h_upload_list(cn_drive *dd, const char *vol, const char *upload_id, char ***names,
                            size_t *n)
{
	hdrive *d = H(dd);
	CALL(d, "upload_list", d->in->ops->upload_list(d->in, vol, upload_id, names, n));
}
static cn_err h_upload_take(cn_drive *dd, const char *tmp_id, const char *data_id, const char *src,
                            const char *vol, const char *upload_id, const char *dst)
{
	hdrive *d = H(dd);
	CALL(d, "upload_take", d->in->ops->upload_take(d->in, tmp_id, data_id, src, vol, upload_id, dst));
}
static cn_err h_upload_link(cn_drive *dd, const char *vol, const char *upload_id, const char *src,
                            const char *tmp_id, const char *data_id, const char *dst)
{
	hdrive *d = H(dd);
	CALL(d, "upload_link", d->in->ops->upload_link(d->in, vol, upload_id, src, tmp_id, data_id, dst));
}
static cn_err h_upload_remove(cn_drive *dd, const char *vol, const char *upload_id)
{
	hdrive *d = H(dd);
	CALL(d, "upload_remove", d->in->ops->upload_remove(d->in, vol, upload_id));
}
static cn_err h_sync(cn_drive *dd)
{
	hdrive *d = H(dd);
	GUARD(d);
	htick t0 = tick_kind(d, true); /* HEALTH-8: not counted late */
	return judge(d, d->in->ops->sync(d->in), t0, "sync");
}
static const void *h_sync_group(cn_drive *dd)
{
	hdrive *d = H(dd);
	return d->in->ops->sync_group ? d->in->ops->sync_group(d->in) : (const void *)d;
}

static const cn_drive_ops health_ops = {
	.close = h_close,
	.info = h_info,
	.online = h_online,
	.reopen = h_reopen,
	.replaced = h_replaced,
	.read_sys = h_read_sys,
	.write_sys = h_write_sys,
	.remove_sys = h_remove_sys,
	.make_vol = h_make_vol,
	.stat_vol = h_stat_vol,
	.delete_vol = h_delete_vol,
	.purge_vol = h_purge_vol,
	.list_vols = h_list_vols,
	.create_file = h_create_file,
	.file_write = h_file_write,
	.file_close = h_file_close,
	.abort_tmp = h_abort_tmp,
	.rename_data = h_rename_data,
	.prev_keep = h_prev_keep,
	.prev_read = h_prev_read,
	.prev_drop = h_prev_drop,
	.read_meta = h_read_meta,
	.delete_meta = h_delete_meta,
	.delete_data = h_delete_data,
	.open_data = h_open_data,
	.rfile_read = h_rfile_read,
	.rfile_fd = h_rfile_fd,
	.rfile_size = h_rfile_size,
	.rfile_close = h_rfile_close,
	.walk = h_walk,
	.version_keep = h_version_keep,
	.version_read = h_version_read,
	.version_list = h_version_list,
	.data_list = h_data_list,
	.data_keys = h_data_keys,
	.version_delete = h_version_delete,
	.version_promote = h_version_promote,
	.version_write = h_version_write,
	.move_data = h_move_data,
	.upload_write = h_upload_write,
	.upload_read = h_upload_read,
	.upload_list = h_upload_list,
	.upload_take = h_upload_take,
	.upload_link = h_upload_link,
	.upload_remove = h_upload_remove,
	.sync = h_sync,
	.sync_group = h_sync_group,
};

/* HEALTH-3: one probe of the inner drive. */
/* HEALTH-6: the longest a tracked call has been running (0: none); HEALTH-8: stores how many calls
 * other than syncs have run longer than late_ms. */
static int64_t oldest_call_ms(hdrive *d)
{
	int64_t now = cn_mono_ms(), oldest = 0;
	int late = 0;
	for (int i = 0; i < INFLIGHT_SLOTS; i++) {
		int64_t t0 = atomic_load(&d->inflight[i].t0);
		if (!t0)
			continue;
		int64_t ran = now - (t0 < 0 ? -t0 : t0);
		if (ran > oldest)
			oldest = ran;
		if (t0 > 0 && d->cfg.late_ms > 0 && ran > d->cfg.late_ms)
			late++;
	}
	atomic_store(&d->late, late);
	if (late < d->cfg.late_cap && atomic_exchange(&d->refusing, false))
		cn_log(CN_LOG_INFO, NULL, "drive %s: its late calls returned; calls reach it again",
		       d->in->endpoint);
	return oldest;
}

static bool probe(hdrive *d)
{
	if (d->cfg.stall_ms > 0 && oldest_call_ms(d) > d->cfg.stall_ms)
		return false; /* HEALTH-6: a call is still hung */
	int64_t t0 = cn_mono_ms();
	cn_drive_info di;
	static const char body[] = "cairn drive probe\n";
	cn_buf b;
	cn_buf_init(&b);
	bool ok = d->in->ops->info(d->in, &di) == CN_OK && di.online &&
	          d->in->ops->write_sys(d->in, "probe", body, sizeof body - 1) == CN_OK &&
	          d->in->ops->read_sys(d->in, "probe", 256, &b) == CN_OK && b.len == sizeof body - 1 &&
	          !memcmp(b.p, body, b.len);
	cn_buf_fini(&b);
	return ok && (d->cfg.stall_ms <= 0 || cn_mono_ms() - t0 <= d->cfg.stall_ms);
}

static void *prober(void *arg)
{
	hdrive *d = arg;
	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		if (!atomic_load(&d->offline)) {
			if (d->cfg.stall_ms <= 0) {
				pthread_cond_wait(&d->cv, &d->mu);
				continue;
			}
			/* HEALTH-6, HEALTH-8: watch the calls in progress */
			int64_t every = d->cfg.stall_ms / 4;
			if (d->cfg.late_ms > 0 && d->cfg.late_ms / 4 < every)
				every = d->cfg.late_ms / 4;
			every = every < 10 ? 10 : every > 1000 ? 1000 : every;
			struct timespec ts;
			cn_deadline_after_ms(every, &ts);
			pthread_cond_timedwait(&d->cv, &d->mu, &ts);
			if (d->stop || atomic_load(&d->offline))
				continue;
			int64_t oldest = oldest_call_ms(d);
			if (oldest > d->cfg.stall_ms) {
				char why[96];
				snprintf(why, sizeof why, "a call has not returned for %lld ms", (long long)oldest);
				pthread_mutex_unlock(&d->mu);
				mark_offline(d, why);
				pthread_mutex_lock(&d->mu);
			}
			continue;
		}
		struct timespec ts;
		cn_deadline_after_ms(d->cfg.probe_ms, &ts);
		pthread_cond_timedwait(&d->cv, &d->mu, &ts);
		if (d->stop)
			break;
		pthread_mutex_unlock(&d->mu);
		bool back = !atomic_load(&d->refused) && probe(d); /* HEALTH-5: no probe writes there */
		pthread_mutex_lock(&d->mu);
		if (back && atomic_exchange(&d->offline, false))
			cn_log(CN_LOG_INFO, NULL, "drive %s: back online (probe passed)", d->in->endpoint);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

cn_err cn_drive_health_wrap(cn_drive *inner, const cn_drive_health_cfg *cfg, cn_drive **out)
{
	hdrive *d = calloc(1, sizeof *d);
	if (!d)
		return CN_ERR_NOMEM;
	d->base.ops = &health_ops;
	snprintf(d->base.endpoint, sizeof d->base.endpoint, "%s", inner->endpoint);
	d->base.writes_sync = inner->writes_sync;
	d->in = inner;
	d->cfg.stall_ms = cfg && cfg->stall_ms ? cfg->stall_ms : 30000;
	d->cfg.probe_ms = cfg && cfg->probe_ms > 0 ? cfg->probe_ms : 5000;
	d->cfg.late_ms = cfg && cfg->late_ms ? cfg->late_ms : d->cfg.stall_ms / 10;
	if (d->cfg.late_ms == 0)
		d->cfg.late_ms = 1; /* stall limits under 10 ms */
	if (d->cfg.stall_ms < 0)
		d->cfg.late_ms = -1; /* no stall limit, no HEALTH-8 either */
	d->cfg.late_cap = cfg && cfg->late_cap > 0 ? cfg->late_cap : 4;
	atomic_init(&d->offline, false);
	atomic_init(&d->refused, false);
	atomic_init(&d->outages, 0);
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->started = cn_thread_create(&d->prober, NULL, prober, d) == 0;
	*out = &d->base;
	return CN_OK;
}

void cn_drive_health_refuse(cn_drive *d, bool refuse)
{
	if (d && d->ops == &health_ops)
		atomic_store(&H(d)->refused, refuse);
}

bool cn_drive_health_refused(cn_drive *d)
{
	return d && d->ops == &health_ops && atomic_load(&H(d)->refused);
}

void cn_drive_health_set_offline(cn_drive *d, const char *why)
{
	if (d && d->ops == &health_ops)
		mark_offline(H(d), why);
}

bool cn_drive_health_offline(cn_drive *d)
{
	return d && d->ops == &health_ops && atomic_load(&H(d)->offline);
}
