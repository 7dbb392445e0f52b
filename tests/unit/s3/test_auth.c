/* test_auth: unit tests for src/s3/auth.c — the AWS SigV4 test suite (canonical requests byte
 * for byte and signatures, from tests/vectors/sigv4/), the S3 documentation examples (single
 * chunk GET/PUT/lifecycle/list, presigned URL, multi-chunk streaming, signed trailer), every
 * error code of cn_auth_check, and Signature V2 (header and query). Requests are built by hand
 * (no dependency on the HTTP parser). Runs from tests/vectors/. */
#include "s3/auth.h"
#include "test.h"

#include <openssl/evp.h>

/* ---- helpers --------------------------------------------------------------------------- */

#define S3_AKID "AKIAIOSFODNN7EXAMPLE"
#define S3_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static const char *lookup(void *ctx, cn_str ak)
{
	if (cn_str_eq_c(ak, S3_AKID))
		return ctx ? (const char *)ctx : S3_SECRET;
	if (cn_str_eq_c(ak, "AKIDEXAMPLE"))
		return SUITE_SECRET;
	return NULL;
}

static cn_auth_config cfg_default(void)
{
	return (cn_auth_config){ .lookup = lookup, .region = "us-east-1", .max_skew_ms = 15 * 60 * 1000 };
}

static int64_t amz_ms(const char *s)
{
	int64_t ms = 0;
	CN_ASSERT(cn_time_parse_amz(cn_str_c(s), &ms) == CN_OK);
	return ms;
}

/* Builds a request head from a method, a target and "Name: value" strings (NULL-ended).
 * The strings must outlive the request. */
static void mkreq(cn_http_req *r, const char *method, const char *target, const char *const *hdrs)
{
	memset(r, 0, sizeof *r);
	r->method = cn_str_c(method);
	r->target = cn_str_c(target);
	const char *q = strchr(target, '?');
	r->path = (cn_str){ target, q ? (size_t)(q - target) : strlen(target) };
	r->query = q ? cn_str_c(q + 1) : (cn_str){ "", 0 };
	r->minor_version = 1;
	r->content_length = -1;
	for (size_t i = 0; hdrs && hdrs[i] && r->nheaders < CN_HTTP_MAX_HEADERS; i++) {
		const char *h = hdrs[i], *c = strchr(h, ':');
		CN_ASSERT(c != NULL);
		cn_http_header *hh = &r->headers[r->nheaders++];
		hh->name = (cn_str){ h, (size_t)(c - h) };
		const char *v = c + 1;
		while (*v == ' ')
			v++;
		size_t vl = strlen(v);
		while (vl && v[vl - 1] == ' ')
			vl--;
		hh->value = (cn_str){ v, vl };
		if (cn_str_ieq_c(hh->name, "host"))
			r->host = hh->value;
		if (cn_str_ieq_c(hh->name, "content-length"))
			r->content_length = strtoll(v, NULL, 10);
		if (cn_str_ieq_c(hh->name, "transfer-encoding"))
			r->chunked = true;
	}
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 16);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static void sha256_hex(const void *p, size_t len, char out[65])
{
	unsigned char d[32];
	unsigned int n = 32;
	EVP_Digest(p, len, d, &n, EVP_sha256(), NULL);
	cn_hex_encode(d, 32, out);
}

/* ---- the AWS SigV4 test suite ---------------------------------------------------------- */

/* Parses a .req file: request line, "Name:value" lines, blank line, body. Modifies buf. */
static void parse_req_file(char *buf, cn_http_req *r, const char **hdrs, char **body)
{
	char *line = buf, *nl = strchr(line, '\n');
	*nl = 0;
	char *sp1 = strchr(line, ' '), *sp2 = strrchr(line, ' ');
	*sp1 = 0;
	*sp2 = 0;
	size_t n = 0;
	char *p = nl + 1;
	while (*p && *p != '\n') {
		char *e = strchr(p, '\n');
		*e = 0;
		hdrs[n++] = p;
		p = e + 1;
	}
	hdrs[n] = NULL;
	*body = *p == '\n' ? p + 1 : p;
	mkreq(r, line, sp1 + 1, hdrs);
}

TEST(test_aws_suite)
{
	char *list = read_file("sigv4/suite.txt", NULL);
	CHECK(list != NULL);
	if (!list)
		return;
	int ncases = 0;
	for (char *name = strtok(list, "\n"); name; name = strtok(NULL, "\n")) {
		char path[256];
		snprintf(path, sizeof path, "sigv4/%s.req", name);
		char *req = read_file(path, NULL);
		snprintf(path, sizeof path, "sigv4/%s.creq", name);
		char *creq = read_file(path, NULL);
		snprintf(path, sizeof path, "sigv4/%s.authz", name);
		char *authz = read_file(path, NULL);
		CHECK(req && creq && authz);
		if (!req || !creq || !authz)
			continue;
		cn_http_req r;
		const char *hdrs[32];
		char *body;
		parse_req_file(req, &r, hdrs, &body);
		char ph[65];
		sha256_hex(body, strlen(body), ph);
		char *sh = strstr(authz, "SignedHeaders=") + 14;
		char *sig = strstr(authz, "Signature=") + 10;
		cn_str signed_headers = { sh, (size_t)(strchr(sh, ',') - sh) };

		cn_buf b;
		cn_buf_init(&b);
		CHECK_EQ_INT(cn_sigv4_canonical_request(&r, signed_headers, cn_str_c(ph), false, &b), CN_OK);
		if (b.p == NULL || strcmp(b.p, creq) != 0)
			fprintf(stderr, "suite case %s: canonical request\n%s\n--- expected\n%s\n", name,
				b.p ? b.p : "(null)", creq);
		CHECK(b.p && strcmp(b.p, creq) == 0);

		unsigned char key[32];
		cn_sigv4_signing_key(SUITE_SECRET, CN_STR("20150830"), CN_STR("us-east-1"), CN_STR("service"), key);
		char out[65];
		cn_sigv4_signature(key, CN_STR("20150830T123600Z"),
				   CN_STR("20150830/us-east-1/service/aws4_request"), (cn_str){ b.p, b.len }, out);
		if (strncmp(out, sig, 64) != 0)
			fprintf(stderr, "suite case %s: signature %s\n", name, out);
		CHECK(strncmp(out, sig, 64) == 0);
		cn_buf_fini(&b);
		free(req);
		free(creq);
		free(authz);
		ncases++;
	}
	CHECK(ncases >= 15);
	free(list);
}

