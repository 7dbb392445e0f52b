/* net: sockets and the event loop. One loop thread accepts connections, parks idle
 * keep-alive connections in epoll (an idle connection holds no buffer), reads request
 * heads without blocking until a head is complete, enforces the idle and header-read
 * timeouts (slowloris), and hands connections with a complete head to a bounded pool of
 * worker threads. A worker serves requests as straight-line blocking code through the
 * cn_conn_* calls below (each bounded by the I/O timeout), then gives the connection back
 * to the loop. When the work queue is full the loop answers "503 SlowDown" itself and
 * closes: overload never grows memory without bound and never resets connections.
 *
 * Ownership: a connection belongs to exactly one thread at a time — the loop (idle or
 * reading a head) or one worker (from dispatch until cn_net_release). */
#ifndef CN_NET_H
#define CN_NET_H

#include "util/util.h"

typedef struct cn_conn {
	int fd;
	char *buf;           /* head/read-ahead buffer; NULL while idle */
	size_t cap, off, len;/* unread bytes are buf[off, len) */
	char peer[64];
	/* loop-private */
	int64_t deadline_ms;
	int64_t queued_at;   /* when dispatch queued it for a worker (loop.c NET-6) */
	size_t scanned;      /* bytes already searched for the end of the head */
	int state;
	int events;          /* epoll interest now registered (loop.c) */
	struct cn_conn *prev, *next;
	struct cn_conn *qnext;
	struct cn_net *net;
	/* response bytes of a request served on the loop thread, not yet sent (owned) */
	char *out;
	size_t out_off, out_len;
	bool close_after;
	/* Set by the worker's handler: the request it just served was one the inline handler
	 * would have served on the loop (a small read). The worker then hands the connection
	 * back to the loop instead of lingering on it, so that the client's next small reads
	 * are served inline: measured ~35 vs ~20 µs of server CPU per 4 KiB GET (docs/PERF.md). */
	bool loop_next;
	bool drain_close;     /* the worker answered CN_CONN_DRAIN_CLOSE (loop.c: start_drain) */
	int64_t head_ns;      /* cn_mono_ns when the buffered request's head was first seen
	                         complete (the loop's serve_ready; else the http layer when a
	                         worker reads it); 0: not yet. The http layer clears it when
	                         the request is answered, keeps it over a defer: the time to
	                         first byte counts the wait for a worker */
	int64_t drain_end_ms; /* loop-private: the drain ends by then at the latest */
	int64_t drain_bytes;  /* loop-private: bytes discarded so far */
	/* Pre-read (CN_CONN_MORE): the buffered request is served once this many bytes from
	 * off are buffered; 0: once its head is. Set by the inline handler, cleared by the
	 * loop at dispatch. */
	size_t preread;
	bool continue_sent;   /* "100 Continue" already sent for the buffered request (the
	                         loop's pre-read sends it); the http layer clears it */
	bool drain_after;     /* loop-private: drain (NET-5) once c->out is sent */
	/* A worker's waits on this client (NET-7): time spent waiting and bytes moved
	 * since cn_conn_rate_reset. */
	int64_t rate_waited_ms;
	int64_t rate_bytes;
} cn_conn;

/* What a handler tells the loop. CN_CONN_DEFER (inline handler only): this request must
 * run on a worker; nothing was consumed or sent, the head is still buffered.
 * CN_CONN_DRAIN_CLOSE (worker handler only): close, but the peer may still be sending (a
 * request body answered early and not read): the connection is shut for writing (FIN
 * after the response) and handed to the loop, which reads and discards what arrives until
 * the peer closes, at most CN_DRAIN_WAIT_MS between reads and CN_DRAIN_TOTAL_MS or
 * CN_DRAIN_MAX_BYTES in all, then closes. Closing at once with unread bytes in the
 * socket makes the kernel send a reset, which can destroy the response before the
 * client reads it (nginx's lingering_close does the same for the same reason). */
/* CN_CONN_MORE: the request may not go to a worker before
 * c->preread bytes (its head and the start of its body) are buffered — an unauthenticated
 * request's body is gathered by the loop, under the header timeout, so that no worker ever
 * waits on such a client. Nothing was consumed; the loop reads on and calls the inline
 * handler again. A worker's handler answers it for such a request it read itself
 * (pipelined, or while lingering): the loop then runs the inline handler on it.
 * A worker's handler may leave response bytes in c->out (a small response the socket did
 * not take at once): the loop sends them, without a worker, then parks, closes or drains
 * the connection as the verdict says. */
typedef enum { CN_CONN_KEEP, CN_CONN_CLOSE, CN_CONN_DEFER, CN_CONN_DRAIN_CLOSE, CN_CONN_MORE } cn_conn_verdict;
#define CN_DRAIN_WAIT_MS 5000
#define CN_DRAIN_TOTAL_MS 30000
#define CN_DRAIN_MAX_BYTES ((int64_t)256 << 20)
/* Called on a worker thread with a connection whose buffer holds a complete request head
 * at buf[off]. Serves one or more requests; returns KEEP to park the connection again. */
typedef cn_conn_verdict (*cn_net_handler)(void *ctx, cn_conn *c);

