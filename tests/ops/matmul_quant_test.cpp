// tests/ops/matmul_quant_test.cpp — the quantized matmul, for every weight type with a traits row: the
// op's prepare+run over split ranges against its plain-loop reference, every SIMD path through the
// op's loop, the batch/split invariance, plan-time errors, and the accuracy of each type against
// the f32 matmul it stands in for (figures quoted in docs/quantization.md).
#include "ops/matmul_quant.h"
#include "ops/op_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "ops/quant/kernels.h"
#include "tests/common/quant_test_util.h"

namespace graphrun::ops {
namespace {

using ::testing::HasSubstr;
using testing::nmse;
using testing::matmul_quant_prepare;
using testing::matmul_quant_run;
using testing::QuantMatmul;

// Every type the matmul runs: a new traits row is tested here without editing this file.
std::vector<DType> matmul_types() {
    std::vector<DType> types;
    for (const DTypeTraits& t : dtype_table())
        if (const QuantTraits* tr = quant_traits(t.type); tr && tr->vec_dot) types.push_back(t.type);
    return types;
}

int64_t block_of(DType type) {
    return dtype_traits(type).block_size;
}

// The executor's calling pattern, with ranges split unevenly: prepare over tokens, then run over
// weight rows.
void run_split(const KernelArgs& a) {
    const int64_t tokens = matmul_quant_prepare_items(a), rows = matmul_quant_work_items(a);
    matmul_quant_prepare(a, 0, tokens / 2);
    matmul_quant_prepare(a, tokens / 2, tokens);
    matmul_quant_run(a, 0, rows / 3);
    matmul_quant_run(a, rows / 3, rows);
}

TEST(MatmulQuant, EveryRunnableTypeIsCovered) {
    const std::vector<DType> types = matmul_types();
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K,
                    DType::Q6_K, DType::IQ4_XS, DType::IQ4_NL})
        EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << dtype_name(t);
}

TEST(MatmulQuant, RunOverSplitRangesMatchesReference) {
    for (DType wtype : matmul_types()) {
        const int64_t block = block_of(wtype);
        for (int64_t k : {block, 3 * block, 4096 + block})
            for (auto [n_tokens, n] : {std::pair<int64_t, int64_t>{1, 37}, {3, 1}, {5, 19}, {17, 3}}) {
                if (k > 1000 && n_tokens > 5) continue;  // keep the test fast
                const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, uint32_t(n + k));
                const auto xf =
                    testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3, uint32_t(k));
                QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
                QuantMatmul ref(wtype, n_tokens, n, k, wf, xf);
                EXPECT_EQ(matmul_quant_work_items(m.args), n);
                EXPECT_EQ(matmul_quant_prepare_items(m.args), n_tokens);
                run_split(m.args);
                matmul_quant_reference(ref.args);
                // The kernels fold exact integer sums in with float block scales; the reference
                // multiplies dequantized floats in double.
                EXPECT_LT(nmse(m.y, ref.y), 1e-11) << dtype_name(wtype) << " tokens " << n_tokens << " N "
                                                   << n << " K " << k << " nmse " << nmse(m.y, ref.y);
                EXPECT_EQ(matmul_quant_flops(m.args), 2.0 * double(n_tokens * n * k));
            }
    }
}

// The op's loop on each dot-product path the CPU has.
TEST(MatmulQuant, EveryPathThroughTheOpLoopMatchesReference) {
    const int64_t n_tokens = 3, n = 21;
    int paths = 0;
    for (DType wtype : matmul_types()) {
        const int64_t k = 5 * block_of(wtype);
        const auto wf = testing::random_uniform(size_t(n * k), 1);
        const auto xf = testing::random_uniform(size_t(n_tokens * k), 2);
        QuantMatmul ref(wtype, n_tokens, n, k, wf, xf);
        matmul_quant_reference(ref.args);
        const bool available[] = {true, cpu_features().avx2, cpu_features().avx512};
        for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
            if (!available[int(level)]) continue;
            const QuantTraits& tr = *quant_traits_at(wtype, level);
            QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
            matmul_quant_prepare(m.args, 0, n_tokens);
            // Ranges of 10 and 11 rows: whole and cut four-row groups at both ends.
            matmul_quant_run_with(m.args, 0, 10, tr);
            matmul_quant_run_with(m.args, 10, n, tr);
            EXPECT_LT(nmse(m.y, ref.y), 1e-11)
                << dtype_name(wtype) << " " << simd_level_name(level) << " " << nmse(m.y, ref.y);
            ++paths;
        }
    }
    EXPECT_GE(paths, int(matmul_types().size()));
}

