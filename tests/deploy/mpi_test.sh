#!/usr/bin/env bash
# tests/deploy/mpi_test.sh GRAPHRUN SOURCE_DIR — a model's layers over 2 MPI ranks on loopback
# (engine/pipeline.h, docs/deploy.md): the same greedy ids as one process for llama and qwen3 graphs
# (generation, batched and serve); each rank holds about half the weights and touches only its own;
# a killed rank and a hung rank each end the whole run, naming the rank, within a timeout.
# Skips (77) without mpirun or when graphrun was built without GRAPHRUN_MPI.
set -euo pipefail
graphrun=$1
src=$2
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
"$graphrun" --version | grep -q '^mpi       yes' || { echo "SKIP: graphrun built without GRAPHRUN_MPI"; exit 77; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do pkill -9 -P "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mpi=(mpirun -np 2 --oversubscribe --allow-run-as-root --bind-to none)
kjv=$src/models/kjv-q8_0.gguf
fail() { echo "FAIL: $*"; exit 1; }

# The rank's process under the mpirun whose pid is $1.
rank_pid() {
  local p
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$p"; return; }
  done
}
# Waits (at most $2 s) for the mpirun $1 to end; prints the seconds it took, fails past the limit.
wait_ended() {
  local start=$SECONDS
  while kill -0 "$1" 2>/dev/null; do
    ((SECONDS - start <= $2)) || fail "mpirun $1 still runs after $2 s"
    sleep 0.2
  done
  echo $((SECONDS - start))
}
wait_healthy() {
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/health" >/dev/null && return; sleep 0.1; done
  fail "no /health on port $1"
}

echo "== generation: the shipped model (llama), 2 ranks against 1"
"$graphrun" -m "$kjv" -p "And God said" -n 64 --temp 0 -t 1 >"$work/one.txt" 2>/dev/null
"${mpi[@]}" "$graphrun" -m "$kjv" -p "And God said" -n 64 --temp 0 -t 1 >"$work/two.txt" 2>"$work/two.err"
cmp "$work/one.txt" "$work/two.txt" || fail "2 ranks wrote other text than 1 process"
grep -q "rank 1 of 2: layers 2-3 of 4" "$work/two.err" || fail "rank 1's line: $(cat "$work/two.err")"
grep -q "rank 0 of 2: layers 0-1 of 4" "$work/two.err" || fail "rank 0's line: $(cat "$work/two.err")"

echo "== generation: a random qwen3, balanced and --stages 0-0,1-4"
"$graphrun" make-model --arch qwen3 --layers 5 --embd 64 --heads 4 --kv-heads 2 --ff 128 --vocab 512 "$work/q3.gguf" >/dev/null
"$graphrun" -m "$work/q3.gguf" --tokens 1,5,9,33,100 -n 60 -t 1 >"$work/q1.txt" 2>/dev/null
for stages in "" "--stages 0-0,1-4"; do
  # shellcheck disable=SC2086
  "${mpi[@]}" "$graphrun" $stages -m "$work/q3.gguf" --tokens 1,5,9,33,100 -n 60 -t 1 >"$work/q2.txt" 2>"$work/q2.err"
  cmp "$work/q1.txt" "$work/q2.txt" || fail "qwen3 over 2 ranks ($stages) gave other ids"
done
grep -q "rank 1 of 2: layers 1-4 of 5" "$work/q2.err" || fail "--stages 0-0,1-4: $(cat "$work/q2.err")"
[[ $(wc -w <"$work/q1.txt") -eq 60 ]] || fail "expected 60 ids, got $(cat "$work/q1.txt")"

echo "== batched: 5 prompts at once"
printf 'And God said\nIn the beginning\nThe LORD is my\nBlessed are the\nAnd Jesus\n' >"$work/prompts.txt"
"$graphrun" batched -m "$kjv" -f "$work/prompts.txt" -n 48 --temp 0 -t 1 >"$work/b1.txt" 2>/dev/null
"${mpi[@]}" "$graphrun" batched -m "$kjv" -f "$work/prompts.txt" -n 48 --temp 0 -t 1 >"$work/b2.txt" 2>/dev/null
cmp "$work/b1.txt" "$work/b2.txt" || fail "batched over 2 ranks differs"

echo "== memory: each rank maps the file but touches only its layers"
"$graphrun" make-model --layers 8 --embd 512 --heads 8 --kv-heads 4 --ff 1536 --vocab 1024 "$work/big.gguf" >/dev/null
file_bytes=$(stat -c %s "$work/big.gguf")
peak() {  # rank $1's weight bytes and peak resident bytes under --stages $2
  "${mpi[@]}" "$graphrun" ${2:+--stages $2} -m "$work/big.gguf" --tokens 1,2,3 -n 4 -t 1 2>&1 >/dev/null |
    sed -n "s/.*rank $1 of 2: .*, weights \([0-9]*\) of \([0-9]*\) bytes, peak resident \([0-9]*\) bytes.*/\1 \2 \3/p"
}
read -r w0 whole r0 <<<"$(peak 0 "")"
read -r w1 _ r1 <<<"$(peak 1 "")"
echo "whole $whole weight bytes ($file_bytes in the file); rank 0: $w0, peak resident $r0; rank 1: $w1, peak resident $r1"
for w in "$w0" "$w1"; do
  ((w * 100 > whole * 40 && w * 100 < whole * 60)) || fail "a rank holds $w of $whole weight bytes, not about half"
done
for r in "$r0" "$r1"; do ((r < file_bytes)) || fail "a rank's peak resident $r is not below the file's $file_bytes bytes"; done
read -r wa _ ra <<<"$(peak 1 0-0,1-7)"
read -r wb _ rb <<<"$(peak 1 0-6,7-7)"
echo "rank 1 with layers 1-7: $wa weight bytes, peak $ra; with layer 7: $wb, peak $rb"
(((ra - rb) * 2 > (wa - wb))) || fail "rank 1's resident set does not follow its layers: $ra - $rb against $wa - $wb"

echo "== serve over 2 ranks: the same text; SIGTERM to rank 0 drains and stops rank 1"
body='{"prompt":"And God said","max_tokens":24,"temperature":0}'
"$graphrun" serve -m "$kjv" --port 18171 -t 1 >/dev/null 2>&1 &
pids+=($!)
wait_healthy 18171
curl -sf http://127.0.0.1:18171/v1/completions -d "$body" | grep -o '"text":"[^"]*"' >"$work/s1.txt"
kill -TERM "${pids[-1]}"
"${mpi[@]}" "$graphrun" serve -m "$kjv" --port 18172 -t 1 >/dev/null 2>"$work/s2.err" &
mp=$!
pids+=("$mp")
wait_healthy 18172
curl -sf http://127.0.0.1:18172/v1/completions -d "$body" | grep -o '"text":"[^"]*"' >"$work/s2.txt"
cmp "$work/s1.txt" "$work/s2.txt" || fail "serve over 2 ranks: $(cat "$work/s2.txt") against $(cat "$work/s1.txt")"
kill -TERM "$(rank_pid "$mp" 0)"
wait_ended "$mp" 30 >/dev/null
wait "$mp" || fail "mpirun ended with $? after SIGTERM to rank 0: $(cat "$work/s2.err")"
grep -q "rank 1 of 2" "$work/s2.err" || fail "rank 1 did not stop cleanly: $(cat "$work/s2.err")"

echo "== a killed rank ends the run, named"
"${mpi[@]}" "$graphrun" serve -m "$kjv" --port 18173 -t 1 >/dev/null 2>"$work/k.err" &
mp=$!
pids+=("$mp")
wait_healthy 18173
kill -9 "$(rank_pid "$mp" 1)"
took=$(wait_ended "$mp" 20)
grep -q "rank 1" "$work/k.err" || fail "the killed rank is not named: $(cat "$work/k.err")"
echo "ended in $took s"

echo "== a hung rank ends the run within GRAPHRUN_STAGE_TIMEOUT, named"
GRAPHRUN_STAGE_TIMEOUT=3 "${mpi[@]}" -x GRAPHRUN_STAGE_TIMEOUT "$graphrun" serve -m "$kjv" --port 18174 -t 1 \
  >/dev/null 2>"$work/h.err" &
mp=$!
pids+=("$mp")
wait_healthy 18174
hung=$(rank_pid "$mp" 1)
kill -STOP "$hung"
curl -s -m 30 http://127.0.0.1:18174/v1/completions -d "$body" >/dev/null || true
took=$(wait_ended "$mp" 20)
kill -9 "$hung" 2>/dev/null || true
grep -q "rank 0: .* rank 1: nothing for 3 s" "$work/h.err" || fail "the hung rank is not named: $(cat "$work/h.err")"
echo "ended in $took s"
echo "PASS"
