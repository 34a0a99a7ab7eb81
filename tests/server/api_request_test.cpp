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
#include "runtime/text/grammar_match.h"
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
                HasSubstr("'max_tokens' must be in [0, 16777216], got 18516154"));
    const int64_t ceiling = graph::kMaxPredict;
    EXPECT_EQ(parse_completion_request(json{{"prompt", "x"}, {"max_tokens", ceiling}}, false).max_tokens, ceiling);
    EXPECT_THAT(refusal([&] { parse_completion_request(json{{"prompt", "x"}, {"max_tokens", ceiling + 1}}, false); }),
                HasSubstr("'max_tokens' must be in [0, 16777216]"));
    const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_completion_tokens", ceiling + 1}};
    EXPECT_THAT(refusal([&] { parse_completion_request(chat, true); }), HasSubstr("'max_completion_tokens' must be in"));
}

// Seen while writing server_request_fuzz (its inputs are too short to show it): each level of
// nesting costs nlohmann some 160 bytes, so an 8 MiB body of '[' held 1.3 GB while it parsed.
TEST(ApiRequest, NestingDeeperThanTheLimitIsRefusedBeforeParsing) {
    auto nested = [](int depth) { return "{\"prompt\": \"x\", \"user\": " + std::string(size_t(depth - 1), '[') +
                                         std::string(size_t(depth - 1), ']') + "}"; };
    EXPECT_EQ(parse_json_object(nested(kMaxRequestDepth))["prompt"], "x");
    // Read at its depth, then refused for what it is: 'user' is a string.
    EXPECT_THAT(refusal([&] { parse_completion_request(nested(kMaxRequestDepth), false); }),
                HasSubstr("invalid_type: 'user' must be a string, got array"));
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

// The ApiError a completion body gets, as "param | code"; "" when it was accepted.
std::string refused_param(const json& body, bool chat) {
    try {
        parse_completion_request(body, chat);
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 400) << e.what();
        EXPECT_NE(std::string(e.what()).find("'" + e.param()), std::string::npos)
            << "the message names the param: " << e.what();
        return e.param() + " | " + e.code();
    }
    return "";
}

json chat_with(const json& extra);
json completion_with(const json& extra);

