#!/usr/bin/env bash
# tools/demo.sh — the README's first command: install what is missing, build, and generate.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPHRUN_BUILD_DIR:-$root/build}"

bash "$root/tools/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target graphrun

model="$build/teaching.gguf"
[[ -f "$model" ]] || "$build/graphrun" make-model "$model"
echo "== the execution plan (first lines) =="
"$build/graphrun" -m "$model" --dump-plan --batch 5 | head -n 12
echo "== greedy generation from token ids 1 5 9 =="
"$build/graphrun" -m "$model" --tokens 1,5,9 -n 16
