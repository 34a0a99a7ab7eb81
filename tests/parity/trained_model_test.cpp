// tests/parity/trained_model_test.cpp — the model graphrun ships (models/kjv-q8_0.gguf, trained by
// tools/train/) runs in graphrun exactly as it ran in PyTorch, and as it runs in llama.cpp.
//
// models/kjv-q8_0.expected.json was written at export time by tools/train/export.py: the prompt,
// its SentencePiece ids, and PyTorch's greedy continuation computed with the weights exactly as
// the Q8_0 file stores them (with the top-2 logit gaps, so a reader can see how far each choice
// is from a tie). These tests need nothing outside the repository except llama.cpp for the last.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/common/parity_util.h"

namespace graphrun {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

const std::string kModel = std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf";

nlohmann::json expected() {
    const std::string path = std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.expected.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    return nlohmann::json::parse(in);
}

TEST(TrainedModel, TokenizesThePromptAsSentencePieceDid) {
    const auto want = expected();
    const auto prompt_ids = want["prompt_ids"].get<std::vector<int32_t>>();
    test::ProcessResult r = test::run_graphrun({"tokenize", "-m", kModel, "-p", want["prompt"].get<std::string>()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[" + test::join_ids(prompt_ids, ", ") + "]\n");
}

TEST(TrainedModel, GreedyContinuationEqualsPyTorchs) {
    const auto want = expected();
    const auto prompt_ids = want["prompt_ids"].get<std::vector<int32_t>>();
    const auto pytorch_ids = want["q8_0"]["ids"].get<std::vector<int32_t>>();
    const std::string n = std::to_string(pytorch_ids.size());
    ASSERT_GE(pytorch_ids.size(), 32u);

    for (const char* threads : {"1", "2"}) {
        test::ProcessResult r = test::run_graphrun({"-m", kModel, "--tokens", test::join_ids(prompt_ids), "-n", n, "-t", threads});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(test::parse_ids(r.out), pytorch_ids) << "with " << threads << " thread(s)";
    }
    // The same through text: tokenize, generate, detokenize. stdout is the prompt and the continuation.
    test::ProcessResult r = test::run_graphrun({"-m", kModel, "-p", want["prompt"].get<std::string>(), "-n", n, "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, want["q8_0"]["text"].get<std::string>() + "\n");
}

// What a person trying graphrun sees: sampled at temperature 0.8, the model writes King James
// English. A random or broken model draws "unto" or "LORD" (one piece each among 2,048) rarely.
TEST(TrainedModel, SampledTextAtTemperature08ReadsLikeTheBible) {
    for (const char* seed : {"1", "2", "3", "4"}) {
        test::ProcessResult r = test::run_graphrun({"-p", "And God said", "-n", "100", "--temp", "0.8", "--seed", seed});
        ASSERT_EQ(r.exit_code, 0) << r.err;  // no -m: the shipped model is the default
        EXPECT_THAT(r.out, AnyOf(HasSubstr(" unto "), HasSubstr(" LORD"))) << "seed " << seed;
        EXPECT_GT(r.out.size(), 200u) << "seed " << seed << ": 100 tokens are words, not a few bytes";
    }
}

TEST(TrainedModel, GreedyTextEqualsLlamaCpps) {
    const auto want = expected();
    const std::string prompt = want["prompt"].get<std::string>();
    const int n = 64;
    auto ref = test::llama_cpp_reference_text(kModel, prompt, n);
    if (!ref) GTEST_SKIP() << test::parity_harness_missing().value_or("llama.cpp reference not installed");
    EXPECT_EQ(ref->prompt_ids, want["prompt_ids"].get<std::vector<int32_t>>());
    test::ProcessResult r = test::run_graphrun({"-m", kModel, "-p", prompt, "-n", std::to_string(n), "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, prompt + ref->text + "\n");
}

}  // namespace
}  // namespace graphrun
