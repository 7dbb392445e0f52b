/* s3/post.c: POST object upload (S3's PostObject: an HTML form posted to the bucket URL).
 *
 * The request carries no Authorization header; it is authenticated by its form fields: a
 * base64 `policy` (JSON: an expiration and conditions on the other fields) signed with
 * SigV4 (x-amz-algorithm AWS4-HMAC-SHA256, x-amz-credential, x-amz-date, x-amz-signature:
 * hex HMAC-SHA256 of the base64 policy under the credential scope's signing key) or SigV2
 * (AWSAccessKeyId, signature: base64 HMAC-SHA1 of the base64 policy). As AWS S3:
 *   - the policy must not have expired; every condition must hold ({"field": "value"} and
 *     ["eq", "$field", "value"] exact, ["starts-with", "$field", "prefix"] (on
 *     Content-Type every entry of a comma-separated list), ["content-length-range", min,
 *     max] on the file's size, all of them when several); field names compare
 *     case-insensitively; $bucket is the bucket posted to; the first field of a name is
 *     the one that counts, everywhere;
 *   - every form field except policy, the signature fields, file and x-ignore-* must be
 *     named by a condition ("Extra input fields");
 *   - `key` is required; "${filename}" in it becomes the file part's filename;
 *   - the fields a PutObject takes as headers act the same: Content-Type (only the field:
 *     the file part's own Content-Type header is ignored, as AWS does, since no policy
 *     covers it), Cache-Control, Content-Disposition, Content-Encoding, Content-Language,
 *     Expires, x-amz-website-redirect-location, x-amz-meta-* (token names, values without
 *     control characters), x-amz-storage-class and tagging (XML) are stored; Content-MD5
 *     and x-amz-checksum-* are verified; x-amz-server-side-encryption* answers 501;
 *   - success_action_redirect (or redirect) answers 303 to that URL with bucket, key and
 *     etag appended; else success_action_status 200 or 201 (an XML PostResponse), 204 by
 *     default; Location is the object's absolute URL.
 * An unsigned form (no policy) is refused: cairn has no bucket policies to allow it. The
 * fields before the file, read before any signature is checked, must arrive within
 * PRE_DATA_MS (RequestTimeout), so an unauthenticated drip cannot hold a worker for long.
 * Errors: MalformedPOSTRequest (not multipart/form-data), MaxPostPreDataLengthExceeded
 * (fields before the file over 20 KiB), IncorrectNumberOfFilesInPostRequest (no file),
 * InvalidPolicyDocument, AccessDenied ("Invalid according to Policy: ..."),
 * SignatureDoesNotMatch, InvalidAccessKeyId, EntityTooSmall/EntityTooLarge, BadDigest. */
#include "s3/form.h"
#include "s3/s3_int.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_PRE_DATA (20 * 1024)                   /* AWS: fields before the file */

/* Policy text for error messages. */
static const char *policy_msg(cn_s3_req *r, const char *what, const char *detail)
{
	size_t n = strlen(what) + (detail ? strlen(detail) : 0) + 48;
	char *m = cn_s3_alloc(r, n);
	snprintf(m, n, "Invalid according to Policy: %s%s", what, detail ? detail : "");
	return m;
}

/* "2026-12-05T01:02:03Z" or with fractional seconds: milliseconds since the epoch, or -1. */
static int64_t parse_iso8601(const char *s)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	const char *e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!e)
		return -1;
	if (*e == '.') {
		e++;
		if (*e < '0' || *e > '9')
			return -1;
		while (*e >= '0' && *e <= '9')
			e++;
	}
	if (strcmp(e, "Z") != 0)
		return -1;
	time_t t = timegm(&tm);
	return t < 0 ? -1 : (int64_t)t * 1000;
}

/* Fields a policy need not name. */
static bool exempt_field(const char *name)
{
	return !strcasecmp(name, "policy") || !strcasecmp(name, "x-amz-signature") ||
	       !strcasecmp(name, "signature") || !strcasecmp(name, "awsaccesskeyid") ||
	       !strcasecmp(name, "file") || !strncasecmp(name, "x-ignore-", 9);
}

