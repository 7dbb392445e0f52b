"""Random operations on an erasure-coded set checked against a model (issue 3), while drives
are removed, come back empty, rot and are healed.

A seeded sequence of PUTs (every size class: empty, inline, around the inline threshold,
several blocks), multipart uploads, overwrites, DELETEs, whole and range GETs, HEADs and listings runs against
one set, interleaved with faults: a drive folder removed while running, made again (the
server formats it back into its slot and heals it), a byte flipped in a record or a shard
file, a shard file truncated, and `cairn admin heal`; on 6 drives also one drive away with
its data across restarts and back holding stale versions and records of deleted keys
(a quarter and half-way in). The model holds what was
acknowledged and, for each key, the drives whose copy of the current version is missing
or damaged; faults go only where every object keeps K good copies (at most M bad), since
more is data loss by definition (test_erasure.py covers more than M drives gone). The
rules checked:

- every acknowledged object reads back byte-exact, whole and by range, HEAD gives its
  length, and listings show it with its size; a key not in the model is 404;
- a PUT or DELETE with write quorum online succeeds; one without it fails with 503 and
  changes nothing that can be read (EC-12) — a DELETE of a key that is nowhere is
  answered 204 once K drives say so;
- a listing never shows a key the model does not hold;
- `cairn admin heal` succeeds for every object, and afterwards every object reads back
  with any M drives removed.

Each removal is followed by `cairn admin info`, which looks at every drive, so the server
knows the drive is gone before the next request: a drive that vanishes unnoticed is found
by the first request that touches it, and a PUT or DELETE that finds it so in the middle
of its commit may leave its change on the drives it reached (EC-12's window, as MinIO's).

CAIRN_RANDOM_SEED and CAIRN_RANDOM_OPS run other or longer sequences by hand;
CAIRN_RANDOM_LOG=all prints every operation of a failing sequence, not the last 25."""

import hashlib
import os
import random
import shutil
import subprocess
import threading
import time

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS, CAIRN_BIN, SECRET, err_code, make_client, unique_bucket
from test_erasure import drive_dirs, flip, need_multi_drive, root, wait_until  # noqa: F401 (fixtures)

KiB = 1024
MiB = 1024 * KiB
INLINE = 128 * KiB
# (size, weight): small objects dominate, as in use; multi-block ones are rarer (slow)
SIZES = [(0, 2), (1, 3), (1000, 6), (INLINE - 1, 2), (INLINE, 2), (INLINE + 1, 2),
         (300 * KiB, 3), (MiB + 1, 1), (2 * MiB + 5, 1)]
KEYS = [f"{p}/k{i}" for p in ("a", "b", "c/d") for i in range(8)]
OPS = [("put", 30), ("get", 22), ("range", 10), ("head", 5), ("delete", 10), ("list", 6),
       ("remove", 4), ("restore", 5), ("flip", 5), ("truncate", 3), ("multipart", 2)]


def pick(rnd, weighted):
    return rnd.choices([x for x, _ in weighted], [w for _, w in weighted])[0]


class Trace:
    """A random sequence's log, failure report (seed and last operations), admin calls and
    wait for drives made again to be formatted back (formatted: format lines seen)."""

    def __init__(self, seed, srv, drives):
        self.seed, self.srv, self.drives = seed, srv, drives
        self.log = []
        self.formatted = {d: 0 for d in range(len(drives))}

    def fail(self, msg):
        tail = self.log if os.environ.get("CAIRN_RANDOM_LOG") == "all" else self.log[-25:]
        pytest.fail(f"seed {self.seed}: {msg}\nlast operations:\n  " + "\n  ".join(tail))

    def admin(self, *args):
        p = run_admin(self.srv, *args)
        if p.returncode != 0:
            self.fail(f"admin {' '.join(args)}: rc {p.returncode}: {p.stdout}{p.stderr}")

    def settle(self, returning):
        late = settle(self.srv, self.drives, returning, self.formatted)
        if late:
            self.fail(f"drives {late} made again were not formatted back within 30 s")


class Model:
    def __init__(self, n, m, k):
        self.n, self.m = n, m
        self.wq = k + 1 if k == m else k  # write quorum
        self.objs = {}     # key -> bytes acknowledged
        self.bad = {}      # key -> drives whose copy may be missing or damaged
        self.removed = set()
        self.returning = set()  # made again; in service once the monitor formats them

    def readable(self, key):
        return len(self.bad[key] | self.removed) <= self.m

    def down(self):
        return self.removed | self.returning


def status_of(e):
    return err_code(e)[1]


def start_set(drive_server, root, n, m, name):
    """A server over n drive folders, EC:m, heal unthrottled, with one bucket:
    (srv, client, drive folders, bucket)."""
    srv = drive_server([os.path.join(root, f"d{{1...{n}}}")],
                       env={"CAIRN_STORAGE_CLASS_STANDARD": f"EC:{m}", "CAIRN_HEAL_MAX_SLEEP": "0"})
    s3 = make_client(srv)
    b = unique_bucket(name)
    s3.create_bucket(Bucket=b)
    return srv, s3, drive_dirs(root, n), b


def run_admin(srv, *args):
    env = dict(os.environ, CAIRN_ROOT_USER=ACCESS, CAIRN_ROOT_PASSWORD=SECRET)
    return subprocess.run([CAIRN_BIN, "admin", *args, "--host", f"127.0.0.1:{srv.port}"],
                          capture_output=True, text=True, env=env, timeout=120)


def formatted_back(srv, drive):
    """How often the drive monitor formatted drive back into its slot (this start's log)."""
    return open(srv.log_path).read().count(f"drive {drive} is back and was empty: formatted into")


def remove_tree(path):
    """Removes a drive folder the server may be writing into meanwhile (a heal, the drive
    monitor, requests): until it is gone."""
    for _ in range(100):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            return
    raise AssertionError(f"{path} could not be removed")


def settle(srv, drives, returning, formatted):
    """Waits (bounded) until every drive in returning (folders made again) was formatted
    back into its slot: a format line beyond formatted[d], the count seen so far (updated).
    Empties returning; returns the drives that were not within 30 s."""
    late = []
    for d in sorted(returning):
        deadline = time.time() + 30
        while formatted_back(srv, drives[d]) <= formatted[d] and time.time() < deadline:
            time.sleep(0.2)
        if formatted_back(srv, drives[d]) <= formatted[d]:
            late.append(d)
        formatted[d] = formatted_back(srv, drives[d])
    returning.clear()
    return late


def put_back(srv, drive):
    """Stops srv, throws the folder formatted in the drive's place away and puts the drive's
    own folder (moved to drive + ".away") back; the caller starts srv again."""
    srv.stop()
    remove_tree(drive)
    os.rename(drive + ".away", drive)


