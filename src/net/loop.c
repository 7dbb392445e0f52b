/* net/loop.c: the event loop, the worker pool and connection I/O (see net.h for the model).
 *
 * Invariants:
 *  NET-1. A connection is owned by one thread at a time: the loop while its state is IDLE,
 *     HEAD or WRITE (and only the loop touches epoll registration and the connection
 *     list; epoll interest is level-triggered and empty while a worker owns it), a worker
 *     while QUEUED or BUSY. Workers hand connections back through the `back` queue + eventfd.
 *  NET-2. An IDLE connection has no buffer (buf == NULL): 10,000 idle connections cost only
 *     their struct and the kernel's socket.
 *  NET-3. Every connection the loop owns has a deadline: idle timeout while IDLE, header
 *     timeout from the first byte of a head while HEAD. The loop closes expired ones.
 *  NET-4. The work queue holds at most max_queue connections; beyond that the loop answers
 *     503 SlowDown and closes (never an unbounded queue, never a reset).
 *  NET-5. A connection closed while its peer may still be sending (DRAIN: a body answered
 *     early, a refused head) is first shut for writing, then only read and discarded by
 *     the loop until EOF or its bounds (net.h: CN_CONN_DRAIN_CLOSE); it never serves again.
 *  NET-6. Requests never wait forever behind workers that hang: when the oldest queued
 *     connection has waited grow_after_ms and no worker has finished a request for as
 *     long, the loop starts more workers (4 at a time, at most cfg.workers more in all;
 *     they stay). A worker blocked in a call that cannot be interrupted (a hung drive)
 *     then holds only itself, and the requests that do not need
 *     what hangs are served. A pool that is merely busy finishes requests and does not
 *     grow.
 *  NET-7. A worker waits on a client only while the client keeps up: every wait (a read of
 *     its body, a write of a response it does not read) ends after io_timeout_ms, and
 *     after rate_grace_ms of waiting in all the client must have moved min_rate bytes per
 *     second of waiting (bytes moved / time waited, counted per request from
 *     cn_conn_rate_reset; time the worker spends on its own work does not count). A
 *     client dripping a byte every few seconds is cut off after the grace instead of
 *     holding a worker for ever.
 *  NET-8. No worker waits on an unauthenticated client. The inline handler decides per head
 *     (CN_CONN_MORE): the loop gathers such a request's body, up to the bytes the
 *     handler asked for, under the header timeout, before a worker takes it; a worker
 *     sends a small response without waiting and leaves what the socket did not take in
 *     c->out for the loop (http/exchange.c); what the worker did not read of a body is
 *     drained by the loop (NET-5). */
#include "net/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

enum { ST_IDLE, ST_HEAD, ST_QUEUED, ST_BUSY, ST_WRITE, ST_DRAIN };
#define INLINE_BATCH 16
#define HEAD_BUF_INIT 8192

struct cn_net {
	cn_net_config cfg;
	cn_net_handler handler;
	void *ctx;
	int lfd, epfd, evfd;
	int port;
	volatile sig_atomic_t stopping;
	pthread_t *threads;      /* room for cfg.workers * 2 (NET-6) */
	int nthreads;            /* started (loop thread only, after cn_net_new) */
	atomic_int nthreads_pub; /* its copy for cn_net_get_stats (any thread) */
	int64_t last_done;       /* when a worker last finished a request (under mu) */
	int64_t last_grow;       /* when the pool last grew (loop thread) */
	int64_t next_grow_check; /* (loop thread) */
	/* work queue: loop -> workers */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	cn_conn *qhead, *qtail;
	size_t qlen;
	bool shutdown;
	int busy;
	int qfd;                 /* eventfd: readable while work waits and workers linger */
	bool qfd_set;
	int lingering;           /* workers in linger() */
	/* back queue: workers -> loop */
	cn_conn *bhead;
	/* all connections owned by the loop or workers (loop thread only) */
	cn_conn *all;
	size_t nconns;
	atomic_size_t nconns_pub; /* its copy for cn_net_get_stats */
};

static void conn_unlink(cn_net *n, cn_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		n->all = c->next;
	if (c->next)
		c->next->prev = c->prev;
	n->nconns--;
	atomic_store_explicit(&n->nconns_pub, n->nconns, memory_order_relaxed);
}

static void conn_close(cn_net *n, cn_conn *c)
{
	conn_unlink(n, c);
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	free(c->buf);
	free(c);
}

static void conn_drop_buf(cn_conn *c)
{
	if (c->off == c->len) {
		free(c->buf);
		c->buf = NULL;
		c->cap = c->off = c->len = 0;
		c->scanned = 0;
	}
}

