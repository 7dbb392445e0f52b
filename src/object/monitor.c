/* monitor.c: the drive monitor — drives that come back. Every drive_check_ms, each slot
 * of a multi-drive set that answers "offline" or has no format record, or whose path names
 * another folder now (drive replaced), is looked at again (drive reopen: the folder
 * removed and made again, wiped in place, or replaced). One that is there and empty is
 * formatted into its slot, gets the buckets, and a heal scan starts at once, as at start
 * (format.c). A drive that now holds another slot's or deployment's format is suspended
 * (cn_ec_set_suspend: requests skip it; its pointer stays, since requests use it without a
 * lock) and logged, until another folder is at its path. */
#include "object/object_int.h"

#include <pthread.h>
#include <stdlib.h>

void cn_obj__suspend_slot(cn_obj_store *s, cn_ec_set *set, size_t d, size_t at)
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

/* One slot being looked at: its set, its place (pool p, set k of the pool, drive d) and
 * its number over the store (at). */
typedef struct mon_slot {
	cn_ec_set *set;
	size_t p, k, d, at;
} mon_slot;

/* What one check found: drives formatted into their slots (is_new[at]), drives back. */
typedef struct mon_pass {
	bool *is_new;
	size_t nnew, nback;
} mon_pass;

/* A slot suspended for a foreign format: nothing until another folder is at its path; then
 * the monitor switches to it and reads its format record into b (*re), judged as any
 * other's by the caller. False: still suspended (no other folder, or one whose record is
 * not this slot's either). */
static bool resume_suspended(cn_obj_store *s, const mon_slot *sl, cn_buf *b, cn_err *re,
                             cn_drive_info *di)
{
	cn_ec_set *set = sl->set;
	size_t d = sl->d;
	if (!cn_ec_set_replaced(set, d) || cn_ec_set_reopen(set, d) != CN_OK)
		return false;
	*re = cn_obj__format_read(set, d, b); /* read while suspended */
	if (*re == CN_OK && cn_obj__format_check(s, set, sl->p, sl->k, d, b, false)) {
		cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu): the "
		       "folder now at its path holds a format record that is not this slot's "
		       "either: still suspended", cn_ec_set_endpoint(set, d), sl->p, sl->k, d);
		return false;
	}
	cn_ec_set_suspend(set, d, false);
	s->mon_suspended[sl->at] = false;
	cn_log(CN_LOG_WARN, NULL, "object: drive %s (pool %zu set %zu slot %zu): another "
	       "folder is in place of the suspended one: back in service",
	       cn_ec_set_endpoint(set, d), sl->p, sl->k, d);
	cn_ec_set_drive_info(set, d, di);
	return true;
}

/* Drive d's format record read into b (*re; CN_ERR_OFFLINE when the drive is offline),
 * after a reopen when it was offline, had no record, or another folder is at its path.
 * Returns whether the drive is now another folder. */
static bool read_slot_format(cn_ec_set *set, size_t d, cn_buf *b, cn_err *re,
                             cn_drive_info *di)
{
	bool online = cn_ec_set_drive_info(set, d, di) == CN_OK && di->online;
	*re = online ? cn_obj__format_read(set, d, b) : CN_ERR_OFFLINE;
	/* another folder at the drive's path while the old one lives (moved away, a new disk
	 * mounted after the old one was detached): switch to it, and take it as a drive that
	 * came back (formatted when empty, healed) */
	bool moved = *re == CN_OK && cn_ec_set_replaced(set, d);
	if (*re == CN_ERR_OFFLINE || *re == CN_ERR_NOT_FOUND || moved) {
		if (cn_ec_set_reopen(set, d) == CN_OK) {
			b->len = 0;
			*re = cn_obj__format_read(set, d, b);
		} else {
			moved = false; /* still the old folder: the next check tries again */
		}
	}
	return moved;
}

/* A drive back and empty, formatted into its slot (synced, read back as this slot's):
 * whether it is. */
static bool format_back(cn_obj_store *s, const mon_slot *sl, cn_buf *b)
{
	cn_ec_set *set = sl->set;
	cn_err we = cn_obj__format_write(s, set, sl->p, sl->k, sl->d);
	if (!we && s->cfg.durable)
		we = cn_ec_sync(set);
	if (!we)
		we = cn_obj__format_check(s, set, sl->p, sl->k, sl->d, b, true);
	if (we) {
		cn_log(CN_LOG_ERROR, NULL, "object: drive %s is back but empty and cannot be "
		       "formatted into pool %zu set %zu slot %zu: %s",
		       cn_ec_set_endpoint(set, sl->d), sl->p, sl->k, sl->d, cn_err_str(we));
		return false;
	}
	cn_log(CN_LOG_WARN, NULL, "drive %s is back and was empty: formatted into "
	       "pool %zu set %zu slot %zu (it will be healed)",
	       cn_ec_set_endpoint(set, sl->d), sl->p, sl->k, sl->d);
	return true;
}

