"""Erasure-coded deployments end to end (issue 3): `cairn server` over 4, 6, 8 and 16 drive
folders (one pool, one set each by MinIO's rules; 16 drives also as 4 sets of 4 and as two
pools), objects of every size class (empty, 1 byte, inline threshold +-1, one block +-1,
several blocks) read back whole and by ranges across block boundaries and checksummed; then
up to M drive folders removed while running and after a restart, shard files and metadata
records with flipped bytes, a drive turned read-only: every read stays byte-exact. With M+1 drives gone requests fail
cleanly (503). Layout errors are refused at start with MinIO's message.

The multi-drive tests skip themselves only while the server refuses multi-drive sets
(detected from its start-up error), so they run as soon as the erasure layer serves them."""

import glob
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import zlib

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS, CAIRN_BIN, SECRET, Server, err_code, http_get, make_client, unique_bucket

MiB = 1024 * 1024
INLINE = 128 * 1024
SIZES = [0, 1, INLINE - 1, INLINE, INLINE + 1, MiB - 1, MiB, MiB + 1, 3 * MiB + 12345]
PARITY = {4: 2, 6: 3, 8: 4, 16: 4}

_probe_result = {}


def _multi_drive_unsupported():
    """None when the server serves a 4-drive set; otherwise why not (its start-up error)."""
    if "r" in _probe_result:
        return _probe_result["r"]
    root = tempfile.mkdtemp(prefix="cairn-ec-probe-")
    srv = Server(drives=[os.path.join(root, "d{1...4}")], name="probe")
    reason = None
    try:
        srv.start()
    except RuntimeError as e:
        text = str(e)
        if "not implemented" in text or "cannot serve erasure-coded" in text or "unsupported" in text.lower():
            reason = "this build refuses multi-drive erasure sets: " + text.strip().splitlines()[-1]
        else:
            raise
    finally:
        srv.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    _probe_result["r"] = reason
    return reason


@pytest.fixture
def need_multi_drive():
    # these tests start their own servers over their own drive layouts: the same run in
    # the pass whose default server has 4 drives (run.sh pytest-ec) would only repeat them
    if int(os.environ.get("CAIRN_TEST_DRIVES", "1")) > 1:
        pytest.skip("brings its own drive layouts: runs in the one-drive pass")
    reason = _multi_drive_unsupported()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def root():
    d = tempfile.mkdtemp(prefix="cairn-ec-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def md5(b):
    return hashlib.md5(b).hexdigest()


def put_all(s3, bucket, seed=1):
    """Objects of every size class; returns {key: bytes}."""
    rnd = random.Random(seed)
    objs = {}
    for i, n in enumerate(SIZES):
        key = f"obj/{i:02d}-{n}"
        data = rnd.randbytes(n)
        r = s3.put_object(Bucket=bucket, Key=key, Body=data)
        assert r["ETag"].strip('"') == md5(data)
        objs[key] = data
    return objs


RANGES = [(0, 0), (MiB - 10, MiB + 9), (MiB - 1, MiB), (MiB, 2 * MiB - 1), (2 * MiB - 5, 3 * MiB + 7),
          (INLINE - 3, INLINE + 2), (5, 200000)]


def check_all(s3, bucket, objs, ranges=True):
    for key, data in objs.items():
        r = s3.get_object(Bucket=bucket, Key=key)
        body = r["Body"].read()
        assert len(body) == len(data), key
        assert md5(body) == md5(data), f"{key}: bytes differ"
        if not ranges or not data:
            continue
        for a, b in RANGES:
            if a >= len(data):
                continue
            b = min(b, len(data) - 1)
            got = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={a}-{b}")["Body"].read()
            assert got == data[a:b + 1], f"{key} bytes={a}-{b}"


def drive_dirs(root, n, name="d"):
    return [os.path.join(root, f"{name}{i}") for i in range(1, n + 1)]


def files_of(drive, bucket, key, pattern):
    return sorted(glob.glob(os.path.join(drive, bucket, *key.split("/"), pattern)))


def record_of(drive, bucket, key):
    """[path] of the key's current record on drive (beside its folder: docs/FORMAT.md §3;
    keys here need no escaping and have short leaves), [] when there is none."""
    *parents, leaf = key.split("/")
    path = os.path.join(drive, bucket, *parents, "%m." + leaf)
    return [path] if os.path.isfile(path) else []


def flip(path, where=None):
    size = os.path.getsize(path)
    if size == 0:
        return False
    off = size // 2 if where is None else min(where, size - 1)
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x5A]))
    return True


def expect_unavailable(call):
    """A request that must fail cleanly for lack of drives: 503 with an S3 error code."""
    with pytest.raises(ClientError) as ei:
        call()
    code, status = err_code(ei.value)
    assert status == 503, (code, status)
    # a HEAD answer has no body: botocore reports the status as the code
    assert code in ("InsufficientReadQuorum", "InsufficientWriteQuorum", "SlowDown",
                    "ServiceUnavailable", "503"), code


# --- layout and start-up ------------------------------------------------------------------------

def wait_until(cond, seconds):
    """Polls cond() every 0.5 s until it holds or seconds pass; returns its last value."""
    deadline = time.time() + seconds
    while not cond() and time.time() < deadline:
        time.sleep(0.5)
    return cond()


def filled_set(drive_server, root, n, name, seed):
    """A server over n drive folders in root with one bucket holding put_all's objects:
    (srv, s3, bucket, objs, the drive folders)."""
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    s3 = make_client(srv)
    b = unique_bucket(name)
    s3.create_bucket(Bucket=b)
    return srv, s3, b, put_all(s3, b, seed=seed), drive_dirs(root, n)


def restart_without(srv, gone):
    """Restarts srv with the drive folders in gone removed; a client of it."""
    srv.stop()
    for d in gone:
        shutil.rmtree(d)
    srv.start()
    return make_client(srv)


def log_has(srv, text):
    return lambda: text in open(srv.log_path).read()


def admin_cli(srv, cmd, *args):
    """stdout of `cairn admin CMD --host <srv> ARGS...`, which must succeed."""
    env = dict(os.environ, CAIRN_ROOT_USER=ACCESS, CAIRN_ROOT_PASSWORD=SECRET)
    p = subprocess.run([CAIRN_BIN, "admin", cmd, "--host", f"127.0.0.1:{srv.port}", *args],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def run_server(args, env_extra, timeout=20):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("CAIRN_ERASURE", "MINIO_ERASURE", "CAIRN_STORAGE_CLASS", "MINIO_STORAGE_CLASS")):
            env.pop(k)
    env.update({"CAIRN_ROOT_USER": "cairnadmin", "CAIRN_ROOT_PASSWORD": "cairnsecret123"})
    env.update(env_extra)
    return subprocess.run([CAIRN_BIN, "server"] + args + ["--address", "127.0.0.1:0"], env=env,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("var", ["CAIRN_ERASURE_SET_DRIVE_COUNT", "MINIO_ERASURE_SET_DRIVE_COUNT"])
def test_invalid_set_drive_count_refused(root, var):
    r = run_server([os.path.join(root, "d{1...8}")], {var: "3"})
    assert r.returncode == 2, r.stderr
    assert "acceptable values for 8 drives are 2 4 8" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(root, "d1")), "nothing may be created on a refused layout"
    r = run_server([os.path.join(root, "d{1...8}")], {var: "many"})
    assert r.returncode == 2 and "CAIRN_ERASURE_SET_DRIVE_COUNT" in r.stderr, r.stderr


def test_bad_layouts_refused(root):
    r = run_server([os.path.join(root, "d{1...17}")], {})  # no set size 2..16 divides 17
    assert r.returncode == 2 and "17" in r.stderr, r.stderr
    r = run_server([os.path.join(root, "d{1...4}")], {"CAIRN_STORAGE_CLASS_STANDARD": "EC:3"})
    assert r.returncode == 2 and "parity" in r.stderr.lower(), r.stderr
    r = run_server(["http://host{1...4}/disk{1...4}"], {})
    assert r.returncode == 2 and "not supported yet" in r.stderr, r.stderr
    r = run_server([os.path.join(root, "a{1...4}"), os.path.join(root, "b")], {})
    assert r.returncode == 2 and "ellipsis" in r.stderr, r.stderr


