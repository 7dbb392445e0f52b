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

static void check_drives(cn_obj_store *s)
{
	size_t total = cn_obj__total_drives(s), nnew = 0, nback = 0;
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
				if (s->mon_suspended[at]) {
					/* suspended for a foreign format: until another folder is at its path,
					 * nothing (then switch, and judge that one's format as below) */
					if (!cn_ec_set_replaced(set, d) || cn_ec_set_reopen(set, d) != CN_OK) {
						cn_buf_fini(&b);
						continue;
					}
					moved = true;
					re = cn_obj__format_read(set, d, &b); /* read while suspended */
					if (re == CN_OK && cn_obj__format_check(s, set, p, k, d, &b, false)) {
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
					re = online ? cn_obj__format_read(set, d, &b) : CN_ERR_OFFLINE;
					/* another folder at the drive's path while the old one lives (moved away,
					 * a new disk mounted after the old one was detached): switch to it, and
					 * take it as a drive that came back (formatted when empty, healed) */
					moved = re == CN_OK && cn_ec_set_replaced(set, d);
					if (re == CN_ERR_OFFLINE || re == CN_ERR_NOT_FOUND || moved) {
						if (cn_ec_set_reopen(set, d) == CN_OK) {
							b.len = 0;
							re = cn_obj__format_read(set, d, &b);
						} else {
							moved = false; /* still the old folder: the next check tries again */
						}
					}
				}
				if (re == CN_OK && cn_obj__format_check(s, set, p, k, d, &b, false)) {
					/* another slot's or deployment's drive: no request may read or write it
					 * (at start such a slot is refused for good; here the drive stays, so
					 * that a folder put in its place is seen) */
					cn_obj__suspend_slot(s, set, d, at);
					cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu) now holds "
					       "a format record that is not this slot's: suspended (requests skip it) "
					       "until another folder is put at its path, or refused at the next start",
					       cn_ec_set_endpoint(set, d), p, k, d);
					cn_buf_fini(&b);
					continue;
				}
				bool formatted = false;
				if (re == CN_ERR_NOT_FOUND && cn_obj__looks_unmounted(set, d)) {
					cn_obj__suspend_unmounted(s, set, p, k, d, at);
					cn_buf_fini(&b);
					continue;
				}
				if (re == CN_ERR_NOT_FOUND) {
					cn_err we = cn_obj__format_write(s, set, p, k, d);
					if (!we && s->cfg.durable)
						we = cn_ec_sync(set);
					if (!we)
						we = cn_obj__format_check(s, set, p, k, d, &b, true);
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
			cn_obj__restore_buckets(s, is_new);
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
