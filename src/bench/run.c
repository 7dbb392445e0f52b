/* bench/run: the load engine and the modes. One or more worker threads each drive a libcurl
 * multi handle with their share of --concurrent transfers (closed loop: a finished request
 * starts the next at once; open loop: requests start at intended times, fixed or Poisson,
 * and latency counts from the intended time, so a slow server cannot hide its queue —
 * no coordinated omission). Requests are signed by the client library (src/client); bodies
 * come from one pre-generated random buffer (incompressible), each object a different
 * window of it, so a GET can be verified with XXH3 against the hash of what was written.
 *
 * A run: create the bucket, prepare (upload what the measured phase reads), measure (every
 * request becomes a cn_bench_rec fed to a per-worker accumulator; merged at the end,
 * invariant B2), report, write benchdata, clean up (unless --noclear). Errors are counted
 * and shown, never retried. Every phase is bounded: new requests stop at the deadline and
 * each in-flight request is bounded by the request timeout. */
#include "bench/bench_int.h"
#include "client/client.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#if defined(__x86_64__)
/* the runtime-dispatched AVX2/AVX-512 XXH3 (same hash; libxxhash's plain entry points are
 * its SSE2 build, ~16x slower here): --verify hashes every byte a GET receives */
#include <xxh_x86dispatch.h>
#endif

#define NS 1000000000LL
#define OBJ_ABSENT 0
#define OBJ_PRESENT 1
#define OBJ_BUSY 2
#define SLACK 65536

typedef enum gen_kind {
	GEN_PUT_TABLE,    /* PUT object i for i < count (prepare) */
	GEN_DELETE_TABLE, /* DELETE object i for i < count (delete mode, cleanup) */
	GEN_PUT_NEW,      /* PUT fresh keys (put mode, loop) */
	GEN_GET,          /* GET a random present object */
	GEN_STAT,
	GEN_LIST,
	GEN_MIXED,
	GEN_PUT_PARTS,    /* UploadPart i+1 for i < count */
	GEN_GET_PARTS,    /* ranged GET of a random part */
} gen_kind;

typedef struct phase {
	gen_kind gen;
	bool record;            /* measured: feed the accumulators */
	bool cleanup;           /* 404 on DELETE is fine */
	int64_t deadline;       /* mono ns, 0 = none */
	atomic_bool stop;
	double rate;            /* total req/s, 0 = closed loop */
	uint64_t count;
	atomic_uint_fast64_t next;
} phase;

typedef struct eng eng;
typedef struct worker worker;

typedef struct xfer {
	CURL *e;
	cn_client_hdrs h;
	worker *w;
	int op;
	uint64_t obj;
	uint64_t size, off, pos, got;
	int64_t t_intended, t_start;
	size_t host;
	bool verify, active;
	XXH3_state_t *xs;
	uint64_t expect;
	char key[600];
	cn_kv q[4];
	char qv[4][64];
	char token[1024];
	const char *extra[2];
	char range[96];
	cn_buf resp;            /* error bodies and list answers (bounded) */
	bool keep_resp;
	char etag[160];
	char errbuf[CURL_ERROR_SIZE];
} xfer;

struct worker {
	eng *g;
	int id;
	pthread_t th;
	CURLM *m;
	xfer *x;
	int n;
	cn_client_signer signer;
	uint64_t rng;
	cn_bench_acc acc;
	cn_bench_rec *recs;
	size_t nrec, caprec;
	_Atomic uint64_t ops, bytes, errs;
	uint64_t host_rr;
	char list_token[1024];
	int64_t next_send;
	const char *first_err;
	cn_err fail;            /* allocation failure inside the worker */
};

struct eng {
	const cn_bench_cfg *cfg;
	cn_client *client;
	char **hosts;           /* URLs, for accumulators */
	size_t nhosts;
	char prefix[400];       /* key prefix of this run ("[prefix/]runid/") */
	unsigned char *payload;
	size_t payload_len;
	uint64_t max_size;
	int nthreads;
	worker *w;
	uint64_t nobj;
	uint8_t *state;
	uint64_t *hash;         /* expected XXH3 per object (verify) */
	atomic_uint_fast64_t put_new_next;
	char upload_id[512];
	char (*etags)[160];
	phase *ph;
	int64_t t0;             /* mono ns at the measured phase's start */
	bool keep_recs;
	bool synced;            /* agent: start time received */
	int64_t start_unix_ns;  /* wall clock of t0 */
};

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Size and payload window of object idx (deterministic: PUT and verify agree). */
static void obj_shape(const eng *g, uint64_t idx, uint64_t *size, uint64_t *off)
{
	uint64_t h = mix(idx + 0x9E3779B97F4A7C15ULL);
	*off = h % SLACK;
	if (g->cfg->mode == CN_BENCH_MULTIPART) {
		*size = g->cfg->part_size;
		return;
	}
	if (!g->cfg->randsize || g->cfg->obj_size <= 1) {
		*size = g->cfg->obj_size;
		return;
	}
	/* log-uniform in [1, obj_size], as warp's --obj.randsize */
	double u = (double)(mix(h) >> 11) / 9007199254740992.0;
	uint64_t s = (uint64_t)exp(u * log((double)g->cfg->obj_size));
	*size = s < 1 ? 1 : s > g->cfg->obj_size ? g->cfg->obj_size : s;
}

