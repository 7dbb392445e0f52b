/* s3/versioning.c: bucket versioning at the S3 edge — PutBucketVersioning and
 * GetBucketVersioning (GET/PUT ?versioning), ListObjectVersions (GET ?versions), and the
 * reply headers that name versions and delete markers (x-amz-version-id,
 * x-amz-delete-marker) for the object handlers of src/s3/object.c, list.c, multipart.c and
 * tagging.c. The versioning rules themselves (null version, delete markers, promotion of the
 * next newest version) live in the object layer (object.h "versioning"); this file checks
 * the request parameters as AWS S3 does and writes the documents.
 *
 * ListObjectVersions writes Version and DeleteMarker entries in the one order the object
 * layer returns them (key order, each key's versions newest first): clients that merge the
 * two lists, and those that read the document in order, both see AWS's sequence. With
 * encoding-type=url, Key, Prefix, Delimiter, KeyMarker, NextKeyMarker and CommonPrefixes
 * are percent-encoded (as list.c does for ListObjects). */
#include "s3/s3_int.h"

#include <limits.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define VERSIONING_BODY_MAX (64 * 1024)
#define LIST_VERSIONS_MAX 1000

/* ---- reply headers ------------------------------------------------------------------- */

void cn_s3_reply_version_id(cn_s3_req *r, const char *vid)
{
	if (vid && vid[0])
		cn_s3_reply_header(r, "x-amz-version-id", vid);
}

void cn_s3_reply_delete_marker(cn_s3_req *r, const cn_obj_info *info, bool last_modified)
{
	cn_s3_reply_header(r, "x-amz-delete-marker", "true");
	cn_s3_reply_version_id(r, info->version_id[0] ? info->version_id : "null");
	if (last_modified) {
		char lm[30];
		cn_time_http(info->mtime_ms, lm);
		cn_s3_reply_header(r, "Last-Modified", lm);
	}
}

/* ---- Get/PutBucketVersioning ------------------------------------------------------------ */

void cn_s3_get_bucket_versioning(cn_s3_req *r)
{
	cn_versioning v;
	cn_err e = cn_obj_get_versioning(r->store, r->bucket, &v);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	cn_buf b;
	cn_buf_init(&b);
	e = cn_xml_decl(&b);
	if (!e && v == CN_VERSIONING_OFF) {
		/* never enabled: the empty document, as AWS */
		e = cn_buf_puts(&b, "<VersioningConfiguration xmlns=\"" CN_S3_XMLNS "\"/>");
	} else {
		if (!e)
			e = cn_xml_open(&b, "VersioningConfiguration", CN_S3_XMLNS);
		if (!e)
			e = cn_xml_elem(&b, "Status", v == CN_VERSIONING_ENABLED ? "Enabled" : "Suspended");
		if (!e)
			e = cn_xml_close(&b, "VersioningConfiguration");
	}
	if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_xml(r, 200, &b);
	cn_buf_fini(&b);
}

/* Whether the element's text, without surrounding XML whitespace, is word. */
static bool text_is(const cn_xml_node *n, const char *word)
{
	const char *p = n->text;
	size_t len = n->text_len;
	while (len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++, len--;
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\n' ||
	               p[len - 1] == '\r'))
		len--;
	return len == strlen(word) && !memcmp(p, word, len);
}

cn_err cn_s3_versioning_parse(const char *p, size_t len, cn_versioning *v, cn_s3_code *code,
                              const char **msg)
{
	cn_xml_node *root = NULL;

	*code = CN_S3_OK;
	*msg = NULL;
	cn_err e = cn_xml_parse(p ? p : "", len, &root);
	if (e == CN_ERR_NOMEM)
		return e;
	if (e) {
		*code = CN_S3_MalformedXML;
		return CN_ERR_INVALID;
	}
	/* MinIO's rule (AWS's schema): Status must be Enabled or Suspended; MfaDelete, when
	 * given, Enabled or Disabled, and cairn has no MFA: Enabled is refused. */
	const cn_xml_node *st = cn_xml_child(root, "Status");
	const cn_xml_node *mfa = cn_xml_child(root, "MfaDelete");
	bool enabled = st && text_is(st, "Enabled");
	bool mfa_on = mfa && text_is(mfa, "Enabled");
	bool ok = !strcmp(root->name, "VersioningConfiguration") && st &&
	          (enabled || text_is(st, "Suspended")) &&
	          (!mfa || mfa_on || text_is(mfa, "Disabled"));
	cn_xml_free(root);
	if (!ok) {
		*code = CN_S3_MalformedXML;
		return CN_ERR_INVALID;
	}
	if (mfa_on) {
		*code = CN_S3_NotImplemented;
		*msg = "MFA Delete is not supported by cairn.";
		return CN_ERR_INVALID;
	}
	*v = enabled ? CN_VERSIONING_ENABLED : CN_VERSIONING_SUSPENDED;
	return CN_OK;
}

void cn_s3_put_bucket_versioning(cn_s3_req *r)
{
	cn_bucket_info bi;
	cn_err e = cn_obj_head_bucket(r->store, r->bucket, &bi);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	cn_buf body;
	cn_buf_init(&body);
	e = cn_s3_read_body(r, VERSIONING_BODY_MAX, &body);
	if (e) {
		cn_buf_fini(&body);
		if (e == CN_ERR_TOO_LARGE)
			cn_s3_error(r, CN_S3_MalformedXML, NULL);
		else
			cn_s3_error_from(r, e);
		return;
	}
	cn_versioning v;
	cn_s3_code code;
	const char *msg;
	e = cn_s3_versioning_parse(body.p, body.len, &v, &code, &msg);
	cn_buf_fini(&body);
	if (e == CN_ERR_INVALID) {
		cn_s3_error(r, code, msg);
		return;
	}
	if (!e)
		e = cn_obj_set_versioning(r->store, r->bucket, v);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	cn_log(CN_LOG_INFO, r->reqid, "bucket %s: versioning %s", r->bucket,
	       v == CN_VERSIONING_ENABLED ? "Enabled" : "Suspended");
	cn_s3_send_empty(r, 200);
}

