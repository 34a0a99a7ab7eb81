// server/responses_request.cpp — see responses_request.h.
#include "server/responses_request.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <span>
#include <string_view>

#include "server/api_error.h"
#include "server/request_fields.h"

namespace graphrun::server {

using nlohmann::json;
using namespace request_fields;

namespace {

const json& string_field(const json& object, const char* name, const std::string& at) {
    const json* v = field(object, name);
    if (!v) bad(at + "." + name, "'" + at + "." + name + "' is missing", "missing_field");
    if (!v->is_string()) wrong_type(at + "." + name, "a string", *v);
    return *v;
}

// Keys of `object` that are neither null nor in `known` are refused as fields of `what`.
void only_fields(const json& object, std::initializer_list<std::string_view> known, const std::string& at,
                 const std::string& what) {
    for (const auto& [key, value] : object.items())
        if (!value.is_null() && std::find(known.begin(), known.end(), key) == known.end())
            unknown_field(at + "." + key, what);
}

// A content list's text: input_text parts (what a client writes) and output_text parts (an earlier
// answer's, replayed). Images, files and audio are refused: this model reads text.
std::string content_text(const json& content, const std::string& at) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) wrong_type(at, "a string or an array of input_text parts", content);
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string p = at + "[" + std::to_string(i) + "]";
        if (!part.is_object()) wrong_type(p, "an object", part);
        const std::string type = string_field(part, "type", p).get<std::string>();
        if (type != "input_text" && type != "output_text")
            bad(p + ".type", "'" + p + ".type' is \"" + type + "\": give input_text or output_text (this model reads text only)");
        // An output_text part replayed from an answer carries its annotations and logprobs: not read.
        only_fields(part, {"type", "text", "annotations", "logprobs"}, p, "of a content part");
        text += string_field(part, "text", p).get<std::string>();
    }
    return text;
}

// input: a string (one user message) or items. A function_call item joins the assistant message
// just before it (an earlier answer's output is its message, then its calls) or starts one.
json input_messages(const json& body) {
    json messages = json::array();
    if (const json* instructions = field(body, "instructions")) {
        if (!instructions->is_string()) wrong_type("instructions", "a string", *instructions);
        messages.push_back({{"role", "system"}, {"content", *instructions}});
    }
    const json* input = field(body, "input");
    if (!input) bad("input", "'input' is missing: the text or the items to answer", "missing_field");
    if (input->is_string()) {
        messages.push_back({{"role", "user"}, {"content", *input}});
        return messages;
    }
    if (!input->is_array()) wrong_type("input", "a string or an array of items", *input);
    if (input->empty()) bad("input", "'input' is empty: give at least one item");
    for (size_t i = 0; i < input->size(); ++i) {
        const json& item = (*input)[i];
        const std::string at = "input[" + std::to_string(i) + "]";
        if (!item.is_object()) wrong_type(at, "an object", item);
        const json* type_field = field(item, "type");
        if (type_field && !type_field->is_string()) wrong_type(at + ".type", "a string", *type_field);
        const std::string type = type_field ? type_field->get<std::string>() : "message";
        if (type == "message") {
            only_fields(item, {"type", "role", "content", "id", "status", "phase"}, at, "of a message item");
            const std::string role = string_field(item, "role", at).get<std::string>();
            if (role != "user" && role != "system" && role != "developer" && role != "assistant")
                bad(at + ".role", "'" + at + ".role' must be user, system, developer or assistant, got \"" + role + "\"");
            const json* content = field(item, "content");
            if (!content) bad(at + ".content", "'" + at + ".content' is missing", "missing_field");
            messages.push_back({{"role", role}, {"content", content_text(*content, at + ".content")}});
        } else if (type == "function_call") {
            only_fields(item, {"type", "call_id", "name", "arguments", "id", "status"}, at, "of a function_call item");
            const json call = {{"id", string_field(item, "call_id", at)},
                               {"type", "function"},
                               {"function", {{"name", string_field(item, "name", at)},
                                             {"arguments", string_field(item, "arguments", at)}}}};
            if (messages.empty() || messages.back()["role"] != "assistant")
                messages.push_back({{"role", "assistant"}, {"content", nullptr}});
            messages.back()["tool_calls"].push_back(call);
        } else if (type == "function_call_output") {
            only_fields(item, {"type", "call_id", "output", "id", "status"}, at, "of a function_call_output item");
            const json* output = field(item, "output");
            if (!output) bad(at + ".output", "'" + at + ".output' is missing", "missing_field");
            messages.push_back({{"role", "tool"},
                                {"tool_call_id", string_field(item, "call_id", at)},
                                {"content", content_text(*output, at + ".output")}});
        } else if (type == "item_reference") {
            unsupported(at + ".type", "is \"item_reference\": an item stored by an earlier request (send the item itself)");
        } else {
            bad(at + ".type", "'" + at + ".type' is \"" + type +
                                  "\": give message, function_call or function_call_output items");
        }
    }
    return messages;
}

