// runtime/read_bandwidth.cpp — summing a large buffer as fast as the memory system delivers it.
#include "runtime/read_bandwidth.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace graphrun {

namespace {

#if defined(__x86_64__)
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
    // Each lane as unsigned before adding: the sum wraps by design, and signed overflow is undefined.
    return uint64_t(_mm256_extract_epi64(total, 0)) + uint64_t(_mm256_extract_epi64(total, 1)) +
           uint64_t(_mm256_extract_epi64(total, 2)) + uint64_t(_mm256_extract_epi64(total, 3));
}
#endif

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

constexpr int64_t kGranule = int64_t(64) << 10;  // shares stay multiples of 64 * 4 streams

}  // namespace

uint64_t read_bytes_sum(const uint8_t* p, int64_t n, int streams) {
#if defined(__x86_64__)
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return streams == 4 ? sum_avx2<4>(p, n) : sum_avx2<1>(p, n);
#endif
    (void)streams;
    return sum_scalar(p, n);
}

ReadBandwidth::ReadBandwidth(int64_t bytes)
    : bytes_(bytes / kGranule * kGranule), buffer_(std::max<int64_t>(bytes_, kGranule), 4096) {
    if (bytes_ <= 0)
        throw std::invalid_argument("read bandwidth: a buffer of " + std::to_string(bytes) +
                                    " bytes is too small (at least 64 KiB)");
    std::memset(buffer_.data(), 1, size_t(bytes_));  // real pages, and not all zero
}

uint64_t ReadBandwidth::pass(int n_threads, int streams, double* seconds) const {
    n_threads = std::max(1, n_threads);
    const int64_t share = bytes_ / kGranule / n_threads * kGranule;
    std::atomic<uint64_t> total{0};
    tbb::task_arena arena(n_threads);
    arena.initialize();  // outside the timed part
    const auto start = std::chrono::steady_clock::now();
    arena.execute([&] {
        tbb::parallel_for(
            tbb::blocked_range<int>(0, n_threads, 1),
            [&](const tbb::blocked_range<int>& r) {
                for (int t = r.begin(); t < r.end(); ++t)
                    total += read_bytes_sum(buffer_.data() + t * share, share, streams);
            },
            tbb::static_partitioner());
    });
    if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return total.load();
}

double ReadBandwidth::best_gbps(int n_threads, int streams, int passes) const {
    n_threads = std::max(1, n_threads);
    const int64_t share = bytes_ / kGranule / n_threads * kGranule;
    double best = 0;
    for (int i = 0; i < std::max(1, passes); ++i) {
        double seconds = 0;
        pass(n_threads, streams, &seconds);
        if (seconds > 0) best = std::max(best, double(share * n_threads) / seconds / 1e9);
    }
    return best;
}

}  // namespace graphrun
