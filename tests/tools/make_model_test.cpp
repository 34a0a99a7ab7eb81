// tests/tools/make_model_test.cpp — random Llama models: metadata, vocabulary, shapes, weight scales,
// determinism, argument checks, and the `graphrun make-model` / `graphrun inspect` commands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "tools/lib/random_model.h"
#include "runtime/fp16.h"
#include "runtime/gguf.h"

namespace graphrun::graph {
namespace {

using ::testing::HasSubstr;

std::string temp_path(const std::string& name) {
    return ::testing::TempDir() + "graphrun_make_model_" + std::to_string(::getpid()) + "_" + name;
}

std::vector<float> tensor_values(const GgufTensor& t) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    for (size_t k = 0; k < v.size(); ++k) {
        if (t.type == DType::F32) {
            std::memcpy(&v[k], t.data + 4 * k, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, t.data + 2 * k, 2);
            v[k] = fp16_to_f32(h);
        }
    }
    return v;
}

double mean_of(const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += x;
    return s / double(v.size());
}

double stddev_of(const std::vector<float>& v) {
    const double m = mean_of(v);
    double s = 0;
    for (float x : v) s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size()));
}

// Writes `spec`, reads it back, and checks everything llama.cpp needs to load it.
void check_model(const RandomLlamaSpec& spec) {
    const std::string path = temp_path("model.gguf");
    write_random_llama(spec, path);
    const auto f = GgufFile::open(path);
    const int64_t head_dim = spec.n_embd / spec.n_heads, kv_dim = spec.n_kv_heads * head_dim;

    EXPECT_EQ(f->get_string("general.architecture"), "llama");
    EXPECT_EQ(f->get_string("general.name"), spec.name);
    EXPECT_EQ(f->get_int("general.file_type"), spec.type == DType::F16 ? 1 : 0);
    EXPECT_EQ(f->get_int("llama.context_length"), spec.n_ctx);
    EXPECT_EQ(f->get_int("llama.embedding_length"), spec.n_embd);
    EXPECT_EQ(f->get_int("llama.block_count"), spec.n_layers);
    EXPECT_EQ(f->get_int("llama.feed_forward_length"), spec.n_ff);
    EXPECT_EQ(f->get_int("llama.attention.head_count"), spec.n_heads);
    EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), spec.n_kv_heads);
    EXPECT_EQ(f->get_int("llama.rope.dimension_count"), head_dim);
    EXPECT_EQ(f->get_float("llama.rope.freq_base"), 10000.0);
    EXPECT_FLOAT_EQ(float(f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);

    // Vocabulary: SentencePiece-style, unique pieces, llama.cpp's token types.
    EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
    const auto* tokens = f->find_array("tokenizer.ggml.tokens", GgufType::STRING);
    const auto* scores = f->find_array("tokenizer.ggml.scores", GgufType::F32);
    const auto* types = f->find_array("tokenizer.ggml.token_type", GgufType::I32);
    ASSERT_TRUE(tokens && scores && types);
    ASSERT_EQ(int64_t(tokens->size()), spec.n_vocab);
    ASSERT_EQ(scores->size(), tokens->size());
    ASSERT_EQ(types->size(), tokens->size());
    EXPECT_EQ((*tokens)[0].s, "<unk>");
    EXPECT_EQ((*tokens)[1].s, "<s>");
    EXPECT_EQ((*tokens)[2].s, "</s>");
    EXPECT_EQ((*types)[0].i, 2);
    EXPECT_EQ((*types)[1].i, 3);
    EXPECT_EQ((*types)[2].i, 3);
    EXPECT_EQ((*tokens)[3].s, "<0x00>");
    EXPECT_EQ((*tokens)[3 + 0x0A].s, "<0x0A>");  // llama.cpp looks the newline up by this name
    EXPECT_EQ((*tokens)[258].s, "<0xFF>");
    for (int id = 3; id < 259; ++id) EXPECT_EQ((*types)[size_t(id)].i, 6) << id;
    std::set<std::string> unique;
    for (size_t id = 0; id < tokens->size(); ++id) {
        EXPECT_TRUE(unique.insert((*tokens)[id].s).second) << "duplicate piece " << (*tokens)[id].s;
        if (id >= 259) {
            EXPECT_EQ((*types)[id].i, 1) << id;
            EXPECT_FALSE((*tokens)[id].s.empty());
        }
    }
    if (spec.n_vocab > 259) {
        EXPECT_EQ((*tokens)[259].s, "▁");
    }
    EXPECT_EQ(f->get_int("tokenizer.ggml.bos_token_id"), 1);
    EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id"), 2);
    EXPECT_EQ(f->get_int("tokenizer.ggml.unknown_token_id"), 0);
    EXPECT_EQ(f->get_int("tokenizer.ggml.add_bos_token"), 1);

    // Tensors: llama.cpp's names, ggml ne, norms F32 near 1, matrices of the chosen type.
    ASSERT_EQ(int64_t(f->tensors().size()), 3 + 9 * spec.n_layers);
    auto expect_tensor = [&](const std::string& name, std::vector<int64_t> ne, bool is_norm) {
        SCOPED_TRACE(name);
        const GgufTensor* t = f->find_tensor(name);
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->ne, ne);
        EXPECT_EQ(t->type, is_norm ? DType::F32 : spec.type);
        const std::vector<float> v = tensor_values(*t);
        if (is_norm) {
            for (float x : v) ASSERT_TRUE(x > 0.7f && x < 1.3f) << x;
        } else if (v.size() >= 256) {
            const double expected = name == "token_embd.weight" ? 1.0
                                    : name == "output.weight"   ? 3.0 / std::sqrt(double(ne[0]))
                                                                : 1.0 / std::sqrt(double(ne[0]));
            EXPECT_NEAR(stddev_of(v), expected, 0.15 * expected);
            EXPECT_NEAR(mean_of(v), 0.0, 0.2 * expected);
        }
    };
    expect_tensor("token_embd.weight", {spec.n_embd, spec.n_vocab}, false);
    for (int64_t layer = 0; layer < spec.n_layers; ++layer) {
        const std::string blk = "blk." + std::to_string(layer) + ".";
        expect_tensor(blk + "attn_norm.weight", {spec.n_embd}, true);
        expect_tensor(blk + "attn_q.weight", {spec.n_embd, spec.n_embd}, false);
        expect_tensor(blk + "attn_k.weight", {spec.n_embd, kv_dim}, false);
        expect_tensor(blk + "attn_v.weight", {spec.n_embd, kv_dim}, false);
        expect_tensor(blk + "attn_output.weight", {spec.n_embd, spec.n_embd}, false);
        expect_tensor(blk + "ffn_norm.weight", {spec.n_embd}, true);
        expect_tensor(blk + "ffn_gate.weight", {spec.n_embd, spec.n_ff}, false);
        expect_tensor(blk + "ffn_up.weight", {spec.n_embd, spec.n_ff}, false);
        expect_tensor(blk + "ffn_down.weight", {spec.n_ff, spec.n_embd}, false);
    }
    expect_tensor("output_norm.weight", {spec.n_embd}, true);
    expect_tensor("output.weight", {spec.n_embd, spec.n_vocab}, false);
    std::filesystem::remove(path);
}

