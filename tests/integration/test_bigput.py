"""Memory stays bounded whatever the object size: a 100 MiB PUT streamed with chunked
Transfer-Encoding (never held in memory by the test either), read back streaming, while the
server's peak RSS (VmHWM) stays under ~150 MiB. Own server, so the peak is this test's."""

import hashlib
import http.client
import os

import pytest

from conftest import running_server, sign_headers, make_client

MiB = 1024 * 1024
TOTAL = 100 * MiB
HWM_LIMIT_KIB = int(os.environ.get("CAIRN_IT_RSS_LIMIT_MIB", "150")) * 1024


@pytest.fixture(scope="module")
def big_server():
    with running_server(name="bigput") as srv:
        yield srv


def _blocks():
    seed = os.urandom(MiB)
    for i in range(TOTAL // MiB):
        # cheap but distinct per MiB: the block number folded into the first bytes
        yield i.to_bytes(8, "big") + seed[8:]


def test_100mib_chunked_put_bounded_rss(big_server):
    srv = big_server
    s3 = make_client(srv)
    s3.create_bucket(Bucket="big")
    path = "/big/hundred"
    h = sign_headers("PUT", f"http://127.0.0.1:{srv.port}{path}", {}, "UNSIGNED-PAYLOAD")
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    conn.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", f"127.0.0.1:{srv.port}")
    for k, v in h.items():
        conn.putheader(k, v)
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    md5 = hashlib.md5()
    sent = 0
    for b in _blocks():
        md5.update(b)
        for off in range(0, len(b), 256 * 1024):
            piece = b[off:off + 256 * 1024]
            conn.send(b"%x\r\n" % len(piece) + piece + b"\r\n")
            sent += len(piece)
    conn.send(b"0\r\n\r\n")
    r = conn.getresponse()
    body = r.read()
    conn.close()
    assert r.status == 200, body
    assert sent == TOTAL
    assert r.getheader("ETag") == f'"{md5.hexdigest()}"'
    h = s3.head_object(Bucket="big", Key="hundred")
    assert h["ContentLength"] == TOTAL
    # read back streaming, in pieces
    g = s3.get_object(Bucket="big", Key="hundred")
    m2 = hashlib.md5()
    n = 0
    for piece in iter(lambda: g["Body"].read(MiB), b""):
        m2.update(piece)
        n += len(piece)
    assert n == TOTAL and m2.hexdigest() == md5.hexdigest()
    hwm = srv.vm("VmHWM")
    assert hwm is not None and hwm < HWM_LIMIT_KIB, f"server peak RSS {hwm // 1024} MiB >= {HWM_LIMIT_KIB // 1024} MiB"
    s3.delete_object(Bucket="big", Key="hundred")


def test_concurrent_large_puts_bounded_rss(big_server):
    import threading
    srv = big_server
    s3 = make_client(srv, s3={"payload_signing_enabled": False})
    try:
        s3.create_bucket(Bucket="big2")
    except Exception:
        pass
    data = os.urandom(24 * MiB)
    errors = []

    def put(i):
        try:
            s3.put_object(Bucket="big2", Key=f"o{i}", Body=data)
        except Exception as e:  # noqa
            errors.append(e)

    ts = [threading.Thread(target=put, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors
    for i in range(4):
        assert s3.head_object(Bucket="big2", Key=f"o{i}")["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    hwm = srv.vm("VmHWM")
    assert hwm < HWM_LIMIT_KIB, f"server peak RSS {hwm // 1024} MiB after 4 concurrent 24 MiB PUTs"
