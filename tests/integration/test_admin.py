"""`cairn admin info` / `cairn admin heal` and the admin API under /minio/admin/v3 (src/s3/admin.c,
src/cli/admin.c): the CLI's reports and exit codes, the raw ndjson heal stream, errors
(unknown bucket, unauthenticated, bad credentials, unknown admin paths), and on a 4-drive
server a real heal: key folders removed from one drive come back byte-exact, and every object
reads back from the healed drive with two other drives' copies removed."""

import hashlib
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import (one_drive_layout, ACCESS, CAIRN_BIN, SECRET, empty_bucket, make_client, parse_error, rand_bytes,
                      raw, unique_bucket)


def admin(srv, *args, access=ACCESS, secret=SECRET, timeout=60, env_extra=None):
    env = dict(os.environ)
    for k in ("MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "CAIRN_ADMIN_HOST"):
        env.pop(k, None)
    env["CAIRN_ROOT_USER"] = access
    env["CAIRN_ROOT_PASSWORD"] = secret
    env.update(env_extra or {})
    cmd = [CAIRN_BIN, "admin"] + list(args)
    if srv is not None:
        cmd += ["--host", f"127.0.0.1:{srv.port}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


def report(p):
    """The final heal report as a dict of its counters."""
    out = {}
    for name, pat in (("scanned", r"objects scanned\s+(\d+)"), ("healed", r"objects (?:healed|damaged)\s+(\d+)"),
                      ("failed", r"objects failed\s+(\d+)"), ("copies", r"drive copies rewritten\s+(\d+)")):
        m = re.search(pat, p.stdout)
        assert m, f"no '{name}' in the report:\n{p.stdout}\n{p.stderr}"
        out[name] = int(m.group(1))
    m = re.search(r"bytes rewritten\s+([\d.]+) (B|KiB|MiB|GiB)", p.stdout)
    assert m, p.stdout
    out["bytes"] = float(m.group(1)) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
    assert re.search(r"elapsed\s+\d", p.stdout), p.stdout
    return out


def heal_stream(srv, path="/minio/admin/v3/heal", dry_run=True, **kw):
    r = raw(srv, "POST", path, query=[("dryRun", "true" if dry_run else "false")], **kw)
    return r


def ndjson(body):
    lines = [json.loads(x) for x in body.decode().splitlines() if x.strip()]
    assert lines, body
    return lines


@pytest.fixture(scope="module")
def filled(server):
    """A bucket with 7 objects, 5 of them under "p/"."""
    s3 = make_client(server)
    name = unique_bucket("adm")
    s3.create_bucket(Bucket=name)
    for i in range(5):
        s3.put_object(Bucket=name, Key=f"p/k{i}", Body=rand_bytes(100 * i + 1, seed=i))
    s3.put_object(Bucket=name, Key="other", Body=b"x")
    s3.put_object(Bucket=name, Key="empty", Body=b"")
    yield name
    empty_bucket(s3, name)


# --- one drive ---------------------------------------------------------------------------------

@one_drive_layout
def test_info_one_drive(server):
    p = admin(server, "info")
    assert p.returncode == 0, p.stderr
    assert "1 online, 0 offline" in p.stdout
    assert re.search(r"^heal scan +none yet$", p.stdout, re.M), p.stdout
    assert server.data_dir in p.stdout
    assert re.search(r"^0\s+0\s+0\s+online\s", p.stdout, re.M), p.stdout

    p = admin(server, "info", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert re.fullmatch(r"[0-9a-f]{32}", info["deploymentID"])
    assert (info["pools"], info["sets"], info["setDriveCount"]) == (1, 1, 1)
    assert info["standardSCParity"] == 0
    assert (info["onlineDrives"], info["offlineDrives"]) == (1, 0)
    assert set(info["heal"]) == {"queued", "done", "scan"}
    scan = info["heal"]["scan"]  # no scan yet: the first runs after 24 h or a drive's return
    assert (scan["running"], scan["scans"], scan["scanned"]) == (False, 0, 0), scan
    assert "started" not in scan and "finished" not in scan
    [d] = info["drives"]
    assert d["endpoint"] == server.data_dir
    assert (d["pool"], d["set"], d["slot"], d["state"]) == (0, 0, 0, "online")
    assert 0 < d["freeSpace"] <= d["totalSpace"]
    assert d["usedSpace"] == d["totalSpace"] - d["freeSpace"]

    r = raw(server, "GET", "/minio/admin/v3/info")
    assert r.status == 200 and r.headers.get("Content-Type") == "application/json"
    assert json.loads(r.body)["deploymentID"] == info["deploymentID"]

    # the record cache's default budget: 1/64 of the machine's memory, 64 MiB .. 1 GiB
    if "CAIRN_RECORD_CACHE_MB" not in server.env and "CAIRN_RECORD_CACHE_MB" not in os.environ:
        with open("/proc/meminfo") as f:
            mem = int(re.search(r"^MemTotal:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024
        assert info["recordCache"]["budget"] == min(max(mem // 64, 64 << 20), 1 << 30), info


def test_heal_dry_run_healthy(server, filled):
    p = admin(server, "heal", "--dry-run", filled)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report(p)
    assert rep == {"scanned": 7, "healed": 0, "failed": 0, "copies": 0, "bytes": 0}
    assert "dry run" in p.stdout

    # only the prefix
    p = admin(server, "heal", "--dry-run", f"{filled}/p/")
    assert p.returncode == 0, p.stderr
    assert report(p)["scanned"] == 5

    # a real heal of a healthy bucket changes nothing
    p = admin(server, "heal", filled)
    assert p.returncode == 0, p.stderr
    assert report(p) == {"scanned": 7, "healed": 0, "failed": 0, "copies": 0, "bytes": 0}


def test_heal_stream_raw(server, filled):
    r = heal_stream(server, f"/minio/admin/v3/heal/{filled}")
    assert r.status == 200, r
    assert r.headers.get("Content-Type") == "application/x-ndjson"
    assert r.headers.get("Content-Length") is None  # close-delimited stream
    lines = ndjson(r.body)
    last = lines[-1]
    assert last.get("done") is True and "error" not in last
    assert (last["scanned"], last["healed"], last["failed"], last["drivesHealed"], last["bytes"]) == (7, 0, 0, 0, 0)
    assert all("done" not in x for x in lines[:-1])
    # every bucket: at least ours
    lines = ndjson(heal_stream(server).body)
    assert lines[-1]["done"] is True and lines[-1]["scanned"] >= 7

    r = raw(server, "POST", f"/minio/admin/v3/heal/{filled}", query=[("dryRun", "maybe")])
    assert r.status == 400 and r.error()["Code"] == "InvalidArgument"


def test_heal_missing_bucket(server):
    p = admin(server, "heal", "no-such-bucket-here")
    assert p.returncode in (1, 2)
    assert "NoSuchBucket" in p.stderr and "no-such-bucket-here" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    r = heal_stream(server, "/minio/admin/v3/heal/no-such-bucket-here")
    assert r.status == 404
    e = r.error()
    assert e["Code"] == "NoSuchBucket" and e["BucketName"] == "no-such-bucket-here"
    r = heal_stream(server, "/minio/admin/v3/heal/Bad_Name")
    assert r.status == 400 and r.error()["Code"] == "InvalidBucketName"


def test_unauthenticated_is_403(server):
    for method, path in (("POST", "/minio/admin/v3/heal"), ("GET", "/minio/admin/v3/info"),
                         ("GET", "/minio/admin/v3/whatever")):
        r = raw(server, method, path, sign=False)
        assert r.status == 403, (path, r)
        assert r.error()["Code"] == "AccessDenied"


def test_bad_credentials_403(server):
    r = raw(server, "GET", "/minio/admin/v3/info", secret="not-the-secret")
    assert r.status == 403 and r.error()["Code"] == "SignatureDoesNotMatch"
    r = raw(server, "POST", "/minio/admin/v3/heal", access="nobody", secret="whatever1")
    assert r.status == 403 and r.error()["Code"] == "InvalidAccessKeyId"
    p = admin(server, "info", secret="not-the-secret")
    assert p.returncode == 2
    assert "403" in p.stderr and "SignatureDoesNotMatch" in p.stderr
    p = admin(server, "heal", "--access-key", ACCESS, "--secret-key", "wrong-secret")
    assert p.returncode == 2 and "403" in p.stderr


def test_other_admin_paths(server):
    r = raw(server, "GET", "/minio/admin/v3/config")
    assert r.status == 501 and r.error()["Code"] == "NotImplemented"
    r = raw(server, "GET", "/minio/admin/v3/heal")
    assert r.status == 405 and r.error()["Code"] == "MethodNotAllowed"
    r = raw(server, "POST", "/minio/admin/v3/info")
    assert r.status == 405
    s3 = make_client(server)
    with pytest.raises(Exception) as ei:
        s3.create_bucket(Bucket="minio")
    assert ei.value.response["Error"]["Code"] == "InvalidBucketName"


@one_drive_layout
def test_cli_usage_and_connection_errors(server, tmp_path):
    p = subprocess.run([CAIRN_BIN, "admin"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "usage" in p.stderr
    p = subprocess.run([CAIRN_BIN, "admin", "frobnicate"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "unknown command" in p.stderr
    p = admin(server, "heal", "--bogus")
    assert p.returncode == 2 and "--bogus" in p.stderr
    # nothing listens on port 1
    p = admin(None, "info", env_extra={"CAIRN_ADMIN_HOST": "127.0.0.1:1"})
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "127.0.0.1:1" in p.stderr
    # the host as a URL argument (DESIGN.md §1: cairn admin info http://127.0.0.1:9000)
    p = admin(None, "info", server.endpoint)
    assert p.returncode == 0 and "1 online" in p.stdout


# --- four drives: a real heal ------------------------------------------------------------------

SIZES = [0, 1, 1000, 200 * 1024, 300 * 1024, 1024 * 1024 + 1, 3 * 1024 * 1024 + 5]


def snapshot(folder):
    """{relative path: sha256} of every file under folder."""
    out = {}
    for base, _, files in os.walk(folder):
        for f in files:
            full = os.path.join(base, f)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, folder)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def key_paths(drive, bucket, key):
    """A key's folder and its current record beside it (docs/FORMAT.md §3)."""
    *parents, leaf = key.split("/")
    folder = os.path.join(drive, bucket, *parents)
    return os.path.join(folder, leaf), os.path.join(folder, "%m." + leaf)


def key_snapshot(drive, bucket, key):
    """snapshot() of a key's folder, plus its record as "%m.<leaf>"."""
    folder, rec = key_paths(drive, bucket, key)
    out = snapshot(folder)
    if os.path.isfile(rec):
        with open(rec, "rb") as fh:
            out[os.path.basename(rec)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def remove_key(drive, bucket, key):
    """Removes a drive's copy of a key: its record and its folder (the ones that exist)."""
    folder, rec = key_paths(drive, bucket, key)
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.exists(rec):
        os.unlink(rec)


def test_info_record_cache(drive_server, tmp_path):
    """`cairn admin info` reports the record cache: its budget (CAIRN_RECORD_CACHE_MB),
    the bytes it holds, hits and misses; 0 turns it off, a malformed value is refused with
    a log line and the default kept."""
    srv = drive_server([os.path.join(str(tmp_path), "d{1...4}")], env={"CAIRN_RECORD_CACHE_MB": "8"})

    def cache():
        p = admin(srv, "info", "--json")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["recordCache"]

    c0 = cache()
    assert c0 == {"budget": 8 << 20, "bytes": 0, "hits": 0, "misses": 0}, c0
    s3 = make_client(srv)
    b = unique_bucket("rc")
    s3.create_bucket(Bucket=b)
    body = rand_bytes(64 << 10, seed=7)
    s3.put_object(Bucket=b, Key="k", Body=body)
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == body
    c1 = cache()
    assert c1["misses"] > 0 and c1["hits"] == 0 and 64 << 10 <= c1["bytes"] <= 8 << 20, c1
    for _ in range(3):
        assert s3.get_object(Bucket=b, Key="k")["Body"].read() == body
    c2 = cache()  # the same records again: every lookup hits, nothing more is read
    assert c2["misses"] == c1["misses"] and c2["hits"] > 0 and c2["hits"] % 3 == 0, (c1, c2)
    assert c2["bytes"] == c1["bytes"], (c1, c2)
    p = admin(srv, "info")
    pct = round(100 * c2["hits"] / (c2["hits"] + c2["misses"]))
    assert re.search(r"^cache +\d[\d.]* KiB of records in 8\.0 MiB, %d hits, %d misses \(%d %% hits\)$"
                     % (c2["hits"], c2["misses"], pct), p.stdout, re.M), p.stdout
    s3.delete_object(Bucket=b, Key="k")
    s3.delete_bucket(Bucket=b)
    srv.stop()

    srv.env["CAIRN_RECORD_CACHE_MB"] = "0"
    srv.start()
    assert cache() == {"budget": 0, "bytes": 0, "hits": 0, "misses": 0}
    assert re.search(r"^cache +off ", admin(srv, "info").stdout, re.M)
    srv.stop()

    srv.env["CAIRN_RECORD_CACHE_MB"] = "64k"
    srv.start()
    assert cache()["budget"] >= 64 << 20
    with open(srv.log_path) as f:
        assert "CAIRN_RECORD_CACHE_MB=64k is not a number of MiB" in f.read()


def test_heal_max_sleep(drive_server, tmp_path):
    """CAIRN_HEAL_MAX_SLEEP (or MINIO_HEAL_MAX_SLEEP) caps the background heal's pause
    after each object (default 1 s, 0: none), as admin info reports; a malformed value
    stops the server at start with a one-line message."""
    def max_sleep(env):
        srv = drive_server([os.path.join(str(tmp_path), f"d{len(os.listdir(str(tmp_path)))}")], env=env)
        p = admin(srv, "info", "--json")
        assert p.returncode == 0, p.stderr
        srv.stop()
        return json.loads(p.stdout)["heal"]["scan"]["maxSleepMs"]

    assert max_sleep({}) == 1000
    assert max_sleep({"CAIRN_HEAL_MAX_SLEEP": "250ms"}) == 250
    assert max_sleep({"MINIO_HEAL_MAX_SLEEP": "2s"}) == 2000
    assert max_sleep({"CAIRN_HEAL_MAX_SLEEP": "0"}) == 0
    for bad in ("fast", "-1s", "2h"):
        env = dict(os.environ, CAIRN_HEAL_MAX_SLEEP=bad)
        p = subprocess.run([CAIRN_BIN, "server", str(tmp_path / "bad"), "--address", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=20, env=env, stdin=subprocess.DEVNULL)
        assert p.returncode == 2, (bad, p.stdout, p.stderr)
        assert f"CAIRN_HEAL_MAX_SLEEP={bad} is not a duration from 0 to 1h" in p.stderr, p.stderr
        assert not os.path.exists(tmp_path / "bad"), "nothing is made before the refusal"


@pytest.mark.parametrize("victim_index", [1, 0])  # 0: the drive a single-drive walk would list
def test_heal_four_drives(drive_server, tmp_path, victim_index):
    root = str(tmp_path)
    srv = drive_server([os.path.join(root, "d{1...4}")])
    drives = [os.path.join(root, f"d{i}") for i in range(1, 5)]
    info = json.loads(admin(srv, "info", "--json").stdout)
    assert (info["setDriveCount"], info["standardSCParity"], info["onlineDrives"]) == (4, 2, 4)
    assert sorted(d["endpoint"] for d in info["drives"]) == drives

    s3 = make_client(srv)
    b = unique_bucket("heal")
    s3.create_bucket(Bucket=b)
    data = {}
    for i, size in enumerate(SIZES):
        for j in range(2):
            key = f"obj/{size}-{j}"
            data[key] = rand_bytes(size, seed=i * 10 + j)
            s3.put_object(Bucket=b, Key=key, Body=data[key])
    damaged = [k for k in data if k.endswith("-0")]
    victim = drives[victim_index]
    before = {k: key_snapshot(victim, b, k) for k in damaged}
    assert all(before[k] for k in damaged)
    for k in damaged:
        remove_key(victim, b, k)

    p = admin(srv, "heal", "--dry-run", b)
    assert p.returncode == 0, p.stderr
    rep = report(p)
    assert (rep["scanned"], rep["healed"], rep["failed"], rep["copies"]) == (len(data), len(damaged), 0, 0)
    assert not any(key_snapshot(victim, b, k) for k in damaged)  # dry run wrote nothing

    p = admin(srv, "heal", b)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report(p)
    assert (rep["scanned"], rep["healed"], rep["failed"], rep["copies"]) == (len(data), len(damaged), 0, len(damaged))
    assert rep["bytes"] > sum(len(data[k]) for k in damaged) / 2 * 0.9  # one shard of each, and more

    # the drive's files are back; shard files are byte-exact the ones removed
    for k in damaged:
        after = key_snapshot(victim, b, k)
        assert set(after) == set(before[k]), (k, before[k], after)
        for rel, digest in before[k].items():
            if os.path.basename(rel).startswith("part."):
                assert after[rel] == digest, (k, rel)

    # a second heal finds nothing to do
    p = admin(srv, "heal", b)
    assert p.returncode == 0 and report(p)["healed"] == 0

    # every object reads back byte-exact from the healed drive plus one other: remove two other
    # drives' copies of the healed keys (parity 2) and restart to drop the record cache
    srv.stop()
    for d in [x for x in drives if x != victim][:2]:
        for k in damaged:
            remove_key(d, b, k)
    srv.start()
    s3 = make_client(srv)
    for k, body in data.items():
        got = s3.get_object(Bucket=b, Key=k)["Body"].read()
        assert got == body, k


def test_heal_four_drives_unrepairable(drive_server, tmp_path):
    """An object with more shards gone than parity (one drive's copy removed, two other
    drives' shard files corrupted; the metadata intact on the first drive, which listing
    reads, and on two more)
    cannot be rebuilt: it is counted failed and the command exits 1; the healthy object beside
    it is untouched."""
    root = str(tmp_path)
    srv = drive_server([os.path.join(root, "d{1...4}")])
    s3 = make_client(srv)
    b = unique_bucket("heal")
    s3.create_bucket(Bucket=b)
    good = rand_bytes(2 * 1024 * 1024, seed=1)
    s3.put_object(Bucket=b, Key="ok", Body=good)
    s3.put_object(Bucket=b, Key="lost", Body=rand_bytes(2 * 1024 * 1024, seed=2))
    srv.stop()
    remove_key(os.path.join(root, "d2"), b, "lost")
    parts = [os.path.join(base, f) for d in ("d3", "d4") for base, _, fs in os.walk(os.path.join(root, d, b, "lost"))
             for f in fs if f.startswith("part.")]
    assert len(parts) == 2, "expected shard files for a 2 MiB object"
    for part in parts:
        with open(part, "r+b") as fh:
            fh.seek(100)
            c = fh.read(1)
            fh.seek(100)
            fh.write(bytes([c[0] ^ 0xFF]))
    srv.start()
    p = admin(srv, "heal", b)
    assert p.returncode == 1, p.stdout + p.stderr
    rep = report(p)
    assert (rep["scanned"], rep["healed"], rep["failed"]) == (2, 0, 1), rep
    assert make_client(srv).get_object(Bucket=b, Key="ok")["Body"].read() == good
