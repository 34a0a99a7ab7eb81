#!/usr/bin/env bash
# tools/demo.sh — the README's first command: install what is missing, build, and generate.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPHRUN_BUILD_DIR:-$root/build}"

bash "$root/tools/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target graphrun

# Until a trained model ships in models/, the default model is one the build makes itself.
model="$build/teaching.gguf"
[[ -f "$model" ]] || "$build/graphrun" make-model "$model"
echo "== the execution plan of $model for 5 tokens (first lines) =="
"$build/graphrun" -m "$model" --dump-plan --batch 5 > "$build/teaching-plan.txt"
head -n 12 "$build/teaching-plan.txt"
echo "... (whole plan: $build/teaching-plan.txt)"
echo "== generation (random weights, so the words are random too) =="
"$build/graphrun" -m "$model" -p "Once upon a time" -n 32 --seed 1

# With the shared test data beside the checkout, a real trained TinyStories model too.
stories="$root/../shared/models/stories260K.gguf"
if [[ -f "$stories" ]]; then
  echo "== $stories, greedy =="
  "$build/graphrun" -m "$stories" -p "Once upon a time" -n 100 --temp 0
fi
