// tests/text/tokenizer_pretokenize_test.cpp — the Llama 3, Qwen2 and SmolLM pre-tokenizers word by word
// (the splits llama.cpp's matchers make, worked out from their regexes), and how encode and decode
// treat bytes that are not UTF-8. tests/parity/tokenizer_parity_test.cpp holds the same pre-tokenizers to
// llama.cpp itself on the real vocabularies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "tests/common/tokenizer_test_util.h"

namespace graphrun {
namespace {

using ::testing::ElementsAre;
using tokenizer_detail::bpe_pretokenize;
using tokenizer_detail::decode_utf8_lossy;
using tokenizer_detail::PreTokenizer;
using tokenizer_test::BpeVocab;
using Merges = std::vector<std::pair<std::string, std::string>>;

std::vector<std::string> llama3(std::string_view text) {
    return bpe_pretokenize(text, PreTokenizer::Llama3);
}
std::vector<std::string> qwen2(std::string_view text) {
    return bpe_pretokenize(text, PreTokenizer::Qwen2);
}
std::vector<std::string> smollm(std::string_view text) {
    return bpe_pretokenize(text, PreTokenizer::Smollm);
}

TEST(Llama3PreTokenizer, ContractionsInAnyCase) {
    EXPECT_THAT(llama3("I'm I'M We'Ve they'LL"),
                ElementsAre("I", "'m", " I", "'M", " We", "'Ve", " they", "'LL"));
    // A contraction is taken before the word it starts: 'Sxyz is 'S then xyz.
    EXPECT_THAT(llama3("'Sxyz 're"), ElementsAre("'S", "xyz", " '", "re"));
}

TEST(Llama3PreTokenizer, DigitsInGroupsOfThree) {
    EXPECT_THAT(llama3("abc 12345 x1234567"), ElementsAre("abc", " ", "123", "45", " x", "123", "456", "7"));
    // \p{N} beyond ASCII is grouped the same way.
    EXPECT_THAT(llama3("\u0663\u0664\u0665\u0666"), ElementsAre("\u0663\u0664\u0665", "\u0666"));
}

TEST(Llama3PreTokenizer, OneNonLetterMayLeadAWord) {
    EXPECT_THAT(llama3("(word \tword"), ElementsAre("(word", " ", "\tword"));
    // ...but not a newline or a digit.
    EXPECT_THAT(llama3("\nword 7word"), ElementsAre("\n", "word", " ", "7", "word"));
    EXPECT_THAT(llama3("\u00c4pfel \u00fcber \u6771\u4eac"),
                ElementsAre("\u00c4pfel", " \u00fcber", " \u6771\u4eac"));
}

TEST(Llama3PreTokenizer, PunctuationTakesTheNewlinesAfterIt) {
    EXPECT_THAT(llama3("x!!\n\ny"), ElementsAre("x", "!!\n\n", "y"));
    EXPECT_THAT(llama3("a . b"), ElementsAre("a", " .", " b"));
}

TEST(Llama3PreTokenizer, WhitespaceThroughItsLastNewline) {
    EXPECT_THAT(llama3("a \n\n b"), ElementsAre("a", " \n\n", " b"));
    EXPECT_THAT(llama3("a  \n  b"), ElementsAre("a", "  \n", " ", " b"));
    EXPECT_THAT(llama3("  word"), ElementsAre(" ", " word"));
    EXPECT_THAT(llama3("end  "), ElementsAre("end", "  "));
    EXPECT_THAT(llama3("a 1"), ElementsAre("a", " ", "1"));
    EXPECT_THAT(llama3(""), ElementsAre());
}

TEST(Qwen2PreTokenizer, SingleDigits) {
    EXPECT_THAT(qwen2("abc 12345 x"), ElementsAre("abc", " ", "1", "2", "3", "4", "5", " x"));
    EXPECT_THAT(qwen2("I'M x!!\n"), ElementsAre("I", "'M", " x", "!!\n"));
}

TEST(SmollmPreTokenizer, EveryDigitAloneThenGpt2) {
    EXPECT_THAT(smollm("abc 12345 x"), ElementsAre("abc", " ", "1", "2", "3", "4", "5", " x"));
    // GPT-2's contractions are lower-case only.
    EXPECT_THAT(smollm("I'm I'M"), ElementsAre("I", "'m", " I", "'", "M"));
    EXPECT_THAT(smollm("x\u00bd2"), ElementsAre("x", "\u00bd", "2"));
}

// Issue 14: overlong forms, surrogates and values past U+10FFFF are not characters. Each byte of
// them is one U+FFFD, as llama.cpp does for the ill-formed bytes it recognises (a lone
// continuation byte, a sequence cut short).
TEST(Utf8, IllFormedBytesAreReplacementCharacters) {
    const auto cpts = [](std::string_view s) { return decode_utf8_lossy(s); };
    EXPECT_THAT(cpts("\xC0\xAF"), ElementsAre(0xFFFD, 0xFFFD)) << "overlong '/'";
    EXPECT_THAT(cpts("\xE0\x80\xAF"), ElementsAre(0xFFFD, 0xFFFD, 0xFFFD)) << "overlong '/' in three bytes";
    EXPECT_THAT(cpts("\xED\xA0\x80x"), ElementsAre(0xFFFD, 0xFFFD, 0xFFFD, 'x')) << "lone surrogate U+D800";
    EXPECT_THAT(cpts("\xF4\x90\x80\x80"), ElementsAre(0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD)) << "U+110000";
    EXPECT_THAT(cpts("\xF8\x88\x80\x80\x80"), ElementsAre(0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD));
    EXPECT_THAT(cpts("\x80z"), ElementsAre(0xFFFD, 'z')) << "lone continuation byte";
    EXPECT_THAT(cpts("\xE6\x97"), ElementsAre(0xFFFD, 0xFFFD)) << "cut short at the end";
    EXPECT_THAT(cpts("\xE6\x97z"), ElementsAre(0xFFFD, 0xFFFD, 'z')) << "cut short by an ASCII byte";
    // Well-formed text at every length, including the edges of each range.
    EXPECT_THAT(
        cpts("\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xF0\x90\x80\x80\xF4\x8F\xBF\xBF"),
        ElementsAre(0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0x10000, 0x10FFFF));
}

TEST(Utf8, OverlongSlashIsNotASlashInEncodeOrDecode) {
    for (const char* pre : {"gpt-2", "llama-bpe", "qwen2", "smollm", "default"}) {
        const Tokenizer tok = tokenizer_test::load(BpeVocab(Merges{}).writer(pre));
        const std::vector<int32_t> ids = tok.encode(
            "a\xC0\xAF"
            "b",
            false);
        EXPECT_EQ(ids, tok.encode("a\uFFFD\uFFFDb", false)) << pre;
        EXPECT_EQ(tok.decode(ids), "a\uFFFD\uFFFDb") << pre;
        EXPECT_EQ(tok.decode(tok.encode("\xED\xA0\x80", false)), "\uFFFD\uFFFD\uFFFD") << pre;
        EXPECT_EQ(tok.decode(tok.encode("\xF0\x9F\x98", false)), "\uFFFD\uFFFD\uFFFD")
            << pre << ": emoji cut short";
    }
}

// A vocabulary token whose text is not UTF-8 (a hostile file) decodes to llama.cpp's marker for
// characters outside GPT-2's alphabet, with U+FFFD for its bytes, never to the text they imitate.
TEST(Utf8, IllFormedTokenTextsNeverDecodeToText) {
    const BpeVocab v(Merges{}, {{"\xC0\xAF", 1}, {"\xED\xA0\x80", 1}});
    const Tokenizer tok = tokenizer_test::load(v.writer("gpt-2"));
    const int32_t overlong = int32_t(v.tokens.size()) - 2, surrogate = overlong + 1;
    EXPECT_EQ(tok.token_to_piece(overlong), "[UNK_BYTE_0xefbfbd\uFFFD\uFFFD][UNK_BYTE_0xefbfbd\uFFFD\uFFFD]");
    EXPECT_EQ(tok.token_to_piece(surrogate).find('\xED'), std::string::npos);
    EXPECT_EQ(tok.decode(std::vector<int32_t>{overlong}).find('/'), std::string::npos);
}

// Random bytes, mostly not UTF-8, through every pre-tokenizer: nothing crashes, and decoding gives
// the text with each ill-formed byte as U+FFFD (qwen2 and smollm do not clean up spaces, so the
// round trip is exact).
TEST(Utf8, RandomBytesRoundTripAsReplacementCharacters) {
    std::mt19937 rng(7);
    const std::string alphabet =
        std::string("a1 '\n\t.") + "\xC0\xAF\xED\xA0\x80\xF4\x90\xE6\x97\xA5\xFF\x80";
    for (const char* pre : {"qwen2", "smollm", "llama-bpe", "gpt-2", "default"}) {
        const Tokenizer tok = tokenizer_test::load(BpeVocab(Merges{{"a", "1"}, {" ", "a"}}).writer(pre));
        for (int trial = 0; trial < 300; ++trial) {
            std::string text;
            const size_t n = rng() % 24;
            for (size_t i = 0; i < n; ++i)
                text += rng() % 4 ? alphabet[rng() % alphabet.size()] : char(rng() % 256);
            std::string expected;
            for (const uint32_t c : decode_utf8_lossy(text)) tokenizer_detail::append_utf8(expected, c);
            const std::vector<int32_t> ids = tok.encode(text, false);
            if (std::string(pre) == "qwen2" || std::string(pre) == "smollm") {
                EXPECT_EQ(tok.decode(ids), expected) << pre;
            }
            EXPECT_EQ(tok.encode(expected, false), ids) << pre << ": the same as its sanitized text";
        }
    }
}

}  // namespace
}  // namespace graphrun
