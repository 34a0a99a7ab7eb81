// tests/server/server_tool_test.cpp — `graphrun serve` in process: tool calls end to end. With
// tool_choice "required" or a named function the reply is grammar-constrained, so every call's
// arguments parse as JSON and keep to the function's schema (or the answer is cut, "length"), on
// the shipped KJV model and on a random-weight model whose free output is arbitrary bytes; with
// "auto" a model that does not call answers plain content; a stream's tool_calls assemble into the
// whole answer's.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/common/server_test_util.h"

namespace graphrun {
namespace {

using nlohmann::json;
using testing::post_json;
using testing::sse_data;
using testing::TestServer;

// The tools' JSON takes a few hundred of the KJV vocabulary's tokens.
const testing::BackendSpec kToolBackend{.parallel = 4, .queue = 16, .n_ctx = 1024};

const json kWeather = {{"type", "function"},
                       {"function",
                        {{"name", "get_weather"},
                         {"description", "The weather of a city"},
                         {"parameters",
                          {{"type", "object"},
                           {"properties",
                            {{"city", {{"type", "string"}, {"maxLength", 12}}},
                             {"unit", {{"enum", {"celsius", "fahrenheit"}}}},
                             {"days", {{"type", "integer"}}}}},
                           {"required", {"city", "unit"}},
                           {"additionalProperties", false}}}}}};
const json kClock = {{"type", "function"}, {"function", {{"name", "clock"}, {"description", "The time"}}}};

// The arguments of a get_weather or clock call, held to their schemas by hand.
void expect_valid_call(const json& call) {
    EXPECT_EQ(call["type"], "function");
    EXPECT_TRUE(call["id"].is_string() && !call["id"].get<std::string>().empty());
    const std::string name = call["function"]["name"];
    const json args = json::parse(call["function"]["arguments"].get<std::string>());  // a JSON string
    ASSERT_TRUE(args.is_object()) << args;
    if (name == "clock") {
        EXPECT_TRUE(args.empty()) << args;
        return;
    }
    ASSERT_EQ(name, "get_weather");
    ASSERT_TRUE(args.contains("city") && args["city"].is_string()) << args;
    EXPECT_LE(args["city"].get<std::string>().size(), 12u * 6) << args;  // 12 characters (escapes count one)
    ASSERT_TRUE(args.contains("unit")) << args;
    EXPECT_TRUE(args["unit"] == "celsius" || args["unit"] == "fahrenheit") << args;
    if (args.contains("days")) {
        EXPECT_TRUE(args["days"].is_number_integer()) << args;
    }
    for (const auto& [key, value] : args.items())
        EXPECT_TRUE(key == "city" || key == "unit" || key == "days") << "not in the schema: " << key;
}

// Required calls on `server`'s model, greedy and sampled, one call or several.
void check_required_calls(TestServer& server, int* calls_seen) {
    auto c = server.client();
    for (const json& choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "get_weather"}}}}})
        for (const bool parallel : {true, false})
            for (const int seed : {1, 2, 3}) {
                const json body = {{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
                                   {"tools", {kWeather, kClock}},
                                   {"tool_choice", choice},
                                   {"parallel_tool_calls", parallel},
                                   {"max_tokens", 120},
                                   {"temperature", seed == 1 ? 0.0 : 1.0},
                                   {"seed", seed}};
                const json r = post_json(c, "/v1/chat/completions", body, 200);
                const json& ch = r["choices"][0];
                const std::string reason = ch["finish_reason"];
                // Cut by max_tokens: the calls completed before the cut, if any, are returned.
                ASSERT_TRUE(reason == "tool_calls" || reason == "length") << ch.dump();
                if (!ch["message"].contains("tool_calls")) {
                    EXPECT_EQ(reason, "length") << ch.dump();
                    continue;
                }
                EXPECT_TRUE(ch["message"]["content"].is_null()) << ch.dump();
                const json& calls = ch["message"]["tool_calls"];
                ASSERT_GE(calls.size(), 1u);
                if (reason == "length") {
                    EXPECT_TRUE(parallel) << "one call, then only the end is allowed: " << ch.dump();
                }
                if (!parallel) {
                    EXPECT_EQ(calls.size(), 1u);
                }
                for (const json& call : calls) {
                    expect_valid_call(call);
                    if (choice.is_object()) {
                        EXPECT_EQ(call["function"]["name"], "get_weather");
                    }
                    ++*calls_seen;
                }
            }
}

TEST(ServerTools, RequiredCallsValidateOnTheShippedModel) {
    TestServer server(kToolBackend);
    int calls = 0;
    check_required_calls(server, &calls);
    EXPECT_GT(calls, 0) << "no call finished within max_tokens";
}

