/* s3: the S3 API layer — routing (path- and virtual-host style), authentication
 * (src/s3/auth.h), handlers for each operation, XML in and out, and S3 errors. One entry
 * point: the server glue hands each request exchange to cn_s3_handle. Calls only the
 * object layer below it (src/object/object.h). */
#ifndef CN_S3_H
#define CN_S3_H

#include "http/http.h"
#include "object/object.h"

typedef struct cn_s3_config {
	cn_obj_store *store;
	const char *access_key;  /* root credentials */
	const char *secret_key;
	const char *region;      /* "us-east-1" */
	const char *domain;      /* --domain for virtual-host style, NULL when unset */
	bool enforce_region;     /* reject a credential scope for another region */
} cn_s3_config;

typedef struct cn_s3_server cn_s3_server;
cn_err cn_s3_new(const cn_s3_config *cfg, cn_s3_server **out);
void cn_s3_free(cn_s3_server *s);
/* Handles one request completely (reads its body, sends the whole response). Worker
 * thread; may block. Never fails: every problem becomes an S3 error response (or, if the
 * head was already sent, a closed connection). */
void cn_s3_handle(cn_s3_server *s, cn_http_exchange *x);
/* The loop's pre-read (http.h cn_http_preread_fn, loop.c NET-8): a request that
 * carries no credentials (no Authorization header, no signature in its query) gets its
 * body gathered by the loop, up to CN_HTTP_PREREAD_MAX, before a worker takes it; so
 * neither its answer (403, a health check) nor a browser form's fields before the file
 * (s3/post.c reads them only from what is buffered) make a worker wait on that client.
 * Signed requests: 0. */
size_t cn_s3_preread(void *ctx, const cn_http_req *req);
/* Marks the server ready/not ready for /minio/health/ready. */
void cn_s3_set_ready(cn_s3_server *s, bool ready);

/* The request-serving machinery's figures, which the S3 layer does not see (the loops and
 * their workers belong to the program above it), for /minio/v2/metrics/node. */
typedef struct cn_s3_serving_stats {
	size_t conns;    /* connections open */
	size_t queued;   /* requests waiting for a worker */
	int busy;        /* workers running a request or lingering on its connection */
	int workers;     /* worker threads started */
	int workers_max; /* what the pool may grow to */
} cn_s3_serving_stats;
/* fn fills *out (sums over every loop); called by metrics scrapes on a worker, so it must
 * not block for long; ctx is the caller's. Set once, before serving starts (NULL: the
 * figures are left out). */
void cn_s3_set_serving_stats(cn_s3_server *s, void (*fn)(void *ctx, cn_s3_serving_stats *out),
                             void *ctx);

#endif
