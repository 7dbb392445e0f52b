/* Unit tests for the event loop's hand-offs (src/net/loop.c): a worker lingers on its
 * connection for the client's next request, except after a request it marked loop_next
 * (net.h), whose connection goes back to the loop so that the next small reads are
 * served by the inline handler. The response body says who served: 'W' a worker, 'I' the
 * loop's inline handler. */
#include "net/net.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

static bool mark_loop_next; /* the worker sets loop_next after a GET */

static const char *head_end(cn_conn *c)
{
	return memmem(c->buf + c->off, c->len - c->off, "\r\n\r\n", 4);
}

static const char resp_w[] = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nW";
static const char resp_i[] = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nI";

static atomic_int hang_open = 1; /* HANG requests wait while this is 0 */

static cn_conn_verdict worker(void *ctx, cn_conn *c)
{
	(void)ctx;
	while (cn_conn_has_head(c)) {
		const char *end = head_end(c);
		bool get = strncmp(c->buf + c->off, "GET ", 4) == 0;
		while (strncmp(c->buf + c->off, "HANG ", 5) == 0 && !atomic_load(&hang_open))
			usleep(5000); /* as a worker blocked in a hung drive call */
		c->off = (size_t)(end + 4 - c->buf);
		if (cn_conn_write(c, resp_w, sizeof resp_w - 1))
			return CN_CONN_CLOSE;
		c->loop_next = get && mark_loop_next;
	}
	return CN_CONN_KEEP;
}

static cn_conn_verdict inline_h(void *ctx, cn_conn *c)
{
	(void)ctx;
	if (strncmp(c->buf + c->off, "GET ", 4) != 0)
		return CN_CONN_DEFER;
	const char *end = head_end(c);
	c->off = (size_t)(end + 4 - c->buf);
	c->out = malloc(sizeof resp_i - 1);
	if (!c->out)
		return CN_CONN_CLOSE;
	memcpy(c->out, resp_i, sizeof resp_i - 1);
	c->out_off = 0;
	c->out_len = sizeof resp_i - 1;
	return CN_CONN_KEEP;
}

static void *run(void *arg)
{
	cn_net_run(arg, 1000);
	return NULL;
}

/* Sends one request, returns the served-by letter ('?' on error). */
static char ask(int fd, const char *method)
{
	char req[64];
	int n = snprintf(req, sizeof req, "%s / HTTP/1.1\r\nHost: x\r\n\r\n", method);
	if (write(fd, req, (size_t)n) != n)
		return '?';
	char buf[64];
	size_t got = 0, want = sizeof resp_w - 1;
	while (got < want) {
		ssize_t r = read(fd, buf + got, want - got);
		if (r <= 0)
			return '?';
		got += (size_t)r;
	}
	return buf[want - 1];
}

/* Serves PUT, GET, GET, GET on one connection; returns who served each ("WWWW"). */
static void session(bool with_inline, bool loop_next, char out[5])
{
	mark_loop_next = loop_next;
	cn_net_config cfg = { .host = "127.0.0.1", .port = 0, .workers = 2, .linger_ms = 2000,
	                      .inline_handler = with_inline ? inline_h : NULL };
	cn_net *n = NULL;
	strcpy(out, "????");
	if (cn_net_new(&cfg, worker, NULL, &n) != CN_OK)
		return;
	pthread_t th;
	pthread_create(&th, NULL, run, n);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cn_net_port(n)) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
		out[0] = ask(fd, "PUT");
		out[1] = ask(fd, "GET");
		out[2] = ask(fd, "GET");
		out[3] = ask(fd, "GET");
	}
	close(fd);
	cn_net_stop(n);
	pthread_join(th, NULL);
	cn_net_free(n);
}

TEST(worker_lingers_without_loop_next)
{
	char who[5];
	/* the PUT goes to a worker (inline handler defers it); the worker lingers (2 s) and
	 * serves the GETs that follow at once */
	session(true, false, who);
	CHECK_EQ_STR(who, "WWWW");
}

TEST(loop_next_hands_the_connection_back)
{
	char who[5];
	/* the first GET arrives while the worker lingers; it marks loop_next, so the
	 * connection returns to the loop and the next GETs are served inline */
	session(true, true, who);
	CHECK_EQ_STR(who, "WWII");
}

TEST(loop_next_without_inline_handler_keeps_lingering)
{
	char who[5];
	session(false, true, who);
	CHECK_EQ_STR(who, "WWWW");
}

static int connect_to(cn_net *n)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cn_net_port(n)) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* NET-6: with both workers hung, a third request is served by a worker started for
 * it (after grow_after_ms with nothing finished), not after the hung ones return. */
