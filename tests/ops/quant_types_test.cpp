// tests/ops/quant_types_test.cpp — the types beyond Q8_0 / Q4_0: block layouts decoded by hand from
// bytes, the activation formats (Q8_1's block sum, Q8_K's sums of 16), quantize -> dequantize
// error bounds on the four weight distributions, and every SIMD dot product against the scalar one.
// (Byte-identity with ggml's quantizers: tests/parity/quant_ggml_test.cpp and quant_llamacpp_test.cpp.)
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "ops/quant/kernels.h"
#include "runtime/fp16.h"
#include "tests/common/quant_test_util.h"

namespace graphrun::ops {
namespace {

using testing::nmse;

template <typename Block>
std::vector<float> decode(DType type, const Block& b, int64_t n) {
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row(type, &b, y.data(), n);
    return y;
}

// ---- hand-made blocks: the byte layouts ----

TEST(QuantLayout, Q4_1NibblesAndMin) {
    block_q4_1 b{};
    b.d = f32_to_fp16(0.5f);
    b.m = f32_to_fp16(-2.0f);
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
    const auto y = decode(DType::Q4_1, b, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[size_t(j)], 0.5f * float(j) - 2.0f) << j;            // low nibbles: weights 0..15
        EXPECT_EQ(y[size_t(16 + j)], 0.5f * float(15 - j) - 2.0f) << j;  // high nibbles: 16..31
    }
}

TEST(QuantLayout, Q5_0And5_1FifthBitComesFromQh) {
    block_q5_0 b0{};
    block_q5_1 b1{};
    b0.d = b1.d = f32_to_fp16(1.0f);
    b1.m = f32_to_fp16(0.25f);
    const uint32_t qh = 0x80000001u | 1u << 17;  // weights 0, 17 and 31 have the fifth bit
    std::memcpy(b0.qh, &qh, 4);
    std::memcpy(b1.qh, &qh, 4);
    for (int j = 0; j < 16; ++j) b0.qs[j] = b1.qs[j] = uint8_t(3 | 9 << 4);  // low 3, high 9
    const auto y0 = decode(DType::Q5_0, b0, 32), y1 = decode(DType::Q5_1, b1, 32);
    for (int j = 0; j < 32; ++j) {
        const int q = (j < 16 ? 3 : 9) + ((qh >> j) & 1) * 16;
        EXPECT_EQ(y0[size_t(j)], float(q - 16)) << j;
        EXPECT_EQ(y1[size_t(j)], float(q) + 0.25f) << j;
    }
}

TEST(QuantLayout, Q4_KSixBitScalesAndMins) {
    block_q4_K b{};
    b.d = f32_to_fp16(0.125f);
    b.dmin = f32_to_fp16(0.5f);
    // Sub-block s gets scale 40 + s and min 20 + 5 s (the upper four need their top bits in bytes 0..7).
    int sc[8], mn[8];
    for (int s = 0; s < 8; ++s) sc[s] = 40 + s, mn[s] = 20 + 5 * s;
    for (int s = 0; s < 4; ++s) {
        b.scales[s] = uint8_t(sc[s] | (sc[s + 4] >> 4) << 6);
        b.scales[s + 4] = uint8_t(mn[s] | (mn[s + 4] >> 4) << 6);
        b.scales[s + 8] = uint8_t((sc[s + 4] & 15) | (mn[s + 4] & 15) << 4);
    }
    for (int i = 0; i < 128; ++i) b.qs[i] = uint8_t(((i * 7) & 15) | ((i * 3 + 1) & 15) << 4);
    const auto y = decode(DType::Q4_K, b, 256);
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            const int i = 32 * c + l;
            const int lo = (i * 7) & 15, hi = (i * 3 + 1) & 15;
            EXPECT_EQ(y[size_t(64 * c + l)], 0.125f * float(sc[2 * c]) * float(lo) - 0.5f * float(mn[2 * c]));
            EXPECT_EQ(y[size_t(64 * c + 32 + l)],
                      0.125f * float(sc[2 * c + 1]) * float(hi) - 0.5f * float(mn[2 * c + 1]));
        }
}

