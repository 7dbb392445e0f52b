/* Unit tests of src/client: our SigV4 signer against the AWS SigV4 test suite
 * (tests/vectors/sigv4: canonical request byte for byte and the official Authorization
 * value), the S3 GET example of the AWS documentation, request set-up on a curl handle, and
 * endpoint ellipsis expansion. Runs from tests/vectors/. */
#include "client/client.h"
#include "test.h"

#include <openssl/evp.h>

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 16);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static void sha256_hex(const void *p, size_t len, char out[65])
{
	unsigned char d[32];
	unsigned int n = 32;
	EVP_Digest(p, len, d, &n, EVP_sha256(), NULL);
	cn_hex_encode(d, 32, out);
}

static char *decode(const char *s, size_t len)
{
	char *out = malloc(len + 1);
	size_t n;
	if (cn_url_decode((cn_str){ s, len }, false, out, len + 1, &n) != CN_OK) {
		free(out);
		return NULL;
	}
	out[n] = 0;
	return out;
}

/* One suite case: returns 1 when both the canonical request and the Authorization match. */
static int run_case(const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "sigv4/%s.req", name);
	char *req = read_file(path);
	snprintf(path, sizeof path, "sigv4/%s.creq", name);
	char *creq = read_file(path);
	snprintf(path, sizeof path, "sigv4/%s.authz", name);
	char *authz = read_file(path);
	if (!req || !creq || !authz) {
		fprintf(stderr, "missing vector %s\n", name);
		free(req), free(creq), free(authz);
		return 0;
	}
	char *nl = strchr(req, '\n');
	*nl = 0;
	char *sp1 = strchr(req, ' '), *sp2 = strrchr(req, ' ');
	*sp1 = 0;
	*sp2 = 0;
	char *target = sp1 + 1;
	char *q = strchr(target, '?');
	cn_kv query[16], hdrs[16];
	size_t nq = 0, nh = 0;
	char *rawpath = decode(target, q ? (size_t)(q - target) : strlen(target));
	if (q) {
		char *p = q + 1;
		while (*p && nq < 16) {
			char *amp = strchr(p, '&');
			size_t len = amp ? (size_t)(amp - p) : strlen(p);
			char *eq = memchr(p, '=', len);
			query[nq].name = decode(p, eq ? (size_t)(eq - p) : len);
			query[nq].value = eq ? decode(eq + 1, len - (size_t)(eq + 1 - p)) : strdup("");
			nq++;
			if (!amp)
				break;
			p = amp + 1;
		}
	}
	char *p = nl + 1;
	while (*p && *p != '\n' && nh < 16) {
		char *e = strchr(p, '\n');
		*e = 0;
		char *colon = strchr(p, ':');
		*colon = 0;
		hdrs[nh].name = strdup(p);
		hdrs[nh].value = strdup(colon + 1);
		nh++;
		p = e + 1;
	}
	char *body = *p == '\n' ? p + 1 : p;
	char ph[65];
	sha256_hex(body, strlen(body), ph);
	cn_sigv4_req r = {
		.method = req, .path = rawpath, .query = query, .nquery = nq, .headers = hdrs, .nheaders = nh,
		.payload_hash = ph, .amz_date = "20150830T123600Z", .region = "us-east-1", .service = "service",
		.access_key = "AKIDEXAMPLE", .secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	};
	cn_buf b;
	cn_buf_init(&b);
	int ok = 1;
	if (cn_sigv4_canonical(&r, &b) != CN_OK || strcmp(b.p, creq)) {
		fprintf(stderr, "%s: canonical request differs:\n%s\n--- expected\n%s\n", name, b.p ? b.p : "", creq);
		ok = 0;
	}
	b.len = 0;
	size_t al = strlen(authz);
	while (al && (authz[al - 1] == '\n' || authz[al - 1] == '\r'))
		authz[--al] = 0;
	if (cn_sigv4_authorization(&r, &b) != CN_OK || strcmp(b.p, authz)) {
		fprintf(stderr, "%s: authorization\n%s\n--- expected\n%s\n", name, b.p ? b.p : "", authz);
		ok = 0;
	}
	cn_buf_fini(&b);
	cn_kvs_free(NULL, 0);
	for (size_t i = 0; i < nq; i++)
		free(query[i].name), free(query[i].value);
	for (size_t i = 0; i < nh; i++)
		free(hdrs[i].name), free(hdrs[i].value);
	free(rawpath);
	free(req), free(creq), free(authz);
	return ok;
}

