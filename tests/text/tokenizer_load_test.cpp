// tests/text/tokenizer_load_test.cpp — vocabulary metadata from strangers: every malformed case is refused
// with a TokenizerError naming the file and the key; small SentencePiece vocabularies behave.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/common/tokenizer_test_util.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using tokenizer_test::load;
using tokenizer_test::load_error;

// A tiny "llama" vocabulary: specials, two byte tokens, and pieces for "ab" words.
const std::vector<std::string> kSpmTokens = {"<unk>", "<s>", "</s>", "<0x0A>", "<0xC3>", "▁",
                                             "a",     "b",   "▁a",   "ab",     "▁b",     "ba"};

// kSpmTokens with token i replaced.
std::vector<std::string> spm_tokens_with(size_t i, std::string text) {
    std::vector<std::string> tokens = kSpmTokens;
    tokens[i] = std::move(text);
    return tokens;
}

GgufWriter spm_writer() {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_strings("tokenizer.ggml.tokens", kSpmTokens);
    w.set_f32s("tokenizer.ggml.scores", {0, 0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -7});
    w.set_i32s("tokenizer.ggml.token_type", {2, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1});
    return w;
}

TEST(SpmSmall, HighestScoreMergesFirstThenBytesAndUnk) {
    const Tokenizer tok = load(spm_writer());
    // "▁ab": pairs ▁a (-4) and ab (-5); ▁a wins, and ▁a+b is no piece: ▁a, b.
    EXPECT_EQ(tok.encode("ab", false), (std::vector<int32_t>{8, 7}));
    EXPECT_EQ(tok.encode("ab", true), (std::vector<int32_t>{1, 8, 7}));
    // "\n" has a byte token; "é" (C3 A9) has one for C3 only: A9 falls back to <unk>.
    EXPECT_EQ(tok.encode("\n", false), (std::vector<int32_t>{5, 3}));
    EXPECT_EQ(tok.encode("é", false), (std::vector<int32_t>{5, 4, 0}));
}

TEST(SpmSmall, EqualScoresMergeLeftmostFirst) {
    GgufWriter w = spm_writer();
    w.set_f32s("tokenizer.ggml.scores", {0, 0, 0, 0, 0, -1, -2, -3, -4, -4, -6, -7});
    EXPECT_EQ(load(w).encode("ab", false), (std::vector<int32_t>{8, 7})) << "▁a and ab tie: the left pair";
    w.set_f32s("tokenizer.ggml.scores", {0, 0, 0, 0, 0, -1, -2, -3, -4, -3.5f, -6, -7});
    EXPECT_EQ(load(w).encode("ab", false), (std::vector<int32_t>{5, 9})) << "ab scores higher";
}

TEST(SpmSmall, UnusedPiecesAreResegmented) {
    // With a piece ▁ab, "ab" merges ab first, then ▁ + ab into ▁ab (id 11).
    GgufWriter w = spm_writer();
    w.set_strings("tokenizer.ggml.tokens", spm_tokens_with(11, "▁ab"));
    w.set_f32s("tokenizer.ggml.scores", {0, 0, 0, 0, 0, -1, -2, -3, -4, -3.5f, -6, -7});
    EXPECT_EQ(load(w).encode("ab", false), (std::vector<int32_t>{11}));
    // Marked unused, ▁ab still forms but is emitted as the halves it was merged from.
    w.set_i32s("tokenizer.ggml.token_type", {2, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 5});
    const Tokenizer tok = load(w);
    EXPECT_EQ(tok.encode("ab", false), (std::vector<int32_t>{5, 9}));
    EXPECT_EQ(tok.token_to_piece(11), "");
}

TEST(SpmSmall, SpacePrefixFollowsTheKey) {
    GgufWriter w = spm_writer();
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    const Tokenizer tok = load(w);
    EXPECT_EQ(tok.encode("ab", false), (std::vector<int32_t>{9}));
    EXPECT_EQ(tok.decode(tok.encode(" ab", false)), " ab") << "nothing is stripped without the prefix";
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    EXPECT_FALSE(load(w).add_bos());
}

