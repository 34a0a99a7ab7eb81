// bench/op_bench_util.h — one op row's kernel over all its units, timed by Google Benchmark, with the
// two counters every op benchmark reports: bytes/s (inputs read plus the output written) and FLOP/s from
// the row's flops().
#pragma once

#include <benchmark/benchmark.h>

#include "tests/op_test_util.h"

namespace graphrun::testing {

// Runs the op's kernel over all its units for the benchmark's iterations and sets both counters.
inline void run_and_report(benchmark::State& state, const char* name, OpCall& call) {
    const ops::OpDef& op = op_row(name);
    const KernelArgs args = call.args();
    const int64_t units = op.work_items(args);
    for (auto _ : state) {
        op.run(args, 0, units);
        benchmark::ClobberMemory();
    }
    double bytes = double(call.out.bytes.size());
    for (const TestTensor& t : call.in) bytes += double(t.bytes.size());
    const double iters = double(state.iterations());
    state.counters["bytes/s"] = benchmark::Counter(bytes * iters, benchmark::Counter::kIsRate);
    state.counters["FLOP/s"] = benchmark::Counter(op.flops(args) * iters, benchmark::Counter::kIsRate);
}

}  // namespace graphrun::testing
