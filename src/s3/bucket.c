/* bucket.c: the bucket-level S3 handlers — ListBuckets, CreateBucket, HeadBucket,
 * DeleteBucket, GetBucketLocation — and the ACL calls for buckets and objects. cairn is
 * single-tenant: every bucket and object is owned by the root user, whose canonical ID is
 * the hex SHA-256 of the root access key (stable across restarts), display name "cairn".
 * ACLs are therefore fixed: GET answers "owner has FULL_CONTROL", PUT accepts only that
 * same policy (canned "private", or a body granting exactly the owner FULL_CONTROL) and
 * answers 501 NotImplemented for anything else, never a silent success (DESIGN.md §7).
 * Storage calls go to the object layer (src/object/object.h); every reply is written with
 * the XML writer of src/s3/xml.h. */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_int.h"

#define SMALL_BODY_MAX (64 * 1024)

static const char *server_region(const cn_s3_req *r)
{
	const char *reg = r->srv->cfg.region;
	return reg && reg[0] ? reg : "us-east-1";
}

static void send_xml_or_fail(cn_s3_req *r, int status, cn_buf *b, cn_err e)
{
	if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_xml(r, status, b);
	cn_buf_fini(b);
}

static cn_err write_owner(cn_buf *b, const char *tag, const char *id)
{
	cn_err e = cn_xml_open(b, tag, NULL);
	if (!e)
		e = cn_xml_elem(b, "ID", id);
	if (!e)
		e = cn_xml_elem(b, "DisplayName", "cairn");
	if (!e)
		e = cn_xml_close(b, tag);
	return e;
}

void cn_s3_list_buckets(cn_s3_req *r)
{
	cn_bucket_info *bk = NULL;
	size_t n = 0;
	cn_err e = cn_obj_list_buckets(r->store, &bk, &n);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	char id[65];
	cn_s3_owner_id(r, id);
	cn_buf b;
	cn_buf_init(&b);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "ListAllMyBucketsResult", CN_S3_XMLNS);
	if (!e)
		e = write_owner(&b, "Owner", id);
	if (!e)
		e = cn_xml_open(&b, "Buckets", NULL);
	for (size_t i = 0; i < n && !e; i++) {
		char when[25];
		cn_time_iso8601(bk[i].created_ms, when);
		e = cn_xml_open(&b, "Bucket", NULL);
		if (!e)
			e = cn_xml_elem(&b, "Name", bk[i].name);
		if (!e)
			e = cn_xml_elem(&b, "CreationDate", when);
		if (!e)
			e = cn_xml_close(&b, "Bucket");
	}
	if (!e)
		e = cn_xml_close(&b, "Buckets");
	if (!e)
		e = cn_xml_close(&b, "ListAllMyBucketsResult");
	free(bk);
	send_xml_or_fail(r, 200, &b, e);
}

/* Reads and parses an optional small XML body. *root stays NULL for an empty body.
 * On failure the error reply has been sent and false is returned. */
static bool read_xml_body(cn_s3_req *r, cn_xml_node **root)
{
	*root = NULL;
	if (r->body_len == 0)
		return true;
	cn_buf b;
	cn_buf_init(&b);
	cn_err e = cn_s3_read_body(r, SMALL_BODY_MAX, &b);
	if (e == CN_ERR_TOO_LARGE) {
		cn_s3_error(r, CN_S3_MalformedXML, NULL);
	} else if (e) {
		cn_s3_error_from(r, e);
	} else if (b.len > 0) {
		e = cn_xml_parse(b.p, b.len, root);
		if (e == CN_ERR_NOMEM)
			cn_s3_error_from(r, e);
		else if (e)
			cn_s3_error(r, CN_S3_MalformedXML, NULL);
	}
	cn_buf_fini(&b);
	return e == CN_OK;
}

static bool is_true(const char *v)
{
	return v && !strcasecmp(v, "true");
}

