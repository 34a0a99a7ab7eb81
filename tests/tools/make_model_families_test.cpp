// tests/tools/make_model_families_test.cpp — `make-model --arch llama|qwen2|qwen3`: each family's metadata keys
// and tensor names and shapes as llama.cpp's loader wants them, tied output, Llama 3.1's rope_freqs, the
// specs it refuses, and the command's options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "tools/lib/random_model.h"
#include "tests/common/parity_util.h"
#include "runtime/gguf.h"
#include "tests/common/test_models.h"

namespace graphrun::graph {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const GgufFile> write_and_open(const RandomLlamaSpec& spec, const std::string& name) {
    const std::string path = (testing::test_temp_dir() / (name + ".gguf")).string();
    write_random_llama(spec, path);
    return GgufFile::open(path);
}

std::vector<int64_t> ne_of(const GgufFile& f, const std::string& tensor) {
    const GgufTensor* t = f.find_tensor(tensor);
    return t ? t->ne : std::vector<int64_t>{};
}

std::vector<float> f32_values(const GgufTensor& t) {
    std::vector<float> v(size_t(t.n_elements()));
    std::memcpy(v.data(), t.data, v.size() * sizeof(float));
    return v;
}

TEST(MakeModelFamilies, Qwen2HasBiasesAndItsOwnKeys) {
    RandomLlamaSpec spec = testing::spec_of(48, 2, 6, 2, 96);
    spec.arch = "qwen2";
    const auto f = write_and_open(spec, "mm_qwen2");
    EXPECT_EQ(f->get_string("general.architecture"), "qwen2");
    EXPECT_EQ(f->get_int("qwen2.embedding_length"), 48);
    EXPECT_EQ(f->get_int("qwen2.block_count"), 2);
    EXPECT_EQ(f->get_int("qwen2.attention.head_count"), 6);
    EXPECT_EQ(f->get_int("qwen2.attention.head_count_kv"), 2);
    EXPECT_EQ(f->get_int("qwen2.feed_forward_length"), 96);
    EXPECT_EQ(f->get_float("qwen2.rope.freq_base"), 1e6);
    EXPECT_FLOAT_EQ(float(f->get_float("qwen2.attention.layer_norm_rms_epsilon")), 1e-6f);
    EXPECT_EQ(f->find("llama.embedding_length"), nullptr);
    EXPECT_EQ(f->find("qwen2.attention.key_length"), nullptr);  // head size n_embd / n_heads, as converted
    for (int layer = 0; layer < 2; ++layer) {
        const std::string blk = "blk." + std::to_string(layer) + ".";
        EXPECT_EQ(ne_of(*f, blk + "attn_q.bias"), (std::vector<int64_t>{48}));
        EXPECT_EQ(ne_of(*f, blk + "attn_k.bias"), (std::vector<int64_t>{16}));
        EXPECT_EQ(ne_of(*f, blk + "attn_v.bias"), (std::vector<int64_t>{16}));
        EXPECT_EQ(f->find_tensor(blk + "attn_q.bias")->type, DType::F32);
    }
    EXPECT_EQ(f->tensors().size(), size_t(3 + 12 * 2));
}

TEST(MakeModelFamilies, Qwen3HasQkNormsAndKeyLength) {
    RandomLlamaSpec spec = testing::spec_of(40, 2, 4, 2, 96);
    spec.arch = "qwen3";
    spec.key_length = 32;  // q is 128 wide, n_embd 40
    spec.type = DType::F16;
    const auto f = write_and_open(spec, "mm_qwen3");
    EXPECT_EQ(f->get_string("general.architecture"), "qwen3");
    EXPECT_EQ(f->get_int("qwen3.attention.key_length"), 32);
    EXPECT_EQ(f->get_int("qwen3.attention.value_length"), 32);
    EXPECT_EQ(ne_of(*f, "blk.0.attn_q.weight"), (std::vector<int64_t>{40, 128}));
    EXPECT_EQ(ne_of(*f, "blk.0.attn_k.weight"), (std::vector<int64_t>{40, 64}));
    EXPECT_EQ(ne_of(*f, "blk.0.attn_output.weight"), (std::vector<int64_t>{128, 40}));
    EXPECT_EQ(ne_of(*f, "blk.1.attn_q_norm.weight"), (std::vector<int64_t>{32}));
    EXPECT_EQ(ne_of(*f, "blk.1.attn_k_norm.weight"), (std::vector<int64_t>{32}));
    EXPECT_EQ(f->find_tensor("blk.1.attn_q_norm.weight")->type, DType::F32);
    for (float x : f32_values(*f->find_tensor("blk.1.attn_k_norm.weight"))) EXPECT_TRUE(x > 0.7f && x < 1.3f) << x;
    EXPECT_EQ(f->find_tensor("blk.0.attn_q.bias"), nullptr);
    EXPECT_EQ(f->tensors().size(), size_t(3 + 11 * 2));
}

TEST(MakeModelFamilies, TiedOutputHasNoOutputMatrix) {
    for (const char* arch : {"llama", "qwen2", "qwen3"}) {
        RandomLlamaSpec spec = testing::spec_of(32, 1, 4, 2, 64);
        spec.arch = arch;
        spec.tied_output = true;
        const auto f = write_and_open(spec, std::string("mm_tied_") + arch);
        EXPECT_EQ(f->find_tensor("output.weight"), nullptr) << arch;
        EXPECT_NE(f->find_tensor("token_embd.weight"), nullptr) << arch;
    }
}

TEST(MakeModelFamilies, Llama31RopeFreqsFollowTheConvertersFormula) {
    // Llama 3.1 8B: head 128, theta 500000: 29 pairs at 1, 29 at 8, and a ramp of 6 between.
    const std::vector<float> f = llama3_rope_factors(128, 500000.0);
    ASSERT_EQ(f.size(), 64u);
    EXPECT_EQ(std::count(f.begin(), f.end(), 1.0f), 29);
    EXPECT_EQ(std::count(f.begin(), f.end(), 8.0f), 29);
    EXPECT_NEAR(f[32], 2.69453, 1e-5);
    for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]) << i;
    RandomLlamaSpec spec = testing::spec_of(64, 1, 2, 1, 64);
    spec.rope_freqs = true;
    const auto file = write_and_open(spec, "mm_rope_freqs");
    const GgufTensor* t = file->find_tensor("rope_freqs.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->ne, (std::vector<int64_t>{16}));
    EXPECT_EQ(f32_values(*t), llama3_rope_factors(32, 10000.0));
}

