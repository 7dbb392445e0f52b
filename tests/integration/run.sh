#!/usr/bin/env bash
# run.sh: cairn's whole integration suite, in order — boto3/pytest (test_*.py), the kill -9
# durability test, the command-line clients (clients.sh: aws cli, s3cmd, rclone, restic)
# and the AWS SDK for JavaScript v3 and MinIO's JavaScript SDK (js/, node --test). Every
# part runs even when an earlier one failed; a summary follows and the exit status is
# non-zero when anything failed.
#
# Usage: tests/integration/run.sh [pytest args...]      e.g. run.sh -k listing
#   CAIRN_BIN   the server binary (default build/cairn)
#   ONLY        a subset, space separated: "pytest pytest-ec durability clients js"
#               (pytest-ec: the same pytest suite with its default server over 4 drives,
#               one erasure set EC:2 — every S3 API over the erasure-coded path)
# Needs (Debian): python3-boto3 python3-pytest awscli s3cmd rclone restic nodejs npm; the npm
# packages of js/package-lock.json are installed here with `npm ci` when js/node_modules is
# missing.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export CAIRN_BIN=${CAIRN_BIN:-$REPO/build/cairn}
case "$CAIRN_BIN" in /*) ;; *) CAIRN_BIN=$REPO/$CAIRN_BIN ;; esac
ONLY=${ONLY:-pytest pytest-ec durability clients js}
PY=/usr/bin/python3

if [ ! -x "$CAIRN_BIN" ]; then
	echo "run.sh: cairn binary not found at $CAIRN_BIN (build it: make build/cairn)" >&2
	exit 2
fi

declare -a NAMES RESULTS DETAILS WHY
# record NAME RC DETAIL [WHY]: WHY is what a failed part printed about its failure; the
# summary repeats it last, so the tail of a CI log names the failing checks
record() { NAMES+=("$1"); RESULTS+=("$2"); DETAILS+=("$3"); WHY+=("${4:-}"); }
want() { [[ " $ONLY " == *" $1 "* ]]; }
T0=$SECONDS

# pytest_part NAME DRIVES [pytest args...]: the boto3 suite, its default server over DRIVES
pytest_part() {
	local name=$1 drives=$2 t=$SECONDS rc line LOGF
	shift 2
	LOGF=$(mktemp /tmp/cairn-pytest.XXXXXX)
	(cd "$HERE" && CAIRN_TEST_DRIVES=$drives timeout 900 $PY -m pytest -q -p no:cacheprovider -rfE "$@" 2>&1) | tee "$LOGF"
	rc=${PIPESTATUS[0]}
	line=$(grep -E "^(=+ )?[0-9]+ (passed|failed|error)|(passed|failed|error).* in [0-9.]+s" "$LOGF" | tail -n 1 | sed 's/=//g; s/^ *//; s/ *$//')
	record "$name" $rc "${line:-no pytest summary} ($((SECONDS - t))s)" "$(grep -E '^(FAILED|ERROR) ' "$LOGF" | head -n 20)"
	rm -f "$LOGF"
}

if want pytest; then
	echo "=== pytest + boto3 ($($PY -c 'import boto3, botocore; print("boto3", boto3.__version__, "botocore", botocore.__version__)'))"
	pytest_part pytest 1 "$@"
fi

if want pytest-ec; then
	echo "=== pytest + boto3, default server over 4 drives (CAIRN_TEST_DRIVES=4)"
	pytest_part pytest-ec 4 "$@"
fi

# durability_part NAME TITLE [durability.py args...]: one kill -9 run, recorded
durability_part() {
	local name=$1 t=$SECONDS out rc
	echo "=== durability (kill -9)$2"
	shift 2
	out=$(timeout 600 $PY "$HERE/durability.py" "$@" 2>&1)
	rc=$?
	echo "$out"
	record "$name" $rc "$(echo "$out" | grep -E '^(durability: OK|DURABILITY FAILED)' | tail -n 1) ($((SECONDS - t))s)" \
		"$(echo "$out" | grep -E '^round ' ; echo "$out" | sed -n '/^DURABILITY FAILED/,$p' | head -n 60)"
}

if want durability; then
	durability_part durability ""
	durability_part durability-8 ", 8 drives erasure-coded" --drives 8
	durability_part durability-8-lost ", 8 drives, one drive folder lost in each round" --drives 8 --lose-drive
	# 16 drives EC:4: K = W = 12, so an overwrite cut short after 5-11 renames leaves
	# neither version on K drives' current records (EC-15, EC-16)
	durability_part durability-16 ", 16 drives erasure-coded" --drives 16
fi

if want clients; then
	echo "=== aws cli, s3cmd, rclone"
	t=$SECONDS
	out=$(timeout 900 bash "$HERE/clients.sh" 2>&1)
	rc=$?
	echo "$out"
	record clients $rc "$(echo "$out" | grep -E '^(clients.sh: all|FAIL )' | tail -n 1) ($((SECONDS - t))s)" \
		"$(echo "$out" | grep -E -A 5 '^FAIL ' | head -n 40)"
fi

if want js; then
	echo "=== @aws-sdk/client-s3 and minio-js (node $(node --version 2>/dev/null || echo missing))"
	t=$SECONDS
	rc=0
	if [ ! -d "$HERE/js/node_modules/@aws-sdk/client-s3" ] || [ ! -d "$HERE/js/node_modules/minio" ]; then
		(cd "$HERE/js" && timeout 600 npm ci --no-audit --no-fund --loglevel=error) || rc=$?
	fi
	if [ $rc -eq 0 ]; then
		out=$(cd "$HERE/js" && timeout 600 node --test 2>&1)
		rc=$?
		echo "$out"
		detail="$(echo "$out" | grep -E '^# (pass|fail) ' | tr '\n' ' ')"
		why="$(echo "$out" | grep -E -A 20 '^not ok' | head -n 40)"
	else
		detail="npm ci failed"
	fi
	record js $rc "$detail($((SECONDS - t))s)" "${why:-}"
fi

echo
echo "=== integration summary ($((SECONDS - T0))s, binary $CAIRN_BIN)"
failed=0
for i in "${!NAMES[@]}"; do
	if [ "${RESULTS[$i]}" -eq 0 ]; then st=PASS; else st="FAIL(rc=${RESULTS[$i]})"; failed=$((failed + 1)); fi
	printf '  %-17s %-10s %s\n' "${NAMES[$i]}" "$st" "${DETAILS[$i]}"
done
if [ $failed -ne 0 ]; then
	for i in "${!NAMES[@]}"; do
		if [ "${RESULTS[$i]}" -ne 0 ] && [ -n "${WHY[$i]}" ]; then
			printf -- '--- %s failed:\n%s\n' "${NAMES[$i]}" "${WHY[$i]}"
		fi
	done
	echo "integration: $failed part(s) failed"
	exit 1
fi
echo "integration: all parts passed"
