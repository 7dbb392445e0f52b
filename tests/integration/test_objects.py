"""Object API through boto3: put/get/head/delete at the sizes that cross internal limits,
metadata and content headers, Content-MD5, x-amz-checksum-* (stored and returned with
ChecksumMode=ENABLED), ETag = MD5, overwrite atomicity."""

import datetime
import hashlib
import os
import threading
import time

import pytest
from botocore.exceptions import ClientError

from conftest import (err_code, make_client, raw, rand_bytes, md5_b64, md5_hex, b64_crc32,
                      b64_crc32c, b64_crc64nvme, b64_sha1, b64_sha256, unique_bucket)

KiB = 1024
MiB = 1024 * 1024
SIZES = [0, 1, 128 * KiB - 1, 128 * KiB, 128 * KiB + 1, MiB - 1, MiB, MiB + 1, 5 * MiB, 20 * MiB]


@pytest.mark.parametrize("size", SIZES)
def test_put_get_head_sizes(s3, bucket, size):
    data = rand_bytes(size, seed=size)
    key = f"obj-{size}"
    r = s3.put_object(Bucket=bucket, Key=key, Body=data)
    assert r["ETag"] == f'"{md5_hex(data)}"'
    h = s3.head_object(Bucket=bucket, Key=key)
    assert h["ContentLength"] == size
    assert h["ETag"] == f'"{md5_hex(data)}"'
    assert isinstance(h["LastModified"], datetime.datetime)
    g = s3.get_object(Bucket=bucket, Key=key)
    body = g["Body"].read()
    assert len(body) == size
    assert hashlib.md5(body).hexdigest() == md5_hex(data)
    assert g["ContentLength"] == size
    assert g["ETag"] == h["ETag"]


@pytest.mark.parametrize("size", [0, 1000, 3 * MiB + 7])
def test_unsigned_payload_put(server, bucket, size):
    c = make_client(server, s3={"payload_signing_enabled": False})
    data = rand_bytes(size)
    r = c.put_object(Bucket=bucket, Key="unsigned", Body=data)
    assert r["ETag"] == f'"{md5_hex(data)}"'
    assert c.get_object(Bucket=bucket, Key="unsigned")["Body"].read() == data


def test_signed_payload_put(server, bucket):
    c = make_client(server, s3={"payload_signing_enabled": True})
    data = rand_bytes(300 * KiB)
    c.put_object(Bucket=bucket, Key="signed", Body=data)
    assert c.get_object(Bucket=bucket, Key="signed")["Body"].read() == data


