/* http/exchange.c: one HTTP/1.1 request/response exchange on a connection, and the
 * per-connection serve loop that the worker runs (cn_http_serve).
 *
 * The request head is copied out of the connection buffer into the exchange (so the
 * connection buffer can be reused for body read-ahead while the parsed cn_str views stay
 * valid). Bodies are decoded from Content-Length or chunked framing; "100 Continue" is sent
 * on the first body read. After the handler, the exchange decides the connection's fate:
 * an unread body is skipped when the connection buffer already holds all of it, otherwise
 * the answer says "Connection: close" and the loop drains what still comes (a worker
 * never waits for a body nobody reads: loop.c NET-8); a connection whose framing we
 * are unsure of is never reused. A response of at most NOWAIT_MAX bytes is sent without
 * waiting: what the socket does not take at once goes to c->out, for the loop. */
#include "http/http.h"
#include "net/net.h"

#include <stdatomic.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Responses up to this size never make a worker wait for the client (loop.c NET-8):
 * error answers, small reads, every answer to an unauthenticated request. */
#define NOWAIT_MAX (16 * 1024)

struct cn_http_exchange {
	cn_conn *c;
	cn_http_req req;
	char *head;              /* owned copy of the request head */
	char reqid[17];
	/* body */
	cn_reader body;
	int64_t body_left;       /* Content-Length mode */
	int64_t body_in;         /* body bytes handed to the handler or drained */
	cn_http_chunked chunked;
	bool body_started, body_done, continue_sent;
	bool body_nowait;        /* cn_http_body_nowait */
	bool io_error;
	/* response */
	int status;
	cn_buf hdrs;             /* "Name: value\r\n" lines added by the handler */
	cn_buf headbuf;          /* the full head, built by send_head */
	bool head_built, head_sent, close;
	bool is_head;
	bool inline_mode;        /* on the loop thread: output never blocks (out_write) */
	bool nowait_out;         /* on a worker, a response of <= NOWAIT_MAX: output never
	                            blocks either; the rest goes to obuf, then c->out */
	bool deferred;           /* inline request that must be redone on a worker */
	bool on_wire;            /* inline: response bytes reached the socket (no deferral now) */
	bool sent_fd;            /* the body went out with sendfile (a large read) */
	cn_buf obuf;             /* inline: what the socket did not take yet; the loop sends it */
	size_t inline_total;     /* inline: response bytes written so far (sent or in obuf) */
	int64_t resp_len, resp_sent;
	int64_t t0_ns;           /* the head complete (cn_conn.head_ns) */
	int64_t ttfb_ns;         /* the response head sent - t0_ns; -1 before */
	cn_writer writer;
};

static atomic_ullong reqid_counter;
static unsigned long long reqid_base;

static void make_reqid(char out[17])
{
	if (!reqid_base) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		reqid_base = ((unsigned long long)ts.tv_sec << 24) ^ (unsigned long long)ts.tv_nsec;
	}
	unsigned long long v = reqid_base + atomic_fetch_add(&reqid_counter, 1);
	static const char hx[] = "0123456789ABCDEF";
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = hx[v & 15];
	out[16] = 0;
}

const cn_http_req *cn_http_request(cn_http_exchange *x)
{
	return &x->req;
}

const char *cn_http_peer(cn_http_exchange *x)
{
	return x->c->peer;
}

const char *cn_http_request_id(cn_http_exchange *x)
{
	return x->reqid;
}

static void maybe_continue(cn_http_exchange *x)
{
	if (x->body_started)
		return;
	x->body_started = true;
	if (x->c->continue_sent)
		x->continue_sent = true; /* the loop sent it while gathering the body */
	if (x->req.expect_continue && !x->continue_sent && x->c->off == x->c->len) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		if (cn_conn_write(x->c, cont, sizeof cont - 1) != CN_OK)
			x->io_error = true;
	}
	x->continue_sent = true;
}

