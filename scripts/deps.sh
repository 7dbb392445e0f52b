#!/usr/bin/env bash
# deps.sh: installs the Debian packages cairn needs (idempotent: does nothing when they are
# all present). Run as root (or with sudo available).
#   scripts/deps.sh run     what `make run` needs: the compiler and the libraries cairn links
#   scripts/deps.sh check   the run set, plus what `make check` and CI use: clang and
#                           libFuzzer, pytest and boto3, the clients the integration tests
#                           drive (aws cli, s3cmd, rclone, restic, s3fs, chromium, curl) and
#                           Node.js with npm (the JS SDK tests, s3rver)
set -euo pipefail
run_pkgs=(
	build-essential pkg-config
	libssl-dev libisal-dev libxxhash-dev libexpat1-dev libjansson-dev liburing-dev
	libcurl4-openssl-dev zlib1g-dev
)
check_pkgs=(
	clang libclang-rt-14-dev libfuzzer-14-dev
	python3 python3-boto3 python3-pytest awscli s3cmd rclone restic s3fs chromium curl
)
case "${1:-}" in
run) pkgs=("${run_pkgs[@]}") ;;
check) pkgs=("${run_pkgs[@]}" "${check_pkgs[@]}") ;;
*)
	echo "usage: scripts/deps.sh run|check" >&2
	exit 2
	;;
esac
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps.sh: installing ${missing[*]}" >&2
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Node.js and npm come with the machine image (Debian's npm would conflict with it); only
# when absent, fall back to Debian's.
if [ "$1" = check ] && ! command -v npm >/dev/null 2>&1; then
	$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
