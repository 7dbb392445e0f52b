"""DeleteObjects (quiet, verbose, 1000 keys, errors) and CopyObject (directives, self-copy,
copy-source conditionals, url-encoded sources)."""

import datetime
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, raw, rand_bytes, md5_hex, unique_bucket, md5_b64


def _keys(s3, bucket, prefix=""):
    out = []
    token = None
    for _ in range(100):
        kw = {"Bucket": bucket, "Prefix": prefix}
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw)
        out += [o["Key"] for o in r.get("Contents", [])]
        if not r.get("IsTruncated"):
            return out
        token = r["NextContinuationToken"]
    raise AssertionError("listing did not end")


# --- DeleteObjects --------------------------------------------------------------------------

def test_delete_objects_verbose(s3, bucket):
    for k in ("a", "b/c", "d e"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in ("a", "b/c", "d e", "missing")]})
    assert sorted(d["Key"] for d in r.get("Deleted", [])) == ["a", "b/c", "d e", "missing"]
    assert not r.get("Errors")
    assert _keys(s3, bucket) == []


def test_delete_objects_quiet(s3, bucket):
    for k in ("q1", "q2"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "q1"}, {"Key": "q2"}], "Quiet": True})
    assert not r.get("Deleted")
    assert not r.get("Errors")
    assert _keys(s3, bucket) == []


def test_delete_objects_1000(s3, bucket):
    keys = [f"many/{i:04d}" for i in range(1000)]
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=k.encode()), keys))
    assert len(_keys(s3, bucket)) == 1000
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys]})
    assert len(r.get("Deleted", [])) == 1000
    assert not r.get("Errors")
    assert _keys(s3, bucket) == []


def test_delete_objects_over_1000(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"k{i}"} for i in range(1001)]})
    assert err_code(e.value) == ("MalformedXML", 400)


def test_delete_objects_malformed_xml(server, bucket):
    body = b"<Delete><Object><Key>unterminated"
    r = raw(server, "POST", f"/{bucket}", query="delete=", body=body, headers={"Content-MD5": md5_b64(body)})
    assert r.status == 400, r
    assert r.error().get("Code") == "MalformedXML"


def test_delete_objects_empty_list(server, bucket):
    body = b'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></Delete>'
    r = raw(server, "POST", f"/{bucket}", query="delete=", body=body, headers={"Content-MD5": md5_b64(body)})
    assert r.status == 400, r
    assert r.error().get("Code") == "MalformedXML"


def test_delete_objects_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket=unique_bucket("missing"), Delete={"Objects": [{"Key": "x"}]})
    assert err_code(e.value) == ("NoSuchBucket", 404)


def test_delete_objects_per_key_error(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ok", Body=b"x")
    long_key = "k" * 1025
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "ok"}, {"Key": long_key}]})
    deleted = [d["Key"] for d in r.get("Deleted", [])]
    errors = {e["Key"]: e for e in r.get("Errors", [])}
    assert "ok" in deleted
    # a bad key is reported, either as an error entry with a code or as deleted (nothing there)
    assert long_key in deleted or (long_key in errors and errors[long_key].get("Code")), r


def test_delete_objects_odd_keys(s3, bucket):
    keys = ["sp ace", "plus+sign", "pct%41", "ünïcödé/ключ", "amp&lt;<tag>", "quote\"'"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"1")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys]})
    assert sorted(d["Key"] for d in r["Deleted"]) == sorted(keys)
    assert _keys(s3, bucket) == []


# --- CopyObject -----------------------------------------------------------------------------

def test_copy_default_copies_metadata(s3, bucket):
    data = rand_bytes(5000)
    s3.put_object(Bucket=bucket, Key="src", Body=data, Metadata={"a": "1"}, ContentType="text/x-src",
                  CacheControl="no-store")
    r = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == f'"{md5_hex(data)}"'
    assert isinstance(r["CopyObjectResult"]["LastModified"], datetime.datetime)
    g = s3.get_object(Bucket=bucket, Key="dst")
    assert g["Body"].read() == data
    assert g["Metadata"] == {"a": "1"}
    assert g["ContentType"] == "text/x-src"
    assert g["CacheControl"] == "no-store"


def test_copy_explicit_copy_directive_ignores_new_metadata(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"abc", Metadata={"a": "1"})
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="COPY", Metadata={"b": "2"})
    assert s3.head_object(Bucket=bucket, Key="dst")["Metadata"] == {"a": "1"}


def test_copy_replace(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"abc", Metadata={"a": "1"}, ContentType="text/plain")
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="application/json")
    h = s3.head_object(Bucket=bucket, Key="dst")
    assert h["Metadata"] == {"b": "2"}
    assert h["ContentType"] == "application/json"
    # the source is untouched
    assert s3.head_object(Bucket=bucket, Key="src")["Metadata"] == {"a": "1"}


def test_copy_invalid_directive(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"abc")
    r = raw(server, "PUT", f"/{bucket}/dst", headers={"x-amz-copy-source": f"/{bucket}/src",
                                                      "x-amz-metadata-directive": "MERGE"})
    assert r.status == 400, r
    assert r.error().get("Code") in ("InvalidArgument", "InvalidRequest")


