// bench/matmul_bench.cpp — matmul at Llama shapes for every weight type, as decode (n_tokens 1,
// bound by reading the weights) and as a prompt batch (n_tokens 32 and, for the types with a GEMM
// path, 128: bound by arithmetic); the GEMM types also at n_tokens 2, 4 and 8 (small passes).
//
//   x (T, K) f32 · W (N, K)ᵀ f32|f16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|iq4_xs -> y (T, N) f32
//
// Each benchmark is named matmul/<type>/<N>x<K>/T<T>/<variant>:
//   scalar   the plain C++ path (the matmul with the type's scalar traits row, matmul_f32's Scalar path)
//   simd_1t  the path the op table dispatches to, one thread
//   simd_2t  the same split over weight rows (in groups of 8) by tbb::parallel_for on 2 threads
//   packed_2t  Q4_0 at a level with a packed GEMM (AVX2, AVX-512): the weights packed as q4_0x8 (ops/quant/packed.h), split over 8-row
//   groups as simd_2t pertoken_1t  for types whose dispatched path is a GEMM (Q8_0, Q4_0 at AVX2): the same
//   traits row
//            without it, one vec_dot per (token, row) as before the GEMM, one thread
// Counters: W_bytes/s (weight bytes read per second: the figure to hold against the machine's read
// bandwidth, bench/bandwidth_bench.cpp) and FLOP/s (2·T·N·K per call).
// The weights never sit in cache between iterations: every iteration uses the next of as many
// copies as fill kBeyondCacheBytes (1.25 GiB, 4x the L3).
//   graphrun_bench --benchmark_filter='matmul/q4_0/4096x4096/T1/'
#include <benchmark/benchmark.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bench/big_buffer.h"
#include "ops/matmul_quant.h"
#include "ops/op_rows.h"
#include "ops/op_table.h"
#include "ops/quant/kernels.h"
#include "ops/quant/packed.h"
#include "ops/quant/traits.h"
#include "runtime/checked_math.h"

namespace graphrun::bench {
namespace {

enum class Variant { Scalar, Simd1, Simd2, PerToken1, Packed2 };
const char* variant_name(Variant v) {
    return v == Variant::Scalar    ? "scalar"
           : v == Variant::Simd1   ? "simd_1t"
           : v == Variant::Simd2   ? "simd_2t"
           : v == Variant::Packed2 ? "packed_2t"
                                   : "pertoken_1t";
}

// Uniform [-1, 1) from a 64-bit xorshift: filling a GiB of weights with mt19937 would dominate the run.
struct FastRandom {
    uint64_t s;
    float next() {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        return float(int64_t(s >> 40) - (int64_t(1) << 23)) / float(1 << 23);
    }
};

// `copies` distinct (N, K) weight matrices of one type, back to back. The most recent pool is kept, so
// the six benchmarks of one (type, shape) build it once; benchmarks run in registration order.
struct WeightPool {
    DType type;
    bool packed;  // Q4_0 packed as q4_0x8 (ops/quant/packed.h)
    int64_t n, k, matrix_bytes, copies;
    BigBuffer bytes;

