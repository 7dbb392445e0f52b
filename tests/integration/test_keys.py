"""Object keys: UTF-8, odd characters, the 1024-byte limit, "a" beside "a/b", and the dot and
slash components that must either work as ordinary keys or be refused with a 4xx S3 error —
never escape the data folder (checked on the filesystem)."""

import hashlib
import os
import urllib.parse

import pytest
from botocore.exceptions import ClientError

from conftest import one_drive_layout, err_code, make_client, raw, md5_hex

ODD_KEYS = [
    "plain",
    "with space",
    "  leading and trailing  ",
    "plus+sign",
    "percent%20literal",
    "percent%",
    "%",
    "%%",
    "%meta",
    "hash#frag",
    "question?mark",
    "amp&and=eq",
    "semi;colon",
    "tilde~star*paren()",
    "quote\"apos'",
    "back\\slash",
    "ünïcödé",
    "日本語/キー",
    "emoji 😀 key",
    "ключ/значение",
    "tab\there",
    "ctl\x01char",
    "<xml>&amp;</xml>",
    ("x" * 250 + "/") * 4 + "y" * 20,  # 1024 bytes in components a filesystem can name
]


@pytest.mark.parametrize("key", ODD_KEYS, ids=lambda k: repr(k)[:40])
def test_odd_key_roundtrip(s3, bucket, key):
    body = hashlib.sha256(key.encode()).digest() * 3
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body
    assert s3.head_object(Bucket=bucket, Key=key)["ContentLength"] == len(body)
    r = s3.list_objects_v2(Bucket=bucket)
    assert [o["Key"] for o in r.get("Contents", [])] == [key]
    r = s3.list_objects(Bucket=bucket, EncodingType="url")  # explicit: boto3 does not decode it
    assert [urllib.parse.unquote_plus(o["Key"]) for o in r.get("Contents", [])] == [key]
    s3.delete_object(Bucket=bucket, Key=key)
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


