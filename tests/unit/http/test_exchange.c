/* Unit tests for the response path of src/http/exchange.c as the server wires it: the
 * loop's inline handler (cn_http_serve_inline) first, a worker (cn_http_serve) for what it
 * defers. Inline responses go to the socket as far as it takes them at once, the rest
 * waits for the loop (obuf -> c->out); whatever path a response takes, the client must get
 * exactly the announced bytes, in order, and pipelined responses must not interleave.
 *
 * Handler paths: /n/LEN  LEN bytes written in 7000-byte pieces
 *                /f/LEN  1000 bytes written, then the rest sent from a file (send_fd)
 *                /r/LEN  the request body read whole, then LEN bytes written ("ERR" and
 *                        500 when a read fails)
 *                /p/LEN  the same, but the body is pre-read by the loop (pre_h) and read
 *                        here without waiting (cn_http_body_nowait): 500 "BUSY" when a
 *                        read would have had to wait
 *                /u/LEN  LEN bytes written, the body left unread
 * Body byte i is (i * 7 + LEN) % 251. `calls` counts handler runs: a request served
 * inline runs once, one the loop deferred runs twice (inline attempt, then the worker). */
#include "http/http.h"
#include "net/net.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_int calls;
static int file_fd = -1; /* holds pattern bytes of FILE_LEN at offset 0 */
#define FILE_LEN (200 * 1024)

static unsigned char pat(size_t i, size_t len)
{
	return (unsigned char)((i * 7 + len) % 251);
}

static void handler(void *ctx, cn_http_exchange *x)
{
	(void)ctx;
	atomic_fetch_add(&calls, 1);
	const cn_http_req *r = cn_http_request(x);
	char path[64];
	snprintf(path, sizeof path, "%.*s", (int)r->path.len, r->path.p);
	size_t len = strtoul(path + 3, NULL, 10);
	if (path[1] == 'r' || path[1] == 'p') {
		cn_http_body_nowait(x, path[1] == 'p');
		cn_reader *rd = cn_http_body(x);
		char tmp[4096];
		ssize_t got;
		while ((got = rd->read(rd, tmp, sizeof tmp)) > 0)
			;
		if (got < 0) {
			bool busy = got == -(ssize_t)CN_ERR_BUSY;
			cn_http_resp_start(x, 500);
			cn_http_resp_send(x, busy ? "BUSY" : "ERR", busy ? 4 : 3);
			return;
		}
	}
	cn_http_resp_start(x, 200);
	if (cn_http_resp_send_head(x, (int64_t)len))
		return;
	static __thread unsigned char buf[FILE_LEN];
	for (size_t i = 0; i < len; i++)
		buf[i] = pat(i, len);
	if (path[1] == 'v') { /* pieces of uneven sizes, up to 5 per bodyv, one of them empty */
		for (size_t off = 0; off < len;) {
			struct iovec iov[5];
			int n = 0;
			for (; n < 5 && off < len; n++) {
				size_t l = n == 2 ? 0 : (off * 13 + 997) % 5000 + 1;
				if (l > len - off)
					l = len - off;
				iov[n] = (struct iovec){ buf + off, l };
				off += l;
			}
			if (cn_http_resp_bodyv(x, iov, n))
				return;
		}
		return;
	}
	size_t first = path[1] == 'f' ? (len < 1000 ? len : 1000) : len;
	for (size_t off = 0; off < first;) {
		size_t n = first - off < 7000 ? first - off : 7000;
		if (cn_http_resp_body(x, buf + off, n))
			return;
		off += n;
	}
	if (first < len) {
		/* the file holds this length's pattern: rewrite it for this request */
		if (pwrite(file_fd, buf, len, 0) != (ssize_t)len)
			return;
		cn_writer *w = cn_http_resp_writer(x);
		w->send_fd(w, file_fd, (int64_t)first, (int64_t)(len - first));
	}
}

static size_t pre_h(void *ctx, const cn_http_req *req)
{
	(void)ctx;
	return req->path.len > 3 && !memcmp(req->path.p, "/p/", 3) ? CN_HTTP_PREREAD_MAX : 0;
}