/* ---- S3 documentation: single-chunk examples ------------------------------------------- */

static const char *const get_object_hdrs[] = {
	"Host: examplebucket.s3.amazonaws.com",
	"Range: bytes=0-9",
	"x-amz-content-sha256:" EMPTY_SHA,
	"x-amz-date: 20130524T000000Z",
	"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
	"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
	"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
	NULL,
};

TEST(test_s3_get_object)
{
	cn_http_req r;
	mkreq(&r, "GET", "/test.txt", get_object_hdrs);
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host;range;x-amz-content-sha256;x-amz-date"),
						CN_STR(EMPTY_SHA), false, &b), CN_OK);
	CHECK_EQ_STR(b.p, "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
			  "x-amz-content-sha256:" EMPTY_SHA "\nx-amz-date:20130524T000000Z\n\n"
			  "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA);
	cn_buf_fini(&b);

	cn_auth_config cfg = cfg_default();
	cn_auth_result res;
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, amz_ms("20130524T000500Z"), &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.kind, CN_AUTH_KIND_V4_HEADER);
	CHECK_EQ_STR(res.access_key, S3_AKID);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_SHA256);
	CHECK_EQ_STR(res.content_sha256, EMPTY_SHA);
	CHECK_EQ_STR(res.amz_date, "20130524T000000Z");
	CHECK_EQ_STR(res.scope, "20130524/us-east-1/s3/aws4_request");
	CHECK_EQ_STR(res.region, "us-east-1");
	CHECK_EQ_STR(res.seed_signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");

	/* Any region accepted when the server has none configured. */
	cfg.region = NULL;
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, amz_ms("20130524T000500Z"), &res), CN_AUTH_OK);
}

TEST(test_s3_put_object)
{
	static const char *const hdrs[] = {
		"Host: examplebucket.s3.amazonaws.com",
		"Date: Fri, 24 May 2013 00:00:00 GMT",
		"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
		"SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
		"Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
		"x-amz-date: 20130524T000000Z",
		"x-amz-storage-class: REDUCED_REDUNDANCY",
		"x-amz-content-sha256: 44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
		"Content-Length: 21",
		NULL,
	};
	cn_http_req r;
	mkreq(&r, "PUT", "/test%24file.text", hdrs);
	cn_auth_config cfg = cfg_default();
	cn_auth_result res;
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, amz_ms("20130524T000000Z"), &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_SHA256);
	CHECK_EQ_STR(res.content_sha256, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
	/* The same path sent unescaped ('$' is legal in a request-target) canonicalises alike. */
	mkreq(&r, "PUT", "/test$file.text", hdrs);
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, amz_ms("20130524T000000Z"), &res), CN_AUTH_OK);
}

TEST(test_s3_lifecycle_and_list)
{
	static const char *const lc[] = {
		"Host: examplebucket.s3.amazonaws.com",
		"x-amz-date: 20130524T000000Z",
		"x-amz-content-sha256: " EMPTY_SHA,
		"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
		"SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
		"Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
		NULL,
	};
	static const char *const ls[] = {
		"Host: examplebucket.s3.amazonaws.com",
		"x-amz-date: 20130524T000000Z",
		"x-amz-content-sha256: " EMPTY_SHA,
		"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
		"SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
		"Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
		NULL,
	};
	cn_http_req r;
	cn_auth_config cfg = cfg_default();
	cn_auth_result res;
	int64_t now = amz_ms("20130524T000000Z");
	mkreq(&r, "GET", "/?lifecycle", lc);
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_OK);
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host"), CN_STR("UNSIGNED-PAYLOAD"), false, &b), CN_OK);
	CHECK_EQ_STR(b.p, "GET\n/\nlifecycle=\nhost:examplebucket.s3.amazonaws.com\n\nhost\nUNSIGNED-PAYLOAD");
	cn_buf_fini(&b);
	mkreq(&r, "GET", "/?max-keys=2&prefix=J", ls);
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_OK);
	mkreq(&r, "GET", "/?prefix=J&max-keys=2", ls); /* order on the wire does not matter */
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_OK);
	mkreq(&r, "GET", "/?max-keys=3&prefix=J", ls);
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_SIGNATURE_MISMATCH);
}

