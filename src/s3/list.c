/* list.c: ListObjects (V1, and V2 with list-type=2) and DeleteObjects (POST ?delete).
 * Listing parameters are checked here (max-keys 0..2^31-1, capped to 1000; encoding-type
 * "url" only) and passed to cn_obj_list, which does the prefix/delimiter roll-up and
 * pagination. The V2 continuation token is opaque to clients: base64 of the last key or
 * common prefix returned, decoded back into the `after` position. With encoding-type=url,
 * every key-like value in the reply (Key, Prefix, Delimiter, Marker, NextMarker,
 * StartAfter, CommonPrefixes) is percent-encoded with '/' kept, as AWS does; clients then
 * decode with unquote_plus, so '+' is encoded too. A marker that is a common prefix skips
 * the keys below it (cn_obj_list does that roll-up). Element order follows AWS's
 * ListBucketResult. DeleteObjects parses a bounded <Delete> body (<= 1000 objects) and
 * deletes each key (or the given VersionId of it), reporting per key; a missing key or
 * version counts as deleted (AWS), a created or removed delete marker is reported with
 * DeleteMarker and DeleteMarkerVersionId. */
#include <limits.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_int.h"

#define LIST_MAX_KEYS 1000
#define DELETE_MAX_OBJECTS 1000
/* The largest Delete body the API's own maxima allow: DELETE_MAX_OBJECTS objects, each a
 * 1,024-byte key written with every byte escaped ("&quot;", 6 bytes), a version id, the
 * other elements (Object, Key, VersionId, ETag, LastModifiedTime, Size) with their values,
 * and generous indentation; plus the declaration, the root and Quiet. A larger body is
 * MaxMessageLengthExceeded. */
#define DELETE_KEY_XML_MAX (6 * 1024)
#define DELETE_VERSION_ID_MAX 1024
#define DELETE_OBJECT_MARKUP 512
#define DELETE_OBJECT_SPACE 1024
#define DELETE_BODY_MAX                                                                    \
	(DELETE_MAX_OBJECTS * (DELETE_KEY_XML_MAX + DELETE_VERSION_ID_MAX +                 \
	                       DELETE_OBJECT_MARKUP + DELETE_OBJECT_SPACE) + 64 * 1024)
#define TOKEN_KEY_MAX 1024 /* longest key or prefix a token can carry */

static cn_err token_encode(const char *key, cn_buf *b)
{
	size_t len = strlen(key);
	cn_err e = cn_buf_reserve(b, 4 * ((len + 2) / 3) + 1);
	if (e)
		return e;
	b->len = cn_base64_encode((const unsigned char *)key, len, b->p);
	b->p[b->len] = 0;
	return CN_OK;
}

/* Decodes a continuation token into an arena string; false when it is not one of ours. */
static bool token_decode(cn_s3_req *r, const char *tok, char **out)
{
	size_t tlen = strlen(tok);
	if (tlen == 0 || tlen > 4 * ((TOKEN_KEY_MAX + 2) / 3))
		return false;
	char *key = cn_s3_alloc(r, tlen + 1);
	size_t n = 0;
	if (cn_base64_decode(cn_str_c(tok), (unsigned char *)key, tlen, &n) || n == 0 ||
	    memchr(key, 0, n))
		return false;
	key[n] = 0;
	*out = key;
	return true;
}

static cn_err write_contents(cn_s3_req *r, cn_buf *b, const cn_list_entry *o, bool url,
                             const char *owner)
{
	char when[25];
	cn_time_iso8601(o->mtime_ms, when);
	cn_err e = cn_xml_open(b, "Contents", NULL);
	if (!e)
		e = cn_s3_xml_key(b, "Key", o->key, url);
	if (!e)
		e = cn_xml_elem(b, "LastModified", when);
	if (!e)
		e = cn_xml_elemf(b, "ETag", "\"%s\"", o->etag);
	if (!e)
		e = cn_xml_elemf(b, "Size", "%lld", (long long)o->size);
	if (!e && owner) {
		e = cn_xml_open(b, "Owner", NULL);
		if (!e)
			e = cn_xml_elem(b, "ID", owner);
		if (!e)
			e = cn_xml_elem(b, "DisplayName", "cairn");
		if (!e)
			e = cn_xml_close(b, "Owner");
	}
	if (!e)
		e = cn_xml_elem(b, "StorageClass", o->storage_class[0] ? o->storage_class : "STANDARD");
	if (!e)
		e = cn_xml_close(b, "Contents");
	return e;
}