def test_help_documents_layouts():
    r = subprocess.run([CAIRN_BIN, "server", "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0
    for word in ("{1...16}", "CAIRN_ERASURE_SET_DRIVE_COUNT", "CAIRN_STORAGE_CLASS_STANDARD", "pool"):
        assert word in r.stdout, word


# --- data paths ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [4, 6, 8, 16])
def test_roundtrip_and_lost_drives(need_multi_drive, drive_server, root, n):
    m = PARITY[n]
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    log = open(srv.log_path).read()
    assert f"pools: 1, sets: 1 x {n} drives, parity EC:{m}" in log, log
    s3 = make_client(srv)
    b = unique_bucket("ec")
    s3.create_bucket(Bucket=b)
    objs = put_all(s3, b, seed=n)
    check_all(s3, b, objs)
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]
    assert listed == sorted(objs)
    drives = drive_dirs(root, n)
    for d in drives:  # every drive holds a format record naming its slot
        text = open(os.path.join(d, ".cairn.sys", "format")).read()
        assert f"drive {drives.index(d)}\n" in text and f"drives-per-set {n}\n" in text

    # M drives removed while running: every object still byte-exact, ranges too
    gone = random.Random(n).sample(drives, m)
    for d in gone:
        shutil.rmtree(d)
    check_all(s3, b, objs)
    # writes still succeed with M drives gone when the write quorum allows it
    extra = os.urandom(2 * MiB + 3)
    k = n - m
    if len(drives) - m >= k + (k == m):
        s3.put_object(Bucket=b, Key="after-loss", Body=extra)
        objs["after-loss"] = extra

    # restart: the empty folders are formatted into their slots, everything still reads
    srv.restart()
    log = open(srv.log_path).read()
    for d in gone:
        assert f"drive {d} was empty: formatted into pool 0 set 0 slot {drives.index(d)}" in log, log
    s3 = make_client(srv)
    check_all(s3, b, objs, ranges=False)


@pytest.mark.parametrize("n", [4, 8])
def test_more_than_parity_lost_fails_cleanly(need_multi_drive, drive_server, root, n):
    m = PARITY[n]
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    s3 = make_client(srv)
    b = unique_bucket("ec")
    s3.create_bucket(Bucket=b)
    objs = put_all(s3, b, seed=n)
    # M+1 gone at once: clean 503s, nothing served wrong
    gone = random.Random(n + 1).sample(drive_dirs(root, n), m + 1)
    for d in gone:
        shutil.rmtree(d)
    key = "obj/08-" + str(SIZES[8])
    expect_unavailable(lambda: s3.get_object(Bucket=b, Key=key)["Body"].read())
    expect_unavailable(lambda: s3.head_object(Bucket=b, Key="obj/00-0"))
    expect_unavailable(lambda: s3.put_object(Bucket=b, Key="nope", Body=b"x" * 1000))
    # a key the drives left do not hold may be on the ones gone: not a 404 (nor a 204)
    expect_unavailable(lambda: s3.head_object(Bucket=b, Key="never-written"))
    expect_unavailable(lambda: s3.get_object(Bucket=b, Key="never/written")["Body"].read())
    expect_unavailable(lambda: s3.delete_object(Bucket=b, Key="never-written"))
    assert srv.alive()
    assert objs
    # Started with files where M+1 folders were (not re-formatted: offline), large PUTs
    # are refused with most of their body unread; boto3 must read the 503 each time, on
    # a connection closed with a drain (net.h CN_CONN_DRAIN_CLOSE; test_protocol.py has
    # the case of a client sending without Expect: 100-continue, which a plain close
    # broke).
    srv.stop()
    for d in gone:
        if not os.path.exists(d):
            open(d, "w").close()  # a file where the folder was: not re-formatted, offline
    srv.start()
    s3 = make_client(srv)
    for size in (2 * 1024 * 1024 + 5, 24 * 1024 * 1024):
        expect_unavailable(lambda: s3.put_object(Bucket=b, Key="nope-big", Body=b"y" * size))
    assert srv.alive()


@pytest.mark.parametrize("first", [True, False])
def test_writes_go_on_with_a_drive_gone(need_multi_drive, drive_server, root, first):
    """With one drive folder removed (the first of the set: the one whose flush the other
    drives of its filesystem shared, or another), PUTs of every size class, overwrites and
    DELETEs succeed and read back; they were answered 503 while the first drive was held
    offline, its OFFLINE standing for every drive's durability barrier."""
    n = 4
    srv, s3, b, objs, drives = filled_set(drive_server, root, n, "wgo", 21)
    shutil.rmtree(drives[0] if first else drives[2])
    s3.head_bucket(Bucket=b)
    admin_cli(srv, "info")  # looks at every drive: the gone one is held offline from here
    rnd = random.Random(22)
    for i, size in enumerate([1, 1000, INLINE + 1, MiB + 1]):
        key = f"after/{i}"
        objs[key] = rnd.randbytes(size)
        s3.put_object(Bucket=b, Key=key, Body=objs[key])
    objs["obj/01-1"] = b"z"  # an overwrite
    s3.put_object(Bucket=b, Key="obj/01-1", Body=b"z")
    s3.delete_object(Bucket=b, Key="after/0")
    del objs["after/0"]
    check_all(s3, b, objs, ranges=False)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=b, Key="after/0")
    assert err_code(ei.value)[1] == 404