# A segment between slashes longer than 255 bytes cannot be a file name on the drive; cairn
# refuses it with InvalidObjectName (as MinIO does on ext4/xfs), a documented deviation from
# AWS (docs/ARCHITECTURE.md). Such keys never reach the disk.
@pytest.mark.parametrize("key", ["a" * 1024, "é" * 512, "d/" + "c" * 256])
def test_overlong_segment_refused(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    assert err_code(e.value) == ("InvalidObjectName", 400)
    assert "255" in e.value.response["Error"]["Message"]
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


@pytest.mark.parametrize("key", ["a" * 1025, "é" * 513, "b/" * 600])
def test_key_too_long(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    assert err_code(e.value) == ("KeyTooLongError", 400)


def test_key_too_long_on_get_is_4xx(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="z" * 1100)
    assert 400 <= e.value.response["ResponseMetadata"]["HTTPStatusCode"] < 500


@pytest.mark.parametrize("enc", ["bad%FFutf8", "bad%C3", "nul%00byte", "over%C0%AFlong", "sur%ED%A0%80rogate"])
def test_invalid_utf8_or_nul_refused(server, bucket, enc):
    r = raw(server, "PUT", f"/{bucket}/{enc}", body=b"x")
    assert 400 <= r.status < 500, r
    assert r.error().get("Code"), r


def test_file_and_folder_coexist(s3, bucket):
    for order in (["a", "a/b", "a/b/c"], ["x/y/z", "x/y", "x"]):
        for k in order:
            s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
        for k in order:
            assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == k.encode()
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["a", "a/b", "a/b/c", "x", "x/y", "x/y/z"]
    s3.delete_object(Bucket=bucket, Key="a")
    assert s3.get_object(Bucket=bucket, Key="a/b")["Body"].read() == b"a/b"
    s3.delete_object(Bucket=bucket, Key="x/y/z")
    assert s3.get_object(Bucket=bucket, Key="x/y")["Body"].read() == b"x/y"
    with pytest.raises(ClientError):
        s3.get_object(Bucket=bucket, Key="a")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["a/b", "a/b/c", "x", "x/y"]


def test_internal_names_do_not_collide(s3, bucket):
    # the local drive keeps "%m.<leaf>" records beside key folders, "%meta" records of long
    # leaves and "%d.<id>" data folders inside them
    keys = ["col", "col/%meta", "col/%d.00000000", "col/%", "col/meta", "col/xl.meta", "col/part.1",
            "col/.cairn.sys", "col/.cairn.sys/tmp/x", "%d.x/%meta", "%m.col", "col/%m.col",
            "%m.", "%m./x", "col/%m.col/%m."]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=("content of " + k).encode() * 100)
    for k in keys:
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == ("content of " + k).encode() * 100, k
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert listed == sorted(keys, key=lambda s: s.encode())


def test_trailing_slash_folder_marker(server, s3, bucket):
    try:
        s3.put_object(Bucket=bucket, Key="dir/", Body=b"")
    except ClientError as e:
        assert 400 <= e.response["ResponseMetadata"]["HTTPStatusCode"] < 500
        assert e.response["Error"]["Code"]
        return
    # accepted: it must behave as an ordinary key, beside keys below it. (A fresh client: the
    # empty PUT above may poison boto3's pooled connection, see test_protocol's
    # test_boto3_empty_put_then_put_same_connection.)
    s3 = make_client(server)
    s3.put_object(Bucket=bucket, Key="dir/file", Body=b"f")
    assert s3.get_object(Bucket=bucket, Key="dir/")["Body"].read() == b""
    assert s3.get_object(Bucket=bucket, Key="dir/file")["Body"].read() == b"f"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["dir/", "dir/file"]
    r = s3.list_objects_v2(Bucket=bucket, Prefix="dir/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["dir/", "dir/file"]
    s3.delete_object(Bucket=bucket, Key="dir/")
    assert s3.get_object(Bucket=bucket, Key="dir/file")["Body"].read() == b"f"
    with pytest.raises(ClientError):
        s3.get_object(Bucket=bucket, Key="dir/")


# Paths sent exactly as written (raw, signed by botocore without normalisation).
DOT_PATHS = [
    "a//b", "//lead", "trail//", "./x", "x/./y", "x/.", ".", "..", "../escape1", "../../escape2",
    "../../../escape3", "x/../../../escape4", "x/..", "%2E%2E/escape5", "%2e%2e%2F%2e%2e%2Fescape6",
    "..%2F..%2F..%2Fescape7", "x/%2E%2E/%2E%2E/%2E%2E/escape8", "...", ".../....", "a/.../b",
    "..%2F.cairn.sys%2Fformat", "../.cairn.sys/format", "..%5C..%5Cwin",
]


def _tree(root):
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def _sys_snapshot(data_dir):
    snap = {}
    sysdir = os.path.join(data_dir, ".cairn.sys")
    for d, dirs, files in os.walk(sysdir):
        if os.path.relpath(d, sysdir).startswith("tmp"):
            continue
        for f in files:
            p = os.path.join(d, f)
            try:
                with open(p, "rb") as fh:
                    snap[os.path.relpath(p, sysdir)] = hashlib.md5(fh.read()).hexdigest()
            except OSError:
                pass
    return snap


def test_dot_components_never_escape(server, s3, bucket):
    inside = os.path.join("jail", "data") + os.sep
    outside_before = {t for t in _tree(server.root) if not t.startswith(inside)}
    sys_before = _sys_snapshot(server.data_dir)
    results = {}
    for p in DOT_PATHS:
        body = f"dot test {p}".encode()
        r = raw(server, "PUT", f"/{bucket}/{p}", body=body)
        assert r.status < 500, (p, r)
        if r.status >= 300:
            assert 400 <= r.status < 500, (p, r)
            assert r.error().get("Code"), (p, r)
            results[p] = None
            continue
        results[p] = body
        g = raw(server, "GET", f"/{bucket}/{p}")
        assert g.status == 200 and g.body == body, (p, g)
    # accepted keys come back from listing as themselves (decoded once)
    listed = set()
    token = None
    for _ in range(20):
        kw = {"Bucket": bucket}
        if token:
            kw["ContinuationToken"] = token
        lr = s3.list_objects_v2(**kw)
        listed |= {o["Key"] for o in lr.get("Contents", [])}
        if not lr.get("IsTruncated"):
            break
        token = lr["NextContinuationToken"]
    for p, body in results.items():
        if body is None:
            continue
        key = urllib.parse.unquote(p)
        assert key in listed, (p, key, sorted(listed))
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body, p
    # nothing was created outside the data folder, and the system area is intact
    tree = _tree(server.root)
    outside = {t for t in tree if not t.startswith(inside)}
    assert outside == outside_before, sorted(outside - outside_before)
    assert _sys_snapshot(server.data_dir) == sys_before
    # and nothing landed at the data folder's top level except buckets and the system area
    for name in os.listdir(server.data_dir):
        assert name == ".cairn.sys" or not name.startswith(("escape", "win", ".."))
    # the server still serves
    assert s3.list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_dot_keys_via_boto(s3, bucket):
    for key in ["a//b", "x/./y", "x/../y", "../up", "./here", "..", "."]:
        try:
            s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
        except ClientError as e:
            st = e.response["ResponseMetadata"]["HTTPStatusCode"]
            assert 400 <= st < 500, (key, e.response)
            continue
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == key.encode(), key


@one_drive_layout
def test_bucket_path_traversal(server):
    for p in ["/..", "/../x", "/%2E%2E/x", "/.cairn.sys/format", "/.cairn.sys", "/%2Ecairn.sys/tmp"]:
        r = raw(server, "GET", p)
        assert r.status in (400, 403, 404, 405), (p, r)
        assert r.error().get("Code"), (p, r)
        r = raw(server, "PUT", p + "/obj", body=b"x")
        assert 400 <= r.status < 500, (p, r)
    assert os.path.exists(os.path.join(server.data_dir, ".cairn.sys"))