void cn_s3_list_objects(cn_s3_req *r)
{
	const char *lt = cn_s3_query(r, "list-type");
	bool v2 = lt && !strcmp(lt, "2");
	if (lt && !v2) {
		cn_s3_error(r, CN_S3_InvalidArgument, "Invalid list type specified.");
		return;
	}
	const char *prefix = cn_s3_query(r, "prefix");
	const char *delim = cn_s3_query(r, "delimiter");
	const char *enc = cn_s3_query(r, "encoding-type");
	const char *marker = v2 ? NULL : cn_s3_query(r, "marker");
	const char *start_after = v2 ? cn_s3_query(r, "start-after") : NULL;
	const char *token = v2 ? cn_s3_query(r, "continuation-token") : NULL;
	if (token && !token[0])
		token = NULL; /* AWS: an empty token lists from the start */
	const char *fo = cn_s3_query(r, "fetch-owner");
	bool fetch_owner = v2 && fo && !strcasecmp(fo, "true");
	if (!prefix)
		prefix = "";
	if (delim && !delim[0])
		delim = NULL;
	size_t max_keys;
	if (!cn_s3_parse_max_keys(cn_s3_query(r, "max-keys"), LIST_MAX_KEYS, &max_keys)) {
		cn_s3_error(r, CN_S3_InvalidArgument,
		            "Argument maxKeys must be an integer between 0 and 2147483647");
		return;
	}
	bool url = false;
	if (enc) {
		if (strcasecmp(enc, "url")) {
			cn_s3_error(r, CN_S3_InvalidArgument, "Invalid Encoding Method specified in Request");
			return;
		}
		url = true;
	}
	const char *after = marker;
	if (v2) {
		after = start_after;
		if (token) {
			char *k = NULL;
			if (!token_decode(r, token, &k)) {
				cn_s3_error(r, CN_S3_InvalidArgument,
				            "The continuation token provided is incorrect");
				return;
			}
			/* The token resumes after what was returned, never before start-after. */
			if (!start_after || strcmp(k, start_after) > 0)
				after = k;
		}
	}

	cn_list_result res;
	memset(&res, 0, sizeof res);
	cn_err e;
	if (max_keys == 0) {
		cn_bucket_info bi;
		e = cn_obj_head_bucket(r->store, r->bucket, &bi);
	} else {
		e = cn_obj_list(r->store, r->bucket, prefix, delim, after, max_keys, &res);
	}
	if (e) {
		cn_list_result_fini(&res);
		cn_s3_error_from(r, e);
		return;
	}

	char id[65];
	cn_s3_owner_id(r, id);
	const char *owner = (!v2 || fetch_owner) ? id : NULL;
	cn_buf b, tok;
	cn_buf_init(&b);
	cn_buf_init(&tok);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "ListBucketResult", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_elem(&b, "Name", r->bucket);
	if (!e)
		e = cn_s3_xml_key(&b, "Prefix", prefix, url);
	if (v2) {
		if (!e && start_after)
			e = cn_s3_xml_key(&b, "StartAfter", start_after, url);
		if (!e && token)
			e = cn_xml_elem(&b, "ContinuationToken", token);
		if (!e && res.truncated && res.next_marker) {
			e = token_encode(res.next_marker, &tok);
			if (!e)
				e = cn_xml_elem(&b, "NextContinuationToken", tok.p);
		}
		if (!e)
			e = cn_xml_elemf(&b, "KeyCount", "%zu", res.nobjects + res.nprefixes);
	} else {
		if (!e)
			e = cn_s3_xml_key(&b, "Marker", marker ? marker : "", url);
		if (!e && delim && res.truncated && res.next_marker)
			e = cn_s3_xml_key(&b, "NextMarker", res.next_marker, url);
	}
	if (!e)
		e = cn_xml_elemf(&b, "MaxKeys", "%zu", max_keys);
	if (!e && delim)
		e = cn_s3_xml_key(&b, "Delimiter", delim, url);
	if (!e && url)
		e = cn_xml_elem(&b, "EncodingType", "url");
	if (!e)
		e = cn_xml_elem(&b, "IsTruncated", res.truncated ? "true" : "false");
	for (size_t i = 0; i < res.nobjects && !e; i++)
		e = write_contents(r, &b, &res.objects[i], url, owner);
	for (size_t i = 0; i < res.nprefixes && !e; i++) {
		e = cn_xml_open(&b, "CommonPrefixes", NULL);
		if (!e)
			e = cn_s3_xml_key(&b, "Prefix", res.prefixes[i], url);
		if (!e)
			e = cn_xml_close(&b, "CommonPrefixes");
	}
	if (!e)
		e = cn_xml_close(&b, "ListBucketResult");
	cn_list_result_fini(&res);
	cn_buf_fini(&tok);
	if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_xml(r, 200, &b);
	cn_buf_fini(&b);
}

