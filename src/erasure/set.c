/* erasure/set: one erasure set over the drive API (erasure.h): its lifecycle, its drive
 * slots (online, suspended, reopened), system files and the durability barrier (cn_ec_sync).
 *
 * Two shapes share the set's files:
 *  - Plain (one drive, K=1 M=0): the object's bytes are the one shard, stored verbatim as
 *    "<data id>/part.N" or inline in the record; zero-copy sends read the file directly.
 *  - Coded (n >= 2 drives, K = n - M data shards, M parity): every part is cut into
 *    CN_EC_BLOCK_SIZE blocks; each block into K data shards of ceil(len/K) bytes plus M
 *    parity shards (ISA-L Reed-Solomon, codec.h). Drive slot d holds shard dist[d] of
 *    every block (the object's rotation, MinIO's hashOrder of bucket/key) in its file
 *    "<data id>/part.N" as a sequence of [XXH3-128 hash (16 bytes)][shard bytes] per block
 *    (docs/FORMAT.md §7); an inline object keeps the same stream in each drive's record.
 *
 * The set's files, and the invariants each enforces (erasure_int.h holds what they share):
 *  set.c        the set, its drive slots, system files, sync
 *  vols.c       buckets (vols) on the drives: EC-9, EC-11
 *  write.c      the writer (PUT), commits, inline commits, deletes: EC-1, EC-14
 *  quorum.c     per-drive answers to one verdict; record reads with quorum: EC-2, EC-7, EC-12,
 *               EC-13, EC-15, EC-16
 *  read.c       the reader (GET): plain files, coded blocks verified and rebuilt: EC-3, EC-4
 *  heal.c       rebuilding a version's missing or damaged shards and records
 *  versions.c   noncurrent versions, previous records, metadata rewrites, name lists: EC-8
 *  dangling.c   orphaned data folders and versions no read can return: EC-10
 *  multipart.c  multipart uploads' records and their commit
 *  walk.c       listings: one drive's walk, or several merged: EC-5, EC-6 */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdlib.h>
#include <string.h>

cn_err cn_ec_set_new(cn_drive **drives, size_t ndrives, unsigned parity, unsigned parity_rrs,
                     cn_ec_set **out)
{
	if (ndrives < 1 || ndrives > CN_EC_MAX_DRIVES)
		return CN_ERR_INVALID;
	if (ndrives == 1 && (parity || parity_rrs))
		return CN_ERR_INVALID;
	if (ndrives > 1 && (parity < 1 || parity > ndrives / 2 || parity_rrs < 1 || parity_rrs > ndrives / 2))
		return CN_ERR_INVALID;
	cn_ec_set *s = calloc(1, sizeof *s);
	if (!s)
		return CN_ERR_NOMEM;
	memcpy(s->drives, drives, ndrives * sizeof *drives);
	s->n = ndrives;
	s->m = (int)parity;
	s->k = (int)(ndrives - parity);
	s->m_rrs = (int)parity_rrs;
	cn_err e = CN_OK;
	if (ndrives > 1) {
		e = cn_codec_new((unsigned)s->k, parity, &s->codec);
		if (!e && parity_rrs != parity)
			e = cn_codec_new((unsigned)(ndrives - parity_rrs), parity_rrs, &s->codec_rrs);
	}
	if (!e)
		e = cn_ec_set_cache(s, (size_t)64 << 20);
	if (e) {
		cn_rcache_free(s->rc);
		cn_codec_free(s->codec);
		cn_codec_free(s->codec_rrs);
		free(s);
		return e;
	}
	/* Measuring degraded reads (docs/PERF.md): reads (records and shards) act as if the
	 * first N slots' drives were gone, writes still reach every drive. */
	const char *skip = getenv("CAIRN_DEBUG_READ_OFFLINE_SLOTS");
	if (skip && ndrives > 1) {
		s->read_skip = (size_t)strtoul(skip, NULL, 10);
		if (s->read_skip > parity)
			s->read_skip = parity;
		cn_log(CN_LOG_WARN, NULL, "erasure: CAIRN_DEBUG_READ_OFFLINE_SLOTS: reads skip %zu drive(s) "
		       "of every set (benchmarking degraded reads)", s->read_skip);
	}
	*out = s;
	return CN_OK;
}

cn_err cn_ec_set_cache(cn_ec_set *s, size_t budget_bytes)
{
	cn_rcache_free(s->rc);
	s->rc = NULL;
	return cn_rcache_new(budget_bytes, 160 * 1024, &s->rc); /* records up to 160 KiB */
}

void cn_ec_set_split_wait(cn_ec_set *s, cn_ec_split_wait_fn fn, void *ctx)
{
	s->split_wait = fn;
	s->split_ctx = ctx;
}

void cn_ec_set_cache_stats(cn_ec_set *s, cn_ec_cache_stats *out)
{
	memset(out, 0, sizeof *out);
	cn_rcache_stats(s->rc, &out->hits, &out->misses, &out->bytes);
	out->budget = cn_rcache_budget(s->rc);
}

void cn_ec_set_free(cn_ec_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		cn_drive_close(s->drives[i]);
	cn_rcache_free(s->rc);
	cn_codec_free(s->codec);
	cn_codec_free(s->codec_rrs);
	free(s);
}

