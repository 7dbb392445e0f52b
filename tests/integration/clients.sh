#!/usr/bin/env bash
# clients.sh: cairn driven by the command-line S3 clients users own — the aws cli (s3 and
# s3api), s3cmd, rclone, restic (backups through MinIO's Go SDK: init, two snapshots,
# check --read-data, restore compared, forget --prune) and s3fs (the bucket mounted with
# FUSE; skipped where /dev/fuse is missing) — against a fresh server on
# 127.0.0.1 with non-default credentials. Every step checks its result; the script stops
# at the first failure with a message naming the step, and prints the server's log tail.
# Multipart: every client's threshold is lowered to 5-8 MiB and big.bin (12 MiB + 5) goes
# up in 5 MiB parts.
#
# Usage: tests/integration/clients.sh          (CAIRN_BIN selects the binary)
# Needs: aws (awscli), s3cmd, rclone, restic, s3fs, /usr/bin/python3, cmp, diff, md5sum
# (coreutils, diffutils), mountpoint (util-linux).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CAIRN_BIN=${CAIRN_BIN:-$REPO/build/cairn}
ACCESS=cairnadmin
SECRET=cairnsecret123
PY=/usr/bin/python3

WORK=$(mktemp -d /tmp/cairn-clients.XXXXXX)
DATA=$WORK/data
LOG=$WORK/server.log
SERVER_PID=
STEP=0
# Every step here takes a second or two; a client that needs longer is stalled (e.g. waiting
# out a 60 s read timeout and retrying), which users see as a hang.
STEP_MAX=${STEP_MAX:-30}
CURRENT="(start)"

