// tests/ops/k_gemm_test.cpp — the K-quant GEMMs (QuantTraits::gemm of Q4_K and Q6_K,
// ops/quant/avx2/k_lanes_gemm.cpp and k_gemm.cpp) against the per-token path they replace: every output bit
// for bit equal to the scalar vec_dot for token counts 1..17 (the row tiles up to 8 tokens, the 4-token lane
// tiles and every remainder above), row counts and ranges that cut the 8- and 16-row groups, K of one to
// many super-blocks (11: past one 8-super-block chunk of lanes), at every SIMD level this CPU has; plus NMSE
// against the float reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "ops/matmul_quant.h"
#include "ops/quant/kernels.h"
#include "tests/common/quant_test_util.h"

namespace graphrun::ops {
namespace {

using testing::matmul_quant_prepare;
using testing::QuantMatmul;

using testing::per_token_scalar;

std::vector<SimdLevel> levels_with_gemm(DType wtype) {
    std::vector<SimdLevel> out;
    for (SimdLevel level : kSimdLevels)
        if (simd_level_available(level) && quant_traits_at(wtype, level)->gemm) out.push_back(level);
    return out;
}

// The types with a K-quant GEMM: together, a Q4_K_M file's matrices.
constexpr DType kTypes[] = {DType::Q4_K, DType::Q6_K};

TEST(KQuantGemm, Q4KAndQ6KHaveAGemmAtTheAvx2LevelWhichTheAvx512LevelRuns) {
    EXPECT_EQ(quant_traits_at(DType::Q4_K, SimdLevel::Scalar)->gemm, nullptr);
    EXPECT_EQ(quant_traits_at(DType::Q4_K, SimdLevel::Avx2)->gemm, avx2::gemm_lanes_q4_k_q8_k);
    EXPECT_EQ(quant_traits_at(DType::Q4_K, SimdLevel::Avx512)->gemm, avx2::gemm_lanes_q4_k_q8_k);
    EXPECT_EQ(quant_traits_at(DType::Q6_K, SimdLevel::Scalar)->gemm, nullptr);
    EXPECT_EQ(quant_traits_at(DType::Q6_K, SimdLevel::Avx2)->gemm, avx2::gemm_lanes_q6_k_q8_k);
    EXPECT_EQ(quant_traits_at(DType::Q6_K, SimdLevel::Avx512)->gemm, avx2::gemm_lanes_q6_k_q8_k);
}

// The bit-for-bit rule over tokens 1..17 and odd row counts, the rows split in three uneven ranges.
TEST(KQuantGemm, EveryOutputEqualsTheScalarPerTokenDotBitForBit) {
    for (const DType wtype : kTypes) {
        SCOPED_TRACE(dtype_name(wtype));
        const std::vector<SimdLevel> levels = levels_with_gemm(wtype);
        if (levels.empty()) GTEST_SKIP() << "no level with a K-quant gemm on this CPU";
        int checked = 0;
        for (auto [n, k] :
             {std::pair<int64_t, int64_t>{1, 256}, {5, 3 * 256}, {19, 2 * 256}, {37, 7 * 256}, {11, 11 * 256}}) {
            const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, uint32_t(n * 7 + k));
            for (int64_t n_tokens = 1; n_tokens <= 17; ++n_tokens) {
                const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3,
                                                       uint32_t(n_tokens + k));
                QuantMatmul ref(wtype, n_tokens, n, k, wf, xf);
                matmul_quant_prepare(ref.args, 0, n_tokens);
                const std::vector<float> want = per_token_scalar(ref, wtype, n_tokens, n, k);
                for (SimdLevel level : levels) {
                    QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
                    matmul_quant_prepare(m.args, 0, n_tokens);
                    const int64_t cut1 = n / 3 + 1,
                                  cut2 = std::max(cut1, n - n / 4);  // cut the 16-row blocks
                    const QuantTraits& tr = *quant_traits_at(wtype, level);
                    matmul_quant_run_with(m.args, 0, cut1, tr);
                    if (cut1 < cut2) matmul_quant_run_with(m.args, cut1, cut2, tr);
                    if (cut2 < n) matmul_quant_run_with(m.args, cut2, n, tr);
                    ASSERT_EQ(std::memcmp(m.y.data(), want.data(), want.size() * sizeof(float)), 0)
                        << simd_level_name(level) << " tokens " << n_tokens << " N " << n << " K " << k;
                    ++checked;
                }
            }
        }
        EXPECT_GE(checked, 68);
    }
}

// One row at a time, the smallest ranges the executor could make: the whole call's bits.
TEST(KQuantGemm, SingleRowRangesGiveTheWholeCallsBits) {
    for (const DType wtype : kTypes) {
        SCOPED_TRACE(dtype_name(wtype));
        const int64_t n = 21, k = 5 * 256;
        for (SimdLevel level : levels_with_gemm(wtype))
            for (int64_t n_tokens : {2, 9, 16}) {
                EXPECT_TRUE(testing::single_row_ranges_give_whole_call_bits(
                    wtype, *quant_traits_at(wtype, level), n_tokens, n, k))
                    << simd_level_name(level) << " tokens " << n_tokens;
            }
    }
}

