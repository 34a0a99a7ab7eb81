// tests/graph/kv_state_plan_test.cpp — the KV cache as planned state: each misuse of a cache is a plan
// error naming the node (attention without a cache, two layers writing or reading one cache, a read
// before any write, a cache fed to an op that takes none, a cache nobody writes); the logits output is
// checked against what the session reads; sizes from options are held to their ceilings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/session.h"
#include "tests/common/graph_test_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

using testing::llama_json;
using testing::replace_once;

class KvStatePlan : public ::testing::Test {
  protected:
    void SetUp() override {
        model_ = GgufFile::open(testing::random_model_file(testing::spec_of(16, 2, 4, 2, 48), "kv_state"));
    }
    // Binds and plans an edited graph; returns the plan error ("" when it planned).
    std::string plan_error(const std::string& text) {
        const graph::Graph g = graph::bind_graph(graph::graph_file_from_string(text, "edited.json"), *model_);
        try {
            graph::make_plan(g, graph::plan_shape_for(4, 1, 64));
        } catch (const ops::PlanError& e) {
            return e.what();
        }
        return "";
    }
    std::shared_ptr<const GgufFile> model_;
};

TEST_F(KvStatePlan, TheShippedGraphPlans) {
    EXPECT_EQ(plan_error(llama_json()), "");
}

TEST_F(KvStatePlan, AttentionWithoutACacheNamesTheNode) {
    const std::string text = replace_once(llama_json(), "\"in\": [\"q_rope\", \"k_stored\", \"v_stored\"",
                                          "\"in\": [\"q_rope\", \"k_rope\", \"v_stored\"");
    EXPECT_THAT(plan_error(text),
                AllOf(HasSubstr("[attention] node 'blk.0.attn'"), HasSubstr("input 1 must be a KV cache"),
                      HasSubstr("'blk.0.k_rope' (arena)")));
}

TEST_F(KvStatePlan, OneCacheForEveryLayerIsCaught) {
    // The caches declared once, outside the layers: layer 1's kv_write would overwrite layer 0's cache.
    std::string text =
        replace_once(llama_json(),
                     "      { \"id\": \"k_cache\",  \"state\": \"kv_cache\", \"width\": \"kv_width\" },\n"
                     "      { \"id\": \"v_cache\",  \"state\": \"kv_cache\", \"width\": \"kv_width\" },\n",
                     "");
    text = replace_once(text, "    { \"id\": \"x\", \"op\": \"embedding\"",
                        "    { \"id\": \"k_cache\", \"state\": \"kv_cache\", \"width\": \"kv_width\" },\n"
                        "    { \"id\": \"v_cache\", \"state\": \"kv_cache\", \"width\": \"kv_width\" },\n"
                        "    { \"id\": \"x\", \"op\": \"embedding\"");
    EXPECT_THAT(
        plan_error(text),
        AllOf(HasSubstr("[kv_write] node 'blk.1.k_stored'"), HasSubstr("writes the KV cache 'k_cache'"),
              HasSubstr("node 'blk.0.k_stored' writes too"), HasSubstr("caches of its own")));
}

TEST_F(KvStatePlan, TwoAttentionNodesReadingOneCacheAreCaught) {
    // A second attention in layer 0 reading the same caches (a copy-paste slip).
    const std::string text = replace_once(
        llama_json(), "      { \"id\": \"attn_out\"",
        "      { \"id\": \"attn2\", \"op\": \"attention\", \"in\": [\"q_rope\", \"k_stored\", \"v_stored\", "
        "\"positions\", \"kv_table\"], \"n_head\": \"n_head\", \"n_head_kv\": \"n_head_kv\", \"head_dim\": "
        "\"head_dim\" },\n      { \"id\": \"attn_out\"");
    EXPECT_THAT(plan_error(text), AllOf(HasSubstr("[attention] node 'blk.0.attn2'"),
                                        HasSubstr("which node 'blk.0.attn' reads too"),
                                        HasSubstr("two attention nodes would share one layer's cache")));
}

