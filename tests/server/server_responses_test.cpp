// tests/server/server_responses_test.cpp — POST /v1/responses in process: a Response is the chat
// completion of the same conversation (text, finish as status, usage), streamed as the Responses API's
// events (sequence numbers 0, 1, ...; the deltas add up to the text; the last event holds the whole
// response); a function tool's call and a second turn with its function_call_output; text.format
// json_schema kept to (the shipped model and a random-weight one: valid JSON of the schema, or
// "incomplete"); stateful fields and built-in tools refused naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/text/grammar_match.h"
#include "runtime/text/json_schema.h"
#include "tests/common/server_test_util.h"

namespace graphrun {
namespace {

using nlohmann::json;
using testing::expect_error;
using testing::post_json;
using testing::post_streaming;
using testing::TestServer;

const testing::BackendSpec kSpec{.parallel = 4, .queue = 16, .n_ctx = 1024};

const json kWeatherTool = {{"type", "function"},
                           {"name", "get_weather"},
                           {"description", "The weather of a city"},
                           {"parameters",
                            {{"type", "object"},
                             {"properties", {{"city", {{"type", "string"}, {"maxLength", 12}}}}},
                             {"required", {"city"}},
                             {"additionalProperties", false}}},
                           {"strict", true}};

// The text of a Response: its message's output_text parts.
std::string output_text(const json& response) {
    std::string text;
    for (const json& item : response["output"])
        if (item["type"] == "message")
            for (const json& part : item["content"]) text += part["text"].get<std::string>();
    return text;
}

// Output items (or one) without their ids, which differ from one response to the next.
json without_ids(json items) {
    if (items.is_array()) {
        for (json& item : items) item = without_ids(item);
        return items;
    }
    items.erase("id");
    items.erase("call_id");
    return items;
}

// A stream's events, each checked: its "event:" line names its data's type, sequence numbers count
// from 0 with no gap.
std::vector<json> stream_events(httplib::Client& c, json body) {
    body["stream"] = true;
    std::string raw;
    const httplib::Result r = post_streaming(c, "/v1/responses", body.dump(), [&](const std::string& d) {
        raw += d;
        return true;
    });
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    std::vector<json> events;
    size_t pos = 0;
    while (pos < raw.size()) {
        const size_t end = raw.find("\n\n", pos);
        if (end == std::string::npos) {
            ADD_FAILURE() << "an event without its blank line: " << raw.substr(pos);
            break;
        }
        const std::string event = raw.substr(pos, end - pos);
        pos = end + 2;
        if (event.rfind(": ", 0) == 0) continue;  // keep-alive
        const size_t data = event.find("\ndata: ");
        EXPECT_EQ(event.rfind("event: ", 0), 0u) << event;
        EXPECT_NE(data, std::string::npos) << event;
        if (data == std::string::npos) continue;
        json e = json::parse(event.substr(data + 7));
        EXPECT_EQ(event.substr(7, data - 7), e["type"]) << event;
        EXPECT_EQ(e["sequence_number"], events.size()) << event;
        events.push_back(std::move(e));
    }
    return events;
}

std::vector<std::string> types_of(const std::vector<json>& events) {
    std::vector<std::string> types;
    for (const json& e : events) types.push_back(e["type"]);
    return types;
}

TEST(ServerResponses, AResponseIsTheChatCompletionOfItsConversationWholeAndStreamed) {
    TestServer server(kSpec);
    auto c = server.client();
    for (const int max_tokens : {6, 40}) {
        const json body = {{"model", "gpt-5"},
                           {"instructions", "Speak as the scripture."},
                           {"input", "Who made light?"},
                           {"max_output_tokens", max_tokens},
                           {"temperature", 0},
                           {"store", false}};
        const json r = post_json(c, "/v1/responses", body, 200);
        const json chat = post_json(c, "/v1/chat/completions",
                                    {{"messages",
                                      {{{"role", "system"}, {"content", "Speak as the scripture."}},
                                       {{"role", "user"}, {"content", "Who made light?"}}}},
                                     {"max_tokens", max_tokens},
                                     {"temperature", 0}},
                                    200);
        EXPECT_EQ(r["object"], "response");
        EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u) << r;
        EXPECT_EQ(r["model"], "kjv-q8_0.gguf");
        EXPECT_EQ(r["instructions"], "Speak as the scripture.");
        EXPECT_EQ(r["max_output_tokens"], max_tokens);
        EXPECT_EQ(r["temperature"], 0);
        EXPECT_EQ(r["store"], false);
        ASSERT_EQ(r["output"].size(), 1u) << r;
        const json& message = r["output"][0];
        EXPECT_EQ(message["type"], "message");
        EXPECT_EQ(message["role"], "assistant");
        EXPECT_EQ(message["content"][0]["type"], "output_text");
        EXPECT_EQ(output_text(r), chat["choices"][0]["message"]["content"]);
        const bool cut = chat["choices"][0]["finish_reason"] == "length";
        EXPECT_EQ(r["status"], cut ? "incomplete" : "completed") << r;
        EXPECT_EQ(message["status"], cut ? "incomplete" : "completed") << r;
        if (cut)
            EXPECT_EQ(r["incomplete_details"], json({{"reason", "max_output_tokens"}}));
        else
            EXPECT_TRUE(r["incomplete_details"].is_null());
        EXPECT_EQ(r["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
        EXPECT_EQ(r["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
        EXPECT_EQ(r["usage"]["total_tokens"], chat["usage"]["total_tokens"]);
        if (max_tokens == 6) {
            EXPECT_TRUE(cut) << "six tokens of the KJV model end no reply";
        }

        const std::vector<json> events = stream_events(c, body);
        ASSERT_GE(events.size(), 8u);
        const std::vector<std::string> types = types_of(events);
        EXPECT_EQ(types[0], "response.created");
        EXPECT_EQ(types[1], "response.in_progress");
        EXPECT_EQ(events[0]["response"]["status"], "in_progress");
        EXPECT_EQ(types[2], "response.output_item.added");
        EXPECT_EQ(types[3], "response.content_part.added");
        std::string deltas;
        size_t i = 4;
        for (; i < events.size() && types[i] == "response.output_text.delta"; ++i) {
            EXPECT_EQ(events[i]["item_id"], events[2]["item"]["id"]);
            EXPECT_EQ(events[i]["output_index"], 0);
            EXPECT_EQ(events[i]["content_index"], 0);
            deltas += events[i]["delta"].get<std::string>();
        }
        EXPECT_EQ(deltas, output_text(r));
        ASSERT_EQ(events.size(), i + 4) << "text done, part done, item done, the end";
        EXPECT_EQ(types[i], "response.output_text.done");
        EXPECT_EQ(events[i]["text"], output_text(r));
        EXPECT_EQ(types[i + 1], "response.content_part.done");
        EXPECT_EQ(events[i + 1]["part"], message["content"][0]);
        EXPECT_EQ(types[i + 2], "response.output_item.done");
        EXPECT_EQ(without_ids(events[i + 2]["item"]), without_ids(message));
        EXPECT_EQ(types[i + 3], cut ? "response.incomplete" : "response.completed");
        const json& last = events[i + 3]["response"];
        EXPECT_EQ(without_ids(last["output"]), without_ids(r["output"]));
        EXPECT_EQ(last["status"], r["status"]);
        EXPECT_EQ(last["usage"], r["usage"]);
    }
}

TEST(ServerResponses, AFunctionCallAndItsOutputMakeTheSecondTurn) {
    TestServer server(kSpec);
    auto c = server.client();
    const json asked = {{{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "The weather in Sion?"}}}}}};
    const json body = {{"input", asked},
                       {"tools", {kWeatherTool}},
                       {"tool_choice", "required"},
                       {"parallel_tool_calls", false},
                       {"temperature", 0},
                       {"max_output_tokens", 200}};
    const json r = post_json(c, "/v1/responses", body, 200);
    EXPECT_EQ(r["status"], "completed") << r;
    EXPECT_EQ(r["tools"], json::array({kWeatherTool}));
    EXPECT_EQ(r["tool_choice"], "required");
    ASSERT_EQ(r["output"].size(), 1u) << r;
    const json& call = r["output"][0];
    EXPECT_EQ(call["type"], "function_call");
    EXPECT_EQ(call["name"], "get_weather");
    EXPECT_EQ(call["status"], "completed");
    const json args = json::parse(call["arguments"].get<std::string>());
    ASSERT_TRUE(args.is_object() && args.size() == 1 && args["city"].is_string()) << args;

    // The same call streamed: its item added, its arguments, its item done, as in the whole answer.
    const std::vector<json> events = stream_events(c, body);
    const std::vector<std::string> want = {"response.created",
                                           "response.in_progress",
                                           "response.output_item.added",
                                           "response.function_call_arguments.delta",
                                           "response.function_call_arguments.done",
                                           "response.output_item.done",
                                           "response.completed"};
    EXPECT_EQ(types_of(events), want);
    if (events.size() == want.size()) {
        EXPECT_EQ(events[2]["item"]["arguments"], "");
        EXPECT_EQ(events[3]["delta"], call["arguments"]);
        EXPECT_EQ(events[4]["arguments"], call["arguments"]);
        EXPECT_EQ(events[4]["name"], "get_weather");
        EXPECT_EQ(events[5]["item"]["id"], events[2]["item"]["id"]);
        EXPECT_EQ(without_ids(events[5]["item"]), without_ids(call));
        EXPECT_EQ(without_ids(events[6]["response"]["output"]), without_ids(r["output"]));
    }

    // The second turn: the call item as it came back, then its output; the same as chat's replay.
    json second = {{"input", asked}, {"tools", {kWeatherTool}}, {"temperature", 0}, {"max_output_tokens", 16}};
    second["input"].push_back(call);
    second["input"].push_back({{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "rain"}});
    const json answer = post_json(c, "/v1/responses", second, 200);
    const json chat = post_json(
        c, "/v1/chat/completions",
        {{"messages",
          {{{"role", "user"}, {"content", "The weather in Sion?"}},
           {{"role", "assistant"},
            {"content", nullptr},
            {"tool_calls",
             {{{"id", call["call_id"]},
               {"type", "function"},
               {"function", {{"name", "get_weather"}, {"arguments", call["arguments"]}}}}}}},
           {{"role", "tool"}, {"tool_call_id", call["call_id"]}, {"content", "rain"}}}},
         {"tools", {{{"type", "function"}, {"function", {{"name", "get_weather"},
                                                         {"description", "The weather of a city"},
                                                         {"parameters", kWeatherTool["parameters"]},
                                                         {"strict", true}}}}}},
         {"temperature", 0},
         {"max_tokens", 16}},
        200);
    EXPECT_EQ(answer["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
    EXPECT_GT(answer["usage"]["input_tokens"].get<int>(), r["usage"]["input_tokens"].get<int>());
    EXPECT_EQ(output_text(answer), chat["choices"][0]["message"]["content"].is_string()
                                       ? chat["choices"][0]["message"]["content"].get<std::string>()
                                       : std::string());
}

// text.format json_schema on `server`'s model, greedy and sampled, cut short and not: a completed
// response's text is a value of the schema, an incomplete one a prefix of one.
void check_json_schema_format(TestServer& server, int* completed) {
    auto c = server.client();
    const json schema = {{"type", "object"},
                         {"properties",
                          {{"word", {{"type", "string"}, {"maxLength", 8}}},
                           {"n", {{"type", "integer"}}},
                           {"tags", {{"type", "array"}, {"items", {{"enum", {"a", "b"}}}}, {"maxItems", 3}}}}},
                         {"required", {"word", "n", "tags"}},
                         {"additionalProperties", false}};
    const Grammar grammar = grammar_parse(json_schema_to_gbnf(schema.dump()));
    for (const int max_tokens : {5, 150})
        for (const int seed : {1, 2, 3}) {
            const json body = {{"input", "A word and a number?"},
                               {"max_output_tokens", max_tokens},
                               {"temperature", seed == 1 ? 0.0 : 1.0},
                               {"text", {{"format", {{"type", "json_schema"}, {"name", "t"}, {"schema", schema},
                                                     {"strict", true}}}}}};
            const json r = post_json(c, "/v1/responses", body, 200);
            const std::string text = output_text(r);
            if (r["status"] == "incomplete") {
                GrammarMatcher m(grammar);
                EXPECT_TRUE(m.accept(text)) << text;
                continue;
            }
            ASSERT_EQ(r["status"], "completed") << r;
            ++*completed;
            EXPECT_TRUE(grammar_matches(grammar, text)) << text;
            const json value = json::parse(text);
            EXPECT_TRUE(value["word"].is_string() && value["n"].is_number_integer() && value["tags"].is_array()) << text;
        }
}

TEST(ServerResponses, TextFormatJsonSchemaIsKeptToOnTheShippedAndARandomModel) {
    int completed = 0;
    {
        TestServer server(kSpec);
        check_json_schema_format(server, &completed);
    }
    {
        TestServer server(kSpec, {}, graph::Model::load(testing::random_model_file(
                                         testing::spec_of(32, 2, 4, 2, 64, 400, 13), "responses_random")));
        check_json_schema_format(server, &completed);
    }
    std::printf("%d of 12 json_schema responses completed within max_output_tokens\n", completed);
    EXPECT_GT(completed, 0) << "none finished: the check of a completed value never ran";
}

TEST(ServerResponses, StatefulFieldsAndBuiltInToolsAreRefusedNamingThem) {
    TestServer server(kSpec);
    auto c = server.client();
    auto post = [&](const json& extra) {
        json body = {{"input", "x"}, {"max_output_tokens", 2}};
        body.update(extra);
        return c.Post("/v1/responses", body.dump(), "application/json");
    };
    expect_error(post({{"previous_response_id", "resp_1"}}), 400, "unsupported_value", "earlier request",
                 "previous_response_id");
    expect_error(post({{"conversation", "conv_1"}}), 400, "unsupported_value", "'conversation'", "conversation");
    expect_error(post({{"store", true}}), 400, "unsupported_value", "'store'", "store");
    expect_error(post({{"background", true}}), 400, "unsupported_value", "'background'", "background");
    expect_error(post({{"tools", {{{"type", "web_search"}}}}}), 400, "unsupported_value", "built-in", "tools[0].type");
    expect_error(post({{"include", {"reasoning.encrypted_content"}}}), 400, "unsupported_value", "include", "include[0]");
    expect_error(post({{"frequency_penalty", 1}}), 400, "unknown_field", "of /v1/responses", "frequency_penalty");
    expect_error(post({{"max_output_tokens", "many"}}), 400, "invalid_type", "'max_output_tokens'", "max_output_tokens");
    expect_error(post({{"temperature", 3}}), 400, "invalid_value", "'temperature'", "temperature");
    expect_error(post({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "x"}}}}}}}}),
                 400, "invalid_value", "text only", "input[0].content[0].type");
    expect_error(post({{"input", {{{"type", "function_call_output"}, {"output", "rain"}}}}}), 400, "missing_field",
                 "'input[0].call_id' is missing", "input[0].call_id");
    expect_error(post({{"input", json::array()}}), 400, "invalid_value", "'input' is empty", "input");
    expect_error(post({{"input", {{{"type", "item_reference"}, {"id", "msg_1"}}}}}), 400, "unsupported_value",
                 "stored", "input[0].type");
    expect_error(post({{"text", {{"format", {{"type", "json_schema"}, {"name", "t"},
                                             {"schema", {{"type", "number"}, {"minimum", 1}}}}}}}}),
                 400, "invalid_value", "unsupported keyword 'minimum'",
                 "text.format.schema");
    json bad_tool = kWeatherTool;
    bad_tool["name"] = "f g";
    expect_error(post({{"tools", {bad_tool}}}), 400, "invalid_value", "'tools[0].name'", "tools[0].name");
    expect_error(post({{"tools", {kWeatherTool}}, {"tool_choice", {{"type", "function"}, {"name", "nope"}}}}), 400,
                 "invalid_value", "'tool_choice.name'", "tool_choice.name");
    expect_error(post({{"tools", {kWeatherTool}}, {"text", {{"format", {{"type", "json_object"}}}}}}), 400,
                 "invalid_value", "'text.format'", "tools");
    expect_error(c.Get("/v1/responses"), 405, "method_not_allowed", "takes POST");
    // Fields that ask for what graphrun does anyway, or that have no effect, are accepted.
    const json ok = post_json(c, "/v1/responses",
                              {{"input", "x"}, {"max_output_tokens", 2}, {"store", false}, {"background", false},
                               {"truncation", "disabled"}, {"include", json::array()}, {"user", "u"},
                               {"metadata", {{"k", "v"}}}, {"text", {{"format", {{"type", "text"}}}, {"verbosity", "medium"}}},
                               {"stream_options", {{"include_obfuscation", false}}}, {"top_logprobs", 0}},
                              200);
    EXPECT_EQ(ok["metadata"], json({{"k", "v"}}));
    EXPECT_EQ(ok["usage"]["output_tokens"], 2);
}

}  // namespace
}  // namespace graphrun
