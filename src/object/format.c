/* format.c: each drive's format record (docs/FORMAT.md §1): the deployment's id, the
 * drive's slot (pool, set, drive) and the deployment's layout. At open, every drive's record
 * is read; the deployment is the id most formatted drives carry (a new one when none is);
 * a drive whose record names another slot or deployment is refused; an empty drive is
 * formatted into its slot, unless it looks like the mount point of a disk that is not
 * mounted; what was written must read back as its own slot; and every set needs quorum.
 * The drive monitor (monitor.c) formats a drive that comes back empty the same way. */
#include "object/object_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_VERSION 2 /* 2: current records beside key folders (FORMAT.md §3) */
#define FORMAT_MAX 4096

/* One drive's format record (docs/FORMAT.md §1), parsed. */
typedef struct fmt {
	int version, pools, sets, per_set, pool, set, drive;
	char dep[33];
	char layout[512];   /* "" when the record has no layout line (then not compared) */
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

cn_err cn_obj__format_write(cn_obj_store *s, cn_ec_set *set, size_t pool, size_t idx,
                            size_t slot)
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

cn_err cn_obj__format_read(cn_ec_set *set, size_t d, cn_buf *b)
{
	return cn_ec_read_sys(set, d, "format", FORMAT_MAX, b);
}

/* Slot (p, k, d)'s format record: read (unless b already holds it), parsed into *f and
 * checked against the slot; CN_ERR_INVALID when it names another slot or deployment. */
static cn_err format_check(cn_obj_store *s, cn_ec_set *set, size_t p, size_t k, size_t d,
                           cn_buf *b, bool read, fmt *f)
{
	char why[700];
	if (read) {
		b->len = 0;
		cn_err e = cn_obj__format_read(set, d, b);
		if (e)
			return e;
	}
	if (format_parse(b, f) || format_mismatch(s, f, p, k, d, why, sizeof why))
		return CN_ERR_INVALID;
	return CN_OK;
}

cn_err cn_obj__format_check(cn_obj_store *s, cn_ec_set *set, size_t p, size_t k, size_t d,
                            cn_buf *b, bool read)
{
	fmt f;
	return format_check(s, set, p, k, d, b, read, &f);
}

/* Unmounted: an empty drive on the filesystem that holds the set's other drives' mount
 * points, and sharing it with none of them: a disk that is not mounted, its mount point a
 * folder of the parent filesystem (formatting it would put the slot's data there). Drives
 * that are all folders of one filesystem (a laptop, the tests) never look so. */
bool cn_obj__looks_unmounted(cn_ec_set *set, size_t d)
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

void cn_obj__suspend_unmounted(cn_obj_store *s, cn_ec_set *set, size_t p, size_t k, size_t d,
                               size_t at)
{
	cn_log(CN_LOG_ERROR, NULL, "object: drive %s (pool %zu set %zu slot %zu) is empty and lies on "
	       "the filesystem that holds the other drives' mount points: its disk is not mounted? "
	       "Not formatted; %s", cn_ec_set_endpoint(set, d), p, k, d,
	       s->mon_suspended ? "suspended until a disk is mounted there" : "refused");
	cn_obj__suspend_slot(s, set, d, at);
}

/* What the format steps know of each drive, by its number over the store ("at"). */
typedef struct fmt_scan {
	size_t total;
	fmt *f;               /* its record, when F_OK */
	unsigned char *state; /* F_OFFLINE (held offline), F_NONE (no record), F_OK, F_BAD
	                         (refused or suspended) */
	cn_err *why_err;      /* why it is not usable: the answer when its set lacks quorum */
	bool *is_new;         /* formatted into its slot by this open */
	size_t formatted;     /* drives that held a valid record */
	size_t written;       /* records written by this open */
	bool fresh;           /* no drive held one: a new deployment */
} fmt_scan;

/* Step 1: drive d of set (number at) read and parsed; an unreadable record refuses it. */
static void read_format(fmt_scan *sc, cn_ec_set *set, size_t d, size_t at, cn_err open_err)
{
	sc->why_err[at] = open_err;
	if (open_err || !cn_ec_set_endpoint(set, d)) { /* held offline */
		sc->state[at] = F_OFFLINE;
		return;
	}
	cn_buf b;
	cn_buf_init(&b);
	cn_err re = cn_obj__format_read(set, d, &b);
	if (re == CN_ERR_NOT_FOUND) {
		sc->state[at] = F_NONE;
	} else if (re == CN_OK && format_parse(&b, &sc->f[at]) == CN_OK) {
		sc->state[at] = F_OK;
		sc->formatted++;
	} else {
		sc->state[at] = F_BAD;
		sc->why_err[at] = re == CN_OK || re == CN_ERR_TOO_LARGE ? CN_ERR_CORRUPT : re;
		const char *why = re == CN_OK || re == CN_ERR_TOO_LARGE
		                          ? "unreadable or of an unknown version"
		                          : "not readable";
		if (re == CN_OK && sc->f[at].version == 1)
			why = "of version 1, written by an earlier cairn whose key layout this "
			      "one does not read (docs/FORMAT.md)";
		cn_log(CN_LOG_ERROR, NULL, "object: drive %s refused: its format record is "
		       "%s (%s)", cn_ec_set_endpoint(set, d), why, cn_err_str(sc->why_err[at]));
		cn_ec_set_refuse(set, d);
	}
	cn_buf_fini(&b);
}

/* Step 2: the deployment is the id most formatted drives carry (a new one when none is). */
static void choose_deployment(cn_obj_store *s, fmt_scan *sc)
{
	sc->fresh = sc->formatted == 0;
	if (sc->fresh) {
		cn_drive_random_id(s->deployment);
	} else {
		size_t best = 0;
		for (size_t a = 0; a < sc->total; a++) {
			if (sc->state[a] != F_OK)
				continue;
			size_t votes = 0;
			for (size_t b2 = 0; b2 < sc->total; b2++)
				votes += sc->state[b2] == F_OK && !strcmp(sc->f[a].dep, sc->f[b2].dep);
			if (votes > best) {
				best = votes;
				memcpy(s->deployment, sc->f[a].dep, 33);
			}
		}
	}
	CN_ASSERT(cn_hex_decode((cn_str){ s->deployment, 32 }, s->dep_key, 16) == CN_OK);
}

/* Step 3: the formatted drives checked against their slots (refused when they belong
 * elsewhere), the empty ones formatted (suspended when they look unmounted). */
static void check_and_format(cn_obj_store *s, fmt_scan *sc)
{
	size_t at = 0;
	for (size_t p = 0, i = 0; p < s->npools; p++) {
		for (size_t k = 0; k < s->pools[p].nsets; k++, i++) {
			cn_ec_set *set = s->sets[i];
			for (size_t d = 0; d < cn_ec_set_ndrives(set); d++, at++) {
				char why[700];
				const char *ep = cn_ec_set_endpoint(set, d);
				if (sc->state[at] == F_OK &&
				    format_mismatch(s, &sc->f[at], p, k, d, why, sizeof why)) {
					cn_log(CN_LOG_ERROR, NULL, "object: drive %s refused for pool %zu set %zu slot "
					       "%zu: %s", ep, p, k, d, why);
					sc->why_err[at] = CN_ERR_INVALID;
					sc->state[at] = F_BAD;
					cn_ec_set_refuse(set, d);
				} else if (sc->state[at] == F_NONE && cn_obj__looks_unmounted(set, d)) {
					cn_obj__suspend_unmounted(s, set, p, k, d, at);
					sc->why_err[at] = CN_ERR_OFFLINE;
					sc->state[at] = F_BAD;
				} else if (sc->state[at] == F_NONE) {
					cn_err we = cn_obj__format_write(s, set, p, k, d);
					if (we) {
						cn_log(CN_LOG_ERROR, NULL, "object: drive %s: cannot write its format "
						       "record (%s): offline", ep, cn_err_str(we));
						sc->why_err[at] = we;
						sc->state[at] = F_BAD;
						cn_ec_set_refuse(set, d);
						continue;
					}
					sc->written++;
					if (!sc->fresh) {
						cn_log(CN_LOG_WARN, NULL, "drive %s was empty: formatted into pool %zu set "
						       "%zu slot %zu (it will be healed)", ep, p, k, d);
						s->heal_at_start = true;
					}
				}
			}
		}
	}
}

/* Step 4: what was just written must read back as its own slot: the same folder given
 * twice (under two names) would otherwise hold one slot's record and serve two. */
static void verify_written(cn_obj_store *s, fmt_scan *sc)
{
	if (!sc->written)
		return;
	size_t at = 0;
	for (size_t p = 0, i = 0; p < s->npools; p++) {
		for (size_t k = 0; k < s->pools[p].nsets; k++, i++) {
			cn_ec_set *set = s->sets[i];
			bool synced = false;
			for (size_t d = 0; d < cn_ec_set_ndrives(set); d++, at++) {
				if (sc->state[at] != F_NONE)
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
					sc->why_err[at] = CN_ERR_INVALID;
					sc->state[at] = F_BAD;
					cn_ec_set_refuse(set, d);
				} else {
					sc->state[at] = F_OK; /* formatted now */
					sc->is_new[at] = true;
					sc->f[at] = g;
				}
				cn_buf_fini(&b);
			}
		}
	}
}

