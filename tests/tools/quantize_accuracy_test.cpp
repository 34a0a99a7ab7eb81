// tests/tools/quantize_accuracy_test.cpp — quantized models graphrun writes are right, end to end: how far
// the quantized model's logits are from the F32 model's over 64 tokens (NMSE) and how often their
// argmax agrees, on a random model and on stories260K. Parity with llama.cpp on the same files is
// tests/parity/quantized_parity_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "tools/lib/quantize_model.h"
#include "tests/common/quantize_test_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

// ---- end-to-end error against the F32 model ----

struct EndToEnd {
    double nmse = 0;       // Σ(logits_q − logits_f32)² / Σ logits_f32², all positions and tokens
    double agreement = 0;  // fraction of positions whose argmax agrees
    size_t unblockable = 0;
};

// The F32 model's greedy continuation of `prompt` to 64 tokens is fed to both models in one batch
// (teacher forcing), so every position compares the two on the same context.
EndToEnd measure(const std::string& f32, const std::vector<int32_t>& prompt, DType type,
                 const std::string& tag) {
    constexpr int kTokens = 64;
    std::vector<int32_t> tokens = prompt;
    const std::vector<int32_t> more = testing::greedy_ids(f32, prompt, kTokens - int(prompt.size()));
    tokens.insert(tokens.end(), more.begin(), more.end());

    testing::TempFile quantized("e2e_" + tag + "_" + dtype_name(type));
    EndToEnd e;
    e.unblockable = graph::quantize_model(f32, quantized.path, type).count(graph::TensorAction::Unblockable);
    int64_t n_vocab = 0;
    const std::vector<float> want = testing::batch_logits(f32, tokens, &n_vocab);
    const std::vector<float> got = testing::batch_logits(quantized.path, tokens);
    double err = 0, ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        ref += double(want[i]) * want[i];
    }
    e.nmse = err / ref;
    int agree = 0;
    for (int t = 0; t < kTokens; ++t) {
        const auto row = [&](const std::vector<float>& v) {
            return std::span<const float>(v).subspan(size_t(t * n_vocab), size_t(n_vocab));
        };
        agree += testing::argmax(row(got)) == testing::argmax(row(want));
    }
    e.agreement = double(agree) / kTokens;
    std::printf(
        "[ e2e      ] %-12s %s: logits NMSE %.3g, argmax agreement %d/%d, %zu matrices kept unquantized\n",
        tag.c_str(), dtype_name(type), e.nmse, agree, kTokens, e.unblockable);
    return e;
}

TEST(QuantizeEndToEnd, RandomModelStaysCloseToF32) {
    const std::string f32 =
        testing::random_model_file(testing::spec_of(128, 4, 8, 2, 352, 320, 11), "e2e_rand");
    const std::vector<int32_t> prompt = {1, 45, 300, 77};
    const EndToEnd q8 = measure(f32, prompt, DType::Q8_0, "random-128");
    const EndToEnd q4 = measure(f32, prompt, DType::Q4_0, "random-128");
    // Measured (seeds 11..16 of this shape): Q8_0 NMSE 3.8e-4..4.7e-4, agreement 61..62/64;
    // Q4_0 NMSE 0.056..0.063, agreement 37..49/64. Random weights are a hard case: no structure for
    // the logits to stand on, so small errors move many near-equal logits.
    EXPECT_EQ(q8.unblockable, 0u);
    EXPECT_LT(q8.nmse, 1e-3);
    EXPECT_GE(q8.agreement, 0.9);
    EXPECT_LT(q4.nmse, 0.12);
    EXPECT_GE(q4.agreement, 0.5);
    EXPECT_LT(q8.nmse, q4.nmse);  // more bits, less error
}

TEST(QuantizeEndToEnd, Stories260KStaysCloseToF32) {
    const std::string f32 = testing::shared_dir() + "/models/stories260K.gguf";
    if (!std::filesystem::exists(f32)) GTEST_SKIP() << "needs " << f32 << " (../shared)";
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};  // <s> Once upon a time
    const EndToEnd q8 = measure(f32, prompt, DType::Q8_0, "stories260K");
    const EndToEnd q4 = measure(f32, prompt, DType::Q4_0, "stories260K");
    // Measured (this prompt and two others): Q8_0 NMSE 6.5e-5..7.7e-5, agreement 62..64/64;
    // Q4_0 NMSE 0.009..0.021, agreement 56..58/64.
    EXPECT_EQ(q8.unblockable, 5u);  // ffn_down of each of the 5 layers: rows of 172
    EXPECT_LT(q8.nmse, 2.5e-4);
    EXPECT_GE(q8.agreement, 0.95);
    EXPECT_LT(q4.nmse, 0.05);
    EXPECT_GE(q4.agreement, 0.8);
    EXPECT_LT(q8.nmse, q4.nmse);
}

}  // namespace
}  // namespace graphrun