// tools in the Responses API's flat shape, as chat's {type, function: {...}}.
json chat_tools(const json& tools) {
    if (!tools.is_array()) wrong_type("tools", "an array", tools);
    json out = json::array();
    for (size_t i = 0; i < tools.size(); ++i) {
        const json& t = tools[i];
        const std::string at = "tools[" + std::to_string(i) + "]";
        if (!t.is_object()) wrong_type(at, "an object", t);
        const std::string type = string_field(t, "type", at).get<std::string>();
        if (type != "function")
            unsupported(at + ".type", "is \"" + type + "\": a built-in tool (give function tools)");
        only_fields(t, {"type", "name", "description", "parameters", "strict"}, at, "of a function tool");
        json function = json::object();
        for (const char* key : {"name", "description", "parameters", "strict"})
            if (const json* v = field(t, key)) function[key] = *v;
        out.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    return out;
}

// tool_choice: "none", "auto", "required" or {type: function, name}.
json chat_tool_choice(const json& choice) {
    if (choice.is_string()) return choice;
    if (!choice.is_object()) wrong_type("tool_choice", "a string or an object", choice);
    const std::string type = string_field(choice, "type", "tool_choice").get<std::string>();
    if (type != "function")
        unsupported("tool_choice.type", "is \"" + type + "\": a tool choice other than none, auto, required or one function");
    only_fields(choice, {"type", "name"}, "tool_choice", "of tool_choice");
    return {{"type", "function"}, {"function", {{"name", string_field(choice, "name", "tool_choice")}}}};
}

// text: {format, verbosity}; format {type: text | json_object | json_schema, ...} as response_format.
json chat_response_format(const json& text) {
    if (!text.is_object()) wrong_type("text", "an object", text);
    only_fields(text, {"format", "verbosity"}, "text", "of text");
    if (const json* verbosity = field(text, "verbosity"); verbosity && *verbosity != "medium")
        unsupported("text.verbosity", "is " + verbosity->dump() + ": a verbosity other than the default, medium");
    const json* format = field(text, "format");
    if (!format) return nullptr;
    if (!format->is_object()) wrong_type("text.format", "an object", *format);
    const std::string type = string_field(*format, "type", "text.format").get<std::string>();
    if (type == "text" || type == "json_object") {
        only_fields(*format, {"type"}, "text.format", "of text.format");
        return {{"type", type}};
    }
    if (type != "json_schema")
        bad("text.format.type", "'text.format.type' is \"" + type + "\": give text, json_object or json_schema");
    only_fields(*format, {"type", "name", "schema", "description", "strict"}, "text.format", "of text.format");
    string_field(*format, "name", "text.format");
    json schema = {{"type", "json_schema"}, {"json_schema", json::object()}};
    for (const char* key : {"name", "schema", "description", "strict"})
        if (const json* v = field(*format, key)) schema["json_schema"][key] = *v;
    return schema;
}

// The fields of the Responses API that need state kept between requests, or that this server does
// not do; each refused unless its value asks for nothing (the why is in the message).
void check_refused_fields(const json& body) {
    for (const char* key : {"previous_response_id", "conversation", "prompt", "context_management"})
        if (field(body, key)) unsupported(key, "is set: it needs what an earlier request stored (this server keeps no state between requests)");
    if (const json* v = field(body, "background"); v && *v != false)
        unsupported("background", "is " + v->dump() + ": a response that runs on after its request returns");
    if (const json* v = field(body, "truncation"); v && *v != "disabled")
        unsupported("truncation", "is " + v->dump() + ": input too long for the context cut to fit (it is refused instead)");
    if (const json* v = field(body, "top_logprobs"); v && *v != 0)
        unsupported("top_logprobs", "is " + v->dump() + ": log-probabilities in a response (/v1/chat/completions gives them)");
    if (const json* v = field(body, "include")) {
        if (!v->is_array()) wrong_type("include", "an array", *v);
        if (!v->empty()) unsupported("include[0]", "is " + (*v)[0].dump() + ": extra output in a response");
    }
    if (const json* v = field(body, "reasoning")) {
        if (!v->is_object()) wrong_type("reasoning", "an object", *v);
        for (const auto& [key, value] : v->items())
            if (!value.is_null()) unsupported("reasoning." + key, "is set: reasoning apart from the answer");
    }
}

// The chat completion's errors name its fields; a Responses client sent these instead.
ApiError renamed(const ApiError& e) {
    static const std::pair<std::regex, const char*> kRenames[] = {
        {std::regex(R"(tools\[(\d+)\]\.function\.)"), "tools[$1]."},
        {std::regex(R"(tool_choice\.function\.name)"), "tool_choice.name"},
        {std::regex(R"(response_format\.json_schema\.)"), "text.format."},
        {std::regex(R"(response_format)"), "text.format"},
        {std::regex(R"(max_completion_tokens|max_tokens)"), "max_output_tokens"},
        {std::regex(R"(\bmessages\b)"), "input"},
        {std::regex(R"(or a grammar \('text.format' json, 'grammar'\))"), "or a JSON 'text.format'"},
    };
    std::string message = e.what(), param = e.param();
    for (const auto& [from, to] : kRenames) {
        message = std::regex_replace(message, from, to);
        param = std::regex_replace(param, from, to);
    }
    return ApiError(e.status(), e.code(), message, param);
}

}  // namespace