TEST(SpmSmall, DecodeStripsOnlyThePrefixedSpace) {
    const Tokenizer tok = load(spm_writer());
    const std::vector<int32_t> ids = {1, 8, 10};  // <s> ▁a ▁b
    EXPECT_EQ(tok.decode(ids), "a b");
    EXPECT_EQ(tok.decode(ids, true), "<s>a b");
    EXPECT_EQ(tok.decode(std::vector<int32_t>{10, 8}), "b a");
}

struct BadCase {
    const char* name;
    void (*edit)(GgufWriter&);
    const char* message;  // expected after "<file>: "
};

const BadCase kBadCases[] = {
    {"missing model",
     [](GgufWriter& w) {
         w = GgufWriter();
         w.set_strings("tokenizer.ggml.tokens", {"a"});
     },
     "tokenizer.ggml.model is missing"},
    {"unknown model", [](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "bert"); },
     "tokenizer.ggml.model is 'bert'"},
    {"model not a string", [](GgufWriter& w) { w.set_u32("tokenizer.ggml.model", 1); },
     "tokenizer.ggml.model has type u32, expected string"},
    {"tokens missing",
     [](GgufWriter& w) {
         w = GgufWriter();
         w.set_string("tokenizer.ggml.model", "llama");
     },
     "tokenizer.ggml.tokens is missing"},
    {"tokens of wrong type",
     [](GgufWriter& w) {
         w.set_i32s("tokenizer.ggml.tokens", {1, 2});
     },
     "tokenizer.ggml.tokens has type array of i32, expected array of string"},
    {"empty vocabulary", [](GgufWriter& w) { w.set_strings("tokenizer.ggml.tokens", {}); },
     "tokenizer.ggml.tokens is empty"},
    {"duplicate token",
     [](GgufWriter& w) { w.set_strings("tokenizer.ggml.tokens", spm_tokens_with(11, "a")); },
     "tokenizer.ggml.tokens holds 'a' twice, at ids 6 and 11"},
    {"scores missing",
     [](GgufWriter& w) {
         GgufWriter fresh;
         fresh.set_string("tokenizer.ggml.model", "llama");
         fresh.set_strings("tokenizer.ggml.tokens", {"a"});
         w = fresh;
     },
     "tokenizer.ggml.scores is missing"},
    {"scores too short",
     [](GgufWriter& w) {
         w.set_f32s("tokenizer.ggml.scores", {0, 0, 0});
     },
     "tokenizer.ggml.scores has 3 elements but tokenizer.ggml.tokens has 12"},
    {"scores of wrong type", [](GgufWriter& w) { w.set_strings("tokenizer.ggml.scores", {"x"}); },
     "tokenizer.ggml.scores has type array of string, expected array of f32"},
    {"score not finite",
     [](GgufWriter& w) {
         w.set_f32s("tokenizer.ggml.scores", {0, 0, 0, 0, 0, -1, NAN, -3, -4, -5, -6, -7});
     },
     "tokenizer.ggml.scores[6] is not a finite number"},
    {"types too long",
     [](GgufWriter& w) {
         w.set_i32s("tokenizer.ggml.token_type", {2, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1});
     },
     "tokenizer.ggml.token_type has 13 elements but tokenizer.ggml.tokens has 12"},
    {"types of wrong type", [](GgufWriter& w) { w.set_f32s("tokenizer.ggml.token_type", {1}); },
     "tokenizer.ggml.token_type has type array of f32, expected array of i32"},
    {"type out of range",
     [](GgufWriter& w) {
         w.set_i32s("tokenizer.ggml.token_type", {2, 3, 3, 6, 6, 1, 1, 9, 1, 1, 1, 1});
     },
     "tokenizer.ggml.token_type[7] = 9 is not a token type"},
    {"byte token with bad digits",
     [](GgufWriter& w) { w.set_strings("tokenizer.ggml.tokens", spm_tokens_with(4, "<0xG3>")); },
     "tokenizer.ggml.token_type marks token 4 '<0xG3>' as a byte token, but byte tokens must read <0xNN>"},
    {"byte token too long",
     [](GgufWriter& w) { w.set_strings("tokenizer.ggml.tokens", spm_tokens_with(4, "<0xC3A>")); },
     "marks token 4 '<0xC3A>' as a byte token"},
    {"byte token not a byte at all",
     [](GgufWriter& w) {
         w.set_i32s("tokenizer.ggml.token_type", {2, 3, 3, 6, 6, 1, 6, 1, 1, 1, 1, 1});
     },
     "marks token 6 'a' as a byte token"},
    {"duplicate byte value",
     [](GgufWriter& w) { w.set_strings("tokenizer.ggml.tokens", spm_tokens_with(4, "<0x0a>")); },
     "tokenizer.ggml.token_type has two byte tokens for byte 0x0a: ids 3 and 4"},
    {"bos out of range", [](GgufWriter& w) { w.set_u32("tokenizer.ggml.bos_token_id", 12); },
     "tokenizer.ggml.bos_token_id = 12 is not a token id: the vocabulary has 12 tokens"},
    {"eos negative", [](GgufWriter& w) { w.set("tokenizer.ggml.eos_token_id", GgufValue::make_i32(-5)); },
     "tokenizer.ggml.eos_token_id = -5 is not a token id"},
    {"unk not an integer", [](GgufWriter& w) { w.set_string("tokenizer.ggml.unknown_token_id", "0"); },
     "tokenizer.ggml.unknown_token_id has type string, expected an integer token id"},
    {"eot out of range", [](GgufWriter& w) { w.set_u32("tokenizer.ggml.eot_token_id", 1000); },
     "tokenizer.ggml.eot_token_id = 1000 is not a token id"},
    {"add_bos not a bool", [](GgufWriter& w) { w.set_u32("tokenizer.ggml.add_bos_token", 1); },
     "tokenizer.ggml.add_bos_token has type u32, expected bool"},
    {"add_bos without a bos",
     [](GgufWriter& w) {
         GgufWriter fresh;
         fresh.set_string("tokenizer.ggml.model", "llama");
         fresh.set_strings("tokenizer.ggml.tokens", {"a"});  // default BOS 1 is outside: no BOS
         fresh.set_f32s("tokenizer.ggml.scores", {0});
         w = fresh;
     },
     "tokenizer.ggml.add_bos_token is true but the vocabulary has no BOS token"},
    {"pre not a string",
     [](GgufWriter& w) {
         w.set_string("tokenizer.ggml.model", "gpt2");
         w.set_u32("tokenizer.ggml.pre", 2);
     },
     "tokenizer.ggml.pre has type u32, expected string"},
};

