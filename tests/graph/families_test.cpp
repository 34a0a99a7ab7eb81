// tests/graph/families_test.cpp — the model families as graph files: models/llama.json (with Llama 3.1's
// rope_freqs and tied output), models/qwen2.json and models/qwen3.json bound to `make-model` files of each
// family, the graph chosen from general.architecture, graphrun's exact invariants (cached decoding equals
// full recomputation, one thread equals two, bit for bit), and files whose metadata contradicts their
// tensors refused at load naming the key or the tensor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "graph/data_files.h"
#include "engine/session.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "tests/common/parity_util.h"
#include "runtime/gguf.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct FamilyCase {
    const char* name;
    const char* arch;
    int64_t embd, heads, kv_heads, key_length;  // key_length 0: n_embd / heads
    bool tied, rope_freqs;
};

graph::RandomLlamaSpec family_spec(const FamilyCase& c, int64_t layers = 2, uint64_t seed = 7) {
    graph::RandomLlamaSpec spec = testing::spec_of(c.embd, layers, c.heads, c.kv_heads, 2 * c.embd + 8, 320, seed);
    spec.arch = c.arch;
    spec.key_length = c.key_length;
    spec.tied_output = c.tied;
    spec.rope_freqs = c.rope_freqs;
    return spec;
}

std::string family_file(const FamilyCase& c) {
    return testing::random_model_file(family_spec(c), std::string("family_") + c.name);
}

const FamilyCase kFamilies[] = {
    {"llama_gqa2", "llama", 32, 4, 2, 0, false, false},
    {"llama31_rope_freqs", "llama", 64, 2, 1, 0, false, true},
    {"smollm2_tied_gqa3", "llama", 48, 6, 2, 0, true, false},
    {"qwen2_gqa2", "qwen2", 32, 4, 2, 0, false, false},
    {"qwen2_tied", "qwen2", 48, 3, 3, 0, true, false},
    {"qwen3_hd32", "qwen3", 40, 4, 2, 32, false, false},  // q is 4 * 32 = 128 wide, n_embd 40
};

class Families : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(Families, DefaultGraphIsTheArchitecturesAndPlansItsOps) {
    const FamilyCase c = GetParam();
    auto model = graph::Model::load(family_file(c));
    EXPECT_EQ(model->graph().source, graph::graph_path_for(c.arch));
    const graph::Plan plan = graph::make_plan(model->graph(), 3, 16);
    int add_bias = 0, grouped_norms = 0, neox = 0, ropes_with_factors = 0;
    for (const graph::PlanStep& step : plan.steps) {
        const std::string kernel = step.op->name;
        add_bias += kernel == "add_bias";
        if (kernel == "rmsnorm") grouped_norms += step.params.get<ops::RmsnormParams>().group > 0;
        if (kernel == "rope") {
            neox += step.params.get<ops::RopeParams>().mode == ops::kRopeNeox;
            ropes_with_factors += step.inputs.size() == 3;
        }
    }
    const std::string arch = c.arch;
    EXPECT_EQ(add_bias, arch == "qwen2" ? 3 * 2 : 0);           // Q, K, V in each of 2 layers
    EXPECT_EQ(grouped_norms, arch == "qwen3" ? 2 * 2 : 0);      // Q and K
    EXPECT_EQ(neox, arch == "llama" ? 0 : 2 * 2);               // Q and K
    EXPECT_EQ(ropes_with_factors, c.rope_freqs ? 2 * 2 : 0);
    const int64_t head_dim = c.key_length ? c.key_length : c.embd / c.heads;
    EXPECT_EQ(model->graph().symbols.at("head_dim"), double(head_dim));
}

