"""Overload: with few request workers and many slow uploads holding them, other requests are
either served or answered 503 SlowDown (S3 XML) — never reset or left without an answer."""

import hashlib
import http.client
import socket
import threading
import time

import pytest

from conftest import make_client, parse_error, running_server, sign_headers


@pytest.fixture(scope="module")
def small_server():
    with running_server(extra_args=["--workers", "2"], name="overload") as srv:
        yield srv


def _slow_put(srv, key, seconds, results):
    body = b"s" * 40
    path = f"/ovl/{key}"
    h = sign_headers("PUT", f"http://127.0.0.1:{srv.port}{path}", {"Content-Length": str(len(body))},
                     hashlib.sha256(body).hexdigest())
    try:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        req = f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
        s.sendall(req.encode())
        step = seconds / len(body)
        for i in range(len(body)):
            try:
                s.sendall(body[i:i + 1])
            except OSError:
                break  # the server may answer 503 early and close
            time.sleep(step)
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                break
            buf += d
        s.close()
        results.append(("slow", buf.split(b"\r\n", 1)[0]))
    except OSError as e:
        results.append(("slow", f"error {e}".encode()))


def _fast_get(srv, results):
    path = "/ovl/small"
    h = sign_headers("GET", f"http://127.0.0.1:{srv.port}{path}")
    try:
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        c.request("GET", path, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        results.append(("fast", r.status, data))
    except (OSError, http.client.HTTPException) as e:
        results.append(("fast", None, repr(e).encode()))


def test_overload_is_503_or_served(small_server):
    srv = small_server
    s3 = make_client(srv)
    s3.create_bucket(Bucket="ovl")
    s3.put_object(Bucket="ovl", Key="small", Body=b"small object")
    slow_results, fast_results = [], []
    slow = [threading.Thread(target=_slow_put, args=(srv, f"slow{i}", 3.0, slow_results)) for i in range(24)]
    for t in slow:
        t.start()
    time.sleep(0.5)
    fast = [threading.Thread(target=_fast_get, args=(srv, fast_results)) for _ in range(40)]
    for t in fast:
        t.start()
    for t in fast + slow:
        t.join(60)
    assert len(fast_results) == 40 and len(slow_results) == 24
    n503 = 0
    for _, status, data in fast_results:
        assert status is not None, f"a request failed without an HTTP answer: {data[:200]!r}"
        if status == 503:
            n503 += 1
            assert parse_error(data).get("Code") == "SlowDown", data[:300]
        else:
            assert status == 200 and data == b"small object", (status, data[:200])
    for _, line in slow_results:
        assert line.startswith(b"HTTP/1.1 200") or line.startswith(b"HTTP/1.1 503"), line
    # the server is still healthy afterwards
    assert s3.get_object(Bucket="ovl", Key="small")["Body"].read() == b"small object"
    print(f"overload: {n503} of 40 fast requests answered 503 SlowDown")