/* The value a condition on `name` (without '$') tests, or NULL when the form lacks it. */
static const char *cond_value(cn_s3_req *r, const cn_form *f, const char *name, const char *key)
{
	if (!strcasecmp(name, "bucket"))
		return r->bucket;
	if (!strcasecmp(name, "key"))
		return key;
	const cn_form_field *fl = cn_form_get(f, name);
	return fl ? fl->value : NULL;
}

/* starts-with on Content-Type: a comma-separated list matches only when every entry does
 * (AWS: "Matching Content-Types in a Comma-Separated List"), so "image/png,text/html"
 * does not pass a policy meant for images. */
static bool every_entry_starts_with(const char *v, const char *prefix)
{
	size_t pl = strlen(prefix);
	for (;;) {
		while (*v == ' ' || *v == '\t')
			v++;
		if (strncmp(v, prefix, pl))
			return false;
		v = strchr(v, ',');
		if (!v)
			return true;
		v++;
	}
}

typedef struct policy_result {
	bool have_range;
	int64_t min, max;
} policy_result;

/* Checks the decoded policy against the form. Returns false after sending the error. */
static bool check_policy(cn_s3_req *r, const cn_form *f, const char *json, size_t len,
                         const char *key, policy_result *pr)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	bool ok = false;
	bool named[CN_FORM_MAX_FIELDS] = { false };

	memset(pr, 0, sizeof *pr);
	if (!root || !json_is_object(root)) {
		cn_s3_error(r, CN_S3_InvalidPolicyDocument, "Invalid Policy: Invalid JSON.");
		goto out;
	}
	json_t *exp = json_object_get(root, "expiration");
	int64_t exp_ms = json_is_string(exp) ? parse_iso8601(json_string_value(exp)) : -1;
	if (exp_ms < 0) {
		cn_s3_error(r, CN_S3_InvalidPolicyDocument,
		            "Invalid Policy: Invalid 'expiration' value: it must be an ISO 8601 date.");
		goto out;
	}
	if (exp_ms <= cn_now_ms()) {
		cn_s3_error(r, CN_S3_AccessDenied, policy_msg(r, "Policy expired.", NULL));
		goto out;
	}
	json_t *conds = json_object_get(root, "conditions");
	if (!json_is_array(conds)) {
		cn_s3_error(r, CN_S3_InvalidPolicyDocument,
		            "Invalid Policy: 'conditions' must be an array.");
		goto out;
	}
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *op, *name, *want;
		char *text = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
		const char *shown = text ? cn_s3_strndup(r, text, strlen(text)) : "";
		free(text);
		if (json_is_object(c) && json_object_size(c) == 1) {
			const char *k = json_object_iter_key(json_object_iter(c));
			json_t *v = json_object_iter_value(json_object_iter(c));
			if (!json_is_string(v))
				goto bad_cond;
			op = "eq";
			name = k;
			want = json_string_value(v);
		} else if (json_is_array(c) && json_array_size(c) == 3 &&
		           json_is_string(json_array_get(c, 0))) {
			op = json_string_value(json_array_get(c, 0));
			if (!strcasecmp(op, "content-length-range")) {
				json_t *a = json_array_get(c, 1), *b = json_array_get(c, 2);
				if (!json_is_integer(a) || !json_is_integer(b) || json_integer_value(a) < 0 ||
				    json_integer_value(b) < json_integer_value(a))
					goto bad_cond;
				int64_t lo = json_integer_value(a), hi = json_integer_value(b);
				/* every range must hold: their intersection */
				pr->min = pr->have_range && pr->min > lo ? pr->min : lo;
				pr->max = pr->have_range && pr->max < hi ? pr->max : hi;
				pr->have_range = true;
				continue;
			}
			json_t *n = json_array_get(c, 1), *v = json_array_get(c, 2);
			if (!json_is_string(n) || !json_is_string(v) || json_string_value(n)[0] != '$')
				goto bad_cond;
			if (strcasecmp(op, "eq") && strcasecmp(op, "starts-with"))
				goto bad_cond;
			name = json_string_value(n) + 1;
			want = json_string_value(v);
		} else {
			goto bad_cond;
		}
		for (size_t j = 0; j < f->nfields; j++)
			if (!strcasecmp(f->fields[j].name, name))
				named[j] = true;
		const char *got = cond_value(r, f, name, key);
		bool pass;
		if (!strcasecmp(op, "eq"))
			pass = got && !strcmp(got, want);
		else if (!strcasecmp(name, "content-type"))
			pass = got && every_entry_starts_with(got, want);
		else
			pass = got && !strncmp(got, want, strlen(want));
		if (!pass) {
			cn_s3_error(r, CN_S3_AccessDenied,
			            policy_msg(r, "Policy Condition failed: ", shown));
			goto out;
		}
		continue;
