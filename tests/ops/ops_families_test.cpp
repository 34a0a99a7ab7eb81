// tests/ops/ops_families_test.cpp — the op additions the Qwen2/Qwen3 and Llama 3.1 graphs need: rope's NEOX
// mode and frequency factors, rmsnorm by groups (QK-norm), add_bias. Each kernel against its plain-loop
// reference on odd shapes and split ranges (and in place), values that pin the formulas, and infer
// refusing bad nodes with a message that says why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "tests/common/op_test_util.h"

namespace graphrun::testing {
namespace {

using ::testing::HasSubstr;

// ---- rope: neox mode and frequency factors -----------------------------------------------------------

OpCall rope_modes_call(int64_t n_tokens, int n_head, int head_dim, int mode, bool factors, uint32_t seed) {
    OpCall c;
    const int64_t width = int64_t(n_head) * head_dim;
    std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) pos[size_t(t)] = int32_t(5 + 37 * t);  // spread out positions
    c.in.push_back(f32_tensor({n_tokens, width}, random_floats(size_t(n_tokens * width), seed)));
    c.in.push_back(i32_tensor({n_tokens}, pos));
    if (factors) c.in.push_back(f32_tensor({head_dim / 2}, random_floats(size_t(head_dim / 2), seed + 1, 0.5f, 8)));
    c.out = output_tensor(DType::F32, {n_tokens, width});
    c.params = OpParams::of(ops::RopeParams{.n_head = n_head, .head_dim = head_dim, .base = 10000.0f, .mode = mode});
    return c;
}

// The kernel does the reference's float arithmetic in another loop order: identical bits (NMSE 0).
TEST(OpsRopeFamilies, MatchesReferenceOnOddShapesInEveryMode) {
    for (int mode : {ops::kRopeNormal, ops::kRopeNeox})
        for (bool factors : {false, true})
            for (int64_t t : {1, 3, 7})
                for (int hd : {2, 12, 64, 128})
                    for (int n_head : {1, 3, 6})
                        expect_kernel_matches_reference(
                            "rope",
                            rope_modes_call(t, n_head, hd, mode, factors, uint32_t(t * 100 + hd + n_head)), 0,
                            InPlace::Required);
}

TEST(OpsRopeFamilies, NeoxTurnsTheHalvesOfEachHead) {
    // head_dim 4, base 10000: pair 0 is (x0, x2) and turns by pos, pair 1 is (x1, x3) and turns by pos / 100.
    OpCall c = rope_modes_call(1, 1, 4, ops::kRopeNeox, false, 0);
    c.in[0] = f32_tensor({1, 4}, {1.0f, 0.0f, 0.0f, 1.0f});
    c.in[1] = i32_tensor({1}, {2});
    run_op(op_row("rope"), c.args(), false);
    const std::vector<float> y = c.out.floats();
    EXPECT_NEAR(y[0], std::cos(2.0), 1e-6);
    EXPECT_NEAR(y[2], std::sin(2.0), 1e-6);
    EXPECT_NEAR(y[1], -std::sin(0.02), 1e-6);
    EXPECT_NEAR(y[3], std::cos(0.02), 1e-6);
}

// NEOX is normal mode on the head with its halves interleaved: (x0, x_{d/2}, x1, x_{d/2+1}, ...).
TEST(OpsRopeFamilies, NeoxIsNormalModeOnInterleavedHalves) {
    const int n_head = 3, hd = 24;
    for (bool factors : {false, true}) {
        OpCall neox = rope_modes_call(5, n_head, hd, ops::kRopeNeox, factors, 9);
        OpCall normal = neox;
        edit_params<ops::RopeParams>(normal.params, [](ops::RopeParams& p) { p.mode = ops::kRopeNormal; });
        const std::vector<float> x = neox.in[0].floats();
        std::vector<float> interleaved(x.size());
        auto interleaved_index = [&](size_t j) {  // where element j of a head goes
            const size_t head = j / hd * hd, i = j % hd;
            return head + (i < hd / 2 ? 2 * i : 2 * (i - hd / 2) + 1);
        };
        for (size_t j = 0; j < x.size(); ++j) interleaved[interleaved_index(j)] = x[j];
        normal.in[0] = f32_tensor(neox.in[0].shape, interleaved);
        run_op(op_row("rope"), neox.args(), true);
        run_op(op_row("rope"), normal.args(), true);
        const std::vector<float> y_neox = neox.out.floats(), y_normal = normal.out.floats();
        for (size_t j = 0; j < x.size(); ++j)
            ASSERT_EQ(y_neox[j], y_normal[interleaved_index(j)]) << j << (factors ? " with factors" : "");
    }
}

TEST(OpsRopeFamilies, FrequencyFactorsDivideTheAngle) {
    // Pair 0 turns by pos / factor_0: factor 4 at position 2 is an angle of 0.5; factor 1 changes nothing.
    for (int mode : {ops::kRopeNormal, ops::kRopeNeox}) {
        // x is 1 at the first element of each pair: pair 0 is (a0, b0), pair 1 is (a1, b1).
        const size_t a0 = 0, b0 = mode == ops::kRopeNeox ? 2 : 1, a1 = mode == ops::kRopeNeox ? 1 : 2;
        std::vector<float> x(4, 0.0f);
        x[a0] = x[a1] = 1.0f;
        OpCall c = rope_modes_call(1, 1, 4, mode, true, 0);
        c.in[0] = f32_tensor({1, 4}, x);
        c.in[1] = i32_tensor({1}, {2});
        c.in[2] = f32_tensor({2}, {4.0f, 1.0f});
        run_op(op_row("rope"), c.args(), false);
        const std::vector<float> y = c.out.floats();
        EXPECT_NEAR(y[a0], std::cos(0.5), 1e-6) << mode;
        EXPECT_NEAR(y[b0], std::sin(0.5), 1e-6) << mode;
        EXPECT_NEAR(y[a1], std::cos(0.02), 1e-6) << mode;
    }
    // All-ones factors give the very bits of no factors (theta / 1.0f is theta).
    OpCall with = rope_modes_call(4, 2, 16, ops::kRopeNormal, true, 3);
    with.in[2] = f32_tensor({8}, std::vector<float>(8, 1.0f));
    OpCall without = with;
    without.in.pop_back();
    run_op(op_row("rope"), with.args(), false);
    run_op(op_row("rope"), without.args(), false);
    EXPECT_EQ(nmse(with.out.floats(), without.out.floats()), 0.0);
}

TEST(OpsRopeFamilies, InferRejectsBadFactorsAndMode) {
    const ops::OpDef& op = op_row("rope");
    OpCall c = rope_modes_call(3, 2, 64, ops::kRopeNormal, true, 1);
    c.in[2] = f32_tensor({30}, random_floats(30, 2));
    EXPECT_THAT(infer_error(op, c.node("rope")),
                HasSubstr("input 2 (freq_factors) has 30 elements, head_dim 64 needs 32 (one per rotated pair)"));
    c = rope_modes_call(3, 2, 64, ops::kRopeNormal, true, 1);
    c.in[2] = f16_tensor({32}, random_floats(32, 2));
    EXPECT_THAT(infer_error(op, c.node("rope")), HasSubstr("input 2 (freq_factors) must be f32, got f16 (32)"));
    c = rope_modes_call(3, 2, 64, ops::kRopeNormal, true, 1);
    c.in[2].shape = {2, 16};
    EXPECT_THAT(infer_error(op, c.node("rope")), HasSubstr("input 2 (freq_factors) must have rank 1"));
    c = rope_modes_call(3, 2, 64, ops::kRopeNormal, true, 1);
    c.in.push_back(c.in[2]);
    EXPECT_THAT(infer_error(op, c.node("rope")),
                HasSubstr("expects 2 or 3 inputs (x, positions[, freq_factors]), got 4"));
    c = rope_modes_call(3, 2, 64, ops::kRopeNormal, false, 1);
    edit_params<ops::RopeParams>(c.params, [](ops::RopeParams& p) { p.mode = 2; });
    EXPECT_THAT(infer_error(op, c.node("rope")), HasSubstr("mode must be normal (0) or neox (1), got 2"));
}

// ---- rmsnorm by groups ---------------------------------------------------------------------------------

OpCall grouped_rmsnorm_call(int64_t n_tokens, int64_t n_groups, int group, uint32_t seed) {
    OpCall c;
    const int64_t n = n_groups * group;
    c.in.push_back(f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), seed, -3, 3)));
    c.in.push_back(f32_tensor({group}, random_floats(size_t(group), seed + 1, 0.5f, 1.5f)));
    c.out = output_tensor(DType::F32, {n_tokens, n});
    c.params = OpParams::of(ops::RmsnormParams{.eps = 1e-6f, .group = group});
    return c;
}