// response_format and grammar are honoured: a grammar comes out, and a bad schema or grammar is a 400
// naming the field, with the keyword and its path (or the line and column) in the message.
TEST(ApiRequest, ResponseFormatAndGrammarBecomeAGrammar) {
    EXPECT_EQ(refused_param(chat_with({{"response_format", {{"type", "json_object"}}}}), true), "");
    const json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}, {"required", {"a"}}};
    const CompletionRequest r = parse_completion_request(
        chat_with({{"response_format", {{"type", "json_schema"},
                                        {"json_schema", {{"name", "x"}, {"strict", true}, {"schema", schema}}}}}}),
        true);
    ASSERT_TRUE(r.grammar);
    EXPECT_TRUE(grammar_matches(*r.grammar, R"({"a": 5})"));
    EXPECT_FALSE(grammar_matches(*r.grammar, R"({"b": 5})"));
    EXPECT_FALSE(parse_completion_request(chat_with({{"response_format", {{"type", "text"}}}}), true).grammar);
    const CompletionRequest c =
        parse_completion_request(completion_with({{"grammar", "root ::= \"yes\" | \"no\""}}), false);
    ASSERT_TRUE(c.grammar);
    EXPECT_TRUE(grammar_matches(*c.grammar, "no"));
    EXPECT_TRUE(parse_completion_request(completion_with({{"response_format", {{"type", "json_object"}}}}), false).grammar);

    EXPECT_EQ(refused_param(chat_with({{"response_format", {{"type", "json_schema"}, {"json_schema", json::object()}}}}), true),
              "response_format.json_schema.schema | invalid_type");
    const json pattern = {{"type", "string"}, {"pattern", "^a"}};
    EXPECT_EQ(refused_param(chat_with({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", pattern}}}}}}), true),
              "response_format.json_schema.schema | invalid_value");
    try {
        parse_completion_request(chat_with({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", pattern}}}}}}), true);
    } catch (const ApiError& e) {
        EXPECT_NE(std::string(e.what()).find("unsupported keyword 'pattern' at #/pattern"), std::string::npos) << e.what();
    }
    EXPECT_EQ(refused_param(chat_with({{"response_format", {{"type", "xml"}}}}), true), "response_format.type | invalid_value");
    EXPECT_EQ(refused_param(chat_with({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", schema}, {"mode", 1}}}}}}), true),
              "response_format.json_schema.mode | unknown_field");
    EXPECT_EQ(refused_param(chat_with({{"response_format", {{"type", "json_object"}, {"schema", schema}}}}), true),
              "response_format.schema | unknown_field");
    EXPECT_EQ(refused_param(completion_with({{"grammar", "root ::= foo"}}), false), "grammar | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"grammar", 5}}), false), "grammar | invalid_type");
    EXPECT_EQ(refused_param(chat_with({{"grammar", "root ::= \"a\""}, {"response_format", {{"type", "json_object"}}}}), true),
              "grammar | invalid_value");
}

json chat_with(const json& extra) {
    json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
    body.update(extra);
    return body;
}

json completion_with(const json& extra) {
    json body = {{"prompt", "And"}};
    body.update(extra);
    return body;
}

// Every error names its field in `param`, as its message does.
TEST(ApiRequest, EveryFieldErrorNamesItsParam) {
    EXPECT_EQ(refused_param(completion_with({{"max_tokens", "5"}}), false), "max_tokens | invalid_type");
    EXPECT_EQ(refused_param(completion_with({{"temperature", 3}}), false), "temperature | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"stop", {"a", 5}}}), false), "stop[1] | invalid_type");
    EXPECT_EQ(refused_param(completion_with({{"stop", {"a", ""}}}), false), "stop[1] | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"prompt", {1, -2}}}), false), "prompt[1] | invalid_value");
    EXPECT_EQ(refused_param(json{{"max_tokens", 3}}, false), "prompt | missing_field");
    EXPECT_EQ(refused_param(json{{"messages", {{{"role", "user"}}}}}, true), "messages[0].content | missing_field");
    EXPECT_EQ(refused_param(json{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}, true),
              "messages[0].content[0].type | invalid_value");
    EXPECT_EQ(refused_param(chat_with({{"top_logprobs", 2}}), true), "top_logprobs | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"stream_options", {{"include_usage", 1}}}}), false),
              "stream_options.include_usage | invalid_type");
    try {
        parse_json_object("{");
        ADD_FAILURE() << "malformed JSON accepted";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.param(), "") << "no one field is to blame";
    }
    const json body = json::parse(api_error_body(ApiError(400, "invalid_type", "'n' must be...", "n")));
    EXPECT_EQ(body["error"]["param"], "n");
    EXPECT_EQ(body["error"]["type"], "invalid_request_error");
    EXPECT_TRUE(json::parse(api_error_body(400, "invalid_json", "x"))["error"]["param"].is_null());
}

// Nothing is ignored silently: a field is honoured, accepted without effect (a short list), or a
// 400 naming it — unknown fields, and known ones graphrun does not honour with the value given.
TEST(ApiRequest, FieldsNotHonouredAreRefusedByName) {
    // Unknown, misspelt, or another endpoint's.
    EXPECT_EQ(refused_param(completion_with({{"max_token", 5}}), false), "max_token | unknown_field");
    EXPECT_EQ(refused_param(completion_with({{"best_of_unknown", "zz"}}), false), "best_of_unknown | unknown_field");
    EXPECT_EQ(refused_param(completion_with({{"messages", json::array()}}), false), "messages | unknown_field");
    EXPECT_EQ(refused_param(chat_with({{"prompt", "x"}}), true), "prompt | unknown_field");
    EXPECT_EQ(refused_param(chat_with({{"echo", true}}), true), "echo | unknown_field");
    EXPECT_EQ(refused_param(chat_with({{"reasoning_effort", "low"}}), true), "reasoning_effort | unknown_field");
    EXPECT_EQ(refused_param(completion_with({{"stream_options", {{"chunk_size", true}}}}), false),
              "stream_options.chunk_size | unknown_field");
    EXPECT_EQ(refused_param(json{{"messages", {{{"role", "user"}, {"content", "x"}, {"mood", "calm"}}}}}, true),
              "messages[0].mood | unknown_field");

    // Known and not honoured (yet) with these values.
    EXPECT_EQ(refused_param(chat_with({{"response_format", "json"}}), true), "response_format | invalid_type");
    const json tool = {{"type", "function"}, {"function", {{"name", "f"}, {"parameters", json::object()}}}};
    EXPECT_EQ(refused_param(chat_with({{"functions", {tool["function"]}}}), true), "functions | unsupported_value");
    EXPECT_EQ(refused_param(chat_with({{"function_call", "required"}}), true), "function_call | unsupported_value");
    EXPECT_EQ(refused_param(chat_with({{"modalities", {"text", "audio"}}}), true), "modalities | unsupported_value");
    EXPECT_EQ(refused_param(chat_with({{"audio", {{"voice", "alloy"}}}}), true), "audio | unsupported_value");
    EXPECT_EQ(refused_param(chat_with({{"n", kMaxChoices + 1}}), true), "n | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"n", 0}}), false), "n | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"best_of", 2}}), false), "best_of | unsupported_value");
    EXPECT_EQ(refused_param(completion_with({{"best_of", 1}, {"n", 2}}), false), "best_of | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"echo", 1}}), false), "echo | invalid_type");
    EXPECT_EQ(refused_param(chat_with({{"max_tokens", 0}}), true), "max_tokens | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"max_tokens", -1}}), false), "max_tokens | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"suffix", " amen"}}), false), "suffix | unsupported_value");
    EXPECT_EQ(refused_param(completion_with({{"store", true}}), false), "store | unsupported_value");
    EXPECT_EQ(refused_param(completion_with({{"user", 5}}), false), "user | invalid_type");

    // What is accepted: their default values, the fields without effect, and null for anything.
    EXPECT_EQ(refused_param(chat_with({{"response_format", {{"type", "text"}}},
                                       {"tools", json::array()},
                                       {"tool_choice", "none"},
                                       {"parallel_tool_calls", false},
                                       {"modalities", {"text"}},
                                       {"n", 1},
                                       {"user", "u-1"},
                                       {"safety_identifier", "s"},
                                       {"prompt_cache_key", "k"},
                                       {"service_tier", "auto"},
                                       {"metadata", {{"team", "a"}}},
                                       {"store", false},
                                       {"stream_options", {{"include_usage", true}, {"include_obfuscation", false}}},
                                       {"audio", nullptr},
                                       {"anything_at_all", nullptr}}),
                            true),
              "");
    EXPECT_EQ(refused_param(completion_with({{"echo", false}, {"best_of", 1}, {"suffix", ""}}), false),
              "");
    // echo, n and max_tokens 0 are honoured (server_echo_test.cpp, server_choices_test.cpp).
    EXPECT_EQ(refused_param(completion_with({{"echo", true}, {"n", 3}, {"max_tokens", 0}, {"logprobs", 2}}), false), "");
    EXPECT_EQ(refused_param(chat_with({{"n", kMaxChoices}}), true), "");
    const CompletionRequest r = parse_completion_request(completion_with({{"echo", true}, {"n", 3}, {"max_tokens", 0}}), false);
    EXPECT_TRUE(r.echo);
    EXPECT_EQ(r.n, 3);
    EXPECT_EQ(r.max_tokens, 0);
    EXPECT_EQ(refused_param(json{{"messages",
                                  {{{"role", "user"}, {"content", "x"}, {"name", "ann"}},
                                   {{"role", "assistant"}, {"content", "y"}, {"refusal", nullptr}, {"annotations", json::array()}}}}},
                            true),
              "");
}

// logit_bias: {"token id": bias in [-100, 100]}; ids in decimal, checked against the vocabulary later.
TEST(ApiRequest, LogitBiasIsReadAsTokenIdsAndBiases) {
    const CompletionRequest r = parse_completion_request(completion_with({{"logit_bias", {{"12", -100}, {"7", 2.5}}}}), false);
    ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
    // nlohmann keeps an object's keys sorted: "12" before "7".
    EXPECT_EQ(r.sampling.logit_bias[0].token, 12);
    EXPECT_EQ(r.sampling.logit_bias[0].bias, -100.0f);
    EXPECT_EQ(r.sampling.logit_bias[1].token, 7);
    EXPECT_EQ(r.sampling.logit_bias[1].bias, 2.5f);
    EXPECT_EQ(refused_param(completion_with({{"logit_bias", {{"12", 101}}}}), false), "logit_bias | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"logit_bias", {{"-3", 1}}}}), false), "logit_bias | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"logit_bias", {{"word", 1}}}}), false), "logit_bias | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"logit_bias", {{"99999999999", 1}}}}), false), "logit_bias | invalid_value");
    EXPECT_EQ(refused_param(completion_with({{"logit_bias", {{"5", "up"}}}}), false), "logit_bias[\"5\"] | invalid_type");
    EXPECT_EQ(refused_param(completion_with({{"logit_bias", {1, 2}}}), false), "logit_bias | invalid_type");
}

