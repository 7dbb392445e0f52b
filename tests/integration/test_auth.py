"""Authentication: SigV4 header (unsigned and signed payloads, tampering), aws-chunked
streaming SigV4 with per-chunk signatures and trailers, presigned URLs (expiry), SigV2
header and query, wrong secret, unknown key, anonymous access, clock skew."""

import time
import urllib.error
import urllib.parse
import urllib.request

import botocore
import botocore.auth
import pytest
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import (ACCESS, SECRET, REGION, aws_chunked_request, b64_crc32, b64_crc32c,
                      b64_crc64nvme, b64_sha256, b64_sha1, clock_shift, err_code, make_client, raw,
                      rand_bytes, md5_hex)
import boto3
import hashlib


def urlopen(url, method="GET", data=None, headers=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def code_of(body):
    from conftest import parse_error
    return parse_error(body).get("Code")


# --- presigned URLs -------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["plain", "with space/ünï+cödé%"])
def test_presigned_get(s3, bucket, key):
    s3.put_object(Bucket=bucket, Key=key, Body=b"presigned body")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)
    st, body, _ = urlopen(url)
    assert (st, body) == (200, b"presigned body")


def test_presigned_get_with_response_override(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ov", Body=b"x")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "ov",
                                                          "ResponseContentType": "text/x-presigned"})
    st, body, hdrs = urlopen(url)
    assert st == 200 and hdrs["Content-Type"] == "text/x-presigned"


def test_presigned_put(s3, bucket):
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pput"}, ExpiresIn=300)
    data = rand_bytes(100000)
    st, body, hdrs = urlopen(url, "PUT", data)
    assert st == 200, body
    assert hdrs.get("ETag") == f'"{md5_hex(data)}"'
    assert s3.get_object(Bucket=bucket, Key="pput")["Body"].read() == data


def test_presigned_head_and_delete(s3, bucket):
    s3.put_object(Bucket=bucket, Key="phd", Body=b"abc")
    url = s3.generate_presigned_url("head_object", Params={"Bucket": bucket, "Key": "phd"})
    st, _, hdrs = urlopen(url, "HEAD")
    assert st == 200 and hdrs["Content-Length"] == "3"
    url = s3.generate_presigned_url("delete_object", Params={"Bucket": bucket, "Key": "phd"})
    st, _, _ = urlopen(url, "DELETE")
    assert st == 204


def test_presigned_expired(s3, bucket):
    s3.put_object(Bucket=bucket, Key="exp", Body=b"x")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"}, ExpiresIn=1)
    time.sleep(2.5)
    st, body, _ = urlopen(url)
    assert st == 403, body
    assert code_of(body) == "AccessDenied"


def test_presigned_expiry_over_a_week(s3, bucket):
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "x"}, ExpiresIn=604801)
    st, body, _ = urlopen(url)
    assert (st, code_of(body)) == (403, "AuthorizationQueryParametersError"), body  # AWS's answer


def test_presigned_tampered(s3, bucket):
    s3.put_object(Bucket=bucket, Key="t1", Body=b"1")
    s3.put_object(Bucket=bucket, Key="t2", Body=b"2")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "t1"})
    st, body, _ = urlopen(url.replace("/t1?", "/t2?"))
    assert st == 403 and code_of(body) == "SignatureDoesNotMatch", body
    # a presigned GET cannot be replayed as a PUT
    st, body, _ = urlopen(url, "PUT", b"overwrite")
    assert st == 403, body
    assert s3.get_object(Bucket=bucket, Key="t1")["Body"].read() == b"1"


def test_presigned_wrong_secret(server, bucket):
    bad = make_client(server, secret="not-the-secret")
    url = bad.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "x"})
    st, body, _ = urlopen(url)
    assert st == 403 and code_of(body) == "SignatureDoesNotMatch", body


def test_presigned_unknown_key(server, bucket):
    bad = make_client(server, access="NOSUCHACCESSKEY")
    url = bad.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "x"})
    st, body, _ = urlopen(url)
    assert st == 403 and code_of(body) == "InvalidAccessKeyId", body


# --- credentials ------------------------------------------------------------------------------

def test_wrong_secret(server, s3, bucket):
    bad = make_client(server, secret="wrong-secret-123")
    with pytest.raises(ClientError) as e:
        bad.list_buckets()
    assert err_code(e.value) == ("SignatureDoesNotMatch", 403)
    with pytest.raises(ClientError) as e:
        bad.put_object(Bucket=bucket, Key="nope", Body=b"x")
    assert err_code(e.value) == ("SignatureDoesNotMatch", 403)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="nope")