def test_bitrot_in_shards_and_records(need_multi_drive, drive_server, root):
    n, m = 8, 4
    srv = drive_server([os.path.join(root, "d{1...8}")])
    s3 = make_client(srv)
    b = unique_bucket("rot")
    s3.create_bucket(Bucket=b)
    objs = put_all(s3, b, seed=7)
    drives = drive_dirs(root, n)
    flipped_shards = flipped_meta = 0
    for i, (key, data) in enumerate(objs.items()):
        # M different drives per object: shard files where there are, records elsewhere
        for j, d in enumerate(random.Random(i).sample(drives, m)):
            parts = files_of(d, b, key, "%d.*/part.1")
            if parts and j % 2 == 0:
                flipped_shards += flip(parts[0], where=len(data) // (2 * (n - m)) + 20)
            else:
                metas = record_of(d, b, key)
                assert metas, (key, d)
                flipped_meta += flip(metas[0])
    assert flipped_shards >= 8 and flipped_meta >= 8
    check_all(s3, b, objs)
    # truncated shard files (a fresh object, nothing else damaged) read the same
    data = os.urandom(3 * MiB + 777)
    s3.put_object(Bucket=b, Key="trunc", Body=data)
    for d in drives[:m]:
        parts = files_of(d, b, "trunc", "%d.*/part.1")
        assert parts, d
        with open(parts[0], "r+b") as f:
            f.truncate(os.path.getsize(parts[0]) // 3)
    check_all(s3, b, {"trunc": data})


def test_several_sets_and_pools(need_multi_drive, drive_server, root):
    # 16 drives as 4 sets of 4 (EC:2): keys spread over the sets, listing merged, 2 drives
    # of every set gone at once
    srv = drive_server([os.path.join(root, "d{1...16}")], env={"CAIRN_ERASURE_SET_DRIVE_COUNT": "4"})
    assert "pools: 1, sets: 4 x 4 drives, parity EC:2" in open(srv.log_path).read()
    s3 = make_client(srv)
    b = unique_bucket("sets")
    s3.create_bucket(Bucket=b)
    rnd = random.Random(3)
    objs = {}
    for i in range(120):
        key = f"{'ab'[i % 2]}/{i:03d}"
        objs[key] = rnd.randbytes(rnd.choice([0, 10, 5000, 200000]))
        s3.put_object(Bucket=b, Key=key, Body=objs[key])
    drives = drive_dirs(root, 16)
    per_set = [0, 0, 0, 0]
    for key in objs:
        holders = [i for i, d in enumerate(drives) if record_of(d, b, key)]
        assert len(holders) == 4 and len({h // 4 for h in holders}) == 1, (key, holders)
        per_set[holders[0] // 4] += 1
    assert all(c >= 10 for c in per_set), per_set
    keys, token = [], None
    for _ in range(50):
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket=b, MaxKeys=7, **kw)
        keys += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert keys == sorted(objs)
    r = s3.list_objects_v2(Bucket=b, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/"]
    for s in range(4):
        for d in drives[s * 4:s * 4 + 2]:
            shutil.rmtree(d)
    check_all(s3, b, objs, ranges=False)
    # a non-empty bucket cannot go, an emptied one goes from every set
    with pytest.raises(ClientError) as ei:
        s3.delete_bucket(Bucket=b)
    assert err_code(ei.value)[0] == "BucketNotEmpty"
    srv.stop()

    # two pools of 4 drives each: both pools hold objects, all read back
    srv = drive_server([os.path.join(root, "p1-{1...4}"), os.path.join(root, "p2-{1...4}")])
    assert "pools: 2, sets: 1 x 4 drives + 1 x 4 drives, parity EC:2" in open(srv.log_path).read()
    s3 = make_client(srv)
    s3.create_bucket(Bucket=b)
    objs = {f"k{i:03d}": os.urandom(1000 + i) for i in range(60)}
    for k, v in objs.items():
        s3.put_object(Bucket=b, Key=k, Body=v)
    pools = [0, 0]
    for k in objs:
        in1 = bool(record_of(os.path.join(root, "p1-1"), b, k))
        in2 = bool(record_of(os.path.join(root, "p2-1"), b, k))
        assert in1 != in2, k
        pools[0 if in1 else 1] += 1
    assert pools[0] > 5 and pools[1] > 5, pools
    for k, v in objs.items():  # overwrites stay in their pool
        s3.put_object(Bucket=b, Key=k, Body=v[::-1])
        objs[k] = v[::-1]
    check_all(s3, b, objs, ranges=False)
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]
    assert listed == sorted(objs)


def test_listing_after_first_drive_replaced(need_multi_drive, drive_server, root):
    srv = drive_server([os.path.join(root, "d{1...4}")])
    s3 = make_client(srv)
    b = unique_bucket("first")
    s3.create_bucket(Bucket=b)
    objs = {f"k{i}": os.urandom(300000) for i in range(5)}
    for k, v in objs.items():
        s3.put_object(Bucket=b, Key=k, Body=v)
    srv.stop()
    shutil.rmtree(os.path.join(root, "d1"))
    srv.start()
    s3 = make_client(srv)
    assert [x["Name"] for x in s3.list_buckets()["Buckets"]] == [b]
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", [])]
    assert listed == sorted(objs)


def test_versions_and_uploads_after_first_drive_replaced(need_multi_drive, drive_server, root):
    """Noncurrent versions and multipart uploads are named by the union of M+1 drives' lists
    (EC-8): with the first drive wiped they are still listed, readable and healed back
    onto it (one drive's list had hidden them from ListObjectVersions, ListParts and heal)."""
    n, m = 4, 2
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    s3 = make_client(srv)
    b = unique_bucket("vfirst")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    bodies = {}
    for i, size in enumerate([1000, 300000, 5000]):  # inline, data folder, inline
        body = os.urandom(size)
        bodies[s3.put_object(Bucket=b, Key="k", Body=body)["VersionId"]] = body
    up = s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    for num in (1, 2):
        s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=num, Body=os.urandom(5 << 20))
    srv.stop()
    drives = drive_dirs(root, n)
    shutil.rmtree(drives[0])
    os.mkdir(drives[0])
    srv.start()  # formats the empty drive into slot 0 and starts a heal scan
    s3 = make_client(srv)
    listed = s3.list_object_versions(Bucket=b, Prefix="k").get("Versions", [])
    assert sorted(v["VersionId"] for v in listed) == sorted(bodies)
    for vid, body in bodies.items():
        assert s3.get_object(Bucket=b, Key="k", VersionId=vid)["Body"].read() == body
    assert [p["PartNumber"] for p in s3.list_parts(Bucket=b, Key="mp", UploadId=up)["Parts"]] == [1, 2]
    assert [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=b).get("Uploads", [])] == [up]
    # the heal scan put the noncurrent versions' records back on the wiped drive
    noncurrent = [v["VersionId"] for v in listed if not v["IsLatest"]]
    assert len(noncurrent) == 2

    def healed():
        return all(os.path.isfile(os.path.join(drives[0], b, "k", "%v." + vid)) for vid in noncurrent)
    assert wait_until(healed, 60), os.listdir(os.path.join(drives[0], b))
    # and their shards are right: with M other drives gone every version still reads
    s3 = restart_without(srv, drives[1:1 + m])
    for vid, body in bodies.items():
        assert s3.get_object(Bucket=b, Key="k", VersionId=vid)["Body"].read() == body


def test_buckets_made_or_removed_while_a_drive_was_away(need_multi_drive, drive_server, root):
    """A drive that was away while a bucket was made and another removed comes back: the
    listing follows the drives' quorum, not that drive (EC-9), the missing bucket is
    made on it at start, so new writes and heal reach it; heal removes the removed
    bucket's folder, with the object deleted meanwhile, from it (EC-11)."""
    n, m = 4, 2
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    s3 = make_client(srv)
    early, gone, late = unique_bucket("early"), unique_bucket("gone"), unique_bucket("late")
    s3.create_bucket(Bucket=early)
    s3.create_bucket(Bucket=gone)
    s3.put_object(Bucket=gone, Key="stale", Body=os.urandom(300000))
    srv.stop()
    drives = drive_dirs(root, n)
    away = os.path.join(root, "away")
    os.rename(drives[0], away)
    srv.start()  # an empty d1 in its place, formatted into slot 0
    s3 = make_client(srv)
    s3.create_bucket(Bucket=late)
    objs = {"x": os.urandom(300000), "y": b"small"}
    for k, v in objs.items():
        s3.put_object(Bucket=late, Key=k, Body=v)
    s3.delete_object(Bucket=gone, Key="stale")
    s3.delete_bucket(Bucket=gone)
    srv.stop()
    shutil.rmtree(drives[0])
    os.rename(away, drives[0])  # the old drive is back: it has `gone` (and `stale`), not `late`
    srv.start()
    s3 = make_client(srv)
    assert sorted(x["Name"] for x in s3.list_buckets()["Buckets"]) == sorted([early, late])
    assert os.path.isdir(os.path.join(drives[0], late))
    objs["z"] = os.urandom(200000)
    s3.put_object(Bucket=late, Key="z", Body=objs["z"])
    assert record_of(drives[0], late, "z")
    assert record_of(drives[0], gone, "stale")
    out = admin_cli(srv, "heal", "--dry-run")
    assert re.search(r"dangling buckets found\s+1\b", out), out
    assert os.path.isdir(os.path.join(drives[0], gone))
    out = admin_cli(srv, "heal")
    assert re.search(r"dangling buckets removed\s+1\b", out), out
    assert not os.path.exists(os.path.join(drives[0], gone))
    assert all(record_of(drives[0], late, k) for k in objs)
    assert sorted(x["Name"] for x in s3.list_buckets()["Buckets"]) == sorted([early, late])
    assert re.search(r"dangling buckets removed\s+0\b", admin_cli(srv, "heal"))
    s3 = restart_without(srv, drives[1:1 + m])
    for k, v in objs.items():
        assert s3.get_object(Bucket=late, Key=k)["Body"].read() == v


def test_listing_with_rotten_record_on_first_drive(need_multi_drive, drive_server, root):
    srv = drive_server([os.path.join(root, "d{1...4}")])
    s3 = make_client(srv)
    b = unique_bucket("rotl")
    s3.create_bucket(Bucket=b)
    for k in ("a", "b", "c"):
        s3.put_object(Bucket=b, Key=k, Body=b"x" * 1000)
    assert flip(record_of(os.path.join(root, "d1"), b, "b")[0])
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]] == ["a", "b", "c"]


