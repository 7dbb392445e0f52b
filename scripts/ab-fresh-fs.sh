#!/usr/bin/env bash
# ab-fresh-fs.sh BIN_A BIN_B [PAIRS]: A/B of two cairn binaries, each run on a freshly made
# ext4 (a 4 GiB loop file, no journal, as these machines' root filesystem), so neither run
# inherits the other's freed inodes (ext4 without a journal skips inodes freed in the last
# minutes on every allocation: docs/PERF.md). Runs alternate A, B, A, B ...; each starts
# the binary (durable) on DRIVES drive folders, optionally runs PRIME seconds of 4 KiB
# PUT+DELETE (to measure after deletes), then s3bench OPS for DUR seconds at concurrency
# 32, and prints one line per op in SHOW: obj/s, client and server CPU per op.
# Needs root (mount) and the shared harness's s3bench:
#   S3BENCH=/path/to/s3bench   (build: gcc -O2 -o s3bench ../shared/bench/perf/tools/s3bench.c
#                               -lcurl -lcrypto -lpthread, or let compare.sh build it)
# Environment: DRIVES (default "/d{1...4}"), SIZE (4k), OPS (put), SHOW (PUT), DUR (4),
# PRIME (unset: none), KEYS (unset: s3bench's default; a small count makes PUTs overwrite:
# keys are used round-robin), IMG (/tmp/cairn-ab.img), IMG_SIZE (4G), MNT (/mnt/cairn-ab).
# The loop device reads and writes its file with direct I/O (losetup --direct-io=on), so
# the filesystem's data is cached once, as on a disk (and O_DIRECT writes reach the disk
# as without the loop device).
# Example: PRIME=3 DRIVES="/d{1...16}" scripts/ab-fresh-fs.sh /tmp/cairn-old build/cairn 3
set -euo pipefail
A=$1 B=$2 PAIRS=${3:-3}
S3BENCH=${S3BENCH:-/tmp/s3harness/cache/bin/s3bench}
[ -x "$S3BENCH" ] || { echo "ab-fresh-fs.sh: set S3BENCH= to a built s3bench (see the header)" >&2; exit 2; }
DRIVES=${DRIVES:-"/d{1...4}"} SIZE=${SIZE:-4k} OPS=${OPS:-put} SHOW=${SHOW:-PUT} DUR=${DUR:-4}
IMG=${IMG:-/tmp/cairn-ab.img} MNT=${MNT:-/mnt/cairn-ab} PORT=9393
CRED=(--access abadmin --secret abadminsecret)
mkdir -p "$MNT"
[ -f "$IMG" ] || truncate -s "${IMG_SIZE:-4G}" "$IMG"
SERVER= LOOPDEV=
unmount() {
	if mountpoint -q "$MNT"; then umount "$MNT"; fi
	if [ -n "$LOOPDEV" ]; then losetup -d "$LOOPDEV"; LOOPDEV=; fi
}
cleanup() {
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && while kill -0 "$SERVER" 2>/dev/null; do sleep 0.1; done
	unmount
	rm -f "$IMG"
}
trap cleanup EXIT

one() { # LABEL BIN
	unmount
	mkfs.ext4 -q -F -O ^has_journal "$IMG"
	LOOPDEV=$(losetup --find --show --direct-io=on "$IMG")
	mount "$LOOPDEV" "$MNT"
	mkdir "$MNT/data"
	CAIRN_ROOT_USER=abadmin CAIRN_ROOT_PASSWORD=abadminsecret "$2" server "$MNT/data$DRIVES" \
		--address 127.0.0.1:$PORT --quiet 2>"$MNT/server.log" &
	local pid=$!
	SERVER=$pid
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/minio/health/live" >/dev/null && break; sleep 0.1; done
	curl -sf "http://127.0.0.1:$PORT/minio/health/live" >/dev/null ||
		{ echo "ab-fresh-fs.sh: $2 did not start:" >&2; tail -5 "$MNT/server.log" >&2; exit 1; }
	"$S3BENCH" --url http://127.0.0.1:$PORT --bucket abtest --size 4k --ops put --keys 10 --duration 1 \
		"${CRED[@]}" --mkbucket >/dev/null 2>&1
	if [ -n "${PRIME:-}" ]; then
		"$S3BENCH" --url http://127.0.0.1:$PORT --bucket abtest --size 4k --ops put,delete \
			--duration "$PRIME" "${CRED[@]}" >/dev/null 2>&1
	fi
	"$S3BENCH" --url http://127.0.0.1:$PORT --bucket abtest --size "$SIZE" --ops "$OPS" --duration "$DUR" \
		--concurrency 32 ${KEYS:+--keys "$KEYS"} "${CRED[@]}" --server-pid $pid | python3 -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if d["op"] in sys.argv[2].split(","):
        print(sys.argv[1], d["op"], "%.0f obj/s" % d["ops_per_s"], "errors", d["errors"],
              "client %d us/op" % round(d["client_cpu_s"] * 1e6 / max(d["ops"], 1)),
              "server %s us/op" % d["server"]["cpu_us_per_op"])' "$1" "$SHOW"
	kill $pid
	while kill -0 $pid 2>/dev/null; do sleep 0.1; done
}

for _ in $(seq "$PAIRS"); do
	one A "$A"
	one B "$B"
done
