"""Object and bucket tagging: Put/Get/DeleteObjectTagging, Put/Get/DeleteBucketTagging,
x-amz-tagging on PutObject and CopyObject (x-amz-tagging-directive), x-amz-tagging-count on
GET/HEAD, AWS's limits and errors, and the aws cli's s3api tagging commands."""

import json
import os
import shutil
import subprocess
import tempfile
import urllib.parse

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS, REGION, SECRET, b64_crc32, err_code, md5_b64, rand_bytes, raw


def tagset(d):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in d.items()]}


def get_tags(s3, bucket, key):
    r = s3.get_object_tagging(Bucket=bucket, Key=key)
    return [(t["Key"], t["Value"]) for t in r["TagSet"]]


def tag_count_header(s3, bucket, key):
    h = s3.head_object(Bucket=bucket, Key=key)["ResponseMetadata"]["HTTPHeaders"]
    assert "x-amz-tagging" not in h  # the stored form is never returned as a header
    return h.get("x-amz-tagging-count")


def put_tagging_error(s3, bucket, key, tags):
    with pytest.raises(ClientError) as ei:
        s3.put_object_tagging(Bucket=bucket, Key=key, Tagging=tagset(tags))
    return err_code(ei.value), ei.value.response["Error"].get("Message", "")


def xml_tagging(pairs):
    tags = "".join(f"<Tag><Key>{k}</Key><Value>{v}</Value></Tag>" for k, v in pairs)
    return f"<Tagging><TagSet>{tags}</TagSet></Tagging>".encode()


# --- PutObjectTagging / GetObjectTagging / DeleteObjectTagging ----------------------------------

def test_object_tagging_round_trip_keeps_data(s3, bucket):
    data = rand_bytes(300_000, seed=4)
    s3.put_object(Bucket=bucket, Key="obj", Body=data, ContentType="text/x-test",
                  Metadata={"color": "blue"})
    before = s3.head_object(Bucket=bucket, Key="obj")
    assert get_tags(s3, bucket, "obj") == []
    assert tag_count_header(s3, bucket, "obj") is None

    r = s3.put_object_tagging(Bucket=bucket, Key="obj", Tagging=tagset({"zeta": "last", "alpha": "first", "mid": ""}))
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert get_tags(s3, bucket, "obj") == [("alpha", "first"), ("mid", ""), ("zeta", "last")]
    assert tag_count_header(s3, bucket, "obj") == "3"
    g = s3.get_object(Bucket=bucket, Key="obj")
    assert g["Body"].read() == data
    assert g["TagCount"] == 3
    after = s3.head_object(Bucket=bucket, Key="obj")
    for field in ("ETag", "ContentLength", "ContentType", "Metadata", "LastModified"):
        assert after[field] == before[field], field

    # A second put replaces the whole set.
    s3.put_object_tagging(Bucket=bucket, Key="obj", Tagging=tagset({"only": "one"}))
    assert get_tags(s3, bucket, "obj") == [("only", "one")]

    r = s3.delete_object_tagging(Bucket=bucket, Key="obj")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert get_tags(s3, bucket, "obj") == []
    assert tag_count_header(s3, bucket, "obj") is None
    assert "TagCount" not in s3.get_object(Bucket=bucket, Key="obj")
    assert s3.get_object(Bucket=bucket, Key="obj")["Body"].read() == data
    # Deleting an absent tag set is fine too.
    assert s3.delete_object_tagging(Bucket=bucket, Key="obj")["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_object_tagging_empty_tagset_removes_tags(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", Tagging="a=1")
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging={"TagSet": []})
    assert get_tags(s3, bucket, "k") == []
    assert tag_count_header(s3, bucket, "k") is None


def test_object_tagging_missing_object_and_bucket(s3, bucket):
    for call in (lambda b, k: s3.get_object_tagging(Bucket=b, Key=k),
                 lambda b, k: s3.put_object_tagging(Bucket=b, Key=k, Tagging=tagset({"a": "b"})),
                 lambda b, k: s3.delete_object_tagging(Bucket=b, Key=k)):
        with pytest.raises(ClientError) as ei:
            call(bucket, "nope")
        assert err_code(ei.value) == ("NoSuchKey", 404)
        with pytest.raises(ClientError) as ei:
            call(bucket + "-missing", "nope")
        assert err_code(ei.value) == ("NoSuchBucket", 404)