void cn_s3_create_bucket(cn_s3_req *r)
{
	/* "minio" is reserved for the admin API (/minio/admin/..., /minio/health/...), as in MinIO. */
	if (!cn_obj_bucket_name_valid(r->bucket) || !strcmp(r->bucket, "minio")) {
		cn_s3_error(r, CN_S3_InvalidBucketName, NULL);
		return;
	}
	if (is_true(cn_s3_header(r, "x-amz-bucket-object-lock-enabled"))) {
		cn_s3_error(r, CN_S3_NotImplemented, "Object lock is not implemented.");
		return;
	}
	cn_xml_node *root = NULL;
	if (!read_xml_body(r, &root))
		return;
	if (root) {
		const cn_xml_node *lc = cn_xml_child(root, "LocationConstraint");
		if (strcmp(root->name, "CreateBucketConfiguration")) {
			cn_s3_error(r, CN_S3_MalformedXML, NULL);
			cn_xml_free(root);
			return;
		}
		/* A region other than the server's: AWS's answer at a regional endpoint. */
		if (lc && lc->text_len && strcmp(lc->text, server_region(r))) {
			size_t cap = 192;
			char *msg = cn_s3_alloc(r, cap);
			snprintf(msg, cap, "The %.64s location constraint is incompatible for the region "
			         "specific endpoint this request was sent to.", lc->text);
			cn_s3_error(r, CN_S3_IllegalLocationConstraintException, msg);
			cn_xml_free(root);
			return;
		}
		cn_xml_free(root);
	}
	cn_err e = cn_obj_make_bucket(r->store, r->bucket);
	/* AWS answers 200 to creating a bucket its caller already owns in us-east-1 (that
	 * region's legacy behaviour, documented for CreateBucket) and 409
	 * BucketAlreadyOwnedByYou in every other region. cairn has one owner, so an existing
	 * bucket is always the caller's. */
	if (e == CN_ERR_BUCKET_EXISTS && !strcmp(server_region(r), "us-east-1"))
		e = CN_OK;
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	cn_s3_resp_start(r, 200);
	cn_http_resp_headerf(r->x, "Location", "/%s", r->bucket);
	cn_http_resp_send(r->x, NULL, 0);
}

void cn_s3_head_bucket(cn_s3_req *r)
{
	cn_bucket_info bi;
	cn_err e = cn_obj_head_bucket(r->store, r->bucket, &bi);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	cn_s3_resp_start(r, 200);
	cn_http_resp_header(r->x, "x-amz-bucket-region", server_region(r));
	cn_http_resp_send(r->x, NULL, 0);
}

void cn_s3_delete_bucket(cn_s3_req *r)
{
	cn_err e = cn_obj_delete_bucket(r->store, r->bucket);
	if (e == CN_ERR_BUCKET_NOT_EMPTY)
		cn_s3_error(r, CN_S3_BucketNotEmpty, NULL);
	else if (e)
		cn_s3_error_from(r, e);
	else
		cn_s3_send_empty(r, 204);
}

void cn_s3_get_bucket_location(cn_s3_req *r)
{
	cn_bucket_info bi;
	cn_err e = cn_obj_head_bucket(r->store, r->bucket, &bi);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	const char *reg = server_region(r);
	cn_buf b;
	cn_buf_init(&b);
	e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "LocationConstraint", CN_S3_XMLNS);
	if (!e && strcmp(reg, "us-east-1"))
		e = cn_xml_escape(&b, reg, strlen(reg));
	if (!e)
		e = cn_xml_close(&b, "LocationConstraint");
	send_xml_or_fail(r, 200, &b, e);
}

/* The bucket, and for an object ACL the key, must exist. Sends the error when not. */
static bool acl_target_exists(cn_s3_req *r)
{
	cn_bucket_info bi;
	cn_err e = cn_obj_head_bucket(r->store, r->bucket, &bi);
	if (!e && r->key[0]) {
		cn_obj_info oi;
		cn_obj_info_init(&oi);
		e = cn_obj_stat(r->store, r->bucket, r->key, &oi);
		cn_obj_info_fini(&oi);
	}
	if (e)
		cn_s3_error_from(r, e);
	return e == CN_OK;
}

