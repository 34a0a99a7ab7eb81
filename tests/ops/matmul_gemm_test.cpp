// tests/ops/matmul_gemm_test.cpp — the tiled quantized matmuls (QuantTraits::gemm, Q8_0 / Q4_0 at the AVX2
// and the AVX-512 level, each on a CPU that has it) against their reference, the per-token path: every
// output bit for bit equal to scalar::vec_dot for any number of tokens (1..37, all micro-tile shapes
// and their remainders), rows that are not multiples of the tile, K across the transposed chunks, any
// split of the rows into ranges; plus NMSE against the float reference and the plan dump's name for
// the path.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ops/matmul_quant.h"
#include "ops/op_table.h"
#include "ops/quant/kernels.h"
#include "tests/common/quant_test_util.h"

namespace graphrun::ops {
namespace {

using testing::matmul_quant_prepare;
using testing::per_token_scalar;
using testing::QuantMatmul;

constexpr DType kGemmTypes[] = {DType::Q8_0, DType::Q4_0};

// The levels with a gemm of their own that this CPU runs.
std::vector<SimdLevel> gemm_levels_here() {
    std::vector<SimdLevel> levels;
    if (cpu_features().avx2) levels.push_back(SimdLevel::Avx2);
    if (cpu_features().avx512) levels.push_back(SimdLevel::Avx512);
    return levels;
}

TEST(MatmulGemm, TheSimdLevelsHaveAGemmForQ8AndQ4) {
    for (DType t : kGemmTypes) {
        EXPECT_NE(quant_traits_at(t, SimdLevel::Avx2)->gemm, nullptr) << dtype_name(t);
        EXPECT_EQ(quant_traits_at(t, SimdLevel::Scalar)->gemm, nullptr) << dtype_name(t);
        // The AVX-512 level has a VNNI GEMM of its own (ops/quant/avx512/lanes_gemm.cpp).
        EXPECT_NE(quant_traits_at(t, SimdLevel::Avx512)->gemm, nullptr) << dtype_name(t);
        EXPECT_NE(quant_traits_at(t, SimdLevel::Avx512)->gemm, quant_traits_at(t, SimdLevel::Avx2)->gemm)
            << dtype_name(t);
    }
    // Q4_K's is the AVX2 one at both levels.
    EXPECT_EQ(quant_traits_at(DType::Q4_K, SimdLevel::Avx512)->gemm,
              quant_traits_at(DType::Q4_K, SimdLevel::Avx2)->gemm);
    EXPECT_EQ(quant_traits_at(DType::Q5_K, SimdLevel::Avx2)->gemm, nullptr);
}

// The bit-for-bit rule, over token counts 1..37 and odd row counts, with the rows split unevenly.
TEST(MatmulGemm, EveryOutputEqualsTheScalarPerTokenDotBitForBit) {
    if (!cpu_features().avx2) GTEST_SKIP() << "this CPU has no AVX2";
    int checked = 0;
    for (SimdLevel level : gemm_levels_here())
        for (DType wtype : kGemmTypes) {
            const QuantTraits& tr = *quant_traits_at(wtype, level);
            // K = 70 blocks crosses the transposed chunks of both levels (32 and 64 blocks).
            for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 32},
                                {13, 7 * 32},
                                {29, 17 * 32},
                                {40, 9 * 32},
                                {21, 70 * 32}}) {
                const auto wf =
                    testing::random_values(size_t(n * k), testing::Dist::Normal, uint32_t(n * 7 + k));
                for (int64_t n_tokens = 1; n_tokens <= 37; n_tokens += (n > 20 ? 3 : 1)) {
                    const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3,
                                                           uint32_t(n_tokens + k));
                    QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
                    matmul_quant_prepare(m.args, 0, n_tokens);
                    const int64_t cut = n / 3 + 1;  // ranges cutting micro-tiles and row tiles
                    matmul_quant_run_with(m.args, 0, cut, tr);
                    if (cut < n) matmul_quant_run_with(m.args, cut, n, tr);
                    const std::vector<float> want = per_token_scalar(m, wtype, n_tokens, n, k);
                    ASSERT_EQ(std::memcmp(m.y.data(), want.data(), want.size() * sizeof(float)), 0)
                        << simd_level_name(level) << " " << dtype_name(wtype) << " tokens " << n_tokens
                        << " N " << n << " K " << k;
                    ++checked;
                }
            }
        }
    EXPECT_GT(checked, 100);
}

// One row at a time, as small ranges as the executor could make: still the same bits as one call.
TEST(MatmulGemm, SingleRowRangesGiveTheWholeCallsBits) {
    if (!cpu_features().avx2) GTEST_SKIP() << "this CPU has no AVX2";
    const int64_t n = 19, k = 11 * 32, n_tokens = 11;
    for (SimdLevel level : gemm_levels_here())
        for (DType wtype : kGemmTypes) {
            EXPECT_TRUE(testing::single_row_ranges_give_whole_call_bits(wtype, *quant_traits_at(wtype, level),
                                                                        n_tokens, n, k))
                << simd_level_name(level) << " " << dtype_name(wtype);
        }
}

