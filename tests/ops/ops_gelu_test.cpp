// tests/ops/ops_gelu_test.cpp — the worked example of docs/adding-an-op.md: the gelu and mul kernels against
// their references (odd shapes, ranges cut at odd places, in place), known values, infer rejecting bad
// nodes; then models/examples/llama-geglu.json, which uses them, bound, planned and run on random models.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph/plan.h"
#include "engine/session.h"
#include "runtime/aligned_buffer.h"
#include "runtime/executor.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_models.h"

namespace graphrun::testing {
namespace {

using ::testing::HasSubstr;

// The worked example's ops both declare in-place rows; the check keeps them to it.
void expect_gelu_matches_reference(const char* name, const OpCall& call, double tol) {
    expect_kernel_matches_reference(name, call, tol, InPlace::Required);
}

OpCall gelu_call(std::vector<int64_t> shape, uint32_t seed) {
    OpCall c;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    c.in.push_back(f32_tensor(shape, random_floats(size_t(n), seed, -12, 12)));
    c.out = output_tensor(DType::F32, shape);
    return c;
}

std::vector<float> gelu_of(const std::vector<float>& x) {
    OpCall c;
    c.in = {f32_tensor({int64_t(x.size())}, x)};
    c.out = output_tensor(DType::F32, {int64_t(x.size())});
    run_op(op_row("gelu"), c.args(), false);
    return c.out.floats();
}

// ---- gelu -------------------------------------------------------------------------------------------

TEST(OpsGelu, MatchesReferenceOnOddShapes) {
    // The kernel's x / (1 + exp(-2u)) in float against the tanh formula in double.
    for (int64_t t : {1, 3, 7})
        for (int64_t n : {1, 5, 100, 172})
            expect_gelu_matches_reference("gelu", gelu_call({t, n}, uint32_t(t * 1000 + n)), 1e-12);
    expect_gelu_matches_reference("gelu", gelu_call({3, 5, 7}, 9), 1e-12);  // rows = 15
    expect_gelu_matches_reference("gelu", gelu_call({37}, 10), 1e-12);      // one row
}

TEST(OpsGelu, KnownValues) {
    // Values of the tanh approximation (computed to 12 digits with mpmath). The exact erf GELU gives
    // 0.8413447 at 1 and -0.0040497 at -3, so these also show which GELU this is.
    const std::vector<float> y = gelu_of({0.0f, 1.0f, -3.0f, 0.5f, 3.0f});
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_NEAR(y[1], 0.841191990608, 1e-6);
    EXPECT_NEAR(y[2], -0.00363739208177, 1e-8);
    EXPECT_NEAR(y[3], 0.345714009825, 1e-6);
    EXPECT_NEAR(y[4], 2.99636260792, 1e-6);
    EXPECT_GT(std::abs(y[1] - 0.8413447f), 1e-4);
    EXPECT_GT(std::abs(y[2] + 0.0040497f), 1e-4);
}

TEST(OpsGelu, TailsAreAccurateAndFinite) {
    // For large negative x, 1 + tanh(u) cancels to 0 in float; the kernel's exp form keeps the tiny value.
    const std::vector<float> y = gelu_of({-6.0f, -9.0f, -1e4f, -1e30f, 1e4f, 1e30f});
    EXPECT_NEAR(y[0] / -8.43964670076e-11, 1.0, 1e-5);
    EXPECT_NEAR(y[1] / -1.33645959473e-28, 1.0, 1e-4);
    EXPECT_EQ(y[2], 0.0f);  // exp overflows to inf: x / inf = -0
    EXPECT_EQ(y[3], 0.0f);
    EXPECT_EQ(y[4], 1e4f);  // exp(-2u) underflows to 0: y = x
    EXPECT_EQ(y[5], 1e30f);
}

TEST(OpsGelu, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("gelu");
    OpCall c = gelu_call({3, 10}, 1);
    c.in.push_back(c.in[0]);
    EXPECT_THAT(infer_error(op, c.node("gelu")),
                HasSubstr("[gelu] node 'test.gelu': expects 1 inputs (x), got 2"));
    c = gelu_call({3, 10}, 1);
    c.in[0].dtype = DType::F16;
    EXPECT_THAT(infer_error(op, c.node("gelu")), HasSubstr("input 0 (x) must be f32, got f16 (3, 10)"));
    c = gelu_call({3, 10}, 1);
    c.in[0].shape = {};
    EXPECT_THAT(infer_error(op, c.node("gelu")), HasSubstr("input 0 (x) must have rank 1 to 4, got f32 ()"));
    c.in[0].shape = {1, 1, 3, 1, 10};
    EXPECT_THAT(infer_error(op, c.node("gelu")),
                HasSubstr("must have rank 1 to 4, got f32 (1, 1, 3, 1, 10)"));
    c.in[0].shape = {3, 0};
    EXPECT_THAT(infer_error(op, c.node("gelu")), HasSubstr("input 0 (x) has an empty dimension: f32 (3, 0)"));
}

// ---- mul --------------------------------------------------------------------------------------------

OpCall mul_call(std::vector<int64_t> shape, uint32_t seed) {
    OpCall c;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    c.in.push_back(f32_tensor(shape, random_floats(size_t(n), seed, -6, 6)));
    c.in.push_back(f32_tensor(shape, random_floats(size_t(n), seed + 1, -2, 2)));
    c.out = output_tensor(DType::F32, shape);
    return c;
}

TEST(OpsMul, MatchesReferenceAndIsExact) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{1, 1}, {3, 48}, {7, 100}, {5, 3}, {2, 3, 13}, {71}}) {
        const OpCall call = mul_call(shape, uint32_t(shape.back() * 7 + shape.size()));
        expect_gelu_matches_reference("mul", call, 0.0);
        OpCall c = call;
        run_op(op_row("mul"), c.args(), true);
        const std::vector<float> a = c.in[0].floats(), b = c.in[1].floats(), y = c.out.floats();
        for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], a[i] * b[i]) << i;
    }
}