/* Epoll interest of a connection, level-triggered: EPOLLIN while the loop owns it,
 * EPOLLOUT while it waits to send an inline response, nothing while a worker owns it.
 * epoll_ctl is called only on a change, so a connection served inline request after
 * request costs no epoll_ctl at all. */
enum { EV_NONE = 0, EV_IN = 1, EV_OUT = 2, EV_UNREG = 3 };
static void set_events(cn_net *n, cn_conn *c, int want)
{
	if (c->events == want)
		return;
	if (want == EV_NONE)
		want = EV_UNREG; /* removed, not masked: EPOLLHUP/EPOLLERR ignore the mask, and a
		                    worker-owned connection must never reach the loop's handlers */
	if (c->events == want)
		return;
	struct epoll_event ev = { .events = 0, .data.ptr = c };
	int op = c->events == EV_UNREG ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
	if (want == EV_IN)
		ev.events = EPOLLIN | EPOLLRDHUP;
	else if (want == EV_OUT)
		ev.events = EPOLLOUT | EPOLLRDHUP;
	else
		op = EPOLL_CTL_DEL;
	if (epoll_ctl(n->epfd, op, c->fd, &ev) < 0)
		cn_log(CN_LOG_WARN, NULL, "epoll_ctl(%s): %s", c->peer, strerror(errno));
	c->events = want;
}

/* Searches the buffered bytes for the end of a request head: its CRLFCRLF, or a bare LF,
 * which ends it too (the parser answers 400 at once; waiting for a CRLFCRLF would leave
 * it to the header timeout). */
static bool head_complete(cn_conn *c)
{
	size_t from = c->scanned > 3 ? c->scanned - 3 : 0;
	const char *p = cn_find_head_end(c->buf + c->off, c->len - c->off, from);
	c->scanned = c->len - c->off;
	return p != NULL;
}

bool cn_conn_has_head(cn_conn *c)
{
	if (!c->buf || c->off == c->len)
		return false;
	c->scanned = 0;
	return cn_find_head_end(c->buf + c->off, c->len - c->off, 0) != NULL;
}

static const char slowdown[] =
	"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\nConnection: close\r\n"
	"Retry-After: 1\r\nContent-Length: 155\r\n\r\n"
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
	"<Message>Please reduce your request rate.</Message><RequestId></RequestId></Error>";

/* Loop thread: NET-5. The connection's write side is already shut. */
static void start_drain(cn_net *n, cn_conn *c)
{
	free(c->buf);
	c->buf = NULL;
	c->cap = c->off = c->len = c->scanned = 0;
	free(c->out);
	c->out = NULL;
	c->out_off = c->out_len = 0;
	c->state = ST_DRAIN;
	int64_t now = cn_mono_ms();
	c->drain_end_ms = now + CN_DRAIN_TOTAL_MS;
	c->drain_bytes = 0;
	c->deadline_ms = now + CN_DRAIN_WAIT_MS;
	set_events(n, c, EV_IN);
}

