/* client/client: endpoint lists, the client object, request set-up on libcurl easy handles
 * (URL, method, signed headers from per-request storage: no allocation per request besides
 * libcurl's own copy of the URL), and a blocking one-shot helper for control requests
 * (bucket creation, listing, multipart initiate/complete). Contract in client.h. */
#include "client/client_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cn_client {
	size_t nhosts;
	char **urls;      /* "http://h:p" */
	char **hostports; /* "h:p" (the Host header) */
	bool *https;
	char *access, *secret, *region;
	bool insecure, vhost;
	long timeout_ms, connect_timeout_ms;
};

/* --- endpoints ---------------------------------------------------------------------------- */

static cn_err push_host(char ***v, size_t *n, const char *s, size_t len)
{
	if (*n >= CN_CLIENT_MAX_HOSTS)
		return CN_ERR_INVALID;
	char **nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv)
		return CN_ERR_NOMEM;
	*v = nv;
	nv[*n] = strndup(s, len);
	if (!nv[*n])
		return CN_ERR_NOMEM;
	(*n)++;
	return CN_OK;
}

/* Expands the first {a...b} of item (length len) and recurses on the results. */
static cn_err expand_item(const char *item, size_t len, char ***v, size_t *n)
{
	const char *open = memchr(item, '{', len);
	if (!open)
		return len ? push_host(v, n, item, len) : CN_ERR_INVALID;
	const char *close = memchr(open, '}', len - (size_t)(open - item));
	const char *dots = close ? strstr(open, "...") : NULL;
	if (!close || !dots || dots > close)
		return CN_ERR_INVALID;
	char a[32], b[32];
	size_t al = (size_t)(dots - open - 1), bl = (size_t)(close - dots - 3);
	if (!al || !bl || al >= sizeof a || bl >= sizeof b)
		return CN_ERR_INVALID;
	memcpy(a, open + 1, al);
	a[al] = 0;
	memcpy(b, dots + 3, bl);
	b[bl] = 0;
	bool num = isdigit((unsigned char)a[0]) && isdigit((unsigned char)b[0]);
	long lo, hi;
	int width = 0;
	if (num) {
		char *e1, *e2;
		lo = strtol(a, &e1, 10);
		hi = strtol(b, &e2, 10);
		if (*e1 || *e2)
			return CN_ERR_INVALID;
		if (a[0] == '0' && al > 1)
			width = (int)al;
	} else if (al == 1 && bl == 1 && isalpha((unsigned char)a[0]) && isalpha((unsigned char)b[0])) {
		lo = a[0];
		hi = b[0];
	} else {
		return CN_ERR_INVALID;
	}
	if (hi < lo || hi - lo >= CN_CLIENT_MAX_HOSTS)
		return CN_ERR_INVALID;
	size_t pre = (size_t)(open - item), postlen = len - (size_t)(close + 1 - item);
	for (long i = lo; i <= hi; i++) {
		char mid[32], buf[1024];
		if (num)
			snprintf(mid, sizeof mid, "%0*ld", width, i);
		else
			snprintf(mid, sizeof mid, "%c", (char)i);
		int k = snprintf(buf, sizeof buf, "%.*s%s%.*s", (int)pre, item, mid, (int)postlen, close + 1);
		if (k < 0 || (size_t)k >= sizeof buf)
			return CN_ERR_INVALID;
		cn_err e = expand_item(buf, (size_t)k, v, n);
		if (e)
			return e;
	}
	return CN_OK;
}

cn_err cn_client_expand_hosts(const char *spec, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!spec || !*spec)
		return CN_ERR_INVALID;
	const char *p = spec;
	cn_err e = CN_OK;
	while (!e) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		while (len && isspace((unsigned char)*p)) {
			p++;
			len--;
		}
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		e = expand_item(p, len, out, n);
		if (!c)
			break;
		p = c + 1;
	}
	if (e) {
		cn_client_hosts_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return e;
}

void cn_client_hosts_free(char **hosts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(hosts[i]);
	free(hosts);
}

/* --- the client ---------------------------------------------------------------------------- */

void cn_client_free(cn_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nhosts; i++) {
		free(c->urls[i]);
		free(c->hostports[i]);
	}
	free(c->urls);
	free(c->hostports);
	free(c->https);
	free(c->access);
	free(c->secret);
	free(c->region);
	free(c);
}

