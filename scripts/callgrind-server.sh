#!/usr/bin/env bash
# callgrind-server.sh [BIN]: the server's instruction count for one fixed load — a figure
# that does not move with the machine's load, for comparing two builds on a shared machine
# (timings there are noise). Starts BIN (default build/cairn) under valgrind's callgrind on
# 4 fresh drive folders (EC:2, durable), runs a fixed boto3 load against it (300 PUT and
# 300 GET of 4 KiB, 100 PUT and 100 GET of 64 KiB, 100 GETs of missing keys), stops it with
# SIGTERM and prints the total instructions (Ir). Startup and shutdown are included: compare
# two builds, not absolute figures. Needs valgrind and Debian's python3-boto3.
#   scripts/callgrind-server.sh                 # this build
#   scripts/callgrind-server.sh /tmp/old/build/cairn
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/cairn}
PORT=${PORT:-9711}
D=$(mktemp -d /tmp/cairn-cg.XXXXXX)
OUT=$D/callgrind.out
trap 'kill $P 2>/dev/null || true; rm -rf "$D"' EXIT
# GLIBC_TUNABLES set: the server would otherwise re-exec itself to set it, which valgrind refuses
GLIBC_TUNABLES=glibc.malloc.hugetlb=1 CAIRN_ROOT_USER=cgadmin CAIRN_ROOT_PASSWORD=cgsecret123 \
	valgrind --tool=callgrind --callgrind-out-file="$OUT" "$BIN" server "$D/d{1...4}" \
	--address 127.0.0.1:$PORT --quiet >/dev/null 2>"$D/log" &
P=$!
/usr/bin/python3 - "$PORT" <<'PY'
import sys, time, urllib.request
import boto3
from botocore.config import Config
port = sys.argv[1]
for _ in range(600):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/minio/health/live", timeout=1)
        break
    except Exception:
        time.sleep(0.1)
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id="cgadmin",
                  aws_secret_access_key="cgsecret123", region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0}))
s3.create_bucket(Bucket="cgbench")
small, mid = b"x" * 4096, b"y" * 65536
for i in range(300):
    s3.put_object(Bucket="cgbench", Key=f"s{i}", Body=small)
for i in range(300):
    s3.get_object(Bucket="cgbench", Key=f"s{i}")["Body"].read()
for i in range(100):
    s3.put_object(Bucket="cgbench", Key=f"m{i}", Body=mid)
for i in range(100):
    s3.get_object(Bucket="cgbench", Key=f"m{i}")["Body"].read()
for i in range(100):
    try:
        s3.get_object(Bucket="cgbench", Key=f"missing{i}")
    except s3.exceptions.NoSuchKey:
        pass
PY
kill -TERM $P
wait $P || true
echo "server instructions (Ir): $(grep -E '^totals:' "$OUT" | awk '{print $2}')  ($BIN)"