TEST(OpsMul, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("mul");
    OpCall c = mul_call({3, 10}, 1);
    c.in[1].shape = {10};
    EXPECT_THAT(
        infer_error(op, c.node("mul")),
        HasSubstr(
            "[mul] node 'test.mul': inputs must have the same shape, got a f32 (3, 10) and b f32 (10)"));
    c = mul_call({3, 10}, 1);
    c.in[1].dtype = DType::I32;
    EXPECT_THAT(infer_error(op, c.node("mul")), HasSubstr("input 1 (b) must be f32, got i32 (3, 10)"));
    c = mul_call({3, 10}, 1);
    c.in.pop_back();
    EXPECT_THAT(infer_error(op, c.node("mul")), HasSubstr("expects 2 inputs (a, b), got 1"));
    c = mul_call({3, 10}, 1);
    c.in[0].shape = c.in[1].shape = {0, 10};
    EXPECT_THAT(infer_error(op, c.node("mul")), HasSubstr("input 0 (a) has an empty dimension: f32 (0, 10)"));
}

// ---- models/examples/llama-geglu.json ---------------------------------------------------------------

std::string geglu_path() {
    return std::string(GRAPHRUN_SOURCE_DIR) + "/models/examples/llama-geglu.json";
}


TEST(GegluGraph, BindsAndPlansWithGeluAndMulInPlace) {
    const std::string file = random_model_file(spec_of(32, 2, 4, 2, 72), "geglu_plan");
    auto model = graph::Model::load(file, geglu_path());
    for (int64_t n_tokens : {1, 5}) {
        const graph::Plan plan = graph::make_plan(model->graph(), graph::plan_shape_for(n_tokens, 1, 64));
        EXPECT_NO_THROW(graph::verify_plan(plan));
        int gelu = 0, mul = 0;
        for (const graph::PlanStep& step : plan.steps) {
            const std::string kernel = step.op->name;
            EXPECT_NE(kernel, "swiglu");
            gelu += kernel == "gelu";
            mul += kernel == "mul";
        }
        EXPECT_EQ(gelu, 2);
        EXPECT_EQ(mul, 2);
        const std::string dump = graph::dump_plan_text(plan, model->graph());
        // Each runs in place: gelu over the dying gate, mul over gelu's output.
        EXPECT_THAT(dump, HasSubstr("in place of blk.0.gate\n"));
        EXPECT_THAT(dump, HasSubstr("in place of blk.1.gate_act\n"));
        EXPECT_THAT(dump, ::testing::ContainsRegex("gelu +blk\\.1\\.gate_act +f32 \\(" +
                                                   std::to_string(n_tokens) + ", 72\\)"));
        EXPECT_THAT(dump, ::testing::ContainsRegex("mul +blk\\.0\\.act +f32 \\(" + std::to_string(n_tokens) +
                                                   ", 72\\)"));
    }
}