/* --- DeleteObjects ------------------------------------------------------------------------ */

/* AWS requires an integrity header on this call: Content-MD5 or an x-amz-checksum-*
 * (given directly, or announced for a trailer). */
static bool has_integrity_header(cn_s3_req *r)
{
	if (cn_s3_header(r, "content-md5") || cn_s3_header(r, "x-amz-sdk-checksum-algorithm") ||
	    cn_s3_header(r, "x-amz-trailer"))
		return true;
	for (size_t i = 0; i < r->h->nheaders; i++) {
		cn_str n = r->h->headers[i].name;
		if (n.len > 15 && cn_str_ieq_c((cn_str){ n.p, 15 }, "x-amz-checksum-"))
			return true;
	}
	return false;
}

static cn_err delete_error(cn_buf *b, const cn_xml_node *key, const cn_xml_node *ver,
                           const char *code, const char *msg)
{
	cn_err e = cn_xml_open(b, "Error", NULL);
	if (!e)
		e = cn_xml_elem_n(b, "Key", key->text, key->text_len);
	if (!e && ver)
		e = cn_xml_elem_n(b, "VersionId", ver->text, ver->text_len);
	if (!e)
		e = cn_xml_elem(b, "Code", code);
	if (!e)
		e = cn_xml_elem(b, "Message", msg);
	if (!e)
		e = cn_xml_close(b, "Error");
	return e;
}

/* Deletes one key and appends its <Deleted> or <Error> entry. */
static cn_err delete_one(cn_s3_req *r, cn_buf *b, bool quiet, const cn_xml_node *key,
                         const cn_xml_node *ver)
{
	if (ver && !cn_obj_version_id_valid(ver->text))
		return delete_error(b, key, ver, "NoSuchVersion",
		                    "The specified version does not exist.");
	if (key->text_len == 0 || memchr(key->text, 0, key->text_len))
		return delete_error(b, key, ver, "InvalidArgument", "Invalid object name.");
	/* Without a VersionId the bucket's versioning state decides (object.h); an unknown
	 * key or version counts as deleted (AWS). */
	cn_obj_deleted d;
	memset(&d, 0, sizeof d);
	cn_err de = cn_obj_key_check(key->text, key->text_len);
	if (!de)
		de = cn_obj_delete_version(r->store, r->bucket, key->text, ver ? ver->text : NULL, &d);
	switch (de) {
	case CN_OK:
	case CN_ERR_NO_KEY:
	case CN_ERR_NO_VERSION:
		break;
	case CN_ERR_BAD_KEY:
		return delete_error(b, key, ver, "InvalidObjectName",
		                    "Object name contains unsupported characters or components.");
	case CN_ERR_KEY_TOO_LONG:
		return delete_error(b, key, ver, "KeyTooLongError", "Your key is too long.");
	case CN_ERR_NO_BUCKET:
		return delete_error(b, key, ver, "NoSuchBucket", "The specified bucket does not exist.");
	case CN_ERR_QUORUM:
		return delete_error(b, key, ver, "InsufficientWriteQuorum",
		                    "Storage resources are insufficient for the write operation.");
	case CN_ERR_BUSY:
		return delete_error(b, key, ver, "SlowDown", "Please reduce your request rate.");
	default:
		cn_log(CN_LOG_ERROR, r->reqid, "delete %s/%s: %s", r->bucket, key->text,
		       cn_err_str(de));
		return delete_error(b, key, ver, "InternalError",
		                    "We encountered an internal error. Please try again.");
	}
	if (quiet)
		return CN_OK;
	cn_err e = cn_xml_open(b, "Deleted", NULL);
	if (!e)
		e = cn_xml_elem_n(b, "Key", key->text, key->text_len);
	if (!e && ver)
		e = cn_xml_elem_n(b, "VersionId", ver->text, ver->text_len);
	if (!e && de == CN_OK && d.delete_marker) {
		/* the marker this delete created, or the marker version it removed */
		e = cn_xml_elem(b, "DeleteMarker", "true");
		if (!e)
			e = cn_xml_elem(b, "DeleteMarkerVersionId", d.version_id);
	}
	if (!e)
		e = cn_xml_close(b, "Deleted");
	return e;
}