static cn_conn_verdict worker(void *ctx, cn_conn *c)
{
	return (cn_conn_verdict)cn_http_serve(c, handler, pre_h, ctx);
}


static cn_conn_verdict inline_h(void *ctx, cn_conn *c)
{
	return (cn_conn_verdict)cn_http_serve_inline(c, handler, pre_h, ctx);
}

static void *run(void *arg)
{
	cn_net_run(arg, 1000);
	return NULL;
}

static cn_net *net;
static pthread_t net_th;

static bool start_with(cn_net_config cfg)
{
	cfg.host = "127.0.0.1";
	cfg.port = 0;
	cfg.inline_handler = inline_h;
	cfg.grow_after_ms = -1; /* the tests count on a fixed pool */
	if (cn_net_new(&cfg, worker, NULL, &net) != CN_OK)
		return false;
	pthread_create(&net_th, NULL, run, net);
	return true;
}

static bool start(void)
{
	return start_with((cn_net_config){ .workers = 2, .linger_ms = 0 });
}

static void stop(void)
{
	cn_net_stop(net);
	pthread_join(net_th, NULL);
	cn_net_free(net);
}

static int dial(int rcvbuf)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (rcvbuf) /* before connect: a small window makes the server's sends partial */
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cn_net_port(net)) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	struct timeval tv = { 5, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static bool read_n(int fd, unsigned char *p, size_t n, bool slow)
{
	size_t got = 0;
	while (got < n) {
		if (slow)
			usleep(200); /* a slow reader: the server must wait, not drop bytes */
		ssize_t r = read(fd, p + got, slow && n - got > 4096 ? 4096 : n - got);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* Reads one response: head up to CRLFCRLF (byte by byte), Content-Length, then the body,
 * which must be the pattern of its length. */
static bool read_response(int fd, size_t want_len, bool slow)
{
	char head[1024];
	size_t h = 0;
	while (h < sizeof head - 1) {
		if (read(fd, head + h, 1) != 1)
			return false;
		h++;
		if (h >= 4 && memcmp(head + h - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	head[h] = 0;
	if (strncmp(head, "HTTP/1.1 200 ", 13) != 0)
		return false;
	const char *cl = strstr(head, "Content-Length: ");
	if (!cl || strtoul(cl + 16, NULL, 10) != want_len)
		return false;
	unsigned char *body = malloc(want_len + 1);
	bool ok = body && read_n(fd, body, want_len, slow);
	for (size_t i = 0; ok && i < want_len; i++)
		ok = body[i] == pat(i, want_len);
	free(body);
	return ok;
}

static bool get(int fd, char kind, size_t len, bool slow)
{
	char req[128];
	int n = snprintf(req, sizeof req, "GET /%c/%zu HTTP/1.1\r\nHost: x\r\n\r\n", kind, len);
	return write(fd, req, (size_t)n) == n && read_response(fd, len, slow);
}

TEST(inline_bodies_arrive_whole)
{
	CHECK(start());
	int fd = dial(0);
	CHECK(fd >= 0);
	static const size_t lens[] = { 0, 1, 6999, 7000, 7001, 65536, 65536 + 4096, 81920 };
	for (int v = 0; v < 2; v++) { /* bodies in single writes, then in pieces (bodyv) */
		for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
			atomic_store(&calls, 0);
			CHECK(get(fd, v ? 'v' : 'n', lens[i], false));
			CHECK_EQ_INT(atomic_load(&calls), 1); /* served on the loop */
		}
		atomic_store(&calls, 0);
		/* over INLINE_MAX / 2: deferred to a worker (blocking writes) */
		CHECK(get(fd, v ? 'v' : 'n', 200 * 1024, false));
		CHECK_EQ_INT(atomic_load(&calls), 2);
	}
	close(fd);
	stop();
}

TEST(partial_sends_queue_in_order)
{
	CHECK(start());
	/* a 4 KiB receive window: an 80 KiB inline response cannot leave at once; what the
	 * socket does not take waits for the loop, and a slow reader still gets every byte */
	int fd = dial(4096);
	CHECK(fd >= 0);
	for (int i = 0; i < 4; i++) {
		atomic_store(&calls, 0);
		CHECK(get(fd, i % 2 ? 'v' : 'n', 81920, true)); /* 'v': pieces partly taken */
		CHECK_EQ_INT(atomic_load(&calls), 1);
	}
	CHECK(get(fd, 'v', 200 * 1024, true)); /* a worker's blocking pieces, slow reader */
	close(fd);
	stop();
}

TEST(pipelined_responses_do_not_interleave)
{
	CHECK(start());
	int fd = dial(4096);
	CHECK(fd >= 0);
	char reqs[512];
	int n = snprintf(reqs, sizeof reqs,
	                 "GET /n/70000 HTTP/1.1\r\nHost: x\r\n\r\nGET /n/5 HTTP/1.1\r\nHost: x\r\n\r\n"
	                 "GET /n/65536 HTTP/1.1\r\nHost: x\r\n\r\n");
	CHECK(write(fd, reqs, (size_t)n) == n);
	CHECK(read_response(fd, 70000, true));
	CHECK(read_response(fd, 5, true));
	CHECK(read_response(fd, 65536, true));
	close(fd);
	stop();
}

TEST(file_after_bytes_on_the_wire_is_sent_inline)
{
	CHECK(start());
	int fd = dial(0);
	CHECK(fd >= 0);
	/* the first 1000 bytes go straight to the socket; the file-backed rest can no longer
	 * be deferred to a worker, so it is read into memory and sent by the loop: one run */
	atomic_store(&calls, 0);
	CHECK(get(fd, 'f', 50000, false));
	CHECK_EQ_INT(atomic_load(&calls), 1);
	/* the same with a small window (the head and first bytes may partly wait in obuf) */
	close(fd);
	fd = dial(4096);
	CHECK(get(fd, 'f', 50000, true));
	/* a file-backed response too large to serve inline still goes to a worker whole */
	atomic_store(&calls, 0);
	CHECK(get(fd, 'f', 150000, false));
	CHECK_EQ_INT(atomic_load(&calls), 2);
	close(fd);
	stop();
}

/* Reads one response head (byte by byte) into head; its status, or -1. */
static int read_head(int fd, char *head, size_t cap)
{
	size_t h = 0;
	while (h < cap - 1) {
		if (read(fd, head + h, 1) != 1)
			return -1;
		h++;
		if (h >= 4 && memcmp(head + h - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	head[h] = 0;
	return strncmp(head, "HTTP/1.1 ", 9) ? -1 : atoi(head + 9);
}

static bool send_str(int fd, const char *s)
{
	size_t n = strlen(s);
	return write(fd, s, n) == (ssize_t)n;
}

/* Seconds until the peer closes (reads and discards), at most limit_s. */
static double secs_until_eof(int fd, double limit_s)
{
	int64_t t0 = cn_mono_ms();
	struct timeval tv = { 0, 200 * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char sink[4096];
	while ((cn_mono_ms() - t0) / 1000.0 < limit_s) {
		ssize_t r = read(fd, sink, sizeof sink);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return (cn_mono_ms() - t0) / 1000.0;
	}
	return limit_s;
}

/* NET-8 (net/loop.c): an unread body that is not buffered is not waited for on the
 * worker: the answer says Connection: close at once and the loop drains the rest. */
TEST(unread_body_is_not_waited_for)
{
	CHECK(start_with((cn_net_config){ .workers = 1, .linger_ms = 0 }));
	int fd = dial(0);
	CHECK(fd >= 0);
	/* all of a small body buffered with the head: skipped, the connection stays */
	CHECK(send_str(fd, "POST /u/3 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
	char head[1024];
	CHECK_EQ_INT(read_head(fd, head, sizeof head), 200);
	CHECK(!strstr(head, "Connection: close"));
	char b[3];
	CHECK(read_n(fd, (unsigned char *)b, 3, false));
	/* a body that is still coming: close, without a worker waiting for it */
	CHECK(send_str(fd, "POST /u/3 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nab"));
	int64_t t0 = cn_mono_ms();
	CHECK_EQ_INT(read_head(fd, head, sizeof head), 200);
	CHECK(strstr(head, "Connection: close") != NULL);
	CHECK(read_n(fd, (unsigned char *)b, 3, false));
	/* the one worker is free at once: another connection is served */
	int fd2 = dial(0);
	CHECK(fd2 >= 0);
	CHECK(send_str(fd2, "POST /u/3 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz"));
	CHECK_EQ_INT(read_head(fd2, head, sizeof head), 200);
	CHECK(cn_mono_ms() - t0 < 2000);
	/* the loop drains what the first client still sends, then sees it close */
	char junk[8192];
	memset(junk, 'j', sizeof junk);
	CHECK(write(fd, junk, sizeof junk) == (ssize_t)sizeof junk);
	shutdown(fd, SHUT_WR);
	CHECK(secs_until_eof(fd, 5) < 4);
	close(fd);
	close(fd2);
	stop();
}

/* NET-7: a client that reads nothing cannot hold a worker with small responses:
 * what its socket does not take goes to the loop. Two connections pipeline requests whose
 * answers fill their sockets and never read; a third is still served by the two workers. */
#define STUCK_REQS 320
TEST(small_responses_never_block_a_worker)
{
	CHECK(start_with((cn_net_config){ .workers = 2, .linger_ms = 0 }));
	int stuck[2];
	for (int i = 0; i < 2; i++) {
		stuck[i] = dial(4096);
		CHECK(stuck[i] >= 0);
		/* POSTs (never inline) answered with 16 KiB each: 5 MiB, more than the server's
		 * send buffer (at most 4 MiB: tcp_wmem) and the client's window together */
		static char reqs[STUCK_REQS * 64];
		size_t n = 0;
		for (int k = 0; k < STUCK_REQS; k++)
			n += (size_t)snprintf(reqs + n, sizeof reqs - n,
			                      "POST /u/16384 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
		CHECK(write(stuck[i], reqs, n) == (ssize_t)n);
	}
	usleep(300 * 1000);
	int fd = dial(0);
	CHECK(fd >= 0);
	int64_t t0 = cn_mono_ms();
	CHECK(send_str(fd, "POST /u/5 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
	char head[1024];
	CHECK_EQ_INT(read_head(fd, head, sizeof head), 200);
	CHECK(cn_mono_ms() - t0 < 2000);
	/* and the stuck clients still get every byte, in order, once they read */
	for (int i = 0; i < 2; i++) {
		for (int k = 0; k < STUCK_REQS; k++)
			CHECK(read_response(stuck[i], 16384, false));
		close(stuck[i]);
	}
	close(fd);
	stop();
}

/* NET-7: a client dripping its body is cut off once it falls below the minimum
 * rate after the grace (here 100 B/s after 1 s), not after the 30 s stall bound. */
TEST(a_dripping_body_is_cut_off)
{
	CHECK(start_with((cn_net_config){ .workers = 1, .linger_ms = 0, .min_rate = 100,
	                                  .rate_grace_ms = 1000 }));
	int fd = dial(0);
	CHECK(fd >= 0);
	CHECK(send_str(fd, "PUT /r/2 HTTP/1.1\r\nHost: x\r\nAuthorization: x\r\nContent-Length: 100\r\n\r\n"));
	int64_t t0 = cn_mono_ms();
	bool closed = false;
	for (int i = 0; i < 100 && !closed; i++) { /* a byte every 250 ms: 4 B/s */
		if (write(fd, "d", 1) != 1)
			closed = true;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 250) > 0)
			closed = true;
	}
	double took = (cn_mono_ms() - t0) / 1000.0;
	CHECK(closed);
	CHECK(took < 4);
	char head[1024];
	CHECK_EQ_INT(read_head(fd, head, sizeof head), 500); /* the read failed: ERR */
	close(fd);
	/* a client that keeps the rate is served */
	fd = dial(0);
	CHECK(send_str(fd, "PUT /r/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 600\r\n\r\n"));
	char piece[200];
	memset(piece, 'k', sizeof piece);
	for (int i = 0; i < 3; i++) { /* 200 B every 500 ms: 400 B/s */
		CHECK(write(fd, piece, sizeof piece) == (ssize_t)sizeof piece);
		usleep(500 * 1000);
	}
	CHECK(read_response(fd, 2, false));
	close(fd);
	stop();
}

/* NET-8: a request whose body the handler wants pre-read goes to a worker only once
 * that much is buffered; a client dripping it holds no worker and gets 408 at the header
 * deadline. */
TEST(pre_read_bodies_are_gathered_by_the_loop)
{
	CHECK(start_with((cn_net_config){ .workers = 1, .linger_ms = 0, .header_timeout_ms = 1500 }));
	int fd = dial(0);
	CHECK(fd >= 0);
	atomic_store(&calls, 0);
	CHECK(send_str(fd, "POST /p/4 HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab"));
	usleep(200 * 1000);
	CHECK_EQ_INT(atomic_load(&calls), 0); /* not even the inline handler's run */
	CHECK(send_str(fd, "cd"));
	usleep(200 * 1000);
	CHECK(send_str(fd, "ef"));
	CHECK(read_response(fd, 4, false)); /* read whole without a wait: 200 */
	CHECK_EQ_INT(atomic_load(&calls), 1);
	/* Expect: 100-continue: the loop says 100 Continue itself, then gathers */
	CHECK(send_str(fd, "POST /p/3 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
	                   "Content-Length: 4\r\n\r\n"));
	char head[1024];
	CHECK_EQ_INT(read_head(fd, head, sizeof head), 100);
	CHECK(send_str(fd, "wxyz"));
	CHECK(read_response(fd, 3, false));
	/* a body larger than the pre-read: the first CN_HTTP_PREREAD_MAX bytes only */
	char *big = malloc(CN_HTTP_PREREAD_MAX + 10);
	memset(big, 'b', CN_HTTP_PREREAD_MAX + 10);
	CHECK(send_str(fd, "POST /p/3 HTTP/1.1\r\nHost: x\r\nContent-Length: 65546\r\n\r\n"));
	CHECK(write(fd, big, CN_HTTP_PREREAD_MAX) == CN_HTTP_PREREAD_MAX);
	CHECK_EQ_INT(read_head(fd, head, sizeof head), 500); /* the rest would need a wait */
	free(big);
	close(fd);
	/* pipelined behind a request a worker serves: the worker does not serve it before its
	 * body is gathered; it hands the connection back and the loop gathers it */
	fd = dial(0);
	CHECK(send_str(fd, "POST /u/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz"
	                   "POST /p/5 HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab"));
	CHECK(read_response(fd, 2, false));
	usleep(100 * 1000);
	CHECK(send_str(fd, "cdef"));
	CHECK(read_response(fd, 5, false)); /* 500 BUSY had the worker read it without waiting */
	close(fd);
	/* a drip: 408 at the header deadline, the one worker free all along */
	fd = dial(0);
	atomic_store(&calls, 0);
	CHECK(send_str(fd, "POST /p/4 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"));
	int fd2 = dial(0);
	CHECK(send_str(fd2, "POST /u/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
	CHECK(read_response(fd2, 2, false));
	close(fd2);
	for (int i = 0; i < 10; i++) {
		if (write(fd, "d", 1) != 1)
			break;
		usleep(100 * 1000);
	}
	CHECK_EQ_INT(read_head(fd, head, sizeof head), 408);
	CHECK_EQ_INT(atomic_load(&calls), 1); /* fd2's request only */
	close(fd);
	stop();
}

int main(void)
{
	char tmpl[] = "/tmp/cn-test-exchange-XXXXXX";
	file_fd = mkstemp(tmpl);
	if (file_fd < 0)
		return 1;
	unlink(tmpl);
	RUN(inline_bodies_arrive_whole);
	RUN(partial_sends_queue_in_order);
	RUN(pipelined_responses_do_not_interleave);
	RUN(file_after_bytes_on_the_wire_is_sent_inline);
	RUN(unread_body_is_not_waited_for);
	RUN(small_responses_never_block_a_worker);
	RUN(a_dripping_body_is_cut_off);
	RUN(pre_read_bodies_are_gathered_by_the_loop);
	close(file_fd);
	TEST_END();
}
