// tests/runtime/checked_sizes_test.cpp — sizes that a file or an option chooses: checked arithmetic
// (runtime/checked_math.h) and tensor sizes that overflow. The plan ceilings of graph/limits.h are
// tests/graph/graph_limits_test.cpp's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "graph/plan.h"
#include "runtime/checked_math.h"
#include "tests/common/error_of.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

using testing::error_of;

// ---- checked arithmetic ----

TEST(CheckedMath, ProductsAndSumsThatFitAreExact) {
    EXPECT_EQ(checked_mul(int64_t(1) << 31, int64_t(1) << 31, "x"), int64_t(1) << 62);
    EXPECT_EQ(checked_add(kInt64Max - 1, 1, "x"), kInt64Max);
    EXPECT_EQ(checked_product({2, 3, 7}, "x"), 42);
    EXPECT_EQ(checked_product({}, "x"), 1);
    EXPECT_EQ(checked_align_up(65, 64, "x"), 128);
    EXPECT_EQ(checked_align_up(0, 64, "x"), 0);
}

TEST(CheckedMath, OverflowAndNegativeOperandsThrowNamingTheSize) {
    EXPECT_THAT(error_of([] { checked_mul(5, int64_t(1) << 62, "KV cache bytes"); }),
                HasSubstr("KV cache bytes: 5 x 4611686018427387904 overflows int64"));
    EXPECT_THAT(error_of([] { checked_add(kInt64Max, 1, "arena"); }), HasSubstr("arena: "));
    EXPECT_THAT(error_of([] { checked_mul(-1, 4, "rows"); }), HasSubstr("rows: -1 x 4 has a negative operand"));
    EXPECT_THAT(error_of([] { checked_align_up(kInt64Max - 3, 64, "offset"); }), HasSubstr("overflows"));
    EXPECT_THROW(checked_product({int64_t(1) << 40, int64_t(1) << 40}, "x"), SizeError);
    // The text may be built lazily, only when it is needed.
    int calls = 0;
    auto what = [&] { ++calls; return std::string("lazy"); };
    EXPECT_EQ(checked_mul(3, 4, what), 12);
    EXPECT_EQ(calls, 0);
    EXPECT_THAT(error_of([&] { checked_mul(kInt64Max, 2, what); }), HasSubstr("lazy: "));
}

TEST(CheckedMath, TensorSizesOverflowIntoAnErrorNotAWrappedNumber) {
    const ops::TensorDesc huge{DType::F32, {int64_t(1) << 40, int64_t(1) << 30}};
    EXPECT_THAT(error_of([&] { (void)huge.nbytes(); }), AllOf(HasSubstr("bytes of f32 ("), HasSubstr("overflows")));
    const ops::TensorDesc many{DType::F32, {int64_t(1) << 62, 4, 4}};
    EXPECT_THROW((void)many.n_elements(), SizeError);
    EXPECT_EQ((ops::TensorDesc{DType::Q8_0, {3, 64}}.nbytes()), 3 * 2 * 34);
}

}  // namespace
}  // namespace graphrun