static ssize_t body_read(cn_reader *rd, void *buf, size_t len)
{
	cn_http_exchange *x = (cn_http_exchange *)((char *)rd - offsetof(cn_http_exchange, body));
	if (len == 0)
		return 0;
	/* botocore asks for 100-continue even with an empty body and expects it (AWS sends it
	 * whenever asked): a handler that reads the body, even an empty one, triggers it. */
	maybe_continue(x);
	if (x->body_done)
		return 0;
	if (x->io_error)
		return -CN_ERR_CLOSED;
	if (!x->req.chunked) {
		if (x->body_left <= 0) {
			x->body_done = true;
			return 0;
		}
		if ((int64_t)len > x->body_left)
			len = (size_t)x->body_left;
		if (x->body_nowait && x->c->off == x->c->len)
			return -(ssize_t)CN_ERR_BUSY;
		ssize_t r = cn_conn_read(x->c, buf, len);
		if (r == 0)
			r = -CN_ERR_CLOSED;
		if (r < 0) {
			x->io_error = true;
			return r;
		}
		x->body_left -= r;
		x->body_in += r;
		if (x->body_left == 0)
			x->body_done = true;
		return r;
	}
	for (;;) {
		cn_conn *c = x->c;
		if (x->chunked.done) {
			x->body_done = true;
			return 0;
		}
		if (c->off == c->len) {
			if (x->body_nowait)
				return -(ssize_t)CN_ERR_BUSY;
			cn_err e = cn_conn_fill(c, 1, 1 << 20);
			if (e) {
				x->io_error = true;
				return -(ssize_t)(e == CN_ERR_TIMEOUT ? CN_ERR_TIMEOUT : CN_ERR_CLOSED);
			}
		}
		size_t used = 0, made = 0;
		cn_err e = cn_http_chunked_decode(&x->chunked, c->buf + c->off, c->len - c->off, &used,
		                                  buf, len, &made);
		c->off += used;
		if (e) {
			x->io_error = true;
			return -(ssize_t)CN_ERR_INVALID;
		}
		if (made > 0) {
			x->body_in += (int64_t)made;
			return (ssize_t)made;
		}
		if (x->chunked.done) {
			x->body_done = true;
			return 0;
		}
	}
}

cn_reader *cn_http_body(cn_http_exchange *x)
{
	return &x->body;
}

void cn_http_body_nowait(cn_http_exchange *x, bool on)
{
	x->body_nowait = on;
}

/* Body bytes of this request already in the connection buffer (Content-Length framing). */
static int64_t body_buffered(const cn_http_exchange *x)
{
	int64_t have = (int64_t)(x->c->len - x->c->off);
	return have < x->body_left ? have : x->body_left;
}

void cn_http_resp_start(cn_http_exchange *x, int status)
{
	CN_ASSERT(!x->head_sent);
	x->status = status;
	x->hdrs.len = 0;
	if (x->hdrs.p)
		x->hdrs.p[0] = 0;
}

bool cn_http_field_value_ok(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

cn_err cn_http_resp_header(cn_http_exchange *x, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);
	if (!cn_http_field_value_ok(name, nl) || !cn_http_field_value_ok(value, vl))
		return CN_ERR_INVALID;
	cn_err e = cn_buf_reserve(&x->hdrs, nl + vl + 4);
	if (e)
		return e;
	char *p = x->hdrs.p + x->hdrs.len;
	memcpy(p, name, nl);
	p += nl;
	*p++ = ':';
	*p++ = ' ';
	memcpy(p, value, vl);
	p += vl;
	*p++ = '\r';
	*p++ = '\n';
	*p = 0;
	x->hdrs.len += nl + vl + 4;
	return CN_OK;
}