/* Loop thread: a draining connection is readable: discard; close at EOF or a bound. */
static void on_drain_readable(cn_net *n, cn_conn *c)
{
	char sink[16384];
	for (int i = 0; i < 64; i++) { /* then back to the loop: others wait too */
		ssize_t r = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
		if (r > 0) {
			c->drain_bytes += r;
			if (c->drain_bytes > CN_DRAIN_MAX_BYTES)
				goto done;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		goto done; /* EOF or an error */
	}
	int64_t now = cn_mono_ms();
	if (now >= c->drain_end_ms)
		goto done;
	c->deadline_ms = now + CN_DRAIN_WAIT_MS < c->drain_end_ms ? now + CN_DRAIN_WAIT_MS
	                                                            : c->drain_end_ms;
	return;
done:
	conn_close(n, c);
}

static void reply_and_close(cn_net *n, cn_conn *c, const char *msg, size_t len)
{
	ssize_t w = send(c->fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)w;
	shutdown(c->fd, SHUT_WR);
	start_drain(n, c); /* the rest of the request may still be coming (NET-5) */
}

static void dispatch(cn_net *n, cn_conn *c)
{
	c->preread = 0;
	if (!c->head_ns) /* the head after a long pipeline (serve_ready stamped the others) */
		c->head_ns = cn_mono_ns();
	set_events(n, c, EV_NONE); /* a worker will own it: the loop must not see its events */
	pthread_mutex_lock(&n->mu);
	if (n->qlen >= (size_t)n->cfg.max_queue) {
		pthread_mutex_unlock(&n->mu);
		cn_log(CN_LOG_WARN, NULL, "overload: %zu requests queued, answering 503 SlowDown to %s",
		       n->qlen, c->peer);
		reply_and_close(n, c, slowdown, sizeof slowdown - 1);
		return;
	}
	c->state = ST_QUEUED;
	c->qnext = NULL;
	c->queued_at = cn_mono_ms();
	if (n->qtail)
		n->qtail->qnext = c;
	else
		n->qhead = c;
	n->qtail = c;
	n->qlen++;
	if (!n->qfd_set && __atomic_load_n(&n->lingering, __ATOMIC_SEQ_CST) > 0) {
		uint64_t one = 1;
		ssize_t w = write(n->qfd, &one, sizeof one);
		(void)w;
		n->qfd_set = true;
	}
	pthread_cond_signal(&n->cv);
	pthread_mutex_unlock(&n->mu);
}

/* Loop thread: the connection goes back to waiting for its next request: HEAD when part
 * of a head is already buffered (header timeout), else IDLE without a buffer (idle
 * timeout, NET-2). */
static void park(cn_net *n, cn_conn *c)
{
	c->scanned = 0;
	if (c->buf && c->off < c->len) {
		c->state = ST_HEAD;
		c->deadline_ms = cn_mono_ms() + n->cfg.header_timeout_ms;
	} else {
		c->state = ST_IDLE;
		c->deadline_ms = cn_mono_ms() + n->cfg.idle_timeout_ms;
		conn_drop_buf(c);
	}
	set_events(n, c, EV_IN);
}

/* Loop thread: sends c->out without blocking. Returns true when all is sent (and the
 * connection stays open), false when it closed or now waits for EPOLLOUT. */
static bool flush_out(cn_net *n, cn_conn *c)
{
	while (c->out && c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			c->out_off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->state = ST_WRITE;
			c->deadline_ms = cn_mono_ms() + n->cfg.io_timeout_ms;
			set_events(n, c, EV_OUT);
			return false;
		}
		conn_close(n, c);
		return false;
	}
	free(c->out);
	c->out = NULL;
	c->out_off = c->out_len = 0;
	if (c->close_after) {
		shutdown(c->fd, SHUT_WR);
		if (c->drain_after)
			start_drain(n, c); /* the client may still be sending a body (NET-5) */
		else
			conn_close(n, c);
		return false;
	}
	return true;
}

/* Loop thread: a complete head is buffered. Serves it inline when the inline handler
 * takes it, else hands the connection to the workers. Continues with pipelined heads. */
static void serve_ready(cn_net *n, cn_conn *c)
{
	for (int i = 0; i < INLINE_BATCH; i++) {
		if (!c->head_ns)
			c->head_ns = cn_mono_ns();
		if (!n->cfg.inline_handler || n->stopping) {
			dispatch(n, c);
			return;
		}
		c->preread = 0;
		cn_conn_verdict v = n->cfg.inline_handler(n->ctx, c);
		if (v == CN_CONN_DEFER) {
			dispatch(n, c);
			return;
		}
		if (v == CN_CONN_MORE) { /* NET-8: read on, under the head's deadline */
			CN_ASSERT(c->preread > c->len - c->off);
			if (c->off > 0) { /* the request starts the buffer: room for what it needs */
				memmove(c->buf, c->buf + c->off, c->len - c->off);
				c->len -= c->off;
				c->off = 0;
			}
			if (c->state != ST_HEAD) {
				c->state = ST_HEAD;
				c->deadline_ms = cn_mono_ms() + n->cfg.header_timeout_ms;
			}
			set_events(n, c, EV_IN);
			return;
		}
		c->close_after = v == CN_CONN_CLOSE;
		c->drain_after = false;
		if (!flush_out(n, c))
			return;
		if (!cn_conn_has_head(c)) {
			park(n, c);
			return;
		}
	}
	dispatch(n, c); /* a long pipeline: let a worker continue, others get the loop */
}

/* Loop thread: a connection waiting to send its inline response became writable. */
static void on_writable(cn_net *n, cn_conn *c, uint32_t events)
{
	if (events & (EPOLLERR | EPOLLHUP)) {
		conn_close(n, c);
		return;
	}
	if (!flush_out(n, c))
		return;
	if (cn_conn_has_head(c)) {
		serve_ready(n, c);
		return;
	}
	park(n, c);
}

