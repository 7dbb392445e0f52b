"""Requests written as an attacker would send them (raw sockets, presigned URLs, hand-built
bodies), each checked for the exact status and S3 error code cairn answers. One section per
kind of request."""

import base64
import hashlib
import socket
import time
import urllib.parse
import uuid

import pytest

from conftest import (aws_chunked_request, b64_crc32, make_client, raw,
                      running_server, sign_headers, unique_bucket)

DOMAIN = "example.test"


def _exchange(port, request, timeout=5):
    """Sends request bytes on a fresh connection; returns (status, whole response) once the
    server closes or timeout passes (a socket.timeout propagates: the server kept waiting)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        buf = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
    status = int(buf.split(b" ", 2)[1]) if buf.startswith(b"HTTP/1.") else None
    return status, buf


# --- request heads ended by bare LFs ------------------------------------------------------------

def test_bare_lf_head_is_refused_at_once(server):
    for req in [b"GET /minio/health/live HTTP/1.1\nHost: x\n\n",
                b"GET /minio/health/live HTTP/1.1\r\nHost: x\n\n",
                b"GET /minio/health/live HTTP/1.1\r\nHost: x\r\n\n"]:
        t0 = time.monotonic()
        st, resp = _exchange(server.port, req, timeout=5)
        assert st == 400, (req, resp[:200])
        assert time.monotonic() - t0 < 3, req


# --- HTTP/1.1 without Host ----------------------------------------------------------------------

def test_http11_without_host_is_refused(server):
    st, resp = _exchange(server.port, b"GET /minio/health/live HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert st == 400, resp[:200]
    # HTTP/1.0 has no such rule
    st, resp = _exchange(server.port, b"GET /minio/health/live HTTP/1.0\r\n\r\n")
    assert st == 200, resp[:200]


# --- an absolute-form target naming another bucket than the signed Host (--domain) --------------

@pytest.fixture(scope="module")
def dserver():
    with running_server(extra_args=["--domain", DOMAIN], name="hardening-domain") as srv:
        yield srv


@pytest.fixture
def two_buckets(dserver):
    p = make_client(dserver)
    alpha, beta = unique_bucket("alpha"), unique_bucket("beta")
    for b, body in ((alpha, b"alpha's document"), (beta, b"beta's secret document")):
        p.create_bucket(Bucket=b)
        p.put_object(Bucket=b, Key="doc.txt", Body=body)
    yield p, alpha, beta


def test_presigned_get_cannot_be_pointed_at_another_bucket(dserver, two_buckets):
    p, alpha, beta = two_buckets
    v = make_client(dserver, s3={"addressing_style": "virtual"},
                    endpoint=f"http://{DOMAIN}:{dserver.port}")
    url = v.generate_presigned_url("get_object", Params={"Bucket": alpha, "Key": "doc.txt"},
                                   ExpiresIn=300)
    u = urllib.parse.urlsplit(url)
    assert u.netloc == f"{alpha}.{DOMAIN}:{dserver.port}", url
    # as signed: origin-form, and absolute-form naming the same authority, both serve alpha's
    st, resp = _exchange(dserver.port, f"GET {u.path}?{u.query} HTTP/1.1\r\nHost: {u.netloc}\r\n"
                                        f"Connection: close\r\n\r\n".encode())
    assert st == 200 and resp.endswith(b"alpha's document"), resp[:300]
    st, resp = _exchange(dserver.port, f"GET {url} HTTP/1.1\r\nHost: {u.netloc}\r\n"
                                        f"Connection: close\r\n\r\n".encode())
    assert st == 200 and resp.endswith(b"alpha's document"), resp[:300]
    # the attack: the target's authority names beta, Host (which the signature covers) alpha
    target = f"http://{beta}.{DOMAIN}:{dserver.port}{u.path}?{u.query}"
    st, resp = _exchange(dserver.port, f"GET {target} HTTP/1.1\r\nHost: {u.netloc}\r\n"
                                        f"Connection: close\r\n\r\n".encode())
    assert st == 400, resp[:300]
    assert b"secret" not in resp


def test_signed_put_cannot_be_pointed_at_another_bucket(dserver, two_buckets):
    p, alpha, beta = two_buckets
    body = b"overwritten by a request signed for alpha"
    host = f"{alpha}.{DOMAIN}:{dserver.port}"
    hdrs = sign_headers("PUT", f"http://{host}/doc.txt", {"Content-Length": str(len(body))},
                        hashlib.sha256(body).hexdigest())
    head = "".join(f"{k}: {val}\r\n" for k, val in hdrs.items() if k.lower() != "host")
    target = f"http://{beta}.{DOMAIN}:{dserver.port}/doc.txt"
    st, resp = _exchange(dserver.port, f"PUT {target} HTTP/1.1\r\nHost: {host}\r\n{head}"
                                        f"Connection: close\r\n\r\n".encode() + body)
    assert st == 400, resp[:300]
    assert p.get_object(Bucket=beta, Key="doc.txt")["Body"].read() == b"beta's secret document"
    assert p.get_object(Bucket=alpha, Key="doc.txt")["Body"].read() == b"alpha's document"


# --- DeleteObjects at AWS's limits --------------------------------------------------------------

def _delete_body(objects, indent="    "):
    """A pretty-printed Delete document with every '"' of a key written as &quot;."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n',
           '<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">\n',
           f"{indent}<Quiet>false</Quiet>\n"]
    for key, vid in objects:
        out.append(f"{indent}<Object>\n{indent * 2}<Key>{key.replace(chr(34), '&quot;')}</Key>\n")
        if vid:
            out.append(f"{indent * 2}<VersionId>{vid}</VersionId>\n")
        out.append(f"{indent}</Object>\n")
    out.append("</Delete>\n")
    return "".join(out).encode()