TEST(OpsRmsnormGroups, MatchesReferenceOnOddShapes) {
    // The kernel's four partial double sums against one serial sum: double rounding, far below float.
    for (int64_t t : {1, 3, 7})
        for (int group : {1, 6, 64, 100})
            for (int64_t n_groups : {1, 3, 5})
                expect_kernel_matches_reference("rmsnorm", grouped_rmsnorm_call(t, n_groups, group, uint32_t(t + group)),
                                                1e-10, InPlace::Required);
}

// Normalising a row by groups of g is normalising the (n_tokens * n_groups, g) rows, bit for bit:
// what llama.cpp computes on its (head_dim, n_head, n_tokens) view of q.
TEST(OpsRmsnormGroups, EqualsWholeRowNormOnReshapedRows) {
    OpCall grouped = grouped_rmsnorm_call(3, 5, 36, 4);
    OpCall rows = grouped;
    rows.in[0].shape = {15, 36};
    rows.out.shape = {15, 36};
    rows.params = OpParams::of(ops::RmsnormParams{.eps = 1e-6f});
    run_op(op_row("rmsnorm"), grouped.args(), true);
    run_op(op_row("rmsnorm"), rows.args(), true);
    const std::vector<float> a = grouped.out.floats(), b = rows.out.floats();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
}

