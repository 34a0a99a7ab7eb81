// tests/graph/graph_limits_test.cpp — graph files that try to take the stack, time or memory (issue 14,
// findings 6 and 8): nesting depth, repeat counts and iterations, node counts, name lengths and
// KV layer indices are bounded, numbers are checked before any cast, and placement and the plan
// verifier stay n log n (checked here for correctness on large and adversarial plans; the timing
// is bench/plan_bench.cpp's); the plan's batch and context ceilings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "graph/graph.h"
#include "graph/limits.h"
#include "graph/plan.h"
#include "engine/session.h"
#include "tests/common/error_of.h"
#include "tests/common/graph_test_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::llama_json;
using testing::replace_once;

const GgufFile& tiny_model() {
    static const auto model =
        GgufFile::open(testing::random_model_file(testing::spec_of(16, 2, 4, 2, 48), "graph_limits"));
    return *model;
}

// Loads and binds `text`; returns the GraphError's text, or "" when it bound.
std::string bind_error(const std::string& text) {
    try {
        graph::bind_graph(graph::graph_file_from_string(text, "hostile.json"), tiny_model());
    } catch (const graph::GraphError& e) {
        return e.what();
    }
    return "";
}

// Binds and plans `text`; returns the error's text, or "" when it planned.
std::string plan_error(const std::string& text) {
    try {
        graph::make_plan(graph::bind_graph(graph::graph_file_from_string(text, "hostile.json"), tiny_model()), 2, 16);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

// {"architecture": "llama", "inputs": [...], "nodes": [NODES], "outputs": ["logits"]}
std::string graph_with(const std::string& nodes) {
    return R"({"architecture": "llama", "inputs": ["tokens", "positions"], "nodes": [)" + nodes +
           R"(], "outputs": ["logits"]})";
}
const std::string kEmbed = R"({"id": "x", "op": "embedding", "in": ["tokens", "token_embd.weight"]})";
const std::string kLogits = R"({"id": "logits", "op": "matmul", "in": ["x", "output.weight"]})";

TEST(GraphLimits, DeepNestingIsRefusedBeforeParsing) {
    const std::string arrays = std::string(70000, '[') + std::string(70000, ']');
    EXPECT_THAT(bind_error(R"({"architecture": "llama", "nodes": )" + arrays + R"(, "outputs": ["x"]})"),
                AllOf(HasSubstr("hostile.json: arrays and objects nest deeper than 64 levels at byte "),
                      HasSubstr("graph/limits.h")));
    std::string repeats;
    for (int i = 0; i < 10000; ++i) repeats += R"({"repeat": 1, "index": "i)" + std::to_string(i) + R"(", "nodes": [)";
    repeats += kEmbed;
    for (int i = 0; i < 10000; ++i) repeats += "]}";
    EXPECT_THAT(bind_error(graph_with(repeats + "," + kLogits)), HasSubstr("nest deeper than 64 levels"));
    // Brackets inside strings do not count.
    EXPECT_EQ(bind_error(graph_with(R"({"id": "x", "op": "embedding", "in": ["tokens", "token_embd.weight"], "about": "[[[[{{{{"})" +
                                    std::string(",") + kLogits)),
              "hostile.json: node 'x': unknown attribute 'about' (op 'embedding' takes none, besides id, op and in)");
}

TEST(GraphLimits, RepeatCountsAreCheckedAsNumbersBeforeAnyCast) {
    auto with_repeat = [](const std::string& count) {
        return graph_with(kEmbed + R"(, {"repeat": )" + count + R"(, "nodes": [{"id": "y", "op": "add", "in": ["x", "x"]}]}, )" + kLogits);
    };
    EXPECT_EQ(bind_error(with_repeat("3")), "");
    EXPECT_THAT(bind_error(with_repeat("1000000000")),
                HasSubstr("repeat block: repeat count 1000000000 is outside 0 .. 65536 (graph/limits.h)"));
    EXPECT_THAT(bind_error(with_repeat("1e300")), HasSubstr("repeat count 1e+300 is outside 0 .. 65536"));
    EXPECT_THAT(bind_error(with_repeat("-1")), HasSubstr("repeat count -1 is outside"));
    EXPECT_THAT(bind_error(with_repeat("2.5")), HasSubstr("repeat count must be a whole number, got 2.5"));
    // All blocks' iterations together are bounded too: empty bodies cost time as well.
    const std::string nested = R"({"repeat": 60000, "index": "a", "nodes": [{"repeat": 60000, "index": "b", "nodes": []}]})";
    EXPECT_THAT(bind_error(graph_with(kEmbed + "," + nested + "," + kLogits)),
                HasSubstr("repeat blocks run more than 131072 iterations in all"));
    const std::string same_index = R"({"repeat": 2, "nodes": [{"repeat": 2, "nodes": []}]})";
    EXPECT_THAT(bind_error(graph_with(kEmbed + "," + same_index + "," + kLogits)),
                HasSubstr("index 'i' is already the index of an enclosing block"));
}

TEST(GraphLimits, NodeCountsAndNameLengthsAreBounded) {
    const std::string many = graph_with(kEmbed + R"(, {"repeat": 65536, "nodes": [{"id": "y", "op": "add", "in": ["x", "x"]},
                                                                           {"id": "z", "op": "add", "in": ["y", "x"]}]}, )" + kLogits);
    EXPECT_THAT(bind_error(many), HasSubstr("the graph has more than 131072 nodes once repeat blocks are unrolled"));
    const std::string long_id = std::string(300, 'n');
    EXPECT_THAT(bind_error(graph_with(kEmbed + R"(, {"id": ")" + long_id + R"(", "op": "add", "in": ["x", "x"]}, )" + kLogits)),
                HasSubstr("a node's 'id' is 300 bytes long, more than the 256 graphrun allows"));
    const std::string long_prefix = R"({"repeat": 2, "prefix": ")" + std::string(200, 'p') + R"({i}", "nodes": [
        {"repeat": 2, "index": "j", "prefix": ")" + std::string(200, 'q') + R"({j}", "nodes": [{"id": "y", "op": "add", "in": ["x", "x"]}]}]})";
    EXPECT_THAT(bind_error(graph_with(kEmbed + "," + long_prefix + "," + kLogits)), HasSubstr("the prefix grows to 402 bytes"));
}

TEST(GraphLimits, SymbolNumbersThatDoNotFitAnIntegerReadCorrectly) {
    std::string g = replace_once(llama_json(), R"({ "div": ["n_embd", "n_head"] })", R"({ "div": [1e300, 7] })");
    EXPECT_THAT(bind_error(g), HasSubstr("symbol 'head_dim': 1e+300 is not divisible by 7"));
}

// Each layer declares its own KV caches (planned state, no "layer" index to get wrong): a "layer"
// attribute is unknown, and caches declared once for every layer are caught when the second layer
// writes them. (tests/graph/kv_state_plan_test.cpp has the other misuses of a cache.)
TEST(GraphLimits, EveryAttentionNodeHasAKvCacheOfItsOwn) {
    const std::string llama = llama_json();
    EXPECT_EQ(plan_error(llama), "");
    EXPECT_THAT(plan_error(replace_once(llama, R"("head_dim": "head_dim" })", R"("head_dim": "head_dim", "layer": 0 })")),
                AllOf(HasSubstr("node 'blk.0.attn'"), HasSubstr("unknown attribute 'layer'")));
    std::string shared = replace_once(llama, R"({ "id": "k_cache",  "state": "kv_cache", "width": "kv_width" },)", "");
    shared = replace_once(shared, R"({ "id": "x", "op": "embedding")",
                          R"({ "id": "k_cache", "state": "kv_cache", "width": "kv_width" }, { "id": "x", "op": "embedding")");
    EXPECT_THAT(plan_error(shared),
                AllOf(HasSubstr("node 'blk.1.k_stored': writes the KV cache 'k_cache', which node 'blk.0.k_stored' "
                                "writes too"),
                      HasSubstr("caches of its own")));
}

// 100,000 nodes in a chain bind, plan and verify (the all-pairs placement took 21 s for this),
// and the arena holds only the few tensors alive at once.
TEST(GraphLimits, AHundredThousandNodesPlan) {
    const std::string chain = graph_with(kEmbed + R"(, {"repeat": 49999, "prefix": "c{i}.", "nodes": [
        {"id": "y", "op": "add", "in": ["x", "x"]}, {"id": "x", "op": "add", "in": ["y", "x"]}]}, )" + kLogits);
    const graph::Graph g = graph::bind_graph(graph::graph_file_from_string(chain, "chain.json"), tiny_model());
    EXPECT_EQ(g.nodes.size(), 100000u);
    const graph::Plan plan = graph::make_plan(g, 4, 16);
    graph::verify_plan(plan);
    EXPECT_LE(plan.arena_bytes, 4 * 4 * 320 * 4 + 8 * 4096);  // the logits and a few (4, 16) tensors
}

// ---- the placement and the verifier against plain all-pairs definitions ----

struct Lifetime {
    int64_t bytes;
    int first, last;
};

graph::Plan plan_of(const std::vector<Lifetime>& lifetimes) {
    graph::Plan plan;
    for (size_t i = 0; i < lifetimes.size(); ++i) {
        graph::PlanTensor t{"t" + std::to_string(i), {DType::F32, {1}}, graph::PlanTensor::Kind::Intermediate};
        t.bytes = lifetimes[i].bytes;
        t.first_step = lifetimes[i].first;
        t.last_step = lifetimes[i].last;
        plan.tensors.push_back(t);
    }
    return plan;
}

// The definition: two tensors alive at the same step share no byte (sizes > 0).
bool overlaps_somewhere(const graph::Plan& plan) {
    for (size_t i = 0; i < plan.tensors.size(); ++i)
        for (size_t j = i + 1; j < plan.tensors.size(); ++j) {
            const graph::PlanTensor &a = plan.tensors[i], &b = plan.tensors[j];
            if (a.bytes == 0 || b.bytes == 0) continue;
            const bool same_time = a.first_step <= b.last_step && b.first_step <= a.last_step;
            const bool same_bytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
            if (same_time && same_bytes) return true;
        }
    return false;
}

TEST(ArenaPlacement, RandomLifetimesArePlacedApartAndVerifiedAsTheDefinitionSays) {
    std::mt19937 rng(14);
    for (int round = 0; round < 200; ++round) {
        const int n = 1 + int(rng() % 60), steps = 1 + int(rng() % 30);
        std::vector<Lifetime> lifetimes;
        for (int i = 0; i < n; ++i) {
            const int first = int(rng() % steps), last = first + int(rng() % (steps - first + 1));
            lifetimes.push_back({int64_t(rng() % 5000) * (rng() % 8 ? 1 : 0), first, last});
        }
        graph::Plan plan = plan_of(lifetimes);
        graph::assign_arena_offsets(plan);
        EXPECT_FALSE(overlaps_somewhere(plan)) << "round " << round;
        EXPECT_NO_THROW(graph::verify_plan(plan)) << "round " << round;
        int64_t naive = 0;
        for (const Lifetime& l : lifetimes) naive += (l.bytes + 63) / 64 * 64;
        EXPECT_LE(plan.arena_bytes, naive);

        // Move one tensor onto another's offset: the verifier must agree with the definition.
        const size_t a = rng() % plan.tensors.size(), b = rng() % plan.tensors.size();
        plan.tensors[a].offset = plan.tensors[b].offset;
        if (plan.tensors[a].offset + plan.tensors[a].bytes > plan.arena_bytes) {
            EXPECT_THROW(graph::verify_plan(plan), ops::PlanError);  // it no longer fits the arena
            continue;
        }
        bool threw = false;
        try {
            graph::verify_plan(plan);
        } catch (const ops::PlanError& e) {
            threw = true;
            EXPECT_THAT(e.what(), HasSubstr("share bytes"));
        }
        EXPECT_EQ(threw, overlaps_somewhere(plan)) << "round " << round;
    }
}

// Half the tensors alive at once (each read again at the end): placement stays correct and packs
// them side by side.
TEST(ArenaPlacement, ManyTensorsAliveAtOnce) {
    std::vector<Lifetime> lifetimes;
    const int n = 20000;
    for (int i = 0; i < n; ++i) lifetimes.push_back({64, i, n + i});
    graph::Plan plan = plan_of(lifetimes);
    graph::assign_arena_offsets(plan);
    graph::verify_plan(plan);
    EXPECT_EQ(plan.arena_bytes, int64_t(n) * 64);
}

// ---- plan ceilings ----

using testing::error_of;

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
