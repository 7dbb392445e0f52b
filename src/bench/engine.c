/* bench/engine: the load engine. One or more worker threads each drive a libcurl multi
 * handle with their share of --concurrent transfers (closed loop: a finished request starts
 * the next at once; open loop: requests start at intended times, fixed or Poisson, and
 * latency counts from the intended time, so a slow server cannot hide its queue — no
 * coordinated omission). Requests are signed by the client library (src/client); bodies come
 * from one pre-generated random buffer (incompressible), each object a different window of
 * it, so a GET can be verified with XXH3 against the hash of what was written. Every
 * request of a measured phase becomes a cn_bench_rec fed to its worker's accumulator
 * (merged at the end, invariant BENCH-2). Errors are counted and shown, never retried. A phase
 * is bounded: new requests stop at the deadline and each in-flight request is bounded by
 * the request timeout. */
#include "bench/run_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
/* the runtime-dispatched AVX2/AVX-512 XXH3 (same hash; libxxhash's plain entry points are
 * its SSE2 build, ~16x slower here): --verify hashes every byte a GET receives */
#include <xxh_x86dispatch.h>
#endif

int64_t cn_bench_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static size_t cb_read(char *buf, size_t sz, size_t n, void *ud)
{
	xfer *x = ud;
	size_t want = sz * n, left = (size_t)(x->size - x->pos);
	if (want > left)
		want = left;
	memcpy(buf, x->w->g->payload + x->off + x->pos, want);
	x->pos += want;
	return want;
}

static int cb_seek(void *ud, curl_off_t off, int origin)
{
	xfer *x = ud;
	if (origin != SEEK_SET || off < 0 || (uint64_t)off > x->size)
		return CURL_SEEKFUNC_FAIL;
	x->pos = (uint64_t)off;
	return CURL_SEEKFUNC_OK;
}

static size_t cb_write(char *p, size_t sz, size_t n, void *ud)
{
	xfer *x = ud;
	size_t len = sz * n;
	if (x->got == 0 && !x->keep_resp) {
		long code = 0;
		curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 300)
			x->keep_resp = true; /* keep the error body for its S3 code */
	}
	x->got += len;
	if (x->keep_resp) {
		if (x->resp.len + len <= (4u << 20))
			cn_buf_append(&x->resp, p, len);
	} else if (x->verify) {
		XXH3_64bits_update(x->xs, p, len);
	}
	return len;
}

static size_t cb_header(char *p, size_t sz, size_t n, void *ud)
{
	xfer *x = ud;
	size_t len = sz * n;
	if (x->op == CN_BOP_PUTPART && len > 5 && !strncasecmp(p, "etag:", 5)) {
		const char *v = p + 5;
		size_t vl = len - 5;
		while (vl && (*v == ' '))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		if (vl >= sizeof x->etag)
			vl = sizeof x->etag - 1;
		memcpy(x->etag, v, vl);
		x->etag[vl] = 0;
	}
	return len;
}