TEST(test_aws_suite)
{
	char *list = read_file("sigv4/suite.txt");
	CHECK(list != NULL);
	if (!list)
		return;
	int n = 0, ok = 0;
	for (char *save, *tok = strtok_r(list, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
		if (!*tok)
			continue;
		n++;
		ok += run_case(tok);
	}
	CHECK(n >= 18);
	CHECK_EQ_INT(ok, n);
	free(list);
}

/* The "GET Object" example of the S3 SigV4 documentation (header-based auth). */
TEST(test_s3_doc_example)
{
	cn_kv h[] = {
		{ "Host", "examplebucket.s3.amazonaws.com" },
		{ "Range", "bytes=0-9" },
		{ "x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "x-amz-date", "20130524T000000Z" },
	};
	cn_sigv4_req r = {
		.method = "GET", .path = "/test.txt", .headers = h, .nheaders = 4,
		.payload_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		.amz_date = "20130524T000000Z", .region = "us-east-1", .service = "s3",
		.access_key = "AKIAIOSFODNN7EXAMPLE", .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	};
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_authorization(&r, &b), CN_OK);
	CHECK_EQ_STR(b.p, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
	                  "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
	                  "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	cn_buf_fini(&b);
	/* bad date */
	r.amz_date = "2013";
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_sigv4_authorization(&r, &b), CN_ERR_INVALID);
	cn_buf_fini(&b);
}

TEST(test_expand_hosts)
{
	char **h;
	size_t n;
	CHECK_EQ_INT(cn_client_expand_hosts("node{1...3}:9000,other:80", &h, &n), CN_OK);
	CHECK_EQ_INT(n, 4);
	if (n == 4) {
		CHECK_EQ_STR(h[0], "node1:9000");
		CHECK_EQ_STR(h[2], "node3:9000");
		CHECK_EQ_STR(h[3], "other:80");
	}
	cn_client_hosts_free(h, n);
	CHECK_EQ_INT(cn_client_expand_hosts("h{01...10}:{1...2}", &h, &n), CN_OK);
	CHECK_EQ_INT(n, 20);
	if (n == 20) {
		CHECK_EQ_STR(h[0], "h01:1");
		CHECK_EQ_STR(h[1], "h01:2");
		CHECK_EQ_STR(h[19], "h10:2");
	}
	cn_client_hosts_free(h, n);
	CHECK_EQ_INT(cn_client_expand_hosts("h{3...1}", &h, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_client_expand_hosts("h{1..3}", &h, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_client_expand_hosts("a,,b", &h, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_client_expand_hosts("", &h, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_client_expand_hosts("h{1...5000}", &h, &n), CN_ERR_INVALID);
}

TEST(test_prepare)
{
	cn_client *c;
	cn_client_cfg cfg = { .hosts = "127.0.0.1:9,https://b:443", .access_key = "AK", .secret_key = "SK" };
	CHECK_EQ_INT(cn_client_new(&cfg, &c), CN_OK);
	CHECK_EQ_INT(cn_client_nhosts(c), 2);
	CHECK_EQ_STR(cn_client_host_url(c, 0), "http://127.0.0.1:9");
	CHECK_EQ_STR(cn_client_host_url(c, 1), "https://b:443");
	CURL *e = curl_easy_init();
	cn_client_signer s;
	cn_client_signer_init(&s);
	cn_client_hdrs h;
	cn_client_hdrs_init(&h);
	cn_kv q[] = { { "partNumber", "2" }, { "uploadId", "a b" } };
	cn_client_req r = { .method = "PUT", .bucket = "bk", .key = "dir/k y", .query = q, .nquery = 2, .body_len = 5 };
	CHECK_EQ_INT(cn_client_prepare(c, &s, e, &r, &h), CN_OK);
	char *url = NULL;
	curl_easy_getinfo(e, CURLINFO_EFFECTIVE_URL, &url);
	CHECK_EQ_STR(url, "http://127.0.0.1:9/bk/dir/k%20y?partNumber=2&uploadId=a%20b");
	CHECK_EQ_STR(h.node[0].data, "Host: 127.0.0.1:9");
	CHECK(!strncmp(h.auth, "Authorization: AWS4-HMAC-SHA256 Credential=AK/", 46));
	char longkey[1100];
	memset(longkey, 'a', sizeof longkey - 1);
	longkey[sizeof longkey - 1] = 0;
	r.key = longkey;
	CHECK_EQ_INT(cn_client_prepare(c, &s, e, &r, &h), CN_ERR_INVALID);
	cn_client_hdrs_fini(&h);
	curl_easy_cleanup(e);
	cn_client_free(c);
	cfg.hosts = "a{1...";
	CHECK_EQ_INT(cn_client_new(&cfg, &c), CN_ERR_INVALID);
}

int main(void)
{
	RUN(test_aws_suite);
	RUN(test_s3_doc_example);
	RUN(test_expand_hosts);
	RUN(test_prepare);
	TEST_END();
}