def multipart_put(s3, b, key, parts):
    """Uploads parts as a multipart upload and completes it; on an error the upload is
    aborted (best effort) and the error raised."""
    uid = None
    try:
        uid = s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
        done = []
        for pn, part in enumerate(parts, 1):
            et = s3.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=pn, Body=part)["ETag"]
            done.append({"ETag": et, "PartNumber": pn})
        s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={"Parts": done})
    except ClientError:
        if uid:
            try:
                s3.abort_multipart_upload(Bucket=b, Key=key, UploadId=uid)
            except ClientError:
                pass
        raise


@pytest.mark.parametrize("n,m,away", [(4, 2, False), (6, 2, True)])
def test_random_operations_with_faults(need_multi_drive, drive_server, root, n, m, away):  # noqa: F811
    seed = int(os.environ.get("CAIRN_RANDOM_SEED") or 1000 + n)
    nops = int(os.environ.get("CAIRN_RANDOM_OPS") or 260)
    rnd = random.Random(seed)
    srv, s3, drives, b = start_set(drive_server, root, n, m, "rnd")
    md = Model(n, m, n - m)
    gen = {k: 0 for k in KEYS}  # successful writes of each key
    gone = None                 # (drive, {key: (gen, bad then)}) while a drive is away
    faults = {"remove": 0, "restore": 0, "flip": 0, "truncate": 0, "away": 0, "back": 0, "multipart": 0}
    tr = Trace(seed, srv, drives)
    log, formatted, fail, admin = tr.log, tr.formatted, tr.fail, tr.admin

    def note(s):
        log.append(s)
        word = s.split()[1] if len(s.split()) > 1 else ""
        if word in faults:
            faults[word] += 1
        elif word == "drive":
            faults["away" if "away" in s else "back"] += 1

    def format_lines(d):
        return formatted_back(srv, drives[d])

    def settle_returning():
        tr.settle(md.returning)

    def files_of_key(d, key):
        *parents, leaf = key.split("/")
        base = os.path.join(drives[d], b, *parents)
        out = []
        rec = os.path.join(base, "%m." + leaf)
        if os.path.isfile(rec):
            out.append(rec)
        folder = os.path.join(base, leaf)
        if os.path.isdir(folder):
            for dp, _, fs in os.walk(folder):
                out += [os.path.join(dp, f) for f in fs if f.startswith("part.")]
        return out

    def check_read(key, data, rng=None):
        """GET (whole or a range) or HEAD of key against the model."""
        in_model = data is not None
        must = in_model and md.readable(key)
        try:
            if rng == "head":
                r = s3.head_object(Bucket=b, Key=key)
                got_len = r["ContentLength"]
                if not in_model:
                    fail(f"HEAD {key}: found, the model has no such key")
                if got_len != len(data):
                    fail(f"HEAD {key}: length {got_len}, want {len(data)}")
                return
            if rng:
                a, z = rng
                got = s3.get_object(Bucket=b, Key=key, Range=f"bytes={a}-{z}")["Body"].read()
                want = data[a:z + 1] if in_model else None
            else:
                got = s3.get_object(Bucket=b, Key=key)["Body"].read()
                want = data
            if not in_model:
                fail(f"GET {key}: {len(got)} bytes, the model has no such key")
            if got != want:
                fail(f"GET {key} {rng or ''}: bytes differ ({len(got)} vs {len(want)})")
        except ClientError as e:
            st = status_of(e)
            if st == 404 and not in_model and len(md.removed) <= m:
                return
            if st == 503 and not must:
                return
            if st == 503 and not in_model and len(md.removed) > m:
                return
            fail(f"{'HEAD' if rng == 'head' else 'GET'} {key} {rng or ''}: {err_code(e)}; "
                 f"in model {in_model}, bad {sorted(md.bad.get(key, ()))}, removed {sorted(md.removed)}")

    for i in range(nops):
        op = pick(rnd, OPS)
        # one drive goes away with its data a quarter in, and comes back half-way
        if away and not gone and not faults["away"] and i >= nops // 4:
            op = "away"
        elif gone and i >= nops // 2 and not md.removed:
            op = "back"
        key = rnd.choice(KEYS)
        online = n - len(md.removed)
        if op in ("put", "multipart"):
            if op == "put":
                data = rnd.randbytes(pick(rnd, SIZES))
                parts = None
                note(f"{i} put {key} {len(data)} (removed {sorted(md.removed)}, returning {sorted(md.returning)})")
            else:  # two parts (the first at S3's 5 MiB minimum); a 503 on the way aborts it
                parts = [rnd.randbytes(5 * MiB), rnd.randbytes(rnd.choice([1, 1000, INLINE + 1]))]
                data = b"".join(parts)
                note(f"{i} multipart {key} (removed {sorted(md.removed)}, returning {sorted(md.returning)})")
            try:
                if parts:
                    multipart_put(s3, b, key, parts)
                else:
                    s3.put_object(Bucket=b, Key=key, Body=data)
                if online < md.wq:
                    fail(f"{op} {key} succeeded with {online} drives online, write quorum {md.wq}")
                md.objs[key] = data
                md.bad[key] = set(md.down()) | ({gone[0]} if gone else set())
                gen[key] += 1
            except ClientError as e:
                if status_of(e) != 503 or n - len(md.down()) >= md.wq:
                    fail(f"{op} {key}: {err_code(e)} with {n - len(md.down())} drives surely online")
        elif op == "delete":
            note(f"{i} delete {key} (removed {sorted(md.removed)})")
            # a key that is nowhere: K drives prove it (a commit reached W > n - K drives)
            # and the answer is 204 without writing anything
            absent = key not in md.objs
            try:
                s3.delete_object(Bucket=b, Key=key)
                if online < (n - m if absent else md.wq):
                    fail(f"DELETE {key} succeeded with {online} drives online, write quorum {md.wq}")
                md.objs.pop(key, None)
                md.bad.pop(key, None)
                gen[key] += 1
            except ClientError as e:
                if status_of(e) != 503 or n - len(md.down()) >= (n - m if absent else md.wq):
                    fail(f"DELETE {key}: {err_code(e)} with {n - len(md.down())} drives surely online")
        elif op in ("get", "head"):
            note(f"{i} {op} {key}")
            check_read(key, md.objs.get(key), "head" if op == "head" else None)
        elif op == "range":
            data = md.objs.get(key)
            if not data:
                continue
            a = rnd.randrange(len(data))
            z = min(len(data) - 1, a + rnd.choice([0, 1, 100, 70000, MiB]))
            note(f"{i} range {key} {a}-{z}")
            check_read(key, data, (a, z))
        elif op == "list":
            prefix = rnd.choice(["", "a/", "c/", "c/d/k1"])
            note(f"{i} list {prefix!r}")
            try:
                got = {}
                for page in s3.get_paginator("list_objects_v2").paginate(
                        Bucket=b, Prefix=prefix, PaginationConfig={"PageSize": 7}):
                    for o in page.get("Contents", []):
                        got[o["Key"]] = o["Size"]
            except ClientError as e:
                if status_of(e) == 503 and len(md.removed) > m:
                    continue
                fail(f"LIST {prefix!r}: {err_code(e)}")
            extra = sorted(set(got) - set(md.objs))
            if extra:
                fail(f"LIST {prefix!r} shows keys the model does not hold: {extra}")
            for k2, data in md.objs.items():
                if not k2.startswith(prefix) or not md.readable(k2):
                    continue
                if k2 not in got:
                    fail(f"LIST {prefix!r}: {k2} missing (bad {sorted(md.bad[k2])})")
                if got[k2] != len(data):
                    fail(f"LIST {prefix!r}: {k2} size {got[k2]}, want {len(data)}")
        elif op == "remove":
            # a removed drive comes back empty: its copies are lost, so it goes only where
            # every object keeps at least K good copies (more than M gone: test_erasure.py)
            live = [d for d in range(n) if d not in md.down() and not (gone and d == gone[0])
                    and all(len(bad | {d}) <= m for bad in md.bad.values())]
            if not live or len(md.down()) >= m:
                continue
            d = rnd.choice(live)
            note(f"{i} remove drive {d}")
            remove_tree(drives[d])
            admin("info")  # the server looks at every drive: it finds this one gone
            md.removed.add(d)
            for k2 in md.bad:
                md.bad[k2].add(d)
        elif op == "away":
            # a drive away with its data, across restarts: its folder moved off (the server
            # formats an empty one in its place, whose copies are thrown away at the
            # return), then put back holding what it held: stale versions of the keys
            # written meanwhile, records of the keys deleted meanwhile
            if md.removed:
                continue
            d = rnd.randrange(n)
            if any(len(bad | {d}) > m for bad in md.bad.values()):
                continue
            settle_returning()  # formatted by the monitor before the restart
            note(f"{i} drive {d} away (restart)")
            srv.stop()
            os.rename(drives[d], drives[d] + ".away")
            srv.start()
            s3 = make_client(srv)
            formatted.update({x: format_lines(x) for x in range(n)})  # a new log
            gone = (d, {k2: (gen[k2], d in md.bad[k2]) for k2 in md.objs})
            for bad in md.bad.values():
                bad.add(d)
        elif op == "back":
            d, snap = gone
            settle_returning()
            note(f"{i} drive {d} back with its old data (restart)")
            put_back(srv, drives[d])
            srv.start()
            s3 = make_client(srv)
            formatted.update({x: format_lines(x) for x in range(n)})
            gone = None
            for k2 in md.objs:  # untouched meanwhile and good before: good again
                if k2 in snap and snap[k2] == (gen[k2], False):
                    md.bad[k2].discard(d)
        elif op == "restore":
            if not md.removed:
                continue
            d = rnd.choice(sorted(md.removed))
            note(f"{i} restore drive {d} (empty)")
            os.mkdir(drives[d])
            md.removed.discard(d)
            md.returning.add(d)
        elif op in ("flip", "truncate"):
            if key not in md.objs:
                continue
            d = rnd.randrange(n)
            if d in md.down() or len(md.bad[key] | {d}) > m:
                continue
            files = files_of_key(d, key)
            if op == "truncate":
                files = [f for f in files if os.path.basename(f).startswith("part.")]
            if not files:
                continue
            f = rnd.choice(files)
            note(f"{i} {op} {os.path.relpath(f, root)}")
            if op == "flip":
                if not flip(f, rnd.randrange(max(1, os.path.getsize(f)))):
                    continue
            else:
                os.truncate(f, os.path.getsize(f) // 2)
            md.bad[key].add(d)
        # now and then, with every drive back: heal, after which nothing is bad
        if i % 50 == 49 and not md.removed:
            settle_returning()
            note(f"{i} admin heal")
            admin("heal", b)
            for k2 in md.bad:  # what heal wrote to a drive away lies in a folder thrown away
                md.bad[k2] = {gone[0]} if gone else set()

    # the end: every drive back, healed; then every key reads back with M drives gone
    for d in sorted(md.removed):
        os.mkdir(drives[d])
        md.returning.add(d)
    md.removed.clear()
    settle_returning()
    if gone:
        d, _ = gone
        put_back(srv, drives[d])
        srv.start()
        s3 = make_client(srv)
    settle_returning()
    admin("heal", b)
    for k2 in md.bad:
        md.bad[k2] = set()
    note("final heal; now reading everything with M drives removed")
    for k2, data in sorted(md.objs.items()):
        check_read(k2, data)
    gone = rnd.sample(range(n), m)
    srv.stop()
    for d in gone:
        remove_tree(drives[d])
    srv.start()
    s3 = make_client(srv)
    md.removed = set(gone)
    for k2 in md.bad:
        md.bad[k2] = set(gone)
    for k2, data in sorted(md.objs.items()):
        check_read(k2, data)
    for k2 in KEYS:
        if k2 not in md.objs:
            check_read(k2, None)
    assert md.objs, "the sequence left no object to check"
    # the sequence exercised what it is for (the default seeds do; others may not)
    if "CAIRN_RANDOM_SEED" not in os.environ:
        assert all(faults[f] for f in faults if away or f not in ("away", "back")), faults


def siphash24(key16, data):
    """SipHash-2-4 (64-bit) of data under a 16-byte key: the placement hash of src/object/place.c."""
    mask = (1 << 64) - 1

    def rotl(x, b):
        return ((x << b) | (x >> (64 - b))) & mask

    k0 = int.from_bytes(key16[:8], "little")
    k1 = int.from_bytes(key16[8:], "little")
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d, k0 ^ 0x6c7967656e657261,
         k1 ^ 0x7465646279746573]

    def rounds(n):
        for _ in range(n):
            v[0] = (v[0] + v[1]) & mask
            v[1] = rotl(v[1], 13) ^ v[0]
            v[0] = rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & mask
            v[3] = rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & mask
            v[3] = rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & mask
            v[1] = rotl(v[1], 17) ^ v[2]
            v[2] = rotl(v[2], 32)

    tail = len(data) % 8
    for i in range(0, len(data) - tail, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    m = int.from_bytes(data[len(data) - tail:], "little") | ((len(data) & 0xff) << 56)
    v[3] ^= m
    rounds(2)
    v[0] ^= m
    v[2] ^= 0xff
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def read_format(drive):
    """The drive's format record (docs/FORMAT.md §1.1) as a dict of strings."""
    with open(os.path.join(drive, ".cairn.sys", "format")) as f:
        return dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)


