#!/usr/bin/env bash
# tools/fuzz.sh — build the libFuzzer targets with clang (ASan + UBSan) and run them on their corpora.
#
#   bash tools/fuzz.sh TARGET SECONDS [libFuzzer options...]   one target: gguf, graph, tokenizer, sampler, server
#   bash tools/fuzz.sh all SECONDS                             every target, as many at once as there are cores
#   bash tools/fuzz.sh build [CMAKE_TARGET...]                 build the targets and run nothing; named
#                                                              CMake targets (tests) are built in the same tree
#
# The build is clang with ASan + UBSan over the whole tree (GRAPHRUN_FUZZ). CI's sanitizer pass is
# that same build: tools/test.sh builds its test executables here with `build`, runs them, then the
# fuzzers, so the library is compiled once for both.
#
# The seeds are fuzz/corpus/TARGET (small valid inputs, in the repo); what the fuzzer finds new goes
# to BUILD/corpus/TARGET, never into the repo. Any crash, sanitizer report, leak, timeout (30 s for
# one input) or memory blow-up (2 GiB) fails the run; its input is saved in BUILD/findings/TARGET/
# and named in the output. To keep a finding as a regression seed, fix the bug and copy the input
# into fuzz/corpus/TARGET/. BUILD is $GRAPHRUN_FUZZ_BUILD_DIR, default build-fuzz in the checkout.
# The last line of each run says: runs, seconds, coverage (cov: edges, ft: features), corpus size.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPHRUN_FUZZ_BUILD_DIR:-$root/build-fuzz}"
targets=(gguf graph tokenizer sampler server)
# A target's libFuzzer binary: TARGET_fuzz, but for the server's request parsing.
binary() { [[ "$1" == server ]] && echo server_request_fuzz || echo "$1_fuzz"; }

usage() {
  echo "usage: bash tools/fuzz.sh {$(IFS='|'; echo "${targets[*]}")|all} SECONDS [libFuzzer options]" >&2
  echo "       bash tools/fuzz.sh build [CMAKE_TARGET...]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
extra_targets=()
if [[ "$1" == build ]]; then
  which=build seconds=0 extra_targets=("${@:2}")
  set --
else
  [[ $# -ge 2 ]] || usage
  which="${1%_fuzz}" seconds="$2"
  [[ "$which" == server_request ]] && which=server
  shift 2
fi
[[ "$seconds" =~ ^[0-9]+$ ]] || usage
if [[ "$which" == all || "$which" == build ]]; then
  selected=("${targets[@]}")
else
  [[ " ${targets[*]} " == *" $which "* ]] || usage
  selected=("$which")
fi

bash "$root/tools/install-deps.sh" --fuzz
export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-$(command -v ccache || true)}"
# The tests are configured in only when asked for (they need GoogleTest); a tree that has them keeps them.
tests=()
if (( ${#extra_targets[@]} > 0 )); then
  tests=(-DGRAPHRUN_BUILD_TESTS=ON)
elif [[ ! -f "$build/CMakeCache.txt" ]]; then
  tests=(-DGRAPHRUN_BUILD_TESTS=OFF)
fi
# RelWithDebInfo with line tables only (-g1): reports name file and line, at a lighter build than -g.
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DGRAPHRUN_FUZZ=ON -DGRAPHRUN_WERROR=ON \
  "${tests[@]}" >/dev/null
binaries=()
for t in "${selected[@]}"; do binaries+=("$(binary "$t")"); done
cmake --build "$build" -j"$(nproc)" --target "${binaries[@]}" "${extra_targets[@]}"
[[ "$which" == build ]] && exit 0

max_len() {
  case "$1" in
    gguf) echo 65536 ;;
    graph) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

# One target; its log is BUILD/logs/TARGET.log, its summary one line on stdout.
run_one() {
  local t="$1" work="$build/corpus/$1" findings="$build/findings/$1" log="$build/logs/$1.log"
  mkdir -p "$work" "$findings" "$build/logs"
  local status=0 dict=()
  [[ -f "$root/fuzz/$t.dict" ]] && dict=("-dict=$root/fuzz/$t.dict")  # the words of its inputs, if it has one
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:abort_on_error=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$build/$(binary "$t")" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -max_len="$(max_len "$t")" \
      -print_final_stats=1 -artifact_prefix="$findings/" "${dict[@]}" "${@:2}" "$work" "$root/fuzz/corpus/$t" >"$log" 2>&1 || status=$?
  local last runs
  last="$(grep -E '^#[0-9]+' "$log" | tail -1 || true)"
  runs="$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')"
  if [[ $status -ne 0 ]]; then
    echo "fuzz $t: FAILED (exit $status) after ${runs} runs; see $log" >&2
    grep -E 'ERROR|runtime error|undocumented|Test unit written|SUMMARY' "$log" | head -20 >&2 || true
    return 1
  fi
  echo "fuzz $t: ${runs} runs in ${seconds} s; last status: ${last:-none}"
}

failed=0
jobs="$(nproc)"
pids=() names=()
for t in "${selected[@]}"; do
  run_one "$t" "$@" &
  pids+=($!) names+=("$t")
  if (( ${#pids[@]} >= jobs )); then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}") names=("${names[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit "$failed"