cn_err cn_client_new(const cn_client_cfg *cfg, cn_client **out)
{
	*out = NULL;
	char **hosts;
	size_t n;
	cn_err e = cn_client_expand_hosts(cfg->hosts, &hosts, &n);
	if (e)
		return e;
	cn_client *c = calloc(1, sizeof *c);
	if (!c) {
		cn_client_hosts_free(hosts, n);
		return CN_ERR_NOMEM;
	}
	c->urls = calloc(n, sizeof *c->urls);
	c->hostports = calloc(n, sizeof *c->hostports);
	c->https = calloc(n, sizeof *c->https);
	c->access = strdup(cfg->access_key ? cfg->access_key : "");
	c->secret = strdup(cfg->secret_key ? cfg->secret_key : "");
	c->region = strdup(cfg->region && *cfg->region ? cfg->region : "us-east-1");
	c->insecure = cfg->insecure;
	c->vhost = cfg->vhost;
	c->timeout_ms = cfg->timeout_ms;
	c->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 5000;
	e = (!c->urls || !c->hostports || !c->https || !c->access || !c->secret || !c->region) ? CN_ERR_NOMEM : CN_OK;
	for (size_t i = 0; i < n && !e; i++) {
		c->nhosts++;
		const char *h = hosts[i];
		bool tls = cfg->tls;
		if (!strncmp(h, "http://", 7)) {
			h += 7;
			tls = false;
		} else if (!strncmp(h, "https://", 8)) {
			h += 8;
			tls = true;
		}
		size_t hl = strcspn(h, "/");
		if (!hl || hl > 255 || strchr(h, ' ')) {
			e = CN_ERR_INVALID;
			break;
		}
		c->https[i] = tls;
		c->hostports[i] = strndup(h, hl);
		c->urls[i] = malloc(hl + 9);
		if (!c->hostports[i] || !c->urls[i]) {
			e = CN_ERR_NOMEM;
			break;
		}
		snprintf(c->urls[i], hl + 9, "%s://%.*s", tls ? "https" : "http", (int)hl, h);
	}
	cn_client_hosts_free(hosts, n);
	if (e) {
		cn_client_free(c);
		return e;
	}
	*out = c;
	return CN_OK;
}

size_t cn_client_nhosts(const cn_client *c)
{
	return c->nhosts;
}

const char *cn_client_host_url(const cn_client *c, size_t i)
{
	return c->urls[i % c->nhosts];
}

void cn_client_signer_init(cn_client_signer *s)
{
	memset(s, 0, sizeof *s);
	s->sec = -1;
}

void cn_client_hdrs_init(cn_client_hdrs *h)
{
	memset(h, 0, sizeof *h);
	cn_buf_init(&h->scratch);
}

void cn_client_hdrs_fini(cn_client_hdrs *h)
{
	cn_buf_fini(&h->scratch);
}

static void signer_refresh(const cn_client *c, cn_client_signer *s)
{
	int64_t sec = cn_now_ms() / 1000;
	if (sec == s->sec)
		return;
	time_t t = (time_t)sec;
	struct tm tm;
	gmtime_r(&t, &tm);
	char d8[9];
	strftime(s->amz_date, sizeof s->amz_date, "%Y%m%dT%H%M%SZ", &tm);
	memcpy(d8, s->amz_date, 8);
	d8[8] = 0;
	if (strcmp(d8, s->date8)) {
		memcpy(s->date8, d8, 9);
		cn_client_signing_key(c->secret, s->date8, c->region, "s3", s->key);
	}
	s->sec = sec;
}

cn_err cn_client_prepare(const cn_client *c, cn_client_signer *s, CURL *e, const cn_client_req *r,
                         cn_client_hdrs *h)
{
	if ((r->key && strlen(r->key) > 1024) || r->nextra > CN_CLIENT_MAX_EXTRA ||
	    (r->bucket && strlen(r->bucket) > 63))
		return CN_ERR_INVALID;
	size_t hi = r->host % c->nhosts;
	signer_refresh(c, s);
	bool vh = c->vhost && r->bucket;
	int hn = vh ? snprintf(h->host, sizeof h->host, "Host: %s.%s", r->bucket, c->hostports[hi])
	            : snprintf(h->host, sizeof h->host, "Host: %s", c->hostports[hi]);
	if (hn < 0 || (size_t)hn >= sizeof h->host)
		return CN_ERR_INVALID;
	/* the path to sign: "/bucket/key" (path style) or "/key" (virtual host) */
	char path[1100];
	int pn = vh ? snprintf(path, sizeof path, "/%s", r->key ? r->key : "")
	            : snprintf(path, sizeof path, "/%s%s%s", r->bucket ? r->bucket : "", r->key ? "/" : "",
	                       r->key ? r->key : "");
	if (pn < 0 || (size_t)pn >= sizeof path)
		return CN_ERR_INVALID;
	cn_kv hk[3] = {
		{ "host", h->host + 6 },
		{ "x-amz-content-sha256", CN_CLIENT_UNSIGNED },
		{ "x-amz-date", s->amz_date },
	};
	cn_sigv4_req sr = {
		.method = r->method, .path = path, .query = r->query, .nquery = r->nquery,
		.headers = hk, .nheaders = 3, .payload_hash = CN_CLIENT_UNSIGNED,
		.amz_date = s->amz_date, .region = c->region, .service = "s3",
		.access_key = c->access, .secret_key = c->secret,
	};
	char sig[65];
	cn_err err = cn_sigv4_signature_hex(&sr, s->key, &h->scratch, sig);
	if (err)
		return err;
	int an = snprintf(h->auth, sizeof h->auth,
	                  "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/s3/aws4_request, "
	                  "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s",
	                  c->access, s->date8, c->region, sig);
	if (an < 0 || (size_t)an >= sizeof h->auth)
		return CN_ERR_INVALID;
	snprintf(h->date, sizeof h->date, "x-amz-date: %s", s->amz_date);

	/* URL: scheme://[bucket.]host/path?canonical-query (the canonical query is a valid,
	 * fully encoded query string) */
	cn_buf *u = &h->scratch;
	u->len = 0;
	err = cn_buf_printf(u, "%s://%s%s", c->https[hi] ? "https" : "http", vh ? r->bucket : "", vh ? "." : "");
	if (!err)
		err = cn_buf_puts(u, c->hostports[hi]);
	if (!err)
		err = cn_url_encode(u, cn_str_c(path), true);
	if (!err && r->nquery) {
		err = cn_buf_append(u, "?", 1);
		/* in the given order: order does not matter on the wire */
		for (size_t i = 0; i < r->nquery && !err; i++) {
			if (i)
				err = cn_buf_append(u, "&", 1);
			if (!err)
				err = cn_url_encode(u, cn_str_c(r->query[i].name), false);
			if (!err && r->query[i].value) {
				err = cn_buf_append(u, "=", 1);
				if (!err)
					err = cn_url_encode(u, cn_str_c(r->query[i].value), false);
			}
		}
	}
	if (err)
		return err;

	size_t nn = 0;
	struct curl_slist *nd = h->node;
	nd[nn++].data = h->host;
	nd[nn++].data = (char *)"x-amz-content-sha256: " CN_CLIENT_UNSIGNED;
	nd[nn++].data = h->date;
	nd[nn++].data = h->auth;
	nd[nn++].data = (char *)"Expect:";
	for (size_t i = 0; i < r->nextra; i++)
		nd[nn++].data = (char *)r->extra[i];
	for (size_t i = 0; i < nn; i++)
		nd[i].next = i + 1 < nn ? &nd[i + 1] : NULL;

	curl_easy_setopt(e, CURLOPT_URL, u->p);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->node);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	if (c->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (!strcmp(r->method, "PUT") || (!strcmp(r->method, "POST") && r->body_len >= 0)) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(r->body_len < 0 ? 0 : r->body_len));
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, strcmp(r->method, "PUT") ? r->method : NULL);
	} else if (!strcmp(r->method, "HEAD")) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, strcmp(r->method, "GET") ? r->method : NULL);
	}
	return CN_OK;
}