static cn_err start_xfer(worker *w, xfer *x, int64_t intended)
{
	eng *g = w->g;
	const cn_bench_cfg *c = g->cfg;
	cn_client_req r = { .bucket = c->bucket, .body_len = -1 };
	x->pos = x->got = 0;
	x->resp.len = 0;
	x->keep_resp = false;
	x->verify = false;
	x->etag[0] = 0;
	x->errbuf[0] = 0;
	x->host = (size_t)(w->host_rr++);
	r.host = x->host;
	size_t nq = 0, ne = 0;
	bool multipart = c->mode == CN_BENCH_MULTIPART;
	cn_bench_obj_shape(g, x->obj, &x->size, &x->off);
	if (multipart)
		snprintf(x->key, sizeof x->key, "%smultipart.rnd", g->prefix);
	else
		cn_bench_obj_key(g, x->obj, x->key, sizeof x->key);
	r.key = x->key;
	switch (x->op) {
	case CN_BOP_PUT:
		r.method = "PUT";
		r.body_len = (int64_t)x->size;
		break;
	case CN_BOP_PUTPART:
		r.method = "PUT";
		r.body_len = (int64_t)x->size;
		x->q[nq] = (cn_kv){ (char *)"partNumber", x->qv[0] };
		snprintf(x->qv[0], sizeof x->qv[0], "%" PRIu64, x->obj + 1);
		nq++;
		x->q[nq++] = (cn_kv){ (char *)"uploadId", g->upload_id };
		break;
	case CN_BOP_GET:
		r.method = "GET";
		if (multipart) {
			snprintf(x->range, sizeof x->range, "Range: bytes=%" PRIu64 "-%" PRIu64, x->obj * c->part_size,
			         (x->obj + 1) * c->part_size - 1);
			x->extra[ne++] = x->range;
		}
		if (c->verify && g->hash) {
			x->verify = true;
			x->expect = g->hash[x->obj];
			XXH3_64bits_reset(x->xs);
		}
		break;
	case CN_BOP_STAT:
		r.method = "HEAD";
		break;
	case CN_BOP_DELETE:
		r.method = "DELETE";
		break;
	case CN_BOP_LIST:
		r.method = "GET";
		r.key = NULL;
		x->keep_resp = true;
		x->q[nq++] = (cn_kv){ (char *)"list-type", (char *)"2" };
		x->q[nq++] = (cn_kv){ (char *)"prefix", g->prefix };
		x->q[nq++] = (cn_kv){ (char *)"max-keys", (char *)"1000" };
		snprintf(x->token, sizeof x->token, "%s", w->list_token);
		if (x->token[0])
			x->q[nq++] = (cn_kv){ (char *)"continuation-token", x->token };
		break;
	}
	r.query = x->q;
	r.nquery = nq;
	r.extra = x->extra;
	r.nextra = ne;
	cn_err e = cn_client_prepare(g->client, &w->signer, x->e, &r, &x->h);
	if (e)
		return e;
	x->t_intended = intended;
	x->t_start = cn_mono_ns();
	x->active = true;
	curl_multi_add_handle(w->m, x->e);
	return CN_OK;
}

/* The S3 error code of an error body, or "". */
static void s3_code(const xfer *x, char *out, size_t cap)
{
	out[0] = 0;
	if (x->resp.len)
		cn_client_xml_text(x->resp.p, x->resp.len, "Code", out, cap);
}

static void push_rec(worker *w, const cn_bench_rec *r)
{
	if (w->nrec == w->caprec) {
		size_t cap = w->caprec ? w->caprec * 2 : 4096;
		cn_bench_rec *n = realloc(w->recs, cap * sizeof *n);
		if (!n) {
			w->fail = CN_ERR_NOMEM;
			return;
		}
		w->recs = n;
		w->caprec = cap;
	}
	w->recs[w->nrec++] = *r;
}