def test_removed_drive_formatted_when_it_reappears(need_multi_drive, drive_server, root):
    """A drive folder removed while running and made again (a disk swapped under its mount
    point) is formatted into its slot within a few drive checks (every 5 s), gets the
    buckets back and is healed: proven by reading everything with M other drives gone."""
    n, m = 4, 2
    srv, s3, b, objs, drives = filled_set(drive_server, root, n, "back", 11)
    victim = drives[1]
    shutil.rmtree(victim)
    check_all(s3, b, objs, ranges=False)
    os.mkdir(victim)
    assert wait_until(log_has(srv, f"drive {victim} is back and was empty: formatted into pool 0 "
                                   "set 0 slot 1"), 60)
    text = open(os.path.join(victim, ".cairn.sys", "format")).read()
    assert "drive 1\n" in text and f"drives-per-set {n}\n" in text
    assert os.path.isdir(os.path.join(victim, b))
    # the heal scan that follows puts every object's record back on the victim
    wait_until(lambda: all(record_of(victim, b, k) for k in objs), 60)
    missing = [k for k in objs if not record_of(victim, b, k)]
    assert not missing, missing
    # `cairn admin info` tells what that scan did
    def info(*extra):
        return admin_cli(srv, "info", *extra)

    assert wait_until(lambda: json.loads(info("--json"))["heal"]["scan"]["scans"] >= 1, 60)
    time.sleep(6)  # another drive check: a formatted drive is in service, not healed again
    scan = json.loads(info("--json"))["heal"]["scan"]
    assert scan["scans"] == 1 and not scan["running"], scan
    assert (scan["scanned"], scan["healed"], scan["failed"]) == (len(objs), len(objs), 0), scan
    assert scan["drivesHealed"] == len(objs) and scan["bytes"] > 0, scan
    assert scan["started"] <= scan["finished"], scan
    assert re.search(rf"^heal scan +last finished {re.escape(scan['finished'])}: {len(objs)} versions "
                     rf"scanned, {len(objs)} healed, 0 failed, .* written, 0 orphan data and 0 dangling "
                     r"versions removed$",
                     info(), re.M), info()
    # the victim's shards are right: with M other drives gone, every byte still reads
    s3 = restart_without(srv, [x for x in drives if x != victim][:m])
    check_all(s3, b, objs, ranges=False)


def test_drive_that_cannot_be_opened_at_start_is_taken_in_later(need_multi_drive, drive_server, root):
    """A drive whose path cannot be opened at start (here a file stands there) is held
    offline, not dropped for the run: once a folder is at its path the drive monitor opens
    it — an empty one is formatted into its slot and healed, and one that holds the slot's
    old data comes back with it, its stale records of keys deleted or replaced meanwhile
    never read."""
    n = 4
    srv, s3, b, objs, drives = filled_set(drive_server, root, n, "late", 31)
    victim = drives[1]
    # 1. a drive away with its data across a restart: a file at its path
    srv.stop()
    os.rename(victim, victim + ".away")
    open(victim, "w").close()
    srv.start()
    assert log_has(srv, f"drive {victim} (pool 0 set 0 slot 1) cannot be opened")()
    s3 = make_client(srv)
    s3.delete_object(Bucket=b, Key="obj/01-1")
    del objs["obj/01-1"]
    objs["obj/02-" + str(SIZES[2])] = b"replaced while the drive was away"
    s3.put_object(Bucket=b, Key="obj/02-" + str(SIZES[2]), Body=objs["obj/02-" + str(SIZES[2])])
    os.remove(victim)
    os.rename(victim + ".away", victim)
    assert wait_until(log_has(srv, f"drive {victim}: a folder is at its path now: opened"), 30)
    assert wait_until(log_has(srv, f"drive {victim}: back online"), 30)
    check_all(s3, b, objs, ranges=False)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=b, Key="obj/01-1")
    assert err_code(ei.value)[1] == 404
    assert "obj/01-1" not in [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]
    # 2. an empty folder in place of a file at start: formatted into the slot and healed
    srv.stop()
    shutil.rmtree(victim)
    open(victim, "w").close()
    srv.start()
    s3 = make_client(srv)
    os.remove(victim)
    os.mkdir(victim)
    assert wait_until(log_has(srv, f"drive {victim} is back and was empty: formatted into pool 0 "
                                   "set 0 slot 1"), 30)
    wait_until(lambda: all(record_of(victim, b, k) for k in objs), 60)
    missing = [k for k in objs if not record_of(victim, b, k)]
    assert not missing, missing
    # its shards are right: with M other drives gone every byte still reads
    s3 = restart_without(srv, [x for x in drives if x != victim][:PARITY[n]])
    check_all(s3, b, objs, ranges=False)


def test_drive_folder_replaced_while_the_old_one_lives(need_multi_drive, drive_server, root):
    """A drive folder moved away while running and an empty one made at its path (as a new
    disk mounted where a failed one was detached) is switched to within a few drive checks:
    formatted into its slot and healed, and later writes land in it, not in the old one."""
    n, m = 4, 2
    srv, s3, b, objs, drives = filled_set(drive_server, root, n, "swap", 13)
    victim = drives[2]
    old = victim + ".old"
    os.rename(victim, old)
    os.mkdir(victim)
    assert wait_until(log_has(srv, f"drive {victim}: another folder is at its path now"), 60)
    assert wait_until(log_has(srv, f"drive {victim} is back and was empty: formatted into pool 0 "
                                   "set 0 slot 2"), 30)
    assert "drive 2\n" in open(os.path.join(victim, ".cairn.sys", "format")).read()
    wait_until(lambda: all(record_of(victim, b, k) for k in objs), 60)
    missing = [k for k in objs if not record_of(victim, b, k)]
    assert not missing, missing
    s3.put_object(Bucket=b, Key="after-swap", Body=b"new" * 1000)
    assert record_of(victim, b, "after-swap") and not record_of(old, b, "after-swap")
    # the new folder's shards are right: with M other drives gone, every byte still reads
    s3 = restart_without(srv, [x for x in drives if x != victim][:m])
    check_all(s3, b, objs, ranges=False)
    assert s3.get_object(Bucket=b, Key="after-swap")["Body"].read() == b"new" * 1000
    shutil.rmtree(old)


def test_reappearing_drive_with_another_slots_format_is_suspended(need_multi_drive, drive_server,
                                                                  root):
    """A drive folder that comes back holding another slot's format (a copy of drive 3 put
    in drive 2's place) is not formatted over and not used: suspended (logged once, its
    format untouched, new objects not written to it), the objects still read; an empty
    folder put in its place then is formatted into the slot and healed."""
    n = 4
    srv, s3, b, objs, drives = filled_set(drive_server, root, n, "foreign", 12)
    shutil.rmtree(drives[1])
    shutil.copytree(drives[2], drives[1], symlinks=True)
    want = (f"drive {drives[1]} (pool 0 set 0 slot 1) now holds a format record that is not this "
            "slot's: suspended")
    assert wait_until(log_has(srv, want), 30)
    assert "drive 2\n" in open(os.path.join(drives[1], ".cairn.sys", "format")).read()
    check_all(s3, b, objs, ranges=False)
    s3.put_object(Bucket=b, Key="while-suspended", Body=b"s" * 2000)
    assert not record_of(drives[1], b, "while-suspended")
    assert record_of(drives[0], b, "while-suspended") and record_of(drives[3], b, "while-suspended")
    time.sleep(6)  # another check: still logged only once, still not used
    log = open(srv.log_path).read()
    assert log.count(want) == 1, log[-3000:]
    states = [d["state"] for d in json.loads(admin_cli(srv, "info", "--json"))["drives"]]
    assert states == ["online", "suspended", "online", "online"], states
    assert re.search(r"^0 +0 +1 +suspended ", admin_cli(srv, "info"), re.M), admin_cli(srv, "info")
    assert "drive 2\n" in open(os.path.join(drives[1], ".cairn.sys", "format")).read()
    # an empty folder in its place: formatted into slot 1, back in service, healed
    shutil.rmtree(drives[1])
    os.mkdir(drives[1])
    assert wait_until(log_has(srv, f"drive {drives[1]} is back and was empty: formatted into pool 0 "
                                   "set 0 slot 1"), 30)
    assert f"drive {drives[1]} (pool 0 set 0 slot 1): another folder is in place of the suspended " \
           "one: back in service" in open(srv.log_path).read()
    assert "drive 1\n" in open(os.path.join(drives[1], ".cairn.sys", "format")).read()
    states = [d["state"] for d in json.loads(admin_cli(srv, "info", "--json"))["drives"]]
    assert states == ["online"] * 4, states
    objs["while-suspended"] = b"s" * 2000
    wait_until(lambda: all(record_of(drives[1], b, k) for k in objs), 60)
    missing = [k for k in objs if not record_of(drives[1], b, k)]
    assert not missing, missing
    check_all(s3, b, objs, ranges=False)