XOPS = [("put", 26), ("get", 18), ("range", 6), ("head", 4), ("delete", 8), ("delete_many", 4),
        ("copy", 6), ("list", 7), ("remove", 5), ("restore", 6), ("flip", 5), ("truncate", 3),
        ("multipart", 2)]


def test_random_operations_across_sets_and_pools(need_multi_drive, drive_server, root):  # noqa: F811
    """The random sequence over a deployment of three sets in two pools (8 drives as 2 sets
    of 4, and 4 drives; EC:2 each): keys land in the set the placement hash names in the
    pool they live in (checked on the drives, with the hash recomputed here from the
    deployment id), an existing key stays in its pool, copies and multi-object deletes
    cross sets and pools, listings merge the sets, and faults hit each set up to its
    parity (M) at once. Besides the rules of test_random_operations_with_faults: a key's
    records are only ever in one set; a request for a key whose sets keep their quorum
    never fails for a fault elsewhere; at the end, with M drives of every set removed at
    once, everything reads back."""
    m = 2
    seed = int(os.environ.get("CAIRN_RANDOM_SEED") or 3012)
    nops = int(os.environ.get("CAIRN_RANDOM_OPS") or 300)
    rnd = random.Random(seed)
    srv = drive_server([os.path.join(root, "p1-{1...8}"), os.path.join(root, "p2-{1...4}")],
                       env={"CAIRN_ERASURE_SET_DRIVE_COUNT": "4", "CAIRN_HEAL_MAX_SLEEP": "0"})
    assert "pools: 2, sets: 2 x 4 drives + 1 x 4 drives, parity EC:2" in open(srv.log_path).read()
    s3 = make_client(srv)
    b = unique_bucket("rndx")
    s3.create_bucket(Bucket=b)
    drives = drive_dirs(root, 8, "p1-") + drive_dirs(root, 4, "p2-")
    n = len(drives)
    # every drive's slot from its format record: sets numbered across pools
    fmts = [read_format(d) for d in drives]
    pool_sets = [int(fmts[0]["sets"]), int(fmts[-1]["sets"])]
    set_of = [sum(pool_sets[:int(f["pool"])]) + int(f["set"]) for f in fmts]
    members = {s: [d for d in range(n) if set_of[d] == s] for s in range(sum(pool_sets))}
    assert sorted(len(x) for x in members.values()) == [4, 4, 4], members
    dep_key = bytes.fromhex(fmts[0]["deployment"])
    wq, k = 3, 2  # K == M: write quorum K + 1

    def hashed(key, pool):
        return sum(pool_sets[:pool]) + siphash24(dep_key, key.encode()) % pool_sets[pool]

    keys = [f"{p}/k{i}" for p in ("a", "b", "c/d") for i in range(8)]
    objs, where, bad = {}, {}, {}   # key -> bytes; -> its set; -> drives with a bad copy
    used = set()                    # sets written to
    removed, returning = set(), set()
    faults = {f: 0 for f in ("remove", "restore", "flip", "truncate", "copy", "delete_many",
                             "multipart")}
    tr = Trace(seed, srv, drives)
    log, fail, admin = tr.log, tr.fail, tr.admin

    def note(s):
        log.append(s)
        word = s.split()[1]
        if word in faults:
            faults[word] += 1

    def down():
        return removed | returning

    def up(s, surely=True):
        """Drives of set s online (surely: not counting those made again, not yet back)."""
        return len([d for d in members[s] if d not in (down() if surely else removed)])

    def readable(key):
        return len((bad[key] | removed) & set(members[where[key]])) <= m

    def candidates(key):
        """The sets a write of key may go to: its own, or for a new key the one the hash
        names in each pool."""
        return [where[key]] if key in objs else [hashed(key, 0), hashed(key, 1)]

    def write_may_fail(key):
        # the pools before the key's own must tell that they do not hold it (read quorum)
        return any(up(s) < wq for s in candidates(key)) or any(
            up(hashed(key, p)) < k for p in range(2))

    def holders(key):
        *parents, leaf = key.split("/")
        return {d for d in range(n)
                if os.path.isfile(os.path.join(drives[d], b, *parents, "%m." + leaf))}

    def acknowledged(key, data):
        """A write of key succeeded: where its records are, then the model."""
        h = holders(key)
        sets = {set_of[d] for d in h}
        if len(sets) != 1:
            fail(f"{key}: records on drives {sorted(h)} of sets {sorted(sets)}: want one set")
        (s,) = sets
        if s not in candidates(key):
            fail(f"{key}: written to set {s}, want one of {candidates(key)} (placement hash, "
                 f"existing key in its pool)")
        if up(s, surely=False) < wq:
            fail(f"{key}: written to set {s} with {up(s, False)} drives online, write quorum {wq}")
        objs[key], where[key] = data, s
        used.add(s)
        bad[key] = set(down()) & set(members[s])

    def forget(key):
        objs.pop(key, None)
        where.pop(key, None)
        bad.pop(key, None)

    def settle_returning():
        tr.settle(returning)

    def check_read(key, rng=None):
        data = objs.get(key)
        try:
            if rng == "head":
                got_len = s3.head_object(Bucket=b, Key=key)["ContentLength"]
                if data is None or got_len != len(data):
                    fail(f"HEAD {key}: length {got_len}, model {None if data is None else len(data)}")
                return
            if rng:
                a, z = rng
                got = s3.get_object(Bucket=b, Key=key, Range=f"bytes={a}-{z}")["Body"].read()
                want = data[a:z + 1]
            else:
                got = s3.get_object(Bucket=b, Key=key)["Body"].read()
                want = data
            if data is None:
                fail(f"GET {key}: {len(got)} bytes, the model has no such key")
            if got != want:
                fail(f"GET {key} {rng or ''}: bytes differ ({len(got)} vs {len(want)})")
        except ClientError as e:
            st = status_of(e)
            if st == 404 and data is None:
                return
            if st == 503 and data is not None and not readable(key):
                return
            fail(f"GET/HEAD {key} {rng or ''}: {err_code(e)}; in model {data is not None}, set "
                 f"{where.get(key)}, bad {sorted(bad.get(key, ()))}, removed {sorted(removed)}")

    def write_failed(what, key, e):
        if status_of(e) != 503 or not write_may_fail(key):
            fail(f"{what}: {err_code(e)}; sets {candidates(key)} up "
                 f"{[up(s) for s in candidates(key)]}, removed {sorted(removed)}")

    for i in range(nops):
        op = pick(rnd, XOPS)
        key = rnd.choice(keys)
        if op == "put":
            data = rnd.randbytes(pick(rnd, SIZES[:8]))
            note(f"{i} put {key} {len(data)} (removed {sorted(removed)}, returning {sorted(returning)})")
            try:
                s3.put_object(Bucket=b, Key=key, Body=data)
            except ClientError as e:
                write_failed(f"PUT {key}", key, e)
                continue
            acknowledged(key, data)
        elif op == "copy":
            src = rnd.choice(keys)
            note(f"{i} copy {src} -> {key} (removed {sorted(removed)})")
            try:
                # onto itself only with new metadata (S3 refuses a copy that changes nothing)
                kw = {"MetadataDirective": "REPLACE", "Metadata": {"n": str(i)}} if src == key else {}
                s3.copy_object(Bucket=b, Key=key, CopySource={"Bucket": b, "Key": src}, **kw)
            except ClientError as e:
                st = status_of(e)
                if st == 404 and src not in objs:
                    continue
                if st == 503 and src in objs and not readable(src):
                    continue
                write_failed(f"COPY {src} -> {key}", key, e)
                continue
            if src not in objs:
                fail(f"COPY {src} -> {key} succeeded, the model has no {src}")
            acknowledged(key, objs[src])
        elif op == "multipart":
            parts = [rnd.randbytes(5 * MiB), rnd.randbytes(rnd.choice([1, 1000, INLINE + 1]))]
            note(f"{i} multipart {key} (removed {sorted(removed)})")
            try:
                multipart_put(s3, b, key, parts)
            except ClientError as e:
                write_failed(f"multipart {key}", key, e)
                continue
            acknowledged(key, b"".join(parts))
        elif op == "delete":
            note(f"{i} delete {key} (removed {sorted(removed)})")
            try:
                s3.delete_object(Bucket=b, Key=key)
            except ClientError as e:
                write_failed(f"DELETE {key}", key, e)
                continue
            if key in objs and up(where[key], False) < wq:
                fail(f"DELETE {key} succeeded with set {where[key]} short of write quorum")
            forget(key)
        elif op == "delete_many":
            batch = sorted(set(rnd.sample(keys, rnd.randint(2, 5))))
            note(f"{i} delete_many {batch} (removed {sorted(removed)})")
            try:
                r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": x} for x in batch]})
            except ClientError as e:
                fail(f"DeleteObjects {batch}: {err_code(e)}")
            deleted = {x["Key"] for x in r.get("Deleted", [])}
            errs = {x["Key"]: x.get("Code") for x in r.get("Errors", [])}
            if deleted | set(errs) != set(batch) or deleted & set(errs):
                fail(f"DeleteObjects {batch}: deleted {sorted(deleted)}, errors {errs}")
            for x, code in errs.items():
                if code not in ("InsufficientWriteQuorum", "SlowDown", "ServiceUnavailable") \
                        or not write_may_fail(x):
                    fail(f"DeleteObjects: {x}: {code}; sets {candidates(x)} up "
                         f"{[up(s) for s in candidates(x)]}")
            for x in deleted:
                if x in objs and up(where[x], False) < wq:
                    fail(f"DeleteObjects: {x} deleted with set {where[x]} short of write quorum")
                forget(x)
        elif op in ("get", "head"):
            note(f"{i} {op} {key}")
            check_read(key, "head" if op == "head" else None)
        elif op == "range":
            data = objs.get(key)
            if not data:
                continue
            a = rnd.randrange(len(data))
            z = min(len(data) - 1, a + rnd.choice([0, 1, 100, 70000, MiB]))
            note(f"{i} range {key} {a}-{z}")
            check_read(key, (a, z))
        elif op == "list":
            prefix = rnd.choice(["", "a/", "c/", "c/d/k1"])
            delim = rnd.choice([None, "/"])
            note(f"{i} list {prefix!r} delimiter {delim!r}")
            got, prefixes = {}, set()
            try:
                kw = {"Delimiter": delim} if delim else {}
                for page in s3.get_paginator("list_objects_v2").paginate(
                        Bucket=b, Prefix=prefix, PaginationConfig={"PageSize": 5}, **kw):
                    for o in page.get("Contents", []):
                        if o["Key"] in got:
                            fail(f"LIST {prefix!r}: {o['Key']} listed twice")
                        got[o["Key"]] = o["Size"]
                    prefixes |= {p["Prefix"] for p in page.get("CommonPrefixes", [])}
            except ClientError as e:
                fail(f"LIST {prefix!r}: {err_code(e)}")

            def shown(x):
                rest = x[len(prefix):]
                return not delim or "/" not in rest

            extra = sorted(set(got) - {x for x in objs if shown(x)})
            if extra:
                fail(f"LIST {prefix!r}: shows keys the model does not hold: {extra}")
            for x, data in objs.items():
                if not x.startswith(prefix) or not readable(x):
                    continue
                if shown(x):
                    if got.get(x) != len(data):
                        fail(f"LIST {prefix!r}: {x} size {got.get(x)}, want {len(data)}")
                elif prefix + x[len(prefix):].split("/")[0] + "/" not in prefixes:
                    fail(f"LIST {prefix!r}: no common prefix for {x} in {sorted(prefixes)}")
        elif op == "remove":
            # up to M drives of each set at once, only where every key keeps K good copies
            live = [d for d in range(n) if d not in down()
                    and len(set(members[set_of[d]]) & down()) < m
                    and all(len(bad[x] | {d}) <= m for x in objs if where[x] == set_of[d])]
            if not live:
                continue
            d = rnd.choice(live)
            note(f"{i} remove drive {d} (set {set_of[d]})")
            remove_tree(drives[d])
            admin("info")
            removed.add(d)
            for x in objs:
                if where[x] == set_of[d]:
                    bad[x].add(d)
        elif op == "restore":
            if not removed:
                continue
            d = rnd.choice(sorted(removed))
            note(f"{i} restore drive {d} (empty)")
            os.mkdir(drives[d])
            removed.discard(d)
            returning.add(d)
        elif op in ("flip", "truncate"):
            if key not in objs:
                continue
            d = rnd.choice(members[where[key]])
            if d in down() or len(bad[key] | {d}) > m:
                continue
            *parents, leaf = key.split("/")
            base = os.path.join(drives[d], b, *parents)
            files = [] if op == "truncate" else [os.path.join(base, "%m." + leaf)]
            for dp, _, fs in os.walk(os.path.join(base, leaf)):
                files += [os.path.join(dp, f) for f in fs if f.startswith("part.")]
            files = [f for f in files if os.path.isfile(f) and os.path.getsize(f) > 0]
            if not files:
                continue
            f = rnd.choice(files)
            note(f"{i} {op} {os.path.relpath(f, root)}")
            if op == "flip":
                flip(f, rnd.randrange(os.path.getsize(f)))
            else:
                os.truncate(f, os.path.getsize(f) // 2)
            bad[key].add(d)
        if i % 50 == 49 and not removed:
            settle_returning()
            note(f"{i} admin heal")
            admin("heal", b)
            for x in bad:
                bad[x] = set()

    for d in sorted(removed):
        os.mkdir(drives[d])
        returning.add(d)
    removed.clear()
    settle_returning()
    admin("heal", b)
    for x in bad:
        bad[x] = set()
    note("final heal; reading everything, then with M drives of every set removed")
    for x in sorted(objs):
        check_read(x)
    srv.stop()
    for s, ds in members.items():
        for d in rnd.sample(ds, m):
            remove_tree(drives[d])
            removed.add(d)
    srv.start()
    s3 = make_client(srv)
    for x in keys:
        check_read(x)
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", [])]
    if listed != sorted(objs):
        fail(f"final listing {listed} != {sorted(objs)}")
    # the sequence exercised what it is for (pools are drawn at random: runs differ)
    assert len(used) == 3, used
    if "CAIRN_RANDOM_SEED" not in os.environ:
        assert all(faults[f] for f in faults if f != "truncate"), faults


VOPS = [("put", 30), ("delete", 10), ("delete_version", 8), ("get", 15), ("get_version", 15),
        ("versions", 6), ("remove", 4), ("restore", 5), ("flip", 7)]


def test_random_versioned_operations_with_faults(need_multi_drive, drive_server, root):  # noqa: F811
    """The same in a versioned bucket: every version (data or delete marker) is a record of
    its own (docs/FORMAT.md §5); GETs of the current version and of each version by id,
    DELETEs that add markers and that remove versions by id, and version listings are
    checked against the model while drives are removed, come back and rot (records only:
    which version a shard file belongs to is not visible from outside). A quarter in, one
    drive goes away with its data across restarts and comes back half-way, holding the
    versions as they were: an old current record of keys written meanwhile, records of
    versions and markers deleted meanwhile — which must never be listed or read again
    (GET by their id: 404), before or after heal."""
    n, m = 6, 2
    seed = int(os.environ.get("CAIRN_RANDOM_SEED") or 2006)
    nops = int(os.environ.get("CAIRN_RANDOM_OPS") or 260)
    rnd = random.Random(seed)
    srv, s3, drives, b = start_set(drive_server, root, n, m, "rndv")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    keys = [f"v/k{i}" for i in range(6)]
    wq = n - m  # K != M here
    vers = {k: [] for k in keys}  # key -> [(vid, bytes or None: delete marker)], oldest first
    bad = {}                      # vid -> drives whose copy may be missing or damaged
    removed, returning = set(), set()
    tr = Trace(seed, srv, drives)
    log, formatted, fail, admin = tr.log, tr.formatted, tr.fail, tr.admin
    gen = {k: 0 for k in keys}  # changes of each key (puts, deletes, deletes of versions)
    gone = None                 # (drive, {vid: (key's gen, bad then)}) while a drive is away
    dropped = {}                # vid -> key of every version deleted by id
    moves = {"away": 0, "back": 0}

    def settle_returning():
        tr.settle(returning)

    def down():
        return removed | returning

    def expect_error(call, status, what):
        try:
            call()
        except ClientError as e:
            if err_code(e)[1] != status:
                fail(f"{what}: {err_code(e)}, want {status}")
            return
        fail(f"{what}: succeeded, want {status}")

    def check_current(key):
        v = vers[key]
        if v and v[-1][1] is not None:
            got = s3.get_object(Bucket=b, Key=key)
            if got["Body"].read() != v[-1][1] or got.get("VersionId") != v[-1][0]:
                fail(f"GET {key}: bytes or version {got.get('VersionId')} differ from {v[-1][0]}")
        else:
            expect_error(lambda: s3.get_object(Bucket=b, Key=key), 404, f"GET {key} (no current)")

    def check_version(key, vid, data):
        if data is None:  # a delete marker: GET by its id is 405 (S3)
            expect_error(lambda: s3.get_object(Bucket=b, Key=key, VersionId=vid), 405,
                         f"GET {key}?versionId={vid} (delete marker)")
            return
        got = s3.get_object(Bucket=b, Key=key, VersionId=vid)["Body"].read()
        if got != data:
            fail(f"GET {key}?versionId={vid}: bytes differ ({len(got)} vs {len(data)})")

    def check_listing():
        got = {}
        for page in s3.get_paginator("list_object_versions").paginate(
                Bucket=b, Prefix="v/", PaginationConfig={"PageSize": 5}):
            for o in page.get("Versions", []):
                got[o["VersionId"]] = (o["Key"], o["Size"], o["IsLatest"])
            for o in page.get("DeleteMarkers", []):
                got[o["VersionId"]] = (o["Key"], None, o["IsLatest"])
        want = {}
        for k2, v in vers.items():
            for i2, (vid, data) in enumerate(v):
                want[vid] = (k2, None if data is None else len(data), i2 == len(v) - 1)
        if got != want:
            fail(f"ListObjectVersions: extra {sorted(set(got) - set(want))}, missing "
                 f"{sorted(set(want) - set(got))}, differing "
                 f"{[(x, got[x], want[x]) for x in set(got) & set(want) if got[x] != want[x]]}")

    def check_dropped():
        for vid, k2 in sorted(dropped.items()):
            expect_error(lambda: s3.get_object(Bucket=b, Key=k2, VersionId=vid), 404,
                         f"GET {k2}?versionId={vid} (deleted)")

    def restart():
        nonlocal s3
        srv.start()
        s3 = make_client(srv)
        formatted.update({x: formatted_back(srv, drives[x]) for x in range(n)})  # a new log

    for i in range(nops):
        op = pick(rnd, VOPS)
        if not gone and not moves["away"] and i >= nops // 4:
            op = "away"
        elif gone and i >= nops // 2 and not removed:
            op = "back"
        key = rnd.choice(keys)
        online = n - len(removed)
        surely = n - len(down())
        if op == "put":
            data = rnd.randbytes(pick(rnd, SIZES[:7]))
            log.append(f"{i} put {key} {len(data)} (removed {sorted(removed)}, returning {sorted(returning)})")
            try:
                vid = s3.put_object(Bucket=b, Key=key, Body=data)["VersionId"]
                if online < wq:
                    fail(f"PUT {key} succeeded with {online} drives online")
                vers[key].append((vid, data))
                bad[vid] = set(down()) | ({gone[0]} if gone else set())
                gen[key] += 1
            except ClientError as e:
                if err_code(e)[1] != 503 or surely >= wq:
                    fail(f"PUT {key}: {err_code(e)} with {surely} drives surely online")
        elif op == "delete":
            log.append(f"{i} delete {key} (removed {sorted(removed)})")
            try:
                r = s3.delete_object(Bucket=b, Key=key)
                if online < wq:
                    fail(f"DELETE {key} succeeded with {online} drives online")
                if not r.get("DeleteMarker") or not r.get("VersionId"):
                    fail(f"DELETE {key} in a versioned bucket: no delete marker in {r}")
                vers[key].append((r["VersionId"], None))
                bad[r["VersionId"]] = set(down()) | ({gone[0]} if gone else set())
                gen[key] += 1
            except ClientError as e:
                if err_code(e)[1] != 503 or surely >= wq:
                    fail(f"DELETE {key}: {err_code(e)} with {surely} drives surely online")
        elif op == "delete_version":
            if not vers[key]:
                continue
            vid, _ = rnd.choice(vers[key])
            log.append(f"{i} delete {key}?versionId={vid} (removed {sorted(removed)})")
            try:
                s3.delete_object(Bucket=b, Key=key, VersionId=vid)
                if online < wq:
                    fail(f"DELETE {key}?versionId={vid} succeeded with {online} drives online")
                vers[key] = [x for x in vers[key] if x[0] != vid]
                dropped[vid] = key
                gen[key] += 1
            except ClientError as e:
                if err_code(e)[1] != 503 or surely >= wq:
                    fail(f"DELETE {key}?versionId={vid}: {err_code(e)} with {surely} drives surely online")
        elif op == "get":
            log.append(f"{i} get {key}")
            check_current(key)
        elif op == "get_version":
            if not vers[key]:
                continue
            vid, data = rnd.choice(vers[key])
            log.append(f"{i} get {key}?versionId={vid}")
            check_version(key, vid, data)
        elif op == "versions":
            log.append(f"{i} list versions")
            check_listing()
        elif op == "remove":
            live = [d for d in range(n) if d not in down()
                    and all(len(bd | {d}) <= m for bd in bad.values())]
            if not live or len(down()) >= m:
                continue
            d = rnd.choice(live)
            log.append(f"{i} remove drive {d}")
            remove_tree(drives[d])
            admin("info")
            removed.add(d)
            for bd in bad.values():
                bd.add(d)
        elif op == "restore":
            if not removed:
                continue
            d = rnd.choice(sorted(removed))
            log.append(f"{i} restore drive {d} (empty)")
            os.mkdir(drives[d])
            removed.discard(d)
            returning.add(d)
        elif op == "away":
            # its folder moved off across a restart (an empty one is formatted in its place
            # and thrown away at the return), then put back as it was
            d = rnd.randrange(n)
            if removed or any(len(bd | {d}) > m for bd in bad.values()):
                continue
            settle_returning()
            log.append(f"{i} drive {d} away (restart)")
            moves["away"] += 1
            srv.stop()
            os.rename(drives[d], drives[d] + ".away")
            restart()
            gone = (d, {vid: (gen[k2], d in bad[vid]) for k2, v in vers.items() for vid, _ in v})
            for bd in bad.values():
                bd.add(d)
        elif op == "back":
            d, snap = gone
            settle_returning()
            log.append(f"{i} drive {d} back with its old data (restart)")
            moves["back"] += 1
            put_back(srv, drives[d])
            restart()
            gone = None
            for k2, v in vers.items():  # versions of keys untouched meanwhile, good before
                for vid, _ in v:
                    if snap.get(vid) == (gen[k2], False):
                        bad[vid].discard(d)
            check_listing()
            check_dropped()
        elif op == "flip":
            if not vers[key]:
                continue
            d = rnd.randrange(n)
            folder = os.path.join(drives[d], b, "v", key.split("/")[1])
            cur = os.path.join(drives[d], b, "v", "%m." + key.split("/")[1])
            choices = [(cur, vers[key][-1][0])] if os.path.isfile(cur) else []
            if os.path.isdir(folder):
                choices += [(os.path.join(folder, f), f[3:]) for f in os.listdir(folder)
                            if f.startswith("%v.")]
            choices = [(f, vid) for f, vid in choices if vid in bad and d not in down()
                       and not (gone and d == gone[0]) and len(bad[vid] | {d}) <= m]
            if not choices:
                continue
            f, vid = rnd.choice(choices)
            log.append(f"{i} flip {os.path.relpath(f, root)} (version {vid})")
            if flip(f, rnd.randrange(max(1, os.path.getsize(f)))):
                bad[vid].add(d)
        if i % 50 == 49 and not removed:
            settle_returning()
            log.append(f"{i} admin heal")
            admin("heal", b)
            for bd in bad.values():  # what heal wrote to a drive away is thrown away
                bd.clear()
                bd |= {gone[0]} if gone else set()

    for d in sorted(removed):
        os.mkdir(drives[d])
        returning.add(d)
    removed.clear()
    settle_returning()
    if gone:
        d, _ = gone
        put_back(srv, drives[d])
        restart()
        settle_returning()
    admin("heal", b)
    log.append("final heal; reading every version")
    check_listing()
    for k2 in keys:
        check_current(k2)
        for vid, data in vers[k2]:
            check_version(k2, vid, data)
    check_dropped()
    assert any(vers.values()), "the sequence left no version to check"
    if "CAIRN_RANDOM_SEED" not in os.environ:
        assert moves["away"] and moves["back"] and dropped, (moves, len(dropped))


def whole(key, data):
    """The digest of a body of the concurrent tests (key, a newline, bytes, the SHA-256 of
    what precedes it) when it is whole and of key, else None."""
    if len(data) < 32 or not data.startswith(f"{key}\n".encode()):
        return None
    return data[-32:] if hashlib.sha256(data[:-32]).digest() == data[-32:] else None


def start_clients(writer, reader, errors):
    """Three writer(i) and three reader(i) threads, started; an exception in one (a dropped
    connection, a timeout) is a failure too, added to errors."""
    def guarded(fn, i):
        try:
            fn(i)
        except Exception as e:
            errors.append(f"{fn.__name__} {i}: {e!r}")

    threads = [threading.Thread(target=guarded, args=(writer, i)) for i in range(3)]
    threads += [threading.Thread(target=guarded, args=(reader, i)) for i in range(3)]
    for t in threads:
        t.start()
    return threads


def test_concurrent_overwrites_and_reads_while_drives_fail(need_multi_drive, drive_server, root):  # noqa: F811
    """Writers overwrite and now and then delete a few keys and readers read them, all at
    once, while two drives of a 6-drive EC:2 set are removed (M) and come back empty, to be
    formatted back and healed while the requests go on: every PUT and DELETE is
    acknowledged (write quorum stays), every GET returns one whole acknowledged or in-flight
    body of its key (each body names its key and carries its own SHA-256: never a mix of
    two writes, never another key's) or 404, and after another heal, with two other drives
    removed, each key reads back as one of the writes acknowledged for it, or is absent
    only when a delete of it was acknowledged."""
    n, m = 6, 2
    srv, _, drives, b = start_set(drive_server, root, n, m, "conc")
    keys = [f"c/k{i}" for i in range(6)]
    sizes = [1000, 100 * KiB, 200 * KiB, MiB + 17]
    acked = {k: set() for k in keys}  # key -> digests of acknowledged bodies
    deleted = set()                   # keys with an acknowledged DELETE
    lock = threading.Lock()
    errors = []
    stop = threading.Event()
    deadline = time.time() + 90  # a bound: the requests run until the heal is done (stop)

    def body_for(key, rnd):
        payload = rnd.randbytes(rnd.choice(sizes))
        head = f"{key}\n".encode()
        return head + payload + hashlib.sha256(head + payload).digest()

    def writer(wid):
        s3 = make_client(srv)
        rnd = random.Random(wid)
        for _ in range(20000):
            if stop.is_set() or time.time() > deadline:
                return
            key = rnd.choice(keys)
            if rnd.random() < 0.15:
                try:
                    s3.delete_object(Bucket=b, Key=key)
                except ClientError as e:
                    errors.append(f"DELETE {key}: {err_code(e)}")
                    return
                with lock:
                    deleted.add(key)
                continue
            data = body_for(key, rnd)
            try:
                s3.put_object(Bucket=b, Key=key, Body=data)
            except ClientError as e:
                errors.append(f"PUT {key}: {err_code(e)}")
                return
            with lock:
                acked[key].add(data[-32:])

    def reader(rid):
        s3 = make_client(srv)
        rnd = random.Random(100 + rid)
        for _ in range(100000):
            if stop.is_set() or time.time() > deadline:
                return
            key = rnd.choice(keys)
            try:
                data = s3.get_object(Bucket=b, Key=key)["Body"].read()
            except ClientError as e:
                if err_code(e)[1] != 404:
                    errors.append(f"GET {key}: {err_code(e)}")
                    return
                continue
            if whole(key, data) is None:
                errors.append(f"GET {key}: a torn or foreign body of {len(data)} bytes")
                return

    threads = start_clients(writer, reader, errors)
    try:
        time.sleep(1.5)
        for d in (1, 4):  # M drives, one after the other, while requests run
            remove_tree(drives[d])  # the server writes into it meanwhile
            time.sleep(1.5)
        for d in (1, 4):
            os.mkdir(drives[d])
        # formatted back, then healed while the writers and readers go on
        formatted = wait_until(lambda: all(formatted_back(srv, drives[d]) for d in (1, 4)), 30)
        p = run_admin(srv, "heal", b)
        overlapped = all(t.is_alive() for t in threads)  # the requests went on meanwhile
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[:5]
    assert all(not t.is_alive() for t in threads)
    assert formatted, "drives made again were not formatted back within 30 s"
    assert p.returncode == 0, p.stdout + p.stderr
    assert overlapped, "a writer or reader ended before the heal did"
    assert sum(len(v) for v in acked.values()) >= 20, {k: len(v) for k, v in acked.items()}
    s3 = make_client(srv)

    def current(key):
        """The digest of key's body, None when it is absent (404)."""
        try:
            return whole(key, s3.get_object(Bucket=b, Key=key)["Body"].read()) or b"torn"
        except ClientError as e:
            assert err_code(e)[1] == 404, (key, err_code(e))
            return None

    final = {}
    for key in keys:
        final[key] = current(key)
        assert final[key] in acked[key] or (final[key] is None and (
            key in deleted or not acked[key])), key
    p = run_admin(srv, "heal", b)
    assert p.returncode == 0, p.stdout + p.stderr
    srv.stop()
    for d in (0, 3):  # two drives that stayed: only the healed ones and two others remain
        remove_tree(drives[d])
    srv.start()
    s3 = make_client(srv)
    assert deleted and any(final.values()), (deleted, final)
    for key, digest in final.items():
        assert current(key) == digest, key


def test_concurrent_versions_read_by_id_while_written(need_multi_drive, drive_server, root):  # noqa: F811
    """In a versioned bucket, writers add versions of a few keys (and now and then a delete
    marker) while readers read acknowledged versions by id and the current version, on a
    6-drive EC:2 set with one drive removed half-way: a commit turns the current record
    into a noncurrent one drive by drive, and a version read in between must still find
    the version (never 404, never 503), with its bytes; GETs of the current version return
    a whole body of the key or 404 (a delete marker). At the end every acknowledged version
    reads back and the listing holds exactly them."""
    n, m = 6, 2
    srv, s3, drives, b = start_set(drive_server, root, n, m, "concv")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    keys = [f"v/k{i}" for i in range(3)]
    lock = threading.Lock()
    acked = []                        # (key, vid, digest or None: a delete marker)
    errors = []
    deadline = time.time() + 10

    def writer(wid):
        c = make_client(srv)
        rnd = random.Random(wid)
        for _ in range(400):
            if time.time() > deadline:
                return
            key = rnd.choice(keys)
            try:
                if rnd.random() < 0.1:
                    vid = c.delete_object(Bucket=b, Key=key)["VersionId"]
                    digest = None
                else:
                    head = f"{key}\n".encode()
                    payload = rnd.randbytes(rnd.choice([100, 5000, 150 * KiB, 600 * KiB]))
                    digest = hashlib.sha256(head + payload).digest()
                    vid = c.put_object(Bucket=b, Key=key, Body=head + payload + digest)["VersionId"]
            except ClientError as e:
                errors.append(f"write {key}: {err_code(e)}")
                return
            with lock:
                acked.append((key, vid, digest))

    def reader(rid):
        c = make_client(srv)
        rnd = random.Random(50 + rid)
        for _ in range(3000):
            if time.time() > deadline:
                return
            with lock:
                pick_one = rnd.choice(acked) if acked and rnd.random() < 0.7 else None
            try:
                if pick_one:
                    key, vid, digest = pick_one
                    if digest is None:
                        try:
                            c.get_object(Bucket=b, Key=key, VersionId=vid)
                            errors.append(f"GET {key}?versionId={vid}: a delete marker read")
                            return
                        except ClientError as e:
                            if err_code(e)[1] != 405:
                                errors.append(f"GET {key}?versionId={vid} (marker): {err_code(e)}")
                                return
                        continue
                    data = c.get_object(Bucket=b, Key=key, VersionId=vid)["Body"].read()
                    if whole(key, data) != digest:
                        errors.append(f"GET {key}?versionId={vid}: other bytes ({len(data)})")
                        return
                else:
                    key = rnd.choice(keys)
                    try:
                        data = c.get_object(Bucket=b, Key=key)["Body"].read()
                    except ClientError as e:
                        if err_code(e)[1] != 404:
                            raise
                        continue
                    if whole(key, data) is None:
                        errors.append(f"GET {key}: a torn or foreign body of {len(data)} bytes")
                        return
            except ClientError as e:
                errors.append(f"GET {pick_one or key}: {err_code(e)}")
                return

    threads = start_clients(writer, reader, errors)
    try:
        time.sleep(4)
        remove_tree(drives[2])
    finally:
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[:5]
    assert len(acked) >= 20, len(acked)
    got = {}
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=b):
        got.update({o["VersionId"]: o["Key"] for o in page.get("Versions", [])})
        got.update({o["VersionId"]: o["Key"] for o in page.get("DeleteMarkers", [])})
    assert got == {vid: key for key, vid, _ in acked}
    for key, vid, digest in acked:
        if digest is not None:
            assert whole(key, s3.get_object(Bucket=b, Key=key, VersionId=vid)["Body"].read()) == digest
