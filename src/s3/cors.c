/* s3/cors.c: bucket CORS as AWS S3 has it.
 *
 *  - PutBucketCors / GetBucketCors / DeleteBucketCors (?cors): a CORSConfiguration of 1 to
 *    100 CORSRule (AllowedMethod GET|PUT|POST|DELETE|HEAD and AllowedOrigin, at least one
 *    of each; AllowedHeader, ExposeHeader, MaxAgeSeconds, ID), validated and stored in a
 *    canonical form as the bucket's "cors" document.
 *  - The preflight: OPTIONS on the bucket or an object, unauthenticated, with Origin and
 *    Access-Control-Request-Method (and maybe Access-Control-Request-Headers). The first
 *    rule whose AllowedOrigin matches the origin (one '*' wildcard allowed), whose methods
 *    include the method and whose AllowedHeader patterns cover every requested header
 *    (case-insensitive) answers 200 with the Access-Control-* headers; none matching: 403
 *    AccessForbidden; no configuration, no bucket or no Access-Control-Request-Method:
 *    the same 403, so that a preflight does not tell whether a bucket exists.
 *  - An actual request with an Origin header: the first rule matching the origin and the
 *    method adds Access-Control-Allow-Origin ("*" for a "*" rule, else the origin, with
 *    Allow-Credentials), -Allow-Methods, -Expose-Headers, -Max-Age and Vary to whatever
 *    the request answers (cn_s3_resp_start). No match: no CORS headers, the request runs
 *    as usual (the browser then withholds the response).
 * Without a configuration a bucket allows no cross-origin use, as on AWS (MinIO instead
 * allows every origin by default; cairn follows AWS, docs/ARCHITECTURE.md). */
#include "s3/s3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONFIG_NAME "cors"
#define CORS_BODY_MAX (64 * 1024)
#define MAX_RULES 100
#define MAX_REQ_HEADERS 64          /* names in one Access-Control-Request-Headers */
#define MAX_REQ_HEADERS_LEN 4096

static const char *const methods[] = { "GET", "PUT", "POST", "DELETE", "HEAD" };

/* pattern with at most one '*' matched against s; ci: ASCII case-insensitive. */
static bool wild_match(const char *pat, size_t pl, const char *s, size_t sl, bool ci)
{
	const char *star = memchr(pat, '*', pl);
	int (*cmp)(const char *, const char *, size_t) = ci ? strncasecmp : strncmp;
	if (!star)
		return pl == sl && cmp(pat, s, pl) == 0;
	size_t pre = (size_t)(star - pat), suf = pl - pre - 1;
	return sl >= pre + suf && cmp(pat, s, pre) == 0 && cmp(star + 1, s + sl - suf, suf) == 0;
}

static size_t count_char(const char *s, size_t n, char c)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += s[i] == c;
	return k;
}