TEST(MakeModelFamilies, BadFamilySpecsAreRejected) {
    auto expect_invalid = [](const RandomLlamaSpec& spec, const std::string& message) {
        try {
            validate_random_llama(spec);
            ADD_FAILURE() << "accepted, expected: " << message;
        } catch (const std::invalid_argument& e) {
            EXPECT_THAT(e.what(), HasSubstr(message));
        }
    };
    RandomLlamaSpec s;
    s.arch = "gemma2";
    expect_invalid(s, "arch 'gemma2' is not one of llama, qwen2, qwen3");
    s = {};
    s.arch = "qwen2";
    s.rope_freqs = true;
    expect_invalid(s, "rope_freqs.weight is a Llama 3.1 tensor; llama.cpp's qwen2 graph has no place for it");
    s = {};
    s.key_length = 7;
    expect_invalid(s, "head_dim = key_length = 7 must be even");
    s = {};
    s.n_embd = 30;
    s.key_length = 8;  // the head size need not divide n_embd when given
    EXPECT_NO_THROW(validate_random_llama(s));
}

TEST(MakeModelFamilies, TheCommandTakesArchHeadDimTiedAndRopeFreqs) {
    const std::string path = (testing::test_temp_dir() / "mm_cli_qwen3.gguf").string();
    test::ProcessResult r = test::run_graphrun({"make-model", path, "--arch", "qwen3", "--embd", "24", "--heads",
                                                "4", "--kv-heads", "2", "--head-dim", "16", "--tied"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("qwen3, n_embd 24, 2 layers, 4 heads (2 kv) of 16"));
    EXPECT_THAT(r.out, HasSubstr("tied output"));
    const auto f = GgufFile::open(path);
    EXPECT_EQ(f->get_int("qwen3.attention.key_length"), 16);
    EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
    r = test::run_graphrun({"make-model", path, "--rope-freqs"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(GgufFile::open(path)->find_tensor("rope_freqs.weight"), nullptr);
    r = test::run_graphrun({"make-model", path, "--arch", "mistral"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("--arch"));
    r = test::run_graphrun({"make-model", path, "--arch", "qwen3", "--rope-freqs"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("make-model: rope_freqs.weight is a Llama 3.1 tensor"));
}

}  // namespace
}  // namespace graphrun::graph
