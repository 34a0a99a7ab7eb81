#!/usr/bin/env bash
# tools/train/run.sh — remake the shipped model from nothing: corpus, tokenizer, training, export,
# Q8_0. About 40 minutes on 2 cores; not part of the build or CI. Seeded, so a rerun on the same
# kind of machine trains the same model.
#   bash tools/train/run.sh [OUT]     (OUT: working folder, default build-train/)
# Writes models/kjv-q8_0.gguf and models/kjv-q8_0.expected.json (the test's PyTorch tokens).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/build-train}"
build="${GRAPHRUN_BUILD_DIR:-$root/build}"
python=/usr/bin/python3  # Debian's python, which has Debian's torch and sentencepiece

bash "$root/tools/install-deps.sh" --train
mkdir -p "$out"
"$python" "$root/tools/train/train.py" --out "$out" 2>&1 | tee "$out/train.out"
"$python" "$root/tools/train/export.py" --dir "$out" --gguf "$out/kjv-f32.gguf" \
    --expected "$root/models/kjv-q8_0.expected.json"

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target graphrun
"$build/graphrun" quantize "$out/kjv-f32.gguf" "$root/models/kjv-q8_0.gguf" q8_0
"$build/graphrun" -m "$root/models/kjv-q8_0.gguf" -p "And God said" -n 64 --temp 0.8 --seed 1
