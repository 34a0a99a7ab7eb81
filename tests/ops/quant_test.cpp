// tests/ops/quant_test.cpp — Q8_0 / Q4_0 quantizers (ggml's rounding, bit for bit), the block layouts,
// F16 row conversions, and every SIMD dot product path against the scalar one.
#include "ops/quant/traits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ops/quant/kernels.h"
#include "runtime/fp16.h"
#include "tests/common/quant_test_util.h"

namespace graphrun::ops {
namespace {

using testing::nmse;
using testing::random_uniform;

// ---- hand-made blocks: the byte layout and the rounding rules ----

TEST(QuantQ8_0, HandBlockRoundsHalfAwayFromZero) {
    // amax 127 makes d = 1 and 1/d = 1, so q = roundf(x) exactly: halves go away from zero.
    float x[kQK] = {127.0f, -63.5f, 2.5f, -2.5f, 0.49999997f, -0.5f, 1.5f, -126.4f};
    block_q8_0 b;
    quantize_row_q8_0_ref(x, &b, kQK);
    EXPECT_EQ(b.d, 0x3c00);  // fp16 1.0
    const int8_t expected[8] = {127, -64, 3, -3, 0, -1, 2, -126};
    for (int j = 0; j < 8; ++j) EXPECT_EQ(b.qs[j], expected[j]) << "element " << j;
    for (int j = 8; j < kQK; ++j) EXPECT_EQ(b.qs[j], 0) << "element " << j;
}

TEST(QuantQ4_0, HandBlockNibbleLayout) {
    // The extreme is -8 (negative), so d = -8 / -8 = 1 and q = trunc(x + 8.5) = x + 8 for integers.
    // Weights 0..15 count up from -8, weights 16..31 count down from 7.
    float x[kQK];
    for (int j = 0; j < 16; ++j) x[j] = float(j - 8);
    for (int j = 0; j < 16; ++j) x[16 + j] = float(7 - j);
    block_q4_0 b;
    quantize_row_q4_0_ref(x, &b, kQK);
    EXPECT_EQ(b.d, 0x3c00);
    uint8_t raw[sizeof(block_q4_0)];
    std::memcpy(raw, &b, sizeof raw);
    EXPECT_EQ(raw[0], 0x00);  // d, little-endian fp16 0x3c00
    EXPECT_EQ(raw[1], 0x3c);
    // Byte j: low nibble = weight j (q = j), high nibble = weight 16 + j (q = 15 - j).
    for (int j = 0; j < 16; ++j) EXPECT_EQ(raw[2 + j], uint8_t(j | (15 - j) << 4)) << "byte " << j;
    float y[kQK];
    dequantize_row_q4_0(&b, y, kQK);
    for (int j = 0; j < kQK; ++j) EXPECT_EQ(y[j], x[j]) << "element " << j;
}

TEST(QuantQ4_0, SignedExtremeSetsTheScale) {
    // A positive extreme gives a negative d: the extreme itself lands on q = 0 (-8 * d = +max),
    // and the far side of the range clamps at q = 15 (7 * d).
    float x[kQK] = {};
    x[3] = 4.0f;   // the extreme: d = 4 / -8 = -0.5
    x[5] = -4.0f;  // would be q = 16: clamps to 15 -> 7 * -0.5 = -3.5
    x[7] = 0.25f;  // x / d + 8.5 = 8: q = 8 -> 0 (round half up in units of d, towards -inf in x)
    block_q4_0 b;
    quantize_row_q4_0_ref(x, &b, kQK);
    EXPECT_EQ(fp16_to_f32(b.d), -0.5f);
    float y[kQK];
    dequantize_row_q4_0(&b, y, kQK);
    EXPECT_EQ(y[3], 4.0f);
    EXPECT_EQ(y[5], -3.5f);
    EXPECT_EQ(y[7], 0.0f);
    EXPECT_EQ(y[0], 0.0f);
}

TEST(QuantQ4_0, AllZeroBlockHasZeroScale) {
    float x[kQK] = {};
    block_q4_0 b4;
    block_q8_0 b8;
    quantize_row_q4_0_ref(x, &b4, kQK);
    quantize_row_q8_0_ref(x, &b8, kQK);
    EXPECT_EQ(b4.d, 0x8000);  // d = 0 / -8 = -0.0, and ggml stores that sign too
    EXPECT_EQ(b8.d, 0x0000);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(b4.qs[j], 0x88);  // q = 8: weight 0
    for (int j = 0; j < kQK; ++j) EXPECT_EQ(b8.qs[j], 0);
}

// ---- quantize -> dequantize error bounds ----

// Per element, Q8_0's error is at most half a step of the float d plus what rounding d to fp16
// moves the largest level: |x - d16 q| <= d/2 + 127 |d - d16| <= d (1/2 + 127 * 2^-11).
TEST(QuantQ8_0, RoundTripErrorWithinHalfAStep) {
    for (testing::Dist dist : {testing::Dist::Uniform, testing::Dist::Normal, testing::Dist::StudentT3}) {
        const int64_t n = 4096 + 96;
        const std::vector<float> x = testing::random_values(size_t(n), dist, 7);
        std::vector<block_q8_0> q(size_t(n / kQK));
        std::vector<float> y(static_cast<size_t>(n));
        quantize_row_q8_0_ref(x.data(), q.data(), n);
        dequantize_row_q8_0(q.data(), y.data(), n);
        for (int64_t b = 0; b < n / kQK; ++b) {
            float amax = 0;
            for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[size_t(b * kQK + j)]));
            const float bound = amax / 127 * (0.5f + 127.0f / 2048.0f) * 1.0001f;
            for (int j = 0; j < kQK; ++j) {
                const size_t i = size_t(b * kQK + j);
                ASSERT_LE(std::fabs(x[i] - y[i]), bound) << testing::dist_name(dist) << " element " << i;
            }
        }
        EXPECT_LT(nmse(y, x), 1e-4) << testing::dist_name(dist);
    }
}