// The invariant multi-sequence batching builds on: a token's outputs are the same bits whatever
// batch it is in and however the rows are split (here 1 and 7 tokens, splits at rows 0, 5, 13, 17).
TEST(MatmulQuant, ATokensOutputsDoNotDependOnBatchOrSplit) {
    const int64_t n = 23;
    for (DType wtype : matmul_types()) {
        const int64_t k = 2 * block_of(wtype);
        const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, 31);
        const auto batch = testing::random_values(size_t(7 * k), testing::Dist::StudentT3, 32);
        const std::vector<float> token3(batch.begin() + 3 * k, batch.begin() + 4 * k);
        QuantMatmul one(wtype, 1, n, k, wf, token3);
        matmul_quant_prepare(one.args, 0, 1);
        matmul_quant_run(one.args, 0, n);
        QuantMatmul seven(wtype, 7, n, k, wf, batch);
        matmul_quant_prepare(seven.args, 0, 7);
        for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 5}, {5, 13}, {13, 17}, {17, n}})
            matmul_quant_run(seven.args, b, e);
        EXPECT_EQ(std::memcmp(one.y.data(), seven.y.data() + 3 * n, size_t(n) * sizeof(float)), 0)
            << dtype_name(wtype);
    }
}

// Four-row kernels exist only on AVX-512 today; this checks the matmul's rule for them on any CPU with
// a stand-in whose rows differ from vec_dot's by a marker: each row must get the same kernel (by
// its index alone) whatever range it is run in.
float marked_dot(int64_t n, const void* w, const void* x) {
    return scalar::vec_dot_q4_0_q8_0(n, w, x);
}
void marked_dot4(int64_t n, const void* w, int64_t stride, const void* x, float* out) {
    for (int r = 0; r < 4; ++r)
        out[r] = scalar::vec_dot_q4_0_q8_0(n, static_cast<const uint8_t*>(w) + r * stride, x) + 1000.0f;
}

TEST(MatmulQuant, FourRowKernelIsPickedByRowIndexNotByRange) {
    const int64_t n = 22, k = 64;  // rows 20, 21 are outside any whole group of four
    QuantTraits tr = *quant_traits_at(DType::Q4_0, SimdLevel::Scalar);
    tr.vec_dot = marked_dot;
    tr.vec_dot4 = marked_dot4;
    const auto wf = testing::random_uniform(size_t(n * k), 3);
    const auto xf = testing::random_uniform(size_t(2 * k), 4);
    std::vector<float> first;
    for (const std::vector<int64_t>& cuts :
         std::vector<std::vector<int64_t>>{{0, n}, {0, 1, 6, 7, 21, n}, {0, 3, 9, 18, n}}) {
        QuantMatmul m(DType::Q4_0, 2, n, k, wf, xf);
        matmul_quant_prepare(m.args, 0, 2);
        for (size_t c = 0; c + 1 < cuts.size(); ++c) matmul_quant_run_with(m.args, cuts[c], cuts[c + 1], tr);
        for (int64_t r = 0; r < n; ++r) EXPECT_EQ(m.y[size_t(r)] > 500.0f, r < 20) << "row " << r;
        if (first.empty()) first = m.y;
        EXPECT_EQ(std::memcmp(first.data(), m.y.data(), first.size() * sizeof(float)), 0);
    }
}

// ---- plan time ----