TEST(QuantLayout, Q5_KHighBitsPerChunk) {
    block_q5_K b{};
    b.d = f32_to_fp16(1.0f);
    b.dmin = f32_to_fp16(0.0f);
    for (int s = 0; s < 4; ++s) b.scales[s] = 1;      // scale 1 for sub-blocks 0..3
    for (int s = 0; s < 4; ++s) b.scales[s + 8] = 1;  // and 4..7 (low nibble of bytes 8..11)
    for (int l = 0; l < 32; ++l) b.qh[l] = uint8_t(l % 2 ? 0xaa : 0x55);  // odd bytes: bits 1,3,5,7
    for (int i = 0; i < 128; ++i) b.qs[i] = 0x21;                         // low 1, high 2
    const auto y = decode(DType::Q5_K, b, 256);
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            EXPECT_EQ(y[size_t(64 * c + l)], float(1 + (l % 2 ? 0 : 16))) << c << " " << l;
            EXPECT_EQ(y[size_t(64 * c + 32 + l)], float(2 + (l % 2 ? 16 : 0))) << c << " " << l;
        }
}

TEST(QuantLayout, Q6_KLowNibblesHighPairsAndInt8Scales) {
    block_q6_K b{};
    b.d = f32_to_fp16(0.5f);
    for (int s = 0; s < 16; ++s) b.scales[s] = int8_t(s % 2 ? -(s + 1) : s + 1);
    // Weight i gets q = i % 64; place its low nibble and top two bits where the format says.
    for (int i = 0; i < 256; ++i) {
        const int q = i % 64, h = i / 128, r = i % 128, l = r % 32, quarter = r / 32;
        uint8_t& low = b.ql[64 * h + (quarter % 2) * 32 + l];
        low = uint8_t(low | (q & 15) << (quarter / 2 * 4));
        b.qh[32 * h + l] = uint8_t(b.qh[32 * h + l] | (q >> 4) << (2 * quarter));
    }
    const auto y = decode(DType::Q6_K, b, 256);
    for (int i = 0; i < 256; ++i)
        EXPECT_EQ(y[size_t(i)], 0.5f * float(b.scales[i / 16]) * float(i % 64 - 32)) << i;
}

TEST(QuantLayout, Iq4XsTableIndicesAndSixBitScales) {
    block_iq4_xs b{};
    b.d = f32_to_fp16(0.25f);
    const int ls[8] = {0, 63, 32, 31, 1, 47, 16, 40};  // scale d * (ls - 32)
    for (int s = 0; s < 8; ++s) {
        b.scales_l[s / 2] = uint8_t(b.scales_l[s / 2] | (ls[s] & 15) << (4 * (s % 2)));
        b.scales_h = uint16_t(b.scales_h | (ls[s] >> 4) << (2 * s));
    }
    for (int i = 0; i < 128; ++i) b.qs[i] = uint8_t(i % 16 | (15 - i % 16) << 4);
    const auto y = decode(DType::IQ4_XS, b, 256);
    for (int s = 0; s < 8; ++s)
        for (int j = 0; j < 16; ++j) {
            const float dl = 0.25f * float(ls[s] - 32);
            EXPECT_EQ(y[size_t(32 * s + j)], dl * float(kIq4nlValues[(16 * s + j) % 16]));
            EXPECT_EQ(y[size_t(32 * s + 16 + j)], dl * float(kIq4nlValues[15 - (16 * s + j) % 16]));
        }
}

TEST(QuantLayout, Iq4NlTableIndicesInQ4_0Order) {
    block_iq4_nl b{};
    b.d = f32_to_fp16(-0.5f);
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
    const auto y = decode(DType::IQ4_NL, b, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[size_t(j)], -0.5f * float(kIq4nlValues[j]));
        EXPECT_EQ(y[size_t(16 + j)], -0.5f * float(kIq4nlValues[15 - j]));
    }
}

// ---- activation formats ----

TEST(QuantActivations, Q8_1CarriesTheBlockSum) {
    const auto x = testing::random_values(96, testing::Dist::Normal, 4);
    block_q8_1 q[3];
    block_q8_0 q0[3];
    quantize_row_q8_1_ref(x.data(), q, 96);
    quantize_row_q8_0_ref(x.data(), q0, 96);
    for (int b = 0; b < 3; ++b) {
        EXPECT_EQ(q[b].d, q0[b].d);  // Q8_0's rounding, plus the sum
        EXPECT_EQ(std::memcmp(q[b].qs, q0[b].qs, 32), 0);
        float amax = 0;
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
            amax = std::max(amax, std::fabs(x[size_t(32 * b + j)]));
            sum += q[b].qs[j];
        }
        EXPECT_EQ(q[b].s, f32_to_fp16(float(sum) * (amax / 127))) << b;  // s = d * sum with the float d
    }
}