def test_self_copy_without_replace(s3, bucket):
    s3.put_object(Bucket=bucket, Key="self", Body=b"abc", Metadata={"a": "1"})
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"})
    assert err_code(e.value) == ("InvalidRequest", 400)


def test_self_copy_with_replace(s3, bucket):
    s3.put_object(Bucket=bucket, Key="self", Body=b"abc", Metadata={"a": "1"})
    s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"},
                   MetadataDirective="REPLACE", Metadata={"a": "2"})
    g = s3.get_object(Bucket=bucket, Key="self")
    assert g["Metadata"] == {"a": "2"}
    assert g["Body"].read() == b"abc"


def test_copy_across_buckets_large(s3, bucket):
    other = unique_bucket("cp")
    s3.create_bucket(Bucket=other)
    try:
        data = rand_bytes(6 * 1024 * 1024 + 11)
        s3.put_object(Bucket=bucket, Key="big", Body=data)
        r = s3.copy_object(Bucket=other, Key="big-copy", CopySource={"Bucket": bucket, "Key": "big"})
        assert r["CopyObjectResult"]["ETag"] == f'"{md5_hex(data)}"'
        assert s3.get_object(Bucket=other, Key="big-copy")["Body"].read() == data
    finally:
        s3.delete_object(Bucket=other, Key="big-copy")
        s3.delete_bucket(Bucket=other)


def test_copy_overwrites_existing(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"new content")
    s3.put_object(Bucket=bucket, Key="dst", Body=b"old content that is longer")
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"new content"


def test_copy_missing_source(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "nope"})
    assert err_code(e.value) == ("NoSuchKey", 404)


def test_copy_missing_source_bucket(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": unique_bucket("missing"), "Key": "k"})
    assert err_code(e.value) == ("NoSuchBucket", 404)


def test_copy_missing_dest_bucket(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=unique_bucket("missing"), Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert err_code(e.value) == ("NoSuchBucket", 404)


@pytest.mark.parametrize("key", ["with space/and more", "ünïcödé/日本語 ключ", "plus+and%percent", "q?mark&amp=1#hash",
                                 "semi;colon,comma"])
def test_copy_url_encoded_source(s3, bucket, key):
    s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    s3.copy_object(Bucket=bucket, Key=key + ".copy", CopySource={"Bucket": bucket, "Key": key})
    assert s3.get_object(Bucket=bucket, Key=key + ".copy")["Body"].read() == key.encode()


def test_copy_source_raw_forms(server, s3, bucket):
    key = "raw src/ä+b"
    s3.put_object(Bucket=bucket, Key=key, Body=b"raw")
    enc = urllib.parse.quote(key, safe="/")
    for i, src in enumerate([f"/{bucket}/{enc}", f"{bucket}/{enc}"]):
        r = raw(server, "PUT", f"/{bucket}/rawcopy{i}", headers={"x-amz-copy-source": src})
        assert r.status == 200, (src, r)
        assert b"CopyObjectResult" in r.body and b"ETag" in r.body
        assert s3.get_object(Bucket=bucket, Key=f"rawcopy{i}")["Body"].read() == b"raw"


def test_copy_source_conditionals(s3, bucket):
    s3.put_object(Bucket=bucket, Key="csrc", Body=b"cond")
    h = s3.head_object(Bucket=bucket, Key="csrc")
    etag, lm = h["ETag"], h["LastModified"]
    src = {"Bucket": bucket, "Key": "csrc"}
    past = lm - datetime.timedelta(days=1)
    future = lm + datetime.timedelta(days=1)
    fails = [
        {"CopySourceIfMatch": '"00000000000000000000000000000000"'},
        {"CopySourceIfNoneMatch": etag},
        {"CopySourceIfModifiedSince": lm},  # not modified since its own date (a future date is ignored)
        {"CopySourceIfUnmodifiedSince": past},
    ]
    for kw in fails:
        with pytest.raises(ClientError) as e:
            s3.copy_object(Bucket=bucket, Key="cdst", CopySource=src, **kw)
        assert err_code(e.value) == ("PreconditionFailed", 412), kw
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="cdst")
    oks = [
        {"CopySourceIfMatch": etag},
        {"CopySourceIfNoneMatch": '"00000000000000000000000000000000"'},
        {"CopySourceIfModifiedSince": past},
        {"CopySourceIfUnmodifiedSince": future},
    ]
    for kw in oks:
        s3.copy_object(Bucket=bucket, Key="cdst", CopySource=src, **kw)
    assert s3.get_object(Bucket=bucket, Key="cdst")["Body"].read() == b"cond"


def test_copy_keeps_checksum_or_drops_it_consistently(s3, bucket):
    s3.put_object(Bucket=bucket, Key="cks", Body=b"checksummed", ChecksumAlgorithm="SHA256")
    s3.copy_object(Bucket=bucket, Key="cks2", CopySource={"Bucket": bucket, "Key": "cks"})
    g = s3.get_object(Bucket=bucket, Key="cks2", ChecksumMode="ENABLED")
    assert g["Body"].read() == b"checksummed"  # botocore validates any returned checksum