TEST(OpsRmsnormGroups, EachGroupHasUnitRms) {
    // Weight 1: every group of the output has a mean square of 1 / (1 + eps / mean square of its input).
    OpCall c = grouped_rmsnorm_call(2, 4, 8, 7);
    c.in[1] = f32_tensor({8}, std::vector<float>(8, 1.0f));
    run_op(op_row("rmsnorm"), c.args(), false);
    const std::vector<float> y = c.out.floats();
    for (size_t g = 0; g < y.size() / 8; ++g) {
        double ms = 0;
        for (size_t i = 0; i < 8; ++i) ms += double(y[g * 8 + i]) * y[g * 8 + i];
        EXPECT_NEAR(ms / 8, 1.0, 1e-5) << "group " << g;
    }
}

TEST(OpsRmsnormGroups, InferRejectsBadGroups) {
    const ops::OpDef& op = op_row("rmsnorm");
    OpCall c = grouped_rmsnorm_call(2, 4, 16, 1);
    c.in[1] = f32_tensor({32}, random_floats(32, 2));
    EXPECT_THAT(infer_error(op, c.node("rmsnorm")), HasSubstr("weight has 32 elements, groups have 16"));
    c = grouped_rmsnorm_call(2, 4, 16, 1);
    c.params = OpParams::of(ops::RmsnormParams{.eps = 1e-6f, .group = 24});
    c.in[1] = f32_tensor({24}, random_floats(24, 2));
    EXPECT_THAT(infer_error(op, c.node("rmsnorm")),
                HasSubstr("input rows have 64 elements, not a whole number of groups of 24"));
    c = grouped_rmsnorm_call(2, 4, 16, 1);
    c.params = OpParams::of(ops::RmsnormParams{.eps = 1e-6f, .group = -2});
    EXPECT_THAT(infer_error(op, c.node("rmsnorm")), HasSubstr("group must be >= 0, got -2"));
}

// ---- add_bias --------------------------------------------------------------------------------------------

OpCall add_bias_call(int64_t n_tokens, int64_t n, uint32_t seed) {
    OpCall c;
    c.in.push_back(f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), seed, -6, 6)));
    c.in.push_back(f32_tensor({n}, random_floats(size_t(n), seed + 1, -2, 2)));
    c.out = output_tensor(DType::F32, {n_tokens, n});
    return c;
}

TEST(OpsAddBias, MatchesReferenceAndIsExact) {
    for (int64_t t : {1, 3, 7})
        for (int64_t n : {1, 5, 72, 100}) {
            const OpCall call = add_bias_call(t, n, uint32_t(3 * t + n));
            expect_kernel_matches_reference("add_bias", call, 0, InPlace::Required);
            OpCall c = call;
            run_op(op_row("add_bias"), c.args(), true);
            const std::vector<float> x = c.in[0].floats(), b = c.in[1].floats(), y = c.out.floats();
            for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], x[i] + b[i % size_t(n)]) << i;
        }
}

TEST(OpsAddBias, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("add_bias");
    OpCall c = add_bias_call(3, 10, 1);
    c.in[1] = f32_tensor({11}, random_floats(11, 1));
    EXPECT_THAT(infer_error(op, c.node("add_bias")), HasSubstr("bias has 11 elements, x rows have 10"));
    c = add_bias_call(3, 10, 1);
    c.in[1] = f32_tensor({3, 10}, random_floats(30, 1));
    EXPECT_THAT(infer_error(op, c.node("add_bias")), HasSubstr("input 1 (bias) must have rank 1 (n), got f32 (3, 10)"));
    c = add_bias_call(3, 10, 1);
    c.in[1] = f16_tensor({10}, random_floats(10, 1));
    EXPECT_THAT(infer_error(op, c.node("add_bias")), HasSubstr("input 1 (bias) must be f32, got f16 (10)"));
    c = add_bias_call(3, 10, 1);
    c.in[0].shape = {30};
    EXPECT_THAT(infer_error(op, c.node("add_bias")), HasSubstr("input 0 (x) must have rank 2"));
    c = add_bias_call(3, 10, 1);
    c.in.pop_back();
    EXPECT_THAT(infer_error(op, c.node("add_bias")), HasSubstr("[add_bias] node 'test.add_bias': expects 2 inputs"));
}

}  // namespace
}  // namespace graphrun::testing
