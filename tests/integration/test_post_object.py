"""POST object upload (S3 PostObject: an HTML form posted to the bucket URL), with forms
built by boto3's generate_presigned_post (SigV4 policy) and by hand (SigV2, bad policies,
malformed bodies). Every stored object is read back and compared."""
import base64
import datetime
import hashlib
import hmac
import json

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS, REGION, SECRET, err_code, rand_bytes, raw, signing_key

BOUNDARY = "----cairnFormBoundary7MA4YWxkTrZu0gW"


def form_body(fields, file_bytes, filename="upload.bin", file_type=None, boundary=BOUNDARY,
              after=()):
    """multipart/form-data: the fields in order, then the file part, then `after` fields."""
    out = []
    for name, value in fields:
        if isinstance(value, str):
            value = value.encode()
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
                   + value + b"\r\n")
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
    if file_type:
        head += f"Content-Type: {file_type}\r\n"
    out.append(head.encode() + b"\r\n" + file_bytes + b"\r\n")
    for name, value in after:
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
                   .encode())
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out)


def post(server, bucket, body, boundary=BOUNDARY, content_type=None):
    ct = content_type or f"multipart/form-data; boundary={boundary}"
    return raw(server, "POST", f"/{bucket}", body=body, headers={"Content-Type": ct}, sign=False)


def presigned(s3, bucket, key, fields=None, conditions=None, expires=300):
    p = s3.generate_presigned_post(bucket, key, Fields=fields, Conditions=conditions,
                                   ExpiresIn=expires)
    return list(p["fields"].items())


