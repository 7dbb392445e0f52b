"""Attacks on what a request may do and on the workers, written as the attacker sends them
(docs/SECURITY.md): unsigned x-amz-* headers added to signed and presigned requests, and
anonymous or slow clients that try to hold the server's workers."""

import http.client
import socket
import threading
import time
import urllib.parse

import pytest

from conftest import (ACCESS, SECRET, Resp, make_client, parse_error, raw, running_server,
                      sign_headers)


def send_url(srv, method, url, headers=None, body=b""):
    """Sends `url` (a full http://127.0.0.1:port/... URL, e.g. a presigned one) as is, with
    extra headers that are not part of any signature."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        target = u.path + (f"?{u.query}" if u.query else "")
        conn.request(method, target, body=body, headers=dict(headers or {}))
        r = conn.getresponse()
        return Resp(r.status, r.headers, r.read())
    finally:
        conn.close()


def signed_then_added(srv, method, path, signed=None, added=None, body=b""):
    """A header-signed request (botocore's SigV4 over `signed`), sent with `added` headers
    appended after signing."""
    url = f"http://127.0.0.1:{srv.port}{path}"
    hdrs = sign_headers(method, url, signed or {}, "UNSIGNED-PAYLOAD")
    hdrs.update(added or {})
    return send_url(srv, method, url, hdrs, body)


@pytest.fixture(scope="module")
def two_buckets(server):
    s3 = make_client(server)
    s3.create_bucket(Bucket="drop")
    s3.create_bucket(Bucket="secret-bkt")
    s3.put_object(Bucket="secret-bkt", Key="payroll.csv", Body=b"alice,100000\nbob,90000\n")
    return s3


# --- 1. a request does only what was signed ---------------------------------------------------

def test_presigned_put_with_unsigned_copy_source_is_refused(server, two_buckets):
    s3 = two_buckets
    put = s3.generate_presigned_url("put_object", Params={"Bucket": "drop", "Key": "slot"}, ExpiresIn=300)
    r = send_url(server, "PUT", put, {"x-amz-copy-source": "/secret-bkt/payroll.csv"})
    assert r.status == 403, r
    e = r.error()
    assert e["Code"] == "AccessDenied"
    assert e["Message"] == "There were headers present in the request which were not signed"
    assert e["HeadersNotSigned"] == "x-amz-copy-source"
    # nothing was stored in the slot
    get = s3.generate_presigned_url("get_object", Params={"Bucket": "drop", "Key": "slot"}, ExpiresIn=300)
    assert send_url(server, "GET", get).status == 404
    # the link itself still works for what it was made for
    assert send_url(server, "PUT", put, body=b"my upload").status == 200
    g = send_url(server, "GET", get)
    assert g.status == 200 and g.body == b"my upload"


@pytest.mark.parametrize("name,value", [
    ("x-amz-meta-owner", "mallory"),
    ("x-amz-tagging", "public=yes"),
    ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
    ("x-amz-website-redirect-location", "/evil"),
    ("X-Amz-Acl", "public-read"),
    ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
])
def test_presigned_put_with_any_unsigned_amz_header_is_refused(server, two_buckets, name, value):
    s3 = two_buckets
    key = f"p-{name}"
    put = s3.generate_presigned_url("put_object", Params={"Bucket": "drop", "Key": key}, ExpiresIn=300)
    r = send_url(server, "PUT", put, {name: value}, body=b"data")
    assert r.status == 403, r
    assert r.error()["Code"] == "AccessDenied"
    assert r.error()["HeadersNotSigned"] == name.lower()
    with pytest.raises(Exception):
        s3.head_object(Bucket="drop", Key=key)


def test_presigned_get_with_unsigned_amz_header_is_refused(server, two_buckets):
    s3 = two_buckets
    get = s3.generate_presigned_url("get_object", Params={"Bucket": "secret-bkt", "Key": "payroll.csv"},
                                    ExpiresIn=300)
    assert send_url(server, "GET", get).status == 200
    r = send_url(server, "GET", get, {"x-amz-checksum-mode": "ENABLED"})
    assert r.status == 403 and r.error()["HeadersNotSigned"] == "x-amz-checksum-mode"


def test_presigned_put_with_signed_amz_header_works(server, two_buckets):
    s3 = two_buckets
    put = s3.generate_presigned_url("put_object", Params={"Bucket": "drop", "Key": "meta",
                                                          "Metadata": {"owner": "alice"}}, ExpiresIn=300)
    assert "x-amz-meta-owner" in urllib.parse.unquote(put)  # in X-Amz-SignedHeaders
    # without the header it signed, the URL's signature does not match
    assert send_url(server, "PUT", put, body=b"x").status == 403
    assert send_url(server, "PUT", put, {"x-amz-meta-owner": "alice"}, body=b"x").status == 200
    assert s3.head_object(Bucket="drop", Key="meta")["Metadata"] == {"owner": "alice"}


def test_header_signed_put_with_unsigned_copy_source_is_refused(server, two_buckets):
    s3 = two_buckets
    r = signed_then_added(server, "PUT", "/drop/hs-slot", added={"x-amz-copy-source": "/secret-bkt/payroll.csv"})
    assert r.status == 403, r
    assert r.error()["Code"] == "AccessDenied"
    assert r.error()["HeadersNotSigned"] == "x-amz-copy-source"
    with pytest.raises(Exception):
        s3.head_object(Bucket="drop", Key="hs-slot")


def test_header_signed_put_with_unsigned_metadata_is_refused(server, two_buckets):
    r = signed_then_added(server, "PUT", "/drop/hs-meta", added={"x-amz-meta-a": "b", "x-amz-tagging": "t=1"},
                          body=b"body")
    assert r.status == 403 and r.error()["Code"] == "AccessDenied", r
    # the same headers signed: stored
    r = signed_then_added(server, "PUT", "/drop/hs-meta", signed={"x-amz-meta-a": "b", "x-amz-tagging": "t=1"},
                          body=b"body")
    assert r.status == 200, r
    assert two_buckets.head_object(Bucket="drop", Key="hs-meta")["Metadata"] == {"a": "b"}


def test_header_signed_without_content_sha256_and_a_body_is_refused(server, two_buckets):
    url = f"http://127.0.0.1:{server.port}/drop/no-sha"
    hdrs = sign_headers("PUT", url, {}, "UNSIGNED-PAYLOAD")
    hdrs = {k: v for k, v in hdrs.items() if k.lower() != "x-amz-content-sha256"}
    r = send_url(server, "PUT", url, hdrs, body=b"unsigned body")
    assert r.status == 400, r
    assert r.error()["Code"] == "InvalidRequest"
    assert "x-amz-content-sha256" in r.error()["Message"]


def test_sigv2_signs_every_amz_header(server, two_buckets):
    """SigV2 puts every x-amz-* header in the string to sign: one added later breaks it."""
    v2 = make_client(server, signature_version="s3")
    v2.put_object(Bucket="drop", Key="v2", Body=b"v2")
    put = v2.generate_presigned_url("put_object", Params={"Bucket": "drop", "Key": "v2slot"}, ExpiresIn=300)
    assert "Signature=" in put and "X-Amz-Signature" not in put
    r = send_url(server, "PUT", put, {"x-amz-copy-source": "/secret-bkt/payroll.csv"})
    assert r.status == 403 and r.error()["Code"] == "SignatureDoesNotMatch", r


# --- 2. no anonymous client holds a worker; a slow client is cut off ------------------------

@pytest.fixture
def small_pool():
    """A server with 4 workers that never grow (CAIRN_WORKERS_GROW_AFTER_MS=-1), a minimum
    client rate of 1 KiB/s after 2 s, and a bucket."""
    env = {"CAIRN_WORKERS_GROW_AFTER_MS": "-1", "CAIRN_API_MIN_RATE": "1024",
           "CAIRN_API_RATE_GRACE_MS": "2000"}
    with running_server(extra_args=["--workers", "4"], env=env) as srv:
        yield srv


def drip_connections(srv, head, n):
    """n connections that send `head` and then nothing yet; the caller drips."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(head)
        socks.append(s)
    return socks


def drip(socks, seconds, every=0.5):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for s in socks:
            try:
                s.send(b"a")
            except OSError:
                pass
        time.sleep(every)


def timed_signed_put(srv, key):
    t0 = time.monotonic()
    s3 = make_client(srv, read_timeout=20)
    s3.put_object(Bucket="pool", Key=key, Body=b"x" * 1000)
    return time.monotonic() - t0


@pytest.mark.parametrize("head", [
    # the auditor's request: a health check with a body it never finishes
    b"POST /minio/health/live HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
    # an anonymous upload
    b"PUT /pool/anon HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
    # a browser form whose fields before the file come a byte at a time
    b"POST /pool HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
    b"Content-Length: 100000\r\n\r\n--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n",
], ids=["health", "anonymous-put", "form-fields"])
def test_anonymous_slow_bodies_hold_no_worker(small_pool, head):
    srv = small_pool
    make_client(srv).create_bucket(Bucket="pool")
    socks = drip_connections(srv, head, 16)  # 4 times the pool
    try:
        stop = threading.Event()

        def dripper():
            while not stop.is_set():
                drip(socks, 0.6)
        t = threading.Thread(target=dripper)
        t.start()
        try:
            time.sleep(1.0)
            took = [timed_signed_put(srv, f"k{i}") for i in range(3)]
        finally:
            stop.set()
            t.join()
        assert max(took) < 3, took  # a held worker would leave it unanswered for 75 s
    finally:
        for s in socks:
            s.close()


def test_anonymous_body_gets_its_answer_at_once_and_a_close(server):
    """An answer sent before the body was read says Connection: close and comes at once."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        s.sendall(b"PUT /drop/x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + b"a" * 70000)
        t0 = time.monotonic()
        data = b""
        while b"</Error>" not in data:
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk
        assert time.monotonic() - t0 < 2
        head = data.split(b"\r\n\r\n", 1)[0].decode()
        assert head.startswith("HTTP/1.1 403 ")
        assert "Connection: close" in head
    finally:
        s.close()


def test_signed_dripping_body_is_cut_off(small_pool):
    """A signed upload that falls below 1 KiB/s after its 2 s grace loses its worker."""
    srv = small_pool
    make_client(srv).create_bucket(Bucket="pool")
    url = f"http://127.0.0.1:{srv.port}/pool/drip"
    hdrs = sign_headers("PUT", url, {"Content-Length": "100000"}, "UNSIGNED-PAYLOAD")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=15)
    try:
        s.sendall(f"PUT /pool/drip HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n".encode() + b"".join(f"{k}: {v}\r\n".encode() for k, v in hdrs.items())
                  + b"\r\n")
        t0 = time.monotonic()
        closed = False
        data = b""
        while time.monotonic() - t0 < 10 and not closed:
            try:
                s.send(b"d")
            except OSError:
                closed = True
                break
            s.settimeout(0.5)
            try:
                chunk = s.recv(4096)
                if not chunk:
                    closed = True
                data += chunk
            except socket.timeout:
                pass
            except OSError:  # reset: the server closed with the drip unread
                closed = True
        assert closed or data, "the server kept waiting on a client that sends 2 B/s"
        assert time.monotonic() - t0 < 6
        if data:
            assert b" 400 " in data.split(b"\r\n", 1)[0] and b"RequestTimeout" in data, data[:300]
    finally:
        s.close()
    with pytest.raises(Exception):
        make_client(srv).head_object(Bucket="pool", Key="drip")