def test_unknown_access_key(server):
    bad = make_client(server, access="AKIAUNKNOWNUNKNOWN")
    with pytest.raises(ClientError) as e:
        bad.list_buckets()
    assert err_code(e.value) == ("InvalidAccessKeyId", 403)


def test_anonymous_denied(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="anon", Body=b"secret")
    anon = boto3.client("s3", endpoint_url=server.endpoint, region_name=REGION,
                        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                                      retries={"max_attempts": 0}))
    for call in (lambda: anon.list_buckets(), lambda: anon.get_object(Bucket=bucket, Key="anon"),
                 lambda: anon.put_object(Bucket=bucket, Key="anon2", Body=b"x"),
                 lambda: anon.list_objects_v2(Bucket=bucket),
                 lambda: anon.delete_object(Bucket=bucket, Key="anon"),
                 lambda: anon.create_bucket(Bucket="anon-bucket-x")):
        with pytest.raises(ClientError) as e:
            call()
        assert err_code(e.value) == ("AccessDenied", 403)
    assert s3.get_object(Bucket=bucket, Key="anon")["Body"].read() == b"secret"


def test_anonymous_head_is_403(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="anonh", Body=b"x")
    r = raw(server, "HEAD", f"/{bucket}/anonh", sign=False)
    assert r.status == 403


def test_modified_signed_header(server, bucket):
    url = f"http://127.0.0.1:{server.port}/{bucket}/sh"
    import conftest
    h = conftest.sign_headers("PUT", url, {"x-amz-meta-a": "1"}, hashlib.sha256(b"x").hexdigest())
    h["x-amz-meta-a"] = "2"
    r = raw(server, "PUT", f"/{bucket}/sh", headers=h, body=b"x", sign=False)
    assert r.status == 403 and r.error().get("Code") == "SignatureDoesNotMatch", r


def test_malformed_authorization(server):
    # AWS: an unknown scheme ("Bearer") is 400 InvalidArgument "Unsupported Authorization Type"
    for auth in ("AWS4-HMAC-SHA256 garbage", "AWS4-HMAC-SHA256 Credential=x, SignedHeaders=host, Signature=00",
                 "Bearer abc", "AWS4-HMAC-SHA256 Credential=" + ACCESS + "/20200101/us-east-1/s3/aws4_request"):
        r = raw(server, "GET", "/", headers={"Authorization": auth, "x-amz-date": "20200101T000000Z",
                                             "x-amz-content-sha256": "UNSIGNED-PAYLOAD"}, sign=False)
        assert r.status in (400, 403), (auth, r)
        assert r.error().get("Code"), (auth, r)


# --- clock skew -------------------------------------------------------------------------------

@pytest.mark.parametrize("skew", [20 * 60, -20 * 60, 3600 * 24])
def test_clock_skew_rejected(s3, skew):
    with clock_shift(skew):
        with pytest.raises(ClientError) as e:
            s3.list_buckets()
    assert err_code(e.value) == ("RequestTimeTooSkewed", 403)


def test_clock_skew_raw(server):
    r = raw(server, "GET", "/", skew=-25 * 60)
    assert r.status == 403 and r.error().get("Code") == "RequestTimeTooSkewed", r


@pytest.mark.parametrize("skew", [10 * 60, -10 * 60])
def test_clock_skew_tolerated(s3, skew):
    with clock_shift(skew):
        assert s3.list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200


# --- SigV2 ------------------------------------------------------------------------------------

def _sigv2_available():
    return "s3" in botocore.auth.AUTH_TYPE_MAPS and "s3-query" in botocore.auth.AUTH_TYPE_MAPS


@pytest.mark.skipif(not _sigv2_available(), reason="this botocore has no SigV2 ('s3') signer")
def test_sigv2_header(server, bucket):
    c = make_client(server, signature_version="s3")
    data = rand_bytes(12345)
    c.put_object(Bucket=bucket, Key="v2 key/ü", Body=data, Metadata={"x": "y"}, ContentType="text/v2")
    g = c.get_object(Bucket=bucket, Key="v2 key/ü")
    assert g["Body"].read() == data and g["Metadata"] == {"x": "y"}
    assert c.head_object(Bucket=bucket, Key="v2 key/ü")["ContentLength"] == len(data)
    assert bucket in [b["Name"] for b in c.list_buckets()["Buckets"]]
    c.copy_object(Bucket=bucket, Key="v2copy", CopySource={"Bucket": bucket, "Key": "v2 key/ü"})
    c.delete_object(Bucket=bucket, Key="v2 key/ü")
    c.delete_object(Bucket=bucket, Key="v2copy")