cn_err cn_http_resp_headerf(cn_http_exchange *x, const char *name, const char *fmt, ...)
{
	char v[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(v, sizeof v, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof v)
		return CN_ERR_TOO_LARGE;
	return cn_http_resp_header(x, name, v);
}

void cn_http_resp_close(cn_http_exchange *x)
{
	x->close = true;
}

bool cn_http_resp_started(cn_http_exchange *x)
{
	return x->head_built;
}

int cn_http_resp_status(cn_http_exchange *x)
{
	return x->status;
}

void cn_http_traffic(cn_http_exchange *x, int64_t *in, int64_t *out)
{
	*in = x->body_in;
	*out = x->resp_sent;
}

int64_t cn_http_ttfb_ns(cn_http_exchange *x)
{
	if (x->deferred)
		return -1;
	if (x->head_built && !x->head_sent) /* finish() sends it next (a read that failed
	                                        before its first body byte, say) */
		return cn_mono_ns() - x->t0_ns;
	return x->ttfb_ns;
}

bool cn_http_defer(cn_http_exchange *x)
{
	if (!x->inline_mode)
		return false;
	CN_ASSERT(!x->on_wire && !x->head_built);
	x->deferred = true;
	return true;
}

bool cn_http_inline(cn_http_exchange *x)
{
	return x->inline_mode;
}

bool cn_http_deferred(cn_http_exchange *x)
{
	return x->deferred;
}

static __thread char date_cache[30];
static __thread time_t date_cache_sec;

static cn_err build_head(cn_http_exchange *x, int64_t length)
{
	CN_ASSERT(!x->head_built);
	if (x->status == 0)
		x->status = 200;
	x->head_built = true;
	x->resp_len = length;
	if (length < 0)
		x->close = true;
	/* A request body the handler did not read (an error answered early) is skipped only
	 * when all of it is buffered already; otherwise say now that we will close, so the
	 * client does not send its next request on a connection we drop (finish). */
	if (!x->body_done && (x->req.chunked || body_buffered(x) < x->body_left))
		x->close = true;
	x->nowait_out = !x->inline_mode && (x->is_head || (length >= 0 && length <= NOWAIT_MAX));
	time_t now = time(NULL);
	if (now != date_cache_sec) {
		cn_time_http((int64_t)now * 1000, date_cache);
		date_cache_sec = now;
	}
	cn_buf *b = &x->headbuf;
	b->len = 0;
	/* Put together by hand: the printf engine was ~5 % of a small GET's instructions. */
	cn_err e = cn_buf_reserve(b, 128 + x->hdrs.len);
	if (!e)
		e = cn_buf_append(b, "HTTP/1.1 ", 9);
	if (!e)
		e = cn_buf_put_u64(b, (uint64_t)x->status);
	if (!e)
		e = cn_buf_append(b, " ", 1);
	if (!e)
		e = cn_buf_puts(b, cn_http_reason(x->status));
	if (!e)
		e = cn_buf_append(b, "\r\nServer: cairn\r\nDate: ", 23);
	if (!e)
		e = cn_buf_puts(b, date_cache);
	if (!e)
		e = cn_buf_append(b, "\r\nx-amz-request-id: ", 20);
	if (!e)
		e = cn_buf_puts(b, x->reqid);
	if (!e)
		e = cn_buf_append(b, "\r\n", 2);
	if (!e && x->hdrs.len)
		e = cn_buf_append(b, x->hdrs.p, x->hdrs.len);
	if (!e && length >= 0 && x->status != 304 && x->status != 204 && x->status >= 200) {
		e = cn_buf_append(b, "Content-Length: ", 16);
		if (!e)
			e = cn_buf_put_u64(b, (uint64_t)length);
		if (!e)
			e = cn_buf_append(b, "\r\n", 2);
	}
	if (!e && x->close)
		e = cn_buf_puts(b, "Connection: close\r\n");
	else if (!e && x->req.minor_version == 0)
		e = cn_buf_puts(b, "Connection: keep-alive\r\n");
	if (!e)
		e = cn_buf_append(b, "\r\n", 2);
	return e;
}

/* Inline mode: responses up to this size are buffered and sent by the loop; anything
 * larger (or a sendfile) defers the request to a worker. */
#define INLINE_MAX (160 * 1024)
/* Worker-served reads up to this size hand their connection back to the loop (net.h). */
#define LOOP_NEXT_MAX (16 * 1024)

/* Response bytes a then b. On a worker: blocking writes. Inline (the loop thread): as much
 * as the socket takes now goes straight to it (no copy of the body), the rest waits in obuf
 * for the loop; once anything is behind obuf, everything after it queues there too, in
 * order. A response larger than INLINE_MAX defers the request to a worker, which is only
 * possible while nothing is on the wire. more: further bytes of this response follow. */
static cn_err out_writev(cn_http_exchange *x, const struct iovec *iov, int n, bool more)
{
	if (!x->inline_mode && !x->nowait_out)
		return cn_conn_writev(x->c, iov, n, more);
	if (x->deferred)
		return CN_ERR_BUSY;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	if (x->inline_mode && x->inline_total + total > INLINE_MAX) {
		if (x->on_wire) /* not reached: bodies over INLINE_MAX / 2 defer at send_head */
			return CN_ERR_TOO_LARGE;
		x->deferred = true;
		return CN_ERR_BUSY;
	}
	x->inline_total += total;
	size_t sent = 0;
	if (x->obuf.len == 0) {
		cn_err e = cn_conn_send_nowv(x->c, iov, n, more, &sent);
		if (e)
			return e;
		x->on_wire |= sent > 0;
	}
	cn_err e = CN_OK;
	for (int i = 0; !e && i < n; i++) { /* what the socket did not take, in order */
		size_t l = iov[i].iov_len;
		if (sent >= l) {
			sent -= l;
			continue;
		}
		e = cn_buf_append(&x->obuf, (const char *)iov[i].iov_base + sent, l - sent);
		sent = 0;
	}
	return e;
}

static cn_err out_write(cn_http_exchange *x, const void *a, size_t alen, const void *b, size_t blen,
                        bool more)
{
	struct iovec iov[2] = { { (void *)a, alen }, { (void *)b, blen } };
	return out_writev(x, iov, 2, more);
}

static cn_err flush_head(cn_http_exchange *x, const void *body, size_t len, bool more)
{
	if (x->head_sent)
		return len ? out_write(x, body, len, NULL, 0, more) : CN_OK;
	x->head_sent = true;
	x->ttfb_ns = cn_mono_ns() - x->t0_ns;
	cn_err e = out_write(x, x->headbuf.p, x->headbuf.len, body, len, more);
	if (e)
		x->io_error = true;
	return e;
}

/* The head (if not sent yet) and the n body pieces in one write. */
_Static_assert(CN_WRITEV_MAX < CN_CONN_IOV_MAX, "a head and CN_WRITEV_MAX pieces fit");
static cn_err flush_headv(cn_http_exchange *x, const struct iovec *iov, int n, bool more)
{
	if (x->head_sent)
		return out_writev(x, iov, n, more);
	struct iovec v[CN_CONN_IOV_MAX];
	v[0] = (struct iovec){ x->headbuf.p, x->headbuf.len };
	memcpy(v + 1, iov, (size_t)n * sizeof *iov);
	x->head_sent = true;
	x->ttfb_ns = cn_mono_ns() - x->t0_ns;
	cn_err e = out_writev(x, v, n + 1, more);
	if (e)
		x->io_error = true;
	return e;
}

cn_err cn_http_resp_send_head(cn_http_exchange *x, int64_t length)
{
	if (x->inline_mode && !x->is_head && (length < 0 || length > INLINE_MAX / 2)) {
		x->deferred = true; /* large bodies stream (sendfile) from a worker */
		x->head_built = x->head_sent = true;
		return CN_ERR_BUSY;
	}
	cn_err e = build_head(x, length);
	if (e)
		return e;
	/* Hold the head back to coalesce it with the first body bytes, unless there are none. */
	if (length == 0 || x->is_head)
		return flush_head(x, NULL, 0, false);
	return CN_OK;
}

cn_err cn_http_resp_bodyv(cn_http_exchange *x, const struct iovec *iov, int n)
{
	CN_ASSERT(x->head_built);
	if (n < 1 || n > CN_WRITEV_MAX)
		return CN_ERR_INVALID; /* handler bug */
	if (x->deferred)
		return CN_ERR_BUSY;
	if (x->is_head)
		return CN_OK;
	if (x->io_error)
		return CN_ERR_CLOSED;
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (x->resp_len >= 0 && x->resp_sent + (int64_t)len > x->resp_len)
		return CN_ERR_INVALID; /* handler bug: more than announced */
	bool more = x->resp_len >= 0 && x->resp_sent + (int64_t)len < x->resp_len;
	cn_err e = flush_headv(x, iov, n, more);
	if (e) {
		x->io_error = true;
		return e;
	}
	x->resp_sent += (int64_t)len;
	return CN_OK;
}

cn_err cn_http_resp_body(cn_http_exchange *x, const void *p, size_t len)
{
	struct iovec v = { (void *)p, len };
	return cn_http_resp_bodyv(x, &v, 1);
}

static cn_err w_write(cn_writer *w, const void *p, size_t len)
{
	cn_http_exchange *x = (cn_http_exchange *)((char *)w - offsetof(cn_http_exchange, writer));
	return cn_http_resp_body(x, p, len);
}

static cn_err w_writev(cn_writer *w, const struct iovec *iov, int n)
{
	cn_http_exchange *x = (cn_http_exchange *)((char *)w - offsetof(cn_http_exchange, writer));
	return cn_http_resp_bodyv(x, iov, n);
}

/* Inline, with bytes on the wire already (so no deferral): the file's bytes through
 * memory. Bounded: an inline response is at most INLINE_MAX / 2 of body. */
static cn_err send_fd_copy(cn_http_exchange *x, int fd, int64_t off, int64_t len)
{
	char buf[16384];
	while (len > 0) {
		ssize_t r = pread(fd, buf, len < (int64_t)sizeof buf ? (size_t)len : sizeof buf, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			x->io_error = true;
			return CN_ERR_IO; /* file shorter than announced, as cn_conn_sendfile */
		}
		cn_err e = cn_http_resp_body(x, buf, (size_t)r);
		if (e)
			return e;
		off += r;
		len -= r;
	}
	return CN_OK;
}

static cn_err w_send_fd(cn_writer *w, int fd, int64_t off, int64_t len)
{
	cn_http_exchange *x = (cn_http_exchange *)((char *)w - offsetof(cn_http_exchange, writer));
	CN_ASSERT(x->head_built);
	if (x->is_head)
		return CN_OK;
	if (x->inline_mode && !x->on_wire) {
		x->deferred = true; /* nothing sent yet: a worker sends the file */
		return CN_ERR_BUSY;
	}
	if (x->io_error)
		return CN_ERR_CLOSED;
	if (x->inline_mode || x->nowait_out)
		return send_fd_copy(x, fd, off, len); /* small: through memory, never waiting */
	x->sent_fd = true;
	cn_err e = flush_head(x, NULL, 0, true);
	if (!e)
		e = cn_conn_sendfile(x->c, fd, off, len);
	if (e) {
		x->io_error = true;
		return e;
	}
	x->resp_sent += len;
	return CN_OK;
}

cn_writer *cn_http_resp_writer(cn_http_exchange *x)
{
	return &x->writer;
}

cn_err cn_http_resp_send(cn_http_exchange *x, const void *body, size_t len)
{
	cn_err e = build_head(x, (int64_t)len);
	if (e)
		return e;
	if (x->is_head)
		return flush_head(x, NULL, 0, false);
	e = flush_head(x, body, len, false);
	if (!e)
		x->resp_sent = (int64_t)len;
	return e;
}

static void simple_reply(cn_conn *c, int status)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "HTTP/1.1 %d %s\r\nServer: cairn\r\nConnection: close\r\n"
	                                  "Content-Length: 0\r\n\r\n", status, cn_http_reason(status));
	cn_conn_write(c, buf, (size_t)n);
}

