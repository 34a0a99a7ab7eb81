// bench/bandwidth_bench.cpp — the machine's DRAM read bandwidth: the ceiling for decode matmuls,
// which read every weight once per token. Sums a 1 GiB buffer (4x the 300 MiB L3) with 1 and 2
// threads, as 1 or 4 interleaved streams per thread (runtime/read_bandwidth.h, the loop `graphrun
// bench` measures with too); the bytes/s counter (4 streams, the higher) is what docs/benchmarks.md
// compares matmul weight bandwidth to.
//   graphrun_bench --benchmark_filter=read_bandwidth
#include <benchmark/benchmark.h>

#include "runtime/read_bandwidth.h"

namespace graphrun::bench {
namespace {

const ReadBandwidth& buffer() {
    static const ReadBandwidth b(int64_t(1) << 30);
    return b;
}

void BM_read_bandwidth(benchmark::State& state) {
    const int threads = int(state.range(0)), streams = int(state.range(1));
    const ReadBandwidth& b = buffer();
    for (auto _ : state) {
        double seconds = 0;
        benchmark::DoNotOptimize(b.pass(threads, streams, &seconds));
        state.SetIterationTime(seconds);
    }
    state.counters["bytes/s"] =
        benchmark::Counter(double(b.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
    state.SetLabel(__builtin_cpu_supports("avx2") ? "avx2 loads" : "scalar loads");
}
BENCHMARK(BM_read_bandwidth)
    ->ArgNames({"threads", "streams"})
    ->ArgsProduct({{1, 2}, {1, 4}})
    ->UseManualTime()
    ->MinTime(0.5);

}  // namespace
}  // namespace graphrun::bench
