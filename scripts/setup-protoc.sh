#!/usr/bin/env bash
# Makes sure `protoc` (the Protocol Buffers compiler) is installed: LanceDB's build needs it.
# Installs Debian's protobuf-compiler when it is missing. Prints the path of protoc.
set -euo pipefail
if ! command -v protoc >/dev/null 2>&1; then
  echo "setup-protoc: installing protobuf-compiler (Debian package, once)..." >&2
  sudo=""
  if [ "$(id -u)" != "0" ]; then sudo="sudo"; fi
  $sudo apt-get install -y protobuf-compiler >&2 || {
    $sudo apt-get update >&2 && $sudo apt-get install -y protobuf-compiler >&2
  }
fi
command -v protoc
