// bench/bandwidth_bench.cpp — the machine's DRAM read bandwidth: the ceiling for decode matmuls,
// which read every weight once per token. Sums a 1 GiB buffer (4x the 300 MiB L3) with 1 and 2
// threads; the bytes/s counter is what docs/benchmarks.md compares matmul weight bandwidth to.
//   graphrun_bench --benchmark_filter=read_bandwidth
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "bench/big_buffer.h"
#include "ops/quant_kernels.h"

namespace graphrun::bench {
namespace {

constexpr int64_t kBufferBytes = int64_t(1) << 30;

const BigBuffer& buffer() {
    static const BigBuffer b(kBufferBytes);
    return b;
}

// Four independent accumulators of 256-bit loads: enough loads in flight that DRAM, not the add
// chain, limits the loop.
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint8_t* p, int64_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i + 128 <= n; i += 128) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
    }
    const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    return uint64_t(_mm256_extract_epi64(s, 0) + _mm256_extract_epi64(s, 1) + _mm256_extract_epi64(s, 2) +
                    _mm256_extract_epi64(s, 3));
}

uint64_t sum_scalar(const uint8_t* p, int64_t n) {
    uint64_t s0 = 0, s1 = 0;
    for (int64_t i = 0; i + 16 <= n; i += 16) {
        uint64_t a, b;
        std::memcpy(&a, p + i, 8);
        std::memcpy(&b, p + i + 8, 8);
        s0 += a, s1 += b;
    }
    return s0 + s1;
}

uint64_t sum_bytes(const uint8_t* p, int64_t n) {
    return ops::cpu_features().avx2 ? sum_avx2(p, n) : sum_scalar(p, n);
}

void BM_read_bandwidth(benchmark::State& state) {
    const int threads = int(state.range(0));
    const BigBuffer& b = buffer();
    tbb::task_arena arena(threads);
    const int64_t chunk = b.size() / threads;
    for (auto _ : state) {
        std::atomic<uint64_t> total{0};
        arena.execute([&] {
            // One contiguous half per thread, as the matmul benchmarks split weight rows.
            tbb::parallel_for(
                tbb::blocked_range<int>(0, threads, 1),
                [&](const tbb::blocked_range<int>& r) {
                    for (int t = r.begin(); t < r.end(); ++t) total += sum_bytes(b.data() + t * chunk, chunk);
                },
                tbb::static_partitioner());
        });
        benchmark::DoNotOptimize(total.load());
    }
    state.counters["bytes/s"] =
        benchmark::Counter(double(b.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
    state.SetLabel(ops::cpu_features().avx2 ? "avx2 loads" : "scalar loads");
}
BENCHMARK(BM_read_bandwidth)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->MinTime(0.5);

}  // namespace
}  // namespace graphrun::bench