json responses_chat_body(const json& body) {
    // Honoured: mapped below. Without effect: OpenAI's bookkeeping, as for chat (api_request.cpp),
    // passed on so chat's checks see them.
    static constexpr std::string_view kMapped[] = {"model", "input", "instructions", "max_output_tokens", "temperature",
                                                   "top_p", "tools", "tool_choice", "parallel_tool_calls", "text",
                                                   "stream", "stream_options"};
    static constexpr std::string_view kPassed[] = {"store", "user", "safety_identifier", "prompt_cache_key",
                                                   "service_tier", "metadata"};
    static constexpr std::string_view kChecked[] = {"previous_response_id", "conversation", "prompt",
                                                    "context_management", "background", "truncation",
                                                    "top_logprobs", "include", "reasoning"};
    json chat = json::object();
    for (const auto& [key, value] : body.items()) {
        if (value.is_null() || listed(kMapped, key) || listed(kChecked, key)) continue;
        if (listed(kPassed, key)) {
            chat[key] = value;
        } else if (key == "prompt_cache_retention") {  // how long OpenAI keeps its prompt cache
            if (!value.is_string()) wrong_type(key, "a string", value);
        } else {
            unknown_field(key, "of /v1/responses");
        }
    }
    check_refused_fields(body);
    chat["messages"] = input_messages(body);
    for (const char* key : {"model", "temperature", "top_p", "parallel_tool_calls", "stream"})
        if (const json* v = field(body, key)) chat[key] = *v;
    if (const json* v = field(body, "max_output_tokens")) chat["max_tokens"] = *v;
    if (const json* v = field(body, "tools")) chat["tools"] = chat_tools(*v);
    if (const json* v = field(body, "tool_choice")) chat["tool_choice"] = chat_tool_choice(*v);
    if (const json* v = field(body, "text"))
        if (json format = chat_response_format(*v); !format.is_null()) chat["response_format"] = std::move(format);
    if (const json* v = field(body, "stream_options")) {  // include_obfuscation: padding, nothing to pad here
        if (!v->is_object()) wrong_type("stream_options", "an object", *v);
        only_fields(*v, {"include_obfuscation"}, "stream_options", "of stream_options");
    }
    return chat;
}

ResponsesRequest parse_responses_request(const std::string& body) {
    return parse_responses_request(parse_json_object(body));
}

ResponsesRequest parse_responses_request(const json& body) {
    ResponsesRequest r;
    const json chat = responses_chat_body(body);
    try {
        r.chat = parse_completion_request(chat, /*chat=*/true);
    } catch (const ApiError& e) {
        throw renamed(e);
    }
    const json* text = field(body, "text");
    const json* text_format = text ? field(*text, "format") : nullptr;
    // A float setting as the client wrote it (0.8, not 0.800000011920929).
    auto as_given = [](float x) { return std::round(double(x) * 1e6) / 1e6; };
    auto given = [&](const char* key, json fallback) {
        const json* v = field(body, key);
        return v ? *v : fallback;
    };
    r.echoed = {{"instructions", given("instructions", nullptr)},
                {"max_output_tokens", given("max_output_tokens", nullptr)},
                {"tools", given("tools", json::array())},
                {"tool_choice", given("tool_choice", "auto")},
                {"parallel_tool_calls", r.chat.parallel_tool_calls},
                {"text", {{"format", text_format ? *text_format : json{{"type", "text"}}}}},
                {"metadata", given("metadata", json::object())},
                {"temperature", as_given(r.chat.sampling.temperature)},
                {"top_p", as_given(r.chat.sampling.top_p)}};
    return r;
}

}  // namespace graphrun::server