TEST(test_canonical_query_rules)
{
	static const char *const h[] = { "Host: h", NULL };
	cn_http_req r;
	cn_buf b;
	/* '+' decodes as space (MinIO), %2B as '+', bare names get "=", sorting by name then value,
	 * and X-Amz-Signature is dropped only for presigned requests. */
	mkreq(&r, "GET", "/a%2Fb/c+d?b=2&a=x+y&a=%2B&c&X-Amz-Signature=s", h);
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host"), CN_STR("UNSIGNED-PAYLOAD"), true, &b), CN_OK);
	CHECK_EQ_STR(b.p, "GET\n/a/b/c%2Bd\na=%2B&a=x%20y&b=2&c=\nhost:h\n\nhost\nUNSIGNED-PAYLOAD");
	cn_buf_fini(&b);
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host"), CN_STR("UNSIGNED-PAYLOAD"), false, &b), CN_OK);
	CHECK(strstr(b.p, "\nX-Amz-Signature=s&a=%2B&") != NULL);
	cn_buf_fini(&b);
	/* Bad escapes and bad SignedHeaders lists are refused. */
	mkreq(&r, "GET", "/x?a=%zz", h);
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host"), CN_STR("x"), false, &b), CN_ERR_INVALID);
	cn_buf_fini(&b);
	mkreq(&r, "GET", "/x%4", h);
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host"), CN_STR("x"), false, &b), CN_ERR_INVALID);
	cn_buf_fini(&b);
	mkreq(&r, "GET", "/x", h);
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host;;x"), CN_STR("x"), false, &b), CN_ERR_INVALID);
	cn_buf_fini(&b);
	/* More than 256 query parameters. */
	static char big[4096];
	strcpy(big, "/x?");
	for (int i = 0; i < 300; i++)
		strcat(big, "a=1&");
	mkreq(&r, "GET", big, h);
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host"), CN_STR("x"), false, &b), CN_ERR_TOO_LARGE);
	cn_buf_fini(&b);
}

/* ---- header auth: every error code ----------------------------------------------------- */

/* A template: get_object_hdrs with its Authorization replaced. */
static cn_auth_err check_with_auth(const char *authz, int64_t now, cn_auth_result *res)
{
	const char *h[8];
	size_t n = 0;
	for (size_t i = 0; get_object_hdrs[i]; i++)
		if (strncmp(get_object_hdrs[i], "Authorization", 13) != 0)
			h[n++] = get_object_hdrs[i];
	if (authz)
		h[n++] = authz;
	h[n] = NULL;
	cn_http_req r;
	mkreq(&r, "GET", "/test.txt", h);
	cn_auth_config cfg = cfg_default();
	return cn_auth_check(&cfg, &r, now, res);
}

#define CRED "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"
#define SH "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"
#define SIG "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"

TEST(test_header_errors)
{
	cn_auth_result res;
	int64_t now = amz_ms("20130524T000000Z");
	/* Spacing after commas is tolerated; order of the three parts too. */
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ",  " SH ",   " SIG, now, &res), CN_AUTH_OK);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " SIG ", " CRED ", " SH, now, &res), CN_AUTH_OK);
	CHECK_EQ_INT(check_with_auth(NULL, now, &res), CN_AUTH_ANONYMOUS);
	CHECK_EQ_INT(check_with_auth("Authorization: Bearer abc", now, &res), CN_AUTH_UNSUPPORTED);
	/* Malformed. */
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256", now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ", " SH, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG ", " SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG ", Foo=bar", now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED "; " SH "; " SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3, " SH ", " SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws5_request, " SH ", " SIG, now, &res), CN_AUTH_MALFORMED);
	/* Wrong service, wrong region, credential date != x-amz-date date. */
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request, " SH ", " SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/eu-west-1/s3/aws4_request, " SH ", " SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130525/us-east-1/s3/aws4_request, " SH ", " SIG, now, &res), CN_AUTH_MALFORMED);
	/* host not signed; short signature; non-hex signature. */
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ", SignedHeaders=range;x-amz-date, " SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ", " SH ", Signature=f0e8bd", now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ", " SH ", Signature=g0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41", now, &res), CN_AUTH_MALFORMED);
	/* Unknown key; wrong signature; a signed header list differing from what was signed. */
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 Credential=AKIDUNKNOWN/20130524/us-east-1/s3/aws4_request, " SH ", " SIG, now, &res), CN_AUTH_UNKNOWN_KEY);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ", " SH ", Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb42", now, &res), CN_AUTH_SIGNATURE_MISMATCH);
	CHECK_EQ_INT(check_with_auth("Authorization: AWS4-HMAC-SHA256 " CRED ", SignedHeaders=host;x-amz-date, " SIG, now, &res), CN_AUTH_SIGNATURE_MISMATCH);
	/* Clock skew, both directions, at the 15-minute edge. */
	CHECK_EQ_INT(check_with_auth(get_object_hdrs[4], amz_ms("20130524T001500Z"), &res), CN_AUTH_OK);
	CHECK_EQ_INT(check_with_auth(get_object_hdrs[4], amz_ms("20130524T001501Z"), &res), CN_AUTH_TIME_SKEWED);
	CHECK_EQ_INT(check_with_auth(get_object_hdrs[4], amz_ms("20130523T234459Z"), &res), CN_AUTH_TIME_SKEWED);
}

TEST(test_wrong_secret)
{
	cn_http_req r;
	mkreq(&r, "GET", "/test.txt", get_object_hdrs);
	cn_auth_config cfg = cfg_default();
	cfg.lookup_ctx = (void *)"not-the-secret";
	cn_auth_result res;
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, amz_ms("20130524T000000Z"), &res), CN_AUTH_SIGNATURE_MISMATCH);
	CHECK(res.detail != NULL);
	/* A flipped header value changes the signature too. */
	static const char *const h2[] = { "Host: examplebucket.s3.amazonaws.com", "Range: bytes=0-8",
					  "x-amz-content-sha256:" EMPTY_SHA, "x-amz-date: 20130524T000000Z",
					  NULL, NULL };
	const char *h[6];
	memcpy(h, h2, sizeof h);
	h[4] = get_object_hdrs[4];
	mkreq(&r, "GET", "/test.txt", h);
	cfg.lookup_ctx = NULL;
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, amz_ms("20130524T000000Z"), &res), CN_AUTH_SIGNATURE_MISMATCH);
}

