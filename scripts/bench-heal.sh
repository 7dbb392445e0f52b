#!/usr/bin/env bash
# bench-heal.sh: what the background heal scan costs foreground traffic (issue 3, "healing
# throttled so foreground traffic keeps most of its throughput"), and how fast it heals.
#
# Starts build/cairn (durable) on N fresh drive folders under /tmp (one set, EC default),
# fills FILL objects of SIZE, restarts it (after a sync: the fill's writeback must not
# weigh on the first phase), then measures with `cairn bench` (concurrency 32, DUR each):
#   base    GET of fresh objects, then PUT, all drives healthy
#   wipe    the server stopped, drive 1's folder replaced by an empty one (a swapped
#           disk), the server started: it formats the drive into its slot and starts the
#           heal scan at once (throttled: HEAL-3 in src/object/heal.c)
#   heal    the same GET and PUT (new prefixes) while the scan rebuilds on drive 1 every
#           object written before (FILL and the base phases')
#   idle    IDLE seconds without load: the scan's own pace
# and prints foreground obj/s (base, during heal, ratio) and versions healed per second
# under load and idle, from `cairn admin info --json` (heal.scan). The foreground phases
# touch only objects written after the wipe, so the scanner's work is all the healing
# there is (no degraded read queues an object).
# Environment: DRIVES (4), FILL (6000), SIZE (64KiB), DUR (8), IDLE (5), PORT (9183),
# KEEP_LOG (a path: the server log is copied there),
# CAIRN_BIN (a built binary; default: make, then build/cairn), CAIRN_ARGS (server options).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CAIRN_BIN:-build/cairn}
[ -n "${CAIRN_BIN:-}" ] || make -s all
DRIVES=${DRIVES:-4} FILL=${FILL:-6000} SIZE=${SIZE:-64KiB} DUR=${DUR:-8} IDLE=${IDLE:-5}
PORT=${PORT:-9183}
export CAIRN_ROOT_USER=benchadmin CAIRN_ROOT_PASSWORD=benchsecret123
export CAIRN_BENCH_HOST=127.0.0.1:$PORT CAIRN_BENCH_ACCESS_KEY=benchadmin CAIRN_BENCH_SECRET_KEY=benchsecret123
DATA=$(mktemp -d /tmp/cairn-bench-heal.XXXXXX)
PID=
stop() {
	[ -n "$PID" ] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
	[ -z "${KEEP_LOG:-}" ] || cp "$DATA.log" "$KEEP_LOG"
	rm -rf "$DATA" "$DATA.log"
}
trap stop EXIT
start() {
	"$BIN" server "$DATA/d{1...$DRIVES}" ${CAIRN_ARGS:-} --address 127.0.0.1:$PORT --quiet 2>>"$DATA.log" &
	PID=$!
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/minio/health/ready" >/dev/null && break; sleep 0.1; done
	kill -0 "$PID" 2>/dev/null || { echo "bench-heal.sh: cairn did not start:"; cat "$DATA.log"; exit 1; }
}
start

# scan FIELD...: fields of heal.scan from one admin API answer
scan() {
	"$BIN" admin info --json --host 127.0.0.1:$PORT |
		python3 -c "import json,sys; s = json.load(sys.stdin)['heal']['scan']; print(*(s.get(f, 0) for f in sys.argv[1:]))" "$@"
}
# restart: the server stopped, the page cache's dirty data written out, started again
restart() {
	kill "$PID"
	wait "$PID" 2>/dev/null || true
	sync
	"${@:-true}"
	start
}
# run MODE PREFIX: obj/s of one measured `cairn bench` phase
run() {
	local extra=()
	[ "$1" = get ] && extra=(--objects 500)
	"$BIN" bench "$1" --obj.size "$SIZE" --concurrent 32 --duration "${DUR}s" --noclear \
		--prefix "$2" --json "${extra[@]}" 2>/dev/null |
		python3 -c "import json,sys; print('%.0f' % json.load(sys.stdin)['ops'][0]['obj_s'])"
}
now() { date +%s.%N; }

echo "== $DRIVES drives, $FILL objects of $SIZE, cairn pid $PID ($BIN)"
"$BIN" bench get --obj.size "$SIZE" --objects "$FILL" --concurrent 32 --duration 1s --noclear \
	--prefix fill/ --quiet >/dev/null 2>&1
restart
base_get=$(run get g1/)
base_put=$(run put p1/)
echo "base: GET $base_get obj/s, PUT $base_put obj/s"

# swapped while the server is down (removing a big folder under a running server takes
# seconds, and the drive monitor would format it half-removed)
swap() { rm -rf "$DATA/d1" && mkdir "$DATA/d1"; }
restart swap
for _ in $(seq 300); do [ "$(scan running)" = True ] && break; sleep 0.1; done
[ "$(scan running)" = True ] || { echo "bench-heal.sh: no heal scan started after the wipe"; tail -5 "$DATA.log"; exit 1; }
h0=$(scan healed) t0=$(now)
heal_get=$(run get g2/)
heal_put=$(run put p2/)
read -r h1 r1 < <(scan healed running)
t1=$(now)
sleep "$IDLE"
read -r h2 r2 < <(scan healed running)
t2=$(now)
python3 - "$base_get" "$base_put" "$heal_get" "$heal_put" "$h0" "$h1" "$h2" "$t0" "$t1" "$t2" "$r1" "$r2" <<'EOF'
import sys
bg, bp, hg, hp, h0, h1, h2 = (float(x) for x in sys.argv[1:8])
t0, t1, t2 = (float(x) for x in sys.argv[8:11])
r1, r2 = sys.argv[11:13]
print(f"during heal: GET {hg:.0f} obj/s ({hg / bg:.2f} of base), PUT {hp:.0f} obj/s ({hp / bp:.2f} of base)")
print(f"healed: {h1 - h0:.0f} versions in {t1 - t0:.1f} s under load ({(h1 - h0) / (t1 - t0):.0f}/s), "
      f"{h2 - h1:.0f} in {t2 - t1:.1f} s idle ({(h2 - h1) / (t2 - t1):.0f}/s)")
if r1 != "True" or r2 != "True":
    print("note: the scan ended before the end of a phase; raise FILL for a steady figure")
EOF
read -r sc he fa < <(scan scanned healed failed)
echo "scan so far: $sc versions scanned, $he healed, $fa failed"