TEST(ServerTools, RequiredCallsValidateOnARandomModel) {
    TestServer server(kToolBackend, {},
                      graph::Model::load(testing::random_model_file(
                          testing::spec_of(32, 2, 4, 2, 64, 400, 11), "tools_random")));
    int calls = 0;
    check_required_calls(server, &calls);
    std::printf("%d calls of the random model finished within max_tokens\n", calls);
}

// The KJV model does not write calls of its own: with "auto" its answer is plain content.
TEST(ServerTools, AutoWithAModelThatDoesNotCallIsPlainContent) {
    TestServer server(kToolBackend);
    auto c = server.client();
    const json body = {{"messages", {{{"role", "user"}, {"content", "Who made the heaven?"}}}},
                       {"tools", {kWeather}},
                       {"max_tokens", 30},
                       {"temperature", 0}};
    const json r = post_json(c, "/v1/chat/completions", body, 200);
    const json& ch = r["choices"][0];
    EXPECT_TRUE(ch["finish_reason"] == "stop" || ch["finish_reason"] == "length") << ch.dump();
    EXPECT_FALSE(ch["message"].contains("tool_calls"));
    EXPECT_FALSE(ch["message"]["content"].get<std::string>().empty());
    // The tools are in the prompt: it is longer than without them, and "none" leaves them out.
    json none = body;
    none["tool_choice"] = "none";
    const json n = post_json(c, "/v1/chat/completions", none, 200);
    EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), n["usage"]["prompt_tokens"].get<int>() + 20);
}

// A streamed required call: the role first, one chunk of delta.tool_calls (index, id, type, name,
// arguments), then finish_reason "tool_calls"; the same calls as the whole answer's (greedy).
TEST(ServerTools, AStreamedCallAssemblesIntoTheWholeAnswers) {
    TestServer server(kToolBackend);
    auto c = server.client();
    json body = {{"messages", {{{"role", "user"}, {"content", "The time?"}}}},
                 {"tools", {kWeather, kClock}},
                 {"tool_choice", "required"},
                 {"parallel_tool_calls", false},  // the KJV model would go on calling to max_tokens
                 {"max_tokens", 120},
                 {"temperature", 0}};
    const json whole = post_json(c, "/v1/chat/completions", body, 200);
    ASSERT_EQ(whole["choices"][0]["finish_reason"], "tool_calls") << whole.dump();
    body["stream"] = true;
    std::string raw;
    ASSERT_TRUE(testing::post_streaming(c, "/v1/chat/completions", body.dump(), [&](const std::string& d) {
        raw += d;
        return true;
    }));
    const std::vector<std::string> data = sse_data(raw);
    ASSERT_GE(data.size(), 3u);
    EXPECT_EQ(data.back(), "[DONE]");
    json calls = json::array();
    std::string finish;
    for (size_t i = 0; i + 1 < data.size(); ++i) {
        const json chunk = json::parse(data[i]);
        const json& ch = chunk["choices"][0];
        if (ch["delta"].contains("tool_calls"))
            for (const json& d : ch["delta"]["tool_calls"]) {
                EXPECT_EQ(d["index"], calls.size());
                calls.push_back({{"id", d["id"]}, {"type", d["type"]}, {"function", d["function"]}});
            }
        if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    }
    EXPECT_EQ(finish, "tool_calls");
    const json& expected = whole["choices"][0]["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), expected.size());
    for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i]["function"], expected[i]["function"]);
}

// The loop's second turn: the call the server made, its result as a tool message, then an answer.
TEST(ServerTools, ALoopsSecondTurnAnswers) {
    TestServer server(kToolBackend);
    auto c = server.client();
    json messages = {{{"role", "user"}, {"content", "The time?"}}};
    const json first = post_json(c, "/v1/chat/completions",
                                 {{"messages", messages}, {"tools", {kClock}}, {"tool_choice", "required"},
                                  {"parallel_tool_calls", false}, {"max_tokens", 60}, {"temperature", 0}},
                                 200);
    const json& message = first["choices"][0]["message"];
    ASSERT_EQ(first["choices"][0]["finish_reason"], "tool_calls") << first.dump();
    messages.push_back(message);
    messages.push_back({{"role", "tool"}, {"tool_call_id", message["tool_calls"][0]["id"]}, {"content", "noon"}});
    const json second = post_json(c, "/v1/chat/completions",
                                  {{"messages", messages}, {"tools", {kClock}}, {"max_tokens", 20}, {"temperature", 0}},
                                  200);
    EXPECT_TRUE(second["choices"][0]["message"]["content"].is_string()) << second.dump();
}

}  // namespace
}  // namespace graphrun