TEST(test_date_and_content_sha)
{
	cn_auth_config cfg = cfg_default();
	cn_auth_result res;
	int64_t now = amz_ms("20130524T000000Z");
	cn_http_req r;
	static const char *const nodate[] = { "Host: examplebucket.s3.amazonaws.com",
					      "x-amz-content-sha256: " EMPTY_SHA,
					      "Authorization: AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG, NULL };
	mkreq(&r, "GET", "/test.txt", nodate);
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_MISSING_DATE);
	static const char *const baddate[] = { "Host: examplebucket.s3.amazonaws.com", "x-amz-date: 2013-05-24",
					       "Authorization: AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG, NULL };
	mkreq(&r, "GET", "/test.txt", baddate);
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_MISSING_DATE);
	const char *bad_sha[] = { "Host: examplebucket.s3.amazonaws.com", "x-amz-date: 20130524T000000Z",
				  NULL, "Authorization: AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG, NULL };
	const char *vals[] = {
		"x-amz-content-sha256: E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
		"x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85",
		"x-amz-content-sha256: STREAMING-FOO",
		"x-amz-content-sha256: unsigned-payload",
	};
	for (size_t i = 0; i < 4; i++) {
		bad_sha[2] = vals[i];
		mkreq(&r, "GET", "/test.txt", bad_sha);
		CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_BAD_CONTENT_SHA256);
	}
}

/* Signs a request with our own signer (for modes no published vector covers) and checks it. */
static cn_auth_err self_signed(const char *method, const char *target, const char **h, size_t nh,
			       const char *sh, const char *ph, cn_auth_result *res)
{
	static char authz[512];
	cn_http_req r;
	h[nh] = NULL;
	mkreq(&r, method, target, h);
	cn_buf b;
	cn_buf_init(&b);
	CN_ASSERT(cn_sigv4_canonical_request(&r, cn_str_c(sh), cn_str_c(ph), false, &b) == CN_OK);
	unsigned char key[32];
	cn_sigv4_signing_key(S3_SECRET, CN_STR("20130524"), CN_STR("us-east-1"), CN_STR("s3"), key);
	char sig[65];
	cn_sigv4_signature(key, CN_STR("20130524T000000Z"), CN_STR("20130524/us-east-1/s3/aws4_request"),
			   (cn_str){ b.p, b.len }, sig);
	cn_buf_fini(&b);
	snprintf(authz, sizeof authz, "Authorization: AWS4-HMAC-SHA256 " CRED ", SignedHeaders=%s, Signature=%s", sh, sig);
	h[nh] = authz;
	h[nh + 1] = NULL;
	mkreq(&r, method, target, h);
	cn_auth_config cfg = cfg_default();
	return cn_auth_check(&cfg, &r, amz_ms("20130524T000000Z"), res);
}

TEST(test_absent_content_sha)
{
	cn_auth_result res;
	const char *h[8] = { "Host: b.example", "x-amz-date: 20130524T000000Z" };
	/* Bodiless: the empty-body hash. */
	CHECK_EQ_INT(self_signed("GET", "/k", h, 2, "host;x-amz-date", EMPTY_SHA, &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_SHA256);
	CHECK_EQ_STR(res.content_sha256, EMPTY_SHA);
	CHECK_EQ_INT(self_signed("GET", "/k", h, 2, "host;x-amz-date", "UNSIGNED-PAYLOAD", &res), CN_AUTH_SIGNATURE_MISMATCH);
	/* With a body the header is required (AWS: InvalidRequest), whatever was signed. */
	h[2] = "Content-Length: 5";
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 3, "host;x-amz-date", "UNSIGNED-PAYLOAD", &res),
		     CN_AUTH_MISSING_CONTENT_SHA256);
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 3, "host;x-amz-date", EMPTY_SHA, &res),
		     CN_AUTH_MISSING_CONTENT_SHA256);
	h[2] = "Transfer-Encoding: chunked";
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 3, "host;x-amz-date", "UNSIGNED-PAYLOAD", &res),
		     CN_AUTH_MISSING_CONTENT_SHA256);
	h[2] = "x-amz-content-sha256: UNSIGNED-PAYLOAD";
	h[3] = "Content-Length: 5";
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 4, "host;x-amz-date", "UNSIGNED-PAYLOAD", &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_UNSIGNED);
	/* Header values: trimmed, inner runs folded; case-insensitive names; Date instead of
	 * x-amz-date. */
	const char *h2[8] = { "HOST: b.example", "Date: Fri, 24 May 2013 00:00:00 GMT",
			      "x-amz-meta-a:   one   two  ", "x-amz-content-sha256: UNSIGNED-PAYLOAD" };
	CHECK_EQ_INT(self_signed("GET", "/k", h2, 4, "date;host;x-amz-content-sha256;x-amz-meta-a",
				 "UNSIGNED-PAYLOAD", &res), CN_AUTH_OK);
	CHECK_EQ_STR(res.amz_date, "20130524T000000Z");
	cn_http_req r;
	h2[4] = NULL;
	mkreq(&r, "GET", "/k", h2);
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_canonical_request(&r, CN_STR("host;x-amz-meta-a"), CN_STR("U"), false, &b), CN_OK);
	CHECK_EQ_STR(b.p, "GET\n/k\n\nhost:b.example\nx-amz-meta-a:one two\n\nhost;x-amz-meta-a\nU");
	cn_buf_fini(&b);
}

/* ---- presigned ------------------------------------------------------------------------- */