/* After the handler: can the connection carry another request? KEEP, or CLOSE, or
 * DRAIN_CLOSE when the client may still be sending a body we did not read (net.h): a
 * plain close would then reset the connection under the response. */
static cn_conn_verdict finish(cn_http_exchange *x)
{
	if (x->deferred)
		return CN_CONN_KEEP; /* nothing was sent: a worker runs the request again */
	if (!x->head_built) {
		cn_log(CN_LOG_ERROR, x->reqid, "handler sent no response; answering 500");
		x->status = 500;
		x->close = true;
		cn_http_resp_send(x, NULL, 0);
	} else if (!x->head_sent) {
		flush_head(x, NULL, 0, false);
	}
	if (x->io_error)
		return CN_CONN_CLOSE;
	if (!x->is_head && x->resp_len >= 0 && x->resp_sent != x->resp_len)
		return CN_CONN_CLOSE; /* short response: framing is broken, close */
	bool unread = !x->body_done; /* done from the start without a body (serve_one) */
	if (unread && !x->req.chunked && body_buffered(x) == x->body_left) {
		x->c->off += (size_t)x->body_left; /* all of it is here: skip it, no wait */
		x->body_in += x->body_left;
		x->body_left = 0;
		x->body_done = true;
		unread = false;
	}
	if (unread) /* the loop discards what still comes (loop.c NET-5) */
		return CN_CONN_DRAIN_CLOSE;
	if (x->close || !x->req.keep_alive)
		return CN_CONN_CLOSE;
	return CN_CONN_KEEP;
}