static void finish_xfer(worker *w, xfer *x, CURLcode res)
{
	eng *g = w->g;
	phase *ph = g->ph;
	int64_t t_end = cn_mono_ns();
	long code = 0;
	curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &code);
	char msg[400] = "", s3c[128];
	int64_t bytes = 0;
	const char *opn = cn_bop_name(x->op);
	if (res != CURLE_OK) {
		snprintf(msg, sizeof msg, "%s: %s", opn, x->errbuf[0] ? x->errbuf : curl_easy_strerror(res));
		/* curl messages name hosts and byte counts; keep the distinct-error list short */
		char *d = strpbrk(msg, "0123456789");
		if (res == CURLE_OPERATION_TIMEDOUT)
			snprintf(msg, sizeof msg, "%s: request timed out", opn);
		else if (d && res != CURLE_COULDNT_CONNECT)
			snprintf(msg, sizeof msg, "%s: %s", opn, curl_easy_strerror(res));
	} else if (code >= 300 && !(x->op == CN_BOP_DELETE && ph->cleanup && code == 404)) {
		s3_code(x, s3c, sizeof s3c);
		snprintf(msg, sizeof msg, "%s: HTTP %ld%s%s", opn, code, s3c[0] ? " " : "", s3c);
	} else {
		switch (x->op) {
		case CN_BOP_PUT:
		case CN_BOP_PUTPART:
			bytes = (int64_t)x->size;
			if (x->op == CN_BOP_PUTPART) {
				if (!x->etag[0])
					snprintf(msg, sizeof msg, "%s: no ETag in the answer", opn);
				else
					memcpy(g->etags[x->obj], x->etag, sizeof x->etag);
			}
			break;
		case CN_BOP_GET:
			bytes = (int64_t)x->got;
			if (x->got != x->size)
				snprintf(msg, sizeof msg, "%s: %s read (%s of %" PRIu64 " bytes)", opn,
				         x->got < x->size ? "short" : "long", x->got < x->size ? "fewer" : "more", x->size);
			else if (x->verify && XXH3_64bits_digest(x->xs) != x->expect)
				snprintf(msg, sizeof msg, "%s: wrong bytes (content hash mismatch)", opn);
			break;
		case CN_BOP_STAT: {
			curl_off_t cl = -1;
			curl_easy_getinfo(x->e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
			if (cl >= 0 && (uint64_t)cl != x->size)
				snprintf(msg, sizeof msg, "%s: wrong size", opn);
			break;
		}
		case CN_BOP_LIST: {
			char kc[32] = "", tr[16] = "";
			if (x->resp.len)
				cn_client_xml_text(x->resp.p, x->resp.len, "KeyCount", kc, sizeof kc);
			if (x->resp.len)
				cn_client_xml_text(x->resp.p, x->resp.len, "IsTruncated", tr, sizeof tr);
			bool more = !strcmp(tr, "true") && x->resp.len &&
			            cn_client_xml_text(x->resp.p, x->resp.len, "NextContinuationToken", w->list_token,
			                               sizeof w->list_token);
			if (!more)
				w->list_token[0] = 0;
			if (!kc[0] && !strstr(x->resp.p ? x->resp.p : "", "<Contents>"))
				snprintf(msg, sizeof msg, "%s: listing shows none of the objects", opn);
			else if (kc[0] && atoll(kc) == 0 && g->nobj)
				snprintf(msg, sizeof msg, "%s: listing shows none of the objects", opn);
			break;
		}
		default:
			break;
		}
	}
	/* object state (mixed mode; prepare) */
	if (ph->gen == GEN_MIXED || ph->gen == GEN_PUT_TABLE) {
		bool ok = !msg[0];
		uint8_t st = g->state[x->obj];
		if (x->op == CN_BOP_PUT)
			st = ok ? OBJ_PRESENT : OBJ_ABSENT;
		else if (x->op == CN_BOP_DELETE)
			st = ok ? OBJ_ABSENT : OBJ_PRESENT;
		else
			st = OBJ_PRESENT;
		g->state[x->obj] = st;
	}
	if (ph->record) {
		cn_bench_rec r = {
			.start = x->t_intended - g->t0,
			.end = t_end - g->t0,
			.ttfb = -1,
			.bytes = msg[0] ? 0 : bytes,
			.host = (uint32_t)(x->host % g->nhosts),
			.op = (uint8_t)x->op,
			.err = msg[0] ? cn_bench_intern(msg) : NULL,
		};
		if (x->op == CN_BOP_GET && !msg[0]) {
			curl_off_t st = 0;
			curl_easy_getinfo(x->e, CURLINFO_STARTTRANSFER_TIME_T, &st);
			r.ttfb = (x->t_start - x->t_intended) + (int64_t)st * 1000;
			if (r.ttfb > r.end - r.start)
				r.ttfb = r.end - r.start;
		}
		if (cn_bench_acc_add(&w->acc, &r))
			w->fail = CN_ERR_NOMEM;
		if (g->keep_recs)
			push_rec(w, &r);
	}
	if (msg[0]) {
		atomic_fetch_add(&w->errs, 1);
		if (!w->first_err)
			w->first_err = cn_bench_intern(msg);
	} else {
		atomic_fetch_add(&w->ops, 1);
		atomic_fetch_add(&w->bytes, (uint64_t)bytes);
	}
	x->active = false;
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	eng *g = w->g;
	phase *ph = g->ph;
	double rate = ph->rate > 0 ? ph->rate / g->nthreads : 0;
	bool poisson = g->cfg->poisson;
	int active = 0;
	bool exhausted = false;
	w->next_send = cn_mono_ns();
	for (;;) {
		int64_t now = cn_mono_ns();
		bool may_start = !exhausted && !atomic_load(&ph->stop) && (!ph->deadline || now < ph->deadline);
		for (int i = 0; i < w->n && may_start; i++) {
			xfer *x = &w->x[i];
			if (x->active)
				continue;
			int64_t intended = now;
			if (rate > 0) {
				if (now < w->next_send || (ph->deadline && w->next_send >= ph->deadline))
					break;
				intended = w->next_send;
				w->next_send += (int64_t)(poisson ? cn_bench_exp_interval(w, rate) : 1e9 / rate);
			}
			if (!cn_bench_gen_next(w, x)) {
				exhausted = true;
				break;
			}
			if (start_xfer(w, x, intended)) {
				w->fail = CN_ERR_INVALID;
				exhausted = true;
				break;
			}
			active++;
		}
		if (!active && (exhausted || atomic_load(&ph->stop) || (ph->deadline && now >= ph->deadline) ||
		                (rate > 0 && ph->deadline && w->next_send >= ph->deadline)))
			break;
		int running;
		curl_multi_perform(w->m, &running);
		CURLMsg *msg;
		int q, finished = 0;
		while ((msg = curl_multi_info_read(w->m, &q))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			xfer *x;
			CURL *e = msg->easy_handle;
			CURLcode res = msg->data.result;
			curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&x);
			curl_multi_remove_handle(w->m, e);
			finish_xfer(w, x, res);
			active--;
			finished++;
		}
		if (finished && rate <= 0)
			continue;
		int timeout = 100;
		if (rate > 0) {
			int64_t wait = (w->next_send - cn_mono_ns()) / 1000000;
			if (wait < timeout)
				timeout = wait < 0 ? 0 : (int)wait;
		}
		if (active || timeout > 0)
			curl_multi_poll(w->m, NULL, 0, timeout, NULL);
	}
	return NULL;
}

