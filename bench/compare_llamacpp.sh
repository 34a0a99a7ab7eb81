#!/bin/bash
# bench/compare_llamacpp.sh — graphrun bench beside llama.cpp's llama-bench (and ik_llama.cpp's, with
# its load-time repacking -rtr 1), alternated on the same files, and the ratios.
#
#   bench/compare_llamacpp.sh --llama-bench PATH [--ik-llama-bench PATH] [--graphrun PATH]
#                             [--graphrun-baseline PATH] [-t 1,2] [-p 512] [-n 128] [-d 1024] [-r 5]
#                             [--rounds 2] MODEL.gguf...
#
# --graphrun-baseline adds a second graphrun binary (an older build) as one more tool, so the same
# alternation gives the before/after of a change; it may replace --llama-bench.
# Each round runs, for every model, each tool once over the same tests (pp P and tg N at each thread
# count; tg N after D cached tokens for each -d), the tools in a different order each round, so a
# machine that speeds up or slows down during the call affects all of them alike. Printed: the median
# t/s of each tool over the rounds and the median of the per-round ratios graphrun / other.
# ik_llama.cpp's llama-bench has no -d: its depth test is `-gp D,N` (N tokens timed after a D-token
# prompt), which measures the same thing.
#
# graphrun does not depend on llama.cpp: the binaries are arguments (prebuilt ones are described in
# ../shared/tools/README.md; build-llama-bench.sh there builds them for the machine at hand).
# Needs python3 for reading the JSON.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
graphrun="$here/../build/graphrun"
llama="" ik="" baseline=""
threads=2 prompt=512 gen=128 depths="" reps=5 rounds=2
models=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --llama-bench) llama=$2; shift 2 ;;
    --ik-llama-bench) ik=$2; shift 2 ;;
    --graphrun) graphrun=$2; shift 2 ;;
    --graphrun-baseline) baseline=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    -p) prompt=$2; shift 2 ;;
    -n) gen=$2; shift 2 ;;
    -d) depths=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    -*) echo "compare_llamacpp.sh: unknown option '$1'" >&2; usage 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ -n "$llama$baseline" ] || { echo "compare_llamacpp.sh: give --llama-bench PATH (or --graphrun-baseline PATH)" >&2; exit 2; }
[ ${#models[@]} -gt 0 ] || { echo "compare_llamacpp.sh: give at least one MODEL.gguf" >&2; exit 2; }
for exe in "$graphrun" ${llama:+"$llama"} ${ik:+"$ik"} ${baseline:+"$baseline"}; do
  [ -x "$exe" ] || { echo "compare_llamacpp.sh: '$exe' is not an executable" >&2; exit 2; }
done
for m in "${models[@]}"; do [ -r "$m" ] || { echo "compare_llamacpp.sh: cannot read '$m'" >&2; exit 2; }; done

out=$(mktemp -d /tmp/compare_llamacpp.XXXXXX)
trap 'rm -rf "$out"' EXIT
tools=(graphrun)
[ -n "$baseline" ] && tools+=(baseline)
[ -n "$llama" ] && tools+=(llama)
[ -n "$ik" ] && tools+=(ik)

# One tool, one model, every test: JSON files in $out named <round>.<tool>.<model index>.<n>.json.
run_tool() {
  local round=$1 tool=$2 model=$3 model_index=$4 i=0 exe args
  case $tool in
    graphrun) exe=$graphrun; args=(bench --bandwidth-mib 0) ;;
    baseline) exe=$baseline; args=(bench --bandwidth-mib 0) ;;
    llama) exe=$llama; args=() ;;
    ik) exe=$ik; args=(-rtr 1) ;;
  esac
  local runs=("-p $prompt -n $gen")
  for d in ${depths//,/ }; do
    if [ "$tool" = ik ]; then runs+=("-p 0 -n 0 -gp $d,$gen"); else runs+=("-p 0 -n $gen -d $d"); fi
  done
  for r in "${runs[@]}"; do
    i=$((i + 1))
    # shellcheck disable=SC2086 # $r holds several options on purpose
    local rc=0
    "$exe" "${args[@]}" -m "$model" -t "$threads" $r -r "$reps" -o json \
      >"$out/$round.$tool.$model_index.$i.json" 2>>"$out/$tool.log" || rc=$?
    if [ "$rc" -ne 0 ]; then
      local why="exit status $rc"
      # 132 = SIGILL: a binary built for instructions this CPU lacks (AVX-512 builds on an AVX2 machine)
      [ "$rc" -gt 128 ] && why="killed by SIG$(kill -l $((rc - 128)))"
      [ "$rc" -eq 132 ] && why="$why: '$exe' uses instructions this CPU does not have (built for AVX-512?)"
      echo "compare_llamacpp.sh: $tool failed on $model with '$r' ($why); last lines of its log:" >&2
      tail -5 "$out/$tool.log" >&2
      exit 1
    fi
  done
}