NodeInfo matmul_node(std::vector<int64_t> x_shape, DType wtype, std::vector<int64_t> w_shape) {
    NodeInfo node;
    node.name = "blk.0.attn_q";
    node.op = "matmul";
    node.inputs = {{DType::F32, std::move(x_shape)}, {wtype, std::move(w_shape)}};
    return node;
}

std::string plan_error(const NodeInfo& node) {
    try {
        matmul_quant_infer(node);
    } catch (const PlanError& e) {
        return e.what();
    }
    return "(no PlanError)";
}

TEST(MatmulQuant, InferShapesAndScratch) {
    const std::map<DType, int64_t> act_block_bytes = {
        {DType::Q8_0, 34}, {DType::Q8_1, 36}, {DType::Q8_K, 292}};
    for (DType wtype : matmul_types()) {
        const NodeInfo node = matmul_node({5, 4096}, wtype, {11008, 4096});
        const TensorDesc y = matmul_quant_infer(node);
        EXPECT_EQ(y.dtype, DType::F32);
        EXPECT_EQ(y.shape, (std::vector<int64_t>{5, 11008}));
        const DType act = quant_traits(wtype)->vec_dot_type;
        // xq, then for a gemm that takes off zero points or mins (Q8_0, Q4_0, Q4_K) the int16 sum of each 32
        // activations, 64-byte aligned after xq.
        const int64_t xq = 5 * (4096 / block_of(act)) * act_block_bytes.at(act);
        const bool sums = wtype == DType::Q8_0 || wtype == DType::Q4_0 || wtype == DType::Q4_K;
        EXPECT_EQ(quant_traits(wtype)->gemm_group_sums, sums) << dtype_name(wtype);
        EXPECT_EQ(matmul_quant_scratch_bytes(node), sums ? (xq + 63) / 64 * 64 + 5 * (4096 / 32) * 2 : xq)
            << dtype_name(wtype);
    }
    EXPECT_EQ(quant_traits(DType::Q4_K)->vec_dot_type, DType::Q8_K);
    EXPECT_EQ(quant_traits(DType::Q4_1)->vec_dot_type, DType::Q8_1);
    EXPECT_EQ(quant_traits(DType::Q5_0)->vec_dot_type, DType::Q8_0);
}

TEST(MatmulQuant, PlanErrorsNameTheProblem) {
    EXPECT_THAT(plan_error(matmul_node({2, 40}, DType::Q8_0, {5, 40})),
                AllOf(HasSubstr("[matmul] node 'blk.0.attn_q'"), HasSubstr("40"), HasSubstr("multiple of"),
                      HasSubstr("block size 32")));
    EXPECT_THAT(plan_error(matmul_node({2, 40}, DType::Q4_0, {5, 40})), HasSubstr("q4_0 block size 32"));
    EXPECT_THAT(plan_error(matmul_node({2, 288}, DType::Q4_K, {5, 288})),
                HasSubstr("rows of 288 elements, not a multiple of the q4_k block size 256"));
    EXPECT_THAT(plan_error(matmul_node({2, 64}, DType::Q4_0, {5, 96})),
                AllOf(HasSubstr("rows of 64"), HasSubstr("rows of 96")));
    EXPECT_THAT(plan_error(matmul_node({2, 64}, DType::Q8_0, {2, 5, 64})),
                HasSubstr("expected a matrix (N, K)"));
    EXPECT_THAT(plan_error(matmul_node({2, 256}, DType::IQ2_XXS, {5, 256})),
                HasSubstr("graphrun has no quantized matmul kernel for iq2_xxs"));
    NodeInfo f16_x = matmul_node({2, 64}, DType::Q8_0, {5, 64});
    f16_x.inputs[0].dtype = DType::F16;
    EXPECT_THAT(plan_error(f16_x), HasSubstr("expected f32"));
}

