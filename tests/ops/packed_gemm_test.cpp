// tests/ops/packed_gemm_test.cpp — Q4_0 packed at load (ops/quant/packed.h: q4_0x8): packing then unpacking
// gives the rows back byte for byte, and the lanes GEMMs (AVX2, AVX-512) on the packed rows give every output
// the bits of scalar::vec_dot on the rows as stored, for 1..37 tokens, K across the staged chunks and row
// ranges cut at multiples of 8; and the op's plain reference reads packed rows as the rows they hold.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ops/matmul_quant.h"
#include "ops/quant/kernels.h"
#include "ops/quant/packed.h"
#include "tests/common/quant_test_util.h"

namespace graphrun::ops {
namespace {

using testing::matmul_quant_prepare;
using testing::QuantMatmul;

TEST(PackedQ4_0x8, PackingThenUnpackingGivesTheRowsBack) {
    const int64_t n = 24, k = 5 * 32;
    const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, 11);
    const std::vector<uint8_t> rows = testing::quantize_matrix(DType::Q4_0, wf, n, k);
    std::vector<uint8_t> packed(rows.size()), back(rows.size());
    pack_q4_0x8(rows.data(), packed.data(), n, k);
    EXPECT_NE(packed, rows);  // the layout did change
    unpack_q4_0x8(packed.data(), back.data(), n, k);
    EXPECT_EQ(back, rows);
    // Group 1, block 2: row 3's scale and its quant bytes 8..11 (s = 2) where the layout says.
    const int64_t row_bytes = k / 32 * 18;
    const uint8_t* stored = rows.data() + (8 + 3) * row_bytes + 2 * 18;
    const uint8_t* block = packed.data() + 8 * row_bytes + 2 * kQ4_0x8BlockBytes;
    EXPECT_EQ(std::memcmp(block + 2 * 3, stored, 2), 0);
    EXPECT_EQ(std::memcmp(block + kQ4_0x8QuantOffset + 32 * 2 + 4 * 3, stored + 2 + 8, 4), 0);
}

// At each level with a packed GEMM (AVX2: 8 rows a register; AVX-512: two groups, 16 rows).
class PackedGemm : public ::testing::TestWithParam<SimdLevel> {};

TEST_P(PackedGemm, OnPackedRowsGivesTheScalarDotsBits) {
    const SimdLevel level = GetParam();
    if (!(level == SimdLevel::Avx2 ? cpu_features().avx2 : cpu_features().avx512))
        GTEST_SKIP() << "this CPU has no " << simd_level_name(level);
    QuantTraits packed_tr = *quant_traits_at(DType::Q4_0, level);
    ASSERT_NE(packed_tr.packed_gemm, nullptr) << simd_level_name(level);
    packed_tr.gemm = packed_tr.packed_gemm;
    const QuantTraits& scalar_tr = *quant_traits_at(DType::Q4_0, SimdLevel::Scalar);
    int checked = 0;
    for (auto [n, k] :
         {std::pair<int64_t, int64_t>{8, 32}, {16, 7 * 32}, {40, 9 * 32}, {32, 3 * 32}, {24, 70 * 32}}) {
        const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, uint32_t(n * 7 + k));
        for (int64_t n_tokens = 1; n_tokens <= 37; n_tokens += (k > 1000 ? 4 : 1)) {
            const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3,
                                                   uint32_t(n_tokens + k));
            QuantMatmul m(DType::Q4_0, n_tokens, n, k, wf, xf);
            matmul_quant_prepare(m.args, 0, n_tokens);
            const int64_t w_row = row_bytes(DType::Q4_0, k), xq_row = row_bytes(DType::Q8_0, k);
            std::vector<float> want(size_t(n_tokens * n));
            for (int64_t t = 0; t < n_tokens; ++t)
                for (int64_t r = 0; r < n; ++r)
                    want[size_t(t * n + r)] =
                        scalar_tr.vec_dot(k, m.w.data() + r * w_row, m.scratch.data() + t * xq_row);
            std::vector<uint8_t> packed(m.w.size());
            pack_q4_0x8(m.w.data(), packed.data(), n, k);
            m.args.in[1].data = packed.data();
            // Two ranges, the second starting at a group of 8 (AVX-512: a range of 8 rows, then pairs).
            const int64_t cut = n > 8 ? 8 : n;
            matmul_quant_run_with(m.args, 0, cut, packed_tr);
            if (cut < n) matmul_quant_run_with(m.args, cut, n, packed_tr);
            ASSERT_EQ(std::memcmp(m.y.data(), want.data(), want.size() * sizeof(float)), 0)
                << simd_level_name(level) << " tokens " << n_tokens << " N " << n << " K " << k;
            ++checked;
        }
    }
    EXPECT_GT(checked, 80);
}

INSTANTIATE_TEST_SUITE_P(Levels, PackedGemm, ::testing::Values(SimdLevel::Avx2, SimdLevel::Avx512),
                         [](const auto& info) { return std::string(simd_level_name(info.param)); });

// matmul_quant_reference on a weight marked packed (TensorRef::packed) unpacks it first: its outputs are
// the bits of the reference on the rows as stored, which a test against the packed GEMM relies on.
TEST(PackedQ4_0x8, TheReferenceOnPackedRowsGivesTheStoredRowsBits) {
    const int64_t n = 16, k = 6 * 32;
    const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, 21);
    for (int64_t n_tokens : {1, 3, 8}) {
        const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3, 22);
        QuantMatmul stored(DType::Q4_0, n_tokens, n, k, wf, xf), packed(DType::Q4_0, n_tokens, n, k, wf, xf);
        pack_q4_0x8(stored.w.data(), packed.w.data(), n, k);
        ASSERT_NE(packed.w, stored.w);
        packed.args.in[1].packed = true;
        matmul_quant_reference(stored.args);
        matmul_quant_reference(packed.args);
        EXPECT_EQ(std::memcmp(packed.y.data(), stored.y.data(), stored.y.size() * sizeof(float)), 0)
            << "tokens " << n_tokens;
        // Read as stored, the packed bytes are other rows: the flag is what the reference follows.
        packed.args.in[1].packed = false;
        matmul_quant_reference(packed.args);
        EXPECT_NE(std::memcmp(packed.y.data(), stored.y.data(), stored.y.size() * sizeof(float)), 0);
    }
}

}  // namespace
}  // namespace graphrun::ops