def test_object_tagging_version_id(s3, bucket):
    s3.put_object(Bucket=bucket, Key="v", Body=b"x")
    s3.put_object_tagging(Bucket=bucket, Key="v", VersionId="null", Tagging=tagset({"a": "b"}))
    r = s3.get_object_tagging(Bucket=bucket, Key="v", VersionId="null")
    assert r["TagSet"] == [{"Key": "a", "Value": "b"}]
    for call in (lambda: s3.get_object_tagging(Bucket=bucket, Key="v", VersionId="3HL4kqtJlcpXroDTDmJ"),
                 lambda: s3.put_object_tagging(Bucket=bucket, Key="v", VersionId="3HL4kqtJlcpXroDTDmJ",
                                               Tagging=tagset({"a": "c"})),
                 lambda: s3.delete_object_tagging(Bucket=bucket, Key="v", VersionId="3HL4kqtJlcpXroDTDmJ")):
        with pytest.raises(ClientError) as ei:
            call()
        assert err_code(ei.value) == ("InvalidArgument", 400)
    assert get_tags(s3, bucket, "v") == [("a", "b")]
    s3.delete_object_tagging(Bucket=bucket, Key="v", VersionId="null")
    assert get_tags(s3, bucket, "v") == []


def test_object_tagging_limits(s3, bucket):
    s3.put_object(Bucket=bucket, Key="lim", Body=b"x")
    ten = {f"k{i}": "v" * 256 for i in range(9)}
    ten["K" * 128] = "w"
    s3.put_object_tagging(Bucket=bucket, Key="lim", Tagging=tagset(ten))
    assert len(get_tags(s3, bucket, "lim")) == 10
    assert tag_count_header(s3, bucket, "lim") == "10"

    (code, msg) = put_tagging_error(s3, bucket, "lim", {f"k{i}": "v" for i in range(11)})
    assert code == ("InvalidTag", 400) and "greater than 10" in msg  # AWS's code (MinIO: BadRequest)
    (code, msg) = put_tagging_error(s3, bucket, "lim", {"K" * 129: "v"})
    assert code == ("InvalidTag", 400) and "TagKey" in msg
    (code, msg) = put_tagging_error(s3, bucket, "lim", {"k": "v" * 257})
    assert code == ("InvalidTag", 400) and "TagValue" in msg
    (code, msg) = put_tagging_error(s3, bucket, "lim", {"aws:cloudformation": "x"})
    assert code == ("InvalidTag", 400) and "aws:" in msg
    for bad_key in ("a#b", "semi;colon", "bang!", "star*", "quote\"", "lt<", "tab\there", "pct%"):
        (code, msg) = put_tagging_error(s3, bucket, "lim", {bad_key: "v"})
        assert code == ("InvalidTag", 400), bad_key
    (code, msg) = put_tagging_error(s3, bucket, "lim", {"k": "v&w"})
    assert code == ("InvalidTag", 400) and "TagValue" in msg
    # Every failed put left the previous set in place.
    assert len(get_tags(s3, bucket, "lim")) == 10


def test_object_tagging_duplicate_key(s3, bucket, server):
    s3.put_object(Bucket=bucket, Key="dup", Body=b"x")
    body = xml_tagging([("a", "1"), ("b", "2"), ("a", "3")])
    r = raw(server, "PUT", f"/{bucket}/dup", query="tagging", body=body,
            headers={"Content-MD5": md5_b64(body)})
    assert r.status == 400, r
    assert r.error()["Code"] == "InvalidTag"
    assert "same key" in r.error()["Message"]
    # An empty key (boto3 refuses to send one).
    body = xml_tagging([("", "v")])
    r = raw(server, "PUT", f"/{bucket}/dup", query="tagging", body=body)
    assert r.status == 400 and r.error()["Code"] == "InvalidTag", r
    assert get_tags(s3, bucket, "dup") == []


