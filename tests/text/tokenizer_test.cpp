// tests/text/tokenizer_test.cpp — the SentencePiece tokenizer on llama.cpp's test vocabulary: decode round
// trips; special tokens; streaming of split UTF-8 characters. Its ids against llama.cpp's vectors are
// tests/parity/tokenizer_vectors_test.cpp; `graphrun tokenize` is tests/cli/tokenize_command_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
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


bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const int n = tokenizer_detail::utf8_sequence_length(s, i);
        if (n <= 0) return false;
        i += size_t(n);
    }
    return true;
}

TEST_F(LlamaSpm, MetadataAndSpecialIds) {
    EXPECT_EQ(tok_->n_vocab(), 32000);
    EXPECT_EQ(tok_->bos(), 1);
    EXPECT_EQ(tok_->eos(), 2);
    EXPECT_TRUE(tok_->add_bos());
    EXPECT_TRUE(tok_->is_end_of_generation(2));
    EXPECT_FALSE(tok_->is_end_of_generation(1));
    EXPECT_EQ(tok_->encode("Hello", true), (std::vector<int32_t>{1, 15043}));
}

TEST_F(LlamaSpm, RoundTripsEveryInput) {
    // What holds: decode strips the one space encode prefixed, so every input comes back exactly,
    // with or without BOS; with specials shown, BOS prints as "<s>" right before the text.
    for (const VectorCase& c : cases_) {
        EXPECT_EQ(tok_->decode(tok_->encode(c.text, false)), c.text);
        EXPECT_EQ(tok_->decode(tok_->encode(c.text, true)), c.text);
        EXPECT_EQ(tok_->decode(tok_->encode(c.text, true), true), "<s>" + c.text);
    }
}

TEST_F(LlamaSpm, PiecesOfSpecialAndByteTokens) {
    EXPECT_EQ(tok_->token_to_piece(1), "");
    EXPECT_EQ(tok_->token_to_piece(1, true), "<s>");
    EXPECT_EQ(tok_->token_to_piece(0), "");
    EXPECT_EQ(tok_->token_to_piece(0, true), "<unk>");
    EXPECT_EQ(tok_->token_to_piece(13), "\n");     // <0x0A>
    EXPECT_EQ(tok_->token_to_piece(243), "\xF0");  // <0xF0>: one raw byte
    EXPECT_EQ(tok_->token_to_piece(29871), " ");   // "▁"
    EXPECT_EQ(tok_->token_to_piece(15043), " Hello");
    EXPECT_THROW(tok_->token_to_piece(32000), TokenizerError);
    EXPECT_THROW(tok_->token_to_piece(-1), TokenizerError);
}

TEST_F(LlamaSpm, SpecialTokenTextsAreOrdinaryTextUnlessParsed) {
    const std::vector<int32_t> plain = tok_->encode("<s>Hi</s>", false, false);
    for (const int32_t id : plain) {
        EXPECT_NE(id, 1);
        EXPECT_NE(id, 2);
        EXPECT_GT(id, 258) << "no control, unknown or byte token from plain text";
    }
    EXPECT_EQ(tok_->decode(plain), "<s>Hi</s>");

    // Parsed, each special becomes its id, and the text after it gets the space prefix again.
    std::vector<int32_t> expected = {1};
    for (const int32_t id : tok_->encode("Hi", false)) expected.push_back(id);
    expected.push_back(2);
    EXPECT_EQ(tok_->encode("<s>Hi</s>", false, true), expected);
    EXPECT_EQ(tok_->encode("<unk>", false, true), (std::vector<int32_t>{0}));
}

TEST_F(LlamaSpm, StreamingHoldsSplitCharacters) {
    // 🦙 has no piece: it is four byte tokens F0 9F A6 99 (ids 243 162 169 156).
    const std::vector<int32_t> ids = tok_->encode("🦙!", false);
    ASSERT_EQ(ids, (std::vector<int32_t>{29871, 243, 162, 169, 156, 29991}));
    TokenTextStream stream(*tok_);
    EXPECT_EQ(stream.push(ids[0]), " ");
    EXPECT_EQ(stream.push(ids[1]), "");
    EXPECT_EQ(stream.push(ids[2]), "");
    EXPECT_EQ(stream.push(ids[3]), "");
    EXPECT_EQ(stream.push(ids[4]), "🦙");
    EXPECT_EQ(stream.push(ids[5]), "!");
    EXPECT_EQ(stream.flush(), "");

    // Every input of the vectors streams back as its text (after the prefixed space), and no
    // push ever returns a partial character.
    for (const VectorCase& c : cases_) {
        TokenTextStream s(*tok_);
        std::string text;
        for (const int32_t id : tok_->encode(c.text, false)) {
            const std::string part = s.push(id);
            EXPECT_TRUE(valid_utf8(part)) << "input '" << c.text << "'";
            text += part;
        }
        text += s.flush();
        EXPECT_EQ(text, c.text.empty() ? "" : " " + c.text);
    }
}

TEST_F(LlamaSpm, StreamingReplacesBytesThatCannotFormCharacters) {
    const auto byte = [](int b) { return 3 + b; };  // <0x00> is id 3
    TokenTextStream stream(*tok_);
    EXPECT_EQ(stream.push(byte(0x80)), "\xEF\xBF\xBD");  // a continuation byte with no lead
    EXPECT_EQ(stream.push(byte(0xE2)), "");              // could start "€"
    EXPECT_EQ(stream.push(byte(0x41)),
              "\xEF\xBF\xBD"
              "A");  // ... but 'A' ends it early
    EXPECT_EQ(stream.push(byte(0xC3)), "");
    EXPECT_EQ(stream.flush(), "\xEF\xBF\xBD");  // cut off at the end

    // Random byte tokens: every piece the stream returns is valid UTF-8, and when the bytes were
    // valid UTF-8 the stream returns exactly them.
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        std::string bytes;
        std::vector<int32_t> ids;
        const int n = int(rng() % 12);
        for (int i = 0; i < n; ++i) {
            // Mostly well-formed characters, sometimes a stray byte.
            const uint32_t pick = rng() % 5;
            std::string ch;
            if (pick == 0)
                ch = std::string(1, char(0x80 + rng() % 0x80));
            else
                tokenizer_detail::append_utf8(ch, pick == 1   ? 0x20 + rng() % 0x5F
                                                  : pick == 2 ? 0xA0 + rng() % 0x700
                                                  : pick == 3 ? 0x4E00 + rng() % 0x5000
                                                              : 0x1F300 + rng() % 0x300);
            for (const char c : ch) ids.push_back(byte(uint8_t(c)));
            bytes += ch;
        }
        TokenTextStream s(*tok_);
        std::string text;
        for (const int32_t id : ids) {
            const std::string part = s.push(id);
            ASSERT_TRUE(valid_utf8(part));
            text += part;
        }
        const std::string rest = s.flush();
        ASSERT_TRUE(valid_utf8(rest));
        text += rest;
        if (valid_utf8(bytes)) {
            EXPECT_EQ(text, bytes);
        }
    }
}

}  // namespace
}  // namespace graphrun