#define PRE_Q "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
#define PRE_SIG "X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static cn_auth_err presigned(const char *target, int64_t now, cn_auth_result *res)
{
	static const char *const h[] = { "Host: examplebucket.s3.amazonaws.com", NULL };
	cn_http_req r;
	mkreq(&r, "GET", target, h);
	cn_auth_config cfg = cfg_default();
	return cn_auth_check(&cfg, &r, now, res);
}

/* Rule AUTH-5: every x-amz-* header must be signed (x-amz-content-sha256 exempt when
 * header-signed); the first unsigned one is named. */
TEST(test_unsigned_amz_headers)
{
	cn_auth_result res;
	const char *h[8] = { "Host: b.example", "x-amz-date: 20130524T000000Z",
			     "x-amz-content-sha256: UNSIGNED-PAYLOAD", "Content-Length: 5",
			     "X-Amz-Copy-Source: /secret/payroll.csv" };
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 5, "host;x-amz-date", "UNSIGNED-PAYLOAD", &res),
		     CN_AUTH_HEADERS_NOT_SIGNED);
	CHECK_EQ_STR(res.headers_not_signed, "x-amz-copy-source");
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 5, "host;x-amz-copy-source;x-amz-date", "UNSIGNED-PAYLOAD",
				 &res), CN_AUTH_OK);
	/* the signed list's case does not matter */
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 5, "host;X-AMZ-COPY-SOURCE;x-amz-date", "UNSIGNED-PAYLOAD",
				 &res), CN_AUTH_OK);
	h[4] = "x-amz-meta-owner: mallory";
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 5, "host;x-amz-date", "UNSIGNED-PAYLOAD", &res),
		     CN_AUTH_HEADERS_NOT_SIGNED);
	CHECK_EQ_STR(res.headers_not_signed, "x-amz-meta-owner");
	/* x-amz-date itself unsigned */
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 4, "host", "UNSIGNED-PAYLOAD", &res), CN_AUTH_HEADERS_NOT_SIGNED);
	CHECK_EQ_STR(res.headers_not_signed, "x-amz-date");
	/* a name that only starts like a signed one is not signed */
	h[4] = "x-amz-tagging-extra: a=b";
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 5, "host;x-amz-date;x-amz-tagging", "UNSIGNED-PAYLOAD", &res),
		     CN_AUTH_HEADERS_NOT_SIGNED);
	/* other headers need not be signed */
	h[4] = "Content-Type: text/plain";
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 5, "host;x-amz-date", "UNSIGNED-PAYLOAD", &res), CN_AUTH_OK);
	/* presigned: an x-amz-* header the URL did not sign is refused, x-amz-content-sha256 too */
	const char *ok = "/test.txt?" PRE_Q "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG;
	int64_t now = amz_ms("20130524T100000Z");
	static const char *const extra[][3] = {
		{ "Host: examplebucket.s3.amazonaws.com", "x-amz-copy-source: /other/secret", NULL },
		{ "Host: examplebucket.s3.amazonaws.com", "X-Amz-Tagging: a=b", NULL },
		{ "Host: examplebucket.s3.amazonaws.com", "x-amz-storage-class: REDUCED_REDUNDANCY", NULL },
		{ "Host: examplebucket.s3.amazonaws.com", "x-amz-website-redirect-location: /x", NULL },
		{ "Host: examplebucket.s3.amazonaws.com", "x-amz-content-sha256: UNSIGNED-PAYLOAD", NULL },
	};
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
		cn_http_req r;
		mkreq(&r, "GET", ok, extra[i]);
		cn_auth_config cfg = cfg_default();
		CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_HEADERS_NOT_SIGNED);
	}
}

TEST(test_presigned)
{
	cn_auth_result res;
	const char *ok = "/test.txt?" PRE_Q "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG;
	CHECK_EQ_INT(presigned(ok, amz_ms("20130524T100000Z"), &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.kind, CN_AUTH_KIND_V4_QUERY);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_UNSIGNED);
	CHECK_EQ_STR(res.access_key, S3_AKID);
	/* Parameter order does not matter. */
	CHECK_EQ_INT(presigned("/test.txt?" PRE_SIG "&X-Amz-SignedHeaders=host&X-Amz-Expires=86400&" PRE_Q,
			       amz_ms("20130524T100000Z"), &res), CN_AUTH_OK);
	CHECK_EQ_INT(presigned(ok, amz_ms("20130525T000000Z"), &res), CN_AUTH_OK);
	CHECK_EQ_INT(presigned(ok, amz_ms("20130525T000001Z"), &res), CN_AUTH_EXPIRED);
	CHECK_EQ_INT(presigned(ok, amz_ms("20130523T234000Z"), &res), CN_AUTH_TIME_SKEWED);
	CHECK_EQ_INT(presigned(ok, amz_ms("20130523T235000Z"), &res), CN_AUTH_OK);
	int64_t now = amz_ms("20130524T000100Z");
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=604801&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_EXPIRES_RANGE);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=0&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_EXPIRES_RANGE);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=-5&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_EXPIRES_RANGE);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=99999999999999999999999&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_EXPIRES_RANGE);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=-&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=-1x&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=1h&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=604800&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_SIGNATURE_MISMATCH);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(res.kind, CN_AUTH_KIND_V4_QUERY); /* the s3 layer's AuthorizationQueryParametersError */
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host", now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG "&" PRE_SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(presigned("/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_UNSUPPORTED);
	CHECK_EQ_INT(presigned("/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=2013-05-24&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(presigned("/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDNOPE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_UNKNOWN_KEY);
	CHECK_EQ_INT(presigned("/test.txt?" PRE_Q "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Content-Sha256=nope&" PRE_SIG, now, &res), CN_AUTH_BAD_CONTENT_SHA256);
	CHECK_EQ_INT(presigned("/other.txt?" PRE_Q "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG, now, &res), CN_AUTH_SIGNATURE_MISMATCH);
	/* Presigned plus an Authorization header: refused. */
	static const char *const h[] = { "Host: examplebucket.s3.amazonaws.com", "Authorization: AWS AKIAIOSFODNN7EXAMPLE:x", NULL };
	cn_http_req r;
	mkreq(&r, "GET", ok, h);
	cn_auth_config cfg = cfg_default();
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, now, &res), CN_AUTH_MALFORMED);
	/* An unrelated query is anonymous. */
	CHECK_EQ_INT(presigned("/test.txt?prefix=a", now, &res), CN_AUTH_ANONYMOUS);
}