def test_heal_removes_data_no_version_references(need_multi_drive, drive_server, root):
    """A data folder no record names (an overwrite whose removal of the replaced data a
    crash forgot: FORMAT.md §2) is reported by a dry-run heal and removed by a heal (HEAL-5);
    every object, and a kept version's data, stay readable."""
    n = 4
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    s3 = make_client(srv)
    b = unique_bucket("orph")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1, v2 = os.urandom(400000), os.urandom(300000)
    vid1 = s3.put_object(Bucket=b, Key="k", Body=v1)["VersionId"]
    s3.put_object(Bucket=b, Key="k", Body=v2)
    drives = drive_dirs(root, n)
    real = {d: sorted(files_of(d, b, "k", "%d.*")) for d in drives}
    assert all(len(v) == 2 for v in real.values()), real  # both versions' data folders
    orphan = "%d." + "ab" * 16
    for d in drives:
        shutil.copytree(real[d][0], os.path.join(d, b, "k", orphan))

    def heal(*extra):
        return admin_cli(srv, "heal", *extra, b)

    out = heal("--dry-run")
    assert re.search(r"orphan data found\s+1\b", out), out
    assert all(os.path.isdir(os.path.join(d, b, "k", orphan)) for d in drives)
    out = heal()
    assert re.search(r"orphan data removed\s+1\b", out), out
    assert not any(os.path.exists(os.path.join(d, b, "k", orphan)) for d in drives)
    assert {d: sorted(files_of(d, b, "k", "%d.*")) for d in drives} == real
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == v2
    assert s3.get_object(Bucket=b, Key="k", VersionId=vid1)["Body"].read() == v1
    out = heal()
    assert re.search(r"orphan data removed\s+0\b", out), out


def test_heal_removes_versions_deleted_while_their_drive_was_away(need_multi_drive, drive_server, root):
    """A drive away while objects and a noncurrent version were deleted comes back holding
    them: no read returns them (one drive of 4, read quorum 2), and heal removes those
    records and their data (EC-10/HEAL-7) on a dry run only counting them; what was kept reads
    back byte-exact, from any two drives."""
    n, m = 4, 2
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    s3 = make_client(srv)
    b, bv = unique_bucket("dang"), unique_bucket("dangv")
    s3.create_bucket(Bucket=b)
    s3.create_bucket(Bucket=bv)
    s3.put_bucket_versioning(Bucket=bv, VersioningConfiguration={"Status": "Enabled"})
    bodies = {k: os.urandom(300000) for k in ("gone", "dir/gone2", "kept")}
    bodies["small"] = b"tiny"
    for k, v in bodies.items():
        s3.put_object(Bucket=b, Key=k, Body=v)
    v1, v2 = os.urandom(250000), os.urandom(200000)
    vid1 = s3.put_object(Bucket=bv, Key="k", Body=v1)["VersionId"]
    s3.put_object(Bucket=bv, Key="k", Body=v2)
    srv.stop()
    drives = drive_dirs(root, n)
    away = os.path.join(root, "away")
    os.rename(drives[3], away)
    srv.start()  # an empty d4 in its place
    s3 = make_client(srv)
    for k in ("gone", "dir/gone2", "small"):
        s3.delete_object(Bucket=b, Key=k)
    s3.delete_object(Bucket=bv, Key="k", VersionId=vid1)
    srv.stop()
    shutil.rmtree(drives[3])
    os.rename(away, drives[3])  # back, with what was deleted meanwhile
    srv.start()
    s3 = make_client(srv)
    old = drives[3]
    stale = [record_of(old, b, k)[0] for k in ("gone", "dir/gone2", "small")]
    stale.append(os.path.join(old, bv, "k", "%v." + vid1))
    assert all(os.path.exists(p) for p in stale)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]] == ["kept"]
    assert len(s3.list_object_versions(Bucket=bv)["Versions"]) == 1

    def heal(*args):
        return admin_cli(srv, "heal", *args)

    out = heal("--dry-run")
    assert re.search(r"dangling versions found\s+4\b", out), out
    assert all(os.path.exists(p) for p in stale)
    out = heal()
    assert re.search(r"dangling versions removed\s+4\b", out), out
    assert re.search(r"orphan data removed\s+3\b", out), out  # gone, dir/gone2, k's v1
    assert not any(os.path.exists(p) for p in stale)
    assert not files_of(old, b, "gone", "%d.*") and not files_of(old, b, "dir/gone2", "%d.*")
    assert len(files_of(old, bv, "k", "%d.*")) == 1
    out = heal()
    assert re.search(r"dangling versions removed\s+0\b", out), out
    s3 = restart_without(srv, drives[:m])  # only d3 and the returned d4
    assert s3.get_object(Bucket=b, Key="kept")["Body"].read() == bodies["kept"]
    assert s3.get_object(Bucket=bv, Key="k")["Body"].read() == v2
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]] == ["kept"]


def test_heal_removes_data_of_keys_without_records(need_multi_drive, drive_server, root):
    """Data folders of a key no drive has a record of (a delete that crashed after its
    commit, before removing the data: FORMAT.md §2) are found by heal although no listing
    shows the key (HEAL-6), within the prefix asked; a key whose record is still on enough
    drives keeps its data."""
    n = 4
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    s3 = make_client(srv)
    b = unique_bucket("gone")
    s3.create_bucket(Bucket=b)
    bodies = {k: os.urandom(300000) for k in ("k1", "dir/k2", "k3")}
    bodies["s"] = b"small"
    for k, v in bodies.items():
        s3.put_object(Bucket=b, Key=k, Body=v)
    drives = drive_dirs(root, n)
    data = {k: [p for d in drives for p in files_of(d, b, k, "%d.*")] for k in ("k1", "dir/k2", "k3")}
    assert all(len(v) == n for v in data.values()), data
    for d in drives:  # the deletes' commits, without their data removals
        os.unlink(record_of(d, b, "k1")[0])
        os.unlink(record_of(d, b, "dir/k2")[0])
    for d in drives[:2]:  # k3 lost its record on two drives only: still readable
        os.unlink(record_of(d, b, "k3")[0])
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]) == ["k3", "s"]

    def heal(*args):
        return admin_cli(srv, "heal", *args)

    out = heal("--dry-run", b)
    assert re.search(r"orphan data found\s+2\b", out), out
    assert all(os.path.isdir(p) for v in data.values() for p in v)
    out = heal(f"{b}/dir/")
    assert re.search(r"orphan data removed\s+1\b", out), out
    assert not any(os.path.exists(p) for p in data["dir/k2"])
    assert all(os.path.isdir(p) for p in data["k1"] + data["k3"])
    out = heal(b)
    assert re.search(r"orphan data removed\s+1\b", out), out
    assert not any(os.path.exists(p) for p in data["k1"])
    assert all(os.path.isdir(p) for p in data["k3"])
    assert s3.get_object(Bucket=b, Key="k3")["Body"].read() == bodies["k3"]
    assert s3.get_object(Bucket=b, Key="s")["Body"].read() == bodies["s"]
    assert re.search(r"orphan data removed\s+0\b", heal(b))