TEST(TokenizerLoad, RefusesMalformedMetadata) {
    for (const BadCase& c : kBadCases) {
        GgufWriter w = spm_writer();
        c.edit(w);
        const std::string msg = load_error(w);
        EXPECT_THAT(msg, StartsWith("<file>: ")) << c.name;
        EXPECT_THAT(msg, HasSubstr(c.message)) << c.name;
    }
}

TEST(TokenizerLoad, NoneIdsKeepTheDefaults) {
    // Converters write 0xFFFFFFFF (or -1) for "no such token"; llama.cpp then keeps its default.
    GgufWriter w = spm_writer();
    w.set_u32("tokenizer.ggml.bos_token_id", 0xFFFFFFFFu);
    w.set("tokenizer.ggml.eos_token_id", GgufValue::make_i32(-1));
    const Tokenizer tok = load(w);
    EXPECT_EQ(tok.bos(), 1);
    EXPECT_EQ(tok.eos(), 2);
    w.set_u32("tokenizer.ggml.eos_token_id", 11);
    EXPECT_EQ(load(w).eos(), 11);
    EXPECT_TRUE(load(w).is_end_of_generation(11));
}

TEST(TokenizerLoad, MissingByteFallbackIsAnErrorAtEncodeTime) {
    // Token 0 is an ordinary piece here, so there is no unknown token to fall back on: a byte with
    // no byte token cannot be encoded, and encode says which.
    GgufWriter w = spm_writer();
    w.set_i32s("tokenizer.ggml.token_type", {1, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1});
    const Tokenizer tok = load(w);
    EXPECT_EQ(tok.encode("\n", false), (std::vector<int32_t>{5, 3}));
    try {
        tok.encode("é", false);
        ADD_FAILURE() << "no TokenizerError";
    } catch (const TokenizerError& e) {
        EXPECT_THAT(e.what(), HasSubstr("cannot encode byte 0xA9"));
    }
}

}  // namespace
}  // namespace graphrun
