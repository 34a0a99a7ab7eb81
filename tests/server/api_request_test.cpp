// tests/server/api_request_test.cpp — the request bodies' parsers (server/api_request.h) in process, with
// no HTTP and no model: what they accept, and the 400 each bad body gets. The bugs that
// fuzz/server_request_fuzz.cpp found are here too; each input is also in fuzz/corpus/server/.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/limits.h"
#include "server/api_error.h"
#include "server/api_request.h"

namespace graphrun::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// The ApiError a body gets from `parse`, as "code: message"; "" when it was accepted.
template <class Parse>
std::string refusal(Parse parse) {
    try {
        parse();
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 400) << e.what();
        return e.code() + ": " + e.what();
    }
    return "";
}

TEST(ApiRequest, TokenizeTakesContentAndTwoFlags) {
    const TokenizeRequest r =
        parse_tokenize_request(parse_json_object(R"({"content": "And God", "add_special": true, "with_pieces": null})"));
    EXPECT_EQ(r.content, "And God");
    EXPECT_TRUE(r.add_special);
    EXPECT_FALSE(r.with_pieces);
    EXPECT_THAT(refusal([] { parse_tokenize_request(json::object()); }), HasSubstr("missing_field: 'content' is missing"));
    EXPECT_THAT(refusal([] { parse_tokenize_request({{"content", 5}}); }),
                HasSubstr("invalid_type: 'content' must be a string, got an integer"));
    EXPECT_THAT(refusal([] { parse_tokenize_request({{"content", "x"}, {"with_pieces", "yes"}}); }),
                HasSubstr("'with_pieces' must be a boolean, got string"));
}

TEST(ApiRequest, DetokenizeTakesIdsOfTheVocabulary) {
    EXPECT_EQ(parse_detokenize_request({{"tokens", {0, 5, 99}}}, 100), (std::vector<int32_t>{0, 5, 99}));
    EXPECT_EQ(parse_detokenize_request({{"tokens", json::array()}}, 100), std::vector<int32_t>{});
    EXPECT_THAT(refusal([] { parse_detokenize_request({{"tokens", {1, 100}}}, 100); }),
                HasSubstr("'tokens[1]' is not a token id of this vocabulary (0 to 99): 100"));
    EXPECT_THAT(refusal([] { parse_detokenize_request({{"tokens", {-1}}}, 100); }), HasSubstr("'tokens[0]'"));
    EXPECT_THAT(refusal([] { parse_detokenize_request({{"tokens", {1.5}}}, 100); }), HasSubstr("'tokens[0]'"));
    EXPECT_THAT(refusal([] { parse_detokenize_request(json::parse("{\"tokens\": [18446744073709551615]}"), 100); }),
                HasSubstr("'tokens[0]'"));
    EXPECT_THAT(refusal([] { parse_detokenize_request({{"tokens", "1 2"}}, 100); }),
                HasSubstr("invalid_type: 'tokens' must be an array, got string"));
    EXPECT_THAT(refusal([] { parse_detokenize_request({{"tokens", nullptr}}, 100); }),
                HasSubstr("missing_field: 'tokens' is missing"));
}

std::string corpus_file(const std::string& name) {
    std::ifstream in(std::string(GRAPHRUN_SOURCE_DIR) + "/fuzz/corpus/server/" + name, std::ios::binary);
    EXPECT_TRUE(in) << name;
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// server_request_fuzz: a number past a double (1e400) made nlohmann throw out_of_range, which no
// route caught: the server answered 500 instead of 400.
TEST(ApiRequest, ANumberPastADoubleIsA400) {
    EXPECT_THAT(refusal([] { parse_json_object(corpus_file("finding-number-overflow.json")); }),
                HasSubstr("invalid_json: the body is not valid JSON: a number is out of range"));
    EXPECT_THAT(refusal([] { parse_completion_request(std::string(R"({"prompt": "x", "temperature": -1e400})"), false); }),
                HasSubstr("number overflow parsing '-1e400'"));
    EXPECT_THAT(refusal([] { parse_json_object(R"({"tokens": [1e309]})"); }), HasSubstr("out of range"));
    EXPECT_EQ(parse_json_object(R"({"x": 1.7e308})")["x"], 1.7e308);
}

// server_request_fuzz: max_tokens up to 2^30 passed the parser, and the scheduler then refused
// anything past kMaxPredict in its own words ("max_tokens: ... is outside 1 .. 16777216", even for
// max_completion_tokens). The parser's ceiling is now the scheduler's.
TEST(ApiRequest, MaxTokensStopsAtTheSchedulersCeiling) {
    EXPECT_THAT(refusal([] { parse_completion_request(corpus_file("finding-max-tokens-past-the-scheduler.json"), false); }),
                HasSubstr("'max_tokens' must be in [1, 16777216], got 18516154"));
    const int64_t ceiling = graph::kMaxPredict;
    EXPECT_EQ(parse_completion_request(json{{"prompt", "x"}, {"max_tokens", ceiling}}, false).max_tokens, ceiling);
    EXPECT_THAT(refusal([&] { parse_completion_request(json{{"prompt", "x"}, {"max_tokens", ceiling + 1}}, false); }),
                HasSubstr("'max_tokens' must be in [1, 16777216]"));
    const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_completion_tokens", ceiling + 1}};
    EXPECT_THAT(refusal([&] { parse_completion_request(chat, true); }), HasSubstr("'max_completion_tokens' must be in"));
}

// Seen while writing server_request_fuzz (its inputs are too short to show it): each level of
// nesting costs nlohmann some 160 bytes, so an 8 MiB body of '[' held 1.3 GB while it parsed.
TEST(ApiRequest, NestingDeeperThanTheLimitIsRefusedBeforeParsing) {
    auto nested = [](int depth) { return "{\"prompt\": \"x\", \"user\": " + std::string(size_t(depth - 1), '[') +
                                         std::string(size_t(depth - 1), ']') + "}"; };
    EXPECT_EQ(parse_completion_request(nested(kMaxRequestDepth), false).prompt, "x");
    EXPECT_THAT(refusal([&] { parse_json_object(nested(kMaxRequestDepth + 1)); }),
                HasSubstr("invalid_json: the body nests arrays and objects deeper than 64 levels at byte 87"));
    // Brackets inside strings are text, not nesting.
    EXPECT_EQ(parse_json_object("{\"prompt\": \"" + std::string(1000, '[') + "\\\"{\"}")["prompt"].get<std::string>().size(), 1002u);
    EXPECT_THAT(refusal([] { parse_json_object(std::string(size_t(8) << 20, '[')); }), HasSubstr("at byte 64"));
}

// A bad element of /detokenize's tokens is named by its type: quoting it whole echoed megabytes.
TEST(ApiRequest, DetokenizeNamesABadElementByItsType) {
    const json big = {{"tokens", {1, json::array({std::string(100000, 'x')})}}};
    const std::string message = refusal([&] { parse_detokenize_request(big, 100); });
    EXPECT_THAT(message, HasSubstr("invalid_type: 'tokens[1]' must be a token id (an integer), got array"));
    EXPECT_LT(message.size(), 200u);
}

}  // namespace
}  // namespace graphrun::server