/* --- the blocking helper ------------------------------------------------------------------- */

typedef struct do_ctx {
	const char *body;
	size_t len, pos;
	cn_buf *resp;
} do_ctx;

static size_t do_read(char *buf, size_t sz, size_t n, void *ud)
{
	do_ctx *d = ud;
	size_t want = sz * n, left = d->len - d->pos;
	if (want > left)
		want = left;
	if (want)
		memcpy(buf, d->body + d->pos, want);
	d->pos += want;
	return want;
}

static size_t do_write(char *p, size_t sz, size_t n, void *ud)
{
	do_ctx *d = ud;
	size_t len = sz * n;
	if (d->resp && d->resp->len + len <= 16u << 20 && cn_buf_append(d->resp, p, len))
		return 0;
	return len;
}

cn_err cn_client_do(const cn_client *c, const cn_client_req *r, const void *body, size_t len,
                    cn_buf *resp, long *status, char *err, size_t errlen)
{
	*status = 0;
	CURL *e = curl_easy_init();
	if (!e)
		return CN_ERR_NOMEM;
	cn_client_signer s;
	cn_client_signer_init(&s);
	cn_client_hdrs h;
	cn_client_hdrs_init(&h);
	cn_client_req rr = *r;
	if (body && rr.body_len < 0)
		rr.body_len = (int64_t)len;
	do_ctx d = { body, body ? len : 0, 0, resp };
	char ebuf[CURL_ERROR_SIZE] = "";
	cn_err rc = cn_client_prepare(c, &s, e, &rr, &h);
	if (!rc) {
		curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, do_read);
		curl_easy_setopt(e, CURLOPT_READDATA, &d);
		curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, do_write);
		curl_easy_setopt(e, CURLOPT_WRITEDATA, &d);
		curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
		CURLcode cr = curl_easy_perform(e);
		if (cr != CURLE_OK) {
			rc = CN_ERR_IO;
			if (err && errlen)
				snprintf(err, errlen, "%s", ebuf[0] ? ebuf : curl_easy_strerror(cr));
		} else {
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
		}
	}
	cn_client_hdrs_fini(&h);
	curl_easy_cleanup(e);
	return rc;
}

bool cn_client_xml_text(const char *xml, size_t len, const char *tag, char *out, size_t cap)
{
	char open[80], close[80];
	snprintf(open, sizeof open, "<%s>", tag);
	snprintf(close, sizeof close, "</%s>", tag);
	const char *p = memmem(xml, len, open, strlen(open));
	if (!p)
		return false;
	p += strlen(open);
	const char *q = memmem(p, len - (size_t)(p - xml), close, strlen(close));
	if (!q)
		return false;
	size_t n = (size_t)(q - p);
	if (cap) {
		if (n >= cap)
			n = cap - 1;
		memcpy(out, p, n);
		out[n] = 0;
	}
	return true;
}