def _post_delete(server, bucket, body):
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    return raw(server, "POST", f"/{bucket}", query="delete", body=body,
               headers={"Content-MD5": md5, "Content-Type": "application/xml"}, timeout=120)


def test_delete_objects_at_the_api_maximum(server, s3, bucket):
    # 1,000 keys of 1,024 bytes, nearly all '"' (6 bytes each escaped), with version ids,
    # pretty-printed: about 6 MB of XML that AWS accepts
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    stem = ('"' * 254 + "/") * 4
    keys = [stem + f"{i:04d}" for i in range(1000)]
    assert all(len(k.encode()) == 1024 for k in keys)
    vid = s3.put_object(Bucket=bucket, Key=keys[0], Body=b"x")["VersionId"]
    objects = [(keys[0], vid)] + [(k, str(uuid.uuid4())) for k in keys[1:]]
    body = _delete_body(objects)
    assert len(body) > 6_000_000
    r = _post_delete(server, bucket, body)
    assert r.status == 200, r
    assert r.body.count(b"<Deleted>") + r.body.count(b"<Error>") == 1000, r.body[:500]
    assert s3.list_object_versions(Bucket=bucket).get("Versions") is None


def test_delete_objects_above_the_api_maximum(server, bucket):
    # a small document padded with whitespace past what 1,000 maximal objects can take
    body = _delete_body([("k", None)])
    body = body.replace(b"<Quiet>", b" " * (9 * 1024 * 1024) + b"<Quiet>")
    r = _post_delete(server, bucket, body)
    assert (r.status, r.error().get("Code")) == (400, "MaxMessageLengthExceeded"), r


# --- aws-chunked: bytes after the final chunk, undeclared trailers ------------------------------

@pytest.mark.parametrize("mode,trailer,http_chunked", [
    ("signed", None, False),
    ("signed", "x-amz-checksum-crc32", False),
    ("unsigned", "x-amz-checksum-crc32", False),
    ("unsigned", "x-amz-checksum-crc32", True),
])
def test_aws_chunked_bytes_after_the_final_chunk(server, s3, bucket, mode, trailer, http_chunked):
    data = b"payload the signature covers" * 100
    # what follows looks like a second trailer section: it must not be read as one, nor skipped
    extra = b"x-amz-checksum-crc32:" + b64_crc32(b"other").encode() + b"\r\n\r\n"
    key = f"after-{mode}-{bool(trailer)}-{http_chunked}"
    r = aws_chunked_request(server, f"/{bucket}/{key}", data, mode=mode, trailer=trailer,
                            trailer_value=b64_crc32(data) if trailer else None,
                            http_chunked=http_chunked, extra=extra)
    assert (r.status, r.error().get("Code")) == (400, "MalformedTrailerError"), r
    assert raw(server, "HEAD", f"/{bucket}/{key}").status == 404
    # the same body without the extra bytes is stored
    r = aws_chunked_request(server, f"/{bucket}/{key}", data, mode=mode, trailer=trailer,
                            trailer_value=b64_crc32(data) if trailer else None,
                            http_chunked=http_chunked)
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data


