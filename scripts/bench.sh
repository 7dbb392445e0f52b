#!/usr/bin/env bash
# bench.sh [compare.sh options]: the project's benchmark. Starts build/cairn on a fresh
# folder under /tmp (127.0.0.1:9181, durable mode unless CAIRN_BENCH_FLAGS=--no-fsync),
# then runs, in one go:
#   1. ../shared/bench/compare.sh (cairn vs nginx, interleaved; default sizes 4k,64k,1m,4m)
#   2. peak server RSS with 256 concurrent 4 MiB PUTs (s3bench from the shared harness)
#   3. scripts/bench-idle.py: memory of 10,000 idle keep-alive connections
# Results go to stdout; copy the figures with this command line into docs/PERF.md.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
[ -x "$SHARED/bench/compare.sh" ] || { echo "bench.sh: $SHARED/bench/compare.sh not found (set SHARED=)" >&2; exit 2; }
make -s all
DATA=$(mktemp -d /tmp/cairn-bench.XXXXXX)
PORT=${PORT:-9181}
CAIRN_ROOT_USER=benchadmin CAIRN_ROOT_PASSWORD=benchsecret123 \
	build/cairn server "$DATA" --address 127.0.0.1:$PORT --quiet ${CAIRN_BENCH_FLAGS:-} 2>"$DATA.log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; echo "== server log tail"; tail -5 "$DATA.log"; rm -rf "$DATA" "$DATA.log"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/minio/health/live" >/dev/null && break; sleep 0.1; done
kill -0 $PID 2>/dev/null || { echo "bench.sh: cairn did not start (port $PORT busy?)" >&2; exit 1; }
echo "== compare.sh (cairn pid $PID, flags: ${CAIRN_BENCH_FLAGS:-durable})"
SERVER_PID=$PID "$SHARED/bench/compare.sh" "http://127.0.0.1:$PORT" benchadmin benchsecret123 \
	--sizes 4k,64k,1m,4m "$@"
S3BENCH=$(ls /tmp/s3harness/cache/bin/s3bench 2>/dev/null || true)
if [ -n "$S3BENCH" ]; then
	echo "== 256 concurrent 4 MiB PUTs (peak server RSS)"
	"$S3BENCH" --url "http://127.0.0.1:$PORT" --bucket rss --size 4k --access benchadmin \
		--secret benchsecret123 --mkbucket >/dev/null 2>&1 || true
	"$S3BENCH" --url "http://127.0.0.1:$PORT" --bucket rss --size 4m --ops put --concurrency 256 \
		--duration 5 --access benchadmin --secret benchsecret123 --server-pid $PID |
		grep -o '"ops_per_s":[0-9.]*\|"mib_per_s":[0-9.]*\|"errors":[0-9]*\|"peak_rss_mib":[0-9.]*' | tr '\n' ' '
	echo
fi
echo "== 10,000 idle keep-alive connections"
/usr/bin/python3 scripts/bench-idle.py 127.0.0.1:$PORT $PID 10000
