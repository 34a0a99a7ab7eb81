#!/usr/bin/env bash
# tools/test.sh — the README's second command (and CI's): install what is missing, build with
# warnings as errors, set up the llama.cpp reference (node-llama-cpp from npm), run every test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPHRUN_BUILD_DIR:-$root/build-test}"

bash "$root/tools/install-deps.sh" --parity
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGRAPHRUN_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"

# The llama.cpp reference for parity tests; tests skip (and say so) only if this could not install.
if parity_dir="$(bash "$root/tools/parity-setup.sh" "$build/parity")"; then
  export GRAPHRUN_PARITY_DIR="$parity_dir"
else
  echo "test: the llama.cpp reference (node-llama-cpp) could not be installed; parity tests will skip" >&2
fi

cd "$build"
ctest --output-on-failure -j"$(nproc)"