/* Loop thread: the connection became readable. */
static void on_readable(cn_net *n, cn_conn *c, uint32_t events)
{
	for (;;) {
		if (!c->buf) {
			c->buf = malloc(HEAD_BUF_INIT);
			if (!c->buf) {
				conn_close(n, c);
				return;
			}
			c->cap = HEAD_BUF_INIT;
			c->off = c->len = c->scanned = 0;
		}
		if (c->len == c->cap) {
			if (c->off > 0) {
				memmove(c->buf, c->buf + c->off, c->len - c->off);
				c->len -= c->off;
				c->scanned = c->scanned > c->off ? c->scanned - c->off : 0;
				c->off = 0;
			}
			size_t limit = n->cfg.max_head + 4;
			if (c->preread > limit)
				limit = c->preread; /* an inline handler's bound (CN_CONN_MORE) */
			if (c->len == c->cap) {
				if (c->cap >= limit) {
					static const char too_big[] =
						"HTTP/1.1 431 Request Header Fields Too Large\r\n"
						"Connection: close\r\nContent-Length: 0\r\n\r\n";
					reply_and_close(n, c, too_big, sizeof too_big - 1);
					return;
				}
				size_t ncap = c->cap * 2;
				if (ncap > limit)
					ncap = limit;
				char *nb = realloc(c->buf, ncap);
				if (!nb) {
					conn_close(n, c);
					return;
				}
				c->buf = nb;
				c->cap = ncap;
			}
		}
		ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		if (r > 0) {
			if (c->state == ST_IDLE) {
				c->state = ST_HEAD;
				c->deadline_ms = cn_mono_ms() + n->cfg.header_timeout_ms;
			}
			c->len += (size_t)r;
			if (c->preread ? c->len - c->off >= c->preread : head_complete(c)) {
				serve_ready(n, c);
				return;
			}
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				conn_close(n, c);
				return;
			}
			conn_drop_buf(c);
			set_events(n, c, EV_IN);
			return;
		}
		if (r < 0 && errno == EINTR)
			continue;
		conn_close(n, c); /* EOF or error */
		return;
	}
}

static void on_accept(cn_net *n)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		int fd = accept4(n->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				cn_log(CN_LOG_WARN, NULL, "accept: %s", strerror(errno));
			return;
		}
		if (n->nconns >= (size_t)n->cfg.max_conns) {
			static const char busy[] =
				"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
				"Retry-After: 1\r\nContent-Length: 0\r\n\r\n";
			ssize_t w = send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)w;
			close(fd);
			continue;
		}
		cn_conn *c = calloc(1, sizeof *c);
		if (!c) {
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		c->fd = fd;
		c->net = n;
		c->state = ST_IDLE;
		c->deadline_ms = cn_mono_ms() + n->cfg.idle_timeout_ms;
		char host[INET6_ADDRSTRLEN] = "?";
		int port = 0;
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
			port = ntohs(a->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
			port = ntohs(a->sin6_port);
		}
		snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
		c->next = n->all;
		if (n->all)
			n->all->prev = c;
		n->all = c;
		n->nconns++;
		atomic_store_explicit(&n->nconns_pub, n->nconns, memory_order_relaxed);
		c->events = EV_UNREG;
		set_events(n, c, EV_IN);
	}
}

/* Loop thread: connections coming back from workers. */
static void on_back(cn_net *n)
{
	uint64_t v;
	ssize_t r = read(n->evfd, &v, sizeof v);
	(void)r;
	pthread_mutex_lock(&n->mu);
	cn_conn *list = n->bhead;
	n->bhead = NULL;
	pthread_mutex_unlock(&n->mu);
	while (list) {
		cn_conn *c = list;
		list = c->qnext;
		if (c->fd < 0) { /* the worker closed it */
			conn_close(n, c);
			continue;
		}
		if (n->stopping) {
			conn_close(n, c);
			continue;
		}
		if (c->out) { /* what the socket did not take of a worker's response (NET-8) */
			if (!flush_out(n, c))
				continue; /* closed, draining, or waiting for EPOLLOUT (on_writable) */
			if (cn_conn_has_head(c)) {
				serve_ready(n, c);
				continue;
			}
		} else if (c->drain_close) { /* the worker shut it for writing (CN_CONN_DRAIN_CLOSE) */
			start_drain(n, c);
			continue;
		} else if (n->cfg.inline_handler && cn_conn_has_head(c)) { /* CN_CONN_MORE: a head
		                                     whose body the loop gathers (NET-8) */
			serve_ready(n, c);
			continue;
		}
		park(n, c);
	}
}