bad_cond:
		cn_s3_error(r, CN_S3_InvalidPolicyDocument,
		            policy_msg(r, "Invalid condition: ", shown));
		goto out;
	}
	for (size_t j = 0; j < f->nfields; j++) {
		if (named[j] || exempt_field(f->fields[j].name) ||
		    !strcasecmp(f->fields[j].name, "bucket"))
			continue;
		cn_s3_error(r, CN_S3_AccessDenied,
		            policy_msg(r, "Extra input fields: ", f->fields[j].name));
		goto out;
	}
	ok = true;
out:
	json_decref(root);
	return ok;
}

static const char *field(const cn_form *f, const char *name)
{
	const cn_form_field *fl = cn_form_get(f, name);
	return fl ? fl->value : NULL;
}

/* Verifies the policy's signature (V4 or V2). Returns false after sending the error. */
static bool check_signature(cn_s3_req *r, const cn_form *f, const char *policy)
{
	const char *sig4 = field(f, "x-amz-signature"), *sig2 = field(f, "signature");
	unsigned char mac[32];
	char want[65];

	if (sig4) {
		const char *alg = field(f, "x-amz-algorithm"), *cred = field(f, "x-amz-credential");
		const char *date = field(f, "x-amz-date");
		if (!alg || strcmp(alg, "AWS4-HMAC-SHA256") || !cred || !date) {
			cn_s3_error(r, CN_S3_InvalidArgument,
			            "POST requires x-amz-algorithm AWS4-HMAC-SHA256, x-amz-credential and x-amz-date.");
			return false;
		}
		/* AK/date8/region/service/aws4_request */
		const char *p[5];
		size_t l[5], n = 0;
		const char *s = cred;
		while (n < 5) {
			const char *slash = n < 4 ? strchr(s, '/') : NULL;
			p[n] = s;
			l[n] = slash ? (size_t)(slash - s) : strlen(s);
			n++;
			if (!slash)
				break;
			s = slash + 1;
		}
		if (n != 5 || l[1] != 8 || strncmp(date, p[1], 8) || l[4] != 12 ||
		    strncmp(p[4], "aws4_request", 12) || l[3] != 2 || strncmp(p[3], "s3", 2)) {
			cn_s3_error(r, CN_S3_AuthorizationQueryParametersError,
			            "Error parsing the X-Amz-Credential parameter.");
			return false;
		}
		const char *secret = cn_s3_secret_for(r, cn_s3_strndup(r, p[0], l[0]));
		if (!secret) {
			cn_s3_error(r, CN_S3_InvalidAccessKeyId, NULL);
			return false;
		}
		const char *region = r->srv->cfg.enforce_region ? r->srv->cfg.region : NULL;
		if (region && (strlen(region) != l[2] || strncmp(region, p[2], l[2]))) {
			cn_s3_error(r, CN_S3_AuthorizationHeaderMalformed, NULL);
			return false;
		}
		unsigned char key[32];
		cn_sigv4_signing_key(secret, (cn_str){ p[1], 8 }, (cn_str){ p[2], l[2] }, CN_STR("s3"), key);
		cn_hmac_sha256(key, 32, policy, strlen(policy), mac);
		cn_hex_encode(mac, 32, want);
		if (strlen(sig4) != 64 || CRYPTO_memcmp(want, sig4, 64) != 0) {
			cn_s3_error(r, CN_S3_SignatureDoesNotMatch, NULL);
			return false;
		}
		return true;
	}
	if (sig2) {
		const char *ak = field(f, "awsaccesskeyid");
		const char *secret = ak ? cn_s3_secret_for(r, ak) : NULL;
		if (!secret) {
			cn_s3_error(r, CN_S3_InvalidAccessKeyId, NULL);
			return false;
		}
		unsigned int mlen = 0;
		HMAC(EVP_sha1(), secret, (int)strlen(secret), (const unsigned char *)policy, strlen(policy),
		     mac, &mlen);
		cn_base64_encode(mac, mlen, want);
		if (strlen(sig2) != strlen(want) || CRYPTO_memcmp(want, sig2, strlen(want)) != 0) {
			cn_s3_error(r, CN_S3_SignatureDoesNotMatch, NULL);
			return false;
		}
		return true;
	}
	cn_s3_error(r, CN_S3_AccessDenied,
	            "Anonymous POST is not allowed: the form must carry a signed policy.");
	return false;
}

