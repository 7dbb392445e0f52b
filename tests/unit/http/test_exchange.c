/* Unit tests for the response path of src/http/exchange.c as the server wires it: the
 * loop's inline handler (cn_http_serve_inline) first, a worker (cn_http_serve) for what it
 * defers. Inline responses go to the socket as far as it takes them at once, the rest
 * waits for the loop (obuf -> c->out); whatever path a response takes, the client must get
 * exactly the announced bytes, in order, and pipelined responses must not interleave.
 *
 * Handler paths: /n/LEN  LEN bytes written in 7000-byte pieces
 *                /f/LEN  1000 bytes written, then the rest sent from a file (send_fd)
 * Body byte i is (i * 7 + LEN) % 251. `calls` counts handler runs: a request served
 * inline runs once, one the loop deferred runs twice (inline attempt, then the worker). */
#include "http/http.h"
#include "net/net.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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

static cn_conn_verdict worker(void *ctx, cn_conn *c)
{
	return (cn_conn_verdict)cn_http_serve(c, handler, ctx);
}

static cn_conn_verdict inline_h(void *ctx, cn_conn *c)
{
	return (cn_conn_verdict)cn_http_serve_inline(c, handler, ctx);
}

static void *run(void *arg)
{
	cn_net_run(arg, 1000);
	return NULL;
}

static cn_net *net;
static pthread_t net_th;

static bool start(void)
{
	cn_net_config cfg = { .host = "127.0.0.1", .port = 0, .workers = 2, .linger_ms = 0,
	                      .inline_handler = inline_h };
	if (cn_net_new(&cfg, worker, NULL, &net) != CN_OK)
		return false;
	pthread_create(&net_th, NULL, run, net);
	return true;
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
	close(file_fd);
	TEST_END();
}