static void obj_key(const eng *g, uint64_t idx, char *out, size_t cap)
{
	snprintf(out, cap, "%s%08" PRIx64 ".rnd", g->prefix, idx);
}

/* --- curl callbacks ------------------------------------------------------------------------ */

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

/* --- generators ------------------------------------------------------------------------------ */

/* A random object owned by this worker in one of the wanted states (bounded probing). */
static bool pick_obj(worker *w, uint8_t want, uint64_t *out)
{
	eng *g = w->g;
	uint64_t per = g->nobj / (uint64_t)g->nthreads + 1;
	for (int tries = 0; tries < 32; tries++) {
		uint64_t i = (uint64_t)w->id + (uint64_t)g->nthreads * (rnd(&w->rng) % per);
		if (i < g->nobj && g->state[i] == want) {
			*out = i;
			return true;
		}
	}
	return false;
}

static int pick_mixed_op(worker *w)
{
	const cn_bench_cfg *c = w->g->cfg;
	double tot = c->get_distrib + c->put_distrib + c->stat_distrib + c->delete_distrib;
	double r = (double)(rnd(&w->rng) >> 11) / 9007199254740992.0 * tot;
	if ((r -= c->get_distrib) < 0)
		return CN_BOP_GET;
	if ((r -= c->stat_distrib) < 0)
		return CN_BOP_STAT;
	if ((r -= c->put_distrib) < 0)
		return CN_BOP_PUT;
	return CN_BOP_DELETE;
}