def test_overwrite(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ow", Body=b"first version, longer than the second")
    s3.put_object(Bucket=bucket, Key="ow", Body=b"second")
    assert s3.get_object(Bucket=bucket, Key="ow")["Body"].read() == b"second"
    assert s3.head_object(Bucket=bucket, Key="ow")["ContentLength"] == 6


def _wait_until(cond, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.05)
    return cond()


@pytest.mark.parametrize("change", ["overwrite", "delete"])
def test_get_streams_to_its_end_across_an_overwrite(server, s3, bucket, change):
    """A GET that began before an overwrite or a delete returns the old version whole, as
    S3 does: its shard files are opened part by part, so the replaced data folder must
    outlive the reader (src/object/commit.c OBJ-6), and goes once the reader is closed."""
    key = f"streamed-{change}"
    old = rand_bytes(40 * MiB, seed=21)  # 8 parts: more than socket buffers hold in flight
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = []
    for i in range(8):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=i + 1,
                           Body=old[i * 5 * MiB:(i + 1) * 5 * MiB])
        parts.append({"PartNumber": i + 1, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload={"Parts": parts})
    key_folders = [os.path.join(d, bucket, key) for d in server.default_drives()]
    assert all(os.path.isdir(f) for f in key_folders)  # the data folder's parent (FORMAT.md §3)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    got = body.read(64 * KiB)
    if change == "overwrite":
        s3.put_object(Bucket=bucket, Key=key, Body=b"new")
    else:
        s3.delete_object(Bucket=bucket, Key=key)
    time.sleep(0.2)
    # the server's reader is still open (the body outgrows the socket buffers): data kept
    assert all(os.path.isdir(f) for f in key_folders)
    got += body.read()
    body.close()
    assert len(got) == len(old) and md5_hex(got) == md5_hex(old)
    # the reader closed: the old version's data folder (and the now empty key folder) went
    assert _wait_until(lambda: not any(os.path.exists(f) for f in key_folders)), \
        [f for f in key_folders if os.path.exists(f)]
    if change == "overwrite":
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"new"
    else:
        with pytest.raises(ClientError) as ei:
            s3.get_object(Bucket=bucket, Key=key)
        assert err_code(ei.value) == ("NoSuchKey", 404)


def test_overwrite_small_with_large_and_back(s3, bucket):
    big = rand_bytes(2 * MiB + 3)
    s3.put_object(Bucket=bucket, Key="sw", Body=b"tiny")
    s3.put_object(Bucket=bucket, Key="sw", Body=big)
    assert s3.get_object(Bucket=bucket, Key="sw")["Body"].read() == big
    s3.put_object(Bucket=bucket, Key="sw", Body=b"tiny again")
    assert s3.get_object(Bucket=bucket, Key="sw")["Body"].read() == b"tiny again"


def test_concurrent_puts_one_winner(s3, bucket):
    bodies = [bytes([65 + i]) * (256 * KiB + i * 1000) for i in range(8)]
    errors = []

    def put(b):
        try:
            s3.put_object(Bucket=bucket, Key="race", Body=b)
        except Exception as e:  # noqa
            errors.append(e)

    ts = [threading.Thread(target=put, args=(b,)) for b in bodies]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    got = s3.get_object(Bucket=bucket, Key="race")
    body = got["Body"].read()
    assert body in bodies
    assert got["ETag"] == f'"{md5_hex(body)}"'


def test_get_missing_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="nope")
    assert err_code(e.value) == ("NoSuchKey", 404)


def test_get_missing_key_error_xml(server, bucket):
    r = raw(server, "GET", f"/{bucket}/nope")
    assert r.status == 404
    e = r.error()
    assert e["_root"] == "Error"
    assert e.get("Code") == "NoSuchKey"
    assert e.get("Message")
    assert e.get("RequestId") == r.headers.get("x-amz-request-id")
    assert "nope" in e.get("Resource", "") or "Key" in e


def test_head_missing_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="nope")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_head_has_no_body(server, bucket, s3):
    s3.put_object(Bucket=bucket, Key="hb", Body=b"12345")
    r = raw(server, "HEAD", f"/{bucket}/hb")
    assert r.status == 200
    assert r.headers["Content-Length"] == "5"
    assert r.headers.get("ETag") == f'"{md5_hex(b"12345")}"'
    assert r.headers.get("Last-Modified")


def test_delete_idempotent(s3, bucket):
    s3.put_object(Bucket=bucket, Key="d", Body=b"x")
    r = s3.delete_object(Bucket=bucket, Key="d")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    r = s3.delete_object(Bucket=bucket, Key="d")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    r = s3.delete_object(Bucket=bucket, Key="never-existed/deep")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="d")
    assert err_code(e.value) == ("NoSuchKey", 404)


def test_delete_in_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=unique_bucket("missing"), Key="x")
    assert err_code(e.value) == ("NoSuchBucket", 404)


# --- metadata and content headers -----------------------------------------------------------

def test_metadata_and_content_headers_roundtrip(s3, bucket):
    expires = datetime.datetime(2031, 5, 17, 10, 11, 12, tzinfo=datetime.timezone.utc)
    meta = {"color": "blue", "multi-word-name": "value with spaces", "empty-ish": "x"}
    s3.put_object(Bucket=bucket, Key="m", Body=b"<html/>", Metadata=meta,
                  ContentType="text/html; charset=utf-8", ContentEncoding="identity",
                  ContentDisposition='attachment; filename="x.html"', ContentLanguage="de-DE",
                  CacheControl="max-age=3600, public", Expires=expires)
    for r in (s3.head_object(Bucket=bucket, Key="m"), s3.get_object(Bucket=bucket, Key="m")):
        assert r["Metadata"] == meta
        assert r["ContentType"] == "text/html; charset=utf-8"
        assert r["ContentEncoding"] == "identity"
        assert r["ContentDisposition"] == 'attachment; filename="x.html"'
        assert r["ContentLanguage"] == "de-DE"
        assert r["CacheControl"] == "max-age=3600, public"
        assert r["Expires"] == expires


