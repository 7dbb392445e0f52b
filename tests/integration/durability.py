#!/usr/bin/python3
"""kill -9 durability test for cairn (DESIGN.md §4, issue 2 "Storage").

16 writer threads PUT random-content objects (1 KiB .. 2 MiB, keys partly overwritten) for
~8 s while the test records, per key, the MD5 of the last ACKNOWLEDGED body and of every body
still in flight. In the middle the server gets SIGKILL; it is restarted on the same folder and
then every acknowledged object must read back with its MD5 (or with the MD5 of a later PUT to
the same key that was in flight), and every listed key must hold exactly one body the test
sent (no partial object) with the size and ETag the listing shows, and DIR/.cairn.sys/tmp
must be empty. Three rounds on the same data folder with different kill points. Everything
is bounded in count and time.

With --drives N (issue 3) the server runs on N drive folders (one erasure set, MinIO's default
parity) and the tmp check covers every drive.

With --rounds R (a stress run, default 3) the kill points repeat for R rounds; the time budget
grows with them.

With --lose-drive (and --drives N) each round also loses a drive: half-way to the kill one
drive folder (another each round) is removed while the writers go on, and at the restart an
empty folder is in its place (formatted back into its slot and healed in the background
while the objects are verified and the next round writes). Rounds do not wait for that heal:
a key may miss the records of the drive lost this round and of the one lost the round before
when the kill cuts an overwrite of it short; the version it replaced must still read back
(the commit keeps it as the previous record until the new one is durable: EC-15 and
docs/ARCHITECTURE.md "Overwrites cut short: previous records").

Usage: /usr/bin/python3 tests/integration/durability.py [--drives N [--lose-drive]] [--rounds R]
(CAIRN_BIN selects the binary)
Exit 0 when every check held; 1 otherwise."""

import argparse
import hashlib
import os
import random
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import Server, make_client  # noqa: E402

THREADS = 16
RUN_SECONDS = 8.0
KILL_POINTS = [2.5, 4.0, 5.5]  # seconds into each round
KEYS_PER_THREAD = 40
SECONDS_PER_ROUND = 80
BUCKET = "durability"


def body_for(rng):
    # log-uniform size between 1 KiB and 2 MiB: many small objects, some large
    size = int(2 ** rng.uniform(10, 21))
    return os.urandom(size)


