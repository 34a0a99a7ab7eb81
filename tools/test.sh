#!/usr/bin/env bash
# tools/test.sh — the README's second command (and CI's): install what is missing, set up the llama.cpp
# reference (node-llama-cpp from npm), the openai client and the Vercel AI SDK, build with warnings as errors, run every
# test; then build the tests again with clang, AddressSanitizer + UndefinedBehaviorSanitizer, in the tree
# of the libFuzzer targets, and run all but the parity and docs labels there; then run each fuzz target
# for 30 s on its seeds (docs/security.md). The time of each stage is printed at the end, also when a stage fails.
# GRAPHRUN_NO_SANITIZE=1 skips the second pass and GRAPHRUN_NO_FUZZ=1 the third (for a quick local run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPHRUN_BUILD_DIR:-$root/build-test}"
jobs="$(nproc)"

# ---- stage times, printed on exit whatever the outcome ----
stages=(deps build "tests (Release)" "sanitizer build" "sanitizer tests" fuzz)
declare -A took=()
current="" current_start=0
begin() { current="$1" current_start=$SECONDS; }
end() { took[$current]="$(minutes $((SECONDS - current_start)))"; current=""; }
skip() { took[$1]="skipped"; }
minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
print_times() {
  local status=$?
  [[ -n "$current" ]] && took[$current]="$(minutes $((SECONDS - current_start))) (failed)"
  echo "== stage times =="
  for s in "${stages[@]}"; do printf '  %-16s %s\n' "$s" "${took[$s]:-not reached}"; done
  printf '  %-16s %s\n' total "$(minutes "$SECONDS")"
  exit "$status"
}
trap print_times EXIT
SECONDS=0

begin deps
bash "$root/tools/install-deps.sh" --parity
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
# The Vercel AI SDK (with zod and ajv) for the ServerAiSdk test, which skips (and says so) without it.
if ai_sdk_dir="$(bash "$root/tools/ai-sdk-setup.sh" "$build/ai_sdk")"; then
  export GRAPHRUN_AI_SDK_DIR="$ai_sdk_dir"
else
  echo "test: the Vercel AI SDK could not be installed; the ServerAiSdk test will skip" >&2
fi
end

begin build
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGRAPHRUN_WERROR=ON >/dev/null
cmake --build "$build" -j"$jobs"
end

begin "tests (Release)"
echo "== tests (Release, -Werror) =="
(cd "$build" && ctest --output-on-failure -j"$jobs")
end

if [[ "${GRAPHRUN_NO_SANITIZE:-0}" != 1 ]]; then
  # The llama.cpp comparisons (label parity: the long sweeps) already ran above; here the sanitizers
  # look at graphrun's own code, so only the other parts' executables (tests/<part>/) are built.
  targets=(graphrun)
  for dir in "$root"/tests/*/; do
    part="$(basename "$dir")"
    # parity: the long llama.cpp sweeps; docs: text compared with text, no memory to watch.
    if [[ "$part" != parity && "$part" != docs ]] && compgen -G "$dir*_test.cpp" >/dev/null; then
      targets+=("graphrun_tests_$part")
    fi
  done
  begin "sanitizer build"
  echo "== ASan + UBSan build (clang, the fuzz targets' tree): ${targets[*]} =="
  # One clang tree, instrumented for the fuzzers too (tools/fuzz.sh build): the tests below and the
  # fuzz stage after them run the same compiled library, which is built once.
  asan="$build-asan"
  GRAPHRUN_FUZZ_BUILD_DIR="$asan" bash "$root/tools/fuzz.sh" build "${targets[@]}"
  end
  begin "sanitizer tests"
  echo "== tests again under ASan + UBSan (all but labels parity and docs) =="
  (cd "$asan" && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$jobs" -LE 'parity|docs')
  end
else
  skip "sanitizer build"
  skip "sanitizer tests"
fi

if [[ "${GRAPHRUN_NO_FUZZ:-0}" != 1 ]]; then
  begin fuzz
  fuzz_seconds="${GRAPHRUN_FUZZ_SECONDS:-30}"
  echo "== fuzz targets, $fuzz_seconds s each under ASan + UBSan =="
  # Any crash, sanitizer report, leak or timeout fails the run (and so CI); tools/fuzz.sh says which input.
  # The tree of the sanitizer pass when it ran (its fuzz targets are built), else a tree of their own.
  fuzz_build="$build-asan"
  [[ "${GRAPHRUN_NO_SANITIZE:-0}" == 1 ]] && fuzz_build="$build-fuzz"
  GRAPHRUN_FUZZ_BUILD_DIR="$fuzz_build" bash "$root/tools/fuzz.sh" all "$fuzz_seconds"
  end
else
  skip fuzz
fi