# SigV2 bucket-level requests (ListObjects, HeadBucket) are tested in virtual-host style in
# test_vhost.py: in path style botocore signs the resource "/bucket/" but requests "/bucket",
# which AWS's own rules (resource = the request path) do not match either.


@pytest.mark.skipif(not _sigv2_available(), reason="this botocore has no SigV2 ('s3') signer")
def test_sigv2_wrong_secret(server):
    c = make_client(server, signature_version="s3", secret="bad-secret-v2")
    with pytest.raises(ClientError) as e:
        c.list_buckets()
    assert err_code(e.value) == ("SignatureDoesNotMatch", 403)
    c = make_client(server, signature_version="s3", access="NOSUCHKEYV2")
    with pytest.raises(ClientError) as e:
        c.list_buckets()
    assert err_code(e.value) == ("InvalidAccessKeyId", 403)


@pytest.mark.skipif(not _sigv2_available(), reason="this botocore has no SigV2 ('s3') signer")
def test_sigv2_presigned(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="v2q", Body=b"query v2")
    c = make_client(server, signature_version="s3")
    url = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "v2q"}, ExpiresIn=300)
    assert "Signature=" in url and "AWSAccessKeyId=" in url
    st, body, _ = urlopen(url)
    assert (st, body) == (200, b"query v2")
    url = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "v2q"}, ExpiresIn=1)
    time.sleep(2.5)
    st, body, _ = urlopen(url)
    assert st == 403 and code_of(body) == "AccessDenied", body


# --- payload hashes -----------------------------------------------------------------------------

def test_signed_payload_tampered(server, s3, bucket):
    good = b"A" * 5000
    bad = b"B" * 5000
    r = raw(server, "PUT", f"/{bucket}/tamper", body=bad, payload_hash=hashlib.sha256(good).hexdigest())
    assert r.status == 400, r
    assert r.error().get("Code") == "XAmzContentSHA256Mismatch", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="tamper")


def test_signed_payload_empty_body(server, s3, bucket):
    # an empty body is checked against the declared hash like any other (the server skips
    # hashing only when the declared hash is the empty string's)
    r = raw(server, "PUT", f"/{bucket}/empty-bad", body=b"", payload_hash=hashlib.sha256(b"x").hexdigest())
    assert r.status == 400 and r.error().get("Code") == "XAmzContentSHA256Mismatch", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="empty-bad")
    r = raw(server, "PUT", f"/{bucket}/empty-good", body=b"", payload_hash=hashlib.sha256(b"").hexdigest())
    assert r.status == 200, r
    assert s3.head_object(Bucket=bucket, Key="empty-good")["ContentLength"] == 0


def test_signed_payload_tampered_large(server, s3, bucket):
    good = rand_bytes(3 * 1024 * 1024)
    bad = good[:-1] + bytes([good[-1] ^ 1])
    r = raw(server, "PUT", f"/{bucket}/tamper2", body=bad, payload_hash=hashlib.sha256(good).hexdigest())
    assert r.status == 400 and r.error().get("Code") == "XAmzContentSHA256Mismatch", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="tamper2")


def test_signed_payload_ok_raw(server, s3, bucket):
    r = raw(server, "PUT", f"/{bucket}/sp", body=b"signed!")
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="sp")["Body"].read() == b"signed!"


def test_malformed_content_sha256(server, bucket):
    r = raw(server, "PUT", f"/{bucket}/badsha", body=b"x", payload_hash="not-a-hash")
    assert r.status in (400, 403), r
    assert r.error().get("Code"), r


# --- aws-chunked streaming ----------------------------------------------------------------------

@pytest.mark.parametrize("size,chunk", [(0, 65536), (1, 65536), (200 * 1024 + 7, 65536), (3 * 1024 * 1024, 1024 * 1024),
                                        (70000, 8192)])
def test_streaming_sigv4(server, s3, bucket, size, chunk):
    data = rand_bytes(size)
    r = aws_chunked_request(server, f"/{bucket}/stream", data, chunk=chunk)
    assert r.status == 200, r
    assert r.headers.get("ETag") == f'"{md5_hex(data)}"'
    g = s3.get_object(Bucket=bucket, Key="stream")
    assert g["Body"].read() == data
    assert g.get("ContentEncoding") in (None, "")  # aws-chunked is not stored as an encoding


def test_streaming_sigv4_keeps_other_content_encoding(server, s3, bucket):
    r = aws_chunked_request(server, f"/{bucket}/gz", b"zzz", headers={"Content-Encoding": "aws-chunked,gzip"})
    assert r.status == 200, r
    assert s3.head_object(Bucket=bucket, Key="gz").get("ContentEncoding") == "gzip"


