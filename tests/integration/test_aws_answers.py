"""Answers that must be exactly AWS S3's (status, code, headers) where cairn's own choice
would be plausible too: CreateBucket of an owned bucket in us-east-1, no x-amz-version-id in
a bucket never versioned, a repeated CompleteMultipartUpload, a part uploaded twice, more than
10 object tags, an UploadPartCopy range outside its source, an empty continuation-token,
control characters in listings, presigned X-Amz-Expires out of range and malformed presigned
queries, a SigV2 Date before the epoch, a POST form sent to another bucket than its policy's.
docs/S3-ERRORS.md names these tests beside the rows they cover."""

import base64
import datetime
import hashlib
import hmac
import json
import threading
import urllib.parse
import xml.etree.ElementTree as ET

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import (ACCESS, REGION, S3NS, SECRET, empty_bucket, err_code, raw, running_server,
                      signing_key, unique_bucket)

MIB = 1024 * 1024
MIN = 5 * MIB


def _headers(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"]


# --- CreateBucket ---------------------------------------------------------------------------

def test_create_owned_bucket_in_us_east_1_is_200(s3, bucket):
    # AWS's legacy us-east-1 behaviour: creating a bucket you already own succeeds.
    r = s3.create_bucket(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    s3.head_bucket(Bucket=bucket)


def test_create_owned_bucket_elsewhere_is_409():
    region = "eu-west-1"
    with running_server(extra_args=["--region", region]) as srv:
        c = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS,
                         aws_secret_access_key=SECRET, region_name=region,
                         config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                       retries={"max_attempts": 0}))
        name = unique_bucket("owned")
        cfg = {"LocationConstraint": region}
        c.create_bucket(Bucket=name, CreateBucketConfiguration=cfg)
        with pytest.raises(ClientError) as e:
            c.create_bucket(Bucket=name, CreateBucketConfiguration=cfg)
        assert err_code(e.value) == ("BucketAlreadyOwnedByYou", 409)


def test_create_bucket_in_another_region_is_illegal_location_constraint(s3):
    # A region other than the server's: AWS's answer at a regional endpoint.
    name = unique_bucket("elsewhere")
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert err_code(e.value) == ("IllegalLocationConstraintException", 400)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


# --- x-amz-version-id in a bucket never versioned ----------------------------------------------

def _complete_small_upload(s3, bucket, key):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"part")["ETag"]
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})


def test_no_version_id_header_when_never_versioned(server, s3, bucket):
    answers = {
        "put": s3.put_object(Bucket=bucket, Key="k", Body=b"x"),
        "copy": s3.copy_object(Bucket=bucket, Key="k2", CopySource={"Bucket": bucket, "Key": "k"}),
        "complete": _complete_small_upload(s3, bucket, "mp"),
        "head": s3.head_object(Bucket=bucket, Key="k"),
        "delete": s3.delete_object(Bucket=bucket, Key="k2"),
    }
    for what, resp in answers.items():
        assert "x-amz-version-id" not in _headers(resp), (what, _headers(resp))
    r = raw(server, "PUT", f"/{bucket}/raw", body=b"y")
    assert r.status == 200 and r.headers.get("x-amz-version-id") is None, r.headers


def test_null_version_id_header_after_suspension(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    answers = {
        "put": s3.put_object(Bucket=bucket, Key="k", Body=b"x"),
        "copy": s3.copy_object(Bucket=bucket, Key="k2", CopySource={"Bucket": bucket, "Key": "k"}),
        "complete": _complete_small_upload(s3, bucket, "mp"),
    }
    for what, resp in answers.items():
        assert _headers(resp).get("x-amz-version-id") == "null", (what, _headers(resp))


# --- CompleteMultipartUpload repeated ----------------------------------------------------------

def _two_part_upload(s3, bucket, key):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = []
    for n, body in ((1, b"a" * MIN), (2, b"tail")):
        etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n, Body=body)["ETag"]
        parts.append({"PartNumber": n, "ETag": etag})
    return uid, parts