/* Step 5: quorum. A fresh deployment needs write quorum in every set, an existing one read
 * quorum; below it, the reason a drive was refused is the answer. */
static cn_err check_quorum(cn_obj_store *s, const fmt_scan *sc)
{
	cn_err e = CN_OK;
	size_t at = 0;
	for (size_t p = 0, i = 0; p < s->npools && !e; p++) {
		for (size_t k = 0; k < s->pools[p].nsets && !e; k++, i++) {
			cn_ec_set *set = s->sets[i];
			size_t n = cn_ec_set_ndrives(set), ok = 0;
			unsigned par, rrs;
			cn_ec_set_parity(set, &par, &rrs);
			cn_err first = CN_OK;
			for (size_t d = 0; d < n; d++, at++) {
				ok += cn_ec_set_endpoint(set, d) != NULL && sc->state[at] != F_BAD; /* refused or suspended */
				if (!first && sc->why_err[at])
					first = sc->why_err[at];
			}
			size_t need = sc->fresh ? write_quorum_of(n, par) : n - par;
			if (ok < need) {
				cn_log(CN_LOG_ERROR, NULL, "object: pool %zu set %zu: %zu of %zu drive(s) usable, "
				       "%zu needed: cannot serve", p, k, ok, n, need);
				e = first ? first : CN_ERR_QUORUM;
			}
		}
	}
	return e;
}

