// tests/tokenizer_bpe_test.cpp — byte-level BPE: the GPT-2 and default pre-tokenizers, merge order,
// special tokens and round trips, on small vocabularies written with GgufWriter.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/tokenizer_test_util.h"

namespace graphrun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tokenizer_detail::bpe_pretokenize;
using tokenizer_detail::PreTokenizer;
using tokenizer_test::BpeVocab;
using Merges = std::vector<std::pair<std::string, std::string>>;

std::vector<std::string> gpt2_split(std::string_view text) {
    return bpe_pretokenize(text, PreTokenizer::Gpt2);
}
std::vector<std::string> default_split(std::string_view text) {
    return bpe_pretokenize(text, PreTokenizer::Default);
}

TEST(BpePreTokenizer, Gpt2Contractions) {
    EXPECT_THAT(gpt2_split("don't we're I'm they've she'll he'd it's"),
                ElementsAre("don", "'t", " we", "'re", " I", "'m", " they", "'ve", " she", "'ll", " he", "'d",
                            " it", "'s"));
    // Only lower-case contractions; an apostrophe before anything else is punctuation.
    EXPECT_THAT(gpt2_split("IT'S y'all"), ElementsAre("IT", "'", "S", " y", "'", "all"));
}

TEST(BpePreTokenizer, Gpt2Numbers) {
    EXPECT_THAT(gpt2_split("abc 12345 x9"), ElementsAre("abc", " 12345", " x", "9"));
    // Numbers beyond ASCII: Arabic-Indic digits and vulgar fractions are \p{N}.
    EXPECT_THAT(gpt2_split("n=\u0663\u0664 \u00BD"), ElementsAre("n", "=", "\u0663\u0664", " \u00BD"));
}

TEST(BpePreTokenizer, Gpt2Whitespace) {
    // \s+(?!\S) leaves the last space of a run to the next word; a run at the end stays whole.
    EXPECT_THAT(gpt2_split("a   b"), ElementsAre("a", "  ", " b"));
    EXPECT_THAT(gpt2_split("a \n\nb"), ElementsAre("a", " \n", "\n", "b"));
    EXPECT_THAT(gpt2_split("end  "), ElementsAre("end", "  "));
    EXPECT_THAT(gpt2_split("\t x"), ElementsAre("\t", " x"));
    // U+3000 (ideographic space) is whitespace too.
    // Only an ASCII space prefixes a word.
    EXPECT_THAT(gpt2_split("a\u3000\u3000b"), ElementsAre("a", "\u3000", "\u3000", "b"));
    EXPECT_THAT(gpt2_split(""), ElementsAre());
}

TEST(BpePreTokenizer, Gpt2LettersBeyondAscii) {
    EXPECT_THAT(gpt2_split("Äpfel über 東京タワー, нещо"),
                ElementsAre("Äpfel", " über", " 東京タワー", ",", " нещо"));
    EXPECT_THAT(gpt2_split("Hello!!! ?🦙"), ElementsAre("Hello", "!!!", " ?🦙"));
    // Invalid UTF-8 becomes U+FFFD, which is a symbol (So), so it joins a punctuation run.
    EXPECT_THAT(gpt2_split("a\xff!"), ElementsAre("a", "\uFFFD!"));
}

TEST(BpePreTokenizer, DefaultSplitsPunctuationAndDigitGroups) {
    // llama.cpp's default: punctuation runs first (so contractions never form), then GPT-2, then
    // digit runs, then groups of three ASCII digits.
    EXPECT_THAT(default_split("don't"), ElementsAre("don", "'", "t"));
    EXPECT_THAT(default_split("abc 12345 x"), ElementsAre("abc", " ", "123", "45", " x"));
    EXPECT_THAT(default_split("Hi !! `x`"), ElementsAre("Hi", " ", "!!", " `", "x", "`"));
    EXPECT_THAT(default_split("a\u0663\u0664\u0665\u0666b"),
                ElementsAre("a", "\u0663\u0664\u0665\u0666", "b"));
}

// Merges (raw text) in rank order; tokens for each result follow the 256 byte tokens.
const BpeVocab& hello_vocab() {
    static const BpeVocab vocab({{"H", "e"},
                                 {"He", "l"},
                                 {"Hel", "l"},
                                 {"Hell", "o"},
                                 {" ", "w"},
                                 {" w", "o"},
                                 {" wo", "r"},
                                 {" wor", "l"},
                                 {" worl", "d"},
                                 {"'", "m"},
                                 {"1", "2"},
                                 {"12", "3"},
                                 {"\xC3", "\x84"}},
                                {{"<|endoftext|>", 3}, {"<tool>", 4}});
    return vocab;
}

TEST(BpeEncode, MergesWithinWords) {
    const BpeVocab& v = hello_vocab();
    const Tokenizer tok = tokenizer_test::load(v.writer());
    EXPECT_FALSE(tok.add_bos());
    EXPECT_EQ(tok.bos(), 11) << "llama.cpp's default BOS for gpt2 vocabularies";
    EXPECT_EQ(tok.encode("Hello world I'm 123", false),
              (std::vector<int32_t>{v.id("Hello"), v.id(" world"), v.id(" "), v.id("I"), v.id("'m"),
                                    v.id(" "), v.id("123")}));
    // A merge of two multi-byte symbols: "Ä" is the bytes C3 84.
    EXPECT_EQ(tok.encode("Ä", false), (std::vector<int32_t>{v.id("\xC3\x84")}));
}