// A token's outputs do not depend on the batch it came in: token t of a 13-token call equals the same
// token run alone (the decode path) and in a 3-token call (a remainder tile).
TEST(KQuantGemm, ATokensOutputsDoNotDependOnTheBatch) {
    for (const DType wtype : kTypes) {
        SCOPED_TRACE(dtype_name(wtype));
        const int64_t n = 18, k = 4 * 256, n_tokens = 13;
        const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, 31);
        const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3, 32);
        for (SimdLevel level : levels_with_gemm(wtype)) {
            const QuantTraits& tr = *quant_traits_at(wtype, level);
            QuantMatmul all(wtype, n_tokens, n, k, wf, xf);
            matmul_quant_prepare(all.args, 0, n_tokens);
            matmul_quant_run_with(all.args, 0, n, tr);
            for (int64_t first : {int64_t(0), int64_t(9)})
                for (int64_t count : {int64_t(1), int64_t(3)}) {
                    const std::vector<float> part(xf.begin() + first * k, xf.begin() + (first + count) * k);
                    QuantMatmul m(wtype, count, n, k, wf, part);
                    matmul_quant_prepare(m.args, 0, count);
                    matmul_quant_run_with(m.args, 0, n, tr);
                    EXPECT_EQ(std::memcmp(m.y.data(), all.y.data() + first * n, m.y.size() * sizeof(float)),
                              0)
                        << simd_level_name(level) << " tokens " << first << ".." << first + count - 1;
                }
        }
    }
}

// Tiny weights make subnormal fp16 super-block scales: still the scalar path's bits.
TEST(KQuantGemm, SubnormalWeightScalesGiveTheScalarBits) {
    for (const DType wtype : kTypes) {
        SCOPED_TRACE(dtype_name(wtype));
        const int64_t n = 9, k = 2 * 256;
        auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, 21);
        // Small enough for a subnormal fp16 d: Q6_K's d is the largest scale / 128, Q4_K's larger.
        const float small = wtype == DType::Q6_K ? 1e-2f : 1e-5f;
        for (float& v : wf) v *= small;
        for (SimdLevel level : levels_with_gemm(wtype))
            for (int64_t n_tokens : {1, 6}) {
                const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3, 22);
                QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
                uint16_t d0;
                // The first super-block's d: Q4_K's leads its bytes, Q6_K's ends them.
                std::memcpy(&d0, m.w.data() + (wtype == DType::Q6_K ? offsetof(block_q6_K, d) : 0),
                            sizeof d0);
                ASSERT_TRUE((d0 & 0x7c00) == 0 && (d0 & 0x3ff) != 0) << "d " << d0;
                matmul_quant_prepare(m.args, 0, n_tokens);
                matmul_quant_run_with(m.args, 0, n, *quant_traits_at(wtype, level));
                const std::vector<float> want = per_token_scalar(m, wtype, n_tokens, n, k);
                EXPECT_EQ(std::memcmp(m.y.data(), want.data(), want.size() * sizeof(float)), 0)
                    << simd_level_name(level) << " tokens " << n_tokens;
            }
    }
}

// The gemm against the op's float reference (dequantized weights, double sums).
TEST(KQuantGemm, MatchesTheFloatReference) {
    for (const DType wtype : kTypes) {
        SCOPED_TRACE(dtype_name(wtype));
        const int64_t n = 37, k = 11 * 256, n_tokens = 10;
        const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, 11);
        const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3, 12);
        for (SimdLevel level : levels_with_gemm(wtype)) {
            QuantMatmul m(wtype, n_tokens, n, k, wf, xf), ref(wtype, n_tokens, n, k, wf, xf);
            matmul_quant_prepare(m.args, 0, n_tokens);
            matmul_quant_run_with(m.args, 0, n, *quant_traits_at(wtype, level));
            matmul_quant_reference(ref.args);
            EXPECT_LT(testing::nmse(m.y, ref.y), 1e-8)
                << simd_level_name(level) << " " << testing::nmse(m.y, ref.y);
        }
    }
}

// The integer ranges at their ends: Q6_K weights of one magnitude (quants 0 and 63) against activations
// at +-127 / -128 (Q8_K's ends), the pairs maddubs adds at their largest: still the scalar path's bits.
TEST(KQuantGemm, Q6KQuantsAndActivationsAtTheirEndsGiveTheScalarBits) {
    const DType wtype = DType::Q6_K;
    const int64_t n = 17, k = 3 * 256, n_tokens = 9;
    std::vector<float> wf(size_t(n * k)), xf(size_t(n_tokens * k));
    for (size_t i = 0; i < wf.size(); ++i) wf[i] = (i / 3) % 2 ? 1.0f : -1.0f;
    for (size_t i = 0; i < xf.size(); ++i) xf[i] = (i / 2) % 2 ? 2.0f : -2.0f;
    for (SimdLevel level : levels_with_gemm(wtype)) {
        QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
        matmul_quant_prepare(m.args, 0, n_tokens);
        matmul_quant_run_with(m.args, 0, n, *quant_traits_at(wtype, level));
        const std::vector<float> want = per_token_scalar(m, wtype, n_tokens, n, k);
        EXPECT_EQ(std::memcmp(m.y.data(), want.data(), want.size() * sizeof(float)), 0)
            << simd_level_name(level);
    }
}

}  // namespace
}  // namespace graphrun::ops
