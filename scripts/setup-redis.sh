#!/usr/bin/env bash
# Prints the URL of a Redis server for the tests, starting one when needed.
#
# - MEMORY_REDIS_URL set: that server is used as is (nothing is installed).
# - Otherwise: Debian's redis-server (installed with apt-get when missing), started on
#   127.0.0.1:${MEMORY_REDIS_PORT:-6380} with an append-only file fsync'd on every write
#   (`appendfsync always`: an acknowledged write survives a crash), its data in
#   ~/.cache/memory-redis (MEMORY_REDIS_DATA to choose another directory). Idempotent: a
#   running server is reused. The tests use key prefixes of their own and delete them; no
#   other server on this machine is touched.
#
# `setup-redis.sh stop` stops the server of MEMORY_REDIS_DATA / MEMORY_REDIS_PORT.
set -euo pipefail

action="${1:-start}"
if [[ "$action" == start && -n "${MEMORY_REDIS_URL:-}" ]]; then
  echo "$MEMORY_REDIS_URL"
  exit 0
fi

port="${MEMORY_REDIS_PORT:-6380}"
data="${MEMORY_REDIS_DATA:-$HOME/.cache/memory-redis}"
url="redis://127.0.0.1:$port/"

if ! command -v redis-server >/dev/null; then
  echo "setup-redis: installing redis-server (Debian package, once)..." >&2
  if [[ "$(id -u)" == 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server >&2
  else
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server >&2
  fi
fi

running() { redis-cli -p "$port" ping >/dev/null 2>&1; }

case "$action" in
  stop)
    if running; then redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; fi
    exit 0
    ;;
  start) ;;
  *) echo "usage: $0 [start|stop]" >&2; exit 2 ;;
esac

if ! running; then
  mkdir -p "$data"
  redis-server --bind 127.0.0.1 --port "$port" --dir "$data" \
    --appendonly yes --appendfsync always --save '' \
    --daemonize yes --logfile "$data/redis.log" --pidfile "$data/redis.pid" >&2
  for _ in $(seq 1 50); do
    running && break
    sleep 0.1
  done
  running || { echo "setup-redis: redis-server did not start (see $data/redis.log)" >&2; exit 1; }
fi
echo "$url"
