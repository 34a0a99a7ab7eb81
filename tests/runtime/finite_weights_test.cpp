// tests/runtime/finite_weights_test.cpp — NaN and Inf in weights (runtime/finite_check.h): found in every
// stored type. That `quantize` refuses them is tests/tools/quantize_non_finite_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/finite_check.h"
#include "runtime/fp16.h"

namespace graphrun {
namespace {

// ---- non-finite weights ----

TEST(FiniteCheck, FindsTheFirstNaNOrInfInEveryType) {
    std::vector<float> f32(10000, 0.5f);
    EXPECT_FALSE(find_non_finite(DType::F32, f32.data(), int64_t(f32.size())));
    f32[7777] = std::numeric_limits<float>::infinity();
    f32[9000] = std::nanf("");
    auto hit = find_non_finite(DType::F32, f32.data(), int64_t(f32.size()));
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->index, 7777);
    EXPECT_EQ(non_finite_name(hit->value), "+Inf");

    std::vector<uint16_t> f16(5000, f32_to_fp16(1.0f));
    EXPECT_FALSE(find_non_finite(DType::F16, f16.data(), int64_t(f16.size())));
    f16[4321] = 0xfe00;  // a NaN
    hit = find_non_finite(DType::F16, f16.data(), int64_t(f16.size()));
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->index, 4321);
    EXPECT_EQ(non_finite_name(hit->value), "NaN");

    // Q8_0 blocks of 34 bytes: the scale first. Block 5's scale is -Inf: element 160 is named.
    std::vector<uint8_t> q8(34 * 8, 0);
    EXPECT_FALSE(find_non_finite(DType::Q8_0, q8.data(), 32 * 8));
    const uint16_t minus_inf = 0xfc00;
    std::memcpy(q8.data() + 34 * 5, &minus_inf, 2);
    hit = find_non_finite(DType::Q8_0, q8.data(), 32 * 8);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->index, 160);
    EXPECT_EQ(non_finite_name(hit->value), "-Inf");
    std::vector<uint8_t> q4(18 * 3, 0);
    std::memcpy(q4.data() + 18 * 2, &minus_inf, 2);
    EXPECT_EQ(find_non_finite(DType::Q4_0, q4.data(), 96)->index, 64);
}

}  // namespace
}  // namespace graphrun
