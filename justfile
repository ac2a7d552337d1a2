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

# Long-term memory speed (recall latency on 100K + 100K, ingest and embedding throughput).
bench-long-term:
    cargo run --release -p memory-cli -- bench long-term

# LoCoMo retrieval quality, LLM-free, beside a BM25 baseline (data is read in place).
eval-locomo data="../shared/data/locomo/locomo10.json":
    cargo run --release -p memory-cli -- eval locomo --data {{data}}

# Fetch the local embedding model once (the test command does this too).
setup-model:
    ./scripts/setup-model.sh

# Make the int8 model and fetch ONNX Runtime for `[memory] embedder = "local-int8"` (the test
# command does this too).
setup-onnx:
    ./scripts/setup-onnx.sh

# The local embedders side by side on the same LoCoMo turns (texts/s, vector agreement).
bench-embedders data="../shared/data/locomo/locomo10.json":
    cargo run --release -p memory-cli -- bench embedders --locomo {{data}}

# End to end against a real local OpenAI-compatible server (llama-cpp-python + SmolLM2 from
# PyPI; the first run builds llama.cpp): ingest, recall --answer and compaction.
llm-smoke:
    ./scripts/llm-smoke.sh
