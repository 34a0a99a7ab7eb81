// tests/runtime/checked_sizes_test.cpp — sizes that a file or an option chooses: checked arithmetic
// (runtime/checked_math.h), tensor sizes that overflow, and the plan ceilings of graph/limits.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "graph/limits.h"
#include "graph/plan.h"
#include "engine/session.h"
#include "runtime/checked_math.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "<no error>";
}

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

// ---- plan ceilings ----

TEST(PlanLimits, BatchAndContextAboveTheCeilingsAreRefused) {
    auto model = graph::Model::load(testing::random_model_file(testing::spec_of(16, 1, 4, 2, 48), "limits_tiny"));
    EXPECT_NO_THROW(graph::make_plan(model->graph(), graph::kMaxBatch, 16));
    EXPECT_THAT(error_of([&] { graph::make_plan(model->graph(), graph::kMaxBatch + 1, 16); }),
                HasSubstr("a batch of 65537 tokens is more than the 65536"));
    EXPECT_THAT(error_of([&] { graph::make_plan(model->graph(), int64_t(1) << 62, 16); }), HasSubstr("batch of"));
    EXPECT_THAT(error_of([&] { graph::make_plan(model->graph(), 1, int64_t(1) << 60); }),
                HasSubstr("context of 1152921504606846976 positions is outside"));
    const graph::Plan at_ceiling = graph::make_plan(model->graph(), 1, graph::kMaxContext);
    const int64_t row = at_ceiling.tensors[size_t(at_ceiling.state_tensors[0])].desc.shape[1];
    EXPECT_EQ(at_ceiling.state_bytes, 2 * 1 * graph::kMaxContext * row * 2);
}

}  // namespace
}  // namespace graphrun