/* ---- streaming ------------------------------------------------------------------------- */

static const char *const chunk_hdrs[] = {
	"Host: s3.amazonaws.com",
	"x-amz-date: 20130524T000000Z",
	"x-amz-storage-class: REDUCED_REDUNDANCY",
	"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
	"SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
	"x-amz-decoded-content-length;x-amz-storage-class,"
	"Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
	"x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
	"Content-Encoding: aws-chunked",
	"x-amz-decoded-content-length: 66560",
	"Content-Length: 66824",
	NULL,
};

static unsigned char chunk_a[65536];

/* Feeds data in uneven pieces, as the decoder would. */
static void feed(cn_auth_stream *st, const unsigned char *p, size_t len)
{
	size_t off = 0, step = 1000;
	while (off < len) {
		size_t n = len - off < step ? len - off : step;
		st->v.chunk_data(st->v.ctx, p + off, n);
		off += n;
		step = step * 3 % 7919 + 1;
	}
}

TEST(test_streaming_signed)
{
	memset(chunk_a, 'a', sizeof chunk_a);
	cn_http_req r;
	mkreq(&r, "PUT", "/examplebucket/chunkObject.txt", chunk_hdrs);
	cn_auth_config cfg = cfg_default();
	cn_auth_result res;
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, amz_ms("20130524T000000Z"), &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_STREAMING_SIGNED);
	CHECK_EQ_STR(res.seed_signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");

	cn_auth_stream st;
	CHECK_EQ_INT(cn_auth_stream_init(&st, &res), CN_OK);
	feed(&st, chunk_a, 65536);
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648")), CN_OK);
	feed(&st, chunk_a, 1024);
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497")), CN_OK);
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9")), CN_OK);
	CHECK_EQ_INT(st.v.trailers_end(st.v.ctx, CN_STR("")), CN_OK);
	CHECK_EQ_INT(st.failure, CN_AUTH_OK);
	CHECK_EQ_INT(st.decoded_len, 66560);
	cn_auth_stream_fini(&st);

	/* One flipped byte of data: the first chunk fails, and everything after. */
	CHECK_EQ_INT(cn_auth_stream_init(&st, &res), CN_OK);
	chunk_a[30000] = 'b';
	feed(&st, chunk_a, 65536);
	chunk_a[30000] = 'a';
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648")), CN_ERR_ABORTED);
	CHECK_EQ_INT(st.failure, CN_AUTH_SIGNATURE_MISMATCH);
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497")), CN_ERR_ABORTED);
	cn_auth_stream_fini(&st);

	/* Chunks replayed out of order, and a missing signature, fail. */
	CHECK_EQ_INT(cn_auth_stream_init(&st, &res), CN_OK);
	feed(&st, chunk_a, 1024);
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497")), CN_ERR_ABORTED);
	cn_auth_stream_fini(&st);
	CHECK_EQ_INT(cn_auth_stream_init(&st, &res), CN_OK);
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("")), CN_ERR_ABORTED);
	cn_auth_stream_fini(&st);

	/* Not a streaming payload: refused. */
	cn_auth_result plain = res;
	plain.payload = CN_PAYLOAD_SHA256;
	CHECK_EQ_INT(cn_auth_stream_init(&st, &plain), CN_ERR_INVALID);
	cn_auth_stream_fini(&st);
}

/* The trailer example of "Signature calculations for trailing headers": the signatures below
 * agree with independent implementations; the trailer is hashed as "name:value\n". */