// Cached decoding equals full recomputation and one thread equals two, bit for bit.
TEST_P(Families, CachedDecodingEqualsFullRecomputationExactly) {
    const FamilyCase c = GetParam();
    auto model = graph::Model::load(family_file(c));
    const std::vector<int32_t> tokens = testing::random_tokens(24, 320, 3);
    graph::Session cached(model, {.n_ctx = 24, .n_threads = 2});
    graph::Session one_thread(model, {.n_ctx = 24, .n_threads = 1});
    graph::Session full(model, {.n_ctx = 24, .n_threads = 2});
    const auto all = full.eval(tokens);
    const std::vector<float> whole(all.begin(), all.end());
    const size_t n_vocab = size_t(full.n_vocab());
    for (size_t t = 0; t < tokens.size(); ++t) {
        const auto a = cached.eval(std::span<const int32_t>(&tokens[t], 1));
        const std::vector<float> step(a.begin(), a.end());
        const auto b = one_thread.eval(std::span<const int32_t>(&tokens[t], 1));
        for (size_t v = 0; v < n_vocab; ++v) {
            ASSERT_EQ(step[v], whole[t * n_vocab + v]) << c.name << " position " << t << " token " << v;
            ASSERT_EQ(step[v], b[v]) << c.name << " one thread, position " << t;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Make, Families, ::testing::ValuesIn(kFamilies),
                         [](const auto& info) { return std::string(info.param.name); });

// Llama 3.1's factors change the logits (and so are read, not ignored).
TEST(FamiliesRopeFreqs, ChangeTheLogits) {
    FamilyCase c = kFamilies[1];
    const std::string with = family_file(c);
    c.rope_freqs = false;
    const std::string without = testing::random_model_file(family_spec(c), "family_llama31_no_rope_freqs");
    const std::vector<int32_t> tokens = testing::random_tokens(40, 320, 4);
    graph::Session a(graph::Model::load(with), {.n_ctx = 40}), b(graph::Model::load(without), {.n_ctx = 40});
    const auto la = a.eval(tokens);
    const std::vector<float> x(la.begin(), la.end());
    const auto lb = b.eval(tokens);
    // Position 0 turns nothing; past it the slow pairs turn 8x slower with the factors.
    const size_t n_vocab = size_t(a.n_vocab());
    EXPECT_EQ(std::vector<float>(x.begin(), x.begin() + std::ptrdiff_t(n_vocab)),
              std::vector<float>(lb.begin(), lb.begin() + std::ptrdiff_t(n_vocab)));
    const double moved = testing::max_relative_error(std::span<const float>(x).subspan(n_vocab), lb.subspan(n_vocab));
    std::printf("[ measured ] rope_freqs move the logits of positions 1..39 by up to %.3g (relative)\n", moved);
    EXPECT_GT(moved, 1e-3);
}

// ---- the graph chosen from general.architecture ----------------------------------------------------

// A copy of `from` with metadata set (replaced or added), tensors dropped, and f32 vectors added.
using MetadataEdits = std::vector<std::pair<std::string, GgufValue>>;
using AddedTensors = std::vector<std::pair<std::string, std::vector<float>>>;

std::string edited_model(const std::string& from, const std::string& name, const MetadataEdits& set,
                         const std::vector<std::string>& drop = {}, const AddedTensors& add = {}) {
    const auto src = GgufFile::open(from);
    GgufWriter w;
    for (const auto& [key, value] : src->metadata()) w.set(key, value);
    for (const auto& [key, value] : set) w.set(key, value);
    for (const GgufTensor& t : src->tensors())
        if (std::find(drop.begin(), drop.end(), t.name) == drop.end())
            w.add_tensor(t.name, t.type, t.ne, t.data, size_t(t.nbytes));
    for (const auto& [tensor, values] : add)
        w.add_tensor(tensor, DType::F32, {int64_t(values.size())}, values.data(), values.size() * sizeof(float));
    const std::string path = (testing::test_temp_dir() / (name + ".gguf")).string();
    w.write(path);
    return path;
}

// What loading the file with its default graph throws ("" if it loads).
std::string load_error(const std::string& path) {
    try {
        graph::Model::load(path);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

TEST(FamiliesDefaultGraph, ShippedGraphsAreListed) {
    const std::vector<std::string> archs = graph::graph_architectures();
    for (const char* arch : {"llama", "qwen2", "qwen3"})
        EXPECT_NE(std::find(archs.begin(), archs.end(), arch), archs.end()) << arch;
    EXPECT_EQ(graph::graph_path_for("qwen2"), graph::find_data_file("models/qwen2.json"));
    // An architecture is a file name, never a path out of the folder.
    EXPECT_THROW(graph::graph_path_for("../models/llama"), graph::GraphError);
    EXPECT_THROW(graph::graph_path_for(""), graph::GraphError);
}

TEST(FamiliesDefaultGraph, AnArchitectureWithoutAGraphIsRefusedByName) {
    const std::string file = edited_model(family_file(kFamilies[0]), "family_gemma2",
                                          {{"general.architecture", GgufValue::make_string("gemma2")}});
    EXPECT_THAT(load_error(file),
                AllOf(HasSubstr(file + ": general.architecture is 'gemma2'"),
                      HasSubstr("no graph for architecture 'gemma2'"), HasSubstr("models/gemma2.json"),
                      HasSubstr("graphs exist for llama, qwen2, qwen3"), HasSubstr("--graph")));
    // The command says the same and generates nothing.
    const test::ProcessResult r = test::run_graphrun({"-m", file, "--tokens", "1,2", "-n", "2"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("no graph for architecture 'gemma2'"));
    EXPECT_EQ(r.out, "");
    // --graph still overrides the default (and then the graph's own architecture check speaks).
    const test::ProcessResult g = test::run_graphrun(
        {"--graph", graph::graph_path_for("llama"), "-m", file, "--tokens", "1,2", "-n", "2"});
    EXPECT_THAT(g.err, HasSubstr("the model is 'gemma2' but this graph runs 'llama' models"));
}

TEST(FamiliesDefaultGraph, TheCommandRunsEachFamilyWithoutGraph) {
    for (const FamilyCase& c : kFamilies) {
        const test::ProcessResult r = test::run_graphrun({"-m", family_file(c), "--tokens", "1,45,300", "-n", "4"});
        EXPECT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
        EXPECT_EQ(test::parse_ids(r.out).size(), 4u) << c.name;
    }
}

// ---- metadata that contradicts the tensors ----------------------------------------------------------

TEST(FamiliesBadFiles, ABiasInAFamilyWithoutBiasesIsRefusedNamingIt) {
    for (const FamilyCase& c : {kFamilies[0], kFamilies[5]}) {  // llama, qwen3
        const int64_t q_dim = c.heads * (c.key_length ? c.key_length : c.embd / c.heads);
        const std::string file = edited_model(family_file(c), std::string("family_bias_") + c.name, {}, {},
                                              {{"blk.1.attn_q.bias", std::vector<float>(size_t(q_dim), 0.5f)}});
        EXPECT_THAT(load_error(file), AllOf(HasSubstr(std::string("models/") + c.arch + ".json: tensors:"),
                                            HasSubstr("tensor 'blk.1.attn_q.bias'"),
                                            HasSubstr("which this graph never reads")))
            << c.name;
    }
}

TEST(FamiliesBadFiles, AQwen2FileWithoutItsBiasesIsRefusedNamingIt) {
    const std::string file = edited_model(family_file(kFamilies[3]), "family_qwen2_no_bias", {}, {"blk.0.attn_k.bias"});
    EXPECT_THAT(load_error(file), AllOf(HasSubstr("node 'blk.0.k'"), HasSubstr("'blk.0.attn_k.bias'")));
}

TEST(FamiliesBadFiles, AKeyLengthThatDoesNotMatchTheQWeightNamesTheKey) {
    const std::string qwen3 = family_file(kFamilies[5]);  // head_dim 32
    // key_length alone: the graph's check that values are as wide as keys speaks first.
    std::string file =
        edited_model(qwen3, "family_qwen3_key16", {{"qwen3.attention.key_length", GgufValue::make_u32(16)}});
    EXPECT_THAT(load_error(file),
                AllOf(HasSubstr("check: head_dim_v = 32 (metadata 'qwen3.attention.value_length') must equal "
                                "head_dim = 16 (metadata 'qwen3.attention.key_length')")));
    // Both lengths: the Q norm's weight (32) does not fit heads of 16, and the message says where 16 came from.
    file = edited_model(qwen3, "family_qwen3_kv16",
                        {{"qwen3.attention.key_length", GgufValue::make_u32(16)},
                         {"qwen3.attention.value_length", GgufValue::make_u32(16)}});
    EXPECT_THAT(load_error(file), AllOf(HasSubstr("[rmsnorm] node 'blk.0.q_norm': weight has 32 elements, groups have 16"),
                                        HasSubstr("group is head_dim = 16 (metadata 'qwen3.attention.key_length')"),
                                        HasSubstr("input 1 is weight 'blk.0.attn_q_norm.weight'")));
    // A llama file whose key_length contradicts its Q weight (64 = 2 heads of 32, not of 16).
    file = edited_model(family_file(kFamilies[1]), "family_llama_key16",
                        {{"llama.attention.key_length", GgufValue::make_u32(16)},
                         {"llama.attention.value_length", GgufValue::make_u32(16)},
                         {"llama.rope.dimension_count", GgufValue::make_u32(16)}});
    EXPECT_THAT(load_error(file), AllOf(HasSubstr("node 'blk.0.q_rope'"),
                                        HasSubstr("x rows have 64 elements, n_head 2 * head_dim 16 = 32"),
                                        HasSubstr("head_dim = 16 (metadata 'llama.attention.key_length')")));
}

TEST(FamiliesBadFiles, RopeFreqsOfTheWrongLengthNamesTheTensor) {
    const std::string file = edited_model(family_file(kFamilies[1]), "family_rope_freqs30", {},
                                          {"rope_freqs.weight"}, {{"rope_freqs.weight", std::vector<float>(30, 1.0f)}});
    EXPECT_THAT(load_error(file),
                AllOf(HasSubstr("[rope] node 'blk.0.q_rope': input 2 (freq_factors) has 30 elements, head_dim 32 "
                                "needs 16"),
                      HasSubstr("input 2 is weight 'rope_freqs.weight'")));
}

TEST(FamiliesBadFiles, PartialRotaryAndRopeScalingAreRefusedNotIgnored) {
    std::string file = edited_model(family_file(kFamilies[0]), "family_partial_rotary",
                                    {{"llama.rope.dimension_count", GgufValue::make_u32(4)}});
    EXPECT_THAT(load_error(file), AllOf(HasSubstr("check: n_rot = 4 (metadata 'llama.rope.dimension_count') must "
                                                  "equal head_dim = 8"),
                                        HasSubstr("partial rotary")));
    file = edited_model(family_file(kFamilies[3]), "family_rope_scaling",
                        {{"qwen2.rope.scaling.factor", GgufValue::make_f32(4.0f)}});
    EXPECT_THAT(load_error(file), AllOf(HasSubstr("rope_scaling = 4 (metadata 'qwen2.rope.scaling.factor')"),
                                        HasSubstr("RoPE scaling")));
}

}  // namespace
}  // namespace graphrun
