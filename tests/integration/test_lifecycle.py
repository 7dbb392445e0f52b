"""The server process: --help, credentials from CAIRN_* and MINIO_* variables, data that
survives a restart, tmp garbage removed at start, and SIGTERM finishing an in-flight request
before a clean exit."""

import hashlib
import os
import signal
import socket
import subprocess
import time

import pytest
from botocore.exceptions import ClientError

from conftest import (one_drive_layout, CAIRN_BIN, ACCESS, SECRET, Server, err_code, make_client, running_server,
                      sign_headers, http_get)


def test_help():
    for args in (["--help"], ["server", "--help"]):
        p = subprocess.run([CAIRN_BIN] + args, capture_output=True, timeout=10)
        assert p.returncode == 0, (args, p.stderr[-500:])
        out = (p.stdout + p.stderr).decode(errors="replace")
        assert "server" in out.lower()
    p = subprocess.run([CAIRN_BIN, "server", "--help"], capture_output=True, timeout=10)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert "--address" in out


def test_bad_arguments_fail_cleanly(tmp_path):
    p = subprocess.run([CAIRN_BIN, "no-such-subcommand"], capture_output=True, timeout=10)
    assert p.returncode != 0
    p = subprocess.run([CAIRN_BIN, "server", str(tmp_path), "--address", "not-an-address"],
                       capture_output=True, timeout=10)
    assert p.returncode != 0


def test_startup_banner_mentions_endpoint_and_aws_command():
    with running_server(name="banner") as srv:
        time.sleep(0.3)
        log = open(srv.log_path, "rb").read().decode(errors="replace")
        assert str(srv.port) in log
        assert "aws" in log
        # the credentials source is shown; the secret itself should not be needed to find it
        assert "CAIRN_ROOT_USER" in log or "environment" in log.lower() or ACCESS in log


def test_minio_credential_aliases():
    srv = Server(name="minio-env", env={"MINIO_ROOT_USER": "miniouser", "MINIO_ROOT_PASSWORD": "miniosecret99"})
    try:
        _start_without_cairn_env(srv)
        c = make_client(srv, access="miniouser", secret="miniosecret99")
        assert c.list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200
        bad = make_client(srv)  # cairnadmin is not a user there
        with pytest.raises(ClientError) as e:
            bad.list_buckets()
        assert err_code(e.value)[1] == 403
    finally:
        srv.cleanup()


def _start_without_cairn_env(srv, timeout=20):
    from conftest import free_port
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_ROOT", "MINIO_ROOT"))}
    env.update(srv.env)
    for _ in range(5):
        port = free_port()
        srv.log_path = os.path.join(srv.log_dir, f"{srv.name}.log")
        with open(srv.log_path, "wb") as log:
            srv.proc = subprocess.Popen([CAIRN_BIN, "server", srv.data_dir, "--address", f"127.0.0.1:{port}"],
                                        stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        srv.port = port
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and srv.proc.poll() is None:
            try:
                if http_get(srv.endpoint + "/minio/health/live", timeout=1)[0] == 200:
                    srv.expected_running = True
                    return
            except OSError:
                pass
            time.sleep(0.05)
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()
            break
    raise RuntimeError("server did not start:\n" + srv.stderr_tail())


def test_default_credentials_warn():
    srv = Server(name="default-cred")
    try:
        srv.env = {}
        _start_without_cairn_env(srv)
        log = open(srv.log_path, "rb").read().decode(errors="replace").lower()
        assert "warn" in log, log[-2000:]
        bad = make_client(srv)
        with pytest.raises(ClientError):
            bad.list_buckets()
    finally:
        srv.cleanup()


@one_drive_layout
def test_restart_keeps_data_and_cleans_tmp():
    with running_server(name="restart") as srv:
        s3 = make_client(srv)
        s3.create_bucket(Bucket="persist")
        # the empty object goes last: see test_boto3_empty_put_then_put_same_connection
        objs = {f"k{i}": os.urandom(n) for i, n in enumerate([10, 200 * 1024, 3 * 1024 * 1024, 0])}
        for k, v in objs.items():
            s3.put_object(Bucket="persist", Key=k, Body=v, Metadata={"n": k})
        srv.stop()
        assert srv.proc.returncode == 0, f"SIGTERM exit code {srv.proc.returncode}"
        tmp = os.path.join(srv.data_dir, ".cairn.sys", "tmp")
        assert os.path.isdir(tmp), "no tmp area at DIR/.cairn.sys/tmp"
        os.makedirs(os.path.join(tmp, "garbage-dir", "sub"), exist_ok=True)
        with open(os.path.join(tmp, "garbage-file"), "wb") as f:
            f.write(b"x" * 1000)
        with open(os.path.join(tmp, "garbage-dir", "sub", "part"), "wb") as f:
            f.write(b"y" * 1000)
        srv.start()
        from durability import tmp_leftovers
        assert tmp_leftovers(tmp) == []
        s3 = make_client(srv)
        assert "persist" in [b["Name"] for b in s3.list_buckets()["Buckets"]]
        for k, v in objs.items():
            g = s3.get_object(Bucket="persist", Key=k)
            assert g["Body"].read() == v
            assert g["Metadata"] == {"n": k}
        assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket="persist")["Contents"]) == sorted(objs)
        assert http_get(srv.endpoint + "/minio/health/ready")[0] == 200