TEST(test_streaming_signed_trailer)
{
	static const char *const h[] = {
		"Host: s3.amazonaws.com",
		"x-amz-date: 20130524T000000Z",
		"x-amz-storage-class: REDUCED_REDUNDANCY",
		"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
		"SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;"
		"x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer,"
		"Signature=106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
		"x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
		"Content-Encoding: aws-chunked",
		"x-amz-decoded-content-length: 66560",
		"x-amz-trailer: x-amz-checksum-crc32c",
		"Transfer-Encoding: chunked",
		NULL,
	};
	memset(chunk_a, 'a', sizeof chunk_a);
	cn_http_req r;
	mkreq(&r, "PUT", "/examplebucket/chunkObject.txt", h);
	r.chunked = true;
	cn_auth_config cfg = cfg_default();
	cn_auth_result res;
	CHECK_EQ_INT(cn_auth_check(&cfg, &r, amz_ms("20130524T000000Z"), &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_STREAMING_SIGNED_TRAILER);
	for (int bad = 0; bad < 2; bad++) {
		cn_auth_stream st;
		CHECK_EQ_INT(cn_auth_stream_init(&st, &res), CN_OK);
		feed(&st, chunk_a, 65536);
		CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2")), CN_OK);
		feed(&st, chunk_a, 1024);
		CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7")), CN_OK);
		CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992")), CN_OK);
		CHECK_EQ_INT(st.v.trailer(st.v.ctx, CN_STR("x-amz-checksum-crc32c"), bad ? CN_STR("sOO8/Q=+") : CN_STR("sOO8/Q==")), CN_OK);
		CHECK_EQ_INT(st.v.trailers_end(st.v.ctx, CN_STR("d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435")),
			     bad ? CN_ERR_ABORTED : CN_OK);
		CHECK_EQ_STR(st.trailer_checksum_name, "x-amz-checksum-crc32c");
		CHECK_EQ_STR(st.trailer_checksum_value, bad ? "sOO8/Q=+" : "sOO8/Q==");
		CHECK_EQ_INT(st.failure, bad ? CN_AUTH_SIGNATURE_MISMATCH : CN_AUTH_OK);
		cn_auth_stream_fini(&st);
	}
}

TEST(test_streaming_unsigned_trailer)
{
	cn_auth_result res;
	const char *h[8] = { "Host: b.example", "x-amz-date: 20130524T000000Z",
			     "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER",
			     "Content-Length: 100" };
	CHECK_EQ_INT(self_signed("PUT", "/k", h, 4, "host;x-amz-content-sha256;x-amz-date",
				 "STREAMING-UNSIGNED-PAYLOAD-TRAILER", &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_STREAMING_UNSIGNED_TRAILER);
	cn_auth_stream st;
	CHECK_EQ_INT(cn_auth_stream_init(&st, &res), CN_OK);
	feed(&st, (const unsigned char *)"hello", 5);
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("")), CN_OK);
	CHECK_EQ_INT(st.v.chunk_end(st.v.ctx, CN_STR("")), CN_OK);
	CHECK_EQ_INT(st.v.trailer(st.v.ctx, CN_STR("X-Amz-Checksum-Sha256"), CN_STR("abc=")), CN_OK);
	CHECK_EQ_INT(st.v.trailers_end(st.v.ctx, CN_STR("")), CN_OK);
	CHECK_EQ_STR(st.trailer_checksum_name, "x-amz-checksum-sha256");
	CHECK_EQ_STR(st.trailer_checksum_value, "abc=");
	CHECK_EQ_INT(st.decoded_len, 5);
	static char longname[64];
	memset(longname, 'z', 40);
	memcpy(longname, "x-amz-checksum-", 15);
	CHECK_EQ_INT(st.v.trailer(st.v.ctx, cn_str_c(longname), CN_STR("x")), CN_ERR_INVALID);
	cn_auth_stream_fini(&st);
}

/* ---- V2 -------------------------------------------------------------------------------- */

static cn_auth_err v2(const char *method, const char *target, const char *const *h, int64_t now,
		      cn_auth_result *res)
{
	cn_http_req r;
	mkreq(&r, method, target, h);
	cn_auth_config cfg = cfg_default();
	return cn_auth_check(&cfg, &r, now, res);
}