size_t cn_ec_set_ndrives(const cn_ec_set *s) { return s->n; }

void cn_ec_set_refuse(cn_ec_set *s, size_t i)
{
	CN_ASSERT(i < s->n);
	cn_drive_close(s->drives[i]);
	s->drives[i] = NULL;
}

const char *cn_ec_set_endpoint(const cn_ec_set *s, size_t i)
{
	return i < s->n && s->drives[i] ? s->drives[i]->endpoint : NULL;
}

/* Whether slot i's drive is there (its folder exists, the health wrapper holds it online). */
bool cn_ec__drive_online(cn_ec_set *s, size_t i)
{
	cn_drive *dr = D(s, i);
	if (!dr)
		return false;
	if (dr->ops->online)
		return dr->ops->online(dr);
	cn_drive_info di;
	return dr->ops->info(dr, &di) == CN_OK && di.online;
}

uint64_t cn_ec_set_free_bytes(cn_ec_set *s)
{
	uint64_t best = UINT64_MAX;
	for (size_t i = 0; i < s->n; i++) {
		cn_drive_info di;
		if (D(s, i) && D(s, i)->ops->info(D(s, i), &di) == CN_OK && di.online && di.free < best)
			best = di.free;
	}
	return best == UINT64_MAX ? 0 : best * (uint64_t)s->k;
}

void cn_ec_set_parity(const cn_ec_set *s, unsigned *standard, unsigned *rrs)
{
	*standard = (unsigned)s->m;
	*rrs = (unsigned)s->m_rrs;
}

cn_err cn_ec_set_drive_info(cn_ec_set *s, size_t i, cn_drive_info *out)
{
	memset(out, 0, sizeof *out);
	if (i >= s->n || !D(s, i))
		return CN_ERR_OFFLINE;
	return D(s, i)->ops->info(D(s, i), out);
}

cn_err cn_ec_set_reopen(cn_ec_set *s, size_t i)
{
	if (i >= s->n || !D(s, i) || !D(s, i)->ops->reopen)
		return CN_ERR_OFFLINE;
	cn_err e = D(s, i)->ops->reopen(D(s, i));
	cn_rcache_clear(s->rc); /* the drive's records may all have changed */
	return e;
}

bool cn_ec_set_replaced(cn_ec_set *s, size_t i)
{
	return i < s->n && D(s, i) && D(s, i)->ops->replaced && D(s, i)->ops->replaced(D(s, i));
}

void cn_ec_set_suspend(cn_ec_set *s, size_t i, bool suspend)
{
	if (i < s->n && D(s, i)) {
		cn_drive_health_refuse(D(s, i), suspend);
		cn_rcache_clear(s->rc); /* records read from it must not be served */
	}
}

bool cn_ec_set_suspended(cn_ec_set *s, size_t i)
{
	return i < s->n && cn_drive_health_refused(D(s, i));
}

bool cn_ec_set_online(cn_ec_set *s)
{
	size_t ok = 0;
	for (size_t i = 0; i < s->n; i++)
		ok += cn_ec__drive_online(s, i);
	return ok >= read_quorum(s);
}

/* System files (format, config): one drive's, or every drive's with write quorum. */
cn_err cn_ec_read_sys(cn_ec_set *s, size_t drive, const char *name, size_t max, cn_buf *out)
{
	CN_ASSERT(drive < s->n);
	if (!D(s, drive))
		return CN_ERR_OFFLINE;
	return D(s, drive)->ops->read_sys(D(s, drive), name, max, out);
}

cn_err cn_ec_write_sys(cn_ec_set *s, size_t drive, const char *name, const void *p, size_t len)
{
	CN_ASSERT(drive < s->n);
	if (!D(s, drive))
		return CN_ERR_OFFLINE;
	return D(s, drive)->ops->write_sys(D(s, drive), name, p, len);
}

cn_err cn_ec_write_sys_all(cn_ec_set *s, const char *name, const void *p, size_t len)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->write_sys(D(s, i), name, p, len) : CN_ERR_OFFLINE;
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_remove_sys_all(cn_ec_set *s, const char *name)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = D(s, i) ? D(s, i)->ops->remove_sys(D(s, i), name) : CN_ERR_OFFLINE;
		if (errs[i] == CN_ERR_NOT_FOUND)
			errs[i] = CN_OK;
	}
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_sync(cn_ec_set *s)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	const void *tok[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		tok[i] = D(s, i) && D(s, i)->ops->sync_group ? D(s, i)->ops->sync_group(D(s, i)) : NULL;
		/* a drive whose flush an earlier one shared: its verdict — unless that one was
		 * offline (it flushed nothing; taking its OFFLINE would fail every drive sharing
		 * the filesystem, and so every write, with 503) */
		size_t j = 0;
		while (j < i && !(tok[i] && tok[j] == tok[i] && D(s, j) && errs[j] != CN_ERR_OFFLINE))
			j++;
		if (!D(s, i))
			errs[i] = CN_ERR_OFFLINE;
		else if (j < i)
			errs[i] = errs[j];
		else
			errs[i] = cn_drive_sync(D(s, i));
	}
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}
