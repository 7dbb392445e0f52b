#!/usr/bin/env bash
# drive_swap_e2e.sh: disk swaps as an operator meets them, end to end (root only; not
# part of CI, whose unit tests cover the same rules with tmpfs mounts). Run it as
#   unshare -m scripts/experiments/drive_swap_e2e.sh
# (a private mount namespace: its tmpfs mounts vanish with it). Four tmpfs "disks" under
# /tmp/cairn-swap-e2e, build/cairn (or CAIRN_BIN) on them, aws cli as the client:
#  a) `umount -l` of a disk while running: logged once, nothing written to the bare mount
#     point; a new disk mounted there is switched to, formatted and healed;
#  b) a disk not mounted at a restart: suspended, not formatted (`cairn admin info`
#     shows it), PUTs go on; once mounted: formatted into its slot and healed.
set -u
BIN=$(realpath "${CAIRN_BIN:-build/cairn}")
B=/tmp/cairn-swap-e2e PORT=${PORT:-9311}
command -v aws >/dev/null || { echo "drive_swap_e2e.sh: needs the aws cli" >&2; exit 2; }
mount --make-rprivate / || { echo "drive_swap_e2e.sh: run it under unshare -m, as root" >&2; exit 2; }
rm -rf $B; mkdir -p $B
for i in 1 2 3 4; do mkdir -p $B/d$i; mount -t tmpfs -o size=256m tmpfs $B/d$i; done
export CAIRN_ROOT_USER=admin CAIRN_ROOT_PASSWORD=secret12345
export AWS_ACCESS_KEY_ID=admin AWS_SECRET_ACCESS_KEY=secret12345 AWS_DEFAULT_REGION=us-east-1
A="aws --endpoint-url http://127.0.0.1:$PORT s3"
PID=
start() {
	"$BIN" server "$B/d{1...4}" --address 127.0.0.1:$PORT >>$B.log 2>&1 &
	PID=$!
	for _ in $(seq 100); do curl -sf http://127.0.0.1:$PORT/minio/health/ready >/dev/null && break; sleep 0.1; done
}
stop() { kill $PID; wait $PID 2>/dev/null; }
drives() { "$BIN" admin info --host 127.0.0.1:$PORT | grep -E '^[0-9]+ '; }
wait_for() { for _ in $(seq 30); do [ -e "$1" ] && return 0; sleep 1; done; return 1; }
start
$A mb s3://bkt >/dev/null
head -c 3000000 /dev/urandom >$B.big
head -c 5000 /dev/urandom >$B.small
$A cp $B.big s3://bkt/big >/dev/null
$A cp $B.small s3://bkt/small >/dev/null
echo "== a) umount -l d3 while running"
umount -l $B/d3
sleep 6
$A cp $B.small s3://bkt/while-detached >/dev/null
echo "bare mount point after a drive check and a PUT: [$(ls -A $B/d3 | tr '\n' ' ')]"
mount -t tmpfs -o size=256m tmpfs $B/d3
wait_for "$B/d3/bkt/%m.while-detached" && echo "new disk at d3 healed: $(ls $B/d3/bkt | tr '\n' ' ')"
$A cp s3://bkt/big $B.big2 >/dev/null && cmp $B.big $B.big2 && echo "big reads back byte-exact"
stop
echo "== b) d4 not mounted at a restart"
umount $B/d4
start
echo "d4 format record: $(ls $B/d4/.cairn.sys/format 2>/dev/null || echo none)"
drives
$A cp $B.small s3://bkt/after >/dev/null && echo "PUT with d4 suspended: ok"
mount -t tmpfs -o size=256m tmpfs $B/d4
wait_for "$B/d4/bkt/%m.after" && echo "d4 mounted, formatted and healed: $(ls $B/d4/bkt | tr '\n' ' ')"
drives
stop
echo "== the server's lines about d3 and d4"
grep -E '/d[34]' $B.log | sed 's/^[^ ]* //'
for i in 1 2 3 4; do umount -l $B/d$i 2>/dev/null; done
rm -rf $B $B.log $B.big $B.big2 $B.small