static void expire(cn_net *n)
{
	int64_t now = cn_mono_ms();
	cn_conn *c = n->all;
	while (c) {
		cn_conn *next = c->next;
		if ((c->state == ST_IDLE || c->state == ST_HEAD || c->state == ST_WRITE ||
		     c->state == ST_DRAIN) &&
		    c->deadline_ms < now) {
			if (c->state == ST_HEAD) {
				cn_log(CN_LOG_INFO, NULL, "closing %s: request head not complete within %d ms",
				       c->peer, n->cfg.header_timeout_ms);
				static const char timeout[] =
					"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
				ssize_t w = send(c->fd, timeout, sizeof timeout - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
				(void)w;
			}
			epoll_ctl(n->epfd, EPOLL_CTL_DEL, c->fd, NULL);
			conn_close(n, c);
		}
		c = next;
	}
}

/* Worker: after a response on a keep-alive connection, wait a moment for the client's next
 * request instead of handing the connection back to the loop at once — a busy client's
 * next request usually arrives within microseconds, and serving it on the same thread
 * saves two thread hand-offs (and their context switches) per request. Only when no other
 * connection waits for a worker; the wait is short (linger_ms) so idle connections return
 * to the loop quickly; never after a request the handler marked loop_next (a small read:
 * the loop's inline handler serves the next ones without any hand-off, net.h). Returns
 * true when a complete head is buffered. */
static bool linger(cn_net *n, cn_conn *c)
{
	if (n->cfg.linger_ms <= 0 || n->stopping)
		return false;
	/* Wait for the client's next request, or for the queue signal: a connection queued
	 * meanwhile must not wait for workers that linger on quiet connections. */
	if (__atomic_load_n(&n->qlen, __ATOMIC_RELAXED) > 0 || n->stopping)
		return false;
	struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN }, { .fd = n->qfd, .events = POLLIN } };
	__atomic_add_fetch(&n->lingering, 1, __ATOMIC_SEQ_CST);
	int r = poll(p, 2, n->cfg.linger_ms);
	__atomic_sub_fetch(&n->lingering, 1, __ATOMIC_SEQ_CST);
	if (r < 1 || (p[1].revents & POLLIN))
		return false;
	if (!(p[0].revents & POLLIN) || (p[0].revents & (POLLERR | POLLNVAL)))
		return false;
	if (!c->buf) {
		c->buf = malloc(HEAD_BUF_INIT);
		if (!c->buf)
			return false;
		c->cap = HEAD_BUF_INIT;
		c->off = c->len = 0;
	} else if (c->off == c->len) {
		c->off = c->len = 0;
	} else if (c->off > 0) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->cap == c->len)
		return false;
	ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
	if (got <= 0)
		return false; /* EOF/error: the loop sees it again and closes */
	c->len += (size_t)got;
	return cn_conn_has_head(c);
}

static void *worker_main(void *arg)
{
	cn_net *n = arg; /* made by cn_thread_create: SIGTERM/SIGINT blocked */
	for (;;) {
		pthread_mutex_lock(&n->mu);
		while (!n->qhead && !n->shutdown)
			pthread_cond_wait(&n->cv, &n->mu);
		if (!n->qhead) {
			pthread_mutex_unlock(&n->mu);
			return NULL;
		}
		cn_conn *c = n->qhead;
		n->qhead = c->qnext;
		if (!n->qhead)
			n->qtail = NULL;
		n->qlen--;
		if (n->qlen == 0 && n->qfd_set) {
			uint64_t v;
			ssize_t rd = read(n->qfd, &v, sizeof v);
			(void)rd;
			n->qfd_set = false;
		}
		n->busy++;
		c->state = ST_BUSY;
		pthread_mutex_unlock(&n->mu);

		cn_conn_verdict v = n->handler(n->ctx, c);
		while (v == CN_CONN_KEEP && !c->out && !(c->loop_next && n->cfg.inline_handler) && linger(n, c))
			v = n->handler(n->ctx, c);
		c->close_after = c->drain_after = false;
		if (c->out) { /* the loop sends the rest of the response, then does the rest */
			c->close_after = v == CN_CONN_CLOSE || v == CN_CONN_DRAIN_CLOSE;
			c->drain_after = v == CN_CONN_DRAIN_CLOSE;
		} else if (v == CN_CONN_CLOSE) {
			close(c->fd); /* closing removes it from epoll */
			c->fd = -1;
		} else if (v == CN_CONN_DRAIN_CLOSE) {
			shutdown(c->fd, SHUT_WR); /* the response is out: FIN now, the loop drains */
			c->drain_close = true;
		}
		int64_t done = cn_mono_ms();
		pthread_mutex_lock(&n->mu);
		n->busy--;
		n->last_done = done;
		c->qnext = n->bhead;
		n->bhead = c;
		pthread_mutex_unlock(&n->mu);
		uint64_t one = 1;
		ssize_t w = write(n->evfd, &one, sizeof one);
		(void)w;
	}
}

/* Starts up to k more workers (within the room of n->threads). */
static void start_workers(cn_net *n, int k)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	for (int i = 0; i < k && n->nthreads < n->cfg.workers * 2; i++) {
		if (cn_thread_create(&n->threads[n->nthreads], &attr, worker_main, n) != 0)
			break;
		n->nthreads++;
	}
	atomic_store_explicit(&n->nthreads_pub, n->nthreads, memory_order_relaxed);
	pthread_attr_destroy(&attr);
}