TEST(test_v2_header)
{
	cn_auth_result res;
	int64_t t = 1175024202000LL; /* Tue, 27 Mar 2007 19:36:42 GMT */
	static const char *const get[] = { "Host: awsexamplebucket1.s3.us-west-1.amazonaws.com",
					   "Date: Tue, 27 Mar 2007 19:36:42 +0000",
					   "Authorization: AWS AKIAIOSFODNN7EXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1g=", NULL };
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/photos/puppy.jpg", get, t, &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.kind, CN_AUTH_KIND_V2_HEADER);
	CHECK_EQ_STR(res.access_key, S3_AKID);
	CHECK_EQ_INT(res.payload, CN_PAYLOAD_UNSIGNED);
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/photos/puppy.jpeg", get, t, &res), CN_AUTH_SIGNATURE_MISMATCH);
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/photos/puppy.jpg", get, t + 16 * 60 * 1000, &res), CN_AUTH_TIME_SKEWED);
	/* A date before the epoch is no valid date (AccessDenied), even at a clock that matches it. */
	static const char *const pre_epoch[] = { "Date: Wed, 31 Dec 1969 23:59:59 GMT",
						 "Authorization: AWS AKIAIOSFODNN7EXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1g=", NULL };
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/photos/puppy.jpg", pre_epoch, -1000, &res), CN_AUTH_MISSING_DATE);
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/photos/puppy.jpg", pre_epoch, t, &res), CN_AUTH_MISSING_DATE);
	static const char *const put[] = { "Content-Type: image/jpeg", "Content-Length: 94328",
					   "Host: awsexamplebucket1.s3.us-west-1.amazonaws.com",
					   "Date: Tue, 27 Mar 2007 21:15:45 +0000",
					   "Authorization: AWS AKIAIOSFODNN7EXAMPLE:iqRzw+ileNPu1fhspnRs8nOjjIA=", NULL };
	CHECK_EQ_INT(v2("PUT", "/awsexamplebucket1/photos/puppy.jpg", put, 1175030145000LL, &res), CN_AUTH_OK);
	/* x-amz-date replaces the Date line (value computed independently with Python hmac). */
	static const char *const del[] = { "Host: s3.us-west-1.amazonaws.com", "Date: Tue, 27 Mar 2007 21:20:27 +0000",
					   "x-amz-date: Tue, 27 Mar 2007 21:20:26 +0000",
					   "Authorization: AWS AKIAIOSFODNN7EXAMPLE:Ri1hpB1zpS9pGqR7y8kuNFCl4sE=", NULL };
	CHECK_EQ_INT(v2("DELETE", "/awsexamplebucket1/photos/puppy.jpg", del, 1175030426000LL, &res), CN_AUTH_OK);
	/* Amz headers sorted and joined, Content-MD5, sub-resources only. */
	static const char *const up[] = { "Host: static.example.com", "Date: Tue, 27 Mar 2007 21:06:08 +0000",
					  "x-amz-acl: public-read", "content-type: application/x-download",
					  "Content-MD5: 4gJE4saaMU4BqNR0kLY+lw==",
					  "X-Amz-Meta-ReviewedBy: joe@example.com",
					  "X-Amz-Meta-ReviewedBy: jane@example.com",
					  "X-Amz-Meta-FileChecksum: 0x02661779",
					  "X-Amz-Meta-ChecksumAlgorithm: crc32",
					  "Authorization: AWS AKIAIOSFODNN7EXAMPLE:b1q8TH5r/2oYqhBlqMKlOnWhoaU=", NULL };
	CHECK_EQ_INT(v2("PUT", "/static.example.com/db-backup.dat.tar.gz", up, 1175029568000LL, &res), CN_AUTH_OK);
	static const char *const acl[] = { "Host: s3.amazonaws.com", "Date: Tue, 27 Mar 2007 19:42:41 +0000",
					   "Authorization: AWS AKIAIOSFODNN7EXAMPLE:uFyUzN4xdEJS4tTv4J38cEEawg4=", NULL };
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/?acl", acl, 1175024561000LL, &res), CN_AUTH_OK);
	static const char *const sub[] = { "Host: s3.amazonaws.com", "Date: Tue, 27 Mar 2007 19:42:41 +0000",
					   "Authorization: AWS AKIAIOSFODNN7EXAMPLE:PRVYxV5w1Ya8WWp/iQ82orxAyB0=", NULL };
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/k?versionId=v%201&prefix=zz&response-content-type=text/plain",
			sub, 1175024561000LL, &res), CN_AUTH_OK);
	/* Errors. */
	static const char *const nodate[] = { "Host: s3.amazonaws.com",
					      "Authorization: AWS AKIAIOSFODNN7EXAMPLE:uFyUzN4xdEJS4tTv4J38cEEawg4=", NULL };
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/?acl", nodate, 1175024561000LL, &res), CN_AUTH_MISSING_DATE);
	static const char *const nocolon[] = { "Host: s3.amazonaws.com", "Date: Tue, 27 Mar 2007 19:42:41 +0000",
					       "Authorization: AWS AKIAIOSFODNN7EXAMPLE", NULL };
	CHECK_EQ_INT(v2("GET", "/", nocolon, 1175024561000LL, &res), CN_AUTH_MALFORMED);
	static const char *const badsig[] = { "Host: s3.amazonaws.com", "Date: Tue, 27 Mar 2007 19:42:41 +0000",
					      "Authorization: AWS AKIAIOSFODNN7EXAMPLE:!!!!", NULL };
	CHECK_EQ_INT(v2("GET", "/", badsig, 1175024561000LL, &res), CN_AUTH_MALFORMED);
	static const char *const unk[] = { "Host: s3.amazonaws.com", "Date: Tue, 27 Mar 2007 19:42:41 +0000",
					   "Authorization: AWS NOPE:uFyUzN4xdEJS4tTv4J38cEEawg4=", NULL };
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/?acl", unk, 1175024561000LL, &res), CN_AUTH_UNKNOWN_KEY);
}

TEST(test_v2_query)
{
	cn_auth_result res;
	static const char *const h[] = { "Host: s3.amazonaws.com", NULL };
	/* Signature computed independently (Python hmac/base64); '+' and '=' percent-encoded. */
	const char *ok = "/awsexamplebucket1/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE"
			 "&Expires=1175139620&Signature=1No4mq5ETf02z8aet9voy6gui6E%3D";
	CHECK_EQ_INT(v2("GET", ok, h, 1175139000000LL, &res), CN_AUTH_OK);
	CHECK_EQ_INT(res.kind, CN_AUTH_KIND_V2_QUERY);
	CHECK_EQ_INT(v2("GET", ok, h, 1175139621000LL, &res), CN_AUTH_EXPIRED);
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE"
			       "&Expires=1175139621&Signature=1No4mq5ETf02z8aet9voy6gui6E%3D",
			h, 1175139000000LL, &res), CN_AUTH_SIGNATURE_MISMATCH);
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/photos/puppy.jpg?Expires=1175139620&Signature=1No4mq5ETf02z8aet9voy6gui6E%3D",
			h, 1175139000000LL, &res), CN_AUTH_MALFORMED);
	CHECK_EQ_INT(v2("GET", "/awsexamplebucket1/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE"
			       "&Expires=soon&Signature=1No4mq5ETf02z8aet9voy6gui6E%3D",
			h, 1175139000000LL, &res), CN_AUTH_MALFORMED);
}

TEST(test_signing_key)
{
	/* The key derivation example of the AWS General Reference ("iam", 20120215). */
	unsigned char k[32];
	char hex[65];
	cn_sigv4_signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", CN_STR("20120215"), CN_STR("us-east-1"),
			     CN_STR("iam"), k);
	cn_hex_encode(k, 32, hex);
	CHECK_EQ_STR(hex, "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

int main(void)
{
	RUN(test_aws_suite);
	RUN(test_s3_get_object);
	RUN(test_s3_put_object);
	RUN(test_s3_lifecycle_and_list);
	RUN(test_canonical_query_rules);
	RUN(test_header_errors);
	RUN(test_wrong_secret);
	RUN(test_date_and_content_sha);
	RUN(test_absent_content_sha);
	RUN(test_unsigned_amz_headers);
	RUN(test_presigned);
	RUN(test_streaming_signed);
	RUN(test_streaming_signed_trailer);
	RUN(test_streaming_unsigned_trailer);
	RUN(test_v2_header);
	RUN(test_v2_query);
	RUN(test_signing_key);
	TEST_END();
}