// Q4_0: a full step |d| at most (only the clamped far side of the range reaches it), plus fp16 d.
TEST(QuantQ4_0, RoundTripErrorWithinAStep) {
    // Measured NMSE: uniform 4.2e-3, normal 7.3e-3, student-t(3) 1.75e-2 (heavy tails stretch d).
    const std::pair<testing::Dist, double> cases[] = {
        {testing::Dist::Uniform, 1e-2}, {testing::Dist::Normal, 1.5e-2}, {testing::Dist::StudentT3, 4e-2}};
    for (auto [dist, nmse_bound] : cases) {
        const int64_t n = 4096 + 96;
        const std::vector<float> x = testing::random_values(size_t(n), dist, 11);
        std::vector<block_q4_0> q(size_t(n / kQK));
        std::vector<float> y(static_cast<size_t>(n));
        quantize_row_q4_0_ref(x.data(), q.data(), n);
        dequantize_row_q4_0(q.data(), y.data(), n);
        int64_t beyond_half_step = 0;
        for (int64_t b = 0; b < n / kQK; ++b) {
            float amax = 0;
            for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[size_t(b * kQK + j)]));
            const float d = amax / 8;
            for (int j = 0; j < kQK; ++j) {
                const size_t i = size_t(b * kQK + j);
                const float err = std::fabs(x[i] - y[i]);
                ASSERT_LE(err, d * (1.0f + 15.0f / 2048.0f) * 1.0001f)
                    << testing::dist_name(dist) << " element " << i;
                if (err > d * (0.5f + 15.0f / 2048.0f) * 1.0001f) ++beyond_half_step;
            }
        }
        // Only values beyond 7.5 |d| on the side opposite the extreme are clamped: few of them.
        EXPECT_LT(beyond_half_step, n / 20) << testing::dist_name(dist);
        EXPECT_LT(nmse(y, x), nmse_bound) << testing::dist_name(dist);
    }
}

// ---- traits ----

TEST(QuantTraits, TableCoversTheWeightTypes) {
    for (DType t : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0}) {
        const QuantTraits* tr = quant_traits(t);
        ASSERT_NE(tr, nullptr) << dtype_name(t);
        EXPECT_EQ(tr->type, t);
        EXPECT_NE(tr->quantize_row, nullptr);
        EXPECT_NE(tr->dequantize_row, nullptr);
    }
    EXPECT_EQ(quant_traits(DType::I32), nullptr);
    EXPECT_NE(quant_traits(DType::Q8_0)->vec_dot, nullptr);
    EXPECT_NE(quant_traits(DType::Q4_0)->vec_dot, nullptr);
    EXPECT_EQ(quant_traits(DType::Q4_0)->vec_dot_type, DType::Q8_0);
    EXPECT_EQ(quant_traits(DType::Q8_0)->vec_dot_type, DType::Q8_0);
    EXPECT_THROW(dequantize_row(DType::I32, nullptr, nullptr, 0), std::invalid_argument);
}

TEST(QuantTraits, RowsRoundTripThroughEachType) {
    const int64_t n = 96;
    const std::vector<float> x = random_uniform(size_t(n), 3);
    const std::pair<DType, double> bounds[] = {
        {DType::F32, 0.0}, {DType::F16, 1e-7}, {DType::Q8_0, 1e-4}, {DType::Q4_0, 1e-2}};
    for (auto [type, bound] : bounds) {
        std::vector<uint8_t> row(size_t(row_bytes(type, n)));
        std::vector<float> y(static_cast<size_t>(n));
        quant_traits(type)->quantize_row(x.data(), row.data(), n);
        dequantize_row(type, row.data(), y.data(), n);
        EXPECT_LE(nmse(y, x), bound) << dtype_name(type);
    }
}

