#!/usr/bin/env python3
"""Decode bandwidth summary: the machine's read bandwidth next to q4_0/q8_0 matvec weight bandwidth.

Runs graphrun_bench's read_bandwidth and matmul/q{4,8}_0/*/T1/simd_* benchmarks with repetitions
and prints a Markdown table of median and best GB/s, and the 2-thread matvec as a share of the
2-thread read bandwidth. Usage (from the repository root):
    python3 bench/decode_summary.py build/graphrun_bench [repetitions]
On a shared machine the best of several repetitions is the figure least disturbed by other work;
the median shows how much it was disturbed.
"""
import collections
import json
import statistics
import subprocess
import sys


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/graphrun_bench"
    reps = sys.argv[2] if len(sys.argv) > 2 else "5"
    out = subprocess.run(
        [binary, "--benchmark_filter=read_bandwidth|matmul/q[48]_0/.*/T1/simd",
         f"--benchmark_repetitions={reps}", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    runs = collections.defaultdict(list)
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"].split("/min_time")[0]
        runs[name].append(b.get("W_bytes/s", b.get("bytes/s", 0.0)) / 1e9)

    def fig(name):
        v = runs[name]
        return statistics.median(v), max(v)

    print(f"read bandwidth, GB/s (median / best of {reps}):")
    for streams in (1, 4):
        one, two = (fig(f"BM_read_bandwidth/threads:{t}/streams:{streams}") for t in (1, 2))
        print(f"  {streams} stream(s) per thread: 1 thread {one[0]:.1f} / {one[1]:.1f}, "
              f"2 threads {two[0]:.1f} / {two[1]:.1f}")
    print()
    bw2 = fig("BM_read_bandwidth/threads:2/streams:4")  # the ceiling: the higher of the two patterns
    print("| weights | N x K | 1 thread GB/s | 2 threads GB/s | 2 threads, % of 2-thread read bw |")
    print("| --- | --- | --- | --- | --- |")
    for name in runs:
        if not name.startswith("matmul/") or not name.endswith("simd_1t"):
            continue
        _, wtype, shape, _, _ = name.split("/")
        one, two = fig(name), fig(name.replace("simd_1t", "simd_2t"))
        print(f"| {wtype} | {shape} | {one[0]:.1f} / {one[1]:.1f} | {two[0]:.1f} / {two[1]:.1f} | "
              f"{100 * two[0] / bw2[0]:.0f}% / {100 * two[1] / bw2[1]:.0f}% |")


if __name__ == "__main__":
    main()