def test_object_tagging_allowed_and_unicode(s3, bucket):
    s3.put_object(Bucket=bucket, Key="uni", Body=b"x")
    tags = {
        "Space key + - = . _ : / @": "value with all: + - = . _ : / @",
        "日本語キー": "値 ünïcödé",
        "ключ": "значение",
        "\u00e9" * 128: "\u00e9" * 256,  # 128 characters of 2 UTF-8 bytes each: counted as characters
        "\U0001D400" * 64: "\U0001D400" * 128,  # outside the BMP: 2 UTF-16 units each, at the limit
    }
    s3.put_object_tagging(Bucket=bucket, Key="uni", Tagging=tagset(tags))
    assert dict(get_tags(s3, bucket, "uni")) == tags
    (code, _) = put_tagging_error(s3, bucket, "uni", {"\U0001D400" * 65: "v"})
    assert code == ("InvalidTag", 400)
    (code, _) = put_tagging_error(s3, bucket, "uni", {"k": "\U0001D400" * 129})
    assert code == ("InvalidTag", 400)


def test_object_tagging_malformed_xml(s3, bucket, server):
    s3.put_object(Bucket=bucket, Key="m", Body=b"x")
    bodies = [
        b"",
        b"<Tagging><TagSet><Tag><Key>a</Key>",
        b"<Tags><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tags>",
        b"<Tagging></Tagging>",
        b"<Tagging><TagSet><Tag><Value>b</Value></Tag></TagSet></Tagging>",
        b"<Tagging><TagSet><Tag><Key>a</Key></Tag></TagSet></Tagging>",
        b"<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key><Value>b</Value></Tag></TagSet></Tagging>",
        b"<Tagging><TagSet><Other/></TagSet></Tagging>",
        b"not xml at all",
    ]
    for body in bodies:
        r = raw(server, "PUT", f"/{bucket}/m", query="tagging", body=body)
        assert r.status == 400, (body, r)
        assert r.error()["Code"] == "MalformedXML", (body, r)
    # With the namespace AWS's SDKs send, and surrounding whitespace, the document is fine.
    body = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"\n  <TagSet>\n    <Tag><Key>a</Key><Value>b</Value></Tag>\n  </TagSet>\n</Tagging>\n")
    r = raw(server, "PUT", f"/{bucket}/m", query="tagging", body=body)
    assert r.status == 200, r
    assert get_tags(s3, bucket, "m") == [("a", "b")]


def test_object_tagging_content_md5(s3, bucket, server):
    s3.put_object(Bucket=bucket, Key="md5", Body=b"x")
    body = xml_tagging([("a", "1")])
    r = raw(server, "PUT", f"/{bucket}/md5", query="tagging", body=body,
            headers={"Content-MD5": md5_b64(body + b" ")})
    assert r.status == 400 and r.error()["Code"] == "BadDigest", r
    r = raw(server, "PUT", f"/{bucket}/md5", query="tagging", body=body,
            headers={"Content-MD5": "not-base64!"})
    assert r.status == 400 and r.error()["Code"] == "InvalidDigest", r
    assert get_tags(s3, bucket, "md5") == []
    r = raw(server, "PUT", f"/{bucket}/md5", query="tagging", body=body,
            headers={"Content-MD5": md5_b64(body)})
    assert r.status == 200, r
    assert get_tags(s3, bucket, "md5") == [("a", "1")]
    # The x-amz-checksum-* header newer SDKs send instead is verified the same way.
    body2 = xml_tagging([("b", "2")])
    r = raw(server, "PUT", f"/{bucket}/md5", query="tagging", body=body2,
            headers={"x-amz-checksum-crc32": b64_crc32(body)})
    assert r.status == 400 and r.error()["Code"] == "BadDigest", r
    assert get_tags(s3, bucket, "md5") == [("a", "1")]
    r = raw(server, "PUT", f"/{bucket}/md5", query="tagging", body=body2,
            headers={"x-amz-checksum-crc32": b64_crc32(body2)})
    assert r.status == 200, r
    assert get_tags(s3, bucket, "md5") == [("b", "2")]


# --- x-amz-tagging on PutObject -----------------------------------------------------------------

