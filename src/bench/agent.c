/* bench/agent: distributed runs. `cairn bench agent --listen ADDR` serves drivers one run at a
 * time; a driver (`--agents h1:p,h2:p`) sends each agent its flags, waits until every agent
 * has prepared, gives one wall-clock start time to all, then collects every request record
 * and merges them into one report and one benchdata file (records are exact, so the merged
 * figures are the same as if one client had made every request: BENCH-1..BENCH-3).
 *
 * Protocol (text lines over TCP, one run per connection):
 *   driver: "CAIRN-BENCH 1", "index I N", "mode M", "arg FLAG"..., "go"
 *   agent:  "ready" (prepared)            driver: "start UNIX_NS"
 *   agent:  "records N", N CSV records (data.c), "end", then "done RC"
 *   agent, instead of the above on a failure: "error MESSAGE" or an early "done RC".
 * Every wait is bounded (poll with a deadline); a line is at most 8 KiB. */
#include "bench/bench_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL
#define LINE_MAX_LEN 8192
#define MAX_AGENTS 64
#define MAX_ARGS 256

typedef struct lineio {
	int fd;
	char buf[65536];
	size_t len, off;
} lineio;

/* 1 = a line in out (without newline), 0 = EOF, -1 = error, timeout or overlong line. */
static int read_line(lineio *l, char *out, size_t cap, int64_t deadline_ms)
{
	for (;;) {
		char *nl = memchr(l->buf + l->off, '\n', l->len - l->off);
		if (nl) {
			size_t n = (size_t)(nl - (l->buf + l->off));
			if (n >= cap)
				return -1;
			memcpy(out, l->buf + l->off, n);
			out[n] = 0;
			l->off += n + 1;
			return 1;
		}
		if (l->len - l->off >= LINE_MAX_LEN)
			return -1;
		if (l->off) {
			memmove(l->buf, l->buf + l->off, l->len - l->off);
			l->len -= l->off;
			l->off = 0;
		}
		int64_t left = deadline_ms - cn_mono_ms();
		if (left <= 0)
			return -1;
		struct pollfd p = { l->fd, POLLIN, 0 };
		int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r <= 0)
			continue;
		ssize_t k = recv(l->fd, l->buf + l->len, sizeof l->buf - l->len, 0);
		if (k == 0)
			return 0;
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		l->len += (size_t)k;
	}
}

static cn_err send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return CN_ERR_IO;
		p += k;
		n -= (size_t)k;
	}
	return CN_OK;
}

static cn_err send_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cn_err send_line(int fd, const char *fmt, ...)
{
	char line[LINE_MAX_LEN];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof line)
		return CN_ERR_TOO_LARGE;
	return send_all(fd, line, (size_t)n);
}

