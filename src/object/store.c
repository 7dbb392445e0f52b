/* store.c: the store's life. Open checks the topology, opens every drive (behind the
 * health wrapper when its set has several drives: HEALTH-1, HEALTH-6), makes the erasure sets
 * and sizes their record caches, formats the drives (format.c), makes the buckets whole
 * (EC-9), then starts the background tasks: the stale-upload janitor (multipart.c), the
 * healer (heal.c) and the drive monitor (monitor.c); close stops them in reverse order
 * before the sets go. Also the durability barrier of every set (OBJ-3). */
#include "object/object_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#define MAX_SETS 4096

/* MinIO's default STANDARD parity for a set of n drives (the same table as
 * cn_layout_default_parity in cluster/layout.h, which the object layer may not include):
 * 1 -> 0, 2-3 -> 1, 4-5 -> 2, 6-7 -> 3, 8 and more -> 4. */
static unsigned default_parity(size_t n)
{
	return n <= 1 ? 0 : n < 4 ? 1 : n < 6 ? 2 : n < 8 ? 3 : 4;
}

/* The record caches' budget for the whole store, shared evenly by its sets: 1/64 of the
 * machine's memory, at least 64 MiB and at most 1 GiB (24 GiB -> 384 MiB); the hot set of
 * 64 KiB objects needs ~66 KiB per object (K records of a 64 KiB / K share), so 64 MiB holds
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
	if (!t || !t->pools || t->npools == 0 || t->npools > OBJ_MAX_POOLS) {
		cn_log(CN_LOG_ERROR, NULL, "object: a topology needs 1 to %d pools", OBJ_MAX_POOLS);
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

/* Drive folder `path` of a set of set_size drives, opened into *dv: behind the health
 * wrapper when the set has several (errors and stalls take it offline, drive.h). One that
 * cannot be opened is, in such a set, an offline placeholder that the drive monitor takes
 * in once a folder is at its path (*dv NULL otherwise). Returns why it cannot be opened. */
static cn_err open_drive(const char *path, size_t set_size, const cn_obj_config *cfg,
                         cn_drive **dv)
{
	cn_drive *local = NULL;
	cn_err e = cn_drive_local_open(path, cfg->durable, &local);
	if (!e && set_size == 1) {
		/* one drive: nothing to skip to, so no health gate (an odd file's
		 * I/O error must not take the whole store offline) */
		*dv = local;
	} else if (!e) { /* errors and stalls take it offline (drive.h) */
		cn_drive_health_cfg hc = { .stall_ms = cfg->drive_max_timeout_ms };
		if ((e = cn_drive_health_wrap(local, &hc, dv)))
			cn_drive_close(local);
	}
	if (e) {
		*dv = NULL;
		/* several drives: the slot holds the drive offline on a placeholder,
		 * and the drive monitor takes it in once a folder is at its path */
		cn_drive *absent = NULL, *wrapped = NULL;
		cn_drive_health_cfg hc = { .stall_ms = cfg->drive_max_timeout_ms };
		if (set_size > 1 && cn_drive_local_open_absent(path, cfg->durable, &absent) == CN_OK) {
			if (cn_drive_health_wrap(absent, &hc, &wrapped) == CN_OK) {
				cn_drive_health_set_offline(wrapped, "it cannot be opened");
				*dv = wrapped;
			} else {
				cn_drive_close(absent);
			}
		}
	}
	return e;
}

/* Every pool's sets made over their drives, in order (open_err[at]: why drive `at` cannot
 * be opened). Errors: cn_ec_set_new's (the sets made so far stay in s, for close). */
static cn_err open_sets(cn_obj_store *s, const cn_obj_topology *t, const cn_obj_config *cfg,
                        cn_err *open_err)
{
	cn_err e = CN_OK;
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
				open_err[at] = open_drive(path, ps->set_size, cfg, &dv[d]);
				if (open_err[at])
					cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu) cannot "
					       "be opened (%s): offline%s", path, p, k, d, cn_err_str(open_err[at]),
					       dv[d] ? "; looked at again every few seconds" : "");
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
	return e;
}

/* A store without sets yet: the configuration with its defaults, the locks made. */
static cn_obj_store *store_new(const cn_obj_config *cfg)
{
	cn_obj_store *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->cfg = *cfg;
	if (s->cfg.inline_max < 0)
		s->cfg.inline_max = 128 * 1024;
	if (s->cfg.inline_max > (int64_t)OBJ_IO_BUF - 1)
		s->cfg.inline_max = OBJ_IO_BUF - 1; /* an inline body must fit the first read buffer */
	pthread_rwlock_init(&s->ns_lock, NULL);
	pthread_mutex_init(&s->vs_mu, NULL);
	cn_obj__key_locks_init(s);
	return s;
}

cn_err cn_obj_store_open_topology(const cn_obj_topology *t, const cn_obj_config *cfg,
                                  cn_obj_store **out)
{
	cn_err e = topology_check(t);
	if (e)
		return e;
	cn_obj_store *s = store_new(cfg);
	if (!s)
		return CN_ERR_NOMEM;
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
	e = open_sets(s, t, cfg, open_err);
	size_t cache = record_cache_budget();
	for (size_t i = 0; i < s->nsets && !e; i++) {
		e = cn_ec_set_cache(s->sets[i], cache / s->nsets);
		cn_ec_set_split_wait(s->sets[i], cn_obj__split_wait, s);
	}
	if (!e) {
		cn_obj__monitor_alloc(s);
		e = cn_obj__format_all(s, open_err);
	}
	free(open_err);
	if (e) {
		cn_obj_store_close(s);
		return e;
	}
	cn_obj__heal_buckets(s); /* drives that were offline when buckets were made (EC-9) */
	s->ready = true;
	cn_obj__janitor_start(s);
	cn_obj__heal_start(s);
	if (s->heal_at_start) /* a drive formatted into its slot: fill it now, not in 24 h */
		cn_obj__heal_scan_now(s);
	cn_obj__monitor_start(s);
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
	cn_obj__monitor_stop(s);
	cn_obj__heal_stop(s);
	cn_obj__janitor_stop(s);
	for (size_t i = 0; i < s->nsets; i++)
		cn_ec_set_free(s->sets[i]);
	free(s->sets);
	free(s->pools);
	pthread_rwlock_destroy(&s->ns_lock);
	pthread_mutex_destroy(&s->vs_mu);
	cn_obj__key_locks_fini(s);
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
