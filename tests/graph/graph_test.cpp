// tests/graph/graph_test.cpp — binding models/llama.json: symbols, unrolled layers, and each kind of
// graph error naming the node and the field.
#include "graph/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/session.h"
#include "tests/common/graph_test_util.h"
#include "ops/attention.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;
using testing::llama_json;
using testing::replace_once;

class GraphBindTest : public ::testing::Test {
  protected:
    void SetUp() override {
        model_ = GgufFile::open(testing::random_model_file(testing::spec_of(24, 3, 6, 2, 40), "bind"));
    }
    // Binds an edited llama.json and returns the error text ("" if it bound).
    std::string bind_error(const std::string& text) {
        try {
            graph::bind_graph(graph::graph_file_from_string(text, "edited.json"), *model_);
        } catch (const graph::GraphError& e) {
            return e.what();
        }
        return "";
    }
    std::shared_ptr<const GgufFile> model_;
};

TEST_F(GraphBindTest, LlamaJsonBindsSymbolsAndUnrollsLayers) {
    graph::Graph g = graph::bind_graph(graph::load_graph_file(graph::graph_path_for("llama")), *model_);
    EXPECT_EQ(g.symbols.at("n_embd"), 24);
    EXPECT_EQ(g.symbols.at("n_layer"), 3);
    EXPECT_EQ(g.symbols.at("n_head_kv"), 2);
    EXPECT_EQ(g.symbols.at("head_dim"), 4);
    EXPECT_EQ(g.symbols.at("rope_base"), 10000);
    EXPECT_EQ(g.symbols.at("kv_width"), 8);
    // embedding, 17 nodes a layer, the selection of the rows that get logits, final norm and logits
    ASSERT_EQ(g.nodes.size(), 1u + 3 * 17 + 3);
    EXPECT_EQ(g.nodes[1].name, "blk.0.attn_in");
    EXPECT_EQ(g.nodes.back().name, "logits");
    // The residual stream: layer 1's first norm reads layer 0's last add.
    const graph::GraphNode& norm1 = g.nodes[1 + 17];
    EXPECT_EQ(norm1.name, "blk.1.attn_in");
    ASSERT_EQ(norm1.inputs[0].kind, graph::ValueRef::Kind::Node);
    EXPECT_EQ(g.nodes[norm1.inputs[0].index].name, "blk.0.x");
    // Each layer declares its two caches; attention reads them through the kv_write nodes that fill them.
    ASSERT_EQ(g.states.size(), 6u);
    EXPECT_EQ(g.states[2].name, "blk.1.k_cache");
    EXPECT_EQ(g.states[2].width, 8);
    const graph::GraphNode& attn = g.nodes[1 + 17 + 8];
    EXPECT_EQ(attn.name, "blk.1.attn");
    ASSERT_EQ(attn.inputs[1].kind, graph::ValueRef::Kind::Node);
    const graph::GraphNode& store = g.nodes[attn.inputs[1].index];
    EXPECT_EQ(store.name, "blk.1.k_stored");
    ASSERT_EQ(store.inputs[0].kind, graph::ValueRef::Kind::State);
    EXPECT_EQ(g.states[store.inputs[0].index].name, "blk.1.k_cache");
    ASSERT_EQ(g.inputs.size(), 5u);
    EXPECT_EQ(g.input(graph::InputKind::KvTable)->name, "kv_table");
}

TEST_F(GraphBindTest, StateDeclarationsAndInputsAreChecked) {
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"state\": \"kv_cache\"", "\"state\": \"kv\"")),
                AllOf(HasSubstr("state 'blk.0.k_cache'"), HasSubstr("must be \"kv_cache\"")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"width\": \"kv_width\"", "\"width\": 2.5")),
                AllOf(HasSubstr("state 'blk.0.k_cache'"), HasSubstr("width 2.5 is not a whole number")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"width\": \"kv_width\"",
                                        "\"width\": \"kv_width\", \"layer\": 0")),
                AllOf(HasSubstr("state 'blk.0.k_cache'"), HasSubstr("unknown field 'layer'")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"logit_rows\"]", "\"logit_rows\", \"mask\"]")),
                AllOf(HasSubstr("inputs"), HasSubstr("'mask' is not an input the session fills"),
                      HasSubstr("known: tokens, positions, kv_slots, kv_table, logit_rows")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "{ \"mul\": [\"n_head_kv\", \"head_dim\"] }",
                                        "{ \"mul\": [\"n_head_kv\"] }")),
                AllOf(HasSubstr("symbol 'kv_width'"), HasSubstr("'mul' takes two operands")));
}