/* ---- ListObjectVersions ------------------------------------------------------------------ */

static cn_err write_entry(cn_buf *b, const cn_version_entry *v, bool url, const char *owner)
{
	const char *tag = v->delete_marker ? "DeleteMarker" : "Version";
	char when[25];
	cn_time_iso8601(v->mtime_ms, when);
	cn_err e = cn_xml_open(b, tag, NULL);
	if (!e)
		e = cn_s3_xml_key(b, "Key", v->key, url);
	if (!e)
		e = cn_xml_elem(b, "VersionId", v->version_id[0] ? v->version_id : "null");
	if (!e)
		e = cn_xml_elem(b, "IsLatest", v->is_latest ? "true" : "false");
	if (!e)
		e = cn_xml_elem(b, "LastModified", when);
	if (!v->delete_marker) {
		if (!e)
			e = cn_xml_elemf(b, "ETag", "\"%s\"", v->etag);
		if (!e)
			e = cn_xml_elemf(b, "Size", "%lld", (long long)v->size);
		if (!e)
			e = cn_xml_elem(b, "StorageClass",
			                v->storage_class[0] ? v->storage_class : "STANDARD");
	}
	if (!e)
		e = cn_xml_open(b, "Owner", NULL);
	if (!e)
		e = cn_xml_elem(b, "ID", owner);
	if (!e)
		e = cn_xml_elem(b, "DisplayName", "cairn");
	if (!e)
		e = cn_xml_close(b, "Owner");
	if (!e)
		e = cn_xml_close(b, tag);
	return e;
}

void cn_s3_list_object_versions(cn_s3_req *r)
{
	const char *prefix = cn_s3_query(r, "prefix");
	const char *delim = cn_s3_query(r, "delimiter");
	const char *enc = cn_s3_query(r, "encoding-type");
	const char *key_marker = cn_s3_query(r, "key-marker");
	const char *vid_marker = cn_s3_query(r, "version-id-marker");
	if (!prefix)
		prefix = "";
	if (delim && !delim[0])
		delim = NULL;
	if (key_marker && !key_marker[0])
		key_marker = NULL;
	size_t max_keys;
	if (!cn_s3_parse_max_keys(cn_s3_query(r, "max-keys"), LIST_VERSIONS_MAX, &max_keys)) {
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
	if (vid_marker) {
		if (!key_marker) {
			cn_s3_error(r, CN_S3_InvalidArgument,
			            "A version-id marker cannot be specified without a key marker.");
			return;
		}
		if (!vid_marker[0]) {
			vid_marker = NULL;
		} else if (!cn_obj_version_id_valid(vid_marker)) {
			cn_s3_error(r, CN_S3_InvalidArgument, "Invalid version id specified");
			return;
		}
	}

	cn_version_list res;
	memset(&res, 0, sizeof res);
	cn_err e = cn_obj_list_versions(r->store, r->bucket, prefix, delim, key_marker, vid_marker,
	                                max_keys, &res);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}

	char owner[65];
	cn_s3_owner_id(r, owner);
	cn_buf b;
	cn_buf_init(&b);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "ListVersionsResult", CN_S3_XMLNS);
	if (!e)
		e = cn_xml_elem(&b, "Name", r->bucket);
	if (!e)
		e = cn_s3_xml_key(&b, "Prefix", prefix, url);
	if (!e)
		e = cn_s3_xml_key(&b, "KeyMarker", key_marker ? key_marker : "", url);
	if (!e)
		e = cn_xml_elem(&b, "VersionIdMarker", vid_marker ? vid_marker : "");
	if (!e && res.truncated && res.next_key_marker)
		e = cn_s3_xml_key(&b, "NextKeyMarker", res.next_key_marker, url);
	if (!e && res.truncated && res.next_version_id_marker[0])
		e = cn_xml_elem(&b, "NextVersionIdMarker", res.next_version_id_marker);
	if (!e)
		e = cn_xml_elemf(&b, "MaxKeys", "%zu", max_keys);
	if (!e && delim)
		e = cn_s3_xml_key(&b, "Delimiter", delim, url);
	if (!e && url)
		e = cn_xml_elem(&b, "EncodingType", "url");
	if (!e)
		e = cn_xml_elem(&b, "IsTruncated", res.truncated ? "true" : "false");
	for (size_t i = 0; i < res.nversions && !e; i++)
		e = write_entry(&b, &res.versions[i], url, owner);
	for (size_t i = 0; i < res.nprefixes && !e; i++) {
		e = cn_xml_open(&b, "CommonPrefixes", NULL);
		if (!e)
			e = cn_s3_xml_key(&b, "Prefix", res.prefixes[i], url);
		if (!e)
			e = cn_xml_close(&b, "CommonPrefixes");
	}
	if (!e)
		e = cn_xml_close(&b, "ListVersionsResult");
	cn_version_list_fini(&res);
	if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_xml(r, 200, &b);
	cn_buf_fini(&b);
}