typedef struct cn_net_config {
	const char *host;       /* "127.0.0.1" */
	int port;
	int workers;            /* worker threads (default 64) */
	int max_queue;          /* connections waiting for a worker before 503 (default 1024) */
	int idle_timeout_ms;    /* keep-alive idle (default 60 s) */
	int header_timeout_ms;  /* first byte to complete head (default 15 s) */
	int io_timeout_ms;      /* a worker's blocking read/write stall (default 30 s) */
	/* loop.c NET-7: while a worker waits on a client, the client must move at
	 * least min_rate bytes/s on average, after a grace of rate_grace_ms (defaults 1024 and
	 * 10000; min_rate < 0: no rate, the stall bound alone). */
	int min_rate;
	int rate_grace_ms;
	int max_conns;          /* default 20000 */
	size_t max_head;        /* head limit (CN_HTTP_MAX_HEAD) */
	int linger_ms;          /* keep a worker on its connection this long for the next
	                           request when no one else waits (0 = off) */
	/* Optional: serves one request on the loop thread itself, without blocking on the
	 * socket: the response goes to c->out (the loop sends it, waiting for EPOLLOUT when
	 * needed). Returns DEFER for requests that need a worker. Saves two thread hand-offs
	 * per request for small reads. */
	cn_net_handler inline_handler;
	bool reuseport;         /* SO_REUSEPORT: several loops share the port (one per core) */
	int grow_after_ms;      /* requests wait and no worker has finished one for this long
	                           (all hung, e.g. on a drive that does not answer): start more
	                           workers, up to `workers` more in all (loop.c NET-6;
	                           default 2000; < 0: never) */
} cn_net_config;

typedef struct cn_net cn_net;
/* Binds and listens (errors: CN_ERR_IO with the reason logged). */
cn_err cn_net_new(const cn_net_config *cfg, cn_net_handler h, void *ctx, cn_net **out);
/* Runs the loop on the calling thread until cn_net_stop; then stops accepting, waits up to
 * grace_ms for busy workers to finish their requests, closes everything and returns CN_OK.
 * CN_ERR_TIMEOUT: requests were still running after grace_ms (a worker hung, e.g. in a
 * drive call that does not return): those workers still use N and the handler's context,
 * so neither may be freed; the caller exits the process instead. */
cn_err cn_net_run(cn_net *n, int grace_ms);
/* Async-signal-safe: asks cn_net_run to finish. */
void cn_net_stop(cn_net *n);
void cn_net_free(cn_net *n);
/* The port actually bound (for port 0). */
int cn_net_port(cn_net *n);
/* A loop's figures for metrics, read while it runs (any thread; each figure is current,
 * not all taken at one instant). */
typedef struct cn_net_stats {
	size_t conns;    /* connections open */
	size_t queued;   /* requests waiting for a worker */
	int busy;        /* workers running a request or lingering on its connection */
	int workers;     /* worker threads started (grows when the pool hangs: NET-6) */
	int workers_max; /* what it may grow to */
} cn_net_stats;
void cn_net_get_stats(cn_net *n, cn_net_stats *out);

/* Worker-side blocking I/O on a connection: each wait is bounded by io_timeout_ms and by
 * the client's rate (NET-7), counted from the last cn_conn_rate_reset (the http
 * layer calls it as each request starts). A wait past either bound: CN_ERR_TIMEOUT. */
void cn_conn_rate_reset(cn_conn *c);
/* Reads buffered bytes first, then from the socket. >0 bytes, 0 at EOF, -CN_ERR_TIMEOUT,
 * -CN_ERR_CLOSED (reset), -CN_ERR_IO. */
ssize_t cn_conn_read(cn_conn *c, void *buf, size_t len);
/* Makes at least `want` bytes available in c->buf[off, len) (growing the buffer up to
 * max bytes); returns CN_OK, CN_ERR_CLOSED at EOF first, CN_ERR_TOO_LARGE over max. */
cn_err cn_conn_fill(cn_conn *c, size_t want, size_t max);
cn_err cn_conn_write(cn_conn *c, const void *p, size_t len);
/* Writes n pieces in order (n <= CN_CONN_IOV_MAX, empty ones allowed; iov is not
 * changed) in as few syscalls as possible. more: further bytes of the same response
 * follow at once (MSG_MORE: the pieces leave as full packets, and the client wakes once
 * for them instead of once per piece). */
#define CN_CONN_IOV_MAX 64
cn_err cn_conn_writev(cn_conn *c, const struct iovec *iov, int n, bool more);
cn_err cn_conn_sendfile(cn_conn *c, int fd, int64_t off, int64_t len);
/* Loop-thread side (an inline handler, which must never block): sends what the socket
 * takes now of the n pieces (n <= CN_CONN_IOV_MAX, empty ones allowed), in order; *sent =
 * bytes taken, possibly 0 (the caller keeps the rest for the loop: c->out). more: further
 * response bytes follow at once (MSG_MORE, so a response written in pieces still leaves
 * in full packets). Errors: CN_ERR_CLOSED (peer gone), *sent then 0. */
cn_err cn_conn_send_nowv(cn_conn *c, const struct iovec *iov, int n, bool more, size_t *sent);
/* Whether a complete request head is already buffered (for pipelining). */
bool cn_conn_has_head(cn_conn *c);

#endif
