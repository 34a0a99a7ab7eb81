#!/usr/bin/env bash
# tools/test.sh — the README's second command (and CI's): install what is missing, build with
# warnings as errors, set up the llama.cpp reference (node-llama-cpp from npm), run every test;
# then build the suite again with AddressSanitizer + UndefinedBehaviorSanitizer and run it there;
# then build the libFuzzer targets with clang and run each for 60 s on its seeds (docs/security.md).
# GRAPHRUN_NO_SANITIZE=1 skips the second pass and GRAPHRUN_NO_FUZZ=1 the third (for a quick local run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPHRUN_BUILD_DIR:-$root/build-test}"
jobs="$(nproc)"

bash "$root/tools/install-deps.sh" --parity
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGRAPHRUN_WERROR=ON >/dev/null
cmake --build "$build" -j"$jobs"

# The llama.cpp reference for parity tests; tests skip (and say so) only if this could not install.
if parity_dir="$(bash "$root/tools/parity-setup.sh" "$build/parity")"; then
  export GRAPHRUN_PARITY_DIR="$parity_dir"
else
  echo "test: the llama.cpp reference (node-llama-cpp) could not be installed; parity tests will skip" >&2
fi

# The official openai npm client for the end-to-end server test, which skips (and says so) without it.
if openai_dir="$(bash "$root/tools/openai-setup.sh" "$build/openai")"; then
  export GRAPHRUN_OPENAI_DIR="$openai_dir"
else
  echo "test: the openai npm client could not be installed; the ServerOpenAiClient test will skip" >&2
fi

echo "== tests (Release, -Werror) =="
(cd "$build" && ctest --output-on-failure -j"$jobs")

if [[ "${GRAPHRUN_NO_SANITIZE:-0}" != 1 ]]; then
  echo "== tests again under ASan + UBSan =="
  asan="$build-asan"
  cmake -S "$root" -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHRUN_WERROR=ON -DGRAPHRUN_SANITIZE=ON >/dev/null
  cmake --build "$asan" -j"$jobs" --target graphrun graphrun_tests
  # The llama.cpp comparisons already ran above; here the sanitizers look at graphrun's own code.
  (cd "$asan" && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$jobs" -E "LlamaCpp|ParityReference")
fi

if [[ "${GRAPHRUN_NO_FUZZ:-0}" != 1 ]]; then
  echo "== fuzz targets, ${GRAPHRUN_FUZZ_SECONDS:-60} s each under ASan + UBSan =="
  # Any crash, sanitizer report, leak or timeout fails the run (and so CI); tools/fuzz.sh says which input.
  GRAPHRUN_FUZZ_BUILD_DIR="$build-fuzz" bash "$root/tools/fuzz.sh" all "${GRAPHRUN_FUZZ_SECONDS:-60}"
fi