/* Trims XML whitespace for the boolean Quiet. */
static bool text_is(const cn_xml_node *n, const char *want)
{
	const char *p = n->text;
	size_t len = n->text_len;
	while (len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++, len--;
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\n' ||
	               p[len - 1] == '\r'))
		len--;
	return strlen(want) == len && !strncasecmp(p, want, len);
}

void cn_s3_delete_objects(cn_s3_req *r)
{
	if (!has_integrity_header(r)) {
		cn_s3_error(r, CN_S3_InvalidRequest,
		            "Missing required header for this request: Content-MD5");
		return;
	}
	cn_bucket_info bi;
	cn_err e = cn_obj_head_bucket(r->store, r->bucket, &bi);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	cn_buf body;
	cn_buf_init(&body);
	e = cn_s3_read_body(r, DELETE_BODY_MAX, &body);
	if (e) {
		cn_buf_fini(&body);
		if (e == CN_ERR_TOO_LARGE)
			cn_s3_error(r, CN_S3_MaxMessageLengthExceeded, NULL);
		else
			cn_s3_error_from(r, e);
		return;
	}
	cn_xml_node *root = NULL;
	e = cn_xml_parse_max(body.p ? body.p : "", body.len, DELETE_BODY_MAX, &root);
	cn_buf_fini(&body);
	if (e) {
		if (e == CN_ERR_NOMEM)
			cn_s3_error_from(r, e);
		else
			cn_s3_error(r, CN_S3_MalformedXML, NULL);
		return;
	}

	/* Validate the whole request before deleting anything. */
	bool quiet = false, ok = !strcmp(root->name, "Delete");
	size_t nobj = 0;
	for (const cn_xml_node *n = ok ? root->child : NULL; n && ok; n = n->next) {
		if (!strcmp(n->name, "Quiet")) {
			if (text_is(n, "true"))
				quiet = true;
			else if (!text_is(n, "false"))
				ok = false;
		} else if (!strcmp(n->name, "Object")) {
			ok = cn_xml_child(n, "Key") != NULL && ++nobj <= DELETE_MAX_OBJECTS;
		}
	}
	if (!ok || nobj == 0) {
		cn_xml_free(root);
		cn_s3_error(r, CN_S3_MalformedXML, NULL);
		return;
	}

	cn_buf b;
	cn_buf_init(&b);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "DeleteResult", CN_S3_XMLNS);
	for (const cn_xml_node *n = root->child; n && !e; n = n->next) {
		if (strcmp(n->name, "Object"))
			continue;
		e = delete_one(r, &b, quiet, cn_xml_child(n, "Key"), cn_xml_child(n, "VersionId"));
	}
	if (!e)
		e = cn_xml_close(&b, "DeleteResult");
	cn_xml_free(root);
	if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_xml(r, 200, &b);
	cn_buf_fini(&b);
}
