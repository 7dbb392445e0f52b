/* util/sigv4: the AWS Signature Version 4 canonical query string (the third line of the
 * canonical request), built once for both sides of a signature: the server's verifier
 * (s3/auth.c) and the client's signer (client/sigv4.c). A signature matches only when both
 * build the same bytes, so there is one builder. Names and values are URI-encoded first and
 * the pairs sorted by their encoded bytes, as AWS specifies (tests/vectors/sigv4). */
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

typedef struct encoded_pair {
	size_t name_off, name_len, value_off, value_len; /* into the encoding buffer */
} encoded_pair;

/* By encoded name, then encoded value. */
static int compare_pairs(const char *base, const encoded_pair *x, const encoded_pair *y)
{
	int c = cn_str_cmp((cn_str){ base + x->name_off, x->name_len },
	                   (cn_str){ base + y->name_off, y->name_len });
	if (c)
		return c;
	return cn_str_cmp((cn_str){ base + x->value_off, x->value_len },
	                  (cn_str){ base + y->value_off, y->value_len });
}

cn_err cn_sigv4_canonical_query(const cn_query_param *params, size_t n, size_t max_len,
                                cn_buf *b)
{
	if (!n)
		return CN_OK;
	encoded_pair *pairs = malloc(sizeof *pairs * n);
	if (!pairs)
		return CN_ERR_NOMEM;
	cn_buf enc;
	cn_buf_init(&enc);
	cn_err e = CN_OK;
	for (size_t i = 0; i < n && !e; i++) {
		pairs[i].name_off = enc.len;
		e = cn_url_encode(&enc, params[i].name, false);
		pairs[i].name_len = enc.len - pairs[i].name_off;
		pairs[i].value_off = enc.len;
		if (!e)
			e = cn_url_encode(&enc, params[i].value, false);
		pairs[i].value_len = enc.len - pairs[i].value_off;
		if (!e && enc.len > max_len)
			e = CN_ERR_TOO_LARGE;
	}
	/* insertion sort: stable, no shared state, and the callers bound n (at most 256) */
	for (size_t i = 1; i < n && !e; i++) {
		encoded_pair key = pairs[i];
		size_t j = i;
		while (j > 0 && compare_pairs(enc.p, &pairs[j - 1], &key) > 0) {
			pairs[j] = pairs[j - 1];
			j--;
		}
		pairs[j] = key;
	}
	for (size_t i = 0; i < n && !e; i++) {
		if (i)
			e = cn_buf_append(b, "&", 1);
		if (!e)
			e = cn_buf_append(b, enc.p + pairs[i].name_off, pairs[i].name_len);
		if (!e)
			e = cn_buf_append(b, "=", 1);
		if (!e)
			e = cn_buf_append(b, enc.p + pairs[i].value_off, pairs[i].value_len);
	}
	cn_buf_fini(&enc);
	free(pairs);
	return e;
}
