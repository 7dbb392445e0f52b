#!/bin/bash
# bench-tool.sh: is cairn bench an honest load generator? It and the shared harness's s3bench
# (libcurl multi) drive one cairn server (127.0.0.1:9392) at concurrency 32, 4 KiB and 4 MiB:
# throughput and client CPU per GiB side by side (issue 5, "Honest numbers"; docs/PERF.md).
cd "$(dirname "$0")/.."
export CAIRN_BENCH_ACCESS_KEY=cairnadmin CAIRN_BENCH_SECRET_KEY=cairnsecret123
rm -rf /tmp/cairn-benchtool/data; mkdir -p /tmp/cairn-benchtool/data
CAIRN_ROOT_USER=cairnadmin CAIRN_ROOT_PASSWORD=cairnsecret123 build/cairn server /tmp/cairn-benchtool/data --address 127.0.0.1:9392 > /tmp/cairn-benchtool/server.log 2>&1 &
SP=$!
sleep 1
D=8
${S3BENCH:-/tmp/s3harness/cache/bin/s3bench} --url http://127.0.0.1:9392 --bucket s3b --access cairnadmin --secret cairnsecret123 --mkbucket 2>/dev/null
for size in 4KiB 4MiB; do
  ss=$([ $size = 4KiB ] && echo 4k || echo 4m)
  echo "## size $size"
  ${S3BENCH:-/tmp/s3harness/cache/bin/s3bench} --url http://127.0.0.1:9392 --bucket s3b --access cairnadmin --secret cairnsecret123 --size $ss --concurrency 32 --duration $D --ops put,get,delete --keys 2000 2>&1 | /usr/bin/python3 -c '
import sys,json
for l in sys.stdin:
    try: j=json.loads(l)
    except Exception: continue
    if j["op"] in ("PUT","GET"): print("s3bench", j["op"], "obj/s=%.1f MiB/s=%.1f p50=%.2fms p99=%.2fms errors=%d client_cpu_s=%.2f cpu_s/GiB=%s us/op=%.1f" % (j["ops_per_s"], j["mib_per_s"], j["lat_ms"]["p50"], j["lat_ms"]["p99"], j["errors"], j["client_cpu_s"], j["client_cpu_s_per_gib"], j["client_cpu_s"]*1e6/max(j["ops"],1)))'
  for m in put get; do
    build/cairn bench $m --host 127.0.0.1:9392 --obj.size $size --objects 2000 --concurrent 32 --duration ${D}s --json 2>/tmp/cairn-benchtool/perf-$m.err >/tmp/cairn-benchtool/perf-$m.json
    /usr/bin/python3 -c '
import json,sys
j=json.load(open("/tmp/cairn-benchtool/perf-'$m'.json"))["ops"][0]
print("cairn-bench", j["op"], "obj/s=%.1f MiB/s=%.1f p50=%.2fms p99=%.2fms errors=%d" % (j["obj_s"], j["mib_s"], j["reqs"]["p50_ms"], j["reqs"]["p99_ms"], j["errors"]), end=" ")'
    grep "client CPU" /tmp/cairn-benchtool/perf-$m.err | tail -1
  done
done
kill $SP; wait $SP 2>/dev/null
