// tests/graph/embedding_output_test.cpp — a graph's "embedding" output: how outputs declare it, the
// errors naming the field, and the plans that keep it (or let its bytes be reused) and their dumps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "graph/plan.h"
#include "tests/common/graph_test_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::llama_json;
using testing::replace_once;

const char kNamedOutputs[] = R"("outputs": { "logits": "logits", "embedding": "out_norm" })";

class EmbeddingOutput : public ::testing::Test {
  protected:
    void SetUp() override {
        model_ =
            GgufFile::open(testing::random_model_file(testing::spec_of(16, 2, 4, 2, 48), "embedding_output"));
    }
    graph::Graph bind(const std::string& text) {
        return graph::bind_graph(graph::graph_file_from_string(text, "edited.json"), *model_);
    }
    std::string bind_error(const std::string& text) {
        try {
            bind(text);
        } catch (const graph::GraphError& e) {
            return e.what();
        }
        return "";
    }
    std::string plan_error(const graph::Graph& g, const graph::PlanShape& shape) {
        try {
            graph::make_plan(g, shape);
        } catch (const ops::PlanError& e) {
            return e.what();
        }
        return "";
    }
    std::string with_outputs(const std::string& outputs) {
        return replace_once(llama_json(), kNamedOutputs, outputs);
    }
    std::shared_ptr<const GgufFile> model_;
};

TEST_F(EmbeddingOutput, TheShippedGraphsDeclareTheFinalNorm) {
    for (const char* arch : {"llama", "qwen2", "qwen3"}) {
        const graph::GraphFile file = graph::load_graph_file(graph::graph_path_for(arch));
        EXPECT_THAT(file.json_text, HasSubstr(kNamedOutputs)) << arch;
    }
    const graph::Graph g = bind(llama_json());
    ASSERT_EQ(g.outputs.size(), 2u);
    ASSERT_EQ(g.embedding_output, 1);
    EXPECT_EQ(g.nodes[size_t(g.outputs[0].index)].name, "logits");
    EXPECT_EQ(g.nodes[size_t(g.outputs[1].index)].name, "out_norm");
}

TEST_F(EmbeddingOutput, AnArrayOfOutputsDeclaresNone) {
    const graph::Graph g = bind(with_outputs(R"("outputs": ["logits"])"));
    EXPECT_EQ(g.outputs.size(), 1u);
    EXPECT_EQ(g.embedding_output, -1);
    graph::PlanShape shape = graph::plan_shape_for(3, 1, 64);
    EXPECT_EQ(graph::make_plan(g, shape).embedding_tensor, -1);
    shape.embedding = true;
    EXPECT_THAT(plan_error(g, shape), HasSubstr("edited.json declares no embedding output"));
}

TEST_F(EmbeddingOutput, BadNamedOutputsNameTheField) {
    EXPECT_THAT(bind_error(with_outputs(R"("outputs": { "embedding": "out_norm" })")),
                HasSubstr("edited.json: outputs: names no 'logits' output"));
    EXPECT_THAT(
        bind_error(with_outputs(R"("outputs": { "logits": "logits", "hidden": "out_norm" })")),
        HasSubstr("edited.json: outputs.hidden: is not an output graphrun reads (logits, embedding)"));
    EXPECT_THAT(bind_error(with_outputs(R"("outputs": { "logits": "logits", "embedding": "norm" })")),
                HasSubstr("edited.json: outputs.embedding: 'norm' is not a node"));
    EXPECT_THAT(bind_error(with_outputs(R"("outputs": { "logits": "logits", "embedding": 3 })")),
                HasSubstr("edited.json: outputs.embedding: an output name must be a string"));
    EXPECT_THAT(
        bind_error(with_outputs(R"("outputs": "logits")")),
        HasSubstr("outputs: must be a non-empty array of node ids, or {\"logits\": id, \"embedding\": id}"));
}

// A plan for logits lets the embedding output die at its last reader; an embedding plan keeps it to
// the end, (n_outputs, n_embd), and the verifier holds every other tensor off its bytes.
TEST_F(EmbeddingOutput, OnlyAnEmbeddingPlanKeepsIt) {
    const graph::Graph g = bind(llama_json());
    graph::PlanShape shape = graph::plan_shape_for(5, 2, 64);
    const graph::Plan logits_only = graph::make_plan(g, shape);
    EXPECT_EQ(logits_only.embedding_tensor, -1);
    ASSERT_EQ(logits_only.output_tensors.size(), 2u);
    EXPECT_EQ(logits_only.output_tensors[1], -1);

    shape.embedding = true;
    const graph::Plan kept = graph::make_plan(g, shape);
    ASSERT_GE(kept.embedding_tensor, 0);
    const graph::PlanTensor& t = kept.tensors[size_t(kept.embedding_tensor)];
    EXPECT_EQ(t.name, "out_norm");
    EXPECT_EQ(t.desc.shape, (std::vector<int64_t>{2, 16}));
    EXPECT_EQ(t.last_step, int(kept.steps.size()));
    EXPECT_EQ(kept.output_tensors[1], kept.embedding_tensor);
    graph::verify_plan(kept);
    EXPECT_GE(kept.arena_bytes, logits_only.arena_bytes);

    EXPECT_THAT(
        graph::dump_plan_text(logits_only, g),
        HasSubstr("\noutputs: logits = logits; embedding = out_norm (not kept by this plan; an embedding "
                  "plan keeps it)\n"));
    EXPECT_THAT(graph::dump_plan_text(kept, g),
                HasSubstr("\noutputs: logits = logits; embedding = out_norm (kept: f32 (2, 16))\n"));
    const auto j = nlohmann::json::parse(graph::dump_plan_json(kept, g));
    EXPECT_EQ(j["outputs"]["logits"]["node"], "logits");
    EXPECT_EQ(j["outputs"]["logits"]["tensor"]["shape"], nlohmann::json::parse("[2, 320]"));
    EXPECT_EQ(j["outputs"]["embedding"]["node"], "out_norm");
    EXPECT_EQ(j["outputs"]["embedding"]["kept"], true);
    EXPECT_EQ(j["outputs"]["embedding"]["tensor"]["shape"], nlohmann::json::parse("[2, 16]"));
    const auto j0 = nlohmann::json::parse(graph::dump_plan_json(logits_only, g));
    EXPECT_EQ(j0["outputs"]["embedding"]["kept"], false);
    EXPECT_FALSE(j0["outputs"]["embedding"].contains("tensor"));
}

// The embedding output is read as one row per row of logits; a node with a row per token of the
// batch (the residual stream before select_rows) is refused when an embedding plan is made, naming it.
TEST_F(EmbeddingOutput, AnOutputOfAnotherShapeIsAPlanError) {
    const graph::Graph g = bind(with_outputs(R"("outputs": { "logits": "logits", "embedding": "x" })"));
    graph::PlanShape shape = graph::plan_shape_for(5, 2, 64);
    EXPECT_EQ(plan_error(g, shape), "");  // a logits plan does not read it
    shape.embedding = true;
    EXPECT_THAT(plan_error(g, shape), AllOf(HasSubstr("[plan] output 'embedding' ('blk.1.x') is f32 (5, 16)"),
                                            HasSubstr("read as f32 (2, n_embd): one row per row of logits")));
    // With one row per token asked for, the same node is the right shape.
    shape = graph::plan_shape_for(5, 5, 64);
    shape.embedding = true;
    EXPECT_EQ(plan_error(g, shape), "");
}

}  // namespace
}  // namespace graphrun