/* Splits "host:port" (host may be empty, or [v6]); CN_ERR_INVALID otherwise. */
static cn_err split_hostport(const char *s, char *host, size_t hcap, char *port, size_t pcap)
{
	const char *c = strrchr(s, ':');
	if (!c || !c[1] || strlen(c + 1) >= pcap)
		return CN_ERR_INVALID;
	size_t hl = (size_t)(c - s);
	if (hl >= hcap)
		return CN_ERR_INVALID;
	memcpy(host, s, hl);
	host[hl] = 0;
	if (hl > 1 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	snprintf(port, pcap, "%s", c + 1);
	for (const char *p = port; *p; p++)
		if (*p < '0' || *p > '9')
			return CN_ERR_INVALID;
	return CN_OK;
}

/* --- agent side -------------------------------------------------------------------------- */

static lineio *sync_io; /* the current run's connection (one run at a time) */

cn_err cn_bench_agent_sync(int fd, int64_t *start_unix_ns)
{
	if (!sync_io || sync_io->fd != fd)
		return CN_ERR_INVALID;
	if (send_all(fd, "ready\n", 6))
		return CN_ERR_IO;
	char line[256];
	if (read_line(sync_io, line, sizeof line, cn_mono_ms() + 3600 * 1000) != 1 || strncmp(line, "start ", 6))
		return CN_ERR_IO;
	char *end;
	long long v = strtoll(line + 6, &end, 10);
	if (*end || v <= 0)
		return CN_ERR_INVALID;
	*start_unix_ns = v;
	return CN_OK;
}

/* Returns true when a run was executed (a probe or a bad driver does not count). */
static bool serve_one(int fd)
{
	bool ran = false;
	lineio *l = calloc(1, sizeof *l);
	char *line = malloc(LINE_MAX_LEN);
	char *args[MAX_ARGS];
	int nargs = 0, index = -1, count = 0, mode = -1;
	if (!l || !line)
		goto out;
	l->fd = fd;
	int64_t deadline = cn_mono_ms() + 30000;
	if (read_line(l, line, LINE_MAX_LEN, deadline) != 1 || strcmp(line, "CAIRN-BENCH 1")) {
		send_line(fd, "error %s\n", "not a cairn bench driver (protocol 1)");
		goto out;
	}
	for (;;) {
		if (read_line(l, line, LINE_MAX_LEN, deadline) != 1) {
			send_line(fd, "error %s\n", "incomplete run description");
			goto out;
		}
		if (!strcmp(line, "go"))
			break;
		if (!strncmp(line, "index ", 6)) {
			if (sscanf(line + 6, "%d %d", &index, &count) != 2 || index < 0 || count < 1 || index >= count)
				index = -1;
		} else if (!strncmp(line, "mode ", 5)) {
			mode = cn_bench_parse_mode(line + 5);
		} else if (!strncmp(line, "arg ", 4) && nargs < MAX_ARGS) {
			if (!(args[nargs] = strdup(line + 4)))
				goto out;
			nargs++;
		} else {
			send_line(fd, "error unexpected line: %.200s\n", line);
			goto out;
		}
	}
	if (index < 0 || mode < 0 || mode == CN_BENCH_LOOP || mode == CN_BENCH_MULTIPART) {
		send_line(fd, "error %s\n", "bad index or mode (loop and multipart do not run on agents)");
		goto out;
	}
	cn_bench_cfg c;
	cn_bench_cfg_defaults(&c);
	c.mode = (cn_bench_mode)mode;
	char err[300] = "";
	if (cn_bench_parse_flags(nargs, args, &c, err, sizeof err)) {
		send_line(fd, "error %s\n", err);
		goto out;
	}
	c.agents = NULL;
	c.benchdata = NULL;
	c.json = false;
	c.quiet = true;
	c.agent_index = index;
	c.agent_count = count;
	c.agent_fd = fd;
	fprintf(stderr, "cairn bench agent: run %d of %d, mode %d\n", index + 1, count, mode);
	sync_io = l;
	int rc = cn_bench_run(&c);
	sync_io = NULL;
	ran = true;
	char rcs[16];
	snprintf(rcs, sizeof rcs, "%d", rc);
	send_line(fd, "done %s\n", rcs);
	fprintf(stderr, "cairn bench agent: run finished (exit %d)\n", rc);
out:
	for (int i = 0; i < nargs; i++)
		free(args[i]);
	free(line);
	free(l);
	return ran;
}

int cn_bench_agent(const char *listen_addr, int max_runs)
{
	char host[256], port[16];
	if (split_hostport(listen_addr, host, sizeof host, port, sizeof port)) {
		fprintf(stderr, "cairn bench agent: bad --listen '%s' (HOST:PORT or :PORT)\n", listen_addr);
		return 2;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &ai)) {
		fprintf(stderr, "cairn bench agent: cannot resolve '%s'\n", listen_addr);
		return 2;
	}
	int ls = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (ls >= 0)
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ls < 0 || bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, 8)) {
		fprintf(stderr, "cairn bench agent: cannot listen on %s: %s\n", listen_addr, strerror(errno));
		if (ls >= 0)
			close(ls);
		freeaddrinfo(ai);
		return 1;
	}
	freeaddrinfo(ai);
	fprintf(stderr, "cairn bench agent: listening on %s\n", listen_addr);
	for (int runs = 0; max_runs <= 0 || runs < max_runs;) {
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "cairn bench agent: accept: %s\n", strerror(errno));
			close(ls);
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (serve_one(fd))
			runs++;
		close(fd);
	}
	close(ls);
	return 0;
}