cn_err cn_net_new(const cn_net_config *cfg, cn_net_handler h, void *ctx, cn_net **out)
{
	cn_net *n = calloc(1, sizeof *n);
	if (!n)
		return CN_ERR_NOMEM;
	n->cfg = *cfg;
	if (n->cfg.workers <= 0)
		n->cfg.workers = 64;
	if (n->cfg.max_queue <= 0)
		n->cfg.max_queue = 1024;
	if (n->cfg.idle_timeout_ms <= 0)
		n->cfg.idle_timeout_ms = 60000;
	if (n->cfg.header_timeout_ms <= 0)
		n->cfg.header_timeout_ms = 15000;
	if (n->cfg.io_timeout_ms <= 0)
		n->cfg.io_timeout_ms = 30000;
	if (n->cfg.min_rate == 0)
		n->cfg.min_rate = 1024;
	if (n->cfg.rate_grace_ms <= 0)
		n->cfg.rate_grace_ms = 10000;
	if (n->cfg.max_conns <= 0)
		n->cfg.max_conns = 20000;
	if (n->cfg.linger_ms < 0)
		n->cfg.linger_ms = 0;
	if (n->cfg.max_head == 0)
		n->cfg.max_head = 32 * 1024;
	if (n->cfg.grow_after_ms == 0)
		n->cfg.grow_after_ms = 2000;
	n->handler = h;
	n->ctx = ctx;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	n->lfd = n->epfd = n->evfd = n->qfd = -1;

	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t sl;
	const char *host = cfg->host && cfg->host[0] ? cfg->host : "0.0.0.0";
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)cfg->port);
		sl = sizeof *a4;
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)cfg->port);
		sl = sizeof *a6;
	} else {
		cn_log(CN_LOG_ERROR, NULL, "cannot listen: '%s' is not an IP address", host);
		free(n);
		return CN_ERR_INVALID;
	}
	n->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (n->lfd >= 0)
		setsockopt(n->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (n->lfd >= 0 && cfg->reuseport)
		setsockopt(n->lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
	if (n->lfd < 0 || bind(n->lfd, (struct sockaddr *)&ss, sl) < 0 || listen(n->lfd, 4096) < 0) {
		cn_log(CN_LOG_ERROR, NULL, "cannot listen on %s:%d: %s", host, cfg->port, strerror(errno));
		if (n->lfd >= 0)
			close(n->lfd);
		free(n);
		return CN_ERR_IO;
	}
	struct sockaddr_storage bound;
	socklen_t bl = sizeof bound;
	getsockname(n->lfd, (struct sockaddr *)&bound, &bl);
	n->port = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
	                                            : ((struct sockaddr_in6 *)&bound)->sin6_port);
	n->epfd = epoll_create1(EPOLL_CLOEXEC);
	n->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	n->qfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &n->lfd };
	epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->lfd, &ev);
	ev.data.ptr = &n->evfd;
	epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->evfd, &ev);

	n->threads = calloc((size_t)n->cfg.workers * 2, sizeof *n->threads);
	n->last_done = n->last_grow = cn_mono_ms();
	start_workers(n, n->cfg.workers);
	*out = n;
	return CN_OK;
}

/* NET-6: loop thread. More workers when queued requests wait on a pool that has
 * finished nothing for grow_after_ms. */
static void maybe_grow(cn_net *n, int64_t now)
{
	if (n->cfg.grow_after_ms < 0 || n->nthreads >= n->cfg.workers * 2 ||
	    now - n->last_grow < n->cfg.grow_after_ms || now < n->next_grow_check)
		return;
	n->next_grow_check = now + (n->cfg.grow_after_ms / 4 < 250 ? n->cfg.grow_after_ms / 4 : 250);
	pthread_mutex_lock(&n->mu);
	size_t queued = n->qlen;
	int64_t waited = n->qhead ? now - n->qhead->queued_at : 0;
	int64_t idle_for = now - n->last_done;
	pthread_mutex_unlock(&n->mu);
	/* the oldest queued request has waited, and nothing finished, for the whole time: not
	 * a request that just arrived at an idle pool */
	if (queued == 0 || waited < n->cfg.grow_after_ms || idle_for < n->cfg.grow_after_ms)
		return;
	int add = n->cfg.workers * 2 - n->nthreads;
	add = add > 4 ? 4 : add;
	int had = n->nthreads;
	start_workers(n, add);
	n->last_grow = now;
	cn_log(CN_LOG_WARN, NULL, "%zu requests wait and no worker has finished one for %lld ms "
	       "(hung?): started %d more workers (%d in all, at most %d)", queued,
	       (long long)idle_for, n->nthreads - had, n->nthreads, n->cfg.workers * 2);
}

int cn_net_port(cn_net *n)
{
	return n->port;
}