@pytest.mark.parametrize("versioned", [False, True])
def test_complete_repeated_answers_the_same(s3, bucket, versioned):
    if versioned:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    uid, parts = _two_part_upload(s3, bucket, "done")
    first = s3.complete_multipart_upload(Bucket=bucket, Key="done", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
    again = s3.complete_multipart_upload(Bucket=bucket, Key="done", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
    assert again["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert again["ETag"] == first["ETag"]
    assert again.get("VersionId") == first.get("VersionId")
    assert (again["Bucket"], again["Key"]) == (bucket, "done")
    # Another part list, or the same list once the key holds another object: no such upload.
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="done", UploadId=uid,
                                     MultipartUpload={"Parts": parts[:1]})
    assert err_code(e.value) == ("NoSuchUpload", 404)
    s3.put_object(Bucket=bucket, Key="done", Body=b"replaced")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="done", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    assert err_code(e.value) == ("NoSuchUpload", 404)


def test_completed_upload_id_does_not_follow_a_copy(s3, bucket):
    uid, parts = _two_part_upload(s3, bucket, "orig")
    s3.complete_multipart_upload(Bucket=bucket, Key="orig", UploadId=uid, MultipartUpload={"Parts": parts})
    s3.copy_object(Bucket=bucket, Key="orig", CopySource={"Bucket": bucket, "Key": "orig"},
                   MetadataDirective="COPY", StorageClass="STANDARD", Metadata={},
                   TaggingDirective="REPLACE")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="orig", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    assert err_code(e.value) == ("NoSuchUpload", 404)


def test_part_uploaded_again_wins(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="again")["UploadId"]
    old = s3.upload_part(Bucket=bucket, Key="again", UploadId=uid, PartNumber=1, Body=b"old")["ETag"]
    new = s3.upload_part(Bucket=bucket, Key="again", UploadId=uid, PartNumber=1, Body=b"new!")["ETag"]
    listed = s3.list_parts(Bucket=bucket, Key="again", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in listed] == [(1, new, 4)]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="again", UploadId=uid,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": old}]})
    assert err_code(e.value) == ("InvalidPart", 400)
    s3.complete_multipart_upload(Bucket=bucket, Key="again", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": new}]})
    assert s3.get_object(Bucket=bucket, Key="again")["Body"].read() == b"new!"


def test_part_uploaded_twice_at_once_one_wins_whole(s3, bucket):
    # Two uploads of one part number race; whichever is recorded last is the part, whole,
    # and the completion that names its ETag reads back exactly its bytes.
    for rnd in range(4):
        key = f"race{rnd}"
        uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        bodies = [bytes([65 + i]) * (MIB + 1000 * i) for i in range(2)]
        etags = {}
        barrier = threading.Barrier(2)

        def up(i):
            barrier.wait()
            etags[i] = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1,
                                      Body=bodies[i])["ETag"]

        ts = [threading.Thread(target=up, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert len(etags) == 2
        listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)["Parts"]
        assert len(listed) == 1 and listed[0]["ETag"] in etags.values()
        win = [i for i in etags if etags[i] == listed[0]["ETag"]][0]
        assert listed[0]["Size"] == len(bodies[win])
        loser = etags[1 - win]
        with pytest.raises(ClientError) as e:
            s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": loser}]})
        assert err_code(e.value) == ("InvalidPart", 400)
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etags[win]}]})
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == bodies[win]


# --- tags ---------------------------------------------------------------------------------------

def test_more_than_ten_object_tags_is_invalid_tag(s3, bucket):
    s3.put_object(Bucket=bucket, Key="t", Body=b"x")
    tags = {"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]}
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="t", Tagging=tags)
    assert err_code(e.value) == ("InvalidTag", 400)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="t2", Body=b"x", Tagging="&".join(f"k{i}=v" for i in range(11)))
    assert err_code(e.value) == ("InvalidTag", 400)


# --- UploadPartCopy range ------------------------------------------------------------------------

def test_upload_part_copy_range_outside_source_is_invalid_range(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"0123456789")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="dst")["UploadId"]
    cs = {"Bucket": bucket, "Key": "src"}
    for rng in ("bytes=0-10", "bytes=10-12", "bytes=50-60"):
        with pytest.raises(ClientError) as e:
            s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=1, CopySource=cs,
                                CopySourceRange=rng)
        assert err_code(e.value) == ("InvalidRange", 416), rng
    r = s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=1, CopySource=cs,
                            CopySourceRange="bytes=0-9")
    assert r["CopyPartResult"]["ETag"] == '"%s"' % hashlib.md5(b"0123456789").hexdigest()


# --- listings ------------------------------------------------------------------------------------

