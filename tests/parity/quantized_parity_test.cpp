// tests/parity/quantized_parity_test.cpp — on Q8_0 and Q4_0 files that `quantize_model` wrote, graphrun's
// greedy tokens equal llama.cpp's (random models of widths 64, 96, 128 with GQA ratios 1, 2, 4;
// stories260K, whose files keep ffn_down in F32). The end-to-end error against the F32 model is
// tests/tools/quantize_accuracy_test.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <span>

#include "tools/lib/quantize_model.h"
#include "tests/common/parity_util.h"
#include "tests/common/quantize_test_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

struct ParityCase {
    const char* name;
    int64_t embd, heads, kv_heads, ff;  // every row length (embd, ff) a multiple of 32
    DType type;
};

// graphrun's logits on llama.cpp's own continuation (teacher forcing, one batch): at each of its
// tokens, how far below graphrun's best logit is llama.cpp's choice (0 when they agree).
struct Agreement {
    int exact = 0, n = 0;
    float worst_gap = 0;
    int worst_at = -1;
};

Agreement agreement_with(const std::string& model, const std::vector<int32_t>& prompt,
                         const std::vector<int32_t>& theirs) {
    std::vector<int32_t> tokens = prompt;
    tokens.insert(tokens.end(), theirs.begin(), theirs.end() - 1);
    int64_t n_vocab = 0;
    const std::vector<float> logits = testing::batch_logits(model, tokens, &n_vocab);
    Agreement a;
    for (size_t k = 0; k < theirs.size(); ++k) {
        const std::span<const float> row = std::span<const float>(logits).subspan(
            (prompt.size() - 1 + k) * size_t(n_vocab), size_t(n_vocab));
        const float gap = row[size_t(testing::argmax(row))] - row[size_t(theirs[k])];
        a.exact += gap == 0;
        ++a.n;
        if (gap > a.worst_gap) {
            a.worst_gap = gap;
            a.worst_at = int(k);
        }
    }
    return a;
}

class QuantizedParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(QuantizedParity, GreedyTokensEqualLlamaCpps) {
    const ParityCase c = GetParam();
    const std::string f32 =
        testing::random_model_file(testing::spec_of(c.embd, 2, c.heads, c.kv_heads, c.ff, 320, 1234),
                                   "qparity_w" + std::to_string(c.embd));
    testing::TempFile quantized(std::string("qparity_") + c.name);
    const graph::QuantizeReport report = graph::quantize_model(f32, quantized.path, c.type);
    ASSERT_EQ(report.count(graph::TensorAction::Unblockable), 0u);  // every matrix is quantized

    const std::vector<int32_t> prompt = {1, 45, 300, 77, 12, 260};
    const int n = 24;
    auto ref = test::llama_cpp_reference(quantized.path, prompt, n, {.ignore_eos = true});
    if (!ref) GTEST_SKIP() << test::parity_harness_missing().value_or("llama.cpp reference not installed");
    const std::vector<int32_t> ours = testing::greedy_ids(quantized.path, prompt, n);
    const Agreement a = agreement_with(quantized.path, prompt, ref->greedy_ids);
    std::printf("[ parity   ] %-16s greedy %s; llama.cpp's token is graphrun's argmax at %d/%d positions",
                c.name, ours == ref->greedy_ids ? "equal" : "DIFFERS", a.exact, a.n);
    // A near-tie flips under tiny numeric differences: the gap says how near before blaming either side.
    if (a.worst_at >= 0) std::printf("; largest top-2 gap %.3g at token %d", a.worst_gap, a.worst_at);
    std::printf("\n");
    EXPECT_EQ(ours, ref->greedy_ids) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, QuantizedParity,
                         ::testing::Values(ParityCase{"w64_mha_q8_0", 64, 4, 4, 160, DType::Q8_0},
                                           ParityCase{"w64_mha_q4_0", 64, 4, 4, 160, DType::Q4_0},
                                           ParityCase{"w96_gqa2_q8_0", 96, 6, 3, 256, DType::Q8_0},
                                           ParityCase{"w96_gqa2_q4_0", 96, 6, 3, 256, DType::Q4_0},
                                           ParityCase{"w128_gqa4_q8_0", 128, 8, 2, 352, DType::Q8_0},
                                           ParityCase{"w128_gqa4_q4_0", 128, 8, 2, 352, DType::Q4_0}),
                         [](const auto& info) { return std::string(info.param.name); });

// A real model whose files mix types: stories260K's ffn_down (rows of 172) stays F32 beside the
// quantized matrices, and llama.cpp runs the same mixed file.
class QuantizedStories : public ::testing::TestWithParam<DType> {};

TEST_P(QuantizedStories, MixedFileDecodesLikeLlamaCpp) {
    const std::string f32 = testing::shared_dir() + "/models/stories260K.gguf";
    if (!std::filesystem::exists(f32)) GTEST_SKIP() << "needs " << f32 << " (../shared)";
    testing::TempFile quantized(std::string("qparity_stories_") + dtype_name(GetParam()));
    ASSERT_EQ(graph::quantize_model(f32, quantized.path, GetParam()).count(graph::TensorAction::Unblockable),
              5u);
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};  // <s> Once upon a time
    const int n = 40;
    auto ref = test::llama_cpp_reference(quantized.path, prompt, n, {.ignore_eos = true});
    if (!ref) GTEST_SKIP() << test::parity_harness_missing().value_or("llama.cpp reference not installed");
    const std::vector<int32_t> ours = testing::greedy_ids(quantized.path, prompt, n);
    const Agreement a = agreement_with(quantized.path, prompt, ref->greedy_ids);
    std::printf(
        "[ parity   ] stories260K %s greedy %s; llama.cpp's token is graphrun's argmax at %d/%d positions",
        dtype_name(GetParam()), ours == ref->greedy_ids ? "equal" : "DIFFERS", a.exact, a.n);
    if (a.worst_at >= 0) std::printf("; largest top-2 gap %.3g at token %d", a.worst_gap, a.worst_at);
    std::printf("\n");
    EXPECT_EQ(ours, ref->greedy_ids);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizedStories, ::testing::Values(DType::Q8_0, DType::Q4_0),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace graphrun
