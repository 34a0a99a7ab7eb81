#!/usr/bin/env bash
# tests/layering_test.sh — dependencies point one way (docs/architecture.md, "The dependency rule"):
#
#   tools -> {server, tools/lib} -> engine -> graph -> ops -> runtime
#
# Reads every `#include "..."` in runtime/ ops/ graph/ engine/ server/ tools/ (tools/lib/ included) and
# fails, naming file:line and the edge, on an include that points up the stack or sideways:
#
#   runtime/    runtime
#   ops/        ops, runtime
#   graph/      graph, ops, runtime
#   engine/     engine, graph, ops, runtime
#   server/     server, engine, graph, ops, runtime
#   tools/lib/  tools/lib, engine, graph, ops, runtime
#   tools/      anything but harness/, tests/, bench/, fuzz/ (the tool does not link them)
#
# A quoted include without a folder ("x.h") is the including file's neighbour when one exists; otherwise
# it is a generated header, which only tools/ may include (graphrun_build_info.h).
#
#   tests/layering_test.sh [ROOT]              check ROOT (default: this checkout), then prove that the
#                                              check fails on a copy with bad includes injected
#   tests/layering_test.sh --check-only ROOT   check ROOT only (what the proof runs on its copies)
set -euo pipefail

self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
check_only=0
if [[ "${1:-}" == "--check-only" ]]; then
    check_only=1
    shift
fi
root="$(cd "${1:-$(dirname "$self")/..}" && pwd)"

# Prints one line per bad edge; returns 1 when there was one. One awk pass over `grep -n` of every
# include (no process per include: the test runs eleven times and must stay quick).
check_tree() {
    local tree="$1"
    local -a files
    mapfile -t files < <(cd "$tree" && find runtime ops graph engine server tools -type f \
                             \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.inc' \) | sort)
    (cd "$tree" && { printf 'FILE:%s\n' "${files[@]}"; grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${files[@]}"; }) |
    awk -v n_files="${#files[@]}" '
    # The layer of a path relative to the root ("tools/lib/bench.h" -> tools/lib), or "" for none.
    function layer_of(p) {
        if (p ~ /^tools\/lib\//) return "tools/lib"
        if (p ~ /^(runtime|ops|graph|engine|server|tools|harness|tests|bench|fuzz)\//) { sub(/\/.*/, "", p); return p }
        return ""
    }
    BEGIN {
        allowed["runtime"] = "runtime"
        allowed["ops"] = "ops runtime"
        allowed["graph"] = "graph ops runtime"
        allowed["engine"] = "engine graph ops runtime"
        allowed["server"] = "server engine graph ops runtime"
        allowed["tools/lib"] = "tools/lib engine graph ops runtime"
        allowed["tools"] = "tools tools/lib server engine graph ops runtime"
    }
    /^FILE:/ { exists[substr($0, 6)] = 1; next }
    {
        # file:line:#include "target" ...
        file = $0; sub(/:.*/, "", file)
        rest = substr($0, length(file) + 2)
        line_no = rest; sub(/:.*/, "", line_no)
        target = rest; sub(/^[^"]*"/, "", target); sub(/".*/, "", target)
        from = layer_of(file)
        edges++
        if (target !~ /\//) {
            dir = file; sub(/\/[^\/]*$/, "", dir)
            if ((dir "/" target) in exists) next  # the including file neighbour: same folder, same layer
            if (from == "tools") next             # a generated header (graphrun_build_info.h)
            printf "%s:%s: %s -> \"%s\": a header outside the source folders (only tools/ may include generated headers)\n", file, line_no, from, target
            bad = 1
            next
        }
        to = layer_of(target)
        if (to != "" && index(" " allowed[from] " ", " " to " ")) next
        printf "%s:%s: %s -> %s (\"%s\"): %s may include only: %s\n", file, line_no, from, (to == "" ? "?" : to), target, from, allowed[from]
        bad = 1
    }
    END {
        if (n_files == 0 || edges == 0) { printf "layering: found %d files and %d includes: wrong root?\n", n_files, edges; exit 1 }
        if (bad) {
            print "layering: includes point up the stack; the rule is tools -> {server, tools/lib} -> engine -> graph -> ops -> runtime (docs/architecture.md)"
            exit 1
        }
        printf "layering: %d includes in %d files point down the stack\n", edges, n_files
    }'
}

if ((check_only)); then
    check_tree "$root"
    exit $?
fi

echo "== $root"
status=0
check_tree "$root" || status=1

# The proof that the check can fail: a copy of the source folders, each time with one bad include
# injected, must be refused with the file, the line and the edge named; the clean copy must pass.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
copy="$scratch/tree"
mkdir -p "$copy"
for d in runtime ops graph engine server tools; do cp -R "$root/$d" "$copy/"; done
if ! "$self" --check-only "$copy" > "$scratch/clean.out"; then
    echo "FAIL: the clean copy of $root was refused:"
    cat "$scratch/clean.out"
    status=1
fi

# file to inject into | include | text the message must hold
cases=(
    'runtime/executor.cpp|graph/plan.h|runtime/executor.cpp:1: runtime -> graph ("graph/plan.h")'
    'runtime/text/sampler.cpp|ops/op_table.h|runtime/text/sampler.cpp:1: runtime -> ops'
    'ops/quant/avx2/block_dots.cpp|engine/session.h|ops/quant/avx2/block_dots.cpp:1: ops -> engine'
    'graph/planner.cpp|engine/model.h|graph/planner.cpp:1: graph -> engine'
    'engine/session.cpp|server/backend.h|engine/session.cpp:1: engine -> server'
    'server/metrics.cpp|tools/lib/bench.h|server/metrics.cpp:1: server -> tools/lib'
    'tools/lib/bench.cpp|server/backend.h|tools/lib/bench.cpp:1: tools/lib -> server'
    'tools/lib/perplexity.cpp|tools/conversation.h|tools/lib/perplexity.cpp:1: tools/lib -> tools'
    'tools/main.cpp|harness/op_call.h|tools/main.cpp:1: tools -> harness'
    'graph/plan.h|made_up_generated.h|graph/plan.h:1: graph -> "made_up_generated.h"'
)
for c in "${cases[@]}"; do
    IFS='|' read -r file include expect <<< "$c"
    cp "$root/$file" "$scratch/saved"
    { echo "#include \"$include\""; cat "$scratch/saved"; } > "$copy/$file"
    if "$self" --check-only "$copy" > "$scratch/out" 2>&1; then
        echo "FAIL: $file including \"$include\" was not refused"
        status=1
    elif ! grep -qF "$expect" "$scratch/out"; then
        echo "FAIL: $file including \"$include\" was refused without naming '$expect':"
        cat "$scratch/out"
        status=1
    else
        echo "refused as it should be: $(grep -F "$expect" "$scratch/out")"
    fi
    cp "$scratch/saved" "$copy/$file"
done
exit $status