/* RFC 9110 token characters, for x-amz-meta-* names. */
static bool token_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

/* The object's metadata from the form (names lowercased; arena strings), and the checks a
 * PutObject makes from the same headers: Content-MD5 and x-amz-checksum-* (verified by
 * the seal through c), server-side encryption (501). The file part's own Content-Type
 * header is ignored, as AWS S3 does: only a Content-Type field, which the policy must
 * name, sets the type. Returns false after sending an error. */
static bool form_meta(cn_s3_req *r, const cn_form *f, cn_s3_put_ctx *c, cn_kv **out, size_t *nout)
{
	static const char *const sys[] = { "content-type", "cache-control", "content-disposition",
	                                   "content-encoding", "content-language", "expires",
	                                   "x-amz-website-redirect-location" };
	cn_kv *v = cn_s3_alloc(r, (f->nfields + 3) * sizeof *v);
	size_t n = 0, user = 0;

	for (size_t i = 0; i < f->nfields; i++) {
		const cn_form_field *fl = &f->fields[i];
		size_t nl = strlen(fl->name);
		char *ln = cn_s3_strndup(r, fl->name, nl);
		for (size_t k = 0; k < nl; k++)
			ln[k] = (char)(ln[k] >= 'A' && ln[k] <= 'Z' ? ln[k] + 32 : ln[k]);
		if (!strncmp(ln, "x-amz-server-side-encryption", 28)) {
			cn_s3_error(r, CN_S3_NotImplemented, "Server-side encryption is not implemented.");
			return false;
		}
		if (!strcmp(ln, "content-md5")) {
			unsigned char tmp[20];
			size_t dn = 0;
			if (c->have_md5 || fl->len != 24 ||
			    cn_base64_decode(cn_str_c(fl->value), tmp, sizeof tmp, &dn) != CN_OK || dn != 16) {
				cn_s3_error(r, CN_S3_InvalidDigest, NULL);
				return false;
			}
			memcpy(c->md5, tmp, 16);
			c->have_md5 = true;
			continue;
		}
		cn_cksum_algo algo = cn_cksum_from_header(cn_str_c(ln));
		if (algo != CN_CKSUM_NONE) {
			if (c->ck.algo != CN_CKSUM_NONE) {
				cn_s3_error(r, CN_S3_InvalidRequest,
				            "Expecting a single x-amz-checksum- field. Multiple checksum Types are not allowed.");
				return false;
			}
			if (cn_cksum_decode(algo, cn_str_c(fl->value), c->expected) != CN_OK) {
				cn_s3_error(r, CN_S3_InvalidRequest, "Value for the checksum field is invalid.");
				return false;
			}
			if (cn_cksum_init(&c->ck, algo) != CN_OK) {
				cn_s3_error_from(r, CN_ERR_NOMEM);
				return false;
			}
			c->have_expected = true;
			continue;
		}
		bool keep = !strncmp(ln, "x-amz-meta-", 11) && nl > 11;
		if (keep) {
			if (!token_ok(ln + 11)) {
				cn_s3_error(r, CN_S3_InvalidArgument, "Invalid metadata name in the form.");
				return false;
			}
			user += nl - 11 + fl->len;
			if (user > CN_S3_MAX_USER_META) {
				cn_s3_error(r, CN_S3_MetadataTooLarge, NULL);
				return false;
			}
		}
		for (size_t k = 0; !keep && k < sizeof sys / sizeof *sys; k++)
			keep = !strcmp(ln, sys[k]);
		if (!keep && !strcmp(ln, "x-amz-storage-class")) {
			if (strcmp(fl->value, "STANDARD") && strcmp(fl->value, "REDUCED_REDUNDANCY")) {
				cn_s3_error(r, CN_S3_InvalidStorageClass, NULL);
				return false;
			}
			keep = true;
		}
		if (!keep)
			continue;
		if (!cn_http_field_value_ok(fl->value, fl->len)) {
			cn_s3_error(r, CN_S3_InvalidArgument,
			            "Form field values stored as metadata must not hold control characters.");
			return false;
		}
		bool dup = false;
		for (size_t k = 0; k < n && !dup; k++)
			dup = !strcmp(v[k].name, ln);
		if (dup)
			continue; /* the first one counts, as cn_form_get */
		v[n].name = ln;
		v[n].value = cn_s3_strndup(r, fl->value, fl->len);
		n++;
	}
	bool have_type = false;
	for (size_t k = 0; k < n; k++)
		have_type |= !strcmp(v[k].name, "content-type");
	if (!have_type) {
		v[n].name = "content-type";
		v[n].value = "binary/octet-stream";
		n++;
	}
	const char *tagging = field(f, "tagging");
	if (tagging) {
		char *canon = NULL;
		cn_s3_code code = CN_S3_OK;
		const char *msg = NULL;
		cn_err e = cn_s3_tagging_parse_xml(tagging, strlen(tagging), false, &canon, &code, &msg);
		if (e == CN_ERR_INVALID) {
			cn_s3_error(r, code, msg);
			return false;
		}
		if (e != CN_OK) {
			cn_s3_error_from(r, e);
			return false;
		}
		if (canon) {
			v[n].name = CN_S3_TAGGING_META;
			v[n].value = cn_s3_strndup(r, canon, strlen(canon));
			n++;
			free(canon);
		}
	}
	*out = v;
	*nout = n;
	return true;
}