void cn_net_get_stats(cn_net *n, cn_net_stats *out)
{
	pthread_mutex_lock(&n->mu);
	out->queued = n->qlen;
	out->busy = n->busy;
	pthread_mutex_unlock(&n->mu);
	out->conns = atomic_load_explicit(&n->nconns_pub, memory_order_relaxed);
	out->workers = atomic_load_explicit(&n->nthreads_pub, memory_order_relaxed);
	out->workers_max = n->cfg.grow_after_ms < 0 ? n->cfg.workers : n->cfg.workers * 2;
}

void cn_net_stop(cn_net *n)
{
	n->stopping = 1;
	uint64_t one = 1;
	ssize_t w = write(n->evfd, &one, sizeof one);
	(void)w;
}

cn_err cn_net_run(cn_net *n, int grace_ms)
{
	struct epoll_event evs[256];
	int64_t last_scan = cn_mono_ms();
	while (!n->stopping) {
		int k = epoll_wait(n->epfd, evs, 256, 1000);
		if (k < 0 && errno != EINTR) {
			cn_log(CN_LOG_ERROR, NULL, "epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < k; i++) {
			void *p = evs[i].data.ptr;
			if (p == &n->lfd)
				on_accept(n);
			else if (p == &n->evfd)
				on_back(n);
			else if (((cn_conn *)p)->state == ST_WRITE)
				on_writable(n, p, evs[i].events);
			else if (((cn_conn *)p)->state == ST_DRAIN)
				on_drain_readable(n, p);
			else
				on_readable(n, p, evs[i].events);
		}
		int64_t now = cn_mono_ms();
		if (now - last_scan >= 1000) {
			expire(n);
			last_scan = now;
		}
		maybe_grow(n, now);
	}
	/* Graceful stop: no new connections; let queued and busy requests finish. */
	close(n->lfd);
	n->lfd = -1;
	int64_t until = cn_mono_ms() + grace_ms;
	for (;;) {
		pthread_mutex_lock(&n->mu);
		bool idle = n->busy == 0 && n->qlen == 0;
		pthread_mutex_unlock(&n->mu);
		if (idle || cn_mono_ms() > until)
			break;
		usleep(10000);
		on_back(n);
	}
	pthread_mutex_lock(&n->mu);
	n->shutdown = true;
	/* Requests still queued never started (nothing of them acknowledged): no worker takes
	 * them now, so the joins below cannot wait on them past the grace; their connections
	 * close with the rest. */
	size_t dropped = n->qlen;
	n->qhead = n->qtail = NULL;
	n->qlen = 0;
	pthread_cond_broadcast(&n->cv);
	bool clean = n->busy == 0;
	pthread_mutex_unlock(&n->mu);
	if (dropped)
		cn_log(CN_LOG_WARN, NULL, "stopping: %zu queued requests not started, their connections "
		       "closed", dropped);
	if (clean) {
		for (int i = 0; i < n->nthreads; i++)
			pthread_join(n->threads[i], NULL);
		on_back(n);
		while (n->all) {
			cn_conn *c = n->all;
			conn_close(n, c);
		}
	} else {
		cn_log(CN_LOG_WARN, NULL, "stopping with requests still running after %d ms", grace_ms);
	}
	return clean ? CN_OK : CN_ERR_TIMEOUT;
}

void cn_net_free(cn_net *n)
{
	if (!n)
		return;
	if (n->epfd >= 0)
		close(n->epfd);
	if (n->evfd >= 0)
		close(n->evfd);
	if (n->qfd >= 0)
		close(n->qfd);
	free(n->threads);
	free(n);
}

/* ---- worker-side I/O ---------------------------------------------------------------- */

void cn_conn_rate_reset(cn_conn *c)
{
	c->rate_waited_ms = 0;
	c->rate_bytes = 0;
}

/* NET-7: how long this wait may last. The client has earned grace + bytes/min_rate
 * of waiting; what it used already is rate_waited_ms. */
static int wait_budget_ms(const cn_conn *c)
{
	const cn_net_config *cfg = &c->net->cfg;
	int64_t budget = cfg->io_timeout_ms;
	if (cfg->min_rate > 0) {
		int64_t earned = cfg->rate_grace_ms + c->rate_bytes * 1000 / cfg->min_rate;
		if (earned - c->rate_waited_ms < budget)
			budget = earned - c->rate_waited_ms;
	}
	return budget > 0 ? (int)budget : 0;
}

static int wait_fd(cn_conn *c, short what)
{
	struct pollfd p = { .fd = c->fd, .events = what };
	for (;;) {
		int budget = wait_budget_ms(c);
		if (budget <= 0)
			return -CN_ERR_TIMEOUT;
		int64_t t0 = cn_mono_ms();
		int r = poll(&p, 1, budget);
		c->rate_waited_ms += cn_mono_ms() - t0;
		if (r > 0)
			return 0;
		if (r == 0)
			return -CN_ERR_TIMEOUT;
		if (errno != EINTR)
			return -CN_ERR_IO;
	}
}

ssize_t cn_conn_read(cn_conn *c, void *buf, size_t len)
{
	if (c->buf && c->off < c->len) {
		size_t n = c->len - c->off;
		if (n > len)
			n = len;
		memcpy(buf, c->buf + c->off, n);
		c->off += n;
		return (ssize_t)n;
	}
	for (;;) {
		ssize_t r = recv(c->fd, buf, len, MSG_DONTWAIT);
		if (r >= 0) {
			c->rate_bytes += r;
			return r;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int w = wait_fd(c, POLLIN);
			if (w < 0)
				return w;
			continue;
		}
		return errno == ECONNRESET ? -CN_ERR_CLOSED : -CN_ERR_IO;
	}
}

cn_err cn_conn_fill(cn_conn *c, size_t want, size_t max)
{
	if (want > max)
		return CN_ERR_TOO_LARGE;
	if (!c->buf) {
		size_t cap = want > HEAD_BUF_INIT ? want : HEAD_BUF_INIT;
		c->buf = malloc(cap);
		if (!c->buf)
			return CN_ERR_NOMEM;
		c->cap = cap;
		c->off = c->len = 0;
	}
	while (c->len - c->off < want) {
		if (c->off > 0 && c->cap - c->off < want) {
			memmove(c->buf, c->buf + c->off, c->len - c->off);
			c->len -= c->off;
			c->off = 0;
		}
		if (c->cap - c->off < want) {
			size_t ncap = c->cap * 2 > want ? c->cap * 2 : want;
			char *nb = realloc(c->buf, ncap);
			if (!nb)
				return CN_ERR_NOMEM;
			c->buf = nb;
			c->cap = ncap;
		}
		ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		if (r > 0) {
			c->len += (size_t)r;
			c->rate_bytes += r;
			continue;
		}
		if (r == 0)
			return CN_ERR_CLOSED;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int w = wait_fd(c, POLLIN);
			if (w < 0)
				return (cn_err)-w;
			continue;
		}
		return CN_ERR_CLOSED;
	}
	return CN_OK;
}