/* Chooses the next request for x; false when this worker has no more work in the phase. */
static bool gen_next(worker *w, xfer *x)
{
	eng *g = w->g;
	phase *ph = g->ph;
	uint64_t i;
	x->obj = 0;
	switch (ph->gen) {
	case GEN_PUT_TABLE:
	case GEN_DELETE_TABLE:
		i = atomic_fetch_add(&ph->next, 1);
		if (i >= ph->count)
			return false;
		x->op = ph->gen == GEN_PUT_TABLE ? CN_BOP_PUT : CN_BOP_DELETE;
		x->obj = i;
		return true;
	case GEN_PUT_NEW:
		x->op = CN_BOP_PUT;
		x->obj = atomic_fetch_add(&g->put_new_next, 1);
		return true;
	case GEN_GET:
	case GEN_STAT: {
		uint64_t cnt = ph->count ? ph->count : g->nobj;
		if (!cnt)
			return false;
		x->op = ph->gen == GEN_GET ? CN_BOP_GET : CN_BOP_STAT;
		x->obj = rnd(&w->rng) % cnt;
		return true;
	}
	case GEN_LIST:
		x->op = CN_BOP_LIST;
		return true;
	case GEN_MIXED: {
		int op = pick_mixed_op(w);
		bool ok = false;
		if (op == CN_BOP_PUT)
			ok = pick_obj(w, OBJ_ABSENT, &i) || pick_obj(w, OBJ_PRESENT, &i);
		else if (!(ok = pick_obj(w, OBJ_PRESENT, &i)) && pick_obj(w, OBJ_ABSENT, &i)) {
			op = CN_BOP_PUT; /* everything of ours is deleted or busy: write instead */
			ok = true;
		}
		if (!ok)
			return false;
		x->op = op;
		x->obj = i;
		g->state[i] = OBJ_BUSY;
		return true;
	}
	case GEN_PUT_PARTS:
		i = atomic_fetch_add(&ph->next, 1);
		if (i >= ph->count)
			return false;
		x->op = CN_BOP_PUTPART;
		x->obj = i;
		return true;
	case GEN_GET_PARTS:
		x->op = CN_BOP_GET;
		x->obj = rnd(&w->rng) % ph->count;
		return true;
	}
	return false;
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
	obj_shape(g, x->obj, &x->size, &x->off);
	if (multipart)
		snprintf(x->key, sizeof x->key, "%smultipart.rnd", g->prefix);
	else
		obj_key(g, x->obj, x->key, sizeof x->key);
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

static double exp_interval(worker *w, double rate)
{
	double u = ((double)(rnd(&w->rng) >> 11) + 1.0) / 9007199254740993.0;
	return -log(u) / rate * 1e9;
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
				w->next_send += (int64_t)(poisson ? exp_interval(w, rate) : 1e9 / rate);
			}
			if (!gen_next(w, x)) {
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

/* --- engine set-up ------------------------------------------------------------------------- */

static void eng_free(eng *g)
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

static cn_err eng_init(eng *g, const cn_bench_cfg *c, char *err, size_t errlen)
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
	uint64_t seed = (uint64_t)wall_ns() ^ ((uint64_t)getpid() << 32);
	char runid[16];
	static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	for (int i = 0; i < 8; i++)
		runid[i] = al[rnd(&seed) % 36];
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
		uint64_t v = rnd(&r);
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
		w->rng = mix(seed + (uint64_t)t * 7919) | 1;
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

/* Live progress of a phase on stderr: one rewritten line on a terminal, plain lines
 * otherwise. Also implements --autoterm (on the measured phase). */
typedef struct progress {
	bool tty, quiet, autoterm;
	const char *label;
	double stable_pct;
	int64_t stable_ns;
	double samples[600];
	int nsamples;
	bool stopped_early;
	double stopped_at;
} progress;

static void sum_counters(eng *g, uint64_t *ops, uint64_t *bytes, uint64_t *errs)
{
	*ops = *bytes = *errs = 0;
	for (int t = 0; t < g->nthreads; t++) {
		*ops += atomic_load(&g->w[t].ops);
		*bytes += atomic_load(&g->w[t].bytes);
		*errs += atomic_load(&g->w[t].errs);
	}
}

static cn_err run_phase(eng *g, phase *ph, progress *pr)
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
			sum_counters(g, &ops, &bytes, &errs);
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

static void phase_counts(eng *g, uint64_t *ops, uint64_t *errs, const char **first)
{
	uint64_t b;
	sum_counters(g, ops, &b, errs);
	*first = NULL;
	for (int t = 0; t < g->nthreads && !*first; t++)
		*first = g->w[t].first_err;
}

static void phase_init(phase *ph, gen_kind gen)
{
	memset(ph, 0, sizeof *ph);
	ph->gen = gen;
	atomic_init(&ph->stop, false);
	atomic_init(&ph->next, 0);
}

/* --- bucket, prepare, cleanup ---------------------------------------------------------------- */

static bool make_bucket(eng *g)
{
	cn_client_req r = { .method = "PUT", .bucket = g->cfg->bucket, .body_len = -1 };
	cn_buf resp;
	cn_buf_init(&resp);
	long st = 0;
	char err[256] = "";
	cn_err e = cn_client_do(g->client, &r, NULL, 0, &resp, &st, err, sizeof err);
	char code[128] = "";
	if (resp.len)
		cn_client_xml_text(resp.p, resp.len, "Code", code, sizeof code);
	bool ok = !e && (st == 200 || (st == 409 && (!strcmp(code, "BucketAlreadyOwnedByYou") ||
	                                             !strcmp(code, "BucketAlreadyExists"))));
	if (!ok) {
		if (e)
			fprintf(stderr, "cairn bench: cannot reach %s: %s\n", cn_client_host_url(g->client, 0), err);
		else
			fprintf(stderr, "cairn bench: creating bucket %s: HTTP %ld %s\n", g->cfg->bucket, st, code);
	}
	cn_buf_fini(&resp);
	return ok;
}

static bool prepare_objects(eng *g, uint64_t n, progress *pr)
{
	g->nobj = n;
	g->state = calloc(n ? n : 1, 1);
	if (!g->state)
		return false;
	if (g->cfg->verify) {
		g->hash = calloc(n ? n : 1, sizeof *g->hash);
		if (!g->hash)
			return false;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t size, off;
			obj_shape(g, i, &size, &off);
			g->hash[i] = XXH3_64bits(g->payload + off, (size_t)size);
		}
	}
	if (!n)
		return true;
	phase ph;
	phase_init(&ph, GEN_PUT_TABLE);
	ph.count = n;
	if (!g->cfg->quiet)
		fprintf(stderr, "cairn bench: preparing %" PRIu64 " objects under %s/%s\n", n, g->cfg->bucket, g->prefix);
	pr->label = "prepare";
	bool at = pr->autoterm;
	pr->autoterm = false;
	cn_err e = run_phase(g, &ph, pr);
	pr->autoterm = at;
	uint64_t ops, errs;
	const char *first;
	phase_counts(g, &ops, &errs, &first);
	if (e || errs) {
		fprintf(stderr, "cairn bench: prepare failed: %" PRIu64 " of %" PRIu64 " uploads failed (first: %s)\n", errs, n,
		        first ? first : cn_err_str(e));
		return false;
	}
	return true;
}

static void cleanup(eng *g, uint64_t n, progress *pr)
{
	if (g->cfg->noclear || !n)
		return;
	phase ph;
	phase_init(&ph, GEN_DELETE_TABLE);
	ph.count = n;
	ph.cleanup = true;
	ph.deadline = cn_mono_ns() + 600 * NS;
	pr->label = "cleanup";
	bool at = pr->autoterm;
	pr->autoterm = false;
	cn_err e = run_phase(g, &ph, pr);
	pr->autoterm = at;
	uint64_t ops, errs;
	const char *first;
	phase_counts(g, &ops, &errs, &first);
	if (e || errs)
		fprintf(stderr, "cairn bench: cleanup: %" PRIu64 " deletes failed (first: %s)\n", errs, first ? first : "");
}

/* --- measured phase, reports, benchdata ------------------------------------------------------ */

static int cmp_rec(const void *x, const void *y)
{
	const cn_bench_rec *a = x, *b = y;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
}

/* Runs ph as a measured phase. fresh: a new run (t0 now, empty per-worker accumulators and
 * records); otherwise the phase adds to the previous one (multipart: upload, then GET). */
static cn_err measure_phase(eng *g, phase *ph, progress *pr, bool fresh)
{
	for (int t = 0; t < g->nthreads && fresh; t++) {
		worker *w = &g->w[t];
		cn_bench_acc_fini(&w->acc);
		cn_err e = cn_bench_acc_init(&w->acc, g->hosts, g->nhosts, g->cfg->concurrent);
		if (e)
			return e;
		w->nrec = 0;
	}
	if (g->cfg->agent_fd >= 0 && !g->synced) {
		int64_t start;
		if (cn_bench_agent_sync(g->cfg->agent_fd, &start))
			return CN_ERR_IO;
		g->synced = true;
		int64_t wait = start - wall_ns();
		if (wait > 60 * NS)
			wait = 60 * NS;
		if (wait > 0) {
			struct timespec ts = { (time_t)(wait / NS), (long)(wait % NS) };
			nanosleep(&ts, NULL);
		}
	}
	ph->record = true;
	int64_t now = cn_mono_ns();
	if (fresh) {
		g->t0 = now;
		g->start_unix_ns = wall_ns();
	}
	if (!ph->deadline && g->cfg->duration_ns)
		ph->deadline = now + g->cfg->duration_ns;
	pr->label = "measure";
	return run_phase(g, ph, pr);
}

static cn_err merge_workers(eng *g, cn_bench_acc *acc)
{
	cn_err e = CN_OK;
	for (int t = 0; t < g->nthreads && !e; t++)
		e = cn_bench_acc_merge(acc, &g->w[t].acc);
	return e;
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

/* A fresh measured phase merged into acc; the client's own CPU cost goes to stderr (not into
 * the report: the report is what benchdata reproduces). */
static cn_err measure(eng *g, phase *ph, progress *pr, cn_bench_acc *acc)
{
	double c0 = cpu_seconds();
	cn_err e = measure_phase(g, ph, pr, true);
	double cpu = cpu_seconds() - c0;
	uint64_t ops, bytes, errs;
	sum_counters(g, &ops, &bytes, &errs);
	if (!g->cfg->quiet && !e)
		fprintf(stderr, "cairn bench: client CPU %.2f s for the measured phase (%.3f s/GiB, %.1f µs/request)\n", cpu,
		        bytes ? cpu / ((double)bytes / 1073741824.0) : 0.0, ops ? cpu * 1e6 / (double)ops : 0.0);
	return e ? e : merge_workers(g, acc);
}

static cn_err collect_recs(eng *g, cn_bench_rec **out, size_t *n)
{
	size_t tot = 0;
	for (int t = 0; t < g->nthreads; t++)
		tot += g->w[t].nrec;
	cn_bench_rec *r = malloc((tot ? tot : 1) * sizeof *r);
	if (!r)
		return CN_ERR_NOMEM;
	size_t k = 0;
	for (int t = 0; t < g->nthreads; t++) {
		memcpy(r + k, g->w[t].recs, g->w[t].nrec * sizeof *r);
		k += g->w[t].nrec;
	}
	if (tot > 1)
		qsort(r, tot, sizeof *r, cmp_rec);
	*out = r;
	*n = tot;
	return CN_OK;
}

static const char *mode_name(cn_bench_mode m)
{
	static const char *const n[] = { "put", "get", "delete", "stat", "list", "mixed", "multipart", "loop" };
	return n[m];
}

/* Agent side: every record as a CSV line on the driver's socket, then "end". */
static cn_err stream_recs(int fd, eng *g, const cn_bench_rec *r, size_t n)
{
	cn_buf b;
	cn_buf_init(&b);
	cn_err e = cn_buf_printf(&b, "records %zu\n", n);
	for (size_t i = 0; i < n && !e; i++) {
		e = cn_bench_rec_csv(&b, &r[i], g->hosts[r[i].host]);
		if (!e)
			e = cn_buf_append(&b, "\n", 1);
	}
	if (!e)
		e = cn_buf_puts(&b, "end\n");
	for (size_t off = 0; !e && off < b.len;) {
		ssize_t k = send(fd, b.p + off, b.len - off, MSG_NOSIGNAL);
		if (k <= 0)
			e = CN_ERR_IO;
		else
			off += (size_t)k;
	}
	cn_buf_fini(&b);
	return e;
}

/* After the measured phase: report (text or JSON), benchdata, agent streaming. Returns the
 * number of errors counted (for the exit code) or -1 on a failure of its own. */
static int64_t finish_report(eng *g, cn_bench_acc *acc, progress *pr, int64_t start_unix_ns)
{
	const cn_bench_cfg *c = g->cfg;
	int64_t errors = 0;
	for (int o = 0; o < CN_BOP__COUNT; o++)
		errors += (int64_t)acc->op[o].errors;
	cn_bench_rec *recs = NULL;
	size_t nrec = 0;
	if (g->keep_recs && collect_recs(g, &recs, &nrec)) {
		fprintf(stderr, "cairn bench: out of memory collecting records\n");
		return -1;
	}
	if (c->agent_fd >= 0) {
		cn_err e = stream_recs(c->agent_fd, g, recs, nrec);
		free(recs);
		return e ? -1 : errors;
	}
	if (pr->stopped_early && !c->quiet)
		fprintf(stderr, "cairn bench: throughput stable within %.1f%% for %.0fs: stopped after %.1fs (--autoterm)\n",
		        c->autoterm_pct, (double)c->autoterm_dur_ns / NS, pr->stopped_at);
	if (c->json) {
		char *j = cn_bench_report_json(acc, NULL);
		if (j) {
			printf("%s\n", j);
			free(j);
		}
	} else {
		if (!cn_bench_report_all(acc, NULL, stdout))
			printf("No requests were measured.\n");
	}
	fflush(stdout);
	if (c->benchdata) {
		cn_bench_meta m = { .concurrency = c->concurrent, .hosts = g->hosts, .nhosts = g->nhosts,
		                    .start_unix_ns = start_unix_ns };
		snprintf(m.mode, sizeof m.mode, "%s", mode_name(c->mode));
		if (cn_bench_data_write(c->benchdata, &m, recs, nrec)) {
			fprintf(stderr, "cairn bench: cannot write %s\n", c->benchdata);
			errors = -1;
		} else if (!c->quiet) {
			fprintf(stderr, "cairn bench: %zu requests written to %s\n", nrec, c->benchdata);
		}
	}
	free(recs);
	return errors;
}

/* --- multipart ----------------------------------------------------------------------------- */

static bool mp_initiate(eng *g)
{
	char key[600];
	snprintf(key, sizeof key, "%smultipart.rnd", g->prefix);
	cn_kv q[] = { { (char *)"uploads", NULL } };
	cn_client_req r = { .method = "POST", .bucket = g->cfg->bucket, .key = key, .query = q, .nquery = 1, .body_len = -1 };
	cn_buf resp;
	cn_buf_init(&resp);
	long st = 0;
	char err[256] = "";
	cn_err e = cn_client_do(g->client, &r, NULL, 0, &resp, &st, err, sizeof err);
	bool ok = !e && st == 200 && resp.len &&
	          cn_client_xml_text(resp.p, resp.len, "UploadId", g->upload_id, sizeof g->upload_id) && g->upload_id[0];
	if (!ok)
		fprintf(stderr, "cairn bench: CreateMultipartUpload failed: %s%s HTTP %ld %.300s\n", err, e ? "" : "", st,
		        resp.p ? resp.p : "");
	cn_buf_fini(&resp);
	return ok;
}

static bool mp_complete(eng *g, int parts)
{
	char key[600];
	snprintf(key, sizeof key, "%smultipart.rnd", g->prefix);
	cn_buf body;
	cn_buf_init(&body);
	cn_err e = cn_buf_puts(&body, "<CompleteMultipartUpload>");
	for (int i = 0; i < parts && !e; i++)
		e = cn_buf_printf(&body, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i + 1, g->etags[i]);
	if (!e)
		e = cn_buf_puts(&body, "</CompleteMultipartUpload>");
	cn_kv q[] = { { (char *)"uploadId", g->upload_id } };
	cn_client_req r = { .method = "POST", .bucket = g->cfg->bucket, .key = key, .query = q, .nquery = 1, .body_len = -1 };
	cn_buf resp;
	cn_buf_init(&resp);
	long st = 0;
	char err[256] = "";
	if (!e)
		e = cn_client_do(g->client, &r, body.p, body.len, &resp, &st, err, sizeof err);
	bool ok = !e && st == 200 && resp.len && !strstr(resp.p, "<Error>");
	if (!ok)
		fprintf(stderr, "cairn bench: CompleteMultipartUpload failed: %s HTTP %ld %.300s\n", err, st,
		        resp.p ? resp.p : "");
	cn_buf_fini(&resp);
	cn_buf_fini(&body);
	return ok;
}

static void mp_cleanup(eng *g)
{
	if (g->cfg->noclear)
		return;
	char key[600];
	snprintf(key, sizeof key, "%smultipart.rnd", g->prefix);
	cn_client_req r = { .method = "DELETE", .bucket = g->cfg->bucket, .key = key, .body_len = -1 };
	long st;
	cn_client_do(g->client, &r, NULL, 0, NULL, &st, NULL, 0);
	if (g->upload_id[0]) { /* an unfinished upload: abort it (harmless when completed) */
		cn_kv q[] = { { (char *)"uploadId", g->upload_id } };
		r.query = q;
		r.nquery = 1;
		cn_client_do(g->client, &r, NULL, 0, NULL, &st, NULL, 0);
	}
}

/* --- sweep and plot ------------------------------------------------------------------------ */

typedef struct sweep_pt {
	double target, obj_s, mib_s, p50, p90, p99;
	uint64_t errors;
} sweep_pt;

static int parse_sweep(const char *s, double *rates, int max)
{
	int n = 0;
	double a, b, step;
	if (sscanf(s, "%lf:%lf:%lf", &a, &b, &step) == 3) {
		if (a <= 0 || b < a || step <= 0)
			return -1;
		for (double r = a; r <= b * 1.000001 && n < max; r += step)
			rates[n++] = r;
		return n;
	}
	const char *p = s;
	while (*p && n < max) {
		char *end;
		double v = strtod(p, &end);
		if (end == p || v <= 0)
			return -1;
		rates[n++] = v;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

static bool write_plot(const char *path, const sweep_pt *pt, int n, const char *opname)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	double xmax = 1, ymax = 1;
	for (int i = 0; i < n; i++) {
		xmax = pt[i].obj_s > xmax ? pt[i].obj_s : xmax;
		ymax = pt[i].p99 > ymax ? pt[i].p99 : ymax;
	}
	xmax *= 1.1;
	ymax *= 1.1;
	const double W = 720, H = 440, L = 70, R = 20, T = 40, B = 50;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">cairn bench %s: latency vs throughput</text>\n", L, opname);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T, L, H - B);
	for (int i = 0; i <= 5; i++) {
		double xv = xmax * i / 5, yv = ymax * i / 5;
		double px = L + (W - L - R) * i / 5, py = H - B - (H - T - B) * i / 5;
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", px, H - B + 16, xv);
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", L - 6, py + 4, yv);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">achieved obj/s</text>\n", (L + W - R) / 2, H - 12);
	fprintf(f, "<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\">latency (ms)</text>\n",
	        (T + H - B) / 2, (T + H - B) / 2);
	static const char *const col[] = { "#1f77b4", "#ff7f0e", "#d62728" };
	static const char *const nm[] = { "p50", "p90", "p99" };
	for (int s = 0; s < 3; s++) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col[s]);
		for (int i = 0; i < n; i++) {
			double y = s == 0 ? pt[i].p50 : s == 1 ? pt[i].p90 : pt[i].p99;
			fprintf(f, "%.1f,%.1f ", L + (W - L - R) * pt[i].obj_s / xmax, H - B - (H - T - B) * y / ymax);
		}
		fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%d\" fill=\"%s\">%s</text>\n", W - R - 40, (int)T + 14 * s, col[s], nm[s]);
	}
	fprintf(f, "</svg>\n");
	return fclose(f) == 0;
}