// The planner's choice: one op-table row per runnable type, named by its traits; every other type is
// refused naming the weight tensor, its type and the op.
TEST(MatmulQuant, KernelChoiceFollowsTheTraits) {
    for (DType wtype : matmul_types()) {
        const OpDef& op = choose_kernel(matmul_node({5, 256}, wtype, {64, 256}));
        EXPECT_STREQ(op.name, quant_traits(wtype)->matmul_kernel);
        EXPECT_STREQ(op.op_name(), "matmul");
        EXPECT_EQ(find_op(op.name), &op);
    }
    EXPECT_STREQ(choose_kernel(matmul_node({5, 256}, DType::Q4_K, {64, 256})).name, "matmul_q4_k");
    EXPECT_STREQ(choose_kernel(matmul_node({5, 256}, DType::Q8_0, {64, 256})).name, "matmul_q8_0");
    EXPECT_STREQ(choose_kernel(matmul_node({5, 256}, DType::F16, {64, 256})).name, "matmul_f32");
    NodeInfo iq2 = matmul_node({5, 256}, DType::IQ2_XXS, {64, 256});
    iq2.input_names = {"blk.0.attn_norm", "blk.0.attn_q.weight"};
    try {
        choose_kernel(iq2);
        FAIL();
    } catch (const PlanError& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("[matmul] node 'blk.0.attn_q'"), HasSubstr("'blk.0.attn_q.weight'"),
                                    HasSubstr("iq2_xxs (64, 256)"), HasSubstr("no matmul kernel for iq2_xxs"),
                                    HasSubstr("q4_k")));
    }
}

// ---- accuracy against f32 weights ----

// y = x · Wᵀ in double from the unquantized f32 values.
std::vector<float> f32_matmul(const std::vector<float>& x, const std::vector<float>& w, int64_t t, int64_t n,
                              int64_t k) {
    std::vector<float> y(size_t(t * n));
    for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t c = 0; c < k; ++c) s += double(x[size_t(i * k + c)]) * double(w[size_t(j * k + c)]);
            y[size_t(i * n + j)] = float(s);
        }
    return y;
}