def test_put_object_with_tagging_header(s3, bucket):
    s3.put_object(Bucket=bucket, Key="h", Body=b"data",
                  Tagging="project=cairn&team=storage%20core&plus=a+b&empty=")
    assert get_tags(s3, bucket, "h") == [("empty", ""), ("plus", "a b"), ("project", "cairn"),
                                         ("team", "storage core")]
    assert tag_count_header(s3, bucket, "h") == "4"
    g = s3.get_object(Bucket=bucket, Key="h")
    assert g["TagCount"] == 4
    assert "x-amz-tagging" not in g["ResponseMetadata"]["HTTPHeaders"]
    assert g["Body"].read() == b"data"
    # ceph s3-tests: a key without '=' has the empty value; the set comes back in key order.
    s3.put_object(Bucket=bucket, Key="h2", Body=b"x", Tagging="foo=bar&bar")
    assert get_tags(s3, bucket, "h2") == [("bar", ""), ("foo", "bar")]
    # Unicode, percent-encoded as the header requires.
    s3.put_object(Bucket=bucket, Key="h3", Body=b"x",
                  Tagging=urllib.parse.urlencode({"日本": "値", "k": "é"}))
    assert dict(get_tags(s3, bucket, "h3")) == {"日本": "値", "k": "é"}


def test_overwrite_without_tagging_drops_tags(s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"one", Tagging="a=1&b=2")
    assert tag_count_header(s3, bucket, "o") == "2"
    s3.put_object(Bucket=bucket, Key="o", Body=b"two")
    assert get_tags(s3, bucket, "o") == []
    assert tag_count_header(s3, bucket, "o") is None
    assert s3.get_object(Bucket=bucket, Key="o")["Body"].read() == b"two"


@pytest.mark.parametrize("header,code", [
    ("a=1&a=2", "InvalidArgument"),                       # duplicate key
    ("a=b=c", "InvalidArgument"),                         # two '=' in one pair
    ("TagSet=[{Key=string,Value=string}]", "InvalidArgument"),
    ("a=%zz", "InvalidArgument"),                         # bad escape
    ("a=%ff", "InvalidArgument"),                         # not UTF-8
    ("&".join(f"k{i}=v" for i in range(11)), "InvalidTag"),  # AWS's code (MinIO: BadRequest)
    ("K" * 129 + "=v", "InvalidTag"),
    ("k=" + "v" * 257, "InvalidTag"),
    ("aws%3Aname=v", "InvalidTag"),
    ("=v", "InvalidTag"),
    ("a%23b=v", "InvalidTag"),                            # '#'
    ("TagSet%3D%5B%7BKey%3Dstring%2CValue%3Dstring%7D%5D", "InvalidTag"),
])
def test_put_object_tagging_header_errors(s3, bucket, header, code):
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="bad", Body=b"x", Tagging=header)
    assert err_code(ei.value) == (code, 400)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="bad")
    assert err_code(ei.value)[1] == 404  # nothing was stored


def test_put_object_tagging_header_limits_accepted(s3, bucket):
    tags = {f"k{i}": "v" * 256 for i in range(9)}
    tags["K" * 128] = ""
    s3.put_object(Bucket=bucket, Key="max", Body=b"x", Tagging=urllib.parse.urlencode(tags))
    assert dict(get_tags(s3, bucket, "max")) == tags
    s3.put_object(Bucket=bucket, Key="none", Body=b"x", Tagging="")
    assert get_tags(s3, bucket, "none") == []


# --- CopyObject and x-amz-tagging-directive -----------------------------------------------------

def test_copy_object_tagging_directive(s3, bucket):
    data = rand_bytes(5000, seed=9)
    s3.put_object(Bucket=bucket, Key="src", Body=data, Tagging="a=1&b=2")
    src = {"Bucket": bucket, "Key": "src"}

    s3.copy_object(Bucket=bucket, Key="default", CopySource=src)
    assert get_tags(s3, bucket, "default") == [("a", "1"), ("b", "2")]

    s3.copy_object(Bucket=bucket, Key="copy", CopySource=src, TaggingDirective="COPY", Tagging="x=ignored")
    assert get_tags(s3, bucket, "copy") == [("a", "1"), ("b", "2")]

    s3.copy_object(Bucket=bucket, Key="replace", CopySource=src, TaggingDirective="REPLACE", Tagging="new=tag")
    assert get_tags(s3, bucket, "replace") == [("new", "tag")]
    assert tag_count_header(s3, bucket, "replace") == "1"

    s3.copy_object(Bucket=bucket, Key="replace-none", CopySource=src, TaggingDirective="REPLACE")
    assert get_tags(s3, bucket, "replace-none") == []

    # The metadata directive does not touch tags.
    s3.copy_object(Bucket=bucket, Key="meta-replace", CopySource=src, MetadataDirective="REPLACE",
                   Metadata={"m": "1"})
    assert get_tags(s3, bucket, "meta-replace") == [("a", "1"), ("b", "2")]
    assert s3.head_object(Bucket=bucket, Key="meta-replace")["Metadata"] == {"m": "1"}

    for k in ("default", "copy", "replace", "replace-none", "meta-replace"):
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == data
    assert get_tags(s3, bucket, "src") == [("a", "1"), ("b", "2")]