TEST_F(KvStatePlan, ReadBeforeWriteAndStateInTheWrongPlaceAreCaught) {
    // Attention reading the declared cache directly: this batch's rows were never stored.
    std::string text = replace_once(llama_json(), "\"in\": [\"q_rope\", \"k_stored\", \"v_stored\"",
                                    "\"in\": [\"q_rope\", \"k_cache\", \"v_cache\"");
    text = replace_once(text,
                        "      { \"id\": \"k_stored\", \"op\": \"kv_write\",  \"in\": [\"k_cache\", "
                        "\"k_rope\", \"kv_slots\"] },\n"
                        "      { \"id\": \"v_stored\", \"op\": \"kv_write\",  \"in\": [\"v_cache\", \"v\", "
                        "\"kv_slots\"] },\n",
                        "");
    EXPECT_THAT(plan_error(text),
                AllOf(HasSubstr("[attention] node 'blk.0.attn'"),
                      HasSubstr("reads the KV cache 'blk.0.k_cache' before any node writes it")));
    // A cache into a matmul.
    text = replace_once(llama_json(), "\"in\": [\"attn\", \"blk.{L}.attn_output.weight\"]",
                        "\"in\": [\"k_stored\", \"blk.{L}.attn_output.weight\"]");
    EXPECT_THAT(plan_error(text), AllOf(HasSubstr("[matmul] node 'blk.0.attn_out'"),
                                        HasSubstr("input 0 is the KV cache 'blk.0.k_cache'"),
                                        HasSubstr("takes no state there")));
    // Keys and values in one cache.
    text = replace_once(llama_json(), "\"in\": [\"q_rope\", \"k_stored\", \"v_stored\"",
                        "\"in\": [\"q_rope\", \"k_stored\", \"k_stored\"");
    EXPECT_THAT(plan_error(text),
                AllOf(HasSubstr("node 'blk.0.attn'"), HasSubstr("as input 1 and as input 2")));
    // A cache declared and never written.
    text = replace_once(llama_json(),
                        "      { \"id\": \"v_cache\",  \"state\": \"kv_cache\", \"width\": \"kv_width\" },\n",
                        "      { \"id\": \"v_cache\",  \"state\": \"kv_cache\", \"width\": \"kv_width\" },\n"
                        "      { \"id\": \"spare\",  \"state\": \"kv_cache\", \"width\": \"kv_width\" },\n");
    EXPECT_THAT(plan_error(text), AllOf(HasSubstr("state 'blk.0.spare' is declared but no node writes it")));
}

// Finding 2 of the hostile-input issue: a graph whose "logits" is not one row of n_vocab per row the
// session reads made the session read past the tensor. Now the plan refuses it, naming the output, when the model is loaded.
TEST(KvStateLogits, ALogitsOutputOfTheWrongShapeIsRefused) {
    const std::string model = testing::random_model_file(testing::spec_of(16, 1, 4, 2, 48), "logits_shape");
    const std::string path = (testing::test_temp_dir() / "two_nodes.json").string();
    std::ofstream(path) << R"({"architecture": "llama", "inputs": ["tokens", "positions"], "nodes": [
        {"id": "n", "op": "rmsnorm", "in": ["blk.0.attn_k.weight", "output_norm.weight"], "eps": 1e-5},
        {"id": "logits", "op": "matmul", "in": ["n", "output.weight"]}], "outputs": ["logits"]})";
    try {
        graph::Model::load(model, path);  // which plans one token: the shape is refused while loading
        FAIL() << "a logits output of 8 rows was accepted";
    } catch (const ops::PlanError& e) {
        EXPECT_THAT(e.what(),
                    AllOf(HasSubstr("output 'logits' is f32 (8, 320)"),
                          HasSubstr("reads the first output as the logits, f32 (n_tokens 1, n_vocab)")));
    }
}

// Finding 3: sizes from options are checked against documented ceilings before anything is allocated.
TEST(KvStateSizes, OptionsAboveTheirCeilingsAreRefusedByName) {
    auto model =
        graph::Model::load(testing::random_model_file(testing::spec_of(16, 1, 4, 2, 48), "kv_sizes"));
    auto refusal = [&](graph::EngineOptions options) -> std::string {
        try {
            graph::Engine engine(model, options);
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_THAT(
        refusal({.n_ctx = int64_t(1) << 60}),
        AllOf(HasSubstr("the context (n_ctx, -c) 1152921504606846976"), HasSubstr("outside 1 .. 16777216")));
    EXPECT_THAT(refusal({.n_ctx = 64, .n_seq = 100000}),
                HasSubstr("sequence count (n_seq, --parallel) 100000"));
    EXPECT_THAT(refusal({.n_ctx = int64_t(1) << 24, .n_seq = 4096}), HasSubstr("the KV pool"));
    EXPECT_THAT(refusal({.n_ctx = 64, .max_batch = int64_t(1) << 62}),
                HasSubstr("the batch size (max_batch)"));
    try {
        graph::Session session(model, {.n_ctx = 64});
        session.plan(int64_t(1) << 62);
        FAIL() << "a plan of 2^62 tokens was made";
    } catch (const ops::PlanError& e) {
        EXPECT_THAT(e.what(), HasSubstr("a batch of 4611686018427387904 tokens is more than the 65536"));
    }
}

}  // namespace
}  // namespace graphrun