/* --- driver side -------------------------------------------------------------------------- */

static int connect_to(const char *hp, char *err, size_t errlen)
{
	char host[256], port[16];
	if (split_hostport(hp, host, sizeof host, port, sizeof port) || !host[0]) {
		snprintf(err, errlen, "bad agent address '%s' (HOST:PORT)", hp);
		return -1;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	if (getaddrinfo(host, port, &hints, &ai)) {
		snprintf(err, errlen, "cannot resolve agent '%s'", hp);
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 5, 0 };
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		snprintf(err, errlen, "cannot connect to agent %s: %s", hp, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static bool skip_flag(const char *a, bool *takes_value)
{
	static const char *const drop[] = { "--agents", "--warp-client", "--benchdata", "--host", "--access-key",
		                            "--secret-key", NULL };
	static const char *const dropbool[] = { "--json", NULL };
	*takes_value = false;
	for (int i = 0; drop[i]; i++) {
		size_t n = strlen(drop[i]);
		if (!strncmp(a, drop[i], n) && (a[n] == 0 || a[n] == '=')) {
			*takes_value = a[n] == 0;
			return true;
		}
	}
	for (int i = 0; dropbool[i]; i++) {
		size_t n = strlen(dropbool[i]);
		if (!strncmp(a, dropbool[i], n) && (a[n] == 0 || a[n] == '='))
			return true;
	}
	return false;
}

cn_err cn_bench_agents_run(const cn_bench_cfg *cfg, cn_bench_acc *acc, cn_bench_rec **recs, size_t *nrec,
                           char *err, size_t errlen)
{
	static const char *const modes[] = { "put", "get", "delete", "stat", "list", "mixed", "multipart", "loop" };
	*recs = NULL;
	*nrec = 0;
	if (cfg->mode == CN_BENCH_LOOP || cfg->mode == CN_BENCH_MULTIPART || cfg->sweep) {
		snprintf(err, errlen, "loop, multipart and --sweep do not run on agents");
		return CN_ERR_INVALID;
	}
	char *list = strdup(cfg->agents);
	char *names[MAX_AGENTS];
	int n = 0;
	if (!list)
		return CN_ERR_NOMEM;
	for (char *save, *t = strtok_r(list, ",", &save); t && n < MAX_AGENTS; t = strtok_r(NULL, ",", &save))
		names[n++] = t;
	int fds[MAX_AGENTS];
	lineio *io[MAX_AGENTS] = { NULL };
	char *line = malloc(LINE_MAX_LEN);
	size_t cap = 0;
	cn_err e = line && n ? CN_OK : CN_ERR_INVALID;
	if (!n)
		snprintf(err, errlen, "--agents names no agent");
	/* an agent runs one driver at a time: named twice, its second connection would wait
	 * in the listen backlog for the whole pre-start timeout */
	for (int i = 0; i < n && !e; i++)
		for (int j = 0; j < i && !e; j++)
			if (!strcmp(names[i], names[j])) {
				snprintf(err, errlen, "--agents names %s twice", names[i]);
				e = CN_ERR_INVALID;
			}
	for (int i = 0; i < n; i++)
		fds[i] = -1;
	acc->concurrency = cfg->concurrent * n;
	for (int i = 0; i < n && !e; i++) {
		fds[i] = connect_to(names[i], err, errlen);
		io[i] = calloc(1, sizeof *io[i]);
		if (fds[i] < 0 || !io[i]) {
			e = CN_ERR_IO;
			break;
		}
		io[i]->fd = fds[i];
		char idx[64];
		snprintf(idx, sizeof idx, "%d %d", i, n);
		e = send_line(fds[i], "CAIRN-BENCH 1\nindex %s\n", idx);
		if (!e)
			e = send_line(fds[i], "mode %s\n", modes[cfg->mode]);
		for (int k = 0; k < cfg->argc && !e; k++) {
			bool tv;
			if (skip_flag(cfg->argv[k], &tv)) {
				k += tv;
				continue;
			}
			if (strchr(cfg->argv[k], '\n')) {
				snprintf(err, errlen, "a flag holds a newline");
				e = CN_ERR_INVALID;
				break;
			}
			e = send_line(fds[i], "arg %s\n", cfg->argv[k]);
		}
		/* the effective endpoint and keys (they may come from the environment) */
		char kv[1200];
		snprintf(kv, sizeof kv, "--host=%s", cfg->hosts);
		if (!e)
			e = send_line(fds[i], "arg %s\n", kv);
		snprintf(kv, sizeof kv, "--access-key=%s", cfg->access_key ? cfg->access_key : "");
		if (!e)
			e = send_line(fds[i], "arg %s\n", kv);
		snprintf(kv, sizeof kv, "--secret-key=%s", cfg->secret_key ? cfg->secret_key : "");
		if (!e)
			e = send_line(fds[i], "arg %s\n", kv);
		if (!e)
			e = send_line(fds[i], "%s\n", "go");
		if (e && !err[0])
			snprintf(err, errlen, "cannot send the run to agent %s", names[i]);
	}
	/* every agent prepared -> one start time */
	for (int i = 0; i < n && !e; i++) {
		int r = read_line(io[i], line, LINE_MAX_LEN, cn_mono_ms() + 3600 * 1000);
		if (r != 1 || strcmp(line, "ready")) {
			snprintf(err, errlen, "agent %s failed before the start: %.300s", names[i],
			         r == 1 ? line : "connection lost or timed out");
			e = CN_ERR_IO;
		}
	}
	if (!e) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		long long start = (long long)ts.tv_sec * NS + ts.tv_nsec + 500000000LL;
		char s[32];
		snprintf(s, sizeof s, "%lld", start);
		for (int i = 0; i < n && !e; i++)
			e = send_line(fds[i], "start %s\n", s);
		if (e)
			snprintf(err, errlen, "cannot start the agents");
	}
	int64_t deadline = cn_mono_ms() + cfg->duration_ns / 1000000 + cfg->request_timeout_ms + 600 * 1000;
	for (int i = 0; i < n && !e; i++) {
		int r = read_line(io[i], line, LINE_MAX_LEN, deadline);
		unsigned long long cnt;
		if (r != 1 || sscanf(line, "records %llu", &cnt) != 1) {
			snprintf(err, errlen, "agent %s: %.300s", names[i], r == 1 ? line : "connection lost or timed out");
			e = CN_ERR_IO;
			break;
		}
		for (;;) {
			r = read_line(io[i], line, LINE_MAX_LEN, deadline);
			if (r != 1) {
				snprintf(err, errlen, "agent %s: records cut short", names[i]);
				e = CN_ERR_IO;
				break;
			}
			if (!strcmp(line, "end"))
				break;
			cn_bench_rec rec;
			const char *host;
			if (cn_bench_rec_parse(line, &rec, &host)) {
				snprintf(err, errlen, "agent %s: bad record", names[i]);
				e = CN_ERR_INVALID;
				break;
			}
			size_t h = 0;
			while (h < acc->nhosts && strcmp(acc->hosts[h], host))
				h++;
			if (h == acc->nhosts) {
				snprintf(err, errlen, "agent %s: record for unknown host %.200s", names[i], host);
				e = CN_ERR_INVALID;
				break;
			}
			rec.host = (uint32_t)h;
			if ((e = cn_bench_acc_add(acc, &rec)))
				break;
			if (*nrec == cap) {
				cap = cap ? cap * 2 : 4096;
				cn_bench_rec *nr = realloc(*recs, cap * sizeof *nr);
				if (!nr) {
					e = CN_ERR_NOMEM;
					break;
				}
				*recs = nr;
			}
			(*recs)[(*nrec)++] = rec;
		}
		if (!e) {
			r = read_line(io[i], line, LINE_MAX_LEN, deadline);
			if (r == 1 && strncmp(line, "done ", 5) == 0 && atoi(line + 5) == 2) {
				snprintf(err, errlen, "agent %s: run failed", names[i]);
				e = CN_ERR_IO;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		free(io[i]);
	}
	free(line);
	free(list);
	if (e && !err[0])
		snprintf(err, errlen, "agents: %s", cn_err_str(e));
	return e;
}
