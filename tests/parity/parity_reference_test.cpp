// tests/parity/parity_reference_test.cpp — the llama.cpp reference harness itself, held to llama.cpp's own
// greedy ids recorded in ../shared/testdata/llamacpp-quantized/expected.json (the process helper's own
// tests are tests/cli/process_helper_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/common/parity_util.h"

namespace graphrun::test {
namespace {

namespace fs = std::filesystem;

const fs::path kShared = fs::path(GRAPHRUN_SOURCE_DIR) / ".." / "shared";
const fs::path kQuantized = kShared / "testdata" / "llamacpp-quantized";

class ParityReference : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!fs::exists(kQuantized / "expected.json"))
            GTEST_SKIP() << "test data missing: " << (kQuantized / "expected.json").string();
        if (std::optional<std::string> why = parity_harness_missing()) GTEST_SKIP() << *why;
        std::ifstream in(kQuantized / "expected.json");
        expected_ = nlohmann::json::parse(in);
        prompt_ = expected_.at("prompt_ids").get<std::vector<int32_t>>();
        n_predict_ = expected_.at("n_predict").get<int>();
    }

    std::vector<int32_t> expected_ids(const std::string& file) const {
        return expected_.at("greedy_ids").at(file).get<std::vector<int32_t>>();
    }

    nlohmann::json expected_;
    std::vector<int32_t> prompt_;
    int n_predict_ = 0;
};

TEST_F(ParityReference, StoriesGreedyMatchesExpectedJson) {
    const fs::path model = kShared / "models" / "stories260K.gguf";
    const std::optional<std::vector<int32_t>> ids = llama_cpp_greedy(model.string(), prompt_, n_predict_);
    ASSERT_TRUE(ids.has_value());
    EXPECT_EQ(*ids, expected_ids("stories260K.gguf"));
}

TEST_F(ParityReference, RandomF32AndQ8_0GreedyMatchExpectedJson) {
    for (const char* file : {"rand256-F32.gguf", "rand256-Q8_0.gguf"}) {
        const std::optional<std::vector<int32_t>> ids =
            llama_cpp_greedy((kQuantized / file).string(), prompt_, n_predict_);
        ASSERT_TRUE(ids.has_value());
        EXPECT_EQ(*ids, expected_ids(file)) << file;
    }
}

TEST_F(ParityReference, TextPromptGetsBosAndContinuesLikeTheTokenPrompt) {
    // testdata/README.md: "Once upon a time" is ids 1 403 407 261 378 with BOS (1) in front.
    const fs::path model = kShared / "models" / "stories260K.gguf";
    const std::optional<LlamaReference> ref =
        llama_cpp_reference_text(model.string(), "Once upon a time", n_predict_);
    ASSERT_TRUE(ref.has_value());
    EXPECT_EQ(ref->prompt_ids, prompt_);
    EXPECT_EQ(ref->greedy_ids, expected_ids("stories260K.gguf"));
    EXPECT_FALSE(ref->stopped_at_eos);
    EXPECT_EQ(ref->text.rfind(", there was a little girl named Lily.", 0), 0u) << ref->text;
}

TEST_F(ParityReference, GenerationStopsBeforeEos) {
    // rand256-F32 reaches EOS from this prompt within 128 greedy tokens; with --ignore-eos the run
    // goes through it, without it the ids must be exactly the part before it.
    const std::string model = (kQuantized / "rand256-F32.gguf").string();
    const std::optional<LlamaReference> through =
        llama_cpp_reference(model, prompt_, 128, {.ignore_eos = true});
    const std::optional<LlamaReference> stopped = llama_cpp_reference(model, prompt_, 128);
    ASSERT_TRUE(through && stopped);
    ASSERT_GE(through->eos_id, 0);
    const auto eos = std::find(through->greedy_ids.begin(), through->greedy_ids.end(), through->eos_id);
    ASSERT_NE(eos, through->greedy_ids.end()) << "no EOS in 128 tokens: this check would test nothing";
    EXPECT_TRUE(stopped->stopped_at_eos);
    EXPECT_FALSE(through->stopped_at_eos);
    EXPECT_EQ(stopped->greedy_ids, std::vector<int32_t>(through->greedy_ids.begin(), eos));
}

TEST_F(ParityReference, AFailingRunThrowsInsteadOfSkipping) {
    // Installed but broken must fail the test: a missing model is an error, not a nullopt.
    EXPECT_THROW(llama_cpp_greedy((kQuantized / "no-such-model.gguf").string(), prompt_, 4),
                 std::runtime_error);
    // An id outside the 512-token vocabulary is refused by the script, not passed to llama.cpp.
    EXPECT_THROW(llama_cpp_greedy((kQuantized / "rand256-F32.gguf").string(), {1, 512}, 4),
                 std::runtime_error);
}

}  // namespace
}  // namespace graphrun::test