static cn_err send_all_iov(cn_conn *c, struct iovec *iov, int n, bool more)
{
	while (n > 0) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int r = wait_fd(c, POLLOUT);
				if (r < 0)
					return (cn_err)-r;
				continue;
			}
			return CN_ERR_CLOSED;
		}
		c->rate_bytes += w;
		size_t left = (size_t)w;
		while (n > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return CN_OK;
}

cn_err cn_conn_write(cn_conn *c, const void *p, size_t len)
{
	struct iovec iov = { (void *)p, len };
	return send_all_iov(c, &iov, 1, false);
}

cn_err cn_conn_writev(cn_conn *c, const struct iovec *iov, int n, bool more)
{
	struct iovec v[CN_CONN_IOV_MAX];
	int k = 0;
	CN_ASSERT(n <= CN_CONN_IOV_MAX);
	for (int i = 0; i < n; i++)
		if (iov[i].iov_len)
			v[k++] = iov[i]; /* send_all_iov advances its own copy */
	return k ? send_all_iov(c, v, k, more) : CN_OK;
}

cn_err cn_conn_send_nowv(cn_conn *c, const struct iovec *iov, int n, bool more, size_t *sent)
{
	struct iovec v[CN_CONN_IOV_MAX];
	int k = 0;
	CN_ASSERT(n <= CN_CONN_IOV_MAX);
	for (int i = 0; i < n; i++)
		if (iov[i].iov_len)
			v[k++] = iov[i];
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)k };
	*sent = 0;
	if (k == 0)
		return CN_OK;
	for (;;) {
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
		if (w >= 0) {
			*sent = (size_t)w;
			return CN_OK;
		}
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? CN_OK : CN_ERR_CLOSED;
	}
}

cn_err cn_conn_sendfile(cn_conn *c, int fd, int64_t off, int64_t len)
{
	off_t o = (off_t)off;
	while (len > 0) {
		size_t chunk = len > (1 << 30) ? (1u << 30) : (size_t)len;
		ssize_t w = sendfile(c->fd, fd, &o, chunk);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int r = wait_fd(c, POLLOUT);
				if (r < 0)
					return (cn_err)-r;
				continue;
			}
			return errno == EPIPE || errno == ECONNRESET ? CN_ERR_CLOSED : CN_ERR_IO;
		}
		if (w == 0)
			return CN_ERR_IO; /* file shorter than expected */
		c->rate_bytes += w;
		len -= w;
	}
	return CN_OK;
}