// An agent loop's second turn: the assistant's tool calls (content null) and the tool results are
// replayed: read as calls and results, which the chat template writes in its tool format
// (runtime/text/tool_calls.h), results as user turns so every template keeps its alternation.
TEST(ApiRequest, ToolCallConversationsReplay) {
    const json body = json::parse(R"({"messages": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "21 C"}]},
        {"role": "assistant", "content": "Checking once more.", "tool_calls": [
            {"id": "call_3", "type": "function", "function": {"name": "clock", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "call_3", "name": "clock", "content": "noon"}]})");
    const CompletionRequest r = parse_completion_request(body, true);
    ASSERT_EQ(r.messages.size(), 6u);
    EXPECT_EQ(r.messages[1].role, "assistant");
    EXPECT_EQ(r.messages[1].content, "");
    ASSERT_EQ(r.messages[1].tool_calls.size(), 2u);
    EXPECT_EQ(r.messages[1].tool_calls[1].id, "call_2");
    EXPECT_EQ(r.messages[1].tool_calls[1].name, "weather");
    EXPECT_EQ(r.messages[1].tool_calls[1].arguments, "{\"city\":\"Rome\"}");
    EXPECT_EQ(r.messages[3].role, "tool");
    EXPECT_EQ(r.messages[3].tool_call_id, "call_2");
    EXPECT_EQ(r.messages[3].content, "21 C");
    // The chatml (Hermes) rendering: calls after the content, consecutive results one user turn.
    EXPECT_EQ(ChatTemplate::named("chatml").apply(r.messages, false),
              "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n"
              "<|im_start|>assistant\n"
              "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>\n"
              "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\":\"Rome\"}}\n</tool_call><|im_end|>\n"
              "<|im_start|>user\n<tool_response>\n18 C\n</tool_response>\n<tool_response>\n21 C\n</tool_response><|im_end|>\n"
              "<|im_start|>assistant\nChecking once more.\n"
              "<tool_call>\n{\"name\": \"clock\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
              "<|im_start|>user\n<tool_response>\nnoon\n</tool_response><|im_end|>\n");

    auto with_message = [](const json& m) {
        return json{{"messages", {{{"role", "user"}, {"content", "x"}}, m}}};
    };
    EXPECT_EQ(refused_param(with_message({{"role", "tool"}, {"content", "18 C"}}), true),
              "messages[1].tool_call_id | missing_field");
    EXPECT_EQ(refused_param(with_message({{"role", "tool"}, {"tool_call_id", 5}, {"content", "18 C"}}), true),
              "messages[1].tool_call_id | invalid_type");
    EXPECT_EQ(refused_param(with_message({{"role", "tool"}, {"tool_call_id", "c"}}), true),
              "messages[1].content | missing_field");
    EXPECT_EQ(refused_param(with_message({{"role", "assistant"}, {"content", nullptr}}), true),
              "messages[1].content | missing_field");
    EXPECT_EQ(refused_param(with_message({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array()}}), true),
              "messages[1].content | missing_field");
    EXPECT_EQ(refused_param(with_message({{"role", "user"}, {"content", "y"}, {"tool_call_id", "c"}}), true),
              "messages[1].tool_call_id | invalid_value");
    EXPECT_EQ(refused_param(with_message({{"role", "user"}, {"content", "y"}, {"tool_calls", {{{"id", "c"}}}}}), true),
              "messages[1].tool_calls | invalid_value");
    const json call = {{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}};
    EXPECT_EQ(refused_param(with_message({{"role", "assistant"}, {"tool_calls", {call}}}), true), "");
    json bad_call = call;
    bad_call["function"].erase("name");
    EXPECT_EQ(refused_param(with_message({{"role", "assistant"}, {"tool_calls", {bad_call}}}), true),
              "messages[1].tool_calls[0].function.name | missing_field");
    bad_call = call;
    bad_call["function"]["arguments"] = json{{"city", "Paris"}};
    EXPECT_EQ(refused_param(with_message({{"role", "assistant"}, {"tool_calls", {bad_call}}}), true),
              "messages[1].tool_calls[0].function.arguments | invalid_type");
    bad_call = call;
    bad_call["type"] = "custom";
    EXPECT_EQ(refused_param(with_message({{"role", "assistant"}, {"tool_calls", {bad_call}}}), true),
              "messages[1].tool_calls[0].type | invalid_value");
    bad_call = call;
    bad_call["extra"] = 1;
    EXPECT_EQ(refused_param(with_message({{"role", "assistant"}, {"tool_calls", {bad_call}}}), true),
              "messages[1].tool_calls[0].extra | unknown_field");
    EXPECT_EQ(refused_param(with_message({{"role", "assistant"}, {"tool_calls", "f()"}}), true),
              "messages[1].tool_calls | invalid_type");
}

}  // namespace