def test_empty_continuation_token_lists_from_the_start(server, s3, bucket):
    for k in ("a", "b"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = raw(server, "GET", f"/{bucket}", query=[("list-type", "2"), ("continuation-token", "")])
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    assert [c.find(S3NS + "Key").text for c in root.findall(S3NS + "Contents")] == ["a", "b"]


@pytest.mark.parametrize("list_type", ["1", "2"])
def test_control_characters_are_xml_character_references(server, s3, bucket, list_type):
    s3.put_object(Bucket=bucket, Key="line\none", Body=b"x")
    s3.put_object(Bucket=bucket, Key="tab\tdir/x", Body=b"x")
    q = [("prefix", "line\n")] + ([("list-type", "2")] if list_type == "2" else [])
    r = raw(server, "GET", f"/{bucket}", query=q)
    assert r.status == 200, r
    assert b"<Key>line&#10;one</Key>" in r.body, r.body
    assert b"<Prefix>line&#10;</Prefix>" in r.body, r.body
    assert ET.fromstring(r.body).find(S3NS + "Contents").find(S3NS + "Key").text == "line\none"
    q = [("delimiter", "/")] + ([("list-type", "2")] if list_type == "2" else [])
    r = raw(server, "GET", f"/{bucket}", query=q)
    assert b"<Prefix>tab&#9;dir/</Prefix>" in r.body, r.body
    # with encoding-type=url they are percent-encoded, as before
    r = raw(server, "GET", f"/{bucket}", query=q + [("encoding-type", "url")])
    assert b"<Prefix>tab%09dir/</Prefix>" in r.body, r.body


def test_control_characters_in_version_listing(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="v\rkey", Body=b"x")
    r = raw(server, "GET", f"/{bucket}", query=[("versions", "")])
    assert r.status == 200 and b"<Key>v&#13;key</Key>" in r.body, r.body


# --- presigned URLs ------------------------------------------------------------------------------

def _presign_query(server, bucket, key, expires, now=None, credential=None, date=None):
    now = now or datetime.datetime.now(datetime.timezone.utc)
    date8, amzdate = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")
    cred = credential or f"{ACCESS}/{date8}/{REGION}/s3/aws4_request"
    q = [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", cred),
         ("X-Amz-Date", date or amzdate), ("X-Amz-Expires", str(expires)),
         ("X-Amz-SignedHeaders", "host")]
    qs = "&".join(f"{k}={urllib.parse.quote(v, safe='-_.~')}" for k, v in sorted(q))
    path = f"/{bucket}/{key}"
    creq = f"GET\n{path}\n{qs}\nhost:127.0.0.1:{server.port}\n\nhost\nUNSIGNED-PAYLOAD"
    sts = (f"AWS4-HMAC-SHA256\n{amzdate}\n{date8}/{REGION}/s3/aws4_request\n"
           + hashlib.sha256(creq.encode()).hexdigest())
    sig = hmac.new(signing_key(SECRET, date8), sts.encode(), hashlib.sha256).hexdigest()
    return raw(server, "GET", path, query=qs + f"&X-Amz-Signature={sig}", sign=False)


@pytest.mark.parametrize("expires", [604801, 10 ** 13, -1, 0])
def test_presigned_expires_out_of_range(server, s3, bucket, expires):
    s3.put_object(Bucket=bucket, Key="p", Body=b"x")
    r = _presign_query(server, bucket, "p", expires)
    assert (r.status, r.error().get("Code")) == (403, "AuthorizationQueryParametersError"), r


def test_presigned_within_a_week_is_served(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="p", Body=b"x")
    r = _presign_query(server, bucket, "p", 604800)
    assert (r.status, r.body) == (200, b"x"), r


@pytest.mark.parametrize("what", ["credential", "date", "expires", "missing", "duplicate", "service",
                                  "algorithm"])
def test_presigned_malformed_query_is_query_parameters_error(server, bucket, what):
    good = [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Credential", f"{ACCESS}/20250101/{REGION}/s3/aws4_request"),
            ("X-Amz-Date", "20250101T000000Z"), ("X-Amz-Expires", "300"),
            ("X-Amz-SignedHeaders", "host"), ("X-Amz-Signature", "00" * 32)]
    q = dict(good)
    if what == "credential":
        q["X-Amz-Credential"] = f"{ACCESS}/{REGION}/s3/aws4_request"
    elif what == "date":
        q["X-Amz-Date"] = "yesterday"
    elif what == "expires":
        q["X-Amz-Expires"] = "soon"
    elif what == "missing":
        del q["X-Amz-SignedHeaders"]
    elif what == "service":
        q["X-Amz-Credential"] = f"{ACCESS}/20250101/{REGION}/s4/aws4_request"
    elif what == "algorithm":
        q["X-Amz-Algorithm"] = "AWS4-HMAC-SHA1"
    pairs = list(q.items()) + ([("X-Amz-Date", "20250101T000000Z")] if what == "duplicate" else [])
    r = raw(server, "GET", f"/{bucket}/x", query=pairs, sign=False)
    assert (r.status, r.error().get("Code")) == (400, "AuthorizationQueryParametersError"), r


# --- SigV2 ---------------------------------------------------------------------------------------

def test_sigv2_date_before_the_epoch_is_access_denied(server, bucket):
    date = "Wed, 31 Dec 1969 23:59:59 GMT"
    sts = f"GET\n\n\n{date}\n/{bucket}/x"
    sig = base64.b64encode(hmac.new(SECRET.encode(), sts.encode(), hashlib.sha1).digest()).decode()
    r = raw(server, "GET", f"/{bucket}/x", sign=False,
            headers={"Date": date, "Authorization": f"AWS {ACCESS}:{sig}"})
    assert (r.status, r.error().get("Code")) == (403, "AccessDenied"), r


# --- POST policy to another bucket ----------------------------------------------------------------

BOUNDARY = "----cairnAwsAnswersBoundary"


def _form(fields, data):
    out = []
    for name, value in fields:
        out.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
                   .encode())
    out.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n'
               .encode() + data + b"\r\n")
    out.append(f"--{BOUNDARY}--\r\n".encode())
    return b"".join(out)


