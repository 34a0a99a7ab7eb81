// bench/op_bench_util.h — the one way op benchmarks time a kernel and report it: bytes/s (the bytes the
// op must move: inputs read plus the output written, unless the benchmark says otherwise) and FLOP/s from
// the row's flops(). The op walk (bench/op_walk_bench.cpp, op/<row>/...) and the hand-written per-op
// benchmarks both report through report_op_counters.
#pragma once

#include <benchmark/benchmark.h>

#include "harness/op_call.h"

namespace graphrun::testing {

// The least time each benchmark runs, in seconds (--benchmark_min_time=1 for steadier figures).
constexpr double kMinTime = 0.05;
// The hand-written per-op benchmarks' layer: Llama-7B sized.
constexpr int kEmbd = 4096, kHeads = 32, kHeadDim = 128, kFf = 11008;

// The two counters, as rates over the benchmark's iterations.
inline void report_op_counters(benchmark::State& state, double bytes_per_call, double flops_per_call) {
    const double iters = double(state.iterations());
    state.counters["bytes/s"] = benchmark::Counter(bytes_per_call * iters, benchmark::Counter::kIsRate);
    state.counters["FLOP/s"] = benchmark::Counter(flops_per_call * iters, benchmark::Counter::kIsRate);
}

// Runs the op's kernel over all its units for the benchmark's iterations and sets both counters.
inline void run_and_report(benchmark::State& state, const char* name, OpCall& call) {
    const ops::OpDef& op = op_row(name);
    const KernelArgs args = call.args();
    const int64_t units = op.work_items(args);
    const KernelFn run = op.run.at(ops::active_simd_level());
    for (auto _ : state) {
        run(args, 0, units);
        benchmark::ClobberMemory();
    }
    double bytes = double(call.out.bytes.size());
    for (const TestTensor& t : call.in) bytes += double(t.bytes.size());
    report_op_counters(state, bytes, op.flops(args));
}

}  // namespace graphrun::testing