// NMSE against the f32 matmul, two ways: "weights" = dequantized weights · f32 activations (the
// weight format's own error); "as run" = the op itself, which also quantizes the activations.
// Activations are normal(0, 1) rows; bounds are about 2x the measured values (docs/quantization.md
// lists them), one pair per weight distribution.
TEST(MatmulQuant, AccuracyAgainstF32) {
    const int64_t n_tokens = 4, n = 96, k = 2048;
    using Bounds = std::array<std::pair<double, double>, 4>;  // (weights, as run) per distribution
    // Measured (these seeds), as run: uniform / normal / t(3) / outliers
    //   q8_0 4.0e-5 6.5e-5 1.0e-4 1.5e-4   q4_0 4.5e-3 6.9e-3 1.6e-2 2.0e-2 q4_1 3.6e-3 6.4e-3 9.8e-3 1.2e-2
    //   q5_0 9.2e-4 1.8e-3 4.6e-3 8.6e-3   q5_1 9.0e-4 1.6e-3 2.3e-3 2.6e-3 q4_k 2.9e-3 5.3e-3 8.5e-3 1.1e-2
    //   q5_k 7.8e-4 1.4e-3 2.9e-3 2.3e-3   q6_k 2.3e-4 3.9e-4 6.4e-4 9.4e-4
    //   iq4_xs 4.0e-3 6.0e-3 1.1e-2 1.6e-2 iq4_nl 3.9e-3 5.6e-3 1.1e-2 1.4e-2
    // (the weights-only figures are within a few % of these, except Q8_0 and Q6_K where the activations'
    // own quantization is a good part of the total).
    const std::map<DType, Bounds> bounds = {
        {DType::Q8_0, {{{3e-5, 1e-4}, {6e-5, 1.5e-4}, {2e-4, 2.5e-4}, {3e-4, 3e-4}}}},
        {DType::Q4_0, {{{1e-2, 1e-2}, {1.5e-2, 1.5e-2}, {4e-2, 4e-2}, {4e-2, 4e-2}}}},
        {DType::Q4_1, {{{7e-3, 7e-3}, {1.3e-2, 1.3e-2}, {2e-2, 2e-2}, {2.4e-2, 2.4e-2}}}},
        {DType::Q5_0, {{{1.8e-3, 1.8e-3}, {3.5e-3, 3.6e-3}, {9e-3, 9e-3}, {1.7e-2, 1.7e-2}}}},
        {DType::Q5_1, {{{1.7e-3, 1.8e-3}, {3.2e-3, 3.3e-3}, {4.4e-3, 4.5e-3}, {5.3e-3, 5.3e-3}}}},
        {DType::Q4_K, {{{6e-3, 6e-3}, {1.05e-2, 1.06e-2}, {1.7e-2, 1.7e-2}, {2.1e-2, 2.1e-2}}}},
        {DType::Q5_K, {{{1.5e-3, 1.6e-3}, {2.7e-3, 2.7e-3}, {5.6e-3, 5.7e-3}, {4.5e-3, 4.6e-3}}}},
        {DType::Q6_K, {{{3.4e-4, 4.6e-4}, {6.7e-4, 7.7e-4}, {1.2e-3, 1.3e-3}, {1.75e-3, 1.9e-3}}}},
        {DType::IQ4_XS, {{{7.8e-3, 8e-3}, {1.2e-2, 1.2e-2}, {2.2e-2, 2.2e-2}, {3.1e-2, 3.2e-2}}}},
        {DType::IQ4_NL, {{{7.8e-3, 8e-3}, {1.1e-2, 1.1e-2}, {2.1e-2, 2.1e-2}, {2.7e-2, 2.7e-2}}}},
    };
    const testing::Dist dists[] = {testing::Dist::Uniform, testing::Dist::Normal, testing::Dist::StudentT3,
                                   testing::Dist::NormalOutliers};
    const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::Normal, 200);
    for (int d = 0; d < 4; ++d) {
        const auto wf = testing::random_values(size_t(n * k), dists[d], 100);
        const std::vector<float> exact = f32_matmul(xf, wf, n_tokens, n, k);
        std::map<DType, double> run;
        for (DType wtype : matmul_types()) {
            ASSERT_TRUE(bounds.count(wtype)) << "no accuracy bounds for " << dtype_name(wtype);
            QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
            std::vector<float> wdq(wf.size());
            for (int64_t r = 0; r < n; ++r)
                dequantize_row(wtype, &m.w[size_t(r * row_bytes(wtype, k))], &wdq[size_t(r * k)], k);
            const double weights_only = nmse(f32_matmul(xf, wdq, n_tokens, n, k), exact);
            run_split(m.args);
            const double as_run = run[wtype] = nmse(m.y, exact);
            std::printf("[ accuracy ] weights %-24s %-6s NMSE %.2e (weights) %.2e (as run)\n",
                        testing::dist_name(dists[d]), dtype_name(wtype), weights_only, as_run);
            EXPECT_LT(weights_only, bounds.at(wtype)[size_t(d)].first)
                << dtype_name(wtype) << " " << testing::dist_name(dists[d]);
            EXPECT_LT(as_run, bounds.at(wtype)[size_t(d)].second)
                << dtype_name(wtype) << " " << testing::dist_name(dists[d]);
        }
        // More bits, less error, in every family.
        const char* dist = testing::dist_name(dists[d]);
        EXPECT_LT(run[DType::Q8_0], run[DType::Q4_0] / 20) << dist;
        EXPECT_LT(run[DType::Q8_0], run[DType::Q6_K]) << dist;
        EXPECT_LT(run[DType::Q6_K], run[DType::Q5_K]) << dist;
        EXPECT_LT(run[DType::Q5_K], run[DType::Q4_K]) << dist;
        EXPECT_LT(run[DType::Q5_0], run[DType::Q4_0]) << dist;
        EXPECT_LT(run[DType::Q5_1], run[DType::Q4_1]) << dist;
    }
}

}  // namespace
}  // namespace graphrun::ops
