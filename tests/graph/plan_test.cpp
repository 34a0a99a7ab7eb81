// tests/graph/plan_test.cpp — the planner: kernel choice, arena smaller than the naive sum, the verifier
// passing on llama.json at several shapes and catching a deliberately broken plan.
#include "graph/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "ops/quant/kernels.h"
#include "tests/common/test_models.h"
#include "tools/lib/quantize_model.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

struct Shape {
    int64_t embd, layers, heads, kv_heads, ff;
};

class PlanShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(PlanShapes, VerifierPassesAndArenaBeatsNaiveSum) {
    const Shape s = GetParam();
    const std::string name =
        "plan_" + std::to_string(s.embd) + "_" + std::to_string(s.heads) + "_" + std::to_string(s.kv_heads);
    auto model = graph::Model::load(
        testing::random_model_file(testing::spec_of(s.embd, s.layers, s.heads, s.kv_heads, s.ff), name));
    for (int64_t n_tokens : {1, 7, 64}) {
        const int64_t n_outputs = n_tokens == 7 ? 3 : n_tokens;
        graph::Plan plan = graph::make_plan(model->graph(), graph::plan_shape_for(n_tokens, n_outputs, 128));
        EXPECT_NO_THROW(graph::verify_plan(plan));
        EXPECT_LT(plan.arena_bytes, plan.naive_bytes) << n_tokens << " tokens";
        // The KV cache is state: K and V per layer, (128 positions, n_head_kv * head_dim) f16 each.
        const int64_t row = s.kv_heads * (s.embd / s.heads);
        ASSERT_EQ(plan.state_tensors.size(), size_t(2 * s.layers));
        for (int id : plan.state_tensors) {
            const graph::PlanTensor& t = plan.tensors[size_t(id)];
            EXPECT_EQ(t.kind, graph::PlanTensor::Kind::State);
            EXPECT_EQ(t.desc.str(), "f16 (128, " + std::to_string(row) + ")");
        }
        EXPECT_EQ(plan.state_bytes, 2 * s.layers * 128 * row * 2);
        // Every intermediate lies in the arena, aligned, and the logits are (n_outputs, n_vocab).
        for (const graph::PlanTensor& t : plan.tensors) {
            if (t.kind != graph::PlanTensor::Kind::Weight && t.kind != graph::PlanTensor::Kind::State) {
                EXPECT_EQ(t.offset % graph::kArenaAlignment, 0);
            }
        }
        EXPECT_EQ(plan.tensors[plan.output_tensors[0]].desc.shape, (std::vector<int64_t>{n_outputs, 320}));
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PlanShapes,
                         ::testing::Values(Shape{16, 2, 4, 2, 48}, Shape{24, 3, 6, 6, 40},
                                           Shape{40, 2, 4, 2, 72}, Shape{48, 1, 4, 1, 100}),
                         [](const auto& info) {
                             const Shape& s = info.param;
                             return "w" + std::to_string(s.embd) + "_h" + std::to_string(s.heads) + "_kv" +
                                    std::to_string(s.kv_heads);
                         });

TEST(Plan, KernelChoiceFollowsWeightType) {
    graph::RandomLlamaSpec spec = testing::spec_of(32, 1, 4, 2, 64);
    spec.type = DType::F16;
    auto model = graph::Model::load(testing::random_model_file(spec, "plan_f16"));
    graph::Plan plan = graph::make_plan(model->graph(), graph::plan_shape_for(3, 1, 16));
    int matmuls = 0;
    for (const graph::PlanStep& step : plan.steps) {
        if (model->graph().nodes[step.node].op != "matmul") continue;
        EXPECT_STREQ(step.op->name, "matmul_f32");
        EXPECT_EQ(plan.tensors[step.inputs[1]].desc.dtype, DType::F16);
        ++matmuls;
    }
    EXPECT_EQ(matmuls, 7 + 1);
}

// The one dispatch: a plan binds every step's kernel of the level it was made for, and the dump names
// the level of the kernel bound (a row without a kernel of that level runs and names the one below).
TEST(Plan, BindsTheKernelsOfItsLevelAndTheDumpNamesThem) {
    const std::string f32 = testing::random_model_file(testing::spec_of(32, 1, 4, 2, 64), "plan_levels");
    const std::string q4 = (testing::test_temp_dir() / "plan_levels-q4_0.gguf").string();
    graph::quantize_model(f32, q4, {.mix = "q4_0"});
    auto model = graph::Model::load(q4);
    for (const ops::SimdLevel level : ops::kSimdLevels) {
        if (!ops::simd_level_available(level)) {
            EXPECT_THROW(graph::make_plan(model->graph(), graph::plan_shape_for(3, 1, 16), level),
                         std::invalid_argument);
            continue;
        }
        const graph::Plan plan = graph::make_plan(model->graph(), graph::plan_shape_for(3, 1, 16), level);
        EXPECT_EQ(plan.simd, level);
        std::vector<uint8_t> arena(size_t(plan.arena_bytes) + graph::kArenaAlignment);
        std::vector<std::vector<uint8_t>> state_bytes;
        std::vector<void*> state;
        for (int id : plan.state_tensors) {
            state_bytes.emplace_back(size_t(plan.tensors[size_t(id)].bytes));
            state.push_back(state_bytes.back().data());
        }
        auto* base = reinterpret_cast<uint8_t*>(
            (reinterpret_cast<uintptr_t>(arena.data()) + graph::kArenaAlignment - 1) /
            graph::kArenaAlignment * graph::kArenaAlignment);
        const std::vector<Step> steps = graph::bind_plan(plan, base, state);
        const auto j = nlohmann::json::parse(graph::dump_plan_json(plan, model->graph()));
        ASSERT_EQ(steps.size(), plan.steps.size());
        for (size_t i = 0; i < steps.size(); ++i) {
            const ops::OpDef& op = *plan.steps[i].op;
            EXPECT_EQ(steps[i].run, op.run.at(level)) << op.name;
            if (op.run.plain()) {
                EXPECT_FALSE(j["steps"][i].contains("simd")) << op.name;
                continue;
            }
            const ops::SimdLevel named = op.run.level_of(level);
            EXPECT_EQ(j["steps"][i]["simd"], ops::simd_level_name(named)) << op.name;
            EXPECT_LE(named, level) << op.name;
            EXPECT_EQ(steps[i].run, op.run.at(named))
                << op.name << ": the dump names another kernel than runs";
        }
        // Q4_0's row names the level of its kernel and, where that level's traits have one, the GEMM: the
        // GEMM of the packed layout where the model was repacked at load for this level (graph/repack.h).
        const std::string text = graph::dump_plan_text(plan, model->graph());
        const ops::OpDef& q4_row = *ops::find_op("matmul_q4_0");
        const ops::QuantTraits& q4_traits = *ops::quant_traits_at(DType::Q4_0, level);
        const bool repacked = q4_traits.packed_gemm && ops::quant_traits(DType::Q4_0)->packed_gemm;
        const std::string q4 = std::string("matmul_q4_0/") +
                               ops::simd_level_name(q4_row.run.level_of(level)) +
                               (repacked         ? std::string("+") + q4_traits.packed_variant
                                : q4_traits.gemm ? "+gemm"
                                                 : "");
        EXPECT_THAT(text, HasSubstr(q4 + " "));
        EXPECT_THAT(text, HasSubstr(std::string("kernels run at: ") + ops::simd_level_name(level)));
    }
}

TEST(Plan, VerifierCatchesOverlappingLiveTensors) {
    auto model =
        graph::Model::load(testing::random_model_file(testing::spec_of(16, 2, 4, 2, 48), "plan_broken"));
    graph::Plan plan = graph::make_plan(model->graph(), graph::plan_shape_for(5, 1, 32));
    // q and k are both alive while attention runs; put k on top of q.
    auto find = [&](const std::string& name) {
        for (graph::PlanTensor& t : plan.tensors)
            if (t.name == name) return &t;
        throw std::runtime_error("no tensor " + name);
    };
    graph::PlanTensor* q = find("blk.0.q_rope");
    graph::PlanTensor* k = find("blk.0.k_rope");
    ASSERT_NE(q->offset, k->offset);
    k->offset = q->offset;
    try {
        graph::verify_plan(plan);
        FAIL() << "overlapping live tensors were not caught";
    } catch (const ops::PlanError& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("blk.0.q"), HasSubstr("blk.0.k"), HasSubstr("share bytes")));
    }
    // An offset outside the arena is caught too.
    k->offset = plan.arena_bytes;
    EXPECT_THROW(graph::verify_plan(plan), ops::PlanError);
}