def v4_form(bucket, conditions, expiration=None, extra=(), secret=SECRET):
    """A SigV4 policy signed by hand (for expirations and conditions boto3 will not make)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    date8, amzdate = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")
    cred = f"{ACCESS}/{date8}/{REGION}/s3/aws4_request"
    exp = expiration or (now + datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    conds = list(conditions) + [{"bucket": bucket}, {"x-amz-algorithm": "AWS4-HMAC-SHA256"},
                                {"x-amz-credential": cred}, {"x-amz-date": amzdate}]
    policy = base64.b64encode(json.dumps({"expiration": exp, "conditions": conds}).encode()).decode()

    sig = hmac.new(signing_key(secret, date8), policy.encode(), hashlib.sha256).hexdigest()
    return [("bucket", bucket), *extra, ("x-amz-algorithm", "AWS4-HMAC-SHA256"),
            ("x-amz-credential", cred), ("x-amz-date", amzdate), ("policy", policy),
            ("x-amz-signature", sig)]


def test_presigned_post_round_trip(s3, bucket, server):
    data = rand_bytes(300 * 1024 + 7)
    fields = presigned(s3, bucket, "forms/one.bin")
    r = post(server, bucket, form_body(fields, data))
    assert r.status == 204, r
    assert r.headers["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    assert r.headers["Location"] == f"http://127.0.0.1:{server.port}/{bucket}/forms/one.bin"
    got = s3.get_object(Bucket=bucket, Key="forms/one.bin")
    assert got["Body"].read() == data
    assert got["ContentType"] == "binary/octet-stream"


@pytest.mark.parametrize("size", [0, 1, 65536, 2 * 1024 * 1024 + 3])
def test_sizes_and_delimiter_lookalikes(s3, bucket, server, size):
    # File content that holds most of the delimiter must come back byte-exact.
    trap = f"\r\n--{BOUNDARY[:-1]}".encode()
    data = (trap + rand_bytes(size))[:size]
    fields = presigned(s3, bucket, f"sizes/{size}")
    assert post(server, bucket, form_body(fields, data)).status == 204
    assert s3.get_object(Bucket=bucket, Key=f"sizes/{size}")["Body"].read() == data


def test_filename_substitution_metadata_and_status_201(s3, bucket, server):
    data = b"<html>hello</html>"
    fields = presigned(
        s3, bucket, "uploads/${filename}",
        fields={"Content-Type": "text/html", "x-amz-meta-owner": "form",
                "success_action_status": "201", "Cache-Control": "max-age=60"},
        conditions=[["starts-with", "$key", "uploads/"], {"Content-Type": "text/html"},
                    {"x-amz-meta-owner": "form"}, {"success_action_status": "201"},
                    {"Cache-Control": "max-age=60"}])
    r = post(server, bucket, form_body(fields, data, filename="page.html"))
    assert r.status == 201, r
    assert b"<Key>uploads/page.html</Key>" in r.body and f"<Bucket>{bucket}</Bucket>".encode() in r.body
    assert f"<Location>http://127.0.0.1:{server.port}/{bucket}/uploads/page.html</Location>".encode() in r.body
    h = s3.head_object(Bucket=bucket, Key="uploads/page.html")
    assert h["ContentType"] == "text/html"
    assert h["Metadata"] == {"owner": "form"}
    assert h["CacheControl"] == "max-age=60"


def test_redirect_and_status_200(s3, bucket, server):
    fields = presigned(s3, bucket, "redir", fields={"success_action_redirect": "http://example.test/done?x=1"},
                       conditions=[{"success_action_redirect": "http://example.test/done?x=1"}])
    r = post(server, bucket, form_body(fields, b"abc"))
    assert r.status == 303, r
    loc = r.headers["Location"]
    assert loc.startswith("http://example.test/done?x=1&bucket=") and "&key=redir&etag=" in loc
    fields = presigned(s3, bucket, "ok200", fields={"success_action_status": "200"},
                       conditions=[{"success_action_status": "200"}])
    assert post(server, bucket, form_body(fields, b"abc")).status == 200


def test_content_length_range(s3, bucket, server):
    def cond():  # (boto3 appends to the list it is given)
        return [["content-length-range", 10, 100]]
    fields = presigned(s3, bucket, "range/ok", conditions=cond())
    assert post(server, bucket, form_body(fields, b"x" * 50)).status == 204
    for n, code in [(101, "EntityTooLarge"), (5, "EntityTooSmall")]:
        fields = presigned(s3, bucket, f"range/{n}", conditions=cond())
        r = post(server, bucket, form_body(fields, b"x" * n))
        assert (r.status, r.error()["Code"]) == (400, code), r
        with pytest.raises(ClientError) as ei:
            s3.head_object(Bucket=bucket, Key=f"range/{n}")
        assert err_code(ei.value)[1] == 404


def test_policy_violations(s3, bucket, server):
    # A condition that fails, a field no condition names, a tampered policy, an expired one.
    fields = presigned(s3, bucket, "pol/a", conditions=[["starts-with", "$key", "other/"]])
    r = post(server, bucket, form_body(fields, b"x"))
    assert r.status == 403 and r.error()["Code"] == "AccessDenied", r
    assert "Policy Condition failed" in r.error()["Message"]
    fields = presigned(s3, bucket, "pol/b") + [("x-amz-meta-sneaky", "1")]
    r = post(server, bucket, form_body(fields, b"x"))
    assert r.status == 403 and "Extra input fields: x-amz-meta-sneaky" in r.error()["Message"], r
    fields = presigned(s3, bucket, "pol/c")
    tampered = [(k, v if k != "key" else "pol/elsewhere") for k, v in fields]
    r = post(server, bucket, form_body(tampered, b"x"))
    assert r.status == 403 and "Policy Condition failed" in r.error()["Message"], r
    forged = [(k, v if k != "policy" else base64.b64encode(b'{"expiration":"2099-01-01T00:00:00Z",'
                                                             b'"conditions":[]}').decode())
              for k, v in fields]
    r = post(server, bucket, form_body(forged, b"x"))
    assert (r.status, r.error()["Code"]) == (403, "SignatureDoesNotMatch"), r
    form = v4_form(bucket, [{"key": "pol/d"}], expiration="2020-01-01T00:00:00Z",
                   extra=[("key", "pol/d")])
    r = post(server, bucket, form_body(form, b"x"))
    assert r.status == 403 and "Policy expired" in r.error()["Message"], r
    bad = v4_form(bucket, [{"key": "pol/e"}], extra=[("key", "pol/e")], secret="wrong-secret")
    assert post(server, bucket, form_body(bad, b"x")).error()["Code"] == "SignatureDoesNotMatch"
    for k in ["pol/a", "pol/b", "pol/c", "pol/d", "pol/e", "pol/elsewhere"]:
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key=k)


def test_sigv2_policy(s3, bucket, server):
    policy = base64.b64encode(json.dumps({
        "expiration": (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5))
        .strftime("%Y-%m-%dT%H:%M:%SZ"),
        "conditions": [{"bucket": bucket}, ["starts-with", "$key", "v2/"]]}).encode()).decode()
    sig = base64.b64encode(hmac.new(SECRET.encode(), policy.encode(), hashlib.sha1).digest()).decode()
    form = [("key", "v2/obj"), ("AWSAccessKeyId", ACCESS), ("policy", policy), ("signature", sig)]
    r = post(server, bucket, form_body(form, b"version two"))
    assert r.status == 204, r
    assert s3.get_object(Bucket=bucket, Key="v2/obj")["Body"].read() == b"version two"
    form[3] = ("signature", base64.b64encode(b"0" * 20).decode())
    assert post(server, bucket, form_body(form, b"x")).error()["Code"] == "SignatureDoesNotMatch"


def test_malformed_forms(s3, bucket, server):
    fields = presigned(s3, bucket, "bad/x")
    cases = [
        (form_body(fields, b"x")[:-30], None, "MalformedPOSTRequest"),           # cut in the file
        (b"no delimiter anywhere", None, "MalformedPOSTRequest"),
        (form_body(fields, b"x").replace(b'name="file"; ', b'name="notfile"; '), None,
         "IncorrectNumberOfFilesInPostRequest"),
        (form_body(fields + [("x-ignore-pad", "p" * 21000)], b"x"), None, "MaxPostPreDataLengthExceeded"),
        (form_body(fields, b"x"), "multipart/form-data", "MalformedPOSTRequest"),  # no boundary
    ]
    for body, ct, code in cases:
        r = post(server, bucket, body, content_type=ct)
        assert (r.status, r.error()["Code"]) == (400, code), (code, r)
    # No policy at all: an anonymous form is refused.
    r = post(server, bucket, form_body([("key", "bad/anon")], b"x"))
    assert (r.status, r.error()["Code"]) == (403, "AccessDenied"), r
    # Without key.
    form = v4_form(bucket, [])
    r = post(server, bucket, form_body(form, b"x"))
    assert (r.status, r.error()["Code"]) == (400, "InvalidArgument"), r
    # Fields after the file part are ignored (S3), a signed POST of something else is not a form.
    fields = presigned(s3, bucket, "bad/after")
    assert post(server, bucket, form_body(fields, b"x", after=[("ignored", "y")])).status == 204
    r = raw(server, "POST", f"/{bucket}", body=b"<x/>")
    assert (r.status, r.error()["Code"]) == (400, "MalformedPOSTRequest"), r


def test_post_to_missing_bucket(s3, server):
    fields = presigned(s3, "no-such-bucket-for-post", "k")
    r = post(server, "no-such-bucket-for-post", form_body(fields, b"x"))
    assert (r.status, r.error()["Code"]) == (404, "NoSuchBucket"), r


def test_file_part_type_is_not_the_objects(s3, bucket, server):
    # The file part's own Content-Type header is not a form field: no policy covers it, so
    # it must not set the stored type (AWS S3 ignores it too). As a field, it must be named.
    r = post(server, bucket, form_body(presigned(s3, bucket, "ct/a.png"), b"<script>1</script>",
                                       file_type="text/html"))
    assert r.status == 204, r
    assert s3.head_object(Bucket=bucket, Key="ct/a.png")["ContentType"] == "binary/octet-stream"
    r = post(server, bucket, form_body(presigned(s3, bucket, "ct/b") + [("Content-Type", "text/html")], b"x"))
    assert r.status == 403 and "Extra input fields: Content-Type" in r.error()["Message"], r


def test_starts_with_content_type_list(s3, bucket, server):
    # starts-with on Content-Type holds only when every entry of a comma list matches.
    def form(value):
        f = presigned(s3, bucket, "ctl/x", fields={"Content-Type": "image/png"},
                      conditions=[["starts-with", "$Content-Type", "image/"]])
        return [(k, value if k == "Content-Type" else v) for k, v in f]
    r = post(server, bucket, form_body(form("image/png,text/html"), b"x"))
    assert r.status == 403 and "Policy Condition failed" in r.error()["Message"], r
    assert post(server, bucket, form_body(form("image/png, image/gif"), b"x")).status == 204


def test_control_characters_and_bad_metadata_names_refused(s3, bucket, server):
    f = presigned(s3, bucket, "cc/a", fields={"x-amz-meta-note": "a\x0bb"},
                  conditions=[["starts-with", "$x-amz-meta-note", ""]])
    r = post(server, bucket, form_body(f, b"x"))
    assert (r.status, r.error()["Code"]) == (400, "InvalidArgument"), r
    f = presigned(s3, bucket, "cc/b", fields={"x-amz-meta-a b": "v"},
                  conditions=[["starts-with", "$x-amz-meta-a b", ""]])
    r = post(server, bucket, form_body(f, b"x"))
    assert (r.status, r.error()["Code"]) == (400, "InvalidArgument"), r
    f = presigned(s3, bucket, "cc/c", fields={"success_action_redirect": "http://x.test/\x01"},
                  conditions=[{"success_action_redirect": "http://x.test/\x01"}])
    assert post(server, bucket, form_body(f, b"x")).status == 204  # a bad redirect is ignored


def test_fields_a_put_honours(s3, bucket, server):
    def form(key, name, value):
        return presigned(s3, bucket, key, fields={name: value}, conditions=[{name: value}])
    r = post(server, bucket, form_body(form("h/sse", "x-amz-server-side-encryption", "AES256"), b"x"))
    assert (r.status, r.error()["Code"]) == (501, "NotImplemented"), r
    other = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    r = post(server, bucket, form_body(form("h/md5", "Content-MD5", other), b"x"))
    assert (r.status, r.error()["Code"]) == (400, "BadDigest"), r
    right = base64.b64encode(hashlib.md5(b"x").digest()).decode()
    assert post(server, bucket, form_body(form("h/md5", "Content-MD5", right), b"x")).status == 204
    sha = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
    r = post(server, bucket, form_body(form("h/ck", "x-amz-checksum-sha256", sha), b"x"))
    assert (r.status, r.error()["Code"]) == (400, "BadDigest"), r
    sha = base64.b64encode(hashlib.sha256(b"x").digest()).decode()
    assert post(server, bucket, form_body(form("h/ck", "x-amz-checksum-sha256", sha), b"x")).status == 204
    assert s3.head_object(Bucket=bucket, Key="h/ck", ChecksumMode="ENABLED")["ChecksumSHA256"] == sha
    assert post(server, bucket, form_body(form("h/wr", "x-amz-website-redirect-location", "/other"),
                                          b"x")).status == 204
    assert s3.head_object(Bucket=bucket, Key="h/wr")["WebsiteRedirectLocation"] == "/other"
    for k in ["h/sse"]:
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key=k)


def test_every_length_range_holds(s3, bucket, server):
    f = presigned(s3, bucket, "lr/x", conditions=[["content-length-range", 0, 10],
                                                  ["content-length-range", 0, 10**6]])
    r = post(server, bucket, form_body(f, b"y" * 5000))
    assert (r.status, r.error()["Code"]) == (400, "EntityTooLarge"), r
    assert post(server, bucket, form_body(f, b"y" * 10)).status == 204


def test_duplicate_fields_cannot_smuggle(s3, bucket, server):
    # The first field of a name counts everywhere (conditions, key, metadata).
    f = presigned(s3, bucket, "dup/a", fields={"x-amz-meta-a": "good", "Content-Type": "image/png"},
                  conditions=[{"x-amz-meta-a": "good"}, {"Content-Type": "image/png"}])
    f2 = f + [("key", "dup/evil"), ("X-AMZ-META-A", "evil"), ("content-type", "text/html")]
    assert post(server, bucket, form_body(f2, b"x")).status == 204
    h = s3.head_object(Bucket=bucket, Key="dup/a")
    assert h["Metadata"] == {"a": "good"} and h["ContentType"] == "image/png"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="dup/evil")
