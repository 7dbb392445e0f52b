"""Shared fixtures of cairn's integration suite: start a real build/cairn on 127.0.0.1 with a
fresh data folder, give tests boto3 clients (the client we did not write) and a raw signed
HTTP helper (botocore's own SigV4 signer over http.client) for requests boto3 will not
send by itself. Every wait is bounded; on a failure the server's stderr tail is attached to
the report. Run with /usr/bin/python3 -m pytest (Debian's boto3)."""

import base64
import contextlib
import datetime
import hashlib
import http.client
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import types
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from unittest import mock

import boto3
import botocore.auth
import botocore.credentials
from botocore.awsrequest import AWSRequest
from botocore.config import Config
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CAIRN_BIN = os.path.abspath(os.environ.get("CAIRN_BIN", os.path.join(REPO, "build", "cairn")))
ACCESS = "cairnadmin"
SECRET = "cairnsecret123"
REGION = "us-east-1"
S3NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

_ALL_SERVERS = []


def free_port():
    """A random port in 9400-9599 that is free right now (bounded attempts)."""
    for _ in range(200):
        port = random.randint(9400, 9599)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port in 9400-9599")


def http_get(url, timeout=5, headers=None):
    """Plain unsigned GET; returns (status, headers, body) without raising on 4xx/5xx."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


# CAIRN_TEST_DRIVES=N runs the suite's default server over N drives (Server.default_folders);
# tests about the one-drive layout itself (its folders on disk, `admin info`'s one drive)
# carry this mark.
one_drive_layout = pytest.mark.skipif(int(os.environ.get("CAIRN_TEST_DRIVES", "1")) > 1,
                                      reason="about the one-drive layout (CAIRN_TEST_DRIVES > 1)")


class Server:
    """One cairn server process on 127.0.0.1:<random port> over root/data."""

    def __init__(self, root=None, extra_args=(), env=None, name="cairn", drives=None):
        self.own_root = root is None
        # drives: the server's folder arguments (ellipses allowed) instead of the one data_dir
        self.drives = list(drives) if drives else None
        self.root = root or tempfile.mkdtemp(prefix="cairn-it-")
        # data two levels below root: a key escaping with ".." lands inside root, where the
        # filesystem check can see it.
        self.data_dir = os.path.join(self.root, "jail", "data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.log_dir = tempfile.mkdtemp(prefix="cairn-it-log-")
        self.extra_args = list(extra_args)
        self.env = env or {}
        self.name = name
        self.proc = None
        self.port = None
        self.log_path = None
        self.expected_running = False
        self.starts = 0
        _ALL_SERVERS.append(self)

    def default_folders(self):
        """The one data_dir; with CAIRN_TEST_DRIVES=N (N > 1), N drive folders under it (one
        erasure set), so the whole suite can run over the erasure-coded path."""
        n = int(os.environ.get("CAIRN_TEST_DRIVES", "1"))
        return [self.data_dir] if n <= 1 else [os.path.join(self.data_dir, f"d{{1...{n}}}")]

    def default_drives(self):
        """default_folders with the ellipsis expanded: each drive folder."""
        n = int(os.environ.get("CAIRN_TEST_DRIVES", "1"))
        return [self.data_dir] if n <= 1 else [os.path.join(self.data_dir, f"d{i}") for i in range(1, n + 1)]

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self, timeout=20, port=None):
        if not os.access(CAIRN_BIN, os.X_OK):
            pytest.exit(f"cairn binary not found or not executable: {CAIRN_BIN} (set CAIRN_BIN)", 3)
        env = dict(os.environ)
        for k in ("MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"):
            env.pop(k, None)
        env["CAIRN_ROOT_USER"] = ACCESS
        env["CAIRN_ROOT_PASSWORD"] = SECRET
        env.update(self.env)
        last = ""
        for attempt in range(8):
            p = port if (port and attempt == 0) else free_port()
            self.starts += 1
            self.log_path = os.path.join(self.log_dir, f"{self.name}-{self.starts}.log")
            log = open(self.log_path, "wb")
            folders = self.drives or self.default_folders()
            cmd = [CAIRN_BIN, "server"] + folders + ["--address", f"127.0.0.1:{p}"] + self.extra_args
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         stdin=subprocess.DEVNULL)
            log.close()
            self.port = p
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    st, _, _ = http_get(self.endpoint + "/minio/health/live", timeout=1)
                    if st == 200:
                        self.expected_running = True
                        return self
                except (OSError, http.client.HTTPException):
                    pass
                time.sleep(0.05)
            last = self.stderr_tail()
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(5)
                raise RuntimeError(f"cairn did not become live within {timeout}s:\n{last}")
            if "in use" not in last.lower() and "eaddrinuse" not in last.lower():
                raise RuntimeError(f"cairn exited at start (rc={self.proc.returncode}):\n{last}")
        raise RuntimeError(f"cairn could not bind a port after retries:\n{last}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL after timeout. Returns the exit code."""
        self.expected_running = False
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def kill9(self):
        self.expected_running = False
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def restart(self):
        self.stop()
        return self.start()

    def stderr_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return "\n".join(lines[-n:])
        except (OSError, TypeError):
            return "(no server log)"

    def vm(self, field):
        """A /proc/PID/status field in KiB (VmRSS, VmHWM)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return None

    def cleanup(self):
        self.kill9()
        if self.own_root:
            shutil.rmtree(self.root, ignore_errors=True)
        if not os.environ.get("CAIRN_KEEP_LOGS"):
            shutil.rmtree(self.log_dir, ignore_errors=True)
        if self in _ALL_SERVERS:
            _ALL_SERVERS.remove(self)


@contextlib.contextmanager
def running_server(**kw):
    srv = Server(**kw)
    try:
        srv.start()
        yield srv
    finally:
        srv.cleanup()


@pytest.fixture(scope="module")
def server():
    with running_server() as srv:
        yield srv


@pytest.fixture
def drive_server():
    """Factory: drive_server(folders, env=None, extra_args=()) starts cairn over a list of
    folder arguments (each may hold a {a...b} ellipsis: one pool per argument) and cleans
    every server it started up at the end of the test."""
    made = []

    def start(folders, env=None, extra_args=()):
        srv = Server(drives=folders, env=env, extra_args=extra_args, name=f"cairn-{len(made)}")
        made.append(srv)
        srv.start()
        return srv

    yield start
    for srv in made:
        srv.cleanup()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for srv in list(_ALL_SERVERS):
            state = "running" if srv.alive() else f"exited rc={srv.proc.returncode if srv.proc else None}"
            rep.sections.append((f"cairn server :{srv.port} ({state}) log tail", srv.stderr_tail()))


@pytest.fixture(autouse=True)
def _server_must_survive(request):
    """Fails the test when a server that should be running died during it (a crash)."""
    before = [s for s in _ALL_SERVERS if s.expected_running and s.alive()]
    yield
    dead = [s for s in before if s.expected_running and not s.alive()]
    if dead:
        s = dead[0]
        s.expected_running = False
        pytest.fail(f"cairn server on :{s.port} died (rc={s.proc.returncode}) during the test:\n"
                    f"{s.stderr_tail()}", pytrace=False)


# --- clients ---------------------------------------------------------------------------------

def make_client(srv, access=ACCESS, secret=SECRET, s3=None, signature_version="s3v4",
                endpoint=None, **cfg):
    s3cfg = {"addressing_style": "path"}
    s3cfg.update(s3 or {})
    opts = {"connect_timeout": 5, "read_timeout": 60, "retries": {"max_attempts": 0}}
    opts.update(cfg)
    config = Config(signature_version=signature_version, s3=s3cfg, region_name=REGION, **opts)
    return boto3.client("s3", endpoint_url=endpoint or srv.endpoint, aws_access_key_id=access,
                        aws_secret_access_key=secret, region_name=REGION, config=config)


@pytest.fixture(scope="module")
def s3(server):
    return make_client(server)


def unique_bucket(prefix="it"):
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def empty_bucket(client, name):
    """Deletes every object of a bucket (bounded) and the bucket; best effort."""
    try:
        for _ in range(200):
            r = client.list_objects_v2(Bucket=name, MaxKeys=1000)
            keys = [{"Key": o["Key"]} for o in r.get("Contents", [])]
            if not keys:
                break
            client.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
        client.delete_bucket(Bucket=name)
    except Exception:
        pass


@pytest.fixture
def bucket(s3):
    name = unique_bucket()
    s3.create_bucket(Bucket=name)
    yield name
    empty_bucket(s3, name)


def err_code(exc):
    """(S3 error code, HTTP status) of a botocore ClientError."""
    return exc.response.get("Error", {}).get("Code"), exc.response["ResponseMetadata"]["HTTPStatusCode"]


# --- raw signed requests ---------------------------------------------------------------------

class _FixedPayloadAuth(botocore.auth.S3SigV4Auth):
    """botocore's S3 SigV4 signer, with the x-amz-content-sha256 value chosen by the test."""

    def __init__(self, credentials, payload_hash):
        super().__init__(credentials, "s3", REGION)
        self._payload_hash = payload_hash

    def payload(self, request):
        return self._payload_hash


