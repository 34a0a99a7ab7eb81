// tests/text/tokenizer_bpe_test.cpp — byte-level BPE: the GPT-2 and default pre-tokenizers, merge order,
// special tokens and round trips, on small vocabularies written with GgufWriter.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/common/tokenizer_test_util.h"

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
    const std::string msg = tokenizer_test::load_error(hello_vocab().writer("falcon"));
    EXPECT_THAT(msg,
                HasSubstr("<file>: tokenizer.ggml.pre is 'falcon', a pre-tokenizer graphrun does not "
                          "implement; it knows default, gpt-2, gpt2, llama-bpe, llama3, llama-v3, qwen2, "
                          "deepseek-r1-qwen, smollm"));
    for (const char* known : {"llama-bpe", "qwen2", "smollm", "default", "gpt-2"})
        EXPECT_NO_THROW(tokenizer_test::load(hello_vocab().writer(known))) << known;
}

TEST(BpeLoad, Llama3AddsBosUnlessTheFileSaysNot) {
    const BpeVocab v(Merges{}, {{"<|begin_of_text|>", 3}});
    GgufWriter w = v.writer("llama-bpe");
    w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(v.id("<|begin_of_text|>")));
    const Tokenizer llama3 = tokenizer_test::load(w);
    EXPECT_TRUE(llama3.add_bos());
    EXPECT_EQ(llama3.encode("a", llama3.add_bos()), (std::vector<int32_t>{v.id("<|begin_of_text|>"), 'a'}));
    EXPECT_EQ(llama3.decode(llama3.encode("a", true)), "a") << "BOS decodes to nothing without specials";
    EXPECT_EQ(llama3.decode(llama3.encode("a", true), true), "<|begin_of_text|>a");
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    EXPECT_FALSE(tokenizer_test::load(w).add_bos());
    EXPECT_FALSE(tokenizer_test::load(v.writer("qwen2")).add_bos()) << "only llama-bpe adds BOS by default";
}

// With ignore_merges (Llama 3), a word that is a token is that token even if no merge builds it.
TEST(BpeEncode, Llama3IgnoresMergesForWholeWords) {
    const BpeVocab v(Merges{{"a", "b"}}, {{"abc", 1}});
    EXPECT_EQ(tokenizer_test::load(v.writer("llama-bpe")).encode("abc", false),
              (std::vector<int32_t>{v.id("abc")}));
    EXPECT_EQ(tokenizer_test::load(v.writer("qwen2")).encode("abc", false),
              (std::vector<int32_t>{v.id("ab"), 'c'}));
}

// llama.cpp's clean_up_tokenization_spaces, on for default, gpt-2 and llama-bpe, off for qwen2 and smollm.
TEST(BpeDecode, CleansUpSpacesAsLlamaCppDoes) {
    const std::string text = "Hi , you . Ok ? No ! it ' s I 'm we 're they 've he 'd we 'll don 't";
    const Tokenizer gpt2 = tokenizer_test::load(hello_vocab().writer("gpt-2"));
    EXPECT_EQ(gpt2.decode(gpt2.encode(text, false)),
              "Hi, you. Ok? No! it's I'm we're they've he 'd we 'll don 't");
    const Tokenizer llama3 = tokenizer_test::load(hello_vocab().writer("llama-bpe"));
    EXPECT_EQ(llama3.decode(llama3.encode(text, false)), gpt2.decode(gpt2.encode(text, false)));
    for (const char* pre : {"qwen2", "smollm"}) {
        const Tokenizer tok = tokenizer_test::load(hello_vocab().writer(pre));
        EXPECT_EQ(tok.decode(tok.encode(text, false)), text) << pre;
    }
    // The character after " ' " does not count as preceded by a space: " ' 's" keeps its apostrophes' space.
    EXPECT_EQ(gpt2.decode(gpt2.encode("a ' 's", false)), "a''s");
    // Streaming never cleans up.
    TokenTextStream stream(gpt2);
    std::string streamed;
    for (const int32_t id : gpt2.encode("Hi , you .", false)) streamed += stream.push(id);
    EXPECT_EQ(streamed + stream.flush(), "Hi , you .");
}

// The tokens that end generation, and the types llama.cpp overrides by token text.
TEST(BpeLoad, EndOfGenerationAndFimTokensAsLlamaCpp) {
    const BpeVocab v(Merges{}, {{"<|endoftext|>", 3},
                                {"<|im_end|>", 3},
                                {"<|fim_prefix|>", 4},
                                {"<|fim_pad|>", 4},
                                {"<|file_sep|>", 4},
                                {"<think>", 4}});
    GgufWriter w = v.writer("qwen2");
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(v.id("<|im_end|>")));
    const Tokenizer tok = tokenizer_test::load(w);
    const auto eog = tok.end_of_generation();
    EXPECT_EQ(std::vector<int32_t>(eog.begin(), eog.end()),
              (std::vector<int32_t>{v.id("<|endoftext|>"), v.id("<|im_end|>"), v.id("<|fim_pad|>"),
                                    v.id("<|file_sep|>")}));
    EXPECT_FALSE(tok.is_end_of_generation(v.id("<|fim_prefix|>")));
    // Fill-in-the-middle tokens become control tokens: plain text no longer matches them.
    EXPECT_TRUE(tok.is_control(v.id("<|fim_prefix|>")));
    const std::vector<int32_t> plain = tok.encode("<|fim_prefix|>", false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), v.id("<|fim_prefix|>")), 0);
    EXPECT_EQ(tok.encode("<|fim_prefix|>", false, true), (std::vector<int32_t>{v.id("<|fim_prefix|>")}));
    // Other user-defined tokens still match in plain text.
    EXPECT_TRUE(tok.is_user_defined(v.id("<think>")));
    EXPECT_EQ(tok.encode("<think>a", false), (std::vector<int32_t>{v.id("<think>"), 'a'}));
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