cn_err cn_obj__format_all(cn_obj_store *s, const cn_err *open_err)
{
	fmt_scan sc = { .total = cn_obj__total_drives(s) };
	sc.f = calloc(sc.total, sizeof *sc.f);
	sc.state = calloc(sc.total, 1);
	sc.why_err = calloc(sc.total, sizeof *sc.why_err);
	sc.is_new = calloc(sc.total, sizeof *sc.is_new);
	cn_err e = CN_OK;
	if (!sc.f || !sc.state || !sc.why_err || !sc.is_new) {
		e = CN_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0, at = 0; i < s->nsets; i++)
		for (size_t d = 0; d < cn_ec_set_ndrives(s->sets[i]); d++, at++)
			read_format(&sc, s->sets[i], d, at, open_err[at]);
	choose_deployment(s, &sc);
	check_and_format(s, &sc);
	verify_written(s, &sc);
	if (sc.fresh && sc.written)
		cn_log(CN_LOG_INFO, NULL, "object: new deployment %s: formatted %zu drive(s)", s->deployment,
		       sc.written);
	e = check_quorum(s, &sc);
	if (!e && !sc.fresh && sc.written)
		cn_obj__restore_buckets(s, sc.is_new);
out:
	free(sc.f);
	free(sc.state);
	free(sc.why_err);
	free(sc.is_new);
	return e;
}