void cn_bench_eng_free(eng *g)
{
	for (int t = 0; t < g->nthreads && g->w; t++) {
		worker *w = &g->w[t];
		for (int i = 0; i < w->n && w->x; i++) {
			if (w->x[i].e)
				curl_easy_cleanup(w->x[i].e);
			cn_client_hdrs_fini(&w->x[i].h);
			cn_buf_fini(&w->x[i].resp);
			if (w->x[i].xs)
				XXH3_freeState(w->x[i].xs);
		}
		free(w->x);
		if (w->m)
			curl_multi_cleanup(w->m);
		cn_bench_acc_fini(&w->acc);
		free(w->recs);
	}
	free(g->w);
	free(g->payload);
	free(g->state);
	free(g->hash);
	free(g->etags);
	cn_client_free(g->client);
	free(g->hosts);
}

cn_err cn_bench_eng_init(eng *g, const cn_bench_cfg *c, char *err, size_t errlen)
{
	memset(g, 0, sizeof *g);
	g->cfg = c;
	cn_client_cfg cc = {
		.hosts = c->hosts, .access_key = c->access_key, .secret_key = c->secret_key, .region = c->region,
		.tls = c->tls, .insecure = c->insecure, .vhost = c->vhost, .timeout_ms = c->request_timeout_ms,
	};
	cn_err e = cn_client_new(&cc, &g->client);
	if (e) {
		snprintf(err, errlen, "bad --host '%s' (a comma list of host:port, {a...b} ranges allowed)", c->hosts);
		return e;
	}
	g->nhosts = cn_client_nhosts(g->client);
	g->hosts = calloc(g->nhosts, sizeof *g->hosts);
	if (!g->hosts)
		return CN_ERR_NOMEM;
	for (size_t i = 0; i < g->nhosts; i++)
		g->hosts[i] = (char *)cn_client_host_url(g->client, i);
	/* a fresh folder per run (agents get their own) */
	uint64_t seed = (uint64_t)cn_bench_wall_ns() ^ ((uint64_t)getpid() << 32);
	char runid[16];
	static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	for (int i = 0; i < 8; i++)
		runid[i] = al[cn_bench_rnd(&seed) % 36];
	runid[8] = 0;
	const char *p = c->prefix ? c->prefix : "";
	size_t pl = strlen(p);
	if (c->agent_count > 0)
		snprintf(g->prefix, sizeof g->prefix, "%s%s%s.a%d/", p, pl && p[pl - 1] != '/' ? "/" : "", runid, c->agent_index);
	else
		snprintf(g->prefix, sizeof g->prefix, "%s%s%s/", p, pl && p[pl - 1] != '/' ? "/" : "", runid);
	g->max_size = c->mode == CN_BENCH_MULTIPART ? c->part_size : c->obj_size;
	g->payload_len = (size_t)g->max_size + SLACK;
	g->payload = malloc(g->payload_len);
	if (!g->payload) {
		snprintf(err, errlen, "cannot allocate %zu bytes of payload", g->payload_len);
		return CN_ERR_NOMEM;
	}
	uint64_t r = seed | 1;
	for (size_t i = 0; i + 8 <= g->payload_len; i += 8) {
		uint64_t v = cn_bench_rnd(&r);
		memcpy(g->payload + i, &v, 8);
	}
	g->nthreads = c->threads > 0 ? c->threads : 2;
	if (g->nthreads > c->concurrent)
		g->nthreads = c->concurrent;
	g->w = calloc((size_t)g->nthreads, sizeof *g->w);
	if (!g->w)
		return CN_ERR_NOMEM;
	for (int t = 0; t < g->nthreads; t++) {
		worker *w = &g->w[t];
		w->g = g;
		w->id = t;
		w->rng = cn_bench_mix(seed + (uint64_t)t * 7919) | 1;
		w->host_rr = (uint64_t)t;
		w->n = c->concurrent / g->nthreads + (t < c->concurrent % g->nthreads);
		cn_client_signer_init(&w->signer);
		if ((e = cn_bench_acc_init(&w->acc, g->hosts, g->nhosts, c->concurrent)))
			return e;
		w->m = curl_multi_init();
		w->x = calloc((size_t)w->n, sizeof *w->x);
		if (!w->m || !w->x)
			return CN_ERR_NOMEM;
		curl_multi_setopt(w->m, CURLMOPT_MAXCONNECTS, (long)(w->n * (int)(g->nhosts < 8 ? g->nhosts : 8) + 4));
		for (int i = 0; i < w->n; i++) {
			xfer *x = &w->x[i];
			x->w = w;
			cn_client_hdrs_init(&x->h);
			cn_buf_init(&x->resp);
			x->e = curl_easy_init();
			x->xs = XXH3_createState();
			if (!x->e || !x->xs)
				return CN_ERR_NOMEM;
			CURL *ee = x->e;
			curl_easy_setopt(ee, CURLOPT_NOSIGNAL, 1L);
			curl_easy_setopt(ee, CURLOPT_TCP_NODELAY, 1L);
			curl_easy_setopt(ee, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
			curl_easy_setopt(ee, CURLOPT_BUFFERSIZE, 512L * 1024);
			/* 256 KiB, not 2 MiB: libcurl copies the body into this buffer and the kernel
			 * copies it out again; a buffer that stays in cache halved client CPU per GiB
			 * of 4 MiB PUTs (0.90-1.39 -> 0.39-0.62 s/GiB, 4 interleaved runs; 64 KiB
			 * measured the same as 256 KiB) */
			curl_easy_setopt(ee, CURLOPT_UPLOAD_BUFFERSIZE, 256L * 1024);
			curl_easy_setopt(ee, CURLOPT_READFUNCTION, cb_read);
			curl_easy_setopt(ee, CURLOPT_READDATA, x);
			curl_easy_setopt(ee, CURLOPT_SEEKFUNCTION, cb_seek);
			curl_easy_setopt(ee, CURLOPT_SEEKDATA, x);
			curl_easy_setopt(ee, CURLOPT_WRITEFUNCTION, cb_write);
			curl_easy_setopt(ee, CURLOPT_WRITEDATA, x);
			curl_easy_setopt(ee, CURLOPT_HEADERFUNCTION, cb_header);
			curl_easy_setopt(ee, CURLOPT_HEADERDATA, x);
			curl_easy_setopt(ee, CURLOPT_ERRORBUFFER, x->errbuf);
			curl_easy_setopt(ee, CURLOPT_PRIVATE, x);
		}
	}
	return CN_OK;
}

void cn_bench_sum_counters(eng *g, uint64_t *ops, uint64_t *bytes, uint64_t *errs)
{
	*ops = *bytes = *errs = 0;
	for (int t = 0; t < g->nthreads; t++) {
		*ops += atomic_load(&g->w[t].ops);
		*bytes += atomic_load(&g->w[t].bytes);
		*errs += atomic_load(&g->w[t].errs);
	}
}

cn_err cn_bench_run_phase(eng *g, phase *ph, progress *pr)
{
	g->ph = ph;
	for (int t = 0; t < g->nthreads; t++) {
		worker *w = &g->w[t];
		atomic_store(&w->ops, 0);
		atomic_store(&w->bytes, 0);
		atomic_store(&w->errs, 0);
		w->first_err = NULL;
		w->list_token[0] = 0;
	}
	int started = 0;
	bool joined[64] = { false };
	cn_err e = CN_OK;
	CN_ASSERT(g->nthreads <= 64);
	for (int t = 0; t < g->nthreads; t++) {
		if (pthread_create(&g->w[t].th, NULL, worker_main, &g->w[t])) {
			atomic_store(&ph->stop, true);
			e = CN_ERR_NOMEM;
			break;
		}
		started++;
	}
	int64_t t_start = cn_mono_ns(), last = t_start;
	uint64_t last_ops = 0, last_bytes = 0;
	for (;;) {
		/* wake every 100 ms; threads finish on their own (deadline, exhausted work) */
		struct timespec ts = { 0, 100 * 1000000 };
		nanosleep(&ts, NULL);
		bool alive = false;
		for (int t = 0; t < started; t++) {
			if (joined[t])
				continue;
			if (pthread_tryjoin_np(g->w[t].th, NULL) == 0)
				joined[t] = true;
			else
				alive = true;
		}
		int64_t now = cn_mono_ns();
		if (now - last >= NS || !alive) {
			uint64_t ops, bytes, errs;
			cn_bench_sum_counters(g, &ops, &bytes, &errs);
			double dt = (double)(now - last) / NS;
			double mib = (double)(bytes - last_bytes) / 1048576.0 / dt, obs = (double)(ops - last_ops) / dt;
			if (pr && !pr->quiet && alive) {
				if (pr->tty)
					fprintf(stderr, "\r\033[K%s: %.1fs, %.2f MiB/s, %.2f obj/s, %llu errors", pr->label,
					        (double)(now - t_start) / NS, mib, obs, (unsigned long long)errs);
				else
					fprintf(stderr, "%s: %.1fs, %.2f MiB/s, %.2f obj/s, %llu errors\n", pr->label,
					        (double)(now - t_start) / NS, mib, obs, (unsigned long long)errs);
			}
			if (pr && pr->autoterm && alive && dt > 0.5 && pr->nsamples < 600) {
				pr->samples[pr->nsamples++] = bytes - last_bytes > 0 ? mib : obs;
				int need = (int)(pr->stable_ns / NS);
				if (need < 3)
					need = 3;
				if (pr->nsamples >= need + 2) { /* skip the warm-up samples */
					double mn = 1e300, mx = 0, sum = 0;
					for (int i = pr->nsamples - need; i < pr->nsamples; i++) {
						double v = pr->samples[i];
						mn = v < mn ? v : mn;
						mx = v > mx ? v : mx;
						sum += v;
					}
					double mean = sum / need;
					if (mean > 0 && (mx - mean) / mean * 100 <= pr->stable_pct &&
					    (mean - mn) / mean * 100 <= pr->stable_pct) {
						pr->stopped_early = true;
						pr->stopped_at = (double)(now - t_start) / NS;
						atomic_store(&ph->stop, true);
					}
				}
			}
			last = now;
			last_ops = ops;
			last_bytes = bytes;
		}
		if (!alive)
			break;
	}
	if (pr && pr->tty && !pr->quiet)
		fprintf(stderr, "\r\033[K");
	for (int t = 0; t < g->nthreads; t++)
		if (g->w[t].fail && !e)
			e = g->w[t].fail;
	return e;
}

void cn_bench_phase_counts(eng *g, uint64_t *ops, uint64_t *errs, const char **first)
{
	uint64_t b;
	cn_bench_sum_counters(g, ops, &b, errs);
	*first = NULL;
	for (int t = 0; t < g->nthreads && !*first; t++)
		*first = g->w[t].first_err;
}

void cn_bench_phase_init(phase *ph, gen_kind gen)
{
	memset(ph, 0, sizeof *ph);
	ph->gen = gen;
	atomic_init(&ph->stop, false);
	atomic_init(&ph->next, 0);
}