/* Body bytes of req that must be buffered before it is served (0: none, or all there). */
static size_t preread_missing(const cn_conn *c, const cn_http_req *req, size_t hlen,
                              cn_http_preread_fn pre, void *ctx)
{
	if (!pre || req->chunked || req->content_length <= 0)
		return 0;
	size_t want = pre(ctx, req);
	if (want > CN_HTTP_PREREAD_MAX)
		want = CN_HTTP_PREREAD_MAX;
	if ((int64_t)want > req->content_length)
		want = (size_t)req->content_length;
	return c->len - c->off >= hlen + want ? 0 : want;
}

/* Inline: a request with a body goes to a worker, once the bytes of it that pre asks for
 * are buffered (loop.c NET-8). */
static cn_conn_verdict preread_or_defer(cn_conn *c, const cn_http_req *req, size_t hlen,
                                        cn_http_preread_fn pre, void *ctx)
{
	size_t want = preread_missing(c, req, hlen, pre, ctx);
	if (want == 0)
		return CN_CONN_DEFER;
	if (req->expect_continue && !c->continue_sent) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		struct iovec v = { (void *)cont, sizeof cont - 1 };
		size_t sent = 0;
		/* an empty send buffer takes 25 bytes; a client that reads nothing: its loss */
		if (cn_conn_send_nowv(c, &v, 1, false, &sent) != CN_OK || sent != v.iov_len)
			return CN_CONN_CLOSE;
		c->continue_sent = true;
	}
	c->preread = hlen + want;
	return CN_CONN_MORE;
}