/* --- modes ----------------------------------------------------------------------------------- */

static gen_kind measured_gen(cn_bench_mode m)
{
	switch (m) {
	case CN_BENCH_PUT:
		return GEN_PUT_NEW;
	case CN_BENCH_GET:
		return GEN_GET;
	case CN_BENCH_DELETE:
		return GEN_DELETE_TABLE;
	case CN_BENCH_STAT:
		return GEN_STAT;
	case CN_BENCH_LIST:
		return GEN_LIST;
	case CN_BENCH_MIXED:
		return GEN_MIXED;
	default:
		return GEN_GET;
	}
}

static int run_loop_mode(eng *g, progress *pr)
{
	const cn_bench_cfg *c = g->cfg;
	int rc = 0;
	for (int loop = 1; loop <= c->loops; loop++) {
		phase ph;
		cn_bench_acc acc;
		static const gen_kind gens[3] = { GEN_PUT_NEW, GEN_GET, GEN_DELETE_TABLE };
		atomic_store(&g->put_new_next, 0);
		uint64_t nput = 0;
		for (int k = 0; k < 3; k++) {
			if (cn_bench_acc_init(&acc, g->hosts, g->nhosts, c->concurrent))
				return 1;
			phase_init(&ph, gens[k]);
			ph.count = nput;
			if (k == 2)
				ph.deadline = cn_mono_ns() + 600 * NS;
			if (k > 0 && !nput) {
				cn_bench_acc_fini(&acc);
				break;
			}
			int64_t t0 = cn_mono_ns();
			if (measure(g, &ph, pr, &acc)) {
				cn_bench_acc_fini(&acc);
				return 1;
			}
			double el = (double)(cn_mono_ns() - t0) / NS;
			int op = k == 0 ? CN_BOP_PUT : k == 1 ? CN_BOP_GET : CN_BOP_DELETE;
			const cn_bench_opacc *o = &acc.op[op];
			uint64_t slow = 0;
			for (size_t i = 0; i < o->nerr; i++)
				if (strstr(o->err[i].msg, "HTTP 503"))
					slow += o->err[i].n;
			if (k == 0) {
				nput = atomic_load(&g->put_new_next);
				g->nobj = nput;
			}
			if (k < 2)
				printf("Loop %d: %s time %.1f secs, objects = %" PRIu64 ", speed = %.1fMB/sec, %.1f operations/sec. Slowdowns = %" PRIu64 ", Errors = %" PRIu64 "\n",
				       loop, k == 0 ? "PUT" : "GET", el, o->ops, (double)o->bytes / 1048576.0 / el,
				       (double)o->ops / el, slow, o->errors);
			else
				printf("Loop %d: DELETE time %.1f secs, %.1f deletes/sec. Slowdowns = %" PRIu64 ", Errors = %" PRIu64 "\n",
				       loop, el, (double)o->ops / el, slow, o->errors);
			fflush(stdout);
			if (o->errors)
				rc = 1;
			cn_bench_acc_fini(&acc);
		}
	}
	return rc;
}