// Tiny weights make subnormal fp16 block scales, which the decode tile converts with F16C and the
// scalar path through fp16_to_f32: still the same bits, at one token and in a prompt's remainder.
TEST(MatmulGemm, SubnormalWeightScalesGiveTheScalarBits) {
    if (!cpu_features().avx2) GTEST_SKIP() << "this CPU has no AVX2";
    const int64_t n = 21, k = 9 * 32;
    for (SimdLevel level : gemm_levels_here())
        for (DType wtype : kGemmTypes) {
            auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, 21);
            for (float& v : wf) v *= 1e-4f;  // block amax ~3e-4: d = amax / 127 or / 8, below fp16's 6.1e-5
            for (int64_t n_tokens : {1, 5, 8}) {
                const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3, 22);
                QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
                uint16_t d0;
                std::memcpy(&d0, m.w.data(), sizeof d0);  // the first block's scale leads its bytes
                ASSERT_TRUE((d0 & 0x7c00) == 0 && (d0 & 0x3ff) != 0) << dtype_name(wtype) << " d " << d0;
                matmul_quant_prepare(m.args, 0, n_tokens);
                matmul_quant_run_with(m.args, 0, n, *quant_traits_at(wtype, level));
                const std::vector<float> want = per_token_scalar(m, wtype, n_tokens, n, k);
                EXPECT_EQ(std::memcmp(m.y.data(), want.data(), want.size() * sizeof(float)), 0)
                    << simd_level_name(level) << " " << dtype_name(wtype) << " tokens " << n_tokens;
            }
        }
}

TEST(MatmulGemm, VecDotAtTheAvx2LevelIsTheScalarPathsBits) {
    if (!cpu_features().avx2) GTEST_SKIP() << "this CPU has no AVX2";
    for (DType wtype : kGemmTypes)
        for (int64_t k : {32, 7 * 32, 8 * 32, 21 * 32}) {
            const auto wf = testing::random_values(size_t(k), testing::Dist::Normal, uint32_t(k));
            const auto xf = testing::random_values(size_t(k), testing::Dist::StudentT3, uint32_t(k + 1));
            const auto w = testing::quantize_matrix(wtype, wf, 1, k);
            const auto xq = testing::quantize_matrix(DType::Q8_0, xf, 1, k);
            const float want = quant_traits_at(wtype, SimdLevel::Scalar)->vec_dot(k, w.data(), xq.data());
            const float got = quant_traits_at(wtype, SimdLevel::Avx2)->vec_dot(k, w.data(), xq.data());
            EXPECT_EQ(std::memcmp(&want, &got, sizeof want), 0) << dtype_name(wtype) << " K " << k;
        }
}

// The gemm against the op's float reference (dequantized weights, double sums).
TEST(MatmulGemm, MatchesTheFloatReference) {
    if (!cpu_features().avx2) GTEST_SKIP() << "this CPU has no AVX2";
    const int64_t n = 37, k = 2048 + 96, n_tokens = 9;
    for (SimdLevel level : gemm_levels_here())
        for (DType wtype : kGemmTypes) {
            const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, 11);
            const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3, 12);
            QuantMatmul m(wtype, n_tokens, n, k, wf, xf), ref(wtype, n_tokens, n, k, wf, xf);
            matmul_quant_prepare(m.args, 0, n_tokens);
            matmul_quant_run_with(m.args, 0, n, *quant_traits_at(wtype, level));
            matmul_quant_reference(ref.args);
            EXPECT_LT(testing::nmse(m.y, ref.y), 1e-11)
                << dtype_name(wtype) << " " << testing::nmse(m.y, ref.y);
        }
}

// The plan dump names the path ("matmul_q4_0/avx2+gemm") exactly when the matmul runs it: at the level
// whose traits have the gemm, for the weight types that have one.
TEST(MatmulGemm, ThePlanNamesThePathWhenItRuns) {
    for (const SimdLevel level : kSimdLevels) {
        for (const DType wtype : {DType::Q8_0, DType::Q4_0, DType::Q4_K}) {
            const OpDef* op = find_op(quant_traits(wtype)->matmul_kernel);
            ASSERT_NE(op, nullptr) << dtype_name(wtype);
            const std::vector<TensorDesc> inputs = {{DType::F32, {3, 64}}, {wtype, {8, 256}}};
            const char* variant = op->path_variant ? op->path_variant(inputs, level) : nullptr;
            if (quant_traits_at(wtype, level)->gemm) {
                ASSERT_NE(variant, nullptr) << op->name << " at " << simd_level_name(level);
                EXPECT_STREQ(variant, "gemm");
            } else {
                EXPECT_EQ(variant, nullptr) << op->name << " at " << simd_level_name(level);
            }
        }
    }
    EXPECT_NE(quant_traits_at(DType::Q4_0, SimdLevel::Avx2)->gemm, nullptr);
    EXPECT_EQ(quant_traits_at(DType::Q5_K, SimdLevel::Avx2)->gemm, nullptr);
}

}  // namespace
}  // namespace graphrun::ops
