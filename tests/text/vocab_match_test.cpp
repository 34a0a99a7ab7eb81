// tests/text/vocab_match_test.cpp — require_same_vocabulary: silent on the same vocabulary, and otherwise a
// VocabMismatch that names both files and says the first difference in words.
#include "runtime/text/vocab_match.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/common/tokenizer_test_util.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;
using tokenizer_test::open_written;

// A tiny "llama" vocabulary: <unk> <s> </s>, a byte token, then pieces.
const std::vector<std::string> kTokens = {"<unk>", "<s>", "</s>", "<0x0A>", "▁", "a", "b", "▁a", "ab", "▁b"};

GgufWriter vocab_spm_writer(std::vector<std::string> tokens = kTokens) {
    GgufWriter w;
    std::vector<float> scores(tokens.size());
    std::vector<int32_t> types(tokens.size(), 1);
    for (size_t i = 0; i < tokens.size(); ++i) scores[i] = -float(i);
    types[0] = 2, types[1] = 3, types[2] = 3, types[3] = 6;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_strings("tokenizer.ggml.tokens", tokens);
    w.set_f32s("tokenizer.ggml.scores", scores);
    w.set_i32s("tokenizer.ggml.token_type", types);
    return w;
}

// The message require_same_vocabulary(reference, file) throws, "" when it throws nothing.
std::string mismatch(const GgufWriter& reference, const GgufWriter& file) {
    const auto there = open_written(reference), here = open_written(file);
    try {
        require_same_vocabulary(*there, *here);
    } catch (const VocabMismatch& e) {
        const std::string expected_start =
            here->path() + ": its vocabulary is not the one of " + there->path() + ": ";
        const std::string message = e.what();
        EXPECT_EQ(message.rfind(expected_start, 0), 0u) << message;
        return message.substr(std::min(message.size(), expected_start.size()));
    }
    return "";
}

TEST(VocabMatch, TheSameVocabularyPasses) {
    EXPECT_EQ(mismatch(vocab_spm_writer(), vocab_spm_writer()), "");
    // Scores and token types are not the ids' meaning: a draft that only scores pieces differently passes.
    GgufWriter rescored = vocab_spm_writer();
    rescored.set_f32s("tokenizer.ggml.scores", std::vector<float>(kTokens.size(), 0.0f));
    EXPECT_EQ(mismatch(vocab_spm_writer(), rescored), "");
}

TEST(VocabMatch, TheFirstDifferenceIsNamed) {
    std::vector<std::string> more = kTokens;
    more.push_back("ba");
    const GgufWriter longer = vocab_spm_writer(more);
    EXPECT_EQ(mismatch(vocab_spm_writer(), longer), "10 tokens there and 11 here");
    EXPECT_EQ(mismatch(longer, vocab_spm_writer()), "11 tokens there and 10 here");

    std::vector<std::string> renamed = kTokens;
    renamed[8] = "ba";
    renamed[9] = "bb";  // two differences: the first is named
    EXPECT_EQ(mismatch(vocab_spm_writer(), vocab_spm_writer(renamed)), "token 8 is 'ab' there and 'ba' here");

    GgufWriter other_bos = vocab_spm_writer();
    other_bos.set_u32("tokenizer.ggml.bos_token_id", 3);
    EXPECT_EQ(mismatch(vocab_spm_writer(), other_bos), "BOS is 1 there and 3 here");

    GgufWriter other_eos = vocab_spm_writer();
    other_eos.set_u32("tokenizer.ggml.eos_token_id", 4);
    EXPECT_EQ(mismatch(vocab_spm_writer(), other_eos), "EOS is 2 there and 4 here");

    GgufWriter with_eot = vocab_spm_writer();
    with_eot.set_u32("tokenizer.ggml.eot_token_id", 9);
    EXPECT_EQ(mismatch(vocab_spm_writer(), with_eot),
              "the end-of-generation tokens are 2 there and 2, 9 here");
}

TEST(VocabMatch, ADifferentTokenizerKindIsNamedFirst) {
    const tokenizer_test::BpeVocab bpe(std::vector<std::pair<std::string, std::string>>{{"a", "b"}});
    EXPECT_EQ(mismatch(vocab_spm_writer(), bpe.writer()), "a llama tokenizer there and gpt2 here");
}

TEST(VocabMatch, AFileWithoutAVocabularyIsATokenizerError) {
    GgufWriter none;
    none.set_string("general.architecture", "llama");
    const auto reference = open_written(vocab_spm_writer()), file = open_written(none);
    EXPECT_THROW(require_same_vocabulary(*reference, *file), TokenizerError);
}

}  // namespace
}  // namespace graphrun
