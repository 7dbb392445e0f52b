"""`cairn bench` against a real cairn server (every mode, short runs, small objects), against
s3rver (a second S3 implementation, from npm) to prove it is server-agnostic, and across two
agents on 127.0.0.1. Asserts on the --json report (ops > 0, errors == 0, bytes consistent
with the object size) and that `cairn bench analyze` of the --benchdata file reproduces the
live report exactly. Every run is bounded (subprocess timeouts)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import ACCESS, CAIRN_BIN, HERE, SECRET, free_port

SIZE = 4096


def bench(args, timeout=60, env_keys=True, check=True):
    env = dict(os.environ)
    if env_keys:
        env["CAIRN_BENCH_ACCESS_KEY"] = ACCESS
        env["CAIRN_BENCH_SECRET_KEY"] = SECRET
    p = subprocess.run([CAIRN_BIN, "bench"] + args, capture_output=True, text=True, timeout=timeout, env=env,
                       stdin=subprocess.DEVNULL)
    if check:
        assert p.returncode == 0, f"rc={p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    return p


def run_json(srv_host, mode, extra=(), tmp=None, analyze=True):
    """Runs one mode with --json and --benchdata; checks analyze reproduces the report."""
    data = os.path.join(tmp, f"{mode}.csv.gz")
    p = bench([mode, "--host", srv_host, "--obj.size", "4KiB", "--objects", "60", "--concurrent", "4",
               "--duration", "1s", "--json", "--quiet", "--benchdata", data] + list(extra))
    live = json.loads(p.stdout)
    if analyze:
        a = bench(["analyze", data, "--json"])
        assert json.loads(a.stdout) == live
        assert a.stdout == p.stdout  # byte for byte: same figures, same formatting
    return {o["op"]: o for o in live["ops"]}, data


def check_op(o, size=SIZE, has_bytes=True):
    assert o["ops"] > 0, o
    assert o["errors"] == 0, o["first_errors"]
    assert o["obj_s"] > 0
    assert o["reqs"]["n"] > 0
    assert 0 < o["reqs"]["fastest_ms"] <= o["reqs"]["p50_ms"] <= o["reqs"]["p99_ms"] <= o["reqs"]["slowest_ms"]
    if has_bytes:
        assert o["bytes"] == o["ops"] * size
        assert o["mib_s"] > 0
    else:
        assert o["bytes"] == 0
    assert len(o["hosts"]) >= 1


@pytest.fixture(scope="module")
def tmp():
    d = tempfile.mkdtemp(prefix="cairn-bench-it-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def host_of(srv):
    return f"127.0.0.1:{srv.port}"


def test_put_get(server, tmp):
    ops, _ = run_json(host_of(server), "put", tmp=tmp)
    check_op(ops["PUT"])
    ops, _ = run_json(host_of(server), "get", ["--verify"], tmp=tmp)
    check_op(ops["GET"])
    assert ops["GET"]["ttfb"]["n"] == ops["GET"]["ops"]
    assert ops["GET"]["ttfb"]["p50_ms"] <= ops["GET"]["reqs"]["p50_ms"]


def test_stat_delete_list(server, tmp):
    ops, _ = run_json(host_of(server), "stat", tmp=tmp)
    check_op(ops["STAT"], has_bytes=False)
    ops, _ = run_json(host_of(server), "delete", tmp=tmp)
    check_op(ops["DELETE"], has_bytes=False)
    assert ops["DELETE"]["ops"] == 60  # every prepared object deleted once
    ops, _ = run_json(host_of(server), "list", tmp=tmp)
    check_op(ops["LIST"], has_bytes=False)


def test_mixed(server, tmp):
    ops, _ = run_json(host_of(server), "mixed", ["--verify", "--get-distrib", "50", "--put-distrib", "20",
                                                 "--stat-distrib", "20", "--delete-distrib", "10"], tmp=tmp)
    for op in ("GET", "PUT", "STAT", "DELETE"):
        check_op(ops[op], has_bytes=op in ("GET", "PUT"))
    assert ops["GET"]["ops"] > ops["DELETE"]["ops"]


def test_multipart(server, tmp):
    p = bench(["multipart", "--host", host_of(server), "--parts", "6", "--part.size", "5MiB", "--concurrent", "3",
               "--duration", "1s", "--json", "--quiet", "--verify"], check=False)
    assert p.returncode == 0, p.stderr
    ops = {o["op"]: o for o in json.loads(p.stdout)["ops"]}
    check_op(ops["PUTPART"], size=5 << 20)
    assert ops["PUTPART"]["ops"] == 6
    check_op(ops["GET"], size=5 << 20)


def test_text_report_shape_and_cmp(server, tmp):
    d1, d2 = os.path.join(tmp, "a.csv.gz"), os.path.join(tmp, "b.csv.gz")
    for d in (d1, d2):
        p = bench(["get", "--host", host_of(server), "--obj.size", "4KiB", "--objects", "30", "--concurrent", "4",
                   "--duration", "1s", "--benchdata", d])
    out = p.stdout
    assert out.startswith("Report: GET. Concurrency: 4. Ran: ")
    for needle in (" * Average: ", " MiB/s, ", " obj/s", " * Reqs: Avg: ", ", 50%: ", ", 99%: ", "Fastest: ",
                   " * TTFB: Avg: ", "Throughput by host:", f" * http://{host_of(server)}: Avg: ",
                   "Throughput, split into ", " * 50% Median: ", " * Slowest: "):
        assert needle in out, (needle, out)
    a = bench(["analyze", d2])
    assert a.stdout == out
    a = bench(["analyze", d2, "--analyze.op", "PUT"], check=False)
    assert a.returncode == 1 and "no PUT requests" in a.stderr
    c = bench(["cmp", d1, d2])
    assert "Operation: GET (before -> after)" in c.stdout and " * Average: " in c.stdout and "Reqs: Avg:" in c.stdout


def test_loop_rate_sweep_plot(server, tmp):
    p = bench(["loop", "--host", host_of(server), "--obj.size", "16KiB", "--concurrent", "4", "--duration", "1s",
               "--loops", "2", "--quiet"])
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 6, p.stdout
    assert lines[0].startswith("Loop 1: PUT time ") and "operations/sec. Slowdowns = 0, Errors = 0" in lines[0]
    assert lines[1].startswith("Loop 1: GET time ") and "Errors = 0" in lines[1]
    assert lines[2].startswith("Loop 1: DELETE time ") and "deletes/sec" in lines[2]
    assert lines[5].startswith("Loop 2: DELETE")

    # open loop at a fixed rate: the achieved rate is the target (the server keeps up)
    ops, _ = run_json(host_of(server), "get", ["--rate", "200", "--concurrent", "8"], tmp=tmp)
    check_op(ops["GET"])
    assert 150 < ops["GET"]["obj_s"] < 250, ops["GET"]["obj_s"]

    svg = os.path.join(tmp, "sweep.svg")
    p = bench(["get", "--host", host_of(server), "--obj.size", "4KiB", "--objects", "30", "--concurrent", "8",
               "--duration", "1s", "--sweep", "100,300", "--rate.dist", "poisson", "--plot", svg, "--quiet"])
    rows = [r.split() for r in p.stdout.strip().splitlines()[1:]]
    assert [float(r[0]) for r in rows] == [100.0, 300.0]
    assert all(float(r[1]) > 0 and r[-1] == "0" for r in rows), p.stdout
    with open(svg) as f:
        doc = f.read()
    assert doc.startswith("<svg") and doc.count("<polyline") == 3


def test_autoterm(server):
    t = time.monotonic()
    p = bench(["get", "--host", host_of(server), "--obj.size", "4KiB", "--objects", "30", "--concurrent", "4",
               "--duration", "40s", "--autoterm", "--autoterm.dur", "2s", "--autoterm.pct", "50"], timeout=60)
    assert time.monotonic() - t < 30
    assert "--autoterm" in p.stderr and "stable" in p.stderr


def test_bad_input(server, tmp):
    p = bench(["put", "--host", host_of(server), "--obj.size", "lots"], check=False)
    assert p.returncode == 2 and "bad value 'lots' for --obj.size" in p.stderr
    p = bench(["put", "--nope"], check=False)
    assert p.returncode == 2 and "unknown flag" in p.stderr
    p = bench(["frobnicate"], check=False)
    assert p.returncode == 2 and "unknown mode" in p.stderr
    p = bench(["put", "--host", "h{3...1}:9000"], check=False)
    assert p.returncode == 2 and "bad --host" in p.stderr
    p = bench(["put", "--host", host_of(server)], env_keys=False, check=False)
    assert p.returncode == 2 and "--access-key" in p.stderr
    p = bench(["put", "--host", f"127.0.0.1:{free_port()}", "--duration", "1s"], check=False)
    assert p.returncode == 1 and "cannot reach" in p.stderr
    p = bench(["put", "--host", host_of(server), "--secret-key", "wrong", "--duration", "1s"], check=False)
    assert p.returncode == 1 and "SignatureDoesNotMatch" in p.stderr
    bad = os.path.join(tmp, "garbage.csv.gz")
    with open(bad, "wb") as f:
        f.write(b"\x1f\x8b garbage")
    p = bench(["analyze", bad], check=False)
    assert p.returncode == 1 and "cairn bench analyze:" in p.stderr
    p = bench(["analyze", os.path.join(tmp, "missing.csv.gz")], check=False)
    assert p.returncode == 1 and "No such file" in p.stderr


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


def test_agents(server, tmp):
    procs, ports = [], []
    try:
        for _ in range(2):
            # each agent listens before the next port is picked: free_port() could hand out
            # the first one's port again before it bound it
            port = free_port()
            while port in ports:
                port = free_port()
            procs.append(subprocess.Popen([CAIRN_BIN, "bench", "agent", "--listen", f"127.0.0.1:{port}", "--runs", "1"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL))
            ports.append(port)
            assert wait_port(port), "agent did not listen"
        # the same agent twice is refused at once (it serves one driver at a time)
        twice = ",".join([f"127.0.0.1:{ports[0]}"] * 2)
        p = bench(["get", "--host", host_of(server), "--agents", twice], timeout=30, check=False)
        assert p.returncode != 0 and f"--agents names 127.0.0.1:{ports[0]} twice" in p.stderr, p.stderr
        data = os.path.join(tmp, "agents.csv.gz")
        p = bench(["get", "--host", host_of(server), "--obj.size", "4KiB", "--objects", "40", "--concurrent", "3",
                   "--duration", "2s", "--json", "--benchdata", data,
                   "--agents", ",".join(f"127.0.0.1:{p}" for p in ports)])
        live = json.loads(p.stdout)
        assert live["concurrency"] == 6  # 3 on each agent
        o = live["ops"][0]
        check_op(o)
        a = bench(["analyze", data, "--json"])
        assert a.stdout == p.stdout
        for pr in procs:
            pr.wait(timeout=30)
            assert pr.returncode == 0
    finally:
        for pr in procs:
            if pr.poll() is None:
                pr.kill()
                pr.wait(5)


def test_s3rver(tmp):
    """The same tool against s3rver (node): proof that it speaks plain S3, not cairn."""
    node = shutil.which("node")
    assert node, "node is not installed (scripts/deps.sh check installs it): s3rver did not start"
    js = os.path.join(HERE, "js")
    entry = os.path.join(js, "node_modules", "s3rver", "bin", "s3rver.js")
    if not os.path.exists(entry):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=js, check=True, timeout=600)
    d = tempfile.mkdtemp(prefix="cairn-s3rver-")
    proc = None
    try:
        for _ in range(5):
            port = free_port()
            proc = subprocess.Popen([node, entry, "-d", d, "-a", "127.0.0.1", "-p", str(port), "--silent"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
            if wait_port(port, 15):
                break
            proc.kill()
            proc.wait(5)
            proc = None
        assert proc, "s3rver did not start"
        keys = ["--host", f"127.0.0.1:{port}", "--access-key", "S3RVER", "--secret-key", "S3RVER"]
        for mode, conc in (("put", "4"), ("get", "4"), ("delete", "1")):
            # s3rver sometimes answers 500 to concurrent DELETEs of the last keys of a folder
            # (its own race): deletes run one at a time there
            p = bench([mode] + keys + ["--obj.size", "4KiB", "--objects", "30", "--concurrent", conc, "--duration",
                                       "1s", "--json", "--quiet", "--verify"], env_keys=False)
            o = json.loads(p.stdout)["ops"][0]
            check_op(o, has_bytes=mode != "delete")
    finally:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        shutil.rmtree(d, ignore_errors=True)