cn_err cn_s3_cors_parse(const char *p, size_t len, cn_buf *canon, cn_s3_code *code,
                        const char **msg)
{
	cn_xml_node *root = NULL;
	cn_err e = cn_xml_parse(p, len, &root);
	size_t nrules = 0;

	*code = CN_S3_MalformedXML;
	*msg = NULL;
	if (e == CN_ERR_NOMEM)
		return e;
	if (e != CN_OK || strcmp(root->name, "CORSConfiguration") != 0)
		goto invalid;
	cn_xml_decl(canon);
	cn_xml_open(canon, "CORSConfiguration", CN_S3_XMLNS);
	for (const cn_xml_node *rule = root->child; rule; rule = rule->next) {
		if (strcmp(rule->name, "CORSRule") != 0)
			goto invalid;
		if (++nrules > MAX_RULES) {
			*code = CN_S3_InvalidRequest;
			*msg = "The number of CORS rules should not exceed allowed limit of 100 rules.";
			goto invalid;
		}
		size_t nm = 0, no = 0, nid = 0, nage = 0;
		for (const cn_xml_node *c = rule->child; c; c = c->next) {
			if (memchr(c->text, 0, c->text_len) || c->child)
				goto invalid;
			if (!strcmp(c->name, "AllowedMethod")) {
				bool known = false;
				for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
					known |= !strcmp(c->text, methods[i]);
				if (!known) {
					*code = CN_S3_InvalidRequest;
					*msg = "Found unsupported HTTP method in CORS config.";
					goto invalid;
				}
				nm++;
			} else if (!strcmp(c->name, "AllowedOrigin")) {
				if (count_char(c->text, c->text_len, '*') > 1) {
					*code = CN_S3_InvalidRequest;
					*msg = "AllowedOrigin can not have more than one wildcard.";
					goto invalid;
				}
				no++;
			} else if (!strcmp(c->name, "AllowedHeader")) {
				if (count_char(c->text, c->text_len, '*') > 1) {
					*code = CN_S3_InvalidRequest;
					*msg = "AllowedHeader can not have more than one wildcard.";
					goto invalid;
				}
			} else if (!strcmp(c->name, "ExposeHeader")) {
				if (strchr(c->text, '*')) {
					*code = CN_S3_InvalidRequest;
					*msg = "ExposeHeader can not contain a wildcard.";
					goto invalid;
				}
			} else if (!strcmp(c->name, "MaxAgeSeconds")) {
				uint64_t v;
				if (nage++ || !cn_s3_parse_uint(c->text, 0x7fffffff, &v))
					goto invalid;
			} else if (!strcmp(c->name, "ID")) {
				if (nid++ || c->text_len > 255)
					goto invalid;
			} else {
				goto invalid;
			}
			for (size_t i = 0; i < c->text_len; i++)
				if ((unsigned char)c->text[i] < 0x20 || c->text[i] == 0x7f)
					goto invalid; /* every value may become a response header */
		}
		if (!nm || !no)
			goto invalid;
		/* canonical: the rule's elements in S3's order */
		static const char *const order[] = { "ID", "AllowedHeader", "AllowedMethod",
		                                     "AllowedOrigin", "ExposeHeader", "MaxAgeSeconds" };
		cn_xml_open(canon, "CORSRule", NULL);
		for (size_t k = 0; k < sizeof order / sizeof *order; k++)
			for (const cn_xml_node *c = rule->child; c; c = c->next)
				if (!strcmp(c->name, order[k]))
					cn_xml_elem_n(canon, order[k], c->text, c->text_len);
		cn_xml_close(canon, "CORSRule");
	}
	if (!nrules)
		goto invalid;
	e = cn_xml_close(canon, "CORSConfiguration");
	cn_xml_free(root);
	return e;
invalid:
	cn_xml_free(root);
	return CN_ERR_INVALID;
}

void cn_s3_put_bucket_cors(cn_s3_req *r)
{
	cn_buf body, canon;
	cn_s3_code code;
	const char *msg;

	cn_buf_init(&body);
	cn_buf_init(&canon);
	cn_err e = cn_s3_read_body(r, CORS_BODY_MAX, &body);
	if (e == CN_ERR_TOO_LARGE)
		cn_s3_error(r, CN_S3_MalformedXML, NULL);
	else if (e)
		cn_s3_error_from(r, e);
	else if ((e = cn_s3_cors_parse(body.p, body.len, &canon, &code, &msg)) == CN_ERR_INVALID)
		cn_s3_error(r, code, msg);
	else if (e)
		cn_s3_error_from(r, e);
	else if ((e = cn_obj_bucket_config_put(r->store, r->bucket, CONFIG_NAME, canon.p, canon.len)))
		cn_s3_error_from(r, e);
	else
		cn_s3_send_empty(r, 200);
	cn_buf_fini(&body);
	cn_buf_fini(&canon);
}

void cn_s3_get_bucket_cors(cn_s3_req *r)
{
	cn_buf b;

	cn_buf_init(&b);
	cn_err e = cn_obj_bucket_config_get(r->store, r->bucket, CONFIG_NAME, &b);
	if (e == CN_ERR_NOT_FOUND)
		cn_s3_error(r, CN_S3_NoSuchCORSConfiguration, NULL);
	else if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_xml(r, 200, &b);
	cn_buf_fini(&b);
}

