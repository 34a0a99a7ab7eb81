// tests/parity/tokenizer_vectors_test.cpp — the SentencePiece tokenizer against llama.cpp's own outputs
// in ../shared/testdata: its test vectors (test-tokenizer-0's .inp/.out for ggml-vocab-llama-spm) and
// the stories260K ids of testdata/README.md. The tokenizer's other tests are tests/text/tokenizer_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "tests/common/tokenizer_test_util.h"

namespace graphrun {
namespace {

using tokenizer_test::kShared;
using tokenizer_test::open_or_null;
using tokenizer_test::read_vectors;
using tokenizer_test::kLlamaVocab;
using tokenizer_test::LlamaSpm;
using tokenizer_test::VectorCase;

const std::string kStories = kShared + "/models/stories260K.gguf";

std::string show(const std::vector<int32_t>& ids) {
    std::string s;
    for (const int32_t id : ids) s += std::to_string(id) + " ";
    return s;
}

TEST_F(LlamaSpm, MatchesLlamaCppVectors) {
    // 46 inputs in .inp, 46 lines in .out; llama.cpp's test encodes without BOS, without specials.
    ASSERT_EQ(cases_.size(), 46u);
    EXPECT_EQ(cases_[2].text, "") << "the third input is empty";
    EXPECT_EQ(cases_[6].text, "\t");
    EXPECT_EQ(cases_[7].text, "\n") << "one newline survives the separator rule";
    for (const VectorCase& c : cases_)
        EXPECT_EQ(show(tok_->encode(c.text, false, false)), show(c.ids)) << "input: '" << c.text << "'";
}

TEST(Stories260K, OnceUponATime) {
    const auto file = open_or_null(kStories);
    if (!file) GTEST_SKIP() << kStories << " is missing (../shared not present)";
    const Tokenizer tok = Tokenizer::from_gguf(*file);
    EXPECT_EQ(tok.n_vocab(), 512);
    EXPECT_TRUE(tok.add_bos());
    EXPECT_EQ(tok.encode("Once upon a time", tok.add_bos()), (std::vector<int32_t>{1, 403, 407, 261, 378}));
    EXPECT_EQ(tok.decode(std::vector<int32_t>{1, 403, 407, 261, 378}), "Once upon a time");
    EXPECT_TRUE(tok.is_end_of_generation(2));
}

}  // namespace
}  // namespace graphrun
