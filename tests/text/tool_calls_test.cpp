// tests/text/tool_calls_test.cpp — tool calls in each chat family's format: the tools and past calls
// rendered into the prompt, a rendered call read back as it was (round trip), the call grammar
// accepting exactly well-formed calls, and a streamed reply showing its text but not its calls.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/text/chat_template.h"
#include "runtime/text/grammar.h"
#include "runtime/text/grammar_match.h"
#include "runtime/text/tool_calls.h"

namespace graphrun {
namespace {

using nlohmann::json;

const std::vector<ChatTool> kTools = {
    {"get_weather", "The weather of a city",
     R"({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"], "additionalProperties": false})"},
    {"clock", "", ""}};

const std::vector<ChatMessage> kTurns = {
    {"system", "Be brief."},
    {"user", "Weather in Paris?"},
    {"assistant", "", {{"call_1", "get_weather", R"({"city":"Paris"})"}}},
    {"tool", "18 C", {}, "call_1"},
    {"user", "And the time?"}};

TEST(ToolCalls, ChatMlRendersQwensToolSection) {
    const std::string text = ChatTemplate::named("chatml").apply(kTurns, true, kTools);
    EXPECT_EQ(text.rfind("<|im_start|>system\nBe brief.\n\n# Tools\n\n", 0), 0u) << text;
    EXPECT_NE(text.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
                        "\"The weather of a city\", \"parameters\": {\"type\": \"object\""),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                        "{\"city\":\"Paris\"}}\n</tool_call><|im_end|>\n"
                        "<|im_start|>user\n<tool_response>\n18 C\n</tool_response><|im_end|>\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.substr(text.size() - 22), "<|im_start|>assistant\n");
}

TEST(ToolCalls, Llama3RendersToolsInTheFirstUserTurnAndResultsAsIpython) {
    const std::string text = ChatTemplate::named("llama3").apply(kTurns, true, kTools);
    EXPECT_EQ(text.rfind("<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n\nBe brief.<|eot_id|>", 0),
              0u)
        << text;
    EXPECT_NE(text.find("<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions"), std::string::npos);
    EXPECT_NE(text.find("\"name\": \"get_weather\""), std::string::npos);
    EXPECT_NE(text.find("Weather in Paris?<|eot_id|>"), std::string::npos);
    EXPECT_NE(text.find("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": "
                        "{\"city\":\"Paris\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n18 C<|eot_id|>"),
              std::string::npos)
        << text;
    // The tools are told once.
    EXPECT_EQ(text.find("Given the following"), text.rfind("Given the following"));
}

TEST(ToolCalls, GenericFormatKeepsACallOnOneLine) {
    const std::string text = ChatTemplate::named("plain").apply(kTurns, true, kTools);
    EXPECT_NE(text.find("You can call these functions:\n{\"name\": \"get_weather\""), std::string::npos) << text;
    EXPECT_NE(text.find("Assistant: <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}</tool_call>\n"
                        "User: <tool_response>18 C</tool_response>\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.substr(text.size() - 10), "Assistant:");
}

// What a family renders as an assistant's calls is read back as the same calls, for every family.
TEST(ToolCalls, RenderedCallsParseBack) {
    for (const std::string& name : ChatTemplate::names()) {
        const ChatTemplate t = ChatTemplate::named(name);
        const std::vector<ChatToolCall> calls = {{"", "get_weather", R"({"city":"Paris","days":2})"},
                                                 {"", "clock", "{}"}};
        const ChatMessage said{"assistant", "", calls};
        const std::string reply = tool_turns(t.format(), std::span(&said, 1), {})[0].content;
        const ToolCallReply r = parse_tool_calls(t.format(), reply, kTools, 8);
        ASSERT_EQ(r.calls.size(), 2u) << name << ": " << reply;
        EXPECT_EQ(r.calls[0].name, "get_weather");
        EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","days":2})");
        EXPECT_EQ(r.calls[1].name, "clock");
        EXPECT_EQ(r.calls[1].arguments, "{}");
        EXPECT_EQ(r.content, "") << name;
        EXPECT_EQ(parse_tool_calls(t.format(), reply, kTools, 1).calls.size(), 1u) << name;

        // The call grammar takes the rendered calls, and only well-formed ones.
        const Grammar g = grammar_parse(tool_call_gbnf(t.format(), kTools, 8));
        EXPECT_TRUE(grammar_matches(g, reply)) << name << ": " << reply;
        const Grammar one = grammar_parse(tool_call_gbnf(t.format(), kTools, 1));
        EXPECT_FALSE(grammar_matches(one, reply)) << name << ": two calls where one is allowed";
        const ChatMessage bad{"assistant", "", {{"", "get_weather", R"({"town":"Paris"})"}}};
        EXPECT_FALSE(grammar_matches(g, tool_turns(t.format(), std::span(&bad, 1), {})[0].content)) << name;
        const ChatMessage unknown{"assistant", "", {{"", "launch", "{}"}}};
        const std::string unknown_text = tool_turns(t.format(), std::span(&unknown, 1), {})[0].content;
        EXPECT_FALSE(grammar_matches(g, unknown_text)) << name;
        EXPECT_TRUE(parse_tool_calls(t.format(), unknown_text, kTools, 8).calls.empty()) << name;
    }
}

TEST(ToolCalls, TextWithoutAWellFormedCallIsContent) {
    for (const char* reply : {"It is sunny.", "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\":",
                              "<tool_call>not json</tool_call>", "{\"name\": \"get_weather\", \"arguments\": 3}"}) {
        for (const ChatFormat f : {ChatFormat::ChatMl, ChatFormat::Llama3, ChatFormat::Plain}) {
            const ToolCallReply r = parse_tool_calls(f, reply, kTools, 8);
            EXPECT_TRUE(r.calls.empty()) << reply;
            EXPECT_EQ(r.content, reply);
        }
    }
    // Text before a call is its content.
    const ToolCallReply r = parse_tool_calls(
        ChatFormat::ChatMl, "Let me look.\n<tool_call>\n{\"name\": \"clock\", \"arguments\": {}}\n</tool_call>", kTools, 8);
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.content, "Let me look.");
    // Llama 3.2's python tag, and arguments given as JSON text.
    const ToolCallReply l = parse_tool_calls(
        ChatFormat::Llama3, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": \"{\\\"city\\\": \\\"Rome\\\"}\"}",
        kTools, 8);
    ASSERT_EQ(l.calls.size(), 1u);
    EXPECT_EQ(l.calls[0].arguments, R"({"city":"Rome"})");
}

// Streamed in pieces of 3 bytes: the text before the call is shown, the call never is.
TEST(ToolCalls, AStreamShowsTextAndHoldsTheCall) {
    const std::string reply = "Let me look. <tool_call>{\"name\": \"clock\", \"arguments\": {}}</tool_call>";
    ToolCallStream s(ChatFormat::Plain, kTools, 8);
    std::string shown;
    for (size_t i = 0; i < reply.size(); i += 3) shown += s.push(reply.substr(i, 3));
    const ToolCallReply r = s.finish();
    EXPECT_EQ(shown + r.content, "Let me look. ");  // the space before the call was shown before it came
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "clock");

    ToolCallStream plain(ChatFormat::Llama3, kTools, 8);
    std::string text = plain.push("It is ") + plain.push("noon. {");
    const ToolCallReply p = plain.finish();
    EXPECT_EQ(text + p.content, "It is noon. {");
    EXPECT_TRUE(p.calls.empty());
}

}  // namespace
}  // namespace graphrun
