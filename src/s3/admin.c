/* s3/admin.c: the admin API under /minio/admin/ — what `cairn admin` talks to. The router
 * (s3.c, cn_s3_handle) sends here every request for bucket "minio" with a key starting
 * "admin/", after SigV4 authentication with the root credentials (the bucket name "minio"
 * is reserved: CreateBucket refuses it, as MinIO does).
 *
 *   POST /minio/admin/v3/heal[/BUCKET[/PREFIX]]?dryRun=true|false
 *        cn_obj_heal over everything, one bucket, or one prefix of it. An unknown bucket is
 *        the S3 XML NoSuchBucket error; otherwise the answer is 200 with a close-delimited
 *        body of newline-delimited JSON (application/x-ndjson): one progress line at once,
 *        one at most every 500 ms while healing, and a last line with "done":true (plus
 *        "error" when the heal stopped on an error):
 *          {"scanned":N,"healed":N,"failed":N,"drivesHealed":N,"bytes":N,"object":"b/k"}
 *        A client that goes away stops the heal (the next progress write fails).
 *   GET  /minio/admin/v3/info
 *        cn_obj_get_state as one JSON object (application/json): deployment, layout,
 *        parity, healing counters and every drive with its state and space.
 *   anything else under /minio/admin/: 501 NotImplemented (S3 XML), as every API cairn
 *   does not implement (DESIGN.md §7); a known path with the wrong method: 405.
 *
 * JSON is built with jansson; strings that are not valid UTF-8 (drive paths may be any
 * bytes) are passed through with each byte outside printable ASCII replaced by '?'. */
#include "s3/s3_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The object layer reports about every 500 ms; lines closer than this to the previous one
 * are dropped so that a client never gets more than about two a second. */
#define HEAL_MIN_GAP_MS 450

/* A JSON string for s (never NULL but on OOM). */
static json_t *json_text(const char *s)
{
	size_t len = strlen(s);
	if (cn_utf8_valid(s, len))
		return json_stringn(s, len);
	char *t = malloc(len + 1);
	if (!t)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		t[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	t[len] = 0;
	json_t *j = json_stringn(t, len);
	free(t);
	return j;
}

static json_int_t jint(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? (json_int_t)INT64_MAX : (json_int_t)v;
}

/* Sends obj (consumed) as the whole response. */
static void send_json(cn_s3_req *r, int status, json_t *obj)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(obj);
	if (!text) {
		cn_s3_error(r, CN_S3_InternalError, "Out of memory building the JSON answer.");
		return;
	}
	cn_http_resp_start(r->x, status);
	cn_s3_send_reply_headers(r);
	cn_http_resp_header(r->x, "Content-Type", "application/json");
	cn_http_resp_send(r->x, text, strlen(text));
	free(text);
}

/* ---- info ---------------------------------------------------------------------------- */