@pytest.mark.parametrize("tamper", ["data", "chunksig"])
def test_streaming_sigv4_tampered(server, s3, bucket, tamper):
    data = rand_bytes(150000)
    r = aws_chunked_request(server, f"/{bucket}/st-{tamper}", data, tamper=tamper)
    assert r.status == 403, r
    assert r.error().get("Code") == "SignatureDoesNotMatch", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key=f"st-{tamper}")


def test_streaming_sigv4_wrong_secret(server, bucket):
    r = aws_chunked_request(server, f"/{bucket}/st-ws", b"data", secret="wrong")
    assert r.status == 403 and r.error().get("Code") == "SignatureDoesNotMatch", r


def test_streaming_decoded_length_mismatch(server, s3, bucket):
    r = aws_chunked_request(server, f"/{bucket}/st-len", b"x" * 1000, decoded_len=1001)
    assert 400 <= r.status < 500, r
    assert r.error().get("Code"), r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="st-len")


TRAILERS = [("x-amz-checksum-crc32", b64_crc32, "ChecksumCRC32"), ("x-amz-checksum-crc32c", b64_crc32c, "ChecksumCRC32C"),
            ("x-amz-checksum-sha1", b64_sha1, "ChecksumSHA1"), ("x-amz-checksum-sha256", b64_sha256, "ChecksumSHA256"),
            ("x-amz-checksum-crc64nvme", b64_crc64nvme, None)]


@pytest.mark.parametrize("name,fn,field", TRAILERS)
def test_unsigned_trailer(server, s3, bucket, name, fn, field):
    data = rand_bytes(100 * 1024 + 3)
    r = aws_chunked_request(server, f"/{bucket}/tr", data, mode="unsigned", trailer=name, trailer_value=fn(data))
    assert r.status == 200, r
    assert r.headers.get("ETag") == f'"{md5_hex(data)}"'
    h = raw(server, "HEAD", f"/{bucket}/tr", headers={"x-amz-checksum-mode": "ENABLED"})
    assert h.headers.get(name) == fn(data), dict(h.headers)
    if field:
        assert s3.head_object(Bucket=bucket, Key="tr", ChecksumMode="ENABLED").get(field) == fn(data)
    assert s3.get_object(Bucket=bucket, Key="tr")["Body"].read() == data


@pytest.mark.parametrize("name,fn,field", TRAILERS)
def test_unsigned_trailer_wrong_checksum(server, s3, bucket, name, fn, field):
    data = rand_bytes(5000)
    r = aws_chunked_request(server, f"/{bucket}/trbad", data, mode="unsigned", trailer=name,
                            trailer_value=fn(b"different"))
    assert r.status == 400, r
    assert r.error().get("Code") in ("BadDigest", "XAmzContentChecksumMismatch", "InvalidRequest"), r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="trbad")


def test_unsigned_trailer_inside_http_chunked(server, s3, bucket):
    # what the JS SDK sends for a stream of unknown length
    data = rand_bytes(300000)
    r = aws_chunked_request(server, f"/{bucket}/trc", data, mode="unsigned", trailer="x-amz-checksum-crc32",
                            trailer_value=b64_crc32(data), http_chunked=True)
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="trc")["Body"].read() == data


def test_signed_trailer(server, s3, bucket):
    data = rand_bytes(200000)
    r = aws_chunked_request(server, f"/{bucket}/strl", data, mode="signed", trailer="x-amz-checksum-crc32",
                            trailer_value=b64_crc32(data))
    assert r.status == 200, r
    assert s3.head_object(Bucket=bucket, Key="strl", ChecksumMode="ENABLED").get("ChecksumCRC32") == b64_crc32(data)


def test_signed_trailer_bad_signature(server, s3, bucket):
    data = rand_bytes(1000)
    r = aws_chunked_request(server, f"/{bucket}/strl2", data, mode="signed", trailer="x-amz-checksum-crc32",
                            trailer_value=b64_crc32(data), tamper="trailersig")
    assert r.status == 403 and r.error().get("Code") == "SignatureDoesNotMatch", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="strl2")


def test_signed_trailer_wrong_checksum(server, s3, bucket):
    data = rand_bytes(1000)
    r = aws_chunked_request(server, f"/{bucket}/strl3", data, mode="signed", trailer="x-amz-checksum-crc32",
                            trailer_value=b64_crc32(b"nope"))
    assert r.status == 400, r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="strl3")