void cn_s3_delete_bucket_cors(cn_s3_req *r)
{
	cn_err e = cn_obj_bucket_config_delete(r->store, r->bucket, CONFIG_NAME);
	if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_empty(r, 204);
}

/* ---- evaluation ---------------------------------------------------------------------- */

static void add(cn_s3_req *r, const char *name, const char *value)
{
	if (r->ncors < CN_S3_MAX_CORS_HEADERS) {
		r->cors[r->ncors].name = (char *)name;
		r->cors[r->ncors].value = (char *)value;
		r->ncors++;
	}
}

/* The rule's elements named `name` joined with ", " (arena), or NULL when none. */
static char *joined(cn_s3_req *r, const cn_xml_node *rule, const char *name)
{
	size_t n = 0;
	for (const cn_xml_node *c = rule->child; c; c = c->next)
		if (!strcmp(c->name, name))
			n += c->text_len + 2;
	if (!n)
		return NULL;
	char *s = cn_s3_alloc(r, n + 1), *p = s;
	for (const cn_xml_node *c = rule->child; c; c = c->next)
		if (!strcmp(c->name, name)) {
			if (p != s) {
				memcpy(p, ", ", 2);
				p += 2;
			}
			memcpy(p, c->text, c->text_len);
			p += c->text_len;
		}
	*p = 0;
	return s;
}

/* The next name of a comma-separated header list at *p, trimmed: false at the end. */
static bool next_name(const char **p, const char **name, size_t *len)
{
	const char *s = *p;
	while (*s == ' ' || *s == '\t' || *s == ',')
		s++;
	if (!*s)
		return false;
	const char *e = s;
	while (*e && *e != ',')
		e++;
	size_t l = (size_t)(e - s);
	while (l && (s[l - 1] == ' ' || s[l - 1] == '\t'))
		l--;
	*name = s;
	*len = l;
	*p = e;
	return true;
}

/* Does every header of the comma-separated list `req` match one of the rule's
 * AllowedHeader patterns? */
static bool headers_allowed(const cn_xml_node *rule, const char *req)
{
	const char *p = req, *name;
	size_t l;
	while (next_name(&p, &name, &l)) {
		bool ok = false;
		for (const cn_xml_node *c = rule->child; c && !ok; c = c->next)
			ok = !strcmp(c->name, "AllowedHeader") && wild_match(c->text, c->text_len, name, l, true);
		if (!ok)
			return false;
	}
	return true;
}

/* The first rule for origin and method (and, for a preflight, the requested headers);
 * *star: it matched through an AllowedOrigin of exactly "*". */
static const cn_xml_node *find_rule(const cn_xml_node *root, const char *origin,
                                    const char *method, const char *req_headers, bool *star)
{
	size_t ol = strlen(origin);
	for (const cn_xml_node *rule = root->child; rule; rule = rule->next) {
		bool om = false, mm = false;
		*star = false;
		for (const cn_xml_node *c = rule->child; c; c = c->next) {
			if (!strcmp(c->name, "AllowedOrigin") && !om &&
			    wild_match(c->text, c->text_len, origin, ol, false)) {
				om = true;
				*star = c->text_len == 1 && c->text[0] == '*';
			}
			if (!strcmp(c->name, "AllowedMethod") && !strcmp(c->text, method))
				mm = true;
		}
		if (om && mm && (!req_headers || headers_allowed(rule, req_headers)))
			return rule;
	}
	return NULL;
}

/* Loads the bucket's rules: CN_OK with *root, CN_ERR_NOT_FOUND without a configuration. */
static cn_err load(cn_s3_req *r, cn_xml_node **root)
{
	cn_buf b;
	cn_buf_init(&b);
	cn_err e = cn_obj_bucket_config_get(r->store, r->bucket, CONFIG_NAME, &b);
	if (e == CN_OK)
		e = cn_xml_parse(b.p, b.len, root) == CN_OK ? CN_OK : CN_ERR_CORRUPT;
	cn_buf_fini(&b);
	return e;
}

