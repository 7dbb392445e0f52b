/* cluster: endpoints and their layout: MinIO's `{a...b}` ellipsis expansion of the
 * server's arguments (ellipsis.c), and the pools' erasure set sizes and parity computed as
 * MinIO computes them (layout.h, layout.c; LAYOUT-1..LAYOUT-4). Distributed endpoints
 * (http://) are parsed but refused by the server; there is no internode RPC. */
#ifndef CN_CLUSTER_H
#define CN_CLUSTER_H

#include "util/util.h"

/* Expands every `{a...b}` in arg: numeric ranges (zero-padded to the width written when
 * either bound has a leading zero, e.g. {01...16}) or single-letter ranges ({a...d}).
 * Several ellipses form their product, the LAST ellipsis varying fastest... except for
 * URLs, where MinIO interleaves hosts first — see cn_cluster_expand_pool.
 * On success *out is a malloc'd array of *n malloc'd strings (free with
 * cn_cluster_free_list). Errors: CN_ERR_INVALID (bad range: a > b, mixed kinds, unclosed
 * brace, empty), CN_ERR_TOO_LARGE (more than 65,536 results). */
cn_err cn_cluster_expand(const char *arg, char ***out, size_t *n);
void cn_cluster_free_list(char **list, size_t n);

#endif