    const uint8_t* copy(int64_t i) const { return bytes.data() + (i % copies) * matrix_bytes; }
};

const WeightPool& weight_pool(DType type, int64_t n, int64_t k, bool packed) {
    static std::unique_ptr<WeightPool> pool;
    if (pool && pool->type == type && pool->packed == packed && pool->n == n && pool->k == k) return *pool;
    pool.reset();  // free the previous GiB before taking the next
    const int64_t matrix_bytes = n * row_bytes(type, k);
    const int64_t copies = std::max<int64_t>(2, ceil_div(kBeyondCacheBytes, matrix_bytes));
    pool = std::make_unique<WeightPool>(
        WeightPool{type, packed, n, k, matrix_bytes, copies, BigBuffer(copies * matrix_bytes)});
    FastRandom rng{0x9e3779b97f4a7c15ull};
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t r = 0; r < n; ++r) {
        for (float& v : row) v = rng.next();
        ops::quant_traits(type)->quantize_row(row.data(), pool->bytes.data() + r * row_bytes(type, k), k);
    }
    if (packed) {
        std::vector<uint8_t> rows(pool->bytes.data(), pool->bytes.data() + matrix_bytes);
        ops::pack_q4_0x8(rows.data(), pool->bytes.data(), n, k);
    }
    for (int64_t c = 1; c < copies; ++c)
        std::memcpy(pool->bytes.data() + c * matrix_bytes, pool->bytes.data(), size_t(matrix_bytes));
    return *pool;
}

TensorRef ref(DType type, int64_t rows, int64_t cols, void* data) {
    TensorRef t;
    t.dtype = type;
    t.rank = 2;
    t.shape = {rows, cols, 0, 0};
    t.data = data;
    return t;
}

void BM_matmul(benchmark::State& state, DType type, int64_t n, int64_t k, int64_t n_tokens, Variant variant) {
    const bool packed = variant == Variant::Packed2;
    const WeightPool& pool = weight_pool(type, n, k, packed);
    const bool quantized = type != DType::F32 && type != DType::F16;
    // The quantized types run the one traits-driven matmul; "scalar" gives it the scalar traits row.
    ops::QuantTraits traits = *ops::quant_traits_at(
        type, variant == Variant::Scalar ? ops::SimdLevel::Scalar : ops::active_simd_level());
    if (variant == Variant::PerToken1) traits.gemm = nullptr;
    if (packed) traits.gemm = traits.packed_gemm;
    const ops::QuantTraits& act_traits = *ops::quant_traits_at(
        traits.vec_dot_type, variant == Variant::Scalar ? ops::SimdLevel::Scalar : ops::active_simd_level());
    std::vector<float> x(static_cast<size_t>(n_tokens * k)), y(static_cast<size_t>(n_tokens * n));
    FastRandom rng{12345};
    for (float& v : x) v = rng.next();
    std::vector<uint8_t> scratch(
        static_cast<size_t>(quantized ? ops::matmul_quant_scratch_bytes_for(type, n_tokens, k) : 0));
    KernelArgs args;
    args.n_in = 2;
    args.in[0] = ref(DType::F32, n_tokens, k, x.data());
    args.in[1] = ref(type, n, k, const_cast<uint8_t*>(pool.copy(0)));
    args.out = ref(DType::F32, n_tokens, n, y.data());
    args.scratch = scratch.data();
    args.scratch_bytes = int64_t(scratch.size());

    const ops::SimdLevel f32_path =
        variant == Variant::Scalar ? ops::SimdLevel::Scalar : ops::active_simd_level();
    auto run = [&](int64_t begin, int64_t end) {
        if (!quantized) return ops::kMatmulF32Op.run.at(f32_path)(args, begin, end);
        ops::matmul_quant_run_with(args, begin, end, traits);
    };
    const bool two = variant == Variant::Simd2 || packed;
    tbb::task_arena arena(two ? 2 : 1);
    int64_t iteration = 0;
    for (auto _ : state) {
        args.in[1].data = const_cast<uint8_t*>(pool.copy(iteration++));
        // The activations are quantized once per call, inside the timing, as the op's prepare does.
        if (quantized) ops::matmul_quant_prepare_with(args, 0, n_tokens, traits, act_traits);
        if (two)
            arena.execute([&] {
                // In units of 8 rows, so that a packed group is never cut (the others split alike).
                tbb::parallel_for(tbb::blocked_range<int64_t>(0, (n + 7) / 8, 8),
                                  [&](const tbb::blocked_range<int64_t>& r) {
                                      run(8 * r.begin(), std::min(n, 8 * r.end()));
                                  });
            });
        else
            run(0, n);
        benchmark::ClobberMemory();
    }
    const double iters = double(state.iterations());
    state.counters["W_bytes/s"] =
        benchmark::Counter(double(pool.matrix_bytes) * iters, benchmark::Counter::kIsRate);
    state.counters["FLOP/s"] =
        benchmark::Counter(2.0 * double(n_tokens * n * k) * iters, benchmark::Counter::kIsRate);
    const std::string path = variant == Variant::Scalar ? "scalar"
                             : quantized ? std::string(ops::simd_level_name(ops::active_simd_level())) +
                                               (traits.gemm ? packed ? "+gemm q4_0x8" : "+gemm" : "")
                                         : ops::simd_level_name(f32_path);
    state.SetLabel(path + " x" + std::to_string(two ? 2 : 1) + ", " + std::to_string(pool.copies) +
                   " weight copies");
}

// Llama shapes (N, K): attention and output projections of a 2048-wide model (TinyLlama-1.1B), its
// FFN up/gate and down, a 4096-wide projection (Llama-2-7B) and the 32000-token output layer.
const int registered = [] {
    const std::pair<int64_t, int64_t> shapes[] = {
        {2048, 2048}, {5632, 2048}, {2048, 5632}, {4096, 4096}, {32000, 2048}};
    for (DType type : {DType::Q4_0, DType::Q8_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q4_K,
                       DType::Q5_K, DType::Q6_K, DType::IQ4_XS, DType::F16, DType::F32})
        for (auto [n, k] : shapes) {
            const bool gemm = ops::quant_traits(type) && ops::quant_traits(type)->gemm;
            std::vector<int64_t> token_counts = {1, 32};
            std::vector<Variant> variants = {Variant::Scalar, Variant::Simd1, Variant::Simd2};
            // T2, T4, T8: small passes (sequences decoding together, a speculative pass verifying
            // guesses), which should cost little more than T1 while reading the weights dominates.
            if (gemm) token_counts = {1, 2, 4, 8, 32, 128}, variants.push_back(Variant::PerToken1);
            for (int64_t t : token_counts)
                for (Variant v : variants) {
                    if (t > 32 && v == Variant::Scalar) continue;  // seconds per call: scalar is shown at T32
                    const std::string name = std::string("matmul/") + dtype_name(type) + "/" +
                                             std::to_string(n) + "x" + std::to_string(k) + "/T" +
                                             std::to_string(t) + "/" + variant_name(v);
                    benchmark::RegisterBenchmark(name.c_str(), BM_matmul, type, n, k, t, v)
                        ->UseRealTime()
                        ->MinTime(0.1)
                        ->Unit(benchmark::kMillisecond);
                }
            // Q4_0 packed at load where the level has its GEMM, after the shape's other variants: its own
            // weight pool.
            if (type != DType::Q4_0 || !ops::quant_traits(DType::Q4_0)->packed_gemm) continue;
            for (int64_t t : token_counts) {
                const std::string name = "matmul/q4_0/" + std::to_string(n) + "x" + std::to_string(k) + "/T" +
                                         std::to_string(t) + "/packed_2t";
                benchmark::RegisterBenchmark(name.c_str(), BM_matmul, type, n, k, t, Variant::Packed2)
                    ->UseRealTime()
                    ->MinTime(0.1)
                    ->Unit(benchmark::kMillisecond);
            }
        }
    return 0;
}();

}  // namespace
}  // namespace graphrun::bench