TEST(MakeModel, TeachingSizeDefaults) {
    const RandomLlamaSpec spec;
    EXPECT_EQ(spec.n_embd, 16);
    EXPECT_EQ(spec.n_layers, 2);
    EXPECT_EQ(spec.n_heads, 4);
    EXPECT_EQ(spec.n_kv_heads, 2);
    EXPECT_EQ(spec.n_ff, 48);
    EXPECT_EQ(spec.n_vocab, 320);
    EXPECT_EQ(spec.n_ctx, 256);
    EXPECT_EQ(spec.seed, 42u);
    check_model(spec);
}

TEST(MakeModel, F16GroupedQueryShape) {
    RandomLlamaSpec spec;
    spec.n_embd = 48;
    spec.n_layers = 3;
    spec.n_heads = 6;
    spec.n_kv_heads = 3;
    spec.n_ff = 100;
    spec.n_vocab = 600;
    spec.n_ctx = 64;
    spec.type = DType::F16;
    spec.name = "gqa f16";
    check_model(spec);
}

TEST(MakeModel, SmallestShape) {
    RandomLlamaSpec spec;
    spec.n_embd = 2;
    spec.n_layers = 1;
    spec.n_heads = 1;
    spec.n_kv_heads = 1;
    spec.n_ff = 1;
    spec.n_vocab = 259;
    spec.n_ctx = 1;
    check_model(spec);
}

TEST(MakeModel, SameSeedSameBytesOtherSeedOtherWeights) {
    RandomLlamaSpec spec;
    const std::string a = temp_path("a.gguf"), b = temp_path("b.gguf"), c = temp_path("c.gguf");
    write_random_llama(spec, a);
    write_random_llama(spec, b);
    spec.seed = 43;
    write_random_llama(spec, c);
    auto bytes = [](const std::string& p) {
        std::ifstream in(p, std::ios::binary);
        return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    EXPECT_EQ(bytes(a), bytes(b));
    EXPECT_NE(bytes(a), bytes(c));
    EXPECT_EQ(bytes(a).size(), bytes(c).size());
    for (const auto& p : {a, b, c}) std::filesystem::remove(p);
}

TEST(MakeModel, VocabularyIsUniqueAtAnySize) {
    for (int64_t n : {259, 260, 320, 1000, 5000}) {
        const auto tokens = random_llama_vocab(n);
        ASSERT_EQ(int64_t(tokens.size()), n);
        EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), tokens.size()) << n;
    }
}