TEST(hung_workers_do_not_stop_the_pool)
{
	atomic_store(&hang_open, 0);
	cn_net_config cfg = { .host = "127.0.0.1", .port = 0, .workers = 2, .grow_after_ms = 300 };
	cn_net *n = NULL;
	CN_ASSERT(cn_net_new(&cfg, worker, NULL, &n) == CN_OK);
	pthread_t th;
	pthread_create(&th, NULL, run, n);
	int hung[2], fd;
	char req[] = "HANG / HTTP/1.1\r\nHost: x\r\n\r\n";
	for (int i = 0; i < 2; i++) {
		hung[i] = connect_to(n);
		CHECK(hung[i] >= 0 && write(hung[i], req, sizeof req - 1) == (ssize_t)(sizeof req - 1));
	}
	usleep(100000); /* both workers took a HANG */
	double t0 = now_s();
	fd = connect_to(n);
	CHECK(fd >= 0);
	struct timeval tv = { .tv_sec = 8 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	CHECK(ask(fd, "PUT") == 'W');
	double took = now_s() - t0;
	CHECK(took < 3.0); /* a new worker: the hung ones are not released before 8 s */
	atomic_store(&hang_open, 1);
	for (int i = 0; i < 2; i++) {
		char buf[64];
		CHECK(read(hung[i], buf, sizeof resp_w - 1) == (ssize_t)(sizeof resp_w - 1));
		close(hung[i]);
	}
	close(fd);
	cn_net_stop(n);
	pthread_join(th, NULL);
	cn_net_free(n);
}

/* NET-1 observed: both handlers count who is inside for the one connection of the test;
 * a second thread entering while one is inside is a second owner. The worker holds a SLOW
 * request 200 ms. */
static atomic_int owners, overlaps;

static void enter(void)
{
	if (atomic_fetch_add(&owners, 1) != 0)
		atomic_fetch_add(&overlaps, 1);
}

static cn_conn_verdict owned_worker(void *ctx, cn_conn *c)
{
	enter();
	if (strncmp(c->buf + c->off, "SLOW ", 5) == 0)
		usleep(200000);
	cn_conn_verdict v = worker(ctx, c);
	atomic_fetch_sub(&owners, 1);
	return v;
}

static cn_conn_verdict owned_inline(void *ctx, cn_conn *c)
{
	enter();
	cn_conn_verdict v = inline_h(ctx, c);
	atomic_fetch_sub(&owners, 1);
	return v;
}

/* net/loop.c NET-1: a connection is owned by one thread at a time. While a worker holds a
 * slow request, the client sends the next ones on the same connection: neither the loop
 * (its inline handler) nor another worker takes the connection until the worker hands it
 * back; the responses come in order. */
TEST(a_connection_has_one_owner)
{
	atomic_store(&overlaps, 0);
	cn_net_config cfg = { .host = "127.0.0.1", .port = 0, .workers = 2, .linger_ms = 0,
	                      .inline_handler = owned_inline };
	cn_net *n = NULL;
	CN_ASSERT(cn_net_new(&cfg, owned_worker, NULL, &n) == CN_OK);
	pthread_t th;
	pthread_create(&th, NULL, run, n);
	int fd = connect_to(n);
	CHECK(fd >= 0);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	static const char slow[] = "SLOW / HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[64];
	for (int round = 0; round < 3; round++) {
		CHECK(write(fd, slow, sizeof slow - 1) == (ssize_t)(sizeof slow - 1));
		usleep(50000); /* the worker is inside the SLOW request */
		CHECK(write(fd, get, sizeof get - 1) == (ssize_t)(sizeof get - 1));
		usleep(20000);
		CHECK(write(fd, get, sizeof get - 1) == (ssize_t)(sizeof get - 1));
		size_t want = 3 * (sizeof resp_w - 1), got = 0;
		while (got < want) {
			ssize_t r = read(fd, buf, sizeof buf < want - got ? sizeof buf : want - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		CHECK_EQ_INT(got, want);
	}
	CHECK_EQ_INT(atomic_load(&overlaps), 0);
	close(fd);
	cn_net_stop(n);
	pthread_join(th, NULL);
	cn_net_free(n);
}

int main(void)
{
	RUN(worker_lingers_without_loop_next);
	RUN(loop_next_hands_the_connection_back);
	RUN(loop_next_without_inline_handler_keeps_lingering);
	RUN(hung_workers_do_not_stop_the_pool);
	RUN(a_connection_has_one_owner);
	TEST_END();
}
