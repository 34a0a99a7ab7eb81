// tests/engine/repack_test.cpp — weights repacked at load (graph/repack.h): the same logits bits as the
// rows as stored, only matmul weights packed, the packed bytes the file's rows, the plan dump says so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/session.h"
#include "graph/plan.h"
#include "ops/quant/traits.h"
#include "tests/common/test_models.h"
#include "tools/lib/quantize_model.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Does this process repack Q4_0 (its SIMD level has a GEMM for q4_0x8: AVX2, not AVX-512 or scalar)?
bool packs_q4_0() {
    return ops::quant_traits(DType::Q4_0)->packed_gemm != nullptr;
}

// A random Llama quantized to Q4_0 (the mix: Q4_0 matrices, the output Q6_K), every width a multiple of 8.
std::string q4_0_model(const std::string& name, bool tied = false, bool pure = false) {
    graph::RandomLlamaSpec spec = testing::spec_of(64, 2, 4, 2, 96);
    spec.tied_output = tied;
    const std::string f32 = testing::random_model_file(spec, name);
    const std::string q4 = (testing::test_temp_dir() / (name + "-q4_0.gguf")).string();
    graph::quantize_model(f32, q4, {.mix = "q4_0", .pure = pure});
    return q4;
}

std::shared_ptr<const graph::Model> load(const std::string& path, bool repack) {
    if (repack)
        ::unsetenv("GRAPHRUN_REPACK");
    else
        ::setenv("GRAPHRUN_REPACK", "0", 1);
    auto model = graph::Model::load(path);
    ::unsetenv("GRAPHRUN_REPACK");
    return model;
}

int packed_weights(const graph::Model& model) {
    int n = 0;
    for (const graph::GraphWeight& w : model.graph().weights) n += w.packed != nullptr;
    return n;
}

// A prompt in chunks of 5 (batches of 5, 5, 3 tokens), then 6 single-token decodes, greedy: every
// logit row, concatenated.
std::vector<float> logits_of(std::shared_ptr<const graph::Model> model) {
    graph::Session session(std::move(model), {.n_ctx = 64, .n_threads = 2, .max_batch = 5});
    const std::vector<int32_t> prompt = testing::random_tokens(13, 320, 5);
    std::span<const float> rows = session.eval(prompt);
    std::vector<float> all(rows.begin(), rows.end());
    for (int k = 0; k < 6; ++k) {
        std::span<const float> last = rows.subspan(rows.size() - size_t(session.n_vocab()));
        const int32_t next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
        rows = session.eval(std::span<const int32_t>(&next, 1));
        all.insert(all.end(), rows.begin(), rows.end());
    }
    return all;
}

TEST(Repack, GivesTheLogitsBitsOfTheRowsAsStored) {
    const std::string path = q4_0_model("repack_bits");
    auto repacked = load(path, true), stored = load(path, false);
    EXPECT_EQ(packed_weights(*stored), 0) << "GRAPHRUN_REPACK=0 keeps every weight as stored";
    if (packs_q4_0())
        EXPECT_EQ(packed_weights(*repacked), 2 * 7)
            << "every Q4_0 matrix of the 2 layers (the output is Q6_K)";
    else
        EXPECT_EQ(packed_weights(*repacked), 0) << "this level runs Q4_0's rows as stored";
    const std::vector<float> a = logits_of(repacked), b = logits_of(stored);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(Repack, PackedBytesAreTheFileRowsInTheLayout) {
    auto model = load(q4_0_model("repack_bytes"), true);
    if (!packs_q4_0()) GTEST_SKIP() << "this SIMD level repacks nothing";
    for (const graph::GraphWeight& w : model->graph().weights) {
        if (!w.packed) continue;
        const GgufTensor& t = *w.tensor;
        ASSERT_EQ(w.packed->size(), int64_t(t.nbytes)) << w.name;
        EXPECT_NE(std::memcmp(w.packed->data(), t.data, t.nbytes), 0) << w.name << ": not reordered";
        // The mapped pages were released: reading them maps the file's bytes again.
        std::vector<uint8_t> rows(t.nbytes);
        ops::quant_traits(t.type)->unpack(w.packed->data(), rows.data(), t.shape()[0], t.shape()[1]);
        EXPECT_EQ(std::memcmp(rows.data(), t.data, t.nbytes), 0) << w.name;
    }
}

// A tied token embedding is read by the lookup as well as by the logits' matmul: it stays as stored.
TEST(Repack, OnlyWeightsThatOnlyMatmulsRead) {
    auto model = load(q4_0_model("repack_tied", /*tied=*/true, /*pure=*/true), true);
    const graph::GraphWeight* embd = nullptr;
    for (const graph::GraphWeight& w : model->graph().weights)
        if (w.name == "token_embd.weight") embd = &w;
    ASSERT_NE(embd, nullptr);
    ASSERT_EQ(embd->tensor->type, DType::Q4_0) << "the test needs a Q4_0 token embedding";
    EXPECT_EQ(embd->packed, nullptr);
    EXPECT_EQ(packed_weights(*model), packs_q4_0() ? 2 * 7 : 0);
}

TEST(Repack, PlanDumpShowsTheLayoutAndTheRepackedBytes) {
    auto model = load(q4_0_model("repack_dump"), true);
    const graph::Plan plan = graph::make_plan(model->graph(), graph::plan_shape_for(4, 1, 32));
    const auto j = nlohmann::json::parse(graph::dump_plan_json(plan, model->graph()));
    int64_t packed_bytes = 0, packed_inputs = 0;
    for (const auto& step : j["steps"])
        for (size_t i = 0; i < step["inputs"].size(); ++i) {
            const auto& in = step["inputs"][i];
            if (!in.contains("layout")) continue;
            EXPECT_EQ(in["layout"], "q4_0x8");
            EXPECT_EQ(step["kernel"], "matmul_q4_0") << in["name"];
            EXPECT_EQ(step["path"], "gemm_q4_0x8") << in["name"];
            EXPECT_EQ(i, 1u) << in["name"];
            packed_bytes += in["bytes"].get<int64_t>();
            ++packed_inputs;
        }
    EXPECT_EQ(packed_inputs, packs_q4_0() ? 2 * 7 : 0);
    EXPECT_EQ(j["packed_weight_bytes"].get<int64_t>(), packed_bytes);
    EXPECT_EQ(plan.packed_weight_bytes, packed_bytes);
    const std::string text = graph::dump_plan_text(plan, model->graph());
    if (packs_q4_0()) {
        EXPECT_THAT(text, HasSubstr("weight(q4_0x8)"));
        EXPECT_THAT(
            text, HasSubstr(std::string("matmul_q4_0/") + ops::simd_level_name(plan.simd) + "+gemm_q4_0x8 "));
        EXPECT_THAT(text, HasSubstr("weights repacked "));
    } else {
        EXPECT_THAT(text, Not(HasSubstr("q4_0x8")));
    }
    // A plan at the scalar level on the same model reads the rows as stored.
    const graph::Plan scalar =
        graph::make_plan(model->graph(), graph::plan_shape_for(4, 1, 32), ops::SimdLevel::Scalar);
    EXPECT_EQ(scalar.packed_weight_bytes, 0);
    EXPECT_THAT(graph::dump_plan_text(scalar, model->graph()), Not(HasSubstr("q4_0x8")));
}

}  // namespace
}  // namespace graphrun