def test_post_policy_of_another_bucket_is_403(server, s3, bucket):
    other = unique_bucket("other")
    s3.create_bucket(Bucket=other)
    try:
        p = s3.generate_presigned_post(bucket, "k", ExpiresIn=300)
        fields = [(k, v) for k, v in p["fields"].items()]
        # the form names no bucket: only the policy's condition names the signed one
        r = raw(server, "POST", f"/{other}", body=_form(fields, b"x"), sign=False,
                headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
        assert (r.status, r.error().get("Code")) == (403, "AccessDenied"), r
        # the form's bucket field names the signed bucket, posted to another one
        r = raw(server, "POST", f"/{other}", body=_form([("bucket", bucket)] + fields, b"x"), sign=False,
                headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
        assert (r.status, r.error().get("Code")) == (403, "AccessDenied"), r
        with pytest.raises(ClientError):
            s3.head_object(Bucket=other, Key="k")
    finally:
        empty_bucket(s3, other)


# --- header authentication ------------------------------------------------------------------------

@pytest.mark.parametrize("auth,code", [
    ("AWS4-HMAC-SHA256 garbage", "AuthorizationHeaderMalformed"),
    ("AWS4-HMAC-SHA256 Credential=" + ACCESS + "/20200101/us-east-1/s3/aws4_request", "AuthorizationHeaderMalformed"),
    ("Bearer abc", "InvalidArgument"),  # AWS: "Unsupported Authorization Type"
])
def test_malformed_authorization_header(server, auth, code):
    r = raw(server, "GET", "/", sign=False,
            headers={"Authorization": auth, "x-amz-date": "20200101T000000Z",
                     "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    assert (r.status, r.error().get("Code")) == (400, code), r


# --- rows of docs/S3-ERRORS.md that no other test asserts exactly ----------------------------------

def test_malformed_checksum_header_is_invalid_request(server, bucket):
    r = raw(server, "PUT", f"/{bucket}/ck", body=b"abc", headers={"x-amz-checksum-crc32": "@@@"})
    assert (r.status, r.error().get("Code")) == (400, "InvalidRequest"), r


def test_unknown_upload_is_no_such_upload(s3, bucket):
    unknown = "0123456789abcdef0123456789abcdef"
    calls = [
        lambda: s3.list_parts(Bucket=bucket, Key="k", UploadId=unknown),
        lambda: s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=unknown,
                                             MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"00"'}]}),
        lambda: s3.abort_multipart_upload(Bucket=bucket, Key="k", UploadId=unknown),
        lambda: s3.upload_part(Bucket=bucket, Key="k", UploadId=unknown, PartNumber=1, Body=b"x"),
    ]
    for call in calls:
        with pytest.raises(ClientError) as e:
            call()
        assert err_code(e.value) == ("NoSuchUpload", 404)


def test_body_shorter_than_its_length_is_incomplete_body(server, bucket):
    import socket
    from conftest import sign_headers
    path = f"/{bucket}/short"
    h = sign_headers("PUT", f"http://127.0.0.1:{server.port}{path}", {"Content-Length": "100000"},
                     "UNSIGNED-PAYLOAD")
    head = f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(head.encode() + b"x" * 5000)
        s.shutdown(socket.SHUT_WR)  # the body ends early; the answer can still be read
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    status = int(data.split(b" ", 2)[1])
    body = data.split(b"\r\n\r\n", 1)[1]
    assert (status, ET.fromstring(body).find("Code").text) == (400, "IncompleteBody"), data


def test_create_bucket_with_object_lock_is_not_implemented(s3):
    # cairn has no object lock: refused, never a bucket that silently lacks it
    name = unique_bucket("lock")
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    assert err_code(e.value) == ("NotImplemented", 501)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


# --- deliberate differences (docs/S3-ERRORS.md) ---------------------------------------------------

def test_tiers_and_encryption_cairn_lacks_are_refused(server, bucket):
    r = raw(server, "PUT", f"/{bucket}/g", body=b"x", headers={"x-amz-storage-class": "GLACIER"})
    assert (r.status, r.error().get("Code")) == (400, "InvalidStorageClass"), r
    r = raw(server, "PUT", f"/{bucket}/e", body=b"x", headers={"x-amz-server-side-encryption": "AES256"})
    assert (r.status, r.error().get("Code")) == (501, "NotImplemented"), r
    for k in ("g", "e"):
        assert raw(server, "HEAD", f"/{bucket}/{k}").status == 404