static void admin_info(cn_s3_req *r)
{
	cn_obj_state st;
	cn_err e = cn_obj_get_state(r->store, &st);
	if (e) {
		cn_s3_error_from(r, e);
		return;
	}
	json_t *drives = json_array();
	size_t online = 0;
	for (size_t i = 0; drives && i < st.ndrives; i++) {
		const cn_obj_drive_state *d = &st.drives[i];
		online += d->online;
		json_t *o = json_object();
		if (!o || json_array_append_new(drives, o)) {
			json_decref(drives);
			drives = NULL;
			break;
		}
		json_object_set_new(o, "endpoint", json_text(d->endpoint));
		json_object_set_new(o, "pool", json_integer(d->pool));
		json_object_set_new(o, "set", json_integer(d->set));
		json_object_set_new(o, "slot", json_integer(d->slot));
		json_object_set_new(o, "state", json_string(d->online      ? "online"
		                                            : d->suspended ? "suspended"
		                                                           : "offline"));
		json_object_set_new(o, "totalSpace", json_integer(jint(d->total)));
		json_object_set_new(o, "freeSpace", json_integer(jint(d->free)));
		json_object_set_new(o, "usedSpace",
		                    json_integer(jint(d->total > d->free ? d->total - d->free : 0)));
	}
	json_t *root = drives ? json_object() : NULL;
	if (root) {
		json_object_set_new(root, "deploymentID", json_text(st.deployment));
		json_object_set_new(root, "backendType", json_string(st.ndrives > 1 ? "Erasure" : "FS"));
		json_object_set_new(root, "pools", json_integer(st.npools));
		json_object_set_new(root, "sets", json_integer(st.nsets));
		json_object_set_new(root, "setDriveCount", json_integer(st.set_size));
		json_object_set_new(root, "standardSCParity", json_integer(st.parity_standard));
		json_object_set_new(root, "rrSCParity", json_integer(st.parity_rrs));
		json_object_set_new(root, "onlineDrives", json_integer(jint(online)));
		json_object_set_new(root, "offlineDrives", json_integer(jint(st.ndrives - online)));
		json_t *heal = json_object();
		if (heal) {
			json_object_set_new(heal, "queued", json_integer(jint(st.heal_queued)));
			json_object_set_new(heal, "done", json_integer(jint(st.heal_done)));
			json_t *scan = json_object();
			if (scan) { /* the background scanner: the running scan so far, else the last */
				char t[25];
				json_object_set_new(scan, "running", json_boolean(st.scan_running));
				json_object_set_new(scan, "scans", json_integer(jint(st.scans)));
				if (st.scan_started_ms) {
					cn_time_iso8601(st.scan_started_ms, t);
					json_object_set_new(scan, "started", json_string(t));
				}
				if (st.scan_finished_ms) {
					cn_time_iso8601(st.scan_finished_ms, t);
					json_object_set_new(scan, "finished", json_string(t));
				}
				json_object_set_new(scan, "scanned", json_integer(jint(st.scan.scanned)));
				json_object_set_new(scan, "healed", json_integer(jint(st.scan.healed)));
				json_object_set_new(scan, "failed", json_integer(jint(st.scan.failed)));
				json_object_set_new(scan, "drivesHealed", json_integer(jint(st.scan.drives_healed)));
				json_object_set_new(scan, "bytes", json_integer(st.scan.bytes));
				json_object_set_new(scan, "orphans", json_integer(jint(st.scan.orphans)));
				json_object_set_new(scan, "dangling", json_integer(jint(st.scan.dangling)));
				json_object_set_new(scan, "danglingBuckets", json_integer(jint(st.scan.dangling_buckets)));
				json_object_set_new(scan, "maxSleepMs", json_integer(st.scan_max_sleep_ms));
			}
			json_object_set_new(heal, "scan", scan);
		}
		json_object_set_new(root, "heal", heal);
		json_t *rc = json_object();
		if (rc) { /* the record caches of all sets */
			json_object_set_new(rc, "budget", json_integer(jint(st.cache_budget)));
			json_object_set_new(rc, "bytes", json_integer(jint(st.cache_bytes)));
			json_object_set_new(rc, "hits", json_integer(jint(st.cache_hits)));
			json_object_set_new(rc, "misses", json_integer(jint(st.cache_misses)));
		}
		json_object_set_new(root, "recordCache", rc);
		json_object_set_new(root, "drives", drives);
	} else {
		json_decref(drives);
	}
	free(st.drives);
	send_json(r, 200, root);
}

/* ---- heal ---------------------------------------------------------------------------- */

typedef struct heal_stream {
	cn_s3_req *r;
	int64_t last_ms;   /* monotonic time of the last line sent */
	bool broken;       /* a write failed: the client is gone */
} heal_stream;

static json_t *totals_json(const cn_obj_heal_totals *t)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "scanned", jint(t->scanned), "healed",
	                 jint(t->healed), "failed", jint(t->failed), "drivesHealed",
	                 jint(t->drives_healed), "bytes", (json_int_t)(t->bytes > 0 ? t->bytes : 0),
	                 "orphans", jint(t->orphans), "dangling", jint(t->dangling), "danglingBuckets",
	                 jint(t->dangling_buckets));
}

/* Sends one ndjson line (obj consumed). */
static void send_line(heal_stream *hs, json_t *obj)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(obj);
	if (!text)
		return; /* out of memory: skip this progress line, the next may fit */
	size_t len = strlen(text);
	char *line = realloc(text, len + 2);
	if (!line) {
		free(text);
		return;
	}
	line[len] = '\n';
	line[len + 1] = 0;
	if (cn_http_resp_body(hs->r->x, line, len + 1))
		hs->broken = true;
	free(line);
	hs->last_ms = cn_mono_ms();
}

static bool heal_progress(void *ctx, const cn_obj_heal_totals *t, const char *bucket,
                          const char *key, bool last)
{
	heal_stream *hs = ctx;
	if (hs->broken)
		return false;
	if (last || cn_mono_ms() - hs->last_ms < HEAL_MIN_GAP_MS)
		return true; /* the final line is sent by admin_heal with the verdict */
	json_t *o = totals_json(t);
	if (o) {
		size_t bl = strlen(bucket), kl = strlen(key);
		char *obj = malloc(bl + kl + 2);
		if (obj) {
			memcpy(obj, bucket, bl);
			obj[bl] = '/';
			memcpy(obj + bl + 1, key, kl + 1);
			json_object_set_new(o, "object", json_text(obj));
			free(obj);
		}
	}
	send_line(hs, o);
	return !hs->broken;
}

