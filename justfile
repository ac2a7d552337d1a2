# Common tasks. `just --list` shows them.

export CARGO_TARGET_DIR := env_var_or_default("CARGO_TARGET_DIR", env_var("HOME") + "/.cache/memory-target")

# Run the demo on the embedded default (no server needed).
demo:
    cargo run -p memory-cli -- demo

# The whole test suite (what CI runs first).
test:
    ./scripts/test.sh

# Lints as CI runs them.
lint:
    cargo clippy --workspace --all-targets -- -D warnings
    cargo fmt --all --check

# Everything CI runs.
ci:
    bash .ci/run

# Benchmarks of the SQLite adapter (results go in docs/benchmarks.md).
bench:
    cargo bench -p memory-sqlite --bench sqlite
    cargo bench -p memory-sqlite --bench search_latency
