// bench/bandwidth_bench.cpp — the machine's DRAM read bandwidth: the ceiling for decode matmuls,
// which read every weight once per token. Sums a 1 GiB buffer (4x the 300 MiB L3) with 1 and 2
// threads, as 1 or 4 interleaved streams per thread; the bytes/s counter (4 streams, the higher) is
// what docs/benchmarks.md compares matmul weight bandwidth to.
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

// Sums n bytes read as `streams` interleaved sequential streams (the n bytes cut into `streams`
// consecutive parts, read side by side). One stream leaves per-core bandwidth unused: the L2 hardware
// prefetcher runs several streams at once, and with four a core reads ~1.5x faster (measured 11.5 vs
// 18 GB/s on one thread). Matmul kernels that walk several weight rows at once get the same benefit,
// so the ceiling to compare them with is the multi-stream figure.
template <int Streams>
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint8_t* p, int64_t n) {
    __m256i acc[Streams];
    for (int s = 0; s < Streams; ++s) acc[s] = _mm256_setzero_si256();
    const int64_t part = n / Streams;
    for (int64_t i = 0; i + 64 <= part; i += 64)
#pragma GCC unroll 4
        for (int s = 0; s < Streams; ++s) {
            const uint8_t* q = p + s * part + i;
            acc[s] = _mm256_add_epi64(acc[s], _mm256_load_si256(reinterpret_cast<const __m256i*>(q)));
            acc[s] = _mm256_add_epi64(acc[s], _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32)));
        }
    __m256i total = acc[0];
    for (int s = 1; s < Streams; ++s) total = _mm256_add_epi64(total, acc[s]);
    return uint64_t(_mm256_extract_epi64(total, 0) + _mm256_extract_epi64(total, 1) +
                    _mm256_extract_epi64(total, 2) + _mm256_extract_epi64(total, 3));
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

uint64_t sum_bytes(const uint8_t* p, int64_t n, int streams) {
    if (!ops::cpu_features().avx2) return sum_scalar(p, n);
    return streams == 4 ? sum_avx2<4>(p, n) : sum_avx2<1>(p, n);
}

void BM_read_bandwidth(benchmark::State& state) {
    const int threads = int(state.range(0)), streams = int(state.range(1));
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
                    for (int t = r.begin(); t < r.end(); ++t)
                        total += sum_bytes(b.data() + t * chunk, chunk, streams);
                },
                tbb::static_partitioner());
        });
        benchmark::DoNotOptimize(total.load());
    }
    state.counters["bytes/s"] =
        benchmark::Counter(double(b.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
    state.SetLabel(ops::cpu_features().avx2 ? "avx2 loads" : "scalar loads");
}
BENCHMARK(BM_read_bandwidth)
    ->ArgNames({"threads", "streams"})
    ->ArgsProduct({{1, 2}, {1, 4}})
    ->UseRealTime()
    ->MinTime(0.5);

}  // namespace
}  // namespace graphrun::bench
