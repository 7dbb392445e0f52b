/* fuzz/signed_headers: the rule that a V4 request does only what was signed (auth.c rule
 * AUTH-5), as a property. A request correctly signed with the header form (SignedHeaders
 * host;x-amz-content-sha256;x-amz-date) or the presigned form (SignedHeaders host) gets the
 * extra headers the input describes ("name:value" lines; the first byte picks the form),
 * then goes through cn_auth_check. Whatever the bytes:
 *  - the request is accepted only when no extra header is an x-amz-* one;
 *  - an extra x-amz-* header that is not among the signed ones is refused as
 *    CN_AUTH_HEADERS_NOT_SIGNED (unless the extras also break the request otherwise: a
 *    second Authorization, an x-amz-content-sha256 the presigned form reads);
 *  - extras that are neither x-amz-*, Host nor Authorization leave the signature valid.
 * A violation aborts (libFuzzer reports it; the replay under gcc fails). */
#include "s3/auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define NOW_MS 1369353600000LL /* 20130524T000000Z */
#define MAX_EXTRA 16

static const char *lookup(void *ctx, cn_str ak)
{
	(void)ctx;
	return cn_str_eq_c(ak, AKID) ? SECRET : NULL;
}

static void add(cn_http_req *r, cn_str name, cn_str value)
{
	r->headers[r->nheaders].name = name;
	r->headers[r->nheaders].value = value;
	r->nheaders++;
}

static bool has_prefix_ci(cn_str s, const char *pre)
{
	size_t n = strlen(pre);
	return s.len >= n && strncasecmp(s.p, pre, n) == 0;
}

static bool in_list(cn_str name, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (cn_str_ieq_c(name, list[i]))
			return true;
	return false;
}

/* The signature of r (without its Authorization header / X-Amz-Signature) as hex. */
static void sign(const cn_http_req *r, const char *signed_headers, bool presigned, char sig[65])
{
	cn_buf b;
	cn_buf_init(&b);
	if (cn_sigv4_canonical_request(r, cn_str_c(signed_headers), CN_STR("UNSIGNED-PAYLOAD"), presigned,
				       &b) != CN_OK)
		abort();
	unsigned char key[32];
	cn_sigv4_signing_key(SECRET, CN_STR("20130524"), CN_STR("us-east-1"), CN_STR("s3"), key);
	cn_sigv4_signature(key, CN_STR("20130524T000000Z"), CN_STR("20130524/us-east-1/s3/aws4_request"),
			   (cn_str){ b.p, b.len }, sig);
	cn_buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 16 * 1024)
		return 0;
	bool presigned = data[0] & 1;
	size_t len = size - 1;
	char *copy = malloc(len + 1); /* the request views must not read past the input */
	cn_http_req *r = calloc(1, sizeof *r);
	if (!copy || !r) {
		free(copy);
		free(r);
		return 0;
	}
	memcpy(copy, data + 1, len);
	copy[len] = 0;

	r->method = CN_STR("PUT");
	r->path = CN_STR("/drop/slot");
	r->content_length = 5;
	r->host = CN_STR("127.0.0.1:9000");
	add(r, CN_STR("Host"), r->host);
	static char query[512], authz[256];
	const char *signed_headers;
	static const char *const signed_header_form[] = { "host", "x-amz-content-sha256", "x-amz-date", NULL };
	static const char *const signed_presigned[] = { "host", NULL };
	const char *const *signed_list;
	if (presigned) {
		signed_headers = "host";
		signed_list = signed_presigned;
		int n = snprintf(query, sizeof query,
				 "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AKID
				 "%%2F20130524%%2Fus-east-1%%2Fs3%%2Faws4_request&X-Amz-Date=20130524T000000Z"
				 "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host");
		r->query = (cn_str){ query, (size_t)n };
		char sig[65];
		sign(r, signed_headers, true, sig);
		n += snprintf(query + n, sizeof query - (size_t)n, "&X-Amz-Signature=%s", sig);
		r->query = (cn_str){ query, (size_t)n };
	} else {
		signed_headers = "host;x-amz-content-sha256;x-amz-date";
		signed_list = signed_header_form;
		add(r, CN_STR("x-amz-content-sha256"), CN_STR("UNSIGNED-PAYLOAD"));
		add(r, CN_STR("x-amz-date"), CN_STR("20130524T000000Z"));
		char sig[65];
		sign(r, signed_headers, false, sig);
		snprintf(authz, sizeof authz,
			 "AWS4-HMAC-SHA256 Credential=" AKID "/20130524/us-east-1/s3/aws4_request, "
			 "SignedHeaders=%s, Signature=%s", signed_headers, sig);
		add(r, CN_STR("Authorization"), cn_str_c(authz));
	}

	/* The extras: "name:value" lines; a line without ':' or with an empty name is skipped. */
	bool any_amz = false, unsigned_amz = false, breaks = false;
	size_t start = 0;
	for (size_t i = 0; i <= len && r->nheaders < CN_HTTP_MAX_HEADERS && r->nheaders < 4 + MAX_EXTRA; i++) {
		if (i < len && copy[i] != '\n')
			continue;
		cn_str line = { copy + start, i - start };
		start = i + 1;
		const char *colon = memchr(line.p, ':', line.len);
		if (!colon || colon == line.p)
			continue;
		cn_str name = { line.p, (size_t)(colon - line.p) };
		cn_str value = { colon + 1, line.len - name.len - 1 };
		add(r, name, value);
		if (has_prefix_ci(name, "x-amz-")) {
			any_amz = true;
			if (!in_list(name, signed_list) && !(presigned && cn_str_ieq_c(name, "x-amz-content-sha256")))
				unsigned_amz = true;
		}
		if (cn_str_ieq_c(name, "authorization") ||
		    (presigned && cn_str_ieq_c(name, "x-amz-content-sha256")))
			breaks = true;
	}

	cn_auth_config cfg = { .lookup = lookup, .region = "us-east-1", .max_skew_ms = 900000 };
	cn_auth_result res;
	cn_auth_err ae = cn_auth_check(&cfg, r, NOW_MS, &res);
	bool benign = !any_amz && !breaks;
	for (size_t k = presigned ? 1 : 4; benign && k < r->nheaders; k++)
		if (cn_str_ieq_c(r->headers[k].name, "host"))
			benign = false;
	if (ae == CN_AUTH_OK && any_amz) {
		fprintf(stderr, "accepted a request with an extra x-amz-* header\n");
		abort();
	}
	if (unsigned_amz && !breaks && ae != CN_AUTH_HEADERS_NOT_SIGNED) {
		fprintf(stderr, "an unsigned x-amz-* header gave %d, not CN_AUTH_HEADERS_NOT_SIGNED\n", (int)ae);
		abort();
	}
	if (benign && ae != CN_AUTH_OK) {
		fprintf(stderr, "benign extra headers broke a valid signature: %d (%s)\n", (int)ae,
			res.detail ? res.detail : "");
		abort();
	}
	free(r);
	free(copy);
	return 0;
}