def test_sigterm_finishes_in_flight_request():
    with running_server(name="sigterm") as srv:
        s3 = make_client(srv)
        s3.create_bucket(Bucket="term")
        body = os.urandom(1024 * 1024)
        path = "/term/inflight"
        h = sign_headers("PUT", f"http://127.0.0.1:{srv.port}{path}", {"Content-Length": str(len(body))},
                         hashlib.sha256(body).hexdigest())
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=20)
        req = f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
        s.sendall(req.encode() + body[:len(body) // 2])
        time.sleep(0.5)
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        s.sendall(body[len(body) // 2:])
        resp = b""
        deadline = time.monotonic() + 15
        while b"\r\n\r\n" not in resp and time.monotonic() < deadline:
            d = s.recv(4096)
            if not d:
                break
            resp += d
        s.close()
        assert resp.startswith(b"HTTP/1.1 200"), resp[:300]
        try:
            rc = srv.proc.wait(15)
        except subprocess.TimeoutExpired:
            pytest.fail("server did not exit within 15 s of SIGTERM")
        srv.expected_running = False
        assert rc == 0, f"exit code {rc} after SIGTERM"
        srv.start()
        assert make_client(srv).get_object(Bucket="term", Key="inflight")["Body"].read() == body


def _blocked(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        for line in f:
            if line.startswith("SigBlk:"):
                return int(line.split()[1], 16)
    raise AssertionError(f"no SigBlk for task {tid}")


def test_only_the_main_thread_takes_stop_signals():
    """SIGTERM and SIGINT reach only the main thread (util.h cn_thread_create): its handler
    never runs on a worker, prober, healer or loop thread while the main thread frees what the
    handler touches at shutdown."""
    with running_server(name="sigmask") as srv:
        s3 = make_client(srv)
        s3.create_bucket(Bucket="mask")
        s3.put_object(Bucket="mask", Key="k", Body=b"x" * 100000)  # workers are running
        pid = srv.proc.pid
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        assert len(tids) > 3, tids
        stop = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1))
        assert _blocked(pid, pid) & stop == 0, "the main thread blocks SIGTERM/SIGINT"
        open_to = [t for t in tids if t != pid and _blocked(pid, t) & stop != stop]
        assert open_to == [], f"threads that take SIGTERM/SIGINT besides the main one: {open_to}"
        srv.stop()
        assert srv.proc.returncode == 0


def test_refuses_new_connections_after_sigterm_and_exits():
    with running_server(name="sigterm2") as srv:
        srv.proc.send_signal(signal.SIGTERM)
        try:
            rc = srv.proc.wait(15)
        except subprocess.TimeoutExpired:
            pytest.fail("idle server did not exit within 15 s of SIGTERM")
        srv.expected_running = False
        assert rc == 0


def _environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)


def _huge_page_advised_mappings(pid):
    """Mappings glibc's malloc advised for transparent huge pages ("hg" in VmFlags)."""
    with open(f"/proc/{pid}/smaps") as f:
        return sum(1 for line in f if line.startswith("VmFlags:") and " hg" in line)


def test_heap_on_huge_pages_by_one_reexec():
    """cairn server re-executes itself once (same pid) with glibc's malloc asking for
    transparent huge pages (GLIBC_TUNABLES glibc.malloc.hugetlb=1, added to what the user
    set); a hugetlb setting of the user's own, or CAIRN_MALLOC_HUGETLB=0, is left alone."""
    cases = [({}, True),
             ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}, True),
             ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}, False),
             ({"CAIRN_MALLOC_HUGETLB": "0"}, False)]
    for env, huge in cases:
        with running_server(env=env) as srv:
            s3 = make_client(srv)
            s3.create_bucket(Bucket="thp")
            for i in range(20):  # some heap growth in the workers' arenas
                s3.put_object(Bucket="thp", Key=f"k{i}", Body=os.urandom(70000))
                assert len(s3.get_object(Bucket="thp", Key=f"k{i}")["Body"].read()) == 70000
            # the pid Popen started is the server: the exec kept it; /proc shows the
            # environment the image was executed with, the guard variable included
            e = _environ(srv.pid)
            assert (e.get(b"CAIRN_REEXEC") == b"1") == huge, (env, e.get(b"CAIRN_REEXEC"))
            with open(f"/proc/{srv.pid}/maps") as f:
                asan = "libasan" in f.read()  # the sanitizer build: ASan's own allocator
            if not asan:
                assert (_huge_page_advised_mappings(srv.pid) > 0) == huge, env