def test_copy_object_tagging_errors_and_self_copy(s3, bucket):
    s3.put_object(Bucket=bucket, Key="s", Body=b"self", Tagging="a=1")
    src = {"Bucket": bucket, "Key": "s"}
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="d", CopySource=src, TaggingDirective="MERGE")
    assert err_code(ei.value) == ("InvalidArgument", 400)
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="d", CopySource=src, TaggingDirective="REPLACE", Tagging="a=1&a=2")
    assert err_code(ei.value) == ("InvalidArgument", 400)
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="d", CopySource=src, TaggingDirective="REPLACE",
                       Tagging="aws%3Ax=1")
    assert err_code(ei.value) == ("InvalidTag", 400)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="d")
    assert err_code(ei.value)[1] == 404
    # Copying an object onto itself only to change its tags is a change.
    s3.copy_object(Bucket=bucket, Key="s", CopySource=src, TaggingDirective="REPLACE", Tagging="b=2")
    assert get_tags(s3, bucket, "s") == [("b", "2")]
    assert s3.get_object(Bucket=bucket, Key="s")["Body"].read() == b"self"


# --- CreateMultipartUpload -------------------------------------------------------------------------

def test_multipart_upload_keeps_tagging(s3, bucket):
    with pytest.raises(ClientError) as ei:
        s3.create_multipart_upload(Bucket=bucket, Key="mp-bad", Tagging="aws%3Ax=1")
    assert err_code(ei.value) == ("InvalidTag", 400)
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", Tagging="b=2&a=1")
    data = rand_bytes(1000, seed=7)
    p = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=data)
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert get_tags(s3, bucket, "mp") == [("a", "1"), ("b", "2")]
    assert tag_count_header(s3, bucket, "mp") == "2"
    assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == data


# --- bucket tagging ------------------------------------------------------------------------------

def test_put_bucket_tagging_status_by_client(s3, bucket, server):
    """AWS S3 answers PutBucketTagging 204; MinIO 200, which MinIO's SDKs (User-Agent
    "MinIO (...) minio-js/..." and the like) require. Other clients get AWS's 204."""
    body = xml_tagging([("k", "v")])
    for ua, status in [(None, 204), ("aws-cli/2.9.19 Python/3.11.2", 204),
                       ("MinIO (linux; x64) minio-js/8.0.7", 200),
                       ("MinIO (linux; amd64) minio-go/v7.0.90", 200), ("minio (lowercase)", 204)]:
        headers = {"Content-MD5": md5_b64(body)}
        if ua:
            headers["User-Agent"] = ua
        r = raw(server, "PUT", f"/{bucket}", query="tagging", body=body, headers=headers)
        assert r.status == status, (ua, r)
        assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "k", "Value": "v"}]
        s3.delete_bucket_tagging(Bucket=bucket)