static void admin_heal(cn_s3_req *r, const char *rest)
{
	/* rest: "" | "/" | "/BUCKET" | "/BUCKET/" | "/BUCKET/PREFIX" */
	const char *bucket = NULL, *prefix = NULL;
	if (rest[0] == '/' && rest[1]) {
		const char *b = rest + 1, *slash = strchr(b, '/');
		size_t bl = slash ? (size_t)(slash - b) : strlen(b);
		bucket = cn_s3_strndup(r, b, bl);
		if (slash && slash[1])
			prefix = slash + 1;
	}
	bool dry_run = false;
	const char *dr = cn_s3_query(r, "dryRun");
	if (dr) {
		if (!strcmp(dr, "true") || !dr[0])
			dry_run = true;
		else if (strcmp(dr, "false")) {
			cn_s3_error(r, CN_S3_InvalidArgument, "dryRun must be true or false.");
			return;
		}
	}
	if (bucket) {
		/* errors name the bucket healed, not "minio" */
		r->bucket = (char *)bucket;
		r->key = prefix ? (char *)prefix : "";
		if (!cn_obj_bucket_name_valid(bucket)) {
			cn_s3_error(r, CN_S3_InvalidBucketName, NULL);
			return;
		}
		cn_err e = cn_obj_head_bucket(r->store, bucket, NULL);
		if (e) {
			cn_s3_error_from(r, e);
			return;
		}
	}
	cn_log(CN_LOG_INFO, r->reqid, "admin: heal%s of %s%s%s", dry_run ? " (dry run)" : "",
	       bucket ? bucket : "every bucket", prefix ? "/" : "", prefix ? prefix : "");
	cn_http_resp_start(r->x, 200);
	cn_s3_send_reply_headers(r);
	cn_http_resp_header(r->x, "Content-Type", "application/x-ndjson");
	cn_http_resp_header(r->x, "Cache-Control", "no-store");
	if (cn_http_resp_send_head(r->x, -1)) {
		cn_http_resp_close(r->x);
		return;
	}
	heal_stream hs = { .r = r };
	cn_obj_heal_totals zero;
	memset(&zero, 0, sizeof zero);
	send_line(&hs, totals_json(&zero)); /* the client sees the 200 at once */
	cn_obj_heal_totals t;
	cn_err e = hs.broken ? CN_ERR_ABORTED
	                     : cn_obj_heal(r->store, bucket, prefix, dry_run, heal_progress, &hs, &t);
	if (hs.broken) {
		cn_log(CN_LOG_INFO, r->reqid, "admin: heal stopped: the client went away");
		return;
	}
	json_t *o = totals_json(&t);
	if (o) {
		json_object_set_new(o, "done", json_true());
		if (e)
			json_object_set_new(o, "error", json_string(cn_err_str(e)));
	}
	send_line(&hs, o);
	cn_log(CN_LOG_INFO, r->reqid,
	       "admin: heal done: %llu scanned, %llu healed, %llu failed, %llu drive copies, %lld bytes, "
	       "%llu orphan data folders, %llu dangling versions, %llu dangling bucket folders%s%s",
	       (unsigned long long)t.scanned, (unsigned long long)t.healed,
	       (unsigned long long)t.failed, (unsigned long long)t.drives_healed, (long long)t.bytes,
	       (unsigned long long)t.orphans, (unsigned long long)t.dangling,
	       (unsigned long long)t.dangling_buckets,
	       e ? ": " : "", e ? cn_err_str(e) : "");
}

/* ---- router -------------------------------------------------------------------------- */

void cn_s3_admin(cn_s3_req *r)
{
	const char *path = r->key + 6; /* after "admin/" */
	bool get = cn_str_eq_c(r->h->method, "GET"), post = cn_str_eq_c(r->h->method, "POST");
	if (!strncmp(path, "v3/heal", 7) && (path[7] == 0 || path[7] == '/')) {
		if (post)
			admin_heal(r, path + 7);
		else
			cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		return;
	}
	if (!strcmp(path, "v3/info")) {
		if (get)
			admin_info(r);
		else
			cn_s3_error(r, CN_S3_MethodNotAllowed, NULL);
		return;
	}
	cn_s3_error(r, CN_S3_NotImplemented, "This admin API is not implemented.");
}