def test_default_content_type(server, bucket):
    r = raw(server, "PUT", f"/{bucket}/noct", body=b"abc")
    assert r.status == 200
    r = raw(server, "GET", f"/{bucket}/noct")
    assert r.headers.get("Content-Type")  # AWS: binary/octet-stream, MinIO: application/octet-stream


def test_metadata_case_folded(server, bucket, s3):
    r = raw(server, "PUT", f"/{bucket}/mc", body=b"1", headers={"X-Amz-Meta-MiXeD": "Val"})
    assert r.status == 200, r
    assert s3.head_object(Bucket=bucket, Key="mc")["Metadata"] == {"mixed": "Val"}


def test_metadata_utf8_value_roundtrip(server, bucket):
    # non-ASCII metadata is sent MIME-encoded by most SDKs; the raw bytes must come back as is.
    val = "=?UTF-8?B?w6TDtsO8?="
    r = raw(server, "PUT", f"/{bucket}/mu", body=b"1", headers={"x-amz-meta-word": val})
    assert r.status == 200, r
    r = raw(server, "HEAD", f"/{bucket}/mu")
    assert r.headers.get("x-amz-meta-word") == val


def test_metadata_under_limit(s3, bucket):
    meta = {"k1": "v" * 1000, "k2": "w" * 1000}  # 2004 bytes of names + values
    s3.put_object(Bucket=bucket, Key="ml", Body=b"x", Metadata=meta)
    assert s3.head_object(Bucket=bucket, Key="ml")["Metadata"] == meta


def test_metadata_too_large(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="mtl", Body=b"x", Metadata={"big": "v" * 2100})
    assert err_code(e.value) == ("MetadataTooLarge", 400)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="mtl")


def test_metadata_too_large_many_keys(s3, bucket):
    meta = {f"key{i:03d}": "v" * 40 for i in range(60)}  # ~2.7 KiB in total
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="mtl2", Body=b"x", Metadata=meta)
    assert err_code(e.value) == ("MetadataTooLarge", 400)


def test_invalid_storage_class(server, bucket):
    r = raw(server, "PUT", f"/{bucket}/sc", body=b"x", headers={"x-amz-storage-class": "NOPE"})
    assert r.status == 400, r
    assert r.error().get("Code") == "InvalidStorageClass"


def test_standard_storage_class(s3, bucket):
    s3.put_object(Bucket=bucket, Key="sc-ok", Body=b"x", StorageClass="STANDARD")
    assert s3.head_object(Bucket=bucket, Key="sc-ok").get("StorageClass", "STANDARD") == "STANDARD"


# --- Content-MD5 ----------------------------------------------------------------------------

def test_content_md5_good(s3, bucket):
    data = rand_bytes(70000)
    r = s3.put_object(Bucket=bucket, Key="md5", Body=data, ContentMD5=md5_b64(data))
    assert r["ETag"] == f'"{md5_hex(data)}"'


@pytest.mark.parametrize("size", [10, 2 * MiB])
def test_content_md5_bad(s3, bucket, size):
    data = rand_bytes(size)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5bad", Body=data, ContentMD5=md5_b64(b"other"))
    assert err_code(e.value) == ("BadDigest", 400)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="md5bad")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_content_md5_bad_keeps_old_version(s3, bucket):
    s3.put_object(Bucket=bucket, Key="keep", Body=b"old")
    with pytest.raises(ClientError):
        s3.put_object(Bucket=bucket, Key="keep", Body=b"new!", ContentMD5=md5_b64(b"nope"))
    assert s3.get_object(Bucket=bucket, Key="keep")["Body"].read() == b"old"


def test_content_md5_malformed(server, bucket):
    r = raw(server, "PUT", f"/{bucket}/md5mal", body=b"abc", headers={"Content-MD5": "not-base64!!"})
    assert r.status == 400, r
    assert r.error().get("Code") == "InvalidDigest"


# --- flexible checksums ---------------------------------------------------------------------