/* Serves the request whose head is buffered at c->off. Returns CN_CONN_KEEP/CLOSE, or
 * CN_CONN_DEFER in inline mode when the request must run on a worker, or CN_CONN_MORE when
 * its body must be gathered first (c->off restored in both). */
static cn_conn_verdict serve_one(cn_conn *c, cn_http_handler h, cn_http_preread_fn pre, void *ctx,
                                 bool inline_mode)
{
	cn_http_exchange x;
	memset(&x, 0, sizeof x);
	x.c = c;
	size_t avail = c->len - c->off;
	const char *end = cn_find_head_end(c->buf + c->off, avail, 0);
	if (!end)
		return CN_CONN_KEEP; /* incomplete: back to the loop */
	size_t hlen = (size_t)(end - (c->buf + c->off));
	x.head = malloc(hlen);
	if (!x.head) {
		simple_reply(c, 503);
		return CN_CONN_CLOSE;
	}
	memcpy(x.head, c->buf + c->off, hlen);
	/* Parse the private copy so every view stays valid while the buffer is reused. */
	int r = cn_http_parse_request(x.head, hlen, &x.req);
	if (r <= 0) {
		int status = r < 0 ? -r : 400;
		cn_log(CN_LOG_INFO, NULL, "%s: bad request head (%d)", c->peer, status);
		simple_reply(c, status);
		free(x.head);
		return CN_CONN_CLOSE;
	}
	if (inline_mode && (!h || x.req.chunked || x.req.content_length > 0 ||
	                    !(cn_str_eq_c(x.req.method, "GET") || cn_str_eq_c(x.req.method, "HEAD")))) {
		cn_conn_verdict v = preread_or_defer(c, &x.req, hlen, pre, ctx);
		free(x.head);
		return v;
	}
	if (!inline_mode && preread_missing(c, &x.req, hlen, pre, ctx)) {
		free(x.head); /* read by this worker, not gathered: the loop gathers it */
		return CN_CONN_MORE;
	}
	if (!inline_mode)
		cn_conn_rate_reset(c); /* loop.c NET-7: this request's waits */
	c->off += hlen;
	if (!c->head_ns)
		c->head_ns = cn_mono_ns(); /* a head a worker read itself */
	x.t0_ns = c->head_ns;
	x.ttfb_ns = -1;
	make_reqid(x.reqid);
	x.inline_mode = inline_mode;
	x.body.read = body_read;
	x.body_left = x.req.chunked ? 0 : (x.req.content_length > 0 ? x.req.content_length : 0);
	if (!x.req.chunked && x.body_left == 0)
		x.body_done = true;
	cn_http_chunked_init(&x.chunked);
	x.is_head = cn_str_eq_c(x.req.method, "HEAD");
	x.writer.write = w_write;
	x.writer.send_fd = w_send_fd;
	x.writer.writev = w_writev;
	cn_buf_init(&x.hdrs);
	cn_buf_init(&x.headbuf);
	cn_buf_init(&x.obuf);

	h(ctx, &x);
	cn_conn_verdict verdict = finish(&x);
	if (inline_mode && verdict == CN_CONN_DRAIN_CLOSE)
		verdict = CN_CONN_CLOSE; /* inline requests have no body (above) */
	/* A small read the inline handler would have taken (net.h: loop_next). Only up to
	 * LOOP_NEXT_MAX: for larger reads the thread hand-off is a smaller share of the cost
	 * and serving them on workers spreads them over the cores (measured: 64 KiB GETs were
	 * ~7 % fewer per second on the one loop thread, 4 KiB GETs 10 % more; docs/PERF.md). */
	bool bodiless_read = (x.is_head || cn_str_eq_c(x.req.method, "GET")) && !x.req.chunked &&
	                     x.req.content_length <= 0;
	bool small_answer = x.is_head || (!x.sent_fd && x.resp_len >= 0 && x.resp_len <= LOOP_NEXT_MAX);
	c->loop_next = !inline_mode && bodiless_read && small_answer;
	free(x.head);
	cn_buf_fini(&x.hdrs);
	cn_buf_fini(&x.headbuf);
	if (x.deferred) {
		/* Nothing reached the socket: hand the untouched request to a worker. */
		CN_ASSERT(!x.on_wire);
		cn_buf_fini(&x.obuf);
		c->off -= hlen;
		return CN_CONN_DEFER; /* head_ns kept: the worker's run counts from it */
	}
	c->head_ns = 0;
	c->continue_sent = false;
	if (inline_mode || x.obuf.len) {
		CN_ASSERT(!c->out);
		c->out = x.obuf.p; /* what the socket did not take: the connection owns it, the
		                    * loop sends it */
		c->out_off = 0;
		c->out_len = x.obuf.len;
	} else {
		cn_buf_fini(&x.obuf);
	}
	return verdict;
}

int cn_http_serve(struct cn_conn *c, cn_http_handler h, cn_http_preread_fn pre, void *ctx)
{
	for (;;) {
		cn_conn_verdict v = serve_one(c, h, pre, ctx, false);
		if (v != CN_CONN_KEEP || c->out)
			return v; /* c->out: the loop sends it before the next request */
		if (!cn_conn_has_head(c))
			return CN_CONN_KEEP;
	}
}

int cn_http_serve_inline(struct cn_conn *c, cn_http_handler h, cn_http_preread_fn pre, void *ctx)
{
	return serve_one(c, h, pre, ctx, true);
}