static int run_sweep(eng *g, progress *pr, phase *tmpl)
{
	const cn_bench_cfg *c = g->cfg;
	double rates[64];
	int n = parse_sweep(c->sweep, rates, 64);
	if (n <= 0) {
		fprintf(stderr, "cairn bench: bad --sweep '%s' (FROM:TO:STEP or R1,R2,...)\n", c->sweep);
		return 2;
	}
	sweep_pt pt[64];
	int rc = 0, op = -1;
	printf("%-12s %12s %12s %10s %10s %10s %8s\n", "target/s", "obj/s", "MiB/s", "p50(ms)", "p90(ms)", "p99(ms)", "errors");
	for (int i = 0; i < n; i++) {
		phase ph = *tmpl;
		atomic_init(&ph.stop, false);
		atomic_init(&ph.next, 0);
		ph.rate = rates[i];
		ph.deadline = 0;
		cn_bench_acc acc;
		if (cn_bench_acc_init(&acc, g->hosts, g->nhosts, c->concurrent) || measure(g, &ph, pr, &acc))
			return 1;
		cn_bench_summary s;
		for (int o = 0; o < CN_BOP__COUNT && op < 0; o++)
			if (acc.op[o].ops || acc.op[o].errors)
				op = o;
		memset(&pt[i], 0, sizeof pt[i]);
		pt[i].target = rates[i];
		if (op >= 0 && cn_bench_summarize(&acc, op, &s)) {
			pt[i].obj_s = s.obj_s;
			pt[i].mib_s = s.mib_s;
			pt[i].p50 = (double)cn_hist_quantile(&s.lat, 0.5) / 1e6;
			pt[i].p90 = (double)cn_hist_quantile(&s.lat, 0.9) / 1e6;
			pt[i].p99 = (double)cn_hist_quantile(&s.lat, 0.99) / 1e6;
			pt[i].errors = s.errors;
			cn_bench_summary_fini(&s);
		}
		if (pt[i].errors)
			rc = 1;
		printf("%-12.1f %12.2f %12.2f %10.3f %10.3f %10.3f %8" PRIu64 "\n", pt[i].target, pt[i].obj_s, pt[i].mib_s,
		       pt[i].p50, pt[i].p90, pt[i].p99, pt[i].errors);
		fflush(stdout);
		cn_bench_acc_fini(&acc);
	}
	if (c->plot) {
		if (!write_plot(c->plot, pt, n, cn_bop_name(op < 0 ? 0 : op))) {
			fprintf(stderr, "cairn bench: cannot write %s\n", c->plot);
			return 1;
		}
		fprintf(stderr, "cairn bench: plot written to %s\n", c->plot);
	}
	return rc;
}