def _have_crt():
    try:
        from botocore.compat import HAS_CRT
        return HAS_CRT
    except ImportError:
        return False


ALGOS = ["CRC32", "SHA1", "SHA256"] + (["CRC32C"] if _have_crt() else [])


@pytest.mark.parametrize("algo", ALGOS)
def test_checksum_algorithm_roundtrip(s3, bucket, algo):
    data = rand_bytes(200 * KiB + 3)
    want = {"CRC32": b64_crc32, "SHA1": b64_sha1, "SHA256": b64_sha256, "CRC32C": b64_crc32c}[algo](data)
    r = s3.put_object(Bucket=bucket, Key=f"ck-{algo}", Body=data, ChecksumAlgorithm=algo)
    assert r.get(f"Checksum{algo}") in (None, want)
    h = s3.head_object(Bucket=bucket, Key=f"ck-{algo}", ChecksumMode="ENABLED")
    assert h.get(f"Checksum{algo}") == want
    g = s3.get_object(Bucket=bucket, Key=f"ck-{algo}", ChecksumMode="ENABLED")
    assert g.get(f"Checksum{algo}") == want
    assert g["Body"].read() == data  # botocore also validates the body against the header


def test_checksum_crc32c_roundtrip(s3, bucket):
    # this botocore needs awscrt for CRC32C: compute it here and send the header ourselves
    data = rand_bytes(50 * KiB + 1)
    want = b64_crc32c(data)
    s3.put_object(Bucket=bucket, Key="ck-crc32c", Body=data, ChecksumCRC32C=want)
    h = s3.head_object(Bucket=bucket, Key="ck-crc32c", ChecksumMode="ENABLED")
    assert h.get("ChecksumCRC32C") == want
    g = s3.get_object(Bucket=bucket, Key="ck-crc32c", ChecksumMode="ENABLED")
    assert g.get("ChecksumCRC32C") == want
    assert g["Body"].read() == data


def test_checksum_crc64nvme_roundtrip(server, bucket):
    # not in this botocore's model: raw signed requests
    data = rand_bytes(40 * KiB + 5)
    want = b64_crc64nvme(data)
    r = raw(server, "PUT", f"/{bucket}/ck-crc64", body=data, headers={"x-amz-checksum-crc64nvme": want})
    assert r.status == 200, r
    for method in ("HEAD", "GET"):
        r = raw(server, method, f"/{bucket}/ck-crc64", headers={"x-amz-checksum-mode": "ENABLED"})
        assert r.status == 200
        assert r.headers.get("x-amz-checksum-crc64nvme") == want, (method, dict(r.headers))


@pytest.mark.parametrize("hdr,fn", [("x-amz-checksum-crc32", b64_crc32), ("x-amz-checksum-crc32c", b64_crc32c),
                                    ("x-amz-checksum-crc64nvme", b64_crc64nvme), ("x-amz-checksum-sha1", b64_sha1),
                                    ("x-amz-checksum-sha256", b64_sha256)])
def test_checksum_mismatch_rejected(server, bucket, hdr, fn):
    data = rand_bytes(3000)
    r = raw(server, "PUT", f"/{bucket}/ck-bad", body=data, headers={hdr: fn(b"something else")})
    assert r.status == 400, r
    assert r.error().get("Code") in ("BadDigest", "XAmzContentChecksumMismatch"), r
    r = raw(server, "HEAD", f"/{bucket}/ck-bad")
    assert r.status == 404


def test_checksum_malformed_value(server, bucket):
    r = raw(server, "PUT", f"/{bucket}/ck-mal", body=b"abc", headers={"x-amz-checksum-crc32": "@@@"})
    assert r.status == 400, r
    assert r.error().get("Code")


def test_checksum_not_returned_as_wrong_value_after_overwrite(s3, bucket):
    data = b"first"
    s3.put_object(Bucket=bucket, Key="ck-ow", Body=data, ChecksumAlgorithm="SHA256")
    s3.put_object(Bucket=bucket, Key="ck-ow", Body=b"second, no checksum")
    h = s3.head_object(Bucket=bucket, Key="ck-ow", ChecksumMode="ENABLED")
    assert h.get("ChecksumSHA256") in (None, b64_sha256(b"second, no checksum"))
