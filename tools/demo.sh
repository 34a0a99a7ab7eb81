#!/usr/bin/env bash
# tools/demo.sh — the README's first command: install what is missing, build, and generate text
# with the model graphrun ships (models/kjv-q8_0.gguf, a small Llama trained on the King James Bible).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPHRUN_BUILD_DIR:-$root/build}"

bash "$root/tools/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target graphrun

model="$root/models/kjv-q8_0.gguf"
echo "== the execution plan of $model for 4 tokens (first lines) =="
"$build/graphrun" -m "$model" --dump-plan --batch 4 > "$build/kjv-plan.txt"
head -n 12 "$build/kjv-plan.txt"
echo "... (whole plan: $build/kjv-plan.txt)"
echo "== generation: temperature 0.8, streamed as it is sampled =="
"$build/graphrun" -m "$model" -p "And God said" -n 120 --temp 0.8 --seed 7

# With the shared test data beside the checkout, the TinyStories model too.
stories="$root/../shared/models/stories260K.gguf"
if [[ -f "$stories" ]]; then
  echo "== $stories, greedy =="
  "$build/graphrun" -m "$stories" -p "Once upon a time" -n 100 --temp 0
fi