def tree_digest(folder):
    """{relative path: sha256} of every file under folder, and every folder ("/" last)."""
    out = {}
    for base, dirs, files in os.walk(folder):
        for d in dirs:
            out[os.path.relpath(os.path.join(base, d), folder) + "/"] = ""
        for f in files:
            with open(os.path.join(base, f), "rb") as fh:
                out[os.path.relpath(os.path.join(base, f), folder)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def test_drive_turned_read_only(need_multi_drive, drive_server, root):
    """A drive whose filesystem turns read-only under the running server (as ext4 does with
    errors=remount-ro; here a bind mount remounted ro): every GET stays byte-exact, PUTs of
    every size class, an overwrite and a DELETE go on with the other three drives (write
    quorum 3 of 4 at EC:2), and nothing on the read-only drive changes. Once it is writable
    again, heal writes the copies it missed — checked on the drive itself and by reading
    every object back from it plus one other drive only."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to bind-mount a drive read-only")
    n = 4
    drives = drive_dirs(root, n)
    for d in drives:
        os.makedirs(d)
    ro = drives[1]
    p = subprocess.run(["mount", "--bind", ro, ro], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {p.stderr.strip()}")
    srv = None
    try:
        srv = drive_server([os.path.join(root, "d{1...4}")])
        s3 = make_client(srv)
        b = unique_bucket("ro")
        s3.create_bucket(Bucket=b)
        objs = put_all(s3, b, seed=31)
        subprocess.run(["mount", "-o", "remount,bind,ro", ro], check=True)
        with pytest.raises(OSError):
            open(os.path.join(ro, "probe"), "w")
        frozen = tree_digest(ro)
        check_all(s3, b, objs)

        rnd = random.Random(32)
        changed = []
        for i, size in enumerate([0, 1, 1000, INLINE + 1, MiB + 1, 3 * MiB + 5]):
            key = f"while-ro/{i}"
            objs[key] = rnd.randbytes(size)
            s3.put_object(Bucket=b, Key=key, Body=objs[key])
            changed.append(key)
        over = f"obj/07-{MiB + 1}"
        objs[over] = rnd.randbytes(2 * MiB + 7)
        s3.put_object(Bucket=b, Key=over, Body=objs[over])
        changed.append(over)
        gone = "obj/02-%d" % (INLINE - 1)
        s3.delete_object(Bucket=b, Key=gone)
        del objs[gone]
        check_all(s3, b, objs, ranges=False)
        with pytest.raises(ClientError) as ei:
            s3.head_object(Bucket=b, Key=gone)
        assert err_code(ei.value)[1] == 404
        assert tree_digest(ro) == frozen  # the read-only drive is untouched

        subprocess.run(["mount", "-o", "remount,bind,rw", ro], check=True)
        assert wait_until(lambda: json.loads(admin_cli(srv, "info", "--json"))["onlineDrives"] == n, 30)
        # the drive's return starts a background scan, which may have healed it already;
        # either way an explicit heal ends with nothing failed
        out = admin_cli(srv, "heal", b)
        assert re.search(r"objects failed +0$", out, re.M), out
        for key in changed:  # the drive now holds a record of each, and shard files for large ones
            assert record_of(ro, b, key), key
            if len(objs[key]) > INLINE:
                assert files_of(ro, b, key, "%d.*/part.1"), key

        # read every object back from the healed drive plus one other (parity 2): remove
        # two other drives' copies, restart (no record cache)
        srv.stop()
        for d in [x for x in drives if x != ro][:2]:
            for key in objs:
                *parents, leaf = key.split("/")
                shutil.rmtree(os.path.join(d, b, *parents, leaf), ignore_errors=True)
                rec = os.path.join(d, b, *parents, "%m." + leaf)
                if os.path.exists(rec):
                    os.unlink(rec)
        srv.start()
        s3 = make_client(srv)
        check_all(s3, b, objs, ranges=False)
        with pytest.raises(ClientError) as ei:
            s3.head_object(Bucket=b, Key=gone)
        assert err_code(ei.value)[1] in (404, 503)
    finally:
        if srv:
            srv.stop()
        subprocess.run(["umount", ro], check=False)


def test_hung_drive_does_not_stop_the_server(need_multi_drive, drive_server, root):
    """A drive call that hangs (here the open of a record that is a FIFO with no writer:
    the kernel blocks it, as a dying disk or a hung mount would) takes the drive offline
    after CAIRN_DRIVE_MAX_TIMEOUT while it is still hung (HEALTH-6), and nothing else
    waits for it: the event loop never asks a drive (HEALTH-7: small GETs it cannot answer from
    the record cache go to a worker), so health, admin and GETs of other keys answer at
    once. The object still reads back byte-exact, and when the call returns and the FIFO
    is gone, a probe brings the drive back and heal rewrites its record."""
    n = 4
    srv = drive_server([os.path.join(root, "d{1...4}")], env={"CAIRN_DRIVE_MAX_TIMEOUT": "1s"})
    s3 = make_client(srv, read_timeout=60)
    b = unique_bucket("hung")
    s3.create_bucket(Bucket=b)
    body = os.urandom(5000)
    s3.put_object(Bucket=b, Key="hang/k", Body=body)
    s3.put_object(Bucket=b, Key="other/k", Body=body)
    srv.stop()  # nothing cached from here
    # the drive a read asks first: the one holding data shard 0 (codec.c cn_codec_dist:
    # drive d holds shard (start + d + 1) % n, start = crc32(bucket/key) % n)
    start = zlib.crc32(f"{b}/hang/k".encode()) % n
    first = os.path.join(root, f"d{(n - 1 - start) % n + 1}")
    rec = record_of(first, b, "hang/k")[0]
    os.unlink(rec)
    os.mkfifo(rec)
    released = threading.Event()

    def release():  # lets every open of the FIFO return (EOF: an unreadable record)
        while not released.is_set():
            try:
                os.close(os.open(rec, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
            time.sleep(0.05)

    try:
        srv.start()
        s3 = make_client(srv, read_timeout=60)
        got = {}

        def get():
            got["body"] = s3.get_object(Bucket=b, Key="hang/k")["Body"].read()

        t = threading.Thread(target=get)
        t.start()
        t0 = time.time()

        def online():
            return json.loads(admin_cli(srv, "info", "--json"))["onlineDrives"]

        assert wait_until(lambda: online() == n - 1, 10), "the hung drive was not taken offline"
        assert time.time() - t0 < 8
        for _ in range(3):  # the server answers meanwhile, whatever the hung call does
            t1 = time.time()
            assert make_client(srv).get_object(Bucket=b, Key="other/k")["Body"].read() == body
            assert http_get(f"{srv.endpoint}/minio/health/live")[0] == 200
            assert time.time() - t1 < 3
        threading.Thread(target=release, daemon=True).start()
        t.join(30)
        assert not t.is_alive() and got.get("body") == body
    finally:
        released.set()
        time.sleep(0.2)
        if os.path.exists(rec) and not os.path.isfile(rec):
            os.unlink(rec)
    assert wait_until(lambda: json.loads(admin_cli(srv, "info", "--json"))["onlineDrives"] == n, 20)
    admin_cli(srv, "heal", b)
    assert os.path.isfile(rec)
    srv.stop()
    for d in ("d1", "d3"):  # read back from the healed drive plus one other
        for p in record_of(os.path.join(root, d), b, "hang/k"):
            os.unlink(p)
    srv.start()
    assert make_client(srv).get_object(Bucket=b, Key="hang/k")["Body"].read() == body


class HungRecords:
    """Makes records FIFOs with no writer: a server's blocking open of one hangs in the
    kernel, as on a dying disk or a hung mount. release() lets every open return (by fd,
    so a reader that opens one just before close() unlinks it is released too: a heal
    queued by degraded GETs may); close() unlinks them while still releasing."""

    def __init__(self, paths):
        self.paths = paths
        for rec in paths:
            os.unlink(rec)
            os.mkfifo(rec)
        self.fds = [os.open(rec, os.O_PATH) for rec in paths]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._release, daemon=True)

    def _release(self):
        while not self.stop.is_set():
            for fd in self.fds:
                try:
                    os.close(os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            time.sleep(0.05)

    def release(self):
        if not self.thread.is_alive():
            self.thread.start()

    def close(self):
        self.release()
        for rec in self.paths:
            if os.path.exists(rec) and not os.path.isfile(rec):
                os.unlink(rec)
        time.sleep(0.5)
        self.stop.set()
        for fd in self.fds:
            os.close(fd)


def hung_keys_setup(drive_server, root, env, workers, nkeys):
    """4 drives; nkeys keys (and other/k) PUT, then the server restarted with the keys'
    records on d1 (the drive their reads ask first) made FIFOs. Returns (srv, bucket,
    keys, body, HungRecords)."""
    n = 4
    srv = drive_server([os.path.join(root, "d{1...4}")], env=env,
                       extra_args=("--workers", str(workers), "--loops", "1"))
    s3 = make_client(srv)
    b = unique_bucket("late")
    s3.create_bucket(Bucket=b)
    body = os.urandom(5000)

    def first_drive(key):  # as test_hung_drive_does_not_stop_the_server
        start = zlib.crc32(f"{b}/{key}".encode()) % n
        return (n - 1 - start) % n + 1

    keys = [k for k in (f"hang/{i}" for i in range(400)) if first_drive(k) == 1][:nkeys]
    assert len(keys) == nkeys
    for k in keys + ["other/k"]:
        s3.put_object(Bucket=b, Key=k, Body=body)
    srv.stop()
    hung = HungRecords([record_of(os.path.join(root, "d1"), b, k)[0] for k in keys])
    srv.start()
    return srv, b, keys, body, hung


def start_get(srv, b, k, body, results):
    def get():
        t0 = time.time()
        try:
            data = make_client(srv, read_timeout=60).get_object(Bucket=b, Key=k)["Body"].read()
            results[k] = (data == body, time.time() - t0)
        except Exception as e:  # noqa: BLE001 - reported by the caller's asserts
            results[k] = (repr(e), time.time() - t0)

    t = threading.Thread(target=get, daemon=True)
    t.start()
    return t


def release_and_check(hung, threads, results):
    """The FIFOs give way: every hung GET completes with the object's bytes."""
    hung.release()
    for t in threads:
        t.join(30)
    assert len(results) == len(threads) and all(r[0] is True for r in results.values()), results


def heal_hung_records(srv, b, hung):
    """After HungRecords.close(): the drive online, heal rewrites every record it lost."""
    assert wait_until(lambda: json.loads(admin_cli(srv, "info", "--json"))["onlineDrives"] == 4, 30)
    admin_cli(srv, "heal", b)
    assert all(os.path.isfile(rec) for rec in hung.paths)


def test_hung_drive_holds_few_workers(need_multi_drive, drive_server, root):
    """Until CAIRN_DRIVE_MAX_TIMEOUT takes a hung drive offline (HEALTH-6), every request that
    asks it would hang with it and hold a worker. HEALTH-8: once 4 calls of the drive
    have run a tenth of the limit, new calls skip it (the drive stays online), so with 8
    workers and a GET a second on keys whose first-asked record is a FIFO, the hung GETs
    stop at about 6 and the later ones, and GETs of other keys, answer at once from the
    other drives. Without HEALTH-8 every worker hangs and the server answers nothing until the
    limit (the pool's growth, net/loop.c NET-6, is off here to show HEALTH-8 alone). When
    the FIFOs give way every GET has its bytes, and heal rewrites the records."""
    srv, b, keys, body, hung = hung_keys_setup(
        drive_server, root, {"CAIRN_DRIVE_MAX_TIMEOUT": "20s", "CAIRN_WORKERS_GROW_AFTER_MS": "-1",
                             "CAIRN_PROMETHEUS_AUTH_TYPE": "public"}, 8, 10)
    results, threads = {}, []
    try:
        t_start = time.time()
        for k in keys:
            threads.append(start_get(srv, b, k, body, results))
            time.sleep(1.0)
        time.sleep(1.5)
        assert time.time() - t_start < 15  # well before the 20 s limit
        answered = [k for k in keys if k in results]
        # the GETs after the first hung ones answered, byte-exact, from the other drives
        assert len(answered) >= 3, results
        assert all(results[k][0] is True and results[k][1] < 3 for k in answered), results
        t1 = time.time()
        assert make_client(srv).get_object(Bucket=b, Key="other/k")["Body"].read() == body
        assert time.time() - t1 < 3
        assert json.loads(admin_cli(srv, "info", "--json"))["onlineDrives"] == 4
        node = http_get(f"{srv.endpoint}/minio/v2/metrics/node")[2].decode()

        def per_drive(name):
            return {d.rsplit("/", 1)[1]: float(v) for d, v in re.findall(
                r'^%s\{drive="([^"]*)"[^}]*\} (\S+)$' % name, node, re.M)}
        refused = per_drive("cairn_node_drive_calls_refused_total")
        assert refused["d1"] >= 3 and refused["d2"] == refused["d3"] == refused["d4"] == 0, refused
        assert set(per_drive("cairn_node_drive_offline_events_total").values()) == {0.0}
        release_and_check(hung, threads, results)
    finally:
        hung.close()
    heal_hung_records(srv, b, hung)


def test_hung_workers_are_replaced(need_multi_drive, drive_server, root):
    """All 4 workers hang at once on FIFO'd records (too fast for HEALTH-8, whose late limit is
    6 s here): the loop sees requests waiting and nothing finished for 2 s and starts
    more workers (net/loop.c NET-6), so a PUT of another key answers in seconds,
    not after the drive limit (60 s). The hung GETs complete byte-exact when the FIFOs
    give way."""
    srv, b, keys, body, hung = hung_keys_setup(
        drive_server, root, {"CAIRN_DRIVE_MAX_TIMEOUT": "60s", "CAIRN_PROMETHEUS_AUTH_TYPE": "public"},
        4, 4)
    results, threads = {}, []

    def gauges():
        node = http_get(f"{srv.endpoint}/minio/v2/metrics/node")[2].decode()
        return {n: float(v) for n, v in re.findall(r"^(cairn_node_workers\w*) (\S+)$", node, re.M)}
    try:
        threads = [start_get(srv, b, k, body, results) for k in keys]
        time.sleep(0.5)
        assert not results, results  # all four hang
        t1 = time.time()  # a PUT needs a worker (a GET of other/k may be served on the loop)
        make_client(srv, read_timeout=20).put_object(Bucket=b, Key="other/k2", Body=body)
        assert time.time() - t1 < 8
        assert make_client(srv).get_object(Bucket=b, Key="other/k2")["Body"].read() == body
        g = gauges()  # grown by 4; busy: the hung four, this scrape, maybe one lingering
        busy = g.pop("cairn_node_workers_busy", None)
        assert g == {"cairn_node_workers": 8, "cairn_node_workers_max": 8} and 5 <= busy <= 6, (g, busy)
        release_and_check(hung, threads, results)
        # the hung GETs' time to first byte counts their wait (> 2.5 s: the PUT above took
        # ~2 s after them): 4 above the 1 s bound, the GET of other/k2 below it
        node = http_get(f"{srv.endpoint}/minio/v2/metrics/node")[2].decode()
        ttfb = {le: float(v) for le, v in re.findall(
            r'^minio_s3_requests_ttfb_seconds_distribution\{api="getobject",le="([^"]+)"\} (\S+)$', node, re.M)}
        assert ttfb["+Inf"] - ttfb["1.000"] == 4 and ttfb["1.000"] >= 1, ttfb
    finally:
        hung.close()
    heal_hung_records(srv, b, hung)


def test_stop_with_hung_requests(need_multi_drive, drive_server, root):
    """SIGTERM while 2 GETs hang on FIFO'd records: the server waits
    CAIRN_SHUTDOWN_TIMEOUT (2 s here) for them, then exits with status 1 without freeing
    what the hung workers still use (freeing the loops, the S3 layer and the drives under
    them would let a call returning later use freed memory: the FIFOs give way 0.5 s past
    the limit here, which an ASan build catches). Restarted, every object reads back and
    heal rewrites the records."""
    srv, b, keys, body, hung = hung_keys_setup(
        drive_server, root, {"CAIRN_DRIVE_MAX_TIMEOUT": "60s", "CAIRN_SHUTDOWN_TIMEOUT": "2s"}, 4, 2)
    results = {}
    try:
        threads = [start_get(srv, b, k, body, results) for k in keys]
        time.sleep(0.5)
        assert not results, results  # both hang
        releaser = threading.Timer(2.5, hung.release)
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        releaser.start()
        rc = srv.stop(timeout=15)
        took = time.time() - t0
        releaser.join()
        for t in threads:
            t.join(10)
        assert rc == 1 and 1.9 < took < 10, (rc, took)
        assert "exiting without closing the drives" in srv.stderr_tail(), srv.stderr_tail()
    finally:
        hung.close()
    srv.start()
    s3 = make_client(srv)
    for k in keys + ["other/k"]:
        assert s3.get_object(Bucket=b, Key=k)["Body"].read() == body
    heal_hung_records(srv, b, hung)


def test_stop_with_a_hung_background_task(need_multi_drive, drive_server, root):
    """A clean stop closes the store, which joins its background threads; one hung on a
    drive call (here the scanner, started at once because d4 was wiped, on a record of d1
    that is a FIFO) hung the stop for good. Now past CAIRN_SHUTDOWN_TIMEOUT (2 s) the
    process exits with status 1; restarted, the object reads back and heal rewrites it."""
    env = {"CAIRN_SHUTDOWN_TIMEOUT": "2s", "CAIRN_DRIVE_MAX_TIMEOUT": "60s"}
    srv = drive_server([os.path.join(root, "d{1...4}")], env=env)
    s3 = make_client(srv)
    b = unique_bucket("bgstop")
    s3.create_bucket(Bucket=b)
    body = os.urandom(3000)
    s3.put_object(Bucket=b, Key="k", Body=body)
    srv.stop()
    hung = HungRecords(record_of(os.path.join(root, "d1"), b, "k"))
    try:
        shutil.rmtree(os.path.join(root, "d4"))  # formatted in at start: a scan at once
        srv.start()

        def scanning():
            return json.loads(admin_cli(srv, "info", "--json"))["heal"]["scan"]["running"]
        assert wait_until(scanning, 20)
        time.sleep(1.0)
        assert scanning()  # hung on the FIFO
        t0 = time.time()
        rc = srv.stop(timeout=15)
        took = time.time() - t0
        assert rc == 1 and 1.9 < took < 10, (rc, took)
        assert "closing the drives took more than" in srv.stderr_tail(), srv.stderr_tail()
    finally:
        hung.close()
    srv.start()
    assert make_client(srv).get_object(Bucket=b, Key="k")["Body"].read() == body
    heal_hung_records(srv, b, hung)


def test_overwrite_cut_short_while_a_drive_misses_the_key(need_multi_drive, drive_server, root):
    """EC-15: an overwrite that a crash cut short after renaming its record onto 3 of 8
    drives (EC:4, read quorum 4), while 2 other drives miss the key (lost, not healed yet),
    leaves the acknowledged version on 3 drives' current records only. The commit kept it
    as those 3 drives' previous record (`%p.<leaf>`, FORMAT.md §2), with its data folder:
    GET, HEAD and the listing still return it byte-exact (the previous binary answered 503
    and left it out of the listing), heal rewrites it on every drive, and an overwrite
    after it works. The crash state is made by hand from the records of two real commits,
    with the server stopped (a restart, as after the crash)."""
    n = 8
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")])
    s3 = make_client(srv)
    b = unique_bucket("cut")
    s3.create_bucket(Bucket=b)
    drives = drive_dirs(root, n)
    objs = {"small": (os.urandom(3000), os.urandom(2500)),       # inline in the records
            "big/k": (os.urandom(2 * MiB + 1), os.urandom(MiB))}   # shard files in %d.<id>
    saved = {}
    for key, (x, _) in objs.items():
        s3.put_object(Bucket=b, Key=key, Body=x)
    srv.stop()
    for key in objs:  # X: every drive's record, and its data folder (removed by the overwrite)
        *parents, leaf = key.split("/")
        for i, d in enumerate(drives):
            kdir = os.path.join(d, b, *parents, leaf)
            saved[key, i] = (open(record_of(d, b, key)[0], "rb").read(),
                             [(p, os.path.basename(p)) for p in glob.glob(os.path.join(kdir, "%d.*"))])
            for p, name in saved[key, i][1]:
                shutil.copytree(p, os.path.join(root, f"save-{i}-{leaf}-{name}"))
    srv.start()
    s3 = make_client(srv)
    for key, (_, y) in objs.items():
        s3.put_object(Bucket=b, Key=key, Body=y)  # Y, acknowledged: crash state made below
    srv.stop()
    for key in objs:
        *parents, leaf = key.split("/")
        for i, d in enumerate(drives):
            folder = os.path.join(d, b, *parents)
            rec, data = saved[key, i]
            cur, prev = os.path.join(folder, "%m." + leaf), os.path.join(folder, "%p." + leaf)
            assert not os.path.exists(prev)  # dropped after the acknowledged overwrite
            if i in (1, 2):  # lost: nothing of the key
                os.unlink(cur)
                shutil.rmtree(os.path.join(folder, leaf), ignore_errors=True)
                continue
            for _, name in data:  # the replaced version's data is still there at a crash
                dst = os.path.join(folder, leaf, name)
                if not os.path.exists(dst):
                    shutil.copytree(os.path.join(root, f"save-{i}-{leaf}-{name}"), dst)
            if i in (0, 3, 4):  # Y renamed in; X kept as the previous record
                open(prev, "wb").write(rec)
            else:  # not reached: X current (and, as prev_keep ran on every drive, previous)
                open(cur, "wb").write(rec)
                open(prev, "wb").write(rec)
    srv.start()
    s3 = make_client(srv)
    for key, (x, _) in objs.items():
        assert s3.head_object(Bucket=b, Key=key)["ContentLength"] == len(x), key
        assert s3.get_object(Bucket=b, Key=key)["Body"].read() == x, key
        got = s3.get_object(Bucket=b, Key=key, Range="bytes=1000-1999")["Body"].read()
        assert got == x[1000:2000], key
    listed = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=b).get("Contents", [])}
    assert listed == {k: len(x) for k, (x, _) in objs.items()}, listed
    assert log_has(srv, "no version at quorum among the current records")()
    admin_cli(srv, "heal", b)
    for key, (x, _) in objs.items():
        *parents, leaf = key.split("/")
        recs = [record_of(d, b, key) for d in drives]
        assert all(recs), (key, recs)
        assert not any(os.path.exists(os.path.join(d, b, *parents, "%p." + leaf))
                       for d in (drives[0], drives[3], drives[4])), key
    # healed whole: 4 drives' worth of records may now go (drives 5..8 hold X current)
    s3 = restart_without(srv, drives[:4])
    for key, (x, _) in objs.items():
        assert s3.get_object(Bucket=b, Key=key)["Body"].read() == x, key
    for key, (x, y) in objs.items():  # and an overwrite goes on as usual
        s3.put_object(Bucket=b, Key=key, Body=y + b"z")
        assert s3.get_object(Bucket=b, Key=key)["Body"].read() == y + b"z", key