TEST(GegluGraph, RunsAndChangesTheLogits) {
    const std::string file = random_model_file(spec_of(32, 2, 4, 2, 72), "geglu_run");
    const std::vector<int32_t> tokens = random_tokens(9, 320, 3);
    graph::Session geglu(graph::Model::load(file, geglu_path()), {.n_ctx = 32});
    graph::Session llama(graph::Model::load(file), {.n_ctx = 32});
    auto g = geglu.eval(tokens);
    const std::vector<float> geglu_logits(g.begin(), g.end());
    ASSERT_EQ(geglu_logits.size(), tokens.size() * 320);
    for (float v : geglu_logits) ASSERT_TRUE(std::isfinite(v));
    auto l = llama.eval(tokens);
    // Same weights, another activation: the logits must move, and well beyond float noise.
    EXPECT_GT(max_relative_error(geglu_logits, l), 1e-2);
}

TEST(GegluGraph, CachedDecodingEqualsFullRecomputation) {
    auto model =
        graph::Model::load(random_model_file(spec_of(24, 2, 3, 3, 40), "geglu_cached"), geglu_path());
    const std::vector<int32_t> tokens = random_tokens(24, 320, 11);
    graph::Session cached(model, {.n_ctx = 32});
    std::vector<std::vector<float>> step_logits;
    for (int32_t id : tokens) {
        auto row = cached.eval(std::span<const int32_t>(&id, 1));
        step_logits.emplace_back(row.begin(), row.end());
    }
    graph::Session full(model, {.n_ctx = 32});
    for (size_t n = 1; n <= tokens.size(); ++n) {
        full.reset();
        auto logits = full.eval(std::span<const int32_t>(tokens.data(), n));
        auto last = logits.subspan((n - 1) * size_t(full.n_vocab()));
        EXPECT_LT(max_relative_error(step_logits[n - 1], last), 1e-5) << "position " << n - 1;
    }
}

// A weight of the model file as a test tensor (copied, so reference calls can own it).
TestTensor weight(const GgufFile& file, const std::string& name) {
    const GgufTensor* t = file.find_tensor(name);
    if (!t) throw std::runtime_error("test model has no tensor " + name);
    return raw_tensor(t->type, t->shape(), t->data, size_t(t->nbytes));
}

// y = matmul_f32's reference of x (T, K) · W (N, K)ᵀ.
TestTensor matmul_by_reference(const TestTensor& x, const TestTensor& w) {
    OpCall c;
    c.in = {x, w};
    c.out = output_tensor(DType::F32, {x.shape[0], w.shape[0]});
    op_row("matmul_f32").reference(c.args());
    return c.out;
}

