#!/usr/bin/env bash
# tools/install-deps.sh — installs the Debian packages graphrun needs, only those missing.
# Usage: bash tools/install-deps.sh [--parity]   (--parity adds Node.js for the llama.cpp reference)
set -euo pipefail

packages=(g++ cmake make libeigen3-dev libtbb-dev libgtest-dev libgmock-dev libbenchmark-dev
          nlohmann-json3-dev libcli11-dev libicu-dev)
if [[ "${1:-}" == "--parity" ]] && ! command -v node >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