class _ShiftedDatetime(datetime.datetime):
    shift = datetime.timedelta(0)

    @classmethod
    def utcnow(cls):
        return datetime.datetime.utcnow() + cls.shift


@contextlib.contextmanager
def clock_shift(seconds):
    """Makes every botocore signer inside the block date its requests `seconds` off."""
    shifted = type("ShiftedDatetime", (_ShiftedDatetime,), {"shift": datetime.timedelta(seconds=seconds)})
    fake = types.SimpleNamespace(**{k: getattr(datetime, k) for k in dir(datetime) if not k.startswith("__")})
    fake.datetime = shifted
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(botocore.auth, "datetime", fake))
        try:
            import botocore.crt.auth as crt_auth  # Debian's botocore signs with awscrt
            stack.enter_context(mock.patch.object(crt_auth, "datetime", fake))
        except ImportError:
            pass
        yield


class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # http.client.HTTPMessage (case-insensitive get)
        self.body = body

    def error(self):
        return parse_error(self.body)

    def __repr__(self):
        return f"<Resp {self.status} {self.body[:300]!r}>"


def parse_error(body):
    """The S3 XML error as a dict (Code, Message, RequestId, Resource...); {} when not XML."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return {}
    out = {"_root": root.tag}
    for child in root:
        out[child.tag.replace(S3NS, "")] = child.text or ""
    return out


def sign_headers(method, url, headers=None, payload_hash="UNSIGNED-PAYLOAD", access=ACCESS,
                 secret=SECRET, skew=0):
    """Headers (a dict) signed with botocore's SigV4 for `url` (already encoded)."""
    creds = botocore.credentials.Credentials(access, secret)
    req = AWSRequest(method=method, url=url, headers=dict(headers or {}))
    auth = _FixedPayloadAuth(creds, payload_hash)
    if skew:
        with clock_shift(skew):
            auth.add_auth(req)
    else:
        auth.add_auth(req)
    return dict(req.headers.items())


