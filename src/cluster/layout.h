/* cluster/layout.h: the erasure layout of a deployment, computed from the server's
 * arguments exactly as MinIO computes it (cmd/endpoint-ellipses.go, storage-class config;
 * DESIGN.md §1, §9): pools, erasure-set size, which endpoint sits in which set and slot,
 * and the STANDARD / REDUCED_REDUNDANCY parity. Pure: no I/O (cn_layout_build_env reads
 * the environment, nothing else).
 *
 * Ownership: cn_layout_build fills a caller's cn_layout whose arrays it owns;
 * cn_layout_fini frees them (safe on a zeroed or already-finished layout).
 * Errors: CN_ERR_INVALID for anything the operator must fix (bad ellipsis, drive count
 * that no set size divides, invalid set-size override, bad or out-of-range EC:n, mixed
 * URL/path or duplicate endpoints), with a one-line human message in err (the valid set
 * sizes are listed when the override is wrong); CN_ERR_TOO_LARGE when an argument expands
 * to too many endpoints; CN_ERR_NOMEM. On error *out is left zeroed. */
#ifndef CN_CLUSTER_LAYOUT_H
#define CN_CLUSTER_LAYOUT_H

#include "util/util.h"

#define CN_LAYOUT_MIN_SET 2
#define CN_LAYOUT_MAX_SET 16

/* One pool: ndrives consecutive endpoints from `first`, cut into nsets sets of set_size. */
typedef struct cn_layout_pool {
	size_t first;
	size_t ndrives;
	unsigned set_size;
	size_t nsets;
	const char *arg;          /* the argument it came from (borrowed from the caller) */
} cn_layout_pool;

typedef struct cn_layout {
	char **endpoints;         /* pool after pool, set after set, slot after slot */
	size_t nendpoints;
	cn_layout_pool *pools;
	size_t npools;
	bool single_drive;        /* one argument, no ellipsis: one set of one drive, EC:0 */
	bool distributed;         /* endpoints are http(s):// URLs */
	bool custom_set_size;     /* set size came from the override */
	unsigned parity_standard; /* M for STANDARD objects (common to every pool) */
	unsigned parity_rrs;      /* M for REDUCED_REDUNDANCY objects */
} cn_layout;

/* What the environment may set; zero/NULL means "MinIO's default". */
typedef struct cn_layout_opts {
	unsigned set_drive_count; /* CAIRN_ERASURE_SET_DRIVE_COUNT */
	const char *sc_standard;  /* CAIRN_STORAGE_CLASS_STANDARD, "EC:n" */
	const char *sc_rrs;       /* CAIRN_STORAGE_CLASS_RRS, "EC:n" */
} cn_layout_opts;

/* Builds the layout of args[0..nargs) (opts may be NULL):
 *  - One argument without an ellipsis: single-drive deployment (1 set of 1, EC:0).
 *  - Several arguments, none with an ellipsis: ONE pool of all of them (MinIO's legacy
 *    form), set size chosen without the symmetry rule.
 *  - Otherwise every argument must have an ellipsis and is one pool (expanded with
 *    cn_cluster_expand, hosts interleaved first).
 * Per pool (MinIO decides each pool on its own): candidates are 2..16 dividing the pool's
 * drive count; an override must be one of them and is used as is; otherwise keep the
 * candidates symmetric with the argument's first ellipsis (length L: L % s == 0 when
 * L > s, else s % L == 0) and take the largest. Sets are consecutive chunks of the
 * expanded list. Parity defaults from the FIRST pool's set size
 * (cn_layout_default_parity) and must fit every pool (cn_layout_check_parity). */
cn_err cn_layout_build(const char *const *args, size_t nargs, const cn_layout_opts *opts,
                       cn_layout *out, char *err, size_t errlen);
/* Same, with opts read from CAIRN_ERASURE_SET_DRIVE_COUNT, CAIRN_STORAGE_CLASS_STANDARD,
 * CAIRN_STORAGE_CLASS_RRS (each falling back to its MINIO_* name). A set drive count that
 * is not a positive integer is CN_ERR_INVALID. */
cn_err cn_layout_build_env(const char *const *args, size_t nargs, cn_layout *out, char *err,
                           size_t errlen);
void cn_layout_fini(cn_layout *l);

/* Total sets over all pools, and the endpoint of (pool, set, slot); NULL when out of range. */
size_t cn_layout_nsets(const cn_layout *l);
const char *cn_layout_drive(const cn_layout *l, size_t pool, size_t set, unsigned slot);

/* The set sizes valid for a pool of ndrives (2..16 dividing it), ascending, into
 * sizes[CN_LAYOUT_MAX_SET]; returns how many. */
size_t cn_layout_set_sizes(size_t ndrives, unsigned *sizes);

/* MinIO's default STANDARD parity for a set of n drives: 1 -> 0, 2-3 -> 1, 4-5 -> 2,
 * 6-7 -> 3, 8 and more -> 4. */
unsigned cn_layout_default_parity(unsigned set_size);

/* Parses "EC:n" (exactly: "EC", ':', decimal digits) into *parity; CN_ERR_INVALID
 * otherwise (with a message). Range is checked by cn_layout_check_parity. */
cn_err cn_layout_parse_ec(const char *s, unsigned *parity, char *err, size_t errlen);

/* Validates parities for sets of set_size drives: each <= set_size / 2; 0 only for a
 * single drive (a set of 1 must have 0); STANDARD >= RRS. */
cn_err cn_layout_check_parity(unsigned standard, unsigned rrs, unsigned set_size, char *err,
                              size_t errlen);

/* The parity for an x-amz-storage-class value: NULL/"" or "STANDARD" -> standard,
 * "REDUCED_REDUNDANCY" -> rrs; any other value is CN_ERR_INVALID (S3 InvalidStorageClass). */
cn_err cn_layout_parity_for_class(const cn_layout *l, const char *storage_class, unsigned *parity);

/* MinIO's start-up warning: in a distributed layout, a host holding more than `parity`
 * drives of one set makes that set unavailable when the host fails. Writes the first such
 * case into msg and returns true; false when every set is safe (or not distributed). */
bool cn_layout_host_warning(const cn_layout *l, unsigned parity, char *msg, size_t msglen);

#endif