TEST(QuantTraits, DispatchedQuantizersEqualTheReference) {
    const int64_t n = 4096 + 32;
    const std::vector<float> x = testing::random_values(size_t(n), testing::Dist::StudentT3, 5);
    std::vector<block_q8_0> ref8(size_t(n / kQK)), got8(size_t(n / kQK));
    quantize_row_q8_0_ref(x.data(), ref8.data(), n);
    quant_traits(DType::Q8_0)->quantize_row(x.data(), got8.data(), n);
    EXPECT_EQ(std::memcmp(ref8.data(), got8.data(), ref8.size() * sizeof(block_q8_0)), 0);
    std::vector<block_q4_0> ref4(size_t(n / kQK)), got4(size_t(n / kQK));
    quantize_row_q4_0_ref(x.data(), ref4.data(), n);
    quant_traits(DType::Q4_0)->quantize_row(x.data(), got4.data(), n);
    EXPECT_EQ(std::memcmp(ref4.data(), got4.data(), ref4.size() * sizeof(block_q4_0)), 0);
}

// ---- SIMD paths against the scalar ones ----

TEST(QuantSimd, Avx2QuantizeQ8_0IsBitIdentical) {
    if (!cpu_features().avx2) GTEST_SKIP() << "CPU has no AVX2/FMA/F16C";
    // Blocks whose amax is 127 quantize with 1/d = 1: exact .5 ties reach the rounding step.
    std::vector<float> x = testing::random_values(32 * 64, testing::Dist::Normal, 21);
    for (int j = 0; j < kQK; ++j) x[size_t(j)] = j == 0 ? 127.0f : float(j) - 15.5f;
    for (int j = 0; j < kQK; ++j) x[size_t(kQK + j)] = j == 0 ? -127.0f : -float(j) * 2.5f;
    for (int j = 0; j < kQK; ++j) x[size_t(2 * kQK + j)] = 0.0f;  // all-zero block
    const int64_t n = int64_t(x.size());
    std::vector<block_q8_0> ref(size_t(n / kQK)), got(size_t(n / kQK));
    quantize_row_q8_0_ref(x.data(), ref.data(), n);
    avx2::quantize_row_q8_0(x.data(), got.data(), n);
    for (size_t b = 0; b < ref.size(); ++b)
        ASSERT_EQ(std::memcmp(&ref[b], &got[b], sizeof(block_q8_0)), 0) << "block " << b;
}

TEST(QuantSimd, F16RowConversionsMatchScalar) {
    if (!cpu_features().avx2) GTEST_SKIP() << "CPU has no AVX2/FMA/F16C";
    // Every half value (NaNs compared as NaNs: the payload is not part of the contract).
    std::vector<uint16_t> h(65536 + 5);
    for (size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i);
    std::vector<float> a(h.size()), b(h.size());
    scalar::f16_to_f32_row(h.data(), a.data(), int64_t(h.size()));
    avx2::f16_to_f32_row(h.data(), b.data(), int64_t(h.size()));
    for (size_t i = 0; i < h.size(); ++i) {
        if (std::isnan(a[i])) {
            ASSERT_TRUE(std::isnan(b[i])) << i;
            continue;
        }
        ASSERT_EQ(std::memcmp(&a[i], &b[i], 4), 0) << "half 0x" << std::hex << h[i];
    }
    // Floats around every rounding case: normal, ties, subnormal halves, overflow to inf.
    std::vector<float> f = testing::random_values(4099, testing::Dist::StudentT3, 9);
    for (float& v : f) v *= 30.0f;
    f[0] = 65504.0f, f[1] = 65520.0f, f[2] = 1e-7f, f[3] = 5.9604645e-8f, f[4] = 2.98e-8f;
    f[5] = 1.0f + 1.0f / 2048.0f, f[6] = -1.0f - 3.0f / 2048.0f, f[7] = -0.0f, f[8] = 6.1e-5f;
    f[9] = std::numeric_limits<float>::infinity(), f[10] = 1e-3f;
    std::vector<uint16_t> ha(f.size()), hb(f.size());
    scalar::f32_to_f16_row(f.data(), ha.data(), int64_t(f.size()));
    avx2::f32_to_f16_row(f.data(), hb.data(), int64_t(f.size()));
    for (size_t i = 0; i < f.size(); ++i) ASSERT_EQ(ha[i], hb[i]) << "float " << f[i];
}

using DotFn = float (*)(int64_t, const void*, const void*);
struct DotPath {
    const char* name;
    bool available;
    DotFn q8;
    DotFn q4;
};