static void add_rule_headers(cn_s3_req *r, const cn_xml_node *rule, const char *origin, bool star)
{
	add(r, "Access-Control-Allow-Origin", star ? "*" : cn_s3_strndup(r, origin, strlen(origin)));
	if (!star)
		add(r, "Access-Control-Allow-Credentials", "true");
	char *v = joined(r, rule, "AllowedMethod");
	if (v)
		add(r, "Access-Control-Allow-Methods", v);
	if ((v = joined(r, rule, "ExposeHeader")))
		add(r, "Access-Control-Expose-Headers", v);
	const cn_xml_node *age = cn_xml_child(rule, "MaxAgeSeconds");
	if (age) /* (arena copies: the rules are freed before the response goes out) */
		add(r, "Access-Control-Max-Age", cn_s3_strndup(r, age->text, age->text_len));
	add(r, "Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
}

void cn_s3_cors_actual(cn_s3_req *r)
{
	const char *origin = cn_s3_header(r, "origin");
	cn_xml_node *root = NULL;
	bool star;

	if (!origin || !r->bucket[0] || load(r, &root) != CN_OK)
		return;
	char method[8];
	cn_strlcpy(method, r->head ? "HEAD" : "", sizeof method);
	if (!r->head) {
		cn_str m = r->h->method;
		size_t n = m.len < sizeof method - 1 ? m.len : sizeof method - 1;
		memcpy(method, m.p, n);
		method[n] = 0;
	}
	const cn_xml_node *rule = find_rule(root, origin, method, NULL, &star);
	if (rule)
		add_rule_headers(r, rule, origin, star);
	cn_xml_free(root);
}

/* The requested header names trimmed and lowercased, ", "-separated (arena), as AWS
 * answers them in Access-Control-Allow-Headers. */
static char *header_list(cn_s3_req *r, const char *req)
{
	char *out = cn_s3_alloc(r, 2 * strlen(req) + 1), *o = out;
	const char *p = req, *name;
	size_t l;
	while (next_name(&p, &name, &l)) {
		if (o != out) {
			memcpy(o, ", ", 2);
			o += 2;
		}
		for (size_t i = 0; i < l; i++)
			*o++ = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
	}
	*o = 0;
	return out;
}

void cn_s3_cors_preflight(cn_s3_req *r)
{
	const char *origin = cn_s3_header(r, "origin");
	const char *method = cn_s3_header(r, "access-control-request-method");
	const char *req_headers = cn_s3_header(r, "access-control-request-headers");
	cn_xml_node *root = NULL;
	bool star;

	if (!origin || !*origin) {
		cn_s3_error(r, CN_S3_BadRequest, "Insufficient information. Origin request header needed.");
		return;
	}
	/* A hostile preflight costs at most MAX_REQ_HEADERS x the rule's AllowedHeaders. */
	if (req_headers && (strlen(req_headers) > MAX_REQ_HEADERS_LEN ||
	                    count_char(req_headers, strlen(req_headers), ',') >= MAX_REQ_HEADERS)) {
		cn_s3_error(r, CN_S3_AccessForbidden, "CORSResponse: Too many Access-Control-Request-Headers.");
		return;
	}
	/* A missing bucket, a bucket without a configuration, a missing method and a request
	 * no rule allows get one answer: the anonymous caller learns nothing about the bucket. */
	cn_err e = r->bucket[0] ? load(r, &root) : CN_ERR_NO_BUCKET;
	if (e && e != CN_ERR_NO_BUCKET && e != CN_ERR_NOT_FOUND) {
		cn_s3_error_from(r, e);
		return;
	}
	const cn_xml_node *rule =
		!e && method && *method ? find_rule(root, origin, method, req_headers, &star) : NULL;
	if (!rule) {
		cn_xml_free(root);
		cn_s3_error(r, CN_S3_AccessForbidden,
		            "CORSResponse: This CORS request is not allowed. This is usually because the "
		            "evalution of Origin, request method / Access-Control-Request-Method or "
		            "Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.");
		return;
	}
	add_rule_headers(r, rule, origin, star);
	if (req_headers && *req_headers)
		add(r, "Access-Control-Allow-Headers", header_list(r, req_headers));
	cn_xml_free(root);
	cn_s3_send_empty(r, 200);
}