def test_bucket_tagging_round_trip(s3, bucket):
    with pytest.raises(ClientError) as ei:
        s3.get_bucket_tagging(Bucket=bucket)
    assert err_code(ei.value) == ("NoSuchTagSet", 404)

    tags = {"env": "prod", "cost-center": "42", "Ünïcode ключ": "値 / @ + = . _ : -"}
    r = s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset(tags))
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    got = s3.get_bucket_tagging(Bucket=bucket)["TagSet"]
    assert {t["Key"]: t["Value"] for t in got} == tags
    assert [t["Key"] for t in got] == sorted(tags, key=lambda k: k.encode())

    s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset({"only": "this"}))
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "only", "Value": "this"}]

    r = s3.delete_bucket_tagging(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as ei:
        s3.get_bucket_tagging(Bucket=bucket)
    assert err_code(ei.value) == ("NoSuchTagSet", 404)
    assert s3.delete_bucket_tagging(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204

    # An empty tag set leaves the bucket without one.
    s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset({"a": "b"}))
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": []})
    with pytest.raises(ClientError) as ei:
        s3.get_bucket_tagging(Bucket=bucket)
    assert err_code(ei.value) == ("NoSuchTagSet", 404)


def test_bucket_tagging_limits_and_errors(s3, bucket, server):
    fifty = {f"key-{i:02d}": "v" * 256 for i in range(50)}
    s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset(fifty))
    assert len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == 50

    def put_err(tags):
        with pytest.raises(ClientError) as ei:
            s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset(tags))
        return err_code(ei.value)

    assert put_err({f"k{i}": "v" for i in range(51)}) == ("BadRequest", 400)
    assert put_err({"K" * 129: "v"}) == ("InvalidTag", 400)
    assert put_err({"k": "v" * 257}) == ("InvalidTag", 400)
    assert put_err({"aws:x": "v"}) == ("InvalidTag", 400)
    assert put_err({"a?b": "v"}) == ("InvalidTag", 400)
    body = xml_tagging([("a", "1"), ("a", "2")])
    r = raw(server, "PUT", f"/{bucket}", query="tagging", body=body)
    assert r.status == 400 and r.error()["Code"] == "InvalidTag", r
    r = raw(server, "PUT", f"/{bucket}", query="tagging", body=b"<Tagging><TagSet>")
    assert r.status == 400 and r.error()["Code"] == "MalformedXML", r
    # The failed puts changed nothing.
    assert len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == 50

    for call in (lambda b: s3.get_bucket_tagging(Bucket=b),
                 lambda b: s3.put_bucket_tagging(Bucket=b, Tagging=tagset({"a": "b"})),
                 lambda b: s3.delete_bucket_tagging(Bucket=b)):
        with pytest.raises(ClientError) as ei:
            call(bucket + "-missing")
        assert err_code(ei.value) == ("NoSuchBucket", 404)


def test_bucket_tags_do_not_leak_to_objects(s3, bucket):
    s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset({"b": "1"}))
    s3.put_object(Bucket=bucket, Key="plain", Body=b"x")
    assert get_tags(s3, bucket, "plain") == []
    s3.put_object_tagging(Bucket=bucket, Key="plain", Tagging=tagset({"o": "2"}))
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "b", "Value": "1"}]


# --- aws cli ---------------------------------------------------------------------------------------

def test_aws_cli_object_tagging(s3, bucket, server):
    aws = "/usr/bin/aws" if os.access("/usr/bin/aws", os.X_OK) else shutil.which("aws")
    if not aws:
        pytest.skip("aws cli not installed")
    s3.put_object(Bucket=bucket, Key="cli/obj", Body=b"cli data")
    work = tempfile.mkdtemp(prefix="cairn-awscli-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=os.path.join(work, "config"),
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(work, "credentials"),
               AWS_ACCESS_KEY_ID=ACCESS, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION=REGION,
               AWS_PAGER="", AWS_EC2_METADATA_DISABLED="true")
    base = [aws, "--endpoint-url", server.endpoint, "s3api"]
    try:
        p = subprocess.run(base + ["put-object-tagging", "--bucket", bucket, "--key", "cli/obj",
                                   "--tagging", json.dumps(tagset({"tool": "aws cli", "n": "1"}))],
                           env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        p = subprocess.run(base + ["get-object-tagging", "--bucket", bucket, "--key", "cli/obj",
                                   "--output", "json"],
                           env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["TagSet"] == [{"Key": "n", "Value": "1"}, {"Key": "tool", "Value": "aws cli"}]
        p = subprocess.run(base + ["put-object-tagging", "--bucket", bucket, "--key", "cli/obj",
                                   "--tagging", json.dumps(tagset({"aws:no": "x"}))],
                           env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and "InvalidTag" in p.stderr, (p.returncode, p.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert get_tags(s3, bucket, "cli/obj") == [("n", "1"), ("tool", "aws cli")]