/* The key with "${filename}" replaced by the file's name (arena). */
static char *expand_key(cn_s3_req *r, const char *key, const char *filename)
{
	const char *at = strstr(key, "${filename}");
	if (!at)
		return cn_s3_strndup(r, key, strlen(key));
	size_t a = (size_t)(at - key), fl = strlen(filename), rest = strlen(at + 11);
	char *k = cn_s3_alloc(r, a + fl + rest + 1);
	memcpy(k, key, a);
	memcpy(k + a, filename, fl);
	memcpy(k + a + fl, at + 11, rest + 1);
	return k;
}

/* The size check of content-length-range, run by the object layer's seal before anything
 * is visible. */
typedef struct post_seal {
	cn_s3_put_ctx *c;
	const policy_result *pr;
} post_seal;

static cn_err seal(void *ctx, const unsigned char md5[16], int64_t size, cn_kv **add, size_t *nadd)
{
	post_seal *ps = ctx;
	if (ps->pr->have_range && size < ps->pr->min) {
		ps->c->fail = CN_S3_EntityTooSmall;
		*nadd = 0;
		return CN_ERR_INVALID;
	}
	return cn_s3_put_seal(ps->c, md5, size, add, nadd);
}

void cn_s3_post_object(cn_s3_req *r)
{
	char boundary[CN_FORM_MAX_BOUNDARY + 1];
	const cn_str *ct = cn_http_req_header(r->h, "content-type");
	cn_form f;
	cn_obj_info out;
	cn_s3_put_ctx c;
	cn_buf b;

	memset(&c, 0, sizeof c);
	memset(&f, 0, sizeof f);
	cn_obj_info_init(&out);
	cn_buf_init(&b);
	if (!ct || !cn_form_boundary(*ct, boundary)) {
		cn_s3_error(r, CN_S3_MalformedPOSTRequest, NULL);
		goto done;
	}
	if (r->h->chunked || r->h->content_length < 0) {
		cn_s3_error(r, CN_S3_MissingContentLength, NULL);
		goto done;
	}
	/* The fields before the file are read before any signature can be checked: only from
	 * what the loop gathered before a worker took the request (cn_s3_preread), never
	 * waiting on the client, which is not authenticated yet (loop.c NET-8). Fields
	 * that run past those bytes are too long. The file is read after the check. */
	cn_http_body_nowait(r->x, true);
	cn_err e = cn_form_open(&f, r->body, boundary, MAX_PRE_DATA);
	cn_http_body_nowait(r->x, false);
	if (e != CN_OK) {
		if (e == CN_ERR_TOO_LARGE || e == CN_ERR_BUSY)
			cn_s3_error(r, CN_S3_MaxPostPreDataLengthExceeded, NULL);
		else if (e == CN_ERR_NOT_FOUND)
			cn_s3_error(r, CN_S3_IncorrectNumberOfFilesInPostRequest, NULL);
		else if (e == CN_ERR_INVALID)
			cn_s3_error(r, CN_S3_MalformedPOSTRequest, NULL);
		else
			cn_s3_error_from(r, e);
		goto done;
	}
	for (size_t i = 0; i < f.nfields; i++)
		if (memchr(f.fields[i].value, 0, f.fields[i].len) &&
		    (!strcasecmp(f.fields[i].name, "key") || !strcasecmp(f.fields[i].name, "policy"))) {
			cn_s3_error(r, CN_S3_InvalidArgument, "Form fields must not hold NUL bytes.");
			goto done;
		}
	const char *policy = field(&f, "policy");
	if (!policy) {
		cn_s3_error(r, CN_S3_AccessDenied,
		            "Anonymous POST is not allowed: the form must carry a signed policy.");
		goto done;
	}
	if (!check_signature(r, &f, policy))
		goto done;
	const char *bucket_field = field(&f, "bucket");
	/* A form signed for another bucket: AWS's 403 AccessDenied, as for any policy that
	 * does not allow the request. */
	if (bucket_field && strcmp(bucket_field, r->bucket)) {
		cn_s3_error(r, CN_S3_AccessDenied,
		            "The bucket field does not name the bucket the form was posted to.");
		goto done;
	}
	const char *key0 = field(&f, "key");
	if (!key0) {
		cn_s3_error(r, CN_S3_InvalidArgument, "Bucket POST must contain a field named 'key'.");
		goto done;
	}
	char *key = expand_key(r, key0, f.filename);
	if (!*key) {
		cn_s3_error(r, CN_S3_InvalidArgument, "User key must have a length greater than 0.");
		goto done;
	}
	size_t plen = strlen(policy);
	unsigned char *json = cn_s3_alloc(r, plen + 1);
	size_t jlen = 0;
	if (cn_base64_decode(cn_str_c(policy), json, plen + 1, &jlen) != CN_OK) {
		cn_s3_error(r, CN_S3_InvalidPolicyDocument, "Invalid Policy: Invalid Base64 Encoding.");
		goto done;
	}
	policy_result pr;
	if (!check_policy(r, &f, (const char *)json, jlen, key, &pr))
		goto done;
	e = cn_obj_key_check(key, strlen(key));
	if (e != CN_OK) {
		cn_s3_error_from(r, e);
		goto done;
	}
	cn_kv *meta;
	size_t nmeta;
	if (!form_meta(r, &f, &c, &meta, &nmeta))
		goto done;

	c.rd.read = cn_s3_put_read;
	c.r = r;
	c.src = &f.file;
	c.limit = pr.have_range && pr.max < CN_S3_MAX_SINGLE_PUT ? pr.max : CN_S3_MAX_SINGLE_PUT;
	post_seal ps = { &c, &pr };
	cn_put_opts opts = { .meta = meta, .nmeta = nmeta, .size = -1, .seal = seal, .seal_ctx = &ps };
	e = cn_obj_put(r->store, r->bucket, key, &c.rd, &opts, &out);
	if (e != CN_OK) {
		if (c.fail != CN_S3_OK)
			cn_s3_error(r, c.fail, c.fail_msg);
		else if (e == CN_ERR_INVALID && !f.done)
			cn_s3_error(r, CN_S3_MalformedPOSTRequest, NULL);
		else
			cn_s3_error_from(r, e);
		goto done;
	}

	/* The reply. */
	char etag[sizeof out.etag + 2];
	snprintf(etag, sizeof etag, "\"%s\"", out.etag);
	const char *redirect = field(&f, "success_action_redirect");
	if (!redirect)
		redirect = field(&f, "redirect");
	const char *status = field(&f, "success_action_status");
	/* Location: the object's URL, absolute as AWS S3 gives it (uploaders such as Uppy use
	 * it as the file's address), from the Host the form was posted to. */
	const char *host = cn_s3_header(r, "host");
	if (host && *host && !strpbrk(host, "/\\ \t\r\n")) {
		cn_buf_append(&b, "http://", 7);
		cn_buf_append(&b, host, strlen(host));
	}
	if (!r->vhost) {
		cn_buf_append(&b, "/", 1);
		cn_url_encode(&b, cn_str_c(r->bucket), false);
	}
	cn_buf_append(&b, "/", 1);
	cn_url_encode(&b, cn_str_c(key), true);
	char *location = cn_s3_strndup(r, b.p, b.len);
	b.len = 0;
	const cn_form_field *rf = cn_form_get(&f, "success_action_redirect");
	if (!rf)
		rf = cn_form_get(&f, "redirect");
	/* a redirect that cannot be a header value is ignored, as a bad URL */
	if (redirect && *redirect && cn_http_field_value_ok(rf->value, rf->len)) {
		cn_buf_append(&b, redirect, strlen(redirect));
		cn_buf_append(&b, strchr(redirect, '?') ? "&bucket=" : "?bucket=", 8);
		cn_url_encode(&b, cn_str_c(r->bucket), false);
		cn_buf_append(&b, "&key=", 5);
		cn_url_encode(&b, cn_str_c(key), false);
		cn_buf_append(&b, "&etag=", 6);
		cn_url_encode(&b, cn_str_c(etag), false);
		cn_s3_resp_start(r, 303);
		cn_http_resp_header(r->x, "Location", cn_s3_strndup(r, b.p, b.len));
		cn_http_resp_header(r->x, "ETag", etag);
		cn_s3_reply_version_id(r, out.version_id);
		cn_s3_send_reply_headers(r);
		cn_http_resp_send_head(r->x, 0);
		goto done;
	}
	if (status && !strcmp(status, "201")) {
		cn_buf_append(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PostResponse>", 53);
		cn_xml_elem(&b, "Location", location);
		cn_xml_elem(&b, "Bucket", r->bucket);
		cn_xml_elem(&b, "Key", key);
		cn_xml_elem(&b, "ETag", etag);
		cn_buf_append(&b, "</PostResponse>", 15);
		cn_s3_reply_header(r, "ETag", cn_s3_strndup(r, etag, strlen(etag)));
		cn_s3_reply_header(r, "Location", location);
		cn_s3_reply_version_id(r, out.version_id);
		cn_s3_send_xml(r, 201, &b);
		goto done;
	}
	cn_s3_resp_start(r, status && !strcmp(status, "200") ? 200 : 204);
	cn_http_resp_header(r->x, "ETag", etag);
	cn_http_resp_header(r->x, "Location", location);
	cn_s3_reply_version_id(r, out.version_id);
	cn_s3_send_reply_headers(r);
	cn_http_resp_send_head(r->x, 0);
done:
	cn_cksum_fini(&c.ck);
	cn_obj_info_fini(&out);
	cn_buf_fini(&b);
	cn_form_fini(&f);
}
