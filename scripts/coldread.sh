#!/usr/bin/env bash
# coldread.sh [DRIVES PARITY SIZE KEYS]: what a GET costs the server the first time its
# object is read (record cache miss: K record files read, their bytes cached in memory the
# process may never have touched) against later reads of the same objects (cache hits).
# Starts build/cairn (or CAIRN_BIN) on DRIVES fresh folders (default 4, EC:2), PUTs KEYS
# objects of SIZE (default 2000 x 64k) with s3bench, then runs three 1 s GET-only phases
# over those keys: "cold" (every object's first read, then hits), "warm", "warm2".
# Prints server CPU per GET (s3bench --server-pid) and minor page faults per phase: the
# figures of docs/PERF.md "What a first read costs".
# Run (after make): scripts/coldread.sh 4 2 4k 20000
# S3BENCH: the s3bench binary ../shared/bench builds (default its cache).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-4} M=${2:-2} SIZE=${3:-64k} KEYS=${4:-2000}
BIN=${CAIRN_BIN:-build/cairn}
S=${S3BENCH:-/tmp/s3harness/cache/bin/s3bench}
PORT=${PORT:-9303}
[ -x "$S" ] || { echo "coldread.sh: no s3bench at $S (run ../shared/bench/compare.sh once, or set S3BENCH=)" >&2; exit 2; }
D=$(mktemp -d /tmp/cairn-coldread.XXXXXX)
CAIRN_ROOT_USER=benchadmin CAIRN_ROOT_PASSWORD=benchsecret123 CAIRN_STORAGE_CLASS_STANDARD=EC:$M \
	"$BIN" server "$D/d{1...$N}" --address 127.0.0.1:$PORT --quiet 2>"$D.log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$D" "$D.log"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/minio/health/ready" >/dev/null && break; sleep 0.1; done
A=(--url "http://127.0.0.1:$PORT" --access benchadmin --secret benchsecret123 --bucket coldread)
"$S" "${A[@]}" --mkbucket >/dev/null 2>&1
"$S" "${A[@]}" --prefix p/ --size "$SIZE" --ops put --concurrency 32 --duration 60 --keys "$KEYS" >/dev/null 2>&1
for phase in cold warm warm2; do
	f0=$(awk '{print $10}' /proc/$PID/stat)
	"$S" "${A[@]}" --prefix p/ --size "$SIZE" --ops get --keys "$KEYS" --concurrency 32 --duration 1 \
		--server-pid $PID 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l); s = d.get("server", {})
    print("%-5s GET %5d ops  server %6.1f us/op  errors %d" % (sys.argv[1], d["ops"], s.get("cpu_us_per_op", 0), d["errors"]), end="")' "$phase"
	echo "  minflt $(( $(awk '{print $10}' /proc/$PID/stat) - f0 ))"
done
