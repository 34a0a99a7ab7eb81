// tests/common/quant_test_util.h — random data and small matmul fixtures shared by the quant tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "harness/op_call.h"
#include "ops/matmul_quant.h"
#include "ops/op_table.h"
#include "ops/quant/kernels.h"
#include "ops/quant/traits.h"
#include "runtime/kernel.h"

namespace graphrun::ops::testing {

// The one NMSE every op test and the op-table walk use (harness/op_call.h).
using graphrun::testing::nmse;

// The quantized matmul's kernels as a plan at this process's level binds them: the weight type's
// op-table row, prepare.at / run.at(active_simd_level()).
inline const OpDef& matmul_row_of(const KernelArgs& a) {
    return *find_op(quant_traits(a.in[1].dtype)->matmul_kernel);
}
inline void matmul_quant_prepare(const KernelArgs& a, int64_t begin, int64_t end) {
    matmul_row_of(a).prepare.at(active_simd_level())(a, begin, end);
}
inline void matmul_quant_run(const KernelArgs& a, int64_t begin, int64_t end) {
    matmul_row_of(a).run.at(active_simd_level())(a, begin, end);
}

enum class Dist { Uniform, Normal, StudentT3, NormalOutliers };

inline const char* dist_name(Dist d) {
    switch (d) {
        case Dist::Uniform:
            return "uniform[-1,1]";
        case Dist::Normal:
            return "normal(0,1)";
        case Dist::StudentT3:
            return "student-t(3)";
        case Dist::NormalOutliers:
            return "normal+0.5%x20 outliers";
    }
    return "?";
}

inline std::vector<float> random_values(size_t n, Dist dist, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::student_t_distribution<float> student(3.0f);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) {
        switch (dist) {
            case Dist::Uniform:
                x = uniform(rng);
                break;
            case Dist::Normal:
                x = normal(rng);
                break;
            case Dist::StudentT3:
                x = student(rng);
                break;
            case Dist::NormalOutliers:
                x = normal(rng) * (unit(rng) < 0.005f ? 20.0f : 1.0f);
                break;
        }
    }
    return v;
}

inline std::vector<float> random_uniform(size_t n, uint32_t seed) {
    return random_values(n, Dist::Uniform, seed);
}

// A (rows, k) f32 matrix quantized row by row to `type` with the traits' quantizer.
inline std::vector<uint8_t> quantize_matrix(DType type, const std::vector<float>& w, int64_t rows,
                                            int64_t k) {
    std::vector<uint8_t> q(size_t(rows * row_bytes(type, k)));
    for (int64_t r = 0; r < rows; ++r)
        quant_traits(type)->quantize_row(&w[size_t(r * k)], &q[size_t(r * row_bytes(type, k))], k);
    return q;
}

inline TensorRef tensor_ref(DType type, std::initializer_list<int64_t> shape, void* data) {
    TensorRef t;
    t.dtype = type;
    t.rank = int(shape.size());
    int i = 0;
    for (int64_t d : shape) t.shape[size_t(i++)] = d;
    t.data = data;
    return t;
}

// x (n_tokens, k) f32 · W (n, k)ᵀ quantized -> y (n_tokens, n), with its own buffers.
struct QuantMatmul {
    std::vector<float> x, y;
    std::vector<uint8_t> w, scratch;
    KernelArgs args;

    QuantMatmul(DType wtype, int64_t n_tokens, int64_t n, int64_t k, const std::vector<float>& wf,
                std::vector<float> xf)
        : x(std::move(xf)),
          y(size_t(n_tokens * n), NAN),
          w(quantize_matrix(wtype, wf, n, k)),
          scratch(size_t(matmul_quant_scratch_bytes_for(wtype, n_tokens, k))) {
        args.n_in = 2;
        args.in[0] = tensor_ref(DType::F32, {n_tokens, k}, x.data());
        args.in[1] = tensor_ref(wtype, {n, k}, w.data());
        args.out = tensor_ref(DType::F32, {n_tokens, n}, y.data());
        args.scratch = scratch.data();
        args.scratch_bytes = int64_t(scratch.size());
    }
};

// The matmul's invariant on row ranges: running rows [0, n) one row per call with `tr`'s kernels gives
// the bits of one call over them all (random weights and Student-t activations, seeds 5 and 6).
inline bool single_row_ranges_give_whole_call_bits(DType wtype, const QuantTraits& tr, int64_t n_tokens,
                                                   int64_t n, int64_t k) {
    const auto wf = random_values(size_t(n * k), Dist::Normal, 5);
    const auto xf = random_values(size_t(n_tokens * k), Dist::StudentT3, 6);
    QuantMatmul whole(wtype, n_tokens, n, k, wf, xf), pieces(wtype, n_tokens, n, k, wf, xf);
    matmul_quant_prepare(whole.args, 0, n_tokens);
    matmul_quant_prepare(pieces.args, 0, n_tokens);
    matmul_quant_run_with(whole.args, 0, n, tr);
    for (int64_t r = 0; r < n; ++r) matmul_quant_run_with(pieces.args, r, r + 1, tr);
    return std::memcmp(whole.y.data(), pieces.y.data(), whole.y.size() * sizeof(float)) == 0;
}

// y[t, n] = scalar::vec_dot(W[n], xq[t]) for every output, from the matmul's own quantized xq.
inline std::vector<float> per_token_scalar(const QuantMatmul& m, DType wtype, int64_t n_tokens, int64_t n,
                                           int64_t k) {
    const QuantTraits& scalar_tr = *quant_traits_at(wtype, SimdLevel::Scalar);
    const int64_t w_row = row_bytes(wtype, k), xq_row = row_bytes(scalar_tr.vec_dot_type, k);
    std::vector<float> y(size_t(n_tokens * n));
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t r = 0; r < n; ++r)
            y[size_t(t * n + r)] =
                scalar_tr.vec_dot(k, m.w.data() + r * w_row, m.scratch.data() + t * xq_row);
    return y;
}

}  // namespace graphrun::ops::testing