// The AVX-512 level runs these too (ops/quant/avx512/README.md).
std::vector<DotPath> simd_paths() {
    return {{"avx2", cpu_features().avx2, avx2::vec_dot_q8_0_q8_0, avx2::vec_dot_q4_0_q8_0}};
}

// Each path against scalar over an odd number of rows, for K of 1, 3, 5 (odd tails for the
// two- and four-block loops) and 129 blocks.
TEST(QuantSimd, VecDotPathsMatchScalar) {
    const int64_t rows = 7;
    int tested = 0;
    for (int64_t k : {32, 96, 160, 4096 + 32}) {
        const std::vector<float> wf =
            testing::random_values(size_t(rows * k), testing::Dist::Normal, uint32_t(k));
        const std::vector<float> xf =
            testing::random_values(size_t(k), testing::Dist::StudentT3, uint32_t(k + 1));
        const std::vector<uint8_t> w8 = testing::quantize_matrix(DType::Q8_0, wf, rows, k);
        const std::vector<uint8_t> w4 = testing::quantize_matrix(DType::Q4_0, wf, rows, k);
        const std::vector<uint8_t> xq = testing::quantize_matrix(DType::Q8_0, xf, 1, k);
        std::vector<float> ref8(rows), ref4(rows);
        for (int64_t r = 0; r < rows; ++r) {
            ref8[size_t(r)] =
                scalar::vec_dot_q8_0_q8_0(k, &w8[size_t(r * row_bytes(DType::Q8_0, k))], xq.data());
            ref4[size_t(r)] =
                scalar::vec_dot_q4_0_q8_0(k, &w4[size_t(r * row_bytes(DType::Q4_0, k))], xq.data());
        }
        for (const DotPath& path : simd_paths()) {
            if (!path.available) continue;
            ++tested;
            std::vector<float> got8(rows), got4(rows);
            for (int64_t r = 0; r < rows; ++r) {
                got8[size_t(r)] = path.q8(k, &w8[size_t(r * row_bytes(DType::Q8_0, k))], xq.data());
                got4[size_t(r)] = path.q4(k, &w4[size_t(r * row_bytes(DType::Q4_0, k))], xq.data());
            }
            // Same per-block products, float sums in the scalar path's order: the same bits.
            for (int64_t r = 0; r < rows; ++r) {
                EXPECT_EQ(got8[size_t(r)], ref8[size_t(r)]) << path.name << " q8_0 K=" << k << " row " << r;
                EXPECT_EQ(got4[size_t(r)], ref4[size_t(r)]) << path.name << " q4_0 K=" << k << " row " << r;
            }
        }
    }
    if (tested == 0) GTEST_SKIP() << "no SIMD path on this CPU";
}

// Extreme integer values: every weight at the format's limit and activations at +-127 push the
// int16 pair sums (AVX2 maddubs) to their worst case.
TEST(QuantSimd, VecDotExtremesMatchScalarExactly) {
    const int64_t k = 96;
    std::vector<block_q8_0> w8(size_t(k / kQK)), x8(size_t(k / kQK));
    std::vector<block_q4_0> w4(size_t(k / kQK));
    for (size_t b = 0; b < w8.size(); ++b) {
        w8[b].d = x8[b].d = w4[b].d = 0x3c00;  // 1.0: all sums are small exact integers
        for (int j = 0; j < kQK; ++j) {
            w8[b].qs[j] = int8_t(b == 1 ? -128 : (j % 2 ? 127 : -127));
            x8[b].qs[j] = int8_t(j % 3 ? 127 : -127);
        }
        for (int j = 0; j < 16; ++j) w4[b].qs[j] = uint8_t(b == 1 ? 0x00 : (j % 2 ? 0xff : 0x0f));
    }
    const float ref8 = scalar::vec_dot_q8_0_q8_0(k, w8.data(), x8.data());
    const float ref4 = scalar::vec_dot_q4_0_q8_0(k, w4.data(), x8.data());
    for (const DotPath& path : simd_paths()) {
        if (!path.available) continue;
        EXPECT_EQ(path.q8(k, w8.data(), x8.data()), ref8) << path.name;
        EXPECT_EQ(path.q4(k, w4.data(), x8.data()), ref4) << path.name;
    }
}

TEST(QuantSimd, ActiveLevelIsTheBestTheCpuHas) {
    const char* cap = std::getenv("GRAPHRUN_SIMD");
    if (cap) GTEST_SKIP() << "GRAPHRUN_SIMD=" << cap << " caps the level";
    const SimdLevel expected = cpu_features().avx512 ? SimdLevel::Avx512
                               : cpu_features().avx2 ? SimdLevel::Avx2
                                                     : SimdLevel::Scalar;
    EXPECT_EQ(active_simd_level(), expected) << simd_level_name(active_simd_level());
}

}  // namespace
}  // namespace graphrun::ops