TEST_F(GraphBindTest, MissingOutputWeightFallsBackToEmbedding) {
    // A tied model (no output.weight, as SmolLM2 and the small Qwen2.5 files) falls back to the embedding.
    graph::RandomLlamaSpec spec = testing::spec_of(24, 3, 6, 2, 40);
    spec.tied_output = true;
    const auto tied = GgufFile::open(testing::random_model_file(spec, "bind_tied"));
    ASSERT_EQ(tied->find_tensor("output.weight"), nullptr);
    graph::Graph g = graph::bind_graph(graph::load_graph_file(graph::graph_path_for("llama")), *tied);
    const graph::ValueRef w = g.nodes.back().inputs[1];
    ASSERT_EQ(w.kind, graph::ValueRef::Kind::Weight);
    EXPECT_EQ(g.weights[w.index].name, "token_embd.weight");
    // A graph that falls back although the model has output.weight would leave it unread: refused.
    const std::string text = replace_once(llama_json(), "\"output.weight\"", "\"no_such_output.weight\"");
    EXPECT_THAT(bind_error(text), AllOf(HasSubstr("edited.json: tensors:"),
                                        HasSubstr("tensor 'output.weight' f32 (320, 24), which this graph "
                                                  "never reads")));
    // A graph for experiments may leave it unread when it says so (or says nothing).
    const std::string allowed = replace_once(text, "\"unread_tensors\": \"refuse\"", "\"unread_tensors\": \"allow\"");
    EXPECT_EQ(bind_error(allowed), "");
    EXPECT_EQ(bind_error(replace_once(text, "\"unread_tensors\": \"refuse\",", "")), "");
    EXPECT_THAT(bind_error(replace_once(text, "\"unread_tensors\": \"refuse\"", "\"unread_tensors\": true")),
                HasSubstr("edited.json: unread_tensors: must be \"refuse\" or \"allow\", got true"));
}

TEST_F(GraphBindTest, UnknownOpNamesNodeAndOp) {
    EXPECT_THAT(
        bind_error(replace_once(llama_json(), "\"op\": \"swiglu\"", "\"op\": \"swiglu2\"")),
        AllOf(HasSubstr("edited.json"), HasSubstr("node 'blk.0.act'"), HasSubstr("unknown op 'swiglu2'")));
}

TEST_F(GraphBindTest, MissingInputNamesNodeAndInput) {
    EXPECT_THAT(
        bind_error(replace_once(llama_json(), "\"in\": [\"gate\", \"up\"]", "\"in\": [\"gate\", \"upp\"]")),
        AllOf(HasSubstr("node 'blk.0.act'"), HasSubstr("input 'upp'")));
}

TEST_F(GraphBindTest, MissingWeightNamesBothCandidates) {
    std::string text = replace_once(llama_json(), "\"output.weight\"", "\"a.weight\"");
    text = replace_once(text, "\"token_embd.weight\" }", "\"b.weight\" }");
    EXPECT_THAT(bind_error(text),
                AllOf(HasSubstr("node 'logits'"), HasSubstr("'a.weight'"), HasSubstr("'b.weight'")));
}

TEST_F(GraphBindTest, UnboundSymbolAndMissingKey) {
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"eps\": \"eps\" }", "\"eps\": \"epsilon\" }")),
                AllOf(HasSubstr("node 'blk.0.attn_in'"), HasSubstr("'epsilon' is not a bound symbol")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "llama.embedding_length", "llama.width")),
                AllOf(HasSubstr("symbol 'n_embd'"), HasSubstr("no metadata key 'llama.width'")));
}

TEST_F(GraphBindTest, UnknownAttributeListsTheOpsOwn) {
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"eps\": \"eps\" }", "\"epsilon\": \"eps\" }")),
                AllOf(HasSubstr("node 'blk.0.attn_in'"), HasSubstr("unknown attribute 'epsilon'"),
                      HasSubstr("op 'rmsnorm' takes eps")));
}

