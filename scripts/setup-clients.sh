#!/usr/bin/env bash
# Readies the client packages for their suites (which scripts/test.sh then runs against a
# real `memory serve`): the `memory` binary, the TypeScript package (clients/typescript:
# installed, ESLint, tsc, built) and the example agent built on it, the Python package
# (clients/python: installed with its OpenAI Agents SDK and LangGraph extras, ruff, mypy, the
# generated sync client checked) and Chromium for the inspector's browser test. Node.js 20+ and npm come from the machine, or from
# Debian's `nodejs` and `npm` packages when missing, the npm packages from the npm registry
# (pinned by each package-lock.json); Python 3.10+ from the machine, its packages from PyPI
# into a virtualenv outside the repository (MEMORY_PYTHON_VENV, default
# ~/.cache/memory-python/venv; pinned by clients/python/constraints.txt). The inspector's
# browser test (clients/python/tests/test_inspector.py) uses Debian's `chromium`, installed
# when missing, driven by Playwright from PyPI (no browser download).
# The server binary is cargo's debug build (`cargo build --workspace --bins`), or MEMORY_BIN.
# Prints the Python virtualenv's path on its last line (everything else goes to stderr).
set -euo pipefail
cd "$(dirname "$0")/.."
exec 3>&1 1>&2
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memory-target}"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "installing Node.js and npm from Debian's packages (once)..." >&2
  apt-get update -qq >&2 && apt-get install -y -qq nodejs npm >&2
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if (( node_major < 20 )); then
  echo "Node.js 20 or later is needed; found $(node --version)" >&2
  exit 1
fi

if [[ -z "${MEMORY_BIN:-}" ]]; then
  cargo build --workspace --bins
fi

npm_quiet=(--no-audit --no-fund --loglevel=error)
(
  cd clients/typescript
  npm ci "${npm_quiet[@]}"
  npm run --silent lint
  npm run --silent typecheck
  npm run --silent build
)
(
  cd examples/typescript-agent
  npm ci "${npm_quiet[@]}"
  npm run --silent build
)

# The inspector's browser test drives Debian's Chromium (headless) through Playwright.
if [[ -z "${MEMORY_CHROMIUM:-}" ]] && ! command -v chromium >/dev/null 2>&1; then
  echo "installing Chromium from Debian's packages (once)..." >&2
  apt-get update -qq >&2 && apt-get install -y -qq chromium >&2
fi

venv="${MEMORY_PYTHON_VENV:-$HOME/.cache/memory-python/venv}"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  -c clients/python/constraints.txt -e "clients/python[test,openai-agents,langgraph]"
(
  cd clients/python
  "$venv/bin/ruff" check . ../../examples/python-agent ../../scripts/quantize-onnx.py
  "$venv/bin/ruff" format --check . ../../examples/python-agent ../../scripts/quantize-onnx.py
  "$venv/bin/mypy"
  "$venv/bin/python" scripts/generate_sync.py --check
)
echo "$venv" >&3