void expect_invalid(const RandomLlamaSpec& spec, const std::string& message) {
    try {
        validate_random_llama(spec);
        ADD_FAILURE() << "accepted, expected: " << message;
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), HasSubstr(message));
    }
    EXPECT_THROW(write_random_llama(spec, temp_path("never.gguf")), std::invalid_argument);
    EXPECT_FALSE(std::filesystem::exists(temp_path("never.gguf")));
}

TEST(MakeModel, BadSpecsAreRejected) {
    RandomLlamaSpec s;
    s.n_embd = 30;
    expect_invalid(s, "n_embd = 30 is not divisible by n_heads = 4");
    s = {};
    s.n_kv_heads = 3;
    expect_invalid(s, "n_heads = 4 is not divisible by n_kv_heads = 3");
    s = {};
    s.n_embd = 12;
    expect_invalid(s, "head_dim = n_embd / n_heads = 3 must be even");
    s = {};
    s.n_vocab = 258;
    expect_invalid(s, "n_vocab = 258 must be at least 259");
    s = {};
    s.n_layers = 0;
    expect_invalid(s, "n_layers = 0 must be between 1 and");
    s = {};
    s.n_heads = -4;
    expect_invalid(s, "n_heads = -4");
    s = {};
    s.type = DType::Q8_0;
    expect_invalid(s, "type q8_0 is not supported (f32 or f16)");
    s = {};
    s.n_embd = 1 << 20;
    s.n_ff = 1 << 20;
    s.n_heads = 1;
    s.n_kv_heads = 1;
    expect_invalid(s, "the model would have more than");
}

// ---- The command line -------------------------------------------------------------------------------

struct RunResult {
    int exit_code;
    std::string output;  // stdout and stderr
};

RunResult run_graphrun(const std::string& args) {
    RunResult r{-1, ""};
    FILE* pipe = ::popen((std::string(GRAPHRUN_BINARY) + " " + args + " 2>&1").c_str(), "r");
    if (!pipe) return r;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
    const int status = ::pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

TEST(MakeModelCommand, WritesAModelThatInspectDescribes) {
    const std::string path = temp_path("cli.gguf");
    const RunResult made =
        run_graphrun("make-model " + path + " --embd 32 --heads 4 --kv-heads 1 --type f16");
    ASSERT_EQ(made.exit_code, 0) << made.output;
    const auto f = GgufFile::open(path);
    EXPECT_EQ(f->get_int("llama.embedding_length"), 32);
    EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 1);
    EXPECT_EQ(f->find_tensor("blk.1.attn_k.weight")->shape(), (std::vector<int64_t>{8, 32}));
    EXPECT_EQ(f->find_tensor("output.weight")->type, DType::F16);

    const RunResult shown = run_graphrun("inspect " + path);
    ASSERT_EQ(shown.exit_code, 0) << shown.output;
    EXPECT_THAT(shown.output, HasSubstr("GGUF v3"));
    EXPECT_THAT(shown.output, HasSubstr("\"graphrun random llama\""));
    EXPECT_THAT(shown.output, HasSubstr("array of string [320]"));
    EXPECT_THAT(shown.output, HasSubstr("\"<unk>\", \"<s>\", \"</s>\""));
    EXPECT_THAT(shown.output,
                ::testing::ContainsRegex("token_embd\\.weight +f16 +\\(320, 32\\) +20480 +0\n"));
    EXPECT_THAT(shown.output, ::testing::ContainsRegex("blk\\.0\\.attn_norm\\.weight +f32 +\\(32\\) +128"));
    std::filesystem::remove(path);
}

TEST(MakeModelCommand, BadArgumentsExitWithAMessage) {
    const std::string path = temp_path("bad.gguf");
    RunResult r = run_graphrun("make-model " + path + " --embd 30");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.output, HasSubstr("graphrun: make-model: n_embd = 30 is not divisible by n_heads = 4"));
    r = run_graphrun("make-model " + path + " --type q4_0");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.output, HasSubstr("--type"));
    r = run_graphrun("make-model " + path + " --vocab 100");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.output, HasSubstr("n_vocab = 100 must be at least 259"));
    EXPECT_FALSE(std::filesystem::exists(path));
    r = run_graphrun("inspect " + path);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.output, HasSubstr("graphrun: " + path + ": cannot open"));
}

}  // namespace
}  // namespace graphrun::graph
