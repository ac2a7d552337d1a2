#!/usr/bin/env bash
# Prints a directory holding `openapi-spec-validator` (an independent OpenAPI validator, from
# PyPI), installing it there once. The server's tests validate the generated document with
# it: `PYTHONPATH=<dir> python3 -m openapi_spec_validator openapi.json`.
set -euo pipefail
dir="${MEMORY_OPENAPI_VALIDATOR_DIR:-$HOME/.cache/memory-openapi-validator}"
if ! PYTHONPATH="$dir" python3 -c "import openapi_spec_validator" 2>/dev/null; then
  echo "setup-openapi-validator: installing openapi-spec-validator from PyPI (once)..." >&2
  python3 -m pip install --quiet --disable-pip-version-check --target "$dir" "openapi-spec-validator>=0.7" >&2
fi
echo "$dir"