// tools, tool_choice and parallel_tool_calls: honoured, and each bad value refused by its path.
TEST(ApiRequest, ToolsAndToolChoice) {
    const json weather = {{"type", "function"},
                          {"function",
                           {{"name", "get_weather"},
                            {"description", "The weather of a city"},
                            {"parameters",
                             {{"type", "object"},
                              {"properties", {{"city", {{"type", "string"}}}}},
                              {"required", {"city"}}}}}}};
    const json clock = {{"type", "function"}, {"function", {{"name", "clock"}}}};
    auto chat = [](json extra) {
        json body = {{"messages", {{{"role", "user"}, {"content", "x"}}}}};
        for (auto& [k, v] : extra.items()) body[k] = v;
        return body;
    };
    CompletionRequest r = parse_completion_request(chat({{"tools", {weather, clock}}}), true);
    ASSERT_EQ(r.tools.size(), 2u);
    EXPECT_EQ(r.tools[0].name, "get_weather");
    EXPECT_EQ(r.tools[0].description, "The weather of a city");
    EXPECT_EQ(json::parse(r.tools[0].parameters)["required"][0], "city");
    EXPECT_EQ(r.tools[1].parameters, "");
    EXPECT_FALSE(r.tool_required);
    EXPECT_TRUE(r.parallel_tool_calls);
    r = parse_completion_request(chat({{"tools", {weather, clock}}, {"tool_choice", "required"},
                                       {"parallel_tool_calls", false}}), true);
    EXPECT_TRUE(r.tool_required);
    EXPECT_FALSE(r.parallel_tool_calls);
    EXPECT_EQ(r.tools.size(), 2u);
    r = parse_completion_request(
        chat({{"tools", {weather, clock}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "clock"}}}}}}),
        true);
    ASSERT_EQ(r.tools.size(), 1u);
    EXPECT_EQ(r.tools[0].name, "clock");
    EXPECT_TRUE(r.tool_required);
    r = parse_completion_request(chat({{"tools", {weather}}, {"tool_choice", "none"}}), true);
    EXPECT_TRUE(r.tools.empty());

    auto refused = [&](json extra) {
        try {
            parse_completion_request(chat(std::move(extra)), true);
        } catch (const ApiError& e) {
            return e.param() + " | " + e.code();
        }
        return std::string();
    };
    EXPECT_EQ(refused({{"tools", "f"}}), "tools | invalid_type");
    EXPECT_EQ(refused({{"tools", {{{"type", "web_search"}}}}}), "tools[0].type | invalid_value");
    EXPECT_EQ(refused({{"tools", {{{"type", "function"}}}}}), "tools[0].function | missing_field");
    EXPECT_EQ(refused({{"tools", {{{"type", "function"}, {"function", {{"description", "d"}}}}}}}),
              "tools[0].function.name | missing_field");
    EXPECT_EQ(refused({{"tools", {{{"type", "function"}, {"function", {{"name", "no spaces"}}}}}}}),
              "tools[0].function.name | invalid_value");
    EXPECT_EQ(refused({{"tools", {clock, clock}}}), "tools[1].function.name | invalid_value");
    EXPECT_EQ(refused({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"colour", "red"}}}}}}}),
              "tools[0].function.colour | unknown_field");
    EXPECT_EQ(refused({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", "{}"}}}}}}}),
              "tools[0].function.parameters | invalid_type");
    EXPECT_EQ(refused({{"tools", {{{"type", "function"},
                                   {"function", {{"name", "f"}, {"parameters", {{"type", "integer"}, {"minimum", 1}}}}}}}}}),
              "tools[0].function.parameters | invalid_value");
    EXPECT_EQ(refused({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}, {"extra", 1}}}}}),
              "tools[0].extra | unknown_field");
    EXPECT_EQ(refused({{"tool_choice", "required"}}), "tool_choice | invalid_value");
    EXPECT_EQ(refused({{"tools", {clock}}, {"tool_choice", "always"}}), "tool_choice | invalid_value");
    EXPECT_EQ(refused({{"tools", {clock}}, {"tool_choice", 3}}), "tool_choice | invalid_type");
    EXPECT_EQ(refused({{"tools", {clock}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}),
              "tool_choice.function.name | invalid_value");
    EXPECT_EQ(refused({{"tools", {clock}}, {"tool_choice", {{"type", "custom"}}}}), "tool_choice.type | invalid_value");
    EXPECT_EQ(refused({{"tools", {clock}}, {"parallel_tool_calls", "yes"}}), "parallel_tool_calls | invalid_type");
    EXPECT_EQ(refused({{"tools", {clock}}, {"response_format", {{"type", "json_object"}}}}), "tools | invalid_value");
    EXPECT_EQ(refused({{"tools", {clock}}, {"tool_choice", "none"}, {"response_format", {{"type", "json_object"}}}}), "");
}

}  // namespace graphrun::server