class Ledger:
    """What the clients know: last acknowledged MD5 per key and MD5s sent but not acknowledged."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}      # key -> md5 of the last acknowledged PUT
        self.inflight = {}   # key -> set of md5 of PUTs sent after it without an answer
        self.n_acked = 0
        self.n_failed = 0

    def start(self, key, md5):
        with self.lock:
            self.inflight.setdefault(key, set()).add(md5)

    def ack(self, key, md5):
        with self.lock:
            self.acked[key] = md5
            # a put acknowledged after earlier failed ones supersedes them
            self.inflight[key] = set()
            self.n_acked += 1

    def fail(self):
        with self.lock:
            self.n_failed += 1

    def allowed(self, key):
        s = set(self.inflight.get(key, set()))
        if key in self.acked:
            s.add(self.acked[key])
        return s


def writer(srv, ledger, tid, rnd, stop, errors):
    rng = random.Random(f"{rnd}-{tid}-{time.time()}")
    client = make_client(srv, connect_timeout=2, read_timeout=15)
    n = 0
    while not stop.is_set() and n < 10000:
        n += 1
        key = f"t{tid:02d}/k{rng.randrange(KEYS_PER_THREAD):03d}"
        data = body_for(rng)
        md5 = hashlib.md5(data).hexdigest()
        ledger.start(key, md5)
        try:
            r = client.put_object(Bucket=BUCKET, Key=key, Body=data)
        except Exception:  # noqa: BLE001 — after the kill every error is expected
            ledger.fail()
            if not srv.alive():
                return
            time.sleep(0.05)
            continue
        if r.get("ETag") != f'"{md5}"':
            errors.append(f"{key}: acknowledged ETag {r.get('ETag')} != md5 {md5}")
        ledger.ack(key, md5)


def tmp_leftovers(tmp):
    """Files anywhere below the tmp area, and folders below its first level (the local drive
    keeps a fixed fan-out of empty folders tmp/00 .. tmp/3f; those are structure, not garbage)."""
    if not os.path.isdir(tmp):
        return ["<no tmp dir>"]
    out = []
    for d, dirs, files in os.walk(tmp):
        rel = os.path.relpath(d, tmp)
        depth = 0 if rel == "." else rel.count(os.sep) + 1
        out += [os.path.join(rel, f) for f in files]
        if depth >= 1:
            out += [os.path.join(rel, x) + "/" for x in dirs]
    return sorted(out)


def verify(srv, ledger, errors):
    c = make_client(srv, read_timeout=30)
    listed = []
    token = None
    for _ in range(1000):
        kw = {"Bucket": BUCKET, "MaxKeys": 1000}
        if token:
            kw["ContinuationToken"] = token
        r = c.list_objects_v2(**kw)
        listed += r.get("Contents", [])
        if not r.get("IsTruncated"):
            break
        token = r["NextContinuationToken"]
    listed_keys = {o["Key"]: o for o in listed}
    checked = 0

    def same_as_listed(key, body, got):
        # the listing shows the version a GET returns (not one drive's partial commit)
        o = listed_keys.get(key)
        if o and (o["Size"] != len(body) or o["ETag"] != f'"{got}"'):
            errors.append(f"listed {key}: listing size {o['Size']} ETag {o['ETag']} != the body a GET "
                          f"returns ({len(body)} bytes, md5 {got})")

    # 1. every acknowledged key is there with an allowed body
    for key, md5 in sorted(ledger.acked.items()):
        if key not in listed_keys:
            errors.append(f"acknowledged {key} missing from listing")
        try:
            body = c.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except Exception as e:  # noqa: BLE001
            errors.append(f"acknowledged {key} unreadable: {e}")
            continue
        got = hashlib.md5(body).hexdigest()
        if got not in ledger.allowed(key):
            errors.append(f"acknowledged {key}: md5 {got} ({len(body)} bytes) is neither the acknowledged "
                          f"{md5} nor an in-flight body")
        same_as_listed(key, body, got)
        checked += 1
    # 2. every listed key is one we wrote, whole
    for o in listed:
        key = o["Key"]
        allowed = ledger.allowed(key)
        if not allowed:
            errors.append(f"listed {key} was never written")
            continue
        if key in ledger.acked:
            continue  # read above
        try:
            body = c.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except Exception as e:  # noqa: BLE001
            errors.append(f"listed {key} unreadable: {e}")
            continue
        got = hashlib.md5(body).hexdigest()
        if got not in allowed:
            errors.append(f"listed {key} holds a body never sent whole (md5 {got}, {len(body)} bytes): partial object")
        same_as_listed(key, body, got)
        checked += 1
    return checked, len(listed)


def main():
    ap = argparse.ArgumentParser(description="kill -9 durability test for cairn")
    ap.add_argument("--drives", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=len(KILL_POINTS))
    ap.add_argument("--lose-drive", action="store_true")
    args = ap.parse_args()
    if args.lose_drive and args.drives < 4:
        ap.error("--lose-drive needs --drives 4 or more")
    t_start = time.monotonic()
    ndrives = args.drives
    max_total = SECONDS_PER_ROUND * max(1, args.rounds)
    if ndrives > 1:
        root = tempfile.mkdtemp(prefix="cairn-dur-")
        folders = [os.path.join(root, f"d{i}") for i in range(1, ndrives + 1)]
        srv = Server(root=root, name="durability", drives=[os.path.join(root, f"d{{1...{ndrives}}}")])
        tmps = [os.path.join(f, ".cairn.sys", "tmp") for f in folders]
    else:
        srv = Server(name="durability")
        tmps = [os.path.join(srv.data_dir, ".cairn.sys", "tmp")]
    errors = []
    ledger = Ledger()
    try:
        srv.start()
        make_client(srv).create_bucket(Bucket=BUCKET)
        for rnd in range(1, max(1, args.rounds) + 1):
            kill_at = KILL_POINTS[(rnd - 1) % len(KILL_POINTS)]
            if time.monotonic() - t_start > max_total:
                errors.append("time budget exhausted")
                break
            stop = threading.Event()
            threads = [threading.Thread(target=writer, args=(srv, ledger, t, rnd, stop, errors), daemon=True)
                       for t in range(THREADS)]
            acked_before = ledger.n_acked
            for t in threads:
                t.start()
            lost = ""
            if args.lose_drive:
                time.sleep(kill_at / 2)
                gone = folders[(rnd - 1) % ndrives]
                for _ in range(100):  # the server writes into it meanwhile
                    shutil.rmtree(gone, ignore_errors=True)
                    if not os.path.exists(gone):
                        break
                lost = f"; {os.path.basename(gone)} lost at {kill_at / 2}s"
                time.sleep(kill_at / 2)
            else:
                time.sleep(kill_at)
            srv.kill9()
            killed_at_acks = ledger.n_acked - acked_before
            # keep the writers busy against a dead server for the rest of the round
            time.sleep(max(0.0, min(RUN_SECONDS - kill_at, 1.0)))
            stop.set()
            for t in threads:
                t.join(30)
            if any(t.is_alive() for t in threads):
                errors.append(f"round {rnd}: writer threads did not stop")
            garbage = [g for t in tmps for g in tmp_leftovers(t)]
            if args.lose_drive:
                os.makedirs(gone, exist_ok=True)  # back empty
            srv.start()
            left = [g for t in tmps for g in tmp_leftovers(t)]
            if args.lose_drive:
                # the drive back empty is formatted and healed at once, and heal writes
                # through the tmp area: only what the crash left must be gone
                left = sorted(set(left) & set(garbage))
            if left:
                errors.append(f"round {rnd}: tmp area not emptied at restart: {left[:10]}")
            n_err = len(errors)
            checked, listed = verify(srv, ledger, errors)
            # versions read through previous records (EC-15) since the restart
            with open(srv.log_path, "rb") as f:
                prev_reads = f.read().count(b"no version at quorum among the current records")
            print(f"round {rnd}: killed at {kill_at}s{lost} after {killed_at_acks} acknowledged PUTs "
                  f"({ledger.n_failed} failed in total); {len(garbage)} tmp leftovers before restart; "
                  f"{checked} objects verified, {listed} listed, {prev_reads} read through previous "
                  f"records; {len(errors) - n_err} problems", flush=True)
    except Exception as e:  # noqa: BLE001
        errors.append(f"test error: {type(e).__name__}: {e}")
    finally:
        tail = srv.stderr_tail(30)
        srv.cleanup()
        if ndrives > 1 and not (errors and os.environ.get("DURABILITY_KEEP")):
            shutil.rmtree(root, ignore_errors=True)
        elif ndrives > 1:
            print(f"kept the drives for a look: {root}", flush=True)
    if errors:
        print(f"DURABILITY FAILED: {len(errors)} problems", flush=True)
        for e in errors[:50]:
            print("  " + e)
        print("server log tail:\n" + tail)
        return 1
    print(f"durability: OK ({ndrives} drive(s){', one lost per round' if args.lose_drive else ''}, "
          f"{len(ledger.acked)} keys acknowledged, {ledger.n_acked} PUTs, "
          f"{time.monotonic() - t_start:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
