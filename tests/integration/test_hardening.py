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
