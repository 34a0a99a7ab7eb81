// tests/api_request_test.cpp — the request bodies' parsers (server/api_request.h) in process, with
// no HTTP and no model: what they accept, and the 400 each bad body gets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// A bad element of /detokenize's tokens is named by its type: quoting it whole echoed megabytes.
TEST(ApiRequest, DetokenizeNamesABadElementByItsType) {
    const json big = {{"tokens", {1, json::array({std::string(100000, 'x')})}}};
    const std::string message = refusal([&] { parse_detokenize_request(big, 100); });
    EXPECT_THAT(message, HasSubstr("invalid_type: 'tokens[1]' must be a token id (an integer), got array"));
    EXPECT_LT(message.size(), 200u);
}

}  // namespace
}  // namespace graphrun::server
