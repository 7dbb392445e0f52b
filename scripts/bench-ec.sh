#!/usr/bin/env bash
# bench-ec.sh [compare.sh options]: erasure-coded performance (issue 3). For each layout —
# one set of 4 drive folders (EC:2) and one set of 16 (EC:4), all on this machine's one
# disk — starts build/cairn (durable) on fresh folders under /tmp and runs
# ../shared/bench/compare.sh (cairn vs nginx, interleaved, concurrency 32; default sizes
# 4k,64k,4m) twice:
#   healthy   all drives read and written
#   degraded  reads act as if M drives were gone (CAIRN_DEBUG_READ_OFFLINE_SLOTS=M: the
#             first M drives of the set are skipped by every read, so GETs rebuild from
#             parity exactly as after losing them; writes still reach every drive)
# compare.sh reports server CPU-seconds per GiB (SERVER_PID). Copy the figures with this
# command line into docs/PERF.md. LAYOUTS="4:2 16:4" selects layouts (drives:parity),
# MODES="healthy degraded" the read modes, CAIRN_BIN=path another binary (A/B runs; no make),
# CAIRN_ARGS="..." extra server options.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
[ -x "$SHARED/bench/compare.sh" ] || { echo "bench-ec.sh: $SHARED/bench/compare.sh not found (set SHARED=)" >&2; exit 2; }
BIN=${CAIRN_BIN:-build/cairn}
[ -n "${CAIRN_BIN:-}" ] || make -s all
PORT=${PORT:-9182}
LAYOUTS=${LAYOUTS:-"4:2 16:4"}
PID=
DATA=
stop() {
	[ -n "$PID" ] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
	[ -n "$DATA" ] && { echo "== server log tail"; tail -3 "$DATA.log"; rm -rf "$DATA" "$DATA.log"; }
	PID= DATA=
}
trap stop EXIT
for layout in $LAYOUTS; do
	n=${layout%%:*} m=${layout##*:}
	for mode in ${MODES:-healthy degraded}; do
		DATA=$(mktemp -d /tmp/cairn-bench-ec.XXXXXX)
		skip=0
		[ "$mode" = degraded ] && skip=$m
		CAIRN_ROOT_USER=benchadmin CAIRN_ROOT_PASSWORD=benchsecret123 \
		CAIRN_STORAGE_CLASS_STANDARD=EC:$m CAIRN_DEBUG_READ_OFFLINE_SLOTS=$skip \
			"$BIN" server "$DATA/d{1...$n}" ${CAIRN_ARGS:-} --address 127.0.0.1:$PORT --quiet 2>"$DATA.log" &
		PID=$!
		for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/minio/health/ready" >/dev/null && break; sleep 0.1; done
		kill -0 "$PID" 2>/dev/null || { echo "bench-ec.sh: cairn did not start:"; cat "$DATA.log"; exit 1; }
		echo "== $n drives EC:$m, $mode reads (cairn pid $PID)"
		SERVER_PID=$PID "$SHARED/bench/compare.sh" "http://127.0.0.1:$PORT" benchadmin benchsecret123 \
			--sizes 4k,64k,4m "$@"
		stop
	done
done
