#!/usr/bin/env bash
# signcost.sh [DRIVES PARITY SIZE REPS]: what compare.sh's GET ratio is made of. Starts
# build/cairn (or CAIRN_BIN; CAIRN_ARGS adds server options) on DRIVES fresh folders
# (default 16, EC:4) and nginx with compare.sh's own configuration (../shared/bench's
# h_nginx_start), PUTs 1000 objects of SIZE (default 64k) to each, then alternates 3 s GET
# phases at concurrency 32, REPS times (default 3):
#   nginx-wrk     wrk (2 threads) GETting one static file of SIZE from nginx: compare.sh's
#                 "best nginx figure", the baseline of the issue's GET targets
#   nginx-plain   s3bench --plain against nginx (compare.sh's "same client" baseline)
#   nginx-signed  s3bench with SigV4 against nginx (nginx ignores the signature: the
#                 client's signing cost without any S3 server work)
#   cairn         s3bench with SigV4 against cairn
# Prints obj/s, server CPU per GET (s3bench --server-pid: cairn, or nginx's workers) and
# the client's CPU per GET (for wrk: its user+system time over the phase): docs/PERF.md's
# GET-ratio tables come from it.
# Run (after make; needs nginx, wrk and the shared harness ../shared/bench, or SHARED=):
#   scripts/signcost.sh 16 4 64k 3
# CLIENT_ENV="VAR=value ..." runs s3bench with that environment,
# e.g. CLIENT_ENV=GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=1073741824
# keeps the client's heap from being returned and faulted back in on every burst, which
# otherwise makes its CPU per GET swing 2-3x between runs (docs/PERF.md).
# S3BENCH: the s3bench binary ../shared/bench builds (default its cache).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-16} M=${2:-4} SIZE=${3:-64k} REPS=${4:-3}
BIN=${CAIRN_BIN:-build/cairn}
S=${S3BENCH:-/tmp/s3harness/cache/bin/s3bench}
SHARED=${SHARED:-../shared}
PORT=${PORT:-9304} NPORT=${NPORT:-9305}
[ -x "$S" ] || { echo "signcost.sh: no s3bench at $S (run ../shared/bench/compare.sh once, or set S3BENCH=)" >&2; exit 2; }
# shellcheck source=/dev/null
. "$SHARED/bench/perf/lib.sh"
D=$(mktemp -d /tmp/cairn-signcost.XXXXXX)
W=$(mktemp -d /tmp/cairn-signcost-nginx.XXXXXX)
PID=
cleanup() {
	[ -n "$PID" ] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
	h_nginx_stop || true
	rm -rf "$D" "$D.log" "$W"
}
trap cleanup EXIT
# shellcheck disable=SC2086
CAIRN_ROOT_USER=benchadmin CAIRN_ROOT_PASSWORD=benchsecret123 CAIRN_STORAGE_CLASS_STANDARD=EC:$M \
	"$BIN" server "$D/d{1...$N}" ${CAIRN_ARGS:-} --address 127.0.0.1:$PORT --quiet 2>"$D.log" &
PID=$!
h_nginx_start "$NPORT" "$W"
NPIDS=$(pgrep -P "$NGINX_PID" | paste -sd,)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/minio/health/ready" >/dev/null && break; sleep 0.1; done
SIGNED="--access benchadmin --secret benchsecret123"
# shellcheck disable=SC2086
{
	"$S" --url http://127.0.0.1:$PORT --bucket s3load $SIGNED --mkbucket >/dev/null
	"$S" --url http://127.0.0.1:$PORT --bucket s3load --prefix p/ $SIGNED --size "$SIZE" --ops put \
		--keys 1000 --concurrency 32 --duration 3 >/dev/null
	"$S" --url http://127.0.0.1:$NPORT --bucket dav --prefix p/ --plain --size "$SIZE" --ops put \
		--keys 1000 --concurrency 32 --duration 3 >/dev/null
}
BYTES=$(numfmt --from=iec "${SIZE^^}")
head -c "$BYTES" /dev/urandom >"$W/www/obj/static.bin"
cpu_of() { # total user+system clock ticks of the given pids (their threads included)
	local t=0 p
	for p in ${1//,/ }; do
		# shellcheck disable=SC2046
		set -- $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null || echo)
		[ $# -ge 13 ] && t=$((t + ${12} + ${13}))
	done
	echo "$t"
}
echo "rep  target         obj/s   server µs/GET  client µs/GET"
for r in $(seq "$REPS"); do
	s0=$(cpu_of "$NPIDS")
	out=$( { /usr/bin/time -f 'cpu %U %S' wrk -t 2 -c 32 -d 3s "http://127.0.0.1:$NPORT/obj/static.bin"; } 2>&1)
	s1=$(cpu_of "$NPIDS")
	python3 -c '
import re, sys
o = sys.argv[3]
n = float(re.search(r"Requests/sec:\s*([0-9.]+)", o).group(1))
u, s = map(float, re.search(r"cpu ([0-9.]+) ([0-9.]+)", o).groups())
tick = 100.0
print("%-4s %-12s %8.0f %14.1f %14.1f" % (sys.argv[1], "nginx-wrk", n,
      1e6 * (int(sys.argv[5]) - int(sys.argv[4])) / tick / (n * 3), 1e6 * (u + s) / (n * 3)))' \
		"$r" x "$out" "$s0" "$s1"
	for t in nginx-plain nginx-signed cairn; do
		case $t in
		nginx-plain) url=http://127.0.0.1:$NPORT bucket=dav auth=--plain spid=$NPIDS ;;
		nginx-signed) url=http://127.0.0.1:$NPORT bucket=dav auth=$SIGNED spid=$NPIDS ;;
		cairn) url=http://127.0.0.1:$PORT bucket=s3load auth=$SIGNED spid=$PID ;;
		esac
		# shellcheck disable=SC2086
		env ${CLIENT_ENV:-} "$S" --url "$url" --bucket $bucket --prefix p/ $auth --size "$SIZE" --ops get \
			--keys 1000 --concurrency 32 --duration 3 --server-pid "$spid" 2>/dev/null |
			python3 -c '
import sys, json
for l in sys.stdin:
    d = json.loads(l)
    s = d.get("server", {})
    print("%-4s %-12s %8.0f %14.1f %14.1f" % (sys.argv[1], sys.argv[2], d["ops_per_s"],
          s.get("cpu_us_per_op", 0), 1e6 * d["client_cpu_s"] / max(1, d["ops"])))' "$r" "$t"
	done
done
