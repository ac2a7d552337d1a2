#!/usr/bin/env bash
# Prints a directory holding the official MCP Python SDK (`mcp`, from PyPI), installing it
# there once. The MCP tests drive `memory mcp` with it: a client nobody here wrote.
set -euo pipefail
dir="${MEMORY_MCP_CLIENT_DIR:-$HOME/.cache/memory-mcp-client}"
if ! PYTHONPATH="$dir" python3 -c "import mcp.client.stdio" 2>/dev/null; then
  echo "setup-mcp-client: installing the mcp Python SDK from PyPI (once)..." >&2
  python3 -m pip install --quiet --disable-pip-version-check --target "$dir" "mcp>=1.9" >&2
fi
echo "$dir"