cleanup() {
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT" 2>/dev/null; then
		fusermount -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	fi
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL [step $STEP: $CURRENT]: $*" >&2
	if [ -f "$LOG" ]; then
		echo "--- server log tail ---" >&2
		tail -n 30 "$LOG" >&2 || true
	fi
	if [ -n "$SERVER_PID" ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
		echo "--- the server is no longer running ---" >&2
	fi
	exit 1
}

# step "description" cmd args...: runs the command (bounded by timeout), fails on non-zero.
step() {
	STEP=$((STEP + 1))
	CURRENT=$1
	shift
	local out rc=0 t0=${EPOCHREALTIME/[.,]/} t1
	out=$(timeout "$STEP_MAX" "$@" 2>&1) || rc=$?
	if [ $rc -ne 0 ]; then
		echo "  [$STEP] $CURRENT"
		echo "$out" | tail -n 20 >&2
		if [ $rc -eq 124 ]; then
			fail "no result within ${STEP_MAX}s (a stalled request?): $*"
		fi
		fail "command failed (exit $rc): $*"
	fi
	t1=${EPOCHREALTIME/[.,]/}
	printf '  [%d] %s (%d.%ds)\n' "$STEP" "$CURRENT" $(((t1 - t0) / 1000000)) $(((t1 - t0) / 100000 % 10))
	LAST_OUT=$out
}

# expect_in "needle": the last step's output must contain the needle.
expect_in() {
	grep -qF -- "$1" <<<"$LAST_OUT" || { echo "$LAST_OUT" | tail -n 20 >&2; fail "output lacks '$1'"; }
}
expect_not_in() {
	if grep -qF -- "$1" <<<"$LAST_OUT"; then echo "$LAST_OUT" | tail -n 20 >&2; fail "output still has '$1'"; fi
}
same_file() {
	cmp -s "$1" "$2" || fail "$1 and $2 differ"
}

[ -x "$CAIRN_BIN" ] || { echo "cairn binary not found: $CAIRN_BIN" >&2; exit 2; }
for tool in s3cmd rclone restic s3fs; do
	command -v $tool >/dev/null || { echo "missing client: $tool" >&2; exit 2; }
done
AWS=$(command -v aws || true)
[ -x /usr/bin/aws ] && AWS=/usr/bin/aws   # Debian's awscli, what CI installs
[ -n "$AWS" ] || { echo "missing client: aws" >&2; exit 2; }

# --- server -------------------------------------------------------------------------------
start_server() {
	local tries=0
	while [ $tries -lt 8 ]; do
		tries=$((tries + 1))
		PORT=$((9400 + RANDOM % 200))
		mkdir -p "$DATA"
		CAIRN_ROOT_USER=$ACCESS CAIRN_ROOT_PASSWORD=$SECRET \
			"$CAIRN_BIN" server "$DATA" --address "127.0.0.1:$PORT" >"$LOG" 2>&1 &
		SERVER_PID=$!
		for _ in $(seq 1 200); do
			if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
			if $PY -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:$PORT/minio/health/live', timeout=1).status == 200 else 1)" 2>/dev/null; then
				ENDPOINT=http://127.0.0.1:$PORT
				return 0
			fi
			sleep 0.1
		done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		grep -qi "in use" "$LOG" || { cat "$LOG" >&2; fail "server did not start"; }
	done
	fail "no free port for the server"
}

start_server
echo "cairn at $ENDPOINT (data $DATA)"

# --- test files -----------------------------------------------------------------------------
SRC=$WORK/src
mkdir -p "$SRC/tree/sub dir/deeper" "$SRC/tree/ünïcode"
head -c 0 /dev/urandom >"$SRC/empty.bin"
head -c 1 /dev/urandom >"$SRC/one.bin"
head -c 131073 /dev/urandom >"$SRC/small.bin"
head -c 1048577 /dev/urandom >"$SRC/mid.bin"
head -c $((12 * 1024 * 1024 + 5)) /dev/urandom >"$SRC/big.bin"
echo "hello cairn" >"$SRC/tree/a.txt"
head -c 70000 /dev/urandom >"$SRC/tree/sub dir/b c.bin"
head -c 300000 /dev/urandom >"$SRC/tree/sub dir/deeper/d+e%f.bin"
echo "unicode" >"$SRC/tree/ünïcode/日本.txt"
: >"$SRC/tree/empty-in-tree"

# --- aws cli ----------------------------------------------------------------------------------
echo "== aws cli ($($AWS --version 2>&1 | head -n1))"
export AWS_CONFIG_FILE=$WORK/aws-config AWS_SHARED_CREDENTIALS_FILE=$WORK/aws-credentials
export AWS_ACCESS_KEY_ID=$ACCESS AWS_SECRET_ACCESS_KEY=$SECRET AWS_DEFAULT_REGION=us-east-1
export AWS_PAGER="" AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL 2>/dev/null || true
$AWS configure set default.s3.multipart_threshold 8MB
$AWS configure set default.s3.multipart_chunksize 5MB
$AWS configure set default.s3.addressing_style path
A=("$AWS" --endpoint-url "$ENDPOINT")

B=awscli-bucket
OUT=$WORK/out-aws
mkdir -p "$OUT"
step "aws s3 mb" "${A[@]}" s3 mb s3://$B
step "aws s3 ls (buckets)" "${A[@]}" s3 ls
expect_in "$B"
# us-east-1: creating a bucket one already owns succeeds, as on AWS
step "aws s3 mb again succeeds" "${A[@]}" s3 mb s3://$B
for f in empty.bin one.bin small.bin mid.bin big.bin; do
	step "aws s3 cp up $f" "${A[@]}" s3 cp "$SRC/$f" "s3://$B/files/$f"
done
step "aws s3 ls files/" "${A[@]}" s3 ls "s3://$B/files/"
for f in empty.bin one.bin small.bin mid.bin big.bin; do expect_in "$f"; done
step "aws s3api head-object (multipart ETag)" "${A[@]}" s3api head-object --bucket $B --key files/big.bin
expect_in '-3\"'
step "aws s3api list-multipart-uploads (none left)" "${A[@]}" s3api list-multipart-uploads --bucket $B
expect_not_in '"UploadId"'
for f in empty.bin one.bin small.bin mid.bin big.bin; do
	step "aws s3 cp down $f" "${A[@]}" s3 cp "s3://$B/files/$f" "$OUT/$f"
	same_file "$SRC/$f" "$OUT/$f"
done
step "aws s3 cp to stdout" bash -c "$AWS --endpoint-url $ENDPOINT s3 cp s3://$B/files/small.bin - | md5sum"
expect_in "$(md5sum <"$SRC/small.bin" | cut -d' ' -f1)"
step "aws s3 cp from stdin" bash -c "head -c 5000 '$SRC/mid.bin' | $AWS --endpoint-url $ENDPOINT s3 cp - s3://$B/files/stdin.bin"
step "aws s3 sync up" "${A[@]}" s3 sync "$SRC/tree" "s3://$B/tree"
step "aws s3 ls --recursive" "${A[@]}" s3 ls --recursive "s3://$B/tree/"
expect_in "tree/sub dir/deeper/d+e%f.bin"
expect_in "tree/ünïcode/日本.txt"
step "aws s3 sync down" "${A[@]}" s3 sync "s3://$B/tree" "$OUT/tree"
step "synced tree identical" diff -r "$SRC/tree" "$OUT/tree"
step "aws s3 sync again uploads nothing" "${A[@]}" s3 sync "$SRC/tree" "s3://$B/tree"
expect_not_in "upload:"
step "aws s3 mv" "${A[@]}" s3 mv "s3://$B/files/one.bin" "s3://$B/moved/one.bin"
step "aws s3 ls after mv" "${A[@]}" s3 ls --recursive "s3://$B/"
expect_in "moved/one.bin"
expect_not_in "files/one.bin"
step "aws s3 presign" "${A[@]}" s3 presign "s3://$B/files/small.bin" --expires-in 300
URL=$LAST_OUT
step "fetch presigned URL" bash -c "$PY -c 'import sys,urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=30).read())' '$URL' | md5sum"
expect_in "$(md5sum <"$SRC/small.bin" | cut -d' ' -f1)"

step "s3api put-object with metadata" "${A[@]}" s3api put-object --bucket $B --key api/obj --body "$SRC/small.bin" \
	--content-type text/x-test --metadata color=blue,size=large --cache-control max-age=60
expect_in "$(md5sum <"$SRC/small.bin" | cut -d' ' -f1)"
step "s3api head-object" "${A[@]}" s3api head-object --bucket $B --key api/obj
expect_in '"ContentLength": 131073'
expect_in '"ContentType": "text/x-test"'
expect_in '"color": "blue"'
expect_in '"CacheControl": "max-age=60"'
step "s3api get-object range" "${A[@]}" s3api get-object --bucket $B --key api/obj --range bytes=10-19 "$OUT/range.bin"
expect_in '"ContentRange": "bytes 10-19/131073"'
step "range bytes match" bash -c "[ \"\$(tail -c +11 '$SRC/small.bin' | head -c 10 | md5sum)\" = \"\$(md5sum <'$OUT/range.bin')\" ]"
step "s3api copy-object REPLACE" "${A[@]}" s3api copy-object --bucket $B --key api/copy --copy-source "$B/api/obj" \
	--metadata-directive REPLACE --metadata color=red
step "s3api head copy" "${A[@]}" s3api head-object --bucket $B --key api/copy
expect_in '"color": "red"'
step "s3api list-objects-v2" "${A[@]}" s3api list-objects-v2 --bucket $B --prefix api/ --query "Contents[].Key" --output text
expect_in "api/copy"
expect_in "api/obj"
step "s3api list-objects (v1) with delimiter" "${A[@]}" s3api list-objects --bucket $B --delimiter / --output json
expect_in '"Prefix": "tree/"'
step "s3api get-bucket-location" "${A[@]}" s3api get-bucket-location --bucket $B
step "s3api head-bucket" "${A[@]}" s3api head-bucket --bucket $B
step "s3api get-object missing key fails" bash -c "! $AWS --endpoint-url $ENDPOINT s3api get-object --bucket $B --key nope $OUT/nope 2>$WORK/err; grep -q NoSuchKey $WORK/err"
step "s3api delete-objects" "${A[@]}" s3api delete-objects --bucket $B --delete '{"Objects":[{"Key":"api/obj"},{"Key":"api/copy"}]}'
expect_in "api/obj"
step "s3api delete-object" "${A[@]}" s3api delete-object --bucket $B --key files/stdin.bin
step "aws s3 rb on non-empty bucket fails" bash -c "! $AWS --endpoint-url $ENDPOINT s3 rb s3://$B"
step "aws s3 rm --recursive" "${A[@]}" s3 rm --recursive "s3://$B/"
step "aws s3 ls empty" "${A[@]}" s3 ls --recursive "s3://$B/"
[ -z "$LAST_OUT" ] || fail "bucket not empty after rm --recursive: $LAST_OUT"
step "aws s3 rb" "${A[@]}" s3 rb "s3://$B"
step "aws s3 ls without bucket" "${A[@]}" s3 ls
expect_not_in "$B"

# --- s3cmd ------------------------------------------------------------------------------------
echo "== s3cmd ($(s3cmd --version 2>&1))"
CFG=$WORK/s3cmd.cfg
cat >"$CFG" <<EOF
[default]
access_key = $ACCESS
secret_key = $SECRET
host_base = 127.0.0.1:$PORT
host_bucket = 127.0.0.1:$PORT
use_https = False
signature_v2 = False
bucket_location = us-east-1
enable_multipart = True
multipart_chunk_size_mb = 5
check_ssl_certificate = False
EOF
S=(s3cmd -c "$CFG" --no-progress)
B=s3cmd-bucket
OUT=$WORK/out-s3cmd
mkdir -p "$OUT"
step "s3cmd mb" "${S[@]}" mb s3://$B
step "s3cmd ls (buckets)" "${S[@]}" ls
expect_in "s3://$B"
for f in empty.bin small.bin big.bin; do
	step "s3cmd put $f" "${S[@]}" put "$SRC/$f" "s3://$B/dir/$f"
done
step "s3cmd put with odd name" "${S[@]}" put "$SRC/tree/sub dir/deeper/d+e%f.bin" "s3://$B/odd name/d+e%f.bin"
step "s3cmd ls" "${S[@]}" ls "s3://$B/dir/"
expect_in "s3://$B/dir/big.bin"
step "s3cmd ls --recursive" "${S[@]}" ls --recursive "s3://$B"
expect_in "s3://$B/odd name/d+e%f.bin"
for f in empty.bin small.bin big.bin; do
	step "s3cmd get $f" "${S[@]}" get --force "s3://$B/dir/$f" "$OUT/$f"
	same_file "$SRC/$f" "$OUT/$f"
done
step "s3cmd get odd name" "${S[@]}" get --force "s3://$B/odd name/d+e%f.bin" "$OUT/odd.bin"
same_file "$SRC/tree/sub dir/deeper/d+e%f.bin" "$OUT/odd.bin"
step "s3cmd info object" "${S[@]}" info "s3://$B/dir/small.bin"
expect_in "$(md5sum <"$SRC/small.bin" | cut -d' ' -f1)"
step "s3cmd info bucket" "${S[@]}" info "s3://$B"
step "s3cmd cp" "${S[@]}" cp "s3://$B/dir/small.bin" "s3://$B/copied/small.bin"
step "s3cmd sync up" "${S[@]}" sync "$SRC/tree/" "s3://$B/tree/"
step "s3cmd sync down" "${S[@]}" sync "s3://$B/tree/" "$OUT/tree/"
step "s3cmd synced tree identical" diff -r "$SRC/tree" "$OUT/tree"
step "s3cmd du" "${S[@]}" du "s3://$B"
step "s3cmd del" "${S[@]}" del "s3://$B/dir/small.bin"
step "s3cmd ls after del" "${S[@]}" ls "s3://$B/dir/"
expect_not_in "small.bin"
step "s3cmd rb non-empty fails" bash -c "! s3cmd -c '$CFG' rb s3://$B"
step "s3cmd del --recursive" "${S[@]}" del --recursive --force "s3://$B"
step "s3cmd rb" "${S[@]}" rb "s3://$B"
step "s3cmd ls without bucket" "${S[@]}" ls
expect_not_in "s3://$B"

# --- rclone -----------------------------------------------------------------------------------
echo "== rclone ($(rclone version 2>/dev/null | head -n1))"
export RCLONE_CONFIG=$WORK/rclone.conf
: >"$RCLONE_CONFIG"
export RCLONE_CONFIG_CAIRN_TYPE=s3
export RCLONE_CONFIG_CAIRN_PROVIDER=Minio
export RCLONE_CONFIG_CAIRN_ENV_AUTH=false
export RCLONE_CONFIG_CAIRN_ACCESS_KEY_ID=$ACCESS
export RCLONE_CONFIG_CAIRN_SECRET_ACCESS_KEY=$SECRET
export RCLONE_CONFIG_CAIRN_ENDPOINT=$ENDPOINT
export RCLONE_CONFIG_CAIRN_REGION=us-east-1
R=(env -u AWS_CA_BUNDLE rclone --s3-upload-cutoff 5M --s3-chunk-size 5M --retries 1 --low-level-retries 1)
B=rclone-bucket
OUT=$WORK/out-rclone
step "rclone mkdir" "${R[@]}" mkdir cairn:$B
step "rclone lsd" "${R[@]}" lsd cairn:
expect_in "$B"
step "rclone copy tree" "${R[@]}" copy "$SRC/tree" "cairn:$B/tree"
step "rclone copy files" "${R[@]}" copy "$SRC" "cairn:$B/all" --max-depth 1
step "rclone ls" "${R[@]}" ls "cairn:$B"
expect_in "tree/sub dir/deeper/d+e%f.bin"
expect_in "all/big.bin"
step "rclone lsf" "${R[@]}" lsf -R "cairn:$B/tree"
expect_in "ünïcode/日本.txt"
step "rclone check tree" "${R[@]}" check "$SRC/tree" "cairn:$B/tree"
step "rclone check --download" "${R[@]}" check --download "$SRC" "cairn:$B/all" --max-depth 1
step "rclone copy back" "${R[@]}" copy "cairn:$B/tree" "$OUT/tree"
step "rclone tree identical" diff -r "$SRC/tree" "$OUT/tree"
step "rclone cat" "${R[@]}" cat "cairn:$B/tree/a.txt"
expect_in "hello cairn"
step "rclone moveto" "${R[@]}" moveto "cairn:$B/all/one.bin" "cairn:$B/moved/one.bin"
step "rclone lsf after moveto" "${R[@]}" lsf -R "cairn:$B"
expect_in "moved/one.bin"
expect_not_in "all/one.bin"
step "rclone delete" "${R[@]}" delete "cairn:$B"
step "rclone ls empty" "${R[@]}" ls "cairn:$B"
[ -z "$LAST_OUT" ] || fail "bucket not empty after rclone delete: $LAST_OUT"
step "rclone rmdir" "${R[@]}" rmdir "cairn:$B"
step "rclone lsd without bucket" "${R[@]}" lsd cairn:
expect_not_in "$B"

# --- restic (a backup tool on MinIO's Go SDK, minio-go) ----------------------------------------
echo "== restic ($(restic version 2>/dev/null | head -n1))"
RS=(env AWS_ACCESS_KEY_ID=$ACCESS AWS_SECRET_ACCESS_KEY=$SECRET RESTIC_PASSWORD=cairn-restic-pw
	RESTIC_REPOSITORY=s3:$ENDPOINT/restic-repo RESTIC_CACHE_DIR=$WORK/restic-cache restic)
step "restic init" "${RS[@]}" init
expect_in "created restic repository"
cp -r "$SRC" "$WORK/src2"
step "restic backup" "${RS[@]}" backup "$WORK/src2"
expect_in "snapshot"
echo "changed for the second snapshot" >>"$WORK/src2/tree/a.txt"
step "restic backup (second)" "${RS[@]}" backup "$WORK/src2"
step "restic snapshots" "${RS[@]}" snapshots --json
[ "$($PY -c 'import json,sys; print(len(json.load(sys.stdin)))' <<<"$LAST_OUT")" = 2 ] || fail "restic lists not 2 snapshots: $LAST_OUT"
step "restic ls latest" "${RS[@]}" ls latest
expect_in "日本.txt"
step "restic check --read-data" "${RS[@]}" check --read-data
expect_in "no errors were found"
step "restic restore" "${RS[@]}" restore latest --target "$WORK/restic-out"
step "restic restore identical" diff -r "$WORK/src2" "$WORK/restic-out$WORK/src2"
step "restic forget --prune" "${RS[@]}" forget --keep-last 1 --prune
step "restic snapshots after forget" "${RS[@]}" snapshots --json
[ "$($PY -c 'import json,sys; print(len(json.load(sys.stdin)))' <<<"$LAST_OUT")" = 1 ] || fail "restic lists not 1 snapshot: $LAST_OUT"
step "restic check after prune" "${RS[@]}" check --read-data
expect_in "no errors were found"

# --- s3fs (s3fs-fuse: the bucket mounted as a folder) --------------------------------------------
# Files written through the mount are checked through the aws cli and through a second mount
# (so reads come from the server, not s3fs's caches); rename and rm -r through the mount.
if [ -c /dev/fuse ]; then
	echo "== s3fs ($(s3fs --version 2>/dev/null | head -n1))"
	B=s3fs-bucket
	MNT=$WORK/mnt
	mkdir -p "$MNT"
	printf '%s:%s\n' "$ACCESS" "$SECRET" >"$WORK/s3fs-passwd"
	chmod 600 "$WORK/s3fs-passwd"
	FS=(s3fs "$B" "$MNT" -o passwd_file="$WORK/s3fs-passwd" -o url="$ENDPOINT" -o use_path_request_style
		-o multipart_size=5 -o stat_cache_expire=1)
	step "s3fs: bucket" "${A[@]}" s3 mb s3://$B
	step "s3fs mount" "${FS[@]}"
	step "s3fs: write a file" cp "$SRC/big.bin" "$MNT/big.bin"
	step "s3fs: write a tree" cp -r "$SRC/tree" "$MNT/tree"
	step "s3fs unmount" fusermount -u "$MNT"
	step "s3fs: the object through the aws cli" "${A[@]}" s3 cp "s3://$B/big.bin" "$WORK/s3fs-big.bin"
	same_file "$SRC/big.bin" "$WORK/s3fs-big.bin"
	step "s3fs mount again" "${FS[@]}"
	step "s3fs: the tree read back" diff -r "$SRC/tree" "$MNT/tree"
	step "s3fs: the file read back" cmp "$SRC/big.bin" "$MNT/big.bin"
	step "s3fs: rename" mv "$MNT/tree/a.txt" "$MNT/tree/renamed.txt"
	step "s3fs: rm -r" rm -r "$MNT/tree/sub dir"
	step "s3fs unmount (second)" fusermount -u "$MNT"
	step "s3fs: the keys left" "${A[@]}" s3 ls --recursive "s3://$B"
	expect_in "tree/renamed.txt"
	expect_in "tree/ünïcode/日本.txt"
	expect_not_in "tree/a.txt"
	expect_not_in "sub dir"
	step "s3fs: renamed object" "${A[@]}" s3 cp "s3://$B/tree/renamed.txt" "$WORK/s3fs-renamed.txt"
	same_file "$SRC/tree/a.txt" "$WORK/s3fs-renamed.txt"
else
	echo "== s3fs: skipped (no /dev/fuse on this machine)"
fi

# --- old clients: s3cmd with SigV2 ----------------------------------------------------------
echo "== s3cmd with signature_v2 = True"
sed -i 's/^signature_v2 = False/signature_v2 = True/' "$CFG"
B=s3cmd-v2-bucket
step "s3cmd v2 mb" "${S[@]}" mb s3://$B
step "s3cmd v2 put" "${S[@]}" put "$SRC/mid.bin" "s3://$B/v2/mid.bin"
step "s3cmd v2 get" "${S[@]}" get --force "s3://$B/v2/mid.bin" "$WORK/v2.bin"
same_file "$SRC/mid.bin" "$WORK/v2.bin"
step "s3cmd v2 ls" "${S[@]}" ls "s3://$B/v2/"
expect_in "mid.bin"
step "s3cmd v2 del" "${S[@]}" del "s3://$B/v2/mid.bin"
step "s3cmd v2 rb" "${S[@]}" rb "s3://$B"

kill -0 "$SERVER_PID" 2>/dev/null || fail "the server died"
echo "clients.sh: all $STEP steps passed"