// Each op declares its own attributes: another op's attribute is unknown here, even a valid one there.
TEST_F(GraphBindTest, AttributesAreCheckedAgainstTheirOpsDeclaration) {
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"in\": [\"attn_in\", \"blk.{L}.attn_q.weight\"] }",
                                        "\"in\": [\"attn_in\", \"blk.{L}.attn_q.weight\"], \"eps\": 0.1 }")),
                AllOf(HasSubstr("node 'blk.0.q'"), HasSubstr("unknown attribute 'eps'"),
                      HasSubstr("op 'matmul' takes none")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"in\": [\"x\", \"attn_out\"] }",
                                        "\"in\": [\"x\", \"attn_out\"], \"n_head\": 4 }")),
                AllOf(HasSubstr("node 'blk.0.h'"), HasSubstr("unknown attribute 'n_head'"),
                      HasSubstr("op 'add' takes none")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"eps\": \"eps\" }", "\"eps\": -1 }")),
                AllOf(HasSubstr("node 'blk.0.attn_in' attribute 'eps'"), HasSubstr("is -1, outside 0 .. 1")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"n_head\": \"n_head\", \"n_head_kv\"",
                                        "\"n_head\": 2.5, \"n_head_kv\"")),
                AllOf(HasSubstr("node 'blk.0.attn' attribute 'n_head'"),
                      HasSubstr("must be a whole number, got 2.5")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"head_dim\": \"head_dim\" }", "\"head_dim\": 1e300 }")),
                AllOf(HasSubstr("node 'blk.0.attn' attribute 'head_dim'"), HasSubstr("outside 1 .. 512")));
    // Attention no longer names a cache layer: the cache is an input (planned state).
    EXPECT_THAT(bind_error(replace_once(llama_json(), "\"head_dim\": \"head_dim\" }",
                                        "\"head_dim\": \"head_dim\", \"layer\": \"L\" }")),
                AllOf(HasSubstr("node 'blk.0.attn'"), HasSubstr("unknown attribute 'layer'")));
    EXPECT_THAT(bind_error(replace_once(llama_json(), ", \"eps\": \"eps\" }", " }")),
                AllOf(HasSubstr("node 'blk.0.attn_in'"), HasSubstr("op 'rmsnorm' needs attribute 'eps'")));
    EXPECT_THAT(
        bind_error(replace_once(llama_json(), "\"op\": \"swiglu\"", "\"op\": \"swiglu2\"")),
        AllOf(HasSubstr("unknown op 'swiglu2'"), HasSubstr("known: embedding, rmsnorm, matmul, rope")));
}

TEST_F(GraphBindTest, ArchitectureMismatchIsRefused) {
    EXPECT_THAT(
        bind_error(replace_once(llama_json(), "\"architecture\": \"llama\"", "\"architecture\": \"gpt2\"")),
        HasSubstr("the model is 'llama' but this graph runs 'gpt2' models"));
}

TEST_F(GraphBindTest, NotJsonAndDuplicateIds) {
    EXPECT_THROW(graph::graph_file_from_string("{ nope", "bad.json"), graph::GraphError);
    EXPECT_THAT(bind_error(replace_once(llama_json(), "{ \"id\": \"k\",", "{ \"id\": \"q\",")),
                HasSubstr("defined twice"));
}

TEST_F(GraphBindTest, WrongArityAndShapeMismatchFailAtPlanTime) {
    const std::string arity = replace_once(
        llama_json(), "\"in\": [\"q\", \"positions\", { \"weight\": \"rope_freqs.weight\", \"optional\": true }]",
        "\"in\": [\"q\"]");
    graph::Graph g = graph::bind_graph(graph::graph_file_from_string(arity, "edited.json"), *model_);
    try {
        graph::make_plan(g, graph::plan_shape_for(4, 1, 32));
        FAIL() << "a rope with one input was planned";
    } catch (const ops::PlanError& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("[rope]"), HasSubstr("blk.0.q_rope"),
                                    HasSubstr("expects 2 or 3 inputs, got 1")));
    }
    // The up and down matrices swapped: down (24, 40) applied to the 24-wide FFN input, a shape error
    // naming the node (swapped, not replaced: a weight the graph leaves unread is refused when binding).
    std::string shape = replace_once(llama_json(), "\"in\": [\"act\", \"blk.{L}.ffn_down.weight\"]",
                                     "\"in\": [\"act\", \"blk.{L}.ffn_up.weight\"]");
    shape = replace_once(shape, "\"in\": [\"ffn_in\", \"blk.{L}.ffn_up.weight\"]",
                         "\"in\": [\"ffn_in\", \"blk.{L}.ffn_down.weight\"]");
    graph::Graph g2 = graph::bind_graph(graph::graph_file_from_string(shape, "edited.json"), *model_);
    try {
        graph::make_plan(g2, graph::plan_shape_for(4, 1, 32));
        FAIL() << "a matmul with mismatched widths was planned";
    } catch (const ops::PlanError& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("[matmul]"), HasSubstr("blk.0.up")));
    }
}

}  // namespace
}  // namespace graphrun