def raw(srv, method, path, query="", headers=None, body=b"", sign=True, payload_hash=None,
        access=ACCESS, secret=SECRET, skew=0, host=None, timeout=30, port=None):
    """One HTTP request over a fresh connection; SigV4-signed unless sign=False.
    path must already be percent-encoded; query is a string or a list of pairs."""
    if isinstance(query, (list, tuple)):
        query = urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    port = port or srv.port
    hostport = host or f"127.0.0.1:{port}"
    url = f"http://{hostport}{path}" + (f"?{query}" if query else "")
    hdrs = dict(headers or {})
    if isinstance(body, str):
        body = body.encode()
    if sign:
        if payload_hash is None:
            payload_hash = hashlib.sha256(body).hexdigest() if isinstance(body, bytes) else "UNSIGNED-PAYLOAD"
        hdrs = sign_headers(method, url, hdrs, payload_hash, access, secret, skew)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        target = path + (f"?{query}" if query else "")
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        if not any(k.lower() == "host" for k in hdrs):
            conn.putheader("Host", hostport)
        has_len = any(k.lower() in ("content-length", "transfer-encoding") for k in hdrs)
        if isinstance(body, bytes) and not has_len and (body or method in ("PUT", "POST")):
            conn.putheader("Content-Length", str(len(body)))
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        if isinstance(body, bytes):
            if body:
                conn.send(body)
        else:
            for piece in body:
                conn.send(piece)
        r = conn.getresponse()
        data = r.read() if method != "HEAD" else b""
        return Resp(r.status, r.headers, data)
    finally:
        conn.close()


# --- checksums boto3 1.29 cannot compute without awscrt ---------------------------------------

def _make_table(poly, bits):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_T = _make_table(0x82F63B78, 32)
_CRC64NVME_T = _make_table(0x9A6C9329AC4BC9B5, 64)


def crc32c(data):
    c = 0xFFFFFFFF
    t = _CRC32C_T
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc64nvme(data):
    m = 0xFFFFFFFFFFFFFFFF
    c = m
    t = _CRC64NVME_T
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ m


assert crc32c(b"123456789") == 0xE3069283
assert crc64nvme(b"123456789") == 0xAE8B14860A799888