TEST(GegluGraph, FeedForwardEqualsReferencesAppliedByHand) {
    // One layer; the plan runs step by step so ffn_in and ffn_out can be read while they are alive.
    auto model = graph::Model::load(random_model_file(spec_of(32, 1, 4, 2, 88), "geglu_hand"), geglu_path());
    const int64_t T = 5;
    const graph::Plan plan = graph::make_plan(model->graph(), graph::plan_shape_for(T, 1, 16));
    AlignedBuffer arena(plan.arena_bytes, graph::kArenaAlignment);
    std::vector<AlignedBuffer> state;
    std::vector<void*> state_ptrs;
    for (int id : plan.state_tensors) {
        state.emplace_back(plan.tensors[size_t(id)].bytes, graph::kArenaAlignment);
        state_ptrs.push_back(state.back().data());
    }
    const std::vector<Step> steps = graph::bind_plan(plan, arena.data(), state_ptrs);
    const std::vector<int32_t> tokens = random_tokens(size_t(T), 320, 4);
    // One sequence at positions 0 .. T-1 in block 0 (so slot = position), logits for the last token.
    for (size_t i = 0; i < model->graph().inputs.size(); ++i) {
        const graph::PlanTensor& input = plan.tensors[size_t(plan.input_tensors[i])];
        auto* dst = reinterpret_cast<int32_t*>(arena.data() + input.offset);
        const graph::InputKind kind = model->graph().inputs[i].kind;
        for (int64_t k = 0; k < input.desc.n_elements(); ++k)
            dst[k] = kind == graph::InputKind::Tokens      ? tokens[size_t(k)]
                     : kind == graph::InputKind::KvTable   ? 0
                     : kind == graph::InputKind::LogitRows ? int32_t(T - 1)
                                                           : int32_t(k);
    }
    auto step_of = [&](const std::string& name) {
        for (size_t s = 0; s < plan.steps.size(); ++s)
            if (plan.tensors[plan.steps[s].output].name == name) return s;
        throw std::runtime_error("plan has no step writing " + name);
    };
    auto read = [&](size_t step) {
        const graph::PlanTensor& t = plan.tensors[plan.steps[step].output];
        return raw_tensor(t.desc.dtype, t.desc.shape, arena.data() + t.offset, size_t(t.bytes));
    };
    const size_t s_in = step_of("blk.0.ffn_in"), s_out = step_of("blk.0.ffn_out");
    ASSERT_LT(s_in, s_out);
    Executor executor(1);
    executor.run(std::span(steps).first(s_in + 1));
    const TestTensor ffn_in = read(s_in);
    executor.run(std::span(steps).subspan(s_in + 1, s_out - s_in));
    const std::vector<float> got = read(s_out).floats();

    // By hand: down · (gelu(gate · x) * (up · x)), every op through its reference.
    const GgufFile& file = model->file();
    OpCall act;
    act.in = {matmul_by_reference(ffn_in, weight(file, "blk.0.ffn_gate.weight"))};
    act.out = output_tensor(DType::F32, act.in[0].shape);
    op_row("gelu").reference(act.args());
    OpCall gated;
    gated.in = {act.out, matmul_by_reference(ffn_in, weight(file, "blk.0.ffn_up.weight"))};
    gated.out = output_tensor(DType::F32, act.out.shape);
    op_row("mul").reference(gated.args());
    const std::vector<float> want =
        matmul_by_reference(gated.out, weight(file, "blk.0.ffn_down.weight")).floats();
    ASSERT_EQ(got.size(), size_t(T * 32));
    EXPECT_LT(nmse(got, want), 1e-10);

    // And SwiGLU by hand is far from it: the graph really ran GeGLU.
    OpCall swiglu;
    swiglu.in = {matmul_by_reference(ffn_in, weight(file, "blk.0.ffn_gate.weight")), gated.in[1]};
    swiglu.out = output_tensor(DType::F32, act.out.shape);
    op_row("swiglu").reference(swiglu.args());
    EXPECT_GT(nmse(got, matmul_by_reference(swiglu.out, weight(file, "blk.0.ffn_down.weight")).floats()),
              1e-3);
}

}  // namespace
}  // namespace graphrun::testing
