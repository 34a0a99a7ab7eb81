// harness/matmul_shapes.cpp — the matmul rows' shapes for the op-table walk: matmul_f32 (f32 and f16
// weights) and one quantized row per weight type the traits give a vec_dot, so a new type is walked with
// no edit here.
//   x (T, K) f32 · W (N, K)ᵀ -> y (T, N) f32
#include "harness/op_coverage.h"
#include "ops/quant/traits.h"
#include "ops/quant/kernels.h"

namespace graphrun::testing {
namespace {

OpShape matmul_shape(DType wtype, int64_t n_tokens, int64_t n, int64_t k, uint32_t seed) {
    const std::string label = std::string(dtype_name(wtype)) + "." + std::to_string(n) + "x" + std::to_string(k) +
                              ".T" + std::to_string(n_tokens);
    return {label, [=] {
                OpCall c;
                c.in = {f32_tensor({n_tokens, k}, random_floats(size_t(n_tokens * k), seed)),
                        matrix_of(wtype, n, k, random_floats(size_t(n * k), seed + 1))};
                c.out = output_tensor(DType::F32, {n_tokens, n});
                return op_case(std::move(c));
            }};
}

// Decode (T 1, bound by reading W) and a prompt batch (T 32) on Llama-2-7B's 4096 x 4096 projections.
// The weights are one copy, so at these sizes they may sit partly in L3; bench/matmul_bench.cpp
// streams them from memory for the bandwidth-bound figure.
std::vector<OpShape> llama_shapes(DType wtype) {
    return {matmul_shape(wtype, 1, 4096, 4096, 1), matmul_shape(wtype, 32, 4096, 4096, 2)};
}

const bool f32_registered = register_op_coverage({
    .row = "matmul_f32",
    // Float lanes against one double sum per output: float rounding of the partial sums only.
    .max_nmse = 1e-10,
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (DType wtype : {DType::F32, DType::F16})
                for (int64_t t : {1, 3, 19})
                    for (int64_t k : {5, 48, 100})
                        for (int64_t n : {13, 37}) s.push_back(matmul_shape(wtype, t, n, k, uint32_t(t * 7 + k * 3 + n)));
            return s;
        },
    .bench_shapes =
        [] {
            std::vector<OpShape> s = llama_shapes(DType::F32);
            for (OpShape& f16 : llama_shapes(DType::F16)) s.push_back(std::move(f16));
            return s;
        },
});

// One coverage per quantized matmul row, made from the traits as the rows themselves are.
const bool quant_registered = [] {
    for (const DType wtype : ops::runnable_quantized_weight_types()) {
        register_op_coverage({
            .row = ops::quant_traits_at(wtype, ops::SimdLevel::Scalar)->matmul_kernel,
            // Exact integer block sums folded in with float block scales, against dequantized floats
            // multiplied in double.
            .max_nmse = 1e-11,
            .test_shapes =
                [wtype] {
                    const int64_t block = dtype_traits(wtype).block_size;
                    std::vector<OpShape> s;
                    // N 37 and 21: whole and cut four-row groups; T 40: a prompt batch.
                    for (int64_t k : {block, 3 * block})
                        for (auto [t, n] : {std::pair<int64_t, int64_t>{1, 37}, {5, 21}, {17, 3}, {40, 9}})
                            s.push_back(matmul_shape(wtype, t, n, k, uint32_t(n + k)));
                    s.push_back(matmul_shape(wtype, 1, 5, 4096 + block, 3));
                    return s;
                },
            .bench_shapes = [wtype] { return llama_shapes(wtype); },
        });
    }
    return true;
}();

}  // namespace
}  // namespace graphrun::testing
