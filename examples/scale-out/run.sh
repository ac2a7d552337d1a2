#!/usr/bin/env bash
# Scale-out, shown: two `memory serve` processes and one `memory worker` on one PostgreSQL
# (started by scripts/setup-postgres.sh when MEMORY_POSTGRES_URL is not set), under a
# bounded load on loopback, with one server killed (SIGKILL) and restarted. Prints the
# numbers and fails when an acknowledged write is missing or doubled, or a job was lost or
# ran twice. Arguments go to the example: --seconds N (default 20), --clients N (default 8).
set -euo pipefail
cd "$(dirname "$0")/../.."
MEMORY_POSTGRES_URL="$(./scripts/setup-postgres.sh)"
export MEMORY_POSTGRES_URL
cargo build --quiet --release -p memory-cli -p scale-out
target="${CARGO_TARGET_DIR:-target}"
"$target/release/scale-out" --memory "$target/release/memory" "$@"