TEST(BpeEncode, LowestRankMergesFirst) {
    const auto ids = [](const BpeVocab& v) { return tokenizer_test::load(v.writer()).encode("abc", false); };
    const BpeVocab bc_first(Merges{{"b", "c"}, {"a", "b"}});
    EXPECT_EQ(ids(bc_first), (std::vector<int32_t>{'a', bc_first.id("bc")}));
    const BpeVocab ab_first(Merges{{"a", "b"}, {"b", "c"}});
    EXPECT_EQ(ids(ab_first), (std::vector<int32_t>{ab_first.id("ab"), 'c'}));
    // Equal pairs: the leftmost merges first, so "aaa" is "aa" + "a".
    const BpeVocab aa(Merges{{"a", "a"}});
    EXPECT_EQ(tokenizer_test::load(aa.writer()).encode("aaa", false),
              (std::vector<int32_t>{aa.id("aa"), 'a'}));
}

TEST(BpeEncode, DefaultPreTokenizerChangesIds) {
    const BpeVocab& v = hello_vocab();
    const Tokenizer gpt2 = tokenizer_test::load(v.writer("gpt-2"));
    const Tokenizer dflt = tokenizer_test::load(v.writer(""));  // no tokenizer.ggml.pre at all
    EXPECT_EQ(gpt2.encode("I'm", false), (std::vector<int32_t>{'I', v.id("'m")}));
    EXPECT_EQ(dflt.encode("I'm", false), (std::vector<int32_t>{'I', '\'', 'm'}));
    EXPECT_EQ(tokenizer_test::load(v.writer("default")).encode("I'm", false), dflt.encode("I'm", false));
}

TEST(BpeEncode, SpecialAndUserDefinedTokens) {
    const BpeVocab& v = hello_vocab();
    const Tokenizer tok = tokenizer_test::load(v.writer());
    const int32_t eot = v.id("<|endoftext|>"), tool = v.id("<tool>");
    // <|endoftext|> is found by its text as end of turn, as llama.cpp does.
    EXPECT_TRUE(tok.is_end_of_generation(eot));

    const std::vector<int32_t> plain = tok.encode("Hello<|endoftext|>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
    EXPECT_EQ(tok.decode(plain), "Hello<|endoftext|>");
    EXPECT_EQ(tok.encode("Hello<|endoftext|>", false, true), (std::vector<int32_t>{v.id("Hello"), eot}));

    // User-defined tokens are matched verbatim even without parse_special.
    EXPECT_EQ(tok.encode("<tool>Hello", false), (std::vector<int32_t>{tool, v.id("Hello")}));
    EXPECT_EQ(tok.token_to_piece(eot), "");
    EXPECT_EQ(tok.token_to_piece(eot, true), "<|endoftext|>");
    EXPECT_EQ(tok.token_to_piece(tool), "<tool>");
}

TEST(BpeEncode, RoundTripsAnyText) {
    const Tokenizer tok = tokenizer_test::load(hello_vocab().writer());
    for (const std::string text : {"Hello world", "  leading\tand trailing  ",
                                   "Äpfel über 東京 ½ 🦙\n\n", "bytes \x01\x7f\xc3\xa9 done", ""}) {
        EXPECT_EQ(tok.decode(tok.encode(text, false)), text);
    }
    EXPECT_EQ(tok.token_to_piece(hello_vocab().id(" world")), " world");
    EXPECT_EQ(tok.token_to_piece(0x0A), "\n") << "byte 0x0A's symbol is U+010A";
}

TEST(BpeLoad, RefusesUnknownPreTokenizer) {
    const std::string msg = tokenizer_test::load_error(hello_vocab().writer("llama-bpe"));
    EXPECT_THAT(msg, HasSubstr("<file>: tokenizer.ggml.pre is 'llama-bpe'"));
}

TEST(BpeLoad, RefusesBadMerges) {
    GgufWriter w = hello_vocab().writer();
    w.set_strings("tokenizer.ggml.merges", {"H e", "Hel"});
    EXPECT_THAT(tokenizer_test::load_error(w),
                HasSubstr("tokenizer.ggml.merges[1] = 'Hel' is not two pieces separated by a space"));
    w.set_i32s("tokenizer.ggml.merges", {1, 2});
    EXPECT_THAT(tokenizer_test::load_error(w), HasSubstr("tokenizer.ggml.merges has type array of i32"));
    GgufWriter no_merges;
    no_merges.set_string("tokenizer.ggml.model", "gpt2");
    no_merges.set_strings("tokenizer.ggml.tokens", {"a", "b"});
    EXPECT_THAT(tokenizer_test::load_error(no_merges), HasSubstr("tokenizer.ggml.merges is missing"));
}

}  // namespace
}  // namespace graphrun