TEST(QuantActivations, Q8_KSumsOf16AndSymmetricRange) {
    auto x = testing::random_values(512, testing::Dist::StudentT3, 5);
    x[300] = -50.0f;  // the signed extreme of the second block: it maps to -127, so d > 0
    std::vector<block_q8_K> q(2);
    quantize_row_q8_k_ref(x.data(), q.data(), 512);
    for (int b = 0; b < 2; ++b) {
        float amax = 0;
        for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[size_t(256 * b + j)]));
        for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += q[size_t(b)].qs[16 * g + i];
            EXPECT_EQ(q[size_t(b)].bsums[g], sum) << b << " " << g;
        }
        for (int j = 0; j < 256; ++j) {
            EXPECT_GE(q[size_t(b)].qs[j], -127);  // never -128: the kernels may negate the quants
            // Within half a step of the float scale (d is a float here, not fp16).
            EXPECT_LE(std::fabs(q[size_t(b)].d * float(q[size_t(b)].qs[j]) - x[size_t(256 * b + j)]),
                      amax / 127 * 0.5001f);
        }
    }
    EXPECT_EQ(q[1].qs[300 - 256], -127);
    EXPECT_FLOAT_EQ(q[1].d, 50.0f / 127.0f);  // d = max / -127, max with its sign
    std::vector<float> zero(256, 0.0f);
    quantize_row_q8_k_ref(zero.data(), q.data(), 256);
    EXPECT_EQ(q[0].d, 0.0f);
    for (int g = 0; g < 16; ++g) EXPECT_EQ(q[0].bsums[g], 0);
}

// ---- quantize -> dequantize error on the four weight distributions ----

// NMSE of one row of 4096 + one super-block, per type and distribution. Measured (this seed):
//            uniform  normal   t(3)     outliers
//   q4_1     3.8e-3   6.1e-3   9.9e-3   1.1e-2
//   q5_0     9.8e-4   1.8e-3   4.1e-3   6.2e-3
//   q5_1     8.8e-4   1.4e-3   2.3e-3   2.3e-3
//   q4_k     3.1e-3   5.1e-3   8.6e-3   8.6e-3
//   q5_k     7.8e-4   1.3e-3   2.2e-3   2.2e-3
//   q6_k     1.8e-4   3.2e-4   6.2e-4   8.0e-4
//   iq4_xs   4.3e-3   6.0e-3   1.0e-2   1.2e-2
//   iq4_nl   4.2e-3   5.9e-3   1.0e-2   1.2e-2
// Bounds are about 2x that.
TEST(QuantRoundTrip, ErrorPerTypeAndDistribution) {
    const std::map<DType, std::array<double, 4>> bounds = {
        {DType::Q4_1, {7.5e-3, 1.2e-2, 2e-2, 2.1e-2}},     {DType::Q5_0, {2e-3, 3.6e-3, 8e-3, 1.2e-2}},
        {DType::Q5_1, {1.8e-3, 2.9e-3, 4.5e-3, 4.6e-3}},   {DType::Q4_K, {6e-3, 1e-2, 1.7e-2, 1.7e-2}},
        {DType::Q5_K, {1.6e-3, 2.6e-3, 4.4e-3, 4.4e-3}},   {DType::Q6_K, {3.6e-4, 6.4e-4, 1.2e-3, 1.6e-3}},
        {DType::IQ4_XS, {8.5e-3, 1.2e-2, 2.1e-2, 2.4e-2}}, {DType::IQ4_NL, {8.5e-3, 1.2e-2, 2e-2, 2.4e-2}},
    };
    const testing::Dist dists[] = {testing::Dist::Uniform, testing::Dist::Normal, testing::Dist::StudentT3,
                                   testing::Dist::NormalOutliers};
    const int64_t n = 4096 + 256;
    for (auto& [type, bound] : bounds)
        for (int d = 0; d < 4; ++d) {
            const auto x = testing::random_values(size_t(n), dists[d], 17);
            std::vector<uint8_t> q(size_t(row_bytes(type, n)));
            std::vector<float> y(static_cast<size_t>(n));
            quant_traits(type)->quantize_row(x.data(), q.data(), n);
            dequantize_row(type, q.data(), y.data(), n);
            const double e = nmse(y, x);
            std::printf("[ roundtrip ] %-6s %-24s NMSE %.2e\n", dtype_name(type),
                        testing::dist_name(dists[d]), e);
            EXPECT_LT(e, bound[size_t(d)]) << dtype_name(type) << " " << testing::dist_name(dists[d]);
        }
}

// ---- SIMD paths against the scalar one ----

struct TypeShape {
    DType type;
    std::vector<int64_t> ks;  // row lengths: one block, odd counts of blocks, a long row
};