TEST(Plan, AllocatorReusesFreedGapsAndKeepsLiveOnesApart) {
    // Hand-made lifetimes: a [0,1] and c [2,3] can share bytes; b [1,2] overlaps both in time.
    graph::Plan plan;
    auto add = [&](const char* name, int64_t bytes, int first, int last) {
        graph::PlanTensor t{name, {DType::F32, {bytes / 4}}, graph::PlanTensor::Kind::Intermediate};
        t.bytes = bytes;
        t.first_step = first;
        t.last_step = last;
        plan.tensors.push_back(t);
    };
    add("a", 1000, 0, 1);
    add("b", 600, 1, 2);
    add("c", 900, 2, 3);
    graph::assign_arena_offsets(plan);
    graph::verify_plan(plan);
    EXPECT_EQ(plan.tensors[0].offset, plan.tensors[2].offset);  // c reuses a's bytes
    EXPECT_EQ(plan.arena_bytes, 1024 + 640);
}

TEST(Plan, JsonDumpHasTheContractFields) {
    auto model =
        graph::Model::load(testing::random_model_file(testing::spec_of(16, 2, 4, 2, 48), "plan_json"));
    graph::Plan plan = graph::make_plan(model->graph(), graph::plan_shape_for(4, 2, 64, 3));
    auto j = nlohmann::json::parse(graph::dump_plan_json(plan, model->graph()));
    EXPECT_EQ(j["steps"].size(), plan.steps.size());
    EXPECT_EQ(j["arena_bytes"].get<int64_t>(), plan.arena_bytes);
    EXPECT_EQ(j["naive_bytes"].get<int64_t>(), plan.naive_bytes);
    EXPECT_EQ(j["kv_cache_bytes"].get<int64_t>(), plan.state_bytes);
    EXPECT_EQ(j["weight_bytes"].get<int64_t>(), plan.weight_bytes);
    EXPECT_EQ(j["n_outputs"].get<int64_t>(), 2);
    EXPECT_EQ(j["steps"][0]["kernel"], "embedding");
    // Three sequences of 64 positions: 12 blocks of 16 in the pool, tables of 4 entries.
    EXPECT_EQ(j["kv_cache"]["blocks"].get<int64_t>(), 12);
    EXPECT_EQ(j["kv_cache"]["block_size"].get<int64_t>(), 16);
    EXPECT_EQ(j["kv_cache"]["table_width"].get<int64_t>(), 4);
    ASSERT_EQ(j["state"].size(), 4u);
    EXPECT_EQ(j["state"][1]["name"], "blk.0.v_cache");
    EXPECT_EQ(j["state"][1]["kind"], "state");
    EXPECT_EQ(j["state"][1]["shape"], nlohmann::json::parse("[192, 8]"));
    EXPECT_EQ(j["state"][1]["bytes"].get<int64_t>(), 192 * 8 * 2);
    EXPECT_EQ(j["state"][1]["written_by"], nlohmann::json::parse("[\"blk.0.v_stored\"]"));
    EXPECT_EQ(j["state"][1]["read_by"], nlohmann::json::parse("[\"blk.0.attn\"]"));
    const std::string text = graph::dump_plan_text(plan, model->graph());
    EXPECT_THAT(
        text, AllOf(HasSubstr("matmul_f32"), HasSubstr("arena peak"),
                    HasSubstr("KV cache (state) 12,288 bytes"), HasSubstr("blk.1.k_cache       f16 (192, 8)"),
                    HasSubstr("written by blk.1.k_stored, read by blk.1.attn"), HasSubstr("weights mapped")));
}

}  // namespace
}  // namespace graphrun