for ((round = 0; round < rounds; round++)); do
  for ((m = 0; m < ${#models[@]}; m++)); do
    for ((k = 0; k < ${#tools[@]}; k++)); do
      tool=${tools[$(((k + round) % ${#tools[@]}))]}
      echo "round $((round + 1))/$rounds: $tool on $(basename "${models[$m]}")" >&2
      run_tool "$round" "$tool" "${models[$m]}" "$m"
    done
  done
done

field() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'; }
simd=$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || { grep -qw avx2 /proc/cpuinfo && echo "AVX2, no AVX-512" || echo "no AVX2"; })
cpu="$(field 'model name') (family $(field 'cpu family') model $(field model), $simd), $(nproc) cores"
python3 - "$out" "$cpu" "${tools[@]}" <<'EOF'
import glob, json, os, statistics, sys
out, cpu, tools = sys.argv[1], sys.argv[2], sys.argv[3:]
names = {"graphrun": "graphrun", "baseline": "graphrun baseline", "llama": "llama.cpp", "ik": "ik_llama.cpp -rtr 1"}
ts = {}  # (model, test, threads) -> tool -> round -> t/s
for path in glob.glob(os.path.join(out, "*.json")):
    rnd, tool = os.path.basename(path).split(".")[:2]
    with open(path) as f:
        for t in json.load(f):
            p, n, d = t["n_prompt"], t["n_gen"], t.get("n_depth", 0)
            if tool == "ik" and p > 0 and n > 0:  # -gp D,N: tg N at depth D
                p, d = 0, p
            test = (f"pp{p}" if n == 0 else f"tg{n}") + (f" @ d{d}" if d else "")
            key = (os.path.basename(t["model_filename"]), test, t["n_threads"])
            ts.setdefault(key, {}).setdefault(tool, {})[rnd] = t["avg_ts"]
others = [t for t in tools if t != "graphrun"]
head = ["model", "test", "threads", "graphrun t/s"]
for o in others:
    head += [f"{names[o]} t/s", f"graphrun / {names[o]}"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for key in sorted(ts, key=lambda k: (k[0], k[2], "@" in k[1], k[1])):
    by = ts[key]
    med = lambda tool: statistics.median(by[tool].values()) if tool in by else None
    row = [key[0], key[1], str(key[2]), f"{med('graphrun'):.2f}" if med("graphrun") else "-"]
    for o in others:
        rounds = [r for r in by.get(o, {}) if r in by.get("graphrun", {})]
        ratios = [by["graphrun"][r] / by[o][r] for r in rounds]
        row += [f"{med(o):.2f}" if med(o) else "-",
                f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "-"]
    print("| " + " | ".join(row) + " |")
rounds = len({os.path.basename(p).split(".")[0] for p in glob.glob(os.path.join(out, "*.json"))})
print(f"\n{cpu}; {rounds} alternated round(s); t/s: median over rounds; ratio: median (min-max) of the per-round ratios")
EOF
