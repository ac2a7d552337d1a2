#!/usr/bin/env bash
# Prints the URL of a PostgreSQL server with pgvector for the tests, starting one when needed.
#
# - MEMORY_POSTGRES_URL set: that server is used as is (nothing is installed).
# - Otherwise: PostgreSQL 16 with pgvector from the `pgserver` PyPI wheel (Debian's
#   PostgreSQL has no pgvector), unpacked once into ~/.cache/memory-pg, initialised with
#   trust auth for loopback only, and started on 127.0.0.1:${MEMORY_PG_PORT:-5433} as a
#   dedicated user (PostgreSQL refuses to run as root). Idempotent: a running server is
#   reused. Its data lives in ~/.cache/memory-pg/data (MEMORY_PG_DATA to choose another
#   directory); the tests make and drop their own schemas, and never touch any other server
#   on this machine.
#
# `setup-postgres.sh restart` and `setup-postgres.sh stop` restart or stop the server of
# MEMORY_PG_DATA / MEMORY_PG_PORT (the restart test runs a private one this way).
set -euo pipefail

action="${1:-start}"
if [[ "$action" == start && -n "${MEMORY_POSTGRES_URL:-}" ]]; then
  echo "$MEMORY_POSTGRES_URL"
  exit 0
fi

root="${MEMORY_PG_DIR:-$HOME/.cache/memory-pg}"
port="${MEMORY_PG_PORT:-5433}"
version=0.1.4
install="$root/pgserver-$version"
bin="$install/pgserver/pginstall/bin"
data="${MEMORY_PG_DATA:-$root/data}"
log="$data.log"
user=memorypg

mkdir -p "$root"
if [[ ! -x "$bin/postgres" ]]; then
  echo "setup-postgres: fetching pgserver $version (PostgreSQL 16 + pgvector) from PyPI (once)..." >&2
  tmp="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps "pgserver==$version" -d "$tmp" >&2
  rm -rf "$install"
  mkdir -p "$install"
  python3 -m zipfile -e "$tmp"/pgserver-*.whl "$install" >&2
  rm -rf "$tmp"
  chmod -R a+rX "$install"
  chmod a+x "$bin"/*
fi

run_as() {
  if [[ "$(id -u)" == 0 ]]; then
    if ! id "$user" >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    fi
    touch "$log"
    chown -R "$user" "$data" "$log" 2>/dev/null || true
    su -s /bin/bash "$user" -c "$*"
  else
    bash -c "$*"
  fi
}

case "$action" in
  restart | stop)
    run_as "'$bin/pg_ctl' -D '$data' -l '$log' -w -t 60 -m fast \
      -o \"-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off\" $action >/dev/null"
    exit 0
    ;;
  start) ;;
  *)
    echo "usage: setup-postgres.sh [start|restart|stop]" >&2
    exit 2
    ;;
esac

if ! "$bin/pg_isready" -h 127.0.0.1 -p "$port" -q 2>/dev/null; then
  mkdir -p "$data"
  # The installation directory must be reachable by the server's user.
  chmod a+rx "$HOME" "$HOME/.cache" "$root" 2>/dev/null || true
  if [[ ! -f "$data/PG_VERSION" ]]; then
    run_as "'$bin/initdb' -D '$data' -A trust -U postgres --no-sync >/dev/null"
  fi
  run_as "'$bin/pg_ctl' -D '$data' -l '$log' -w -t 60 \
    -o \"-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off\" start >/dev/null"
fi
PGOPTIONS="-c client_min_messages=warning" "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qtAc "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
echo "postgres://postgres@127.0.0.1:$port/postgres"
