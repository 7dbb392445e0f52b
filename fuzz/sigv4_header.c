/* fuzz/sigv4_header: feeds arbitrary bytes to the s3 authenticator (src/s3/auth.c) as the
 * Authorization header, as the query string, as x-amz-content-sha256 and as a SignedHeaders
 * list, around a fixed otherwise-valid request head. The first input byte picks the mode; a
 * '\n' in the input splits it between the header and the query in mode 2. Nothing here may
 * crash, leak or read out of bounds, whatever the bytes. */
#include "s3/auth.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *lookup(void *ctx, cn_str ak)
{
	(void)ctx;
	if (cn_str_eq_c(ak, "AKIAIOSFODNN7EXAMPLE"))
		return "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	return NULL;
}

static void add(cn_http_req *r, const char *name, cn_str value)
{
	r->headers[r->nheaders].name = cn_str_c(name);
	r->headers[r->nheaders].value = value;
	r->nheaders++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 64 * 1024)
		return 0;
	int mode = data[0] % 5;
	const char *p = (const char *)data + 1;
	size_t len = size - 1;
	char *copy = malloc(len + 1); /* the request views must not read past the input */
	if (!copy)
		return 0;
	memcpy(copy, p, len);
	copy[len] = 0;
	cn_str in = { copy, len };

	cn_http_req *r = calloc(1, sizeof *r);
	if (!r) {
		free(copy);
		return 0;
	}
	r->method = CN_STR("PUT");
	r->path = CN_STR("/examplebucket/chunk%20Object.txt");
	r->content_length = -1;
	r->host = CN_STR("s3.amazonaws.com");
	add(r, "Host", r->host);
	add(r, "x-amz-date", CN_STR("20130524T000000Z"));
	add(r, "Date", CN_STR("Fri, 24 May 2013 00:00:00 GMT"));
	add(r, "x-amz-meta-a", CN_STR("  one   two "));

	cn_str sh = CN_STR("host;x-amz-date;x-amz-meta-a");
	switch (mode) {
	case 0:
		add(r, "Authorization", in);
		break;
	case 1:
		r->query = in;
		break;
	case 2: {
		const char *nl = memchr(copy, '\n', len);
		size_t a = nl ? (size_t)(nl - copy) : len;
		add(r, "Authorization", (cn_str){ copy, a });
		r->query = nl ? (cn_str){ nl + 1, len - a - 1 } : (cn_str){ "", 0 };
		break;
	}
	case 3:
		add(r, "x-amz-content-sha256", in);
		add(r, "Authorization",
		    CN_STR("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
			   "SignedHeaders=host;x-amz-date, Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"));
		break;
	default:
		sh = in;
		r->path = in;
		break;
	}

	cn_auth_config cfg = { .lookup = lookup, .region = "us-east-1", .max_skew_ms = 900000 };
	cn_auth_result res;
	cn_auth_err ae = cn_auth_check(&cfg, r, 1369353600000LL, &res);
	if (ae == CN_AUTH_OK && res.payload >= CN_PAYLOAD_STREAMING_SIGNED) {
		cn_auth_stream st;
		if (cn_auth_stream_init(&st, &res) == CN_OK) {
			st.v.chunk_data(st.v.ctx, copy, len);
			st.v.chunk_end(st.v.ctx, in);
			st.v.trailer(st.v.ctx, in, in);
			st.v.trailers_end(st.v.ctx, in);
			cn_auth_stream_fini(&st);
		}
	}
	/* The streaming verifier over a synthetic result: the input split at '\n' plays data,
	 * chunk signature, trailer name/value and trailer signature. */
	cn_auth_result sr;
	memset(&sr, 0, sizeof sr);
	sr.payload = (cn_payload_mode)(CN_PAYLOAD_STREAMING_SIGNED + data[0] % 3);
	memcpy(sr.amz_date, "20130524T000000Z", 17);
	memcpy(sr.scope, "20130524/us-east-1/s3/aws4_request", 35);
	memcpy(sr.seed_signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", 65);
	cn_auth_stream st;
	if (cn_auth_stream_init(&st, &sr) == CN_OK) {
		cn_str parts[4] = { { "", 0 }, { "", 0 }, { "", 0 }, { "", 0 } };
		size_t k = 0, start = 0;
		for (size_t i = 0; i <= len && k < 4; i++) {
			if (i == len || copy[i] == '\n') {
				parts[k++] = (cn_str){ copy + start, i - start };
				start = i + 1;
			}
		}
		st.v.chunk_data(st.v.ctx, parts[0].p, parts[0].len);
		st.v.chunk_end(st.v.ctx, parts[1]);
		st.v.trailer(st.v.ctx, parts[2], parts[3]);
		st.v.trailers_end(st.v.ctx, parts[1]);
		cn_auth_stream_fini(&st);
	}

	cn_buf b;
	cn_buf_init(&b);
	cn_sigv4_canonical_request(r, sh, CN_STR("UNSIGNED-PAYLOAD"), mode == 1, &b);
	cn_buf_fini(&b);
	free(r);
	free(copy);
	return 0;
}