def b64_crc32(data):
    import zlib
    return base64.b64encode((zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")).decode()


def b64_crc32c(data):
    return base64.b64encode(crc32c(data).to_bytes(4, "big")).decode()


def b64_crc64nvme(data):
    return base64.b64encode(crc64nvme(data).to_bytes(8, "big")).decode()


def b64_sha1(data):
    return base64.b64encode(hashlib.sha1(data).digest()).decode()


def b64_sha256(data):
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def rand_bytes(n, seed=None):
    return random.Random(seed).randbytes(n) if seed is not None else os.urandom(n)


# --- aws-chunked bodies (SigV4 streaming), built by hand per the AWS documentation ------------

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _hmac(key, msg):
    import hmac
    return hmac.new(key, msg.encode() if isinstance(msg, str) else msg, hashlib.sha256)


def signing_key(secret, date, region=REGION, service="s3"):
    k = _hmac(("AWS4" + secret).encode(), date).digest()
    k = _hmac(k, region).digest()
    k = _hmac(k, service).digest()
    return _hmac(k, "aws4_request").digest()


def aws_chunked_request(srv, path, data, chunk=64 * 1024, mode="signed", trailer=None,
                        trailer_value=None, tamper=None, headers=None, decoded_len=None,
                        http_chunked=False, secret=SECRET, declare_trailer=True, extra=b""):
    """PUT path with an aws-chunked body. mode: "signed" (STREAMING-AWS4-HMAC-SHA256-PAYLOAD,
    or ...-TRAILER with a trailer) or "unsigned" (STREAMING-UNSIGNED-PAYLOAD-TRAILER).
    trailer: header name like "x-amz-checksum-crc32" with trailer_value (base64).
    tamper: "data" flips a byte of the first chunk after signing; "chunksig" corrupts the last
    chunk signature; "trailersig" corrupts the trailer signature.
    http_chunked: frame the whole aws-chunked body with Transfer-Encoding: chunked too.
    declare_trailer=False leaves out the x-amz-trailer header that names the trailer; extra:
    bytes sent after the aws-chunked body's final CRLF, inside its framing."""
    if mode == "signed":
        ph = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER" if trailer else "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    else:
        ph = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    hdrs = {"Content-Encoding": "aws-chunked",
            "x-amz-decoded-content-length": str(len(data) if decoded_len is None else decoded_len)}
    if trailer and declare_trailer:
        hdrs["x-amz-trailer"] = trailer
    hdrs.update(headers or {})

    def build(seed, ts, scope, key):
        out = []
        prev = seed
        for idx, p in enumerate(pieces):
            if mode == "signed":
                sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", ts, scope, prev, EMPTY_SHA256,
                                 hashlib.sha256(p).hexdigest()])
                sig = _hmac(key, sts).hexdigest()
                if tamper == "chunksig" and idx == len(pieces) - 1:
                    sig = ("0" if sig[0] != "0" else "1") + sig[1:]
                prev = sig
                head = f"{len(p):x};chunk-signature={sig}\r\n".encode()
            else:
                head = f"{len(p):x}\r\n".encode()
            if tamper == "data" and idx == 0 and p:
                p = bytes([p[0] ^ 0xFF]) + p[1:]
            out.append(head + p + (b"\r\n" if p else b""))
        if trailer:
            tline = f"{trailer}:{trailer_value}"
            out.append(tline.encode() + b"\r\n")
            if mode == "signed":
                sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", ts, scope, prev,
                                 hashlib.sha256((tline + "\n").encode()).hexdigest()])
                tsig = _hmac(key, sts).hexdigest()
                if tamper == "trailersig":
                    tsig = ("0" if tsig[0] != "0" else "1") + tsig[1:]
                out.append(f"x-amz-trailer-signature:{tsig}\r\n".encode())
        out.append(b"\r\n")
        return b"".join(out) + extra

    # The encoded length is needed before signing (Content-Length is signed by botocore when
    # present), and it does not depend on the signature values: build once with a dummy.
    dummy = build("0" * 64, "19700101T000000Z", "x", b"k")
    if not http_chunked:
        hdrs["Content-Length"] = str(len(dummy))
    url = f"http://127.0.0.1:{srv.port}{path}"
    signed = sign_headers("PUT", url, hdrs, ph, secret=secret)
    if http_chunked:
        signed["Transfer-Encoding"] = "chunked"
    auth = signed["Authorization"]
    seed = auth.split("Signature=")[1].strip()
    ts = signed["X-Amz-Date"]
    scope = f"{ts[:8]}/{REGION}/s3/aws4_request"
    body = build(seed, ts, scope, signing_key(secret, ts[:8]))
    assert len(body) == len(dummy)
    if http_chunked:
        def framed():
            step = 10000
            for i in range(0, len(body), step):
                part = body[i:i + step]
                yield f"{len(part):x}\r\n".encode() + part + b"\r\n"
            yield b"0\r\n\r\n"
        return raw(srv, "PUT", path, headers=signed, body=framed(), sign=False)
    return raw(srv, "PUT", path, headers=signed, body=body, sign=False)