int cn_bench_run(const cn_bench_cfg *c)
{
	if (c->concurrent < 1 || c->concurrent > 100000 || (c->mode != CN_BENCH_MULTIPART && c->mode != CN_BENCH_LIST &&
	                                                      c->mode != CN_BENCH_DELETE && c->mode != CN_BENCH_STAT && !c->obj_size)) {
		fprintf(stderr, "cairn bench: --concurrent must be 1..100000 and --obj.size > 0\n");
		return 2;
	}
	if (c->mode == CN_BENCH_MULTIPART && (c->parts < 1 || c->parts > 10000 || c->part_size < 1)) {
		fprintf(stderr, "cairn bench: --parts must be 1..10000 and --part.size > 0\n");
		return 2;
	}
	if (c->mode == CN_BENCH_MIXED &&
	    c->get_distrib + c->put_distrib + c->stat_distrib + c->delete_distrib <= 0) {
		fprintf(stderr, "cairn bench: the --*-distrib percentages add up to 0\n");
		return 2;
	}
	if (c->agents && *c->agents) {
		/* driver: the agents do the work; records merge into one report */
		cn_bench_cfg cc = *c;
		eng g;
		char err[512] = "";
		if (eng_init(&g, &cc, err, sizeof err)) {
			fprintf(stderr, "cairn bench: %s\n", err[0] ? err : "out of memory");
			eng_free(&g);
			return 2;
		}
		cn_bench_acc acc;
		cn_bench_rec *recs = NULL;
		size_t nrec = 0;
		int rc = 1;
		if (!cn_bench_acc_init(&acc, g.hosts, g.nhosts, c->concurrent)) {
			if (cn_bench_agents_run(c, &acc, &recs, &nrec, err, sizeof err)) {
				fprintf(stderr, "cairn bench: %s\n", err);
			} else {
				int64_t errors;
				if (c->json) {
					char *j = cn_bench_report_json(&acc, NULL);
					printf("%s\n", j ? j : "{}");
					free(j);
				} else {
					cn_bench_report_all(&acc, NULL, stdout);
				}
				errors = 0;
				for (int o = 0; o < CN_BOP__COUNT; o++)
					errors += (int64_t)acc.op[o].errors;
				rc = errors ? 1 : 0;
				if (c->benchdata) {
					cn_bench_meta m = { .concurrency = acc.concurrency, .hosts = g.hosts, .nhosts = g.nhosts,
					                    .start_unix_ns = c->start_unix_ns };
					snprintf(m.mode, sizeof m.mode, "%s", mode_name(c->mode));
					if (nrec > 1)
						qsort(recs, nrec, sizeof *recs, cmp_rec);
					if (cn_bench_data_write(c->benchdata, &m, recs, nrec)) {
						fprintf(stderr, "cairn bench: cannot write %s\n", c->benchdata);
						rc = 1;
					}
				}
			}
			cn_bench_acc_fini(&acc);
		}
		free(recs);
		eng_free(&g);
		return rc;
	}

	eng g;
	char err[512] = "";
	if (eng_init(&g, c, err, sizeof err)) {
		fprintf(stderr, "cairn bench: %s\n", err[0] ? err : "out of memory");
		eng_free(&g);
		return 2;
	}
	g.keep_recs = c->benchdata != NULL || c->agent_fd >= 0;
	progress pr = { .tty = isatty(2), .quiet = c->quiet, .autoterm = c->autoterm,
	                .stable_pct = c->autoterm_pct, .stable_ns = c->autoterm_dur_ns };
	int rc = 1;
	uint64_t clean_n = 0;
	cn_bench_acc acc;
	bool acc_ok = false;
	if (!make_bucket(&g))
		goto out;
	if (c->mode == CN_BENCH_LOOP) {
		rc = run_loop_mode(&g, &pr);
		goto out;
	}
	phase ph;
	phase_init(&ph, measured_gen(c->mode));
	ph.rate = c->rate;
	if (c->mode == CN_BENCH_MULTIPART) {
		if (!mp_initiate(&g))
			goto out;
		g.etags = calloc((size_t)c->parts, sizeof *g.etags);
		g.nobj = (uint64_t)c->parts;
		if (!g.etags)
			goto out;
		if (c->verify) {
			g.hash = calloc((size_t)c->parts, sizeof *g.hash);
			if (!g.hash)
				goto out;
			for (int i = 0; i < c->parts; i++) {
				uint64_t size, off;
				obj_shape(&g, (uint64_t)i, &size, &off);
				g.hash[i] = XXH3_64bits(g.payload + off, (size_t)size);
			}
		}
	} else if (c->mode != CN_BENCH_PUT) {
		if (!prepare_objects(&g, c->objects, &pr))
			goto cleanup_out;
		clean_n = c->objects;
		ph.count = c->objects;
		if (c->mode == CN_BENCH_DELETE)
			ph.deadline = 0; /* set by measure() from --duration */
	}
	if (cn_bench_acc_init(&acc, g.hosts, g.nhosts, c->concurrent))
		goto cleanup_out;
	acc_ok = true;
	int64_t start_unix = c->start_unix_ns ? c->start_unix_ns : wall_ns();
	if (c->sweep) {
		rc = run_sweep(&g, &pr, &ph);
		if (c->mode == CN_BENCH_PUT)
			clean_n = atomic_load(&g.put_new_next);
		goto cleanup_out;
	}
	if (c->mode == CN_BENCH_MULTIPART) {
		phase up;
		phase_init(&up, GEN_PUT_PARTS);
		up.count = (uint64_t)c->parts;
		up.rate = c->rate;
		up.deadline = cn_mono_ns() + 3600 * NS;
		/* one run, two phases on one clock: the upload (PUTPART), then ranged GETs of the
		 * parts; each op's report has its own segments */
		uint64_t up_t0 = cn_mono_ns();
		if (measure_phase(&g, &up, &pr, true))
			goto cleanup_out;
		uint64_t up_ns = cn_mono_ns() - up_t0;
		uint64_t upload_errs = 0;
		for (int t = 0; t < g.nthreads; t++)
			upload_errs += g.w[t].acc.op[CN_BOP_PUTPART].errors;
		uint64_t done_t0 = cn_mono_ns();
		bool completed = !upload_errs && mp_complete(&g, c->parts);
		uint64_t done_ns = cn_mono_ns() - done_t0;
		if (completed && !c->quiet)
			fprintf(stderr, "CompleteMultipartUpload: %d parts in %.1f ms = %.2f%% of the upload "
			        "phase (%.1f s)\n", c->parts, (double)done_ns / 1e6,
			        up_ns ? 100.0 * (double)done_ns / (double)up_ns : 0.0, (double)up_ns / 1e9);
		if (!completed) {
			fprintf(stderr, "cairn bench: the upload did not complete; no GET phase\n");
		} else {
			phase_init(&ph, GEN_GET_PARTS);
			ph.count = (uint64_t)c->parts;
			ph.rate = c->rate;
			if (measure_phase(&g, &ph, &pr, false))
				goto cleanup_out;
		}
		if (merge_workers(&g, &acc))
			goto cleanup_out;
		int64_t errs = finish_report(&g, &acc, &pr, start_unix);
		rc = errs == 0 && !upload_errs ? 0 : 1;
		goto cleanup_out;
	}
	if (measure(&g, &ph, &pr, &acc)) {
		fprintf(stderr, "cairn bench: the measured phase failed (out of memory?)\n");
		goto cleanup_out;
	}
	if (c->mode == CN_BENCH_PUT)
		clean_n = atomic_load(&g.put_new_next);
	int64_t errors = finish_report(&g, &acc, &pr, start_unix);
	rc = errors == 0 ? 0 : 1;
cleanup_out:
	if (c->mode == CN_BENCH_MULTIPART)
		mp_cleanup(&g);
	else
		cleanup(&g, clean_n, &pr);
out:
	if (acc_ok)
		cn_bench_acc_fini(&acc);
	eng_free(&g);
	return rc;
}
