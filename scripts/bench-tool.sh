#!/bin/bash
# bench-tool.sh: is cairn bench an honest load generator? It and the shared harness's s3bench
# (libcurl multi) drive one cairn server (127.0.0.1:9392, one drive, durable) at concurrency
# 32, 4 KiB and 4 MiB: throughput and client CPU per GiB side by side (issue 5, "Honest
# numbers"; docs/PERF.md). REPS (default 5) interleaved repetitions, medians reported: client
# CPU per GiB moves ±30 % between runs on this shared VM, so single runs decide nothing.
#   S3BENCH=/path/to/s3bench   (build: gcc -O2 -o s3bench ../shared/bench/perf/tools/s3bench.c
#                               -pthread -lcurl -lcrypto)
#   REPS=5 D=6 (seconds per phase)
# s3bench runs put,get,delete in one process with its default keys, exactly as s3load.sh
# does (new keys: overwriting a few keys is a different, faster server path); its GET phase
# reuses the PUT phase's warm connections and heap. cairn bench runs `put` (new keys), then
# `get` (which uploads its objects first, outside the measured phase).
cd "$(dirname "$0")/.."
S3BENCH=${S3BENCH:-/tmp/s3harness/cache/bin/s3bench}
[ -x "$S3BENCH" ] || { echo "bench-tool.sh: set S3BENCH= to a built s3bench (see the header)" >&2; exit 2; }
make -s all || exit 1
REPS=${REPS:-5} D=${D:-6}
export CAIRN_BENCH_ACCESS_KEY=cairnadmin CAIRN_BENCH_SECRET_KEY=cairnsecret123
W=/tmp/cairn-benchtool
rm -rf $W; mkdir -p $W/data
CAIRN_ROOT_USER=cairnadmin CAIRN_ROOT_PASSWORD=cairnsecret123 build/cairn server $W/data --address 127.0.0.1:9392 > $W/server.log 2>&1 &
SP=$!
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:9392/minio/health/ready >/dev/null && break; sleep 0.1; done
"$S3BENCH" --url http://127.0.0.1:9392 --bucket s3b --access cairnadmin --secret cairnsecret123 --mkbucket 2>/dev/null
: > $W/results.txt
for size in 4KiB 4MiB; do
	ss=$([ $size = 4KiB ] && echo 4k || echo 4m)
	objs=$([ $size = 4KiB ] && echo 2000 || echo 200)
	for rep in $(seq "$REPS"); do
		"$S3BENCH" --url http://127.0.0.1:9392 --bucket s3b --access cairnadmin --secret cairnsecret123 --size $ss \
			--concurrency 32 --duration "$D" --ops put,get,delete 2>/dev/null | /usr/bin/python3 -c '
import sys, json
for l in sys.stdin:
    try: j = json.loads(l)
    except Exception: continue
    if j["op"] in ("PUT", "GET"):
        print("'$size'", "s3bench", j["op"], j["ops_per_s"], j["mib_per_s"], j["client_cpu_s_per_gib"], j["errors"])' >> $W/results.txt
		for m in put get; do
			build/cairn bench $m --host 127.0.0.1:9392 --obj.size $size --objects $objs --concurrent 32 \
				--duration "${D}s" --json 2>$W/cb.err >$W/cb.json
			/usr/bin/python3 -c '
import json, re
j = json.load(open("'$W'/cb.json"))["ops"][0]
m = re.search(r"\(([0-9.]+) s/GiB", open("'$W'/cb.err").read())
print("'$size'", "cairn-bench", j["op"], j["obj_s"], j["mib_s"], m.group(1) if m else "nan", j["errors"])' >> $W/results.txt
		done
		echo "size $size rep $rep done" >&2
	done
done
/usr/bin/python3 - $W/results.txt <<'EOF'
import sys, statistics
rows = {}
for l in open(sys.argv[1]):
    size, tool, op, obs, mibs, cpu, errs = l.split()
    rows.setdefault((size, op, tool), []).append((float(obs), float(mibs), float(cpu), int(errs)))
print("medians of %d interleaved runs (ranges in brackets)" % max(len(v) for v in rows.values()))
print("%-5s %-4s %-12s %12s %12s %24s %6s" % ("size", "op", "tool", "obj/s", "MiB/s", "client CPU s/GiB", "errors"))
for (size, op, tool), v in sorted(rows.items()):
    cpus = [x[2] for x in v]
    print("%-5s %-4s %-12s %12.0f %12.1f %8.3f [%.3f-%.3f] %6d" % (size, op, tool,
          statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
          statistics.median(cpus), min(cpus), max(cpus), sum(x[3] for x in v)))
EOF