@pytest.mark.parametrize("mode", ["signed", "unsigned"])
def test_aws_chunked_undeclared_trailer_checksum(server, bucket, mode):
    data = b"checked by nobody" * 10
    key = f"undeclared-{mode}"
    r = aws_chunked_request(server, f"/{bucket}/{key}", data, mode=mode,
                            trailer="x-amz-checksum-crc32", trailer_value=b64_crc32(b"not the data"),
                            declare_trailer=False)
    assert (r.status, r.error().get("Code")) == (400, "MalformedTrailerError"), r
    assert raw(server, "HEAD", f"/{bucket}/{key}").status == 404


def test_aws_chunked_trailer_other_than_declared(server, bucket):
    data = b"declared crc32, sent sha256" * 10
    key = "other-trailer"
    r = aws_chunked_request(server, f"/{bucket}/{key}", data, mode="unsigned",
                            trailer="x-amz-checksum-sha256",
                            trailer_value=base64.b64encode(hashlib.sha256(b"x").digest()).decode(),
                            headers={"x-amz-trailer": "x-amz-checksum-crc32"})
    assert (r.status, r.error().get("Code")) == (400, "MalformedTrailerError"), r
    assert raw(server, "HEAD", f"/{bucket}/{key}").status == 404


# --- response-* overrides are header values -----------------------------------------------------

OVERRIDES = ["response-content-type", "response-content-language", "response-expires",
             "response-cache-control", "response-content-disposition", "response-content-encoding"]


@pytest.mark.parametrize("param", OVERRIDES)
def test_response_overrides_refuse_control_characters(server, s3, bucket, param):
    s3.put_object(Bucket=bucket, Key="o", Body=b"body")
    for bad in ["\r\nX-Injected: yes", "\nX-Injected: yes", "\r", "\x0b", "\x0c", "\x7f", "\x01"]:
        for method in ("GET", "HEAD"):
            r = raw(server, method, f"/{bucket}/o", query=[(param, "a" + bad + "b")])
            assert r.status == 400, (param, repr(bad), method, r)
            assert r.headers.get("X-Injected") is None
            if method == "GET":
                assert r.error()["Code"] == "InvalidArgument", (param, repr(bad), r)
    # HTAB is allowed in a field value
    r = raw(server, "GET", f"/{bucket}/o", query=[(param, "a\tb")])
    assert r.status == 200 and r.body == b"body", r


# --- the CORS preflight does not tell whether a bucket exists -----------------------------------

def _preflight(server, path, method="GET"):
    hdrs = {"Origin": "https://attacker.example"}
    if method:
        hdrs["Access-Control-Request-Method"] = method
    r = raw(server, "OPTIONS", path, headers=hdrs, sign=False)
    e = r.error()
    return r.status, e.get("Code"), e.get("Message")


def test_preflight_answers_alike_with_and_without_the_bucket(server, s3, bucket):
    for method in ("GET", None):
        missing = _preflight(server, f"/{unique_bucket('nobucket')}/k", method)
        no_cors = _preflight(server, f"/{bucket}/k", method)
        assert missing == no_cors, (method, missing, no_cors)
        assert missing[:2] == (403, "AccessForbidden")
        assert missing[2].startswith("CORSResponse: This CORS request is not allowed.")
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
        {"AllowedMethods": ["PUT"], "AllowedOrigins": ["https://app.example.com"]}]})
    for method in ("GET", None):
        assert _preflight(server, f"/{bucket}/k", method) == \
            _preflight(server, f"/{unique_bucket('nobucket')}/k", method)