void cn_s3_get_acl(cn_s3_req *r)
{
	if (!acl_target_exists(r))
		return;
	char id[65];
	cn_s3_owner_id(r, id);
	cn_buf b;
	cn_buf_init(&b);
	cn_err e = cn_xml_decl(&b);
	if (!e)
		e = cn_xml_open(&b, "AccessControlPolicy", CN_S3_XMLNS);
	if (!e)
		e = write_owner(&b, "Owner", id);
	if (!e)
		e = cn_xml_open(&b, "AccessControlList", NULL);
	if (!e)
		e = cn_xml_open(&b, "Grant", NULL);
	if (!e)
		e = cn_buf_puts(&b, "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
		                    " xsi:type=\"CanonicalUser\">");
	if (!e)
		e = cn_xml_elem(&b, "ID", id);
	if (!e)
		e = cn_xml_elem(&b, "DisplayName", "cairn");
	if (!e)
		e = cn_xml_close(&b, "Grantee");
	if (!e)
		e = cn_xml_elem(&b, "Permission", "FULL_CONTROL");
	if (!e)
		e = cn_xml_close(&b, "Grant");
	if (!e)
		e = cn_xml_close(&b, "AccessControlList");
	if (!e)
		e = cn_xml_close(&b, "AccessControlPolicy");
	send_xml_or_fail(r, 200, &b, e);
}

/* Checks an AccessControlPolicy body: CN_S3_OK when it grants exactly the owner
 * FULL_CONTROL (one or more identical grants), NotImplemented for any other grant,
 * MalformedXML when the shape is wrong. */
static cn_s3_code check_acl_body(const cn_xml_node *root, const char *id)
{
	if (strcmp(root->name, "AccessControlPolicy"))
		return CN_S3_MalformedXML;
	const cn_xml_node *acl = cn_xml_child(root, "AccessControlList");
	if (!acl)
		return CN_S3_MalformedXML;
	const cn_xml_node *owner = cn_xml_child(root, "Owner");
	const cn_xml_node *oid = cn_xml_child(owner, "ID");
	if (owner && (!oid || strcmp(oid->text, id)))
		return CN_S3_AccessDenied;
	int ngrants = 0;
	for (const cn_xml_node *g = acl->child; g; g = g->next) {
		if (strcmp(g->name, "Grant"))
			continue;
		const cn_xml_node *grantee = cn_xml_child(g, "Grantee");
		const cn_xml_node *perm = cn_xml_child(g, "Permission");
		if (!grantee || !perm)
			return CN_S3_MalformedXML;
		const cn_xml_node *gid = cn_xml_child(grantee, "ID");
		if (!gid || strcmp(gid->text, id) || strcmp(perm->text, "FULL_CONTROL"))
			return CN_S3_NotImplemented;
		ngrants++;
	}
	return ngrants ? CN_S3_OK : CN_S3_NotImplemented;
}

void cn_s3_put_acl(cn_s3_req *r)
{
	if (!acl_target_exists(r))
		return;
	static const char *const grant_headers[] = {
		"x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp",
		"x-amz-grant-write-acp", "x-amz-grant-full-control",
	};
	for (size_t i = 0; i < sizeof grant_headers / sizeof grant_headers[0]; i++) {
		if (cn_s3_header(r, grant_headers[i])) {
			cn_s3_error(r, CN_S3_NotImplemented, "Only the private ACL is supported.");
			return;
		}
	}
	const char *canned = cn_s3_header(r, "x-amz-acl");
	if (canned) {
		if (strcmp(canned, "private"))
			cn_s3_error(r, CN_S3_NotImplemented, "Only the private ACL is supported.");
		else
			cn_s3_send_empty(r, 200);
		return;
	}
	cn_xml_node *root = NULL;
	if (!read_xml_body(r, &root))
		return;
	if (!root) {
		cn_s3_error(r, CN_S3_MalformedXML, NULL);
		return;
	}
	char id[65];
	cn_s3_owner_id(r, id);
	cn_s3_code c = check_acl_body(root, id);
	cn_xml_free(root);
	if (c == CN_S3_NotImplemented)
		cn_s3_error(r, c, "Only the private ACL is supported.");
	else if (c)
		cn_s3_error(r, c, NULL);
	else
		cn_s3_send_empty(r, 200);
}