std::vector<TypeShape> dot_cases() {
    const std::vector<int64_t> k32 = {32, 96, 160, 4096 + 32}, k256 = {256, 768, 1280, 4096 + 256};
    return {{DType::Q4_1, k32},  {DType::Q5_0, k32},  {DType::Q5_1, k32},   {DType::IQ4_NL, k32},
            {DType::Q4_K, k256}, {DType::Q5_K, k256}, {DType::Q6_K, k256}, {DType::IQ4_XS, k256}};
}

TEST(QuantSimdTypes, VecDotPathsGiveTheScalarBits) {
    if (!cpu_features().avx2) GTEST_SKIP() << "CPU has no AVX2/FMA/F16C";
    const int64_t rows = 7;
    for (const TypeShape& c : dot_cases()) {
        const QuantTraits& scalar_tr = *quant_traits_at(c.type, SimdLevel::Scalar);
        const QuantTraits& avx2_tr = *quant_traits_at(c.type, SimdLevel::Avx2);
        ASSERT_NE(scalar_tr.vec_dot, avx2_tr.vec_dot) << dtype_name(c.type) << " has no AVX2 path";
        for (int64_t k : c.ks)
            for (testing::Dist dist : {testing::Dist::Normal, testing::Dist::StudentT3}) {
                const auto wf = testing::random_values(size_t(rows * k), dist, uint32_t(k));
                const auto xf = testing::random_values(size_t(k), testing::Dist::StudentT3, uint32_t(k + 1));
                const auto w = testing::quantize_matrix(c.type, wf, rows, k);
                const auto xq = testing::quantize_matrix(scalar_tr.vec_dot_type, xf, 1, k);
                std::vector<float> want(rows), got(rows);
                for (int64_t r = 0; r < rows; ++r) {
                    const uint8_t* row = &w[size_t(r * row_bytes(c.type, k))];
                    want[size_t(r)] = scalar_tr.vec_dot(k, row, xq.data());
                    got[size_t(r)] = avx2_tr.vec_dot(k, row, xq.data());
                }
                // Every path folds exact integer block dots in the scalar order: equal bits.
                EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
                    << dtype_name(c.type) << " K=" << k;
            }
    }
}

// Every weight at its format's extreme against activations of +-127: the int16 pair sums of
// vpmaddubsw at their worst case. Scales of 1 keep every sum a small exact integer, so all paths
// must agree exactly.
TEST(QuantSimdTypes, VecDotExtremesMatchScalarExactly) {
    if (!cpu_features().avx2) GTEST_SKIP() << "CPU has no AVX2/FMA/F16C";
    const int64_t k = 512;
    for (const TypeShape& c : dot_cases()) {
        const int64_t kk = k;
        std::vector<uint8_t> w(size_t(row_bytes(c.type, kk)), 0xff);  // every quant at its top value
        const int64_t bb = dtype_traits(c.type).block_bytes;
        for (int64_t b = 0; b < kk / dtype_traits(c.type).block_size; ++b) {
            uint8_t* block = &w[size_t(b * bb)];
            const uint16_t one = 0x3c00;
            switch (c.type) {
                case DType::Q4_1:
                case DType::Q5_1:
                    std::memcpy(block, &one, 2);  // d = 1, m = 1
                    std::memcpy(block + 2, &one, 2);
                    break;
                case DType::Q5_0:
                case DType::IQ4_NL:  // d = 1, values 113
                    std::memcpy(block, &one, 2);
                    break;
                case DType::Q4_K:
                case DType::Q5_K:
                    std::memcpy(block, &one, 2);  // d = dmin = 1, scales and mins 63
                    std::memcpy(block + 2, &one, 2);
                    break;
                case DType::Q6_K:
                    std::memcpy(block + 208, &one, 2);  // d = 1; scales are int8 0xff = -1
                    break;
                case DType::IQ4_XS:
                    std::memcpy(block, &one, 2);  // d = 1, scales 63 - 32 = 31, values 113
                    break;
                default:
                    FAIL() << dtype_name(c.type);
            }
        }
        const QuantTraits& scalar_tr = *quant_traits_at(c.type, SimdLevel::Scalar);
        std::vector<float> xf(static_cast<size_t>(kk));
        for (int64_t i = 0; i < kk; ++i) xf[size_t(i)] = i % 3 ? 1.0f : -1.0f;
        const auto xq = testing::quantize_matrix(scalar_tr.vec_dot_type, xf, 1, kk);
        const float want = scalar_tr.vec_dot(kk, w.data(), xq.data());
        EXPECT_EQ(quant_traits_at(c.type, SimdLevel::Avx2)->vec_dot(kk, w.data(), xq.data()), want)
            << dtype_name(c.type);
        EXPECT_NE(want, 0.0f) << dtype_name(c.type);
    }
}

}  // namespace
}  // namespace graphrun::ops