/* One slot of a multi-drive set: its drive read again, suspended when it belongs
 * elsewhere, formatted when empty, counted when back. */
static void check_slot(cn_obj_store *s, const mon_slot *sl, mon_pass *ps)
{
	cn_ec_set *set = sl->set;
	size_t d = sl->d, at = sl->at;
	cn_drive_info di;
	cn_buf b;
	cn_buf_init(&b);
	cn_err re;
	bool moved = true;
	if (s->mon_suspended[at]) {
		if (!resume_suspended(s, sl, &b, &re, &di))
			goto out;
	} else {
		moved = read_slot_format(set, d, &b, &re, &di);
	}
	if (re == CN_OK && cn_obj__format_check(s, set, sl->p, sl->k, d, &b, false)) {
		/* another slot's or deployment's drive: no request may read or write it
		 * (at start such a slot is refused for good; here the drive stays, so
		 * that a folder put in its place is seen) */
		cn_obj__suspend_slot(s, set, d, at);
		cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu) now holds "
		       "a format record that is not this slot's: suspended (requests skip it) "
		       "until another folder is put at its path, or refused at the next start",
		       cn_ec_set_endpoint(set, d), sl->p, sl->k, d);
		goto out;
	}
	if (re == CN_ERR_NOT_FOUND && cn_obj__looks_unmounted(set, d)) {
		cn_obj__suspend_unmounted(s, set, sl->p, sl->k, d, at);
		goto out;
	}
	bool formatted = false;
	if (re == CN_ERR_NOT_FOUND) {
		formatted = format_back(s, sl, &b);
		if (formatted) {
			ps->is_new[at] = true;
			ps->nnew++;
		}
	} else if (re == CN_OK && (s->mon_offline[at] || moved ||
	                           di.outages != s->mon_outages[at])) {
		/* back from offline, or away and back between two checks (an outage
		 * counted meanwhile): it may lack buckets made meanwhile (EC-9) */
		ps->nback++;
	}
	/* formatted now: in service (a later check must not take it for a return
	 * and heal it again) */
	s->mon_offline[at] = re != CN_OK && !formatted;
	s->mon_outages[at] = di.outages;
out:
	cn_buf_fini(&b);
}

static void check_drives(cn_obj_store *s)
{
	size_t total = cn_obj__total_drives(s);
	mon_pass ps = { .is_new = calloc(total ? total : 1, sizeof *ps.is_new) };
	if (!ps.is_new)
		return;
	for (size_t p = 0, i = 0, at = 0; p < s->npools; p++) {
		for (size_t k = 0; k < s->pools[p].nsets; k++, i++) {
			cn_ec_set *set = s->sets[i];
			size_t n = cn_ec_set_ndrives(set);
			for (size_t d = 0; d < n; d++, at++)
				if (n >= 2 && cn_ec_set_endpoint(set, d))
					check_slot(s, &(mon_slot){ set, p, k, d, at }, &ps);
		}
	}
	if (ps.nnew || ps.nback) {
		pthread_rwlock_wrlock(&s->ns_lock); /* OBJ-5: no bucket created or deleted meanwhile */
		if (ps.nnew)
			cn_obj__restore_buckets(s, ps.is_new);
		cn_obj__heal_buckets(s);
		pthread_rwlock_unlock(&s->ns_lock);
		cn_obj__heal_scan_now(s);
	}
	free(ps.is_new);
}

static void monitor_run(void *arg)
{
	check_drives(arg);
}

void cn_obj__monitor_alloc(cn_obj_store *s)
{
	size_t total = cn_obj__total_drives(s);
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

void cn_obj__monitor_start(cn_obj_store *s)
{
	if (s->mon_suspended)
		cn_periodic_start(&s->monitor, s->cfg.drive_check_ms > 0 ? s->cfg.drive_check_ms : 5000,
		                  monitor_run, s);
}

void cn_obj__monitor_stop(cn_obj_store *s)
{
	cn_periodic_stop(&s->monitor);
	free(s->mon_suspended);
	s->mon_suspended = NULL;
	free(s->mon_offline);
	s->mon_offline = NULL;
	free(s->mon_outages);
	s->mon_outages = NULL;
}
