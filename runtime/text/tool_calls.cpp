// runtime/text/tool_calls.cpp — see tool_calls.h.
#include "runtime/text/tool_calls.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "runtime/text/json_schema.h"

namespace graphrun {

namespace {

using json = nlohmann::ordered_json;  // keys in the order given, as the templates' tojson keeps them

constexpr std::string_view kCallOpen = "<tool_call>";
constexpr std::string_view kCallClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";  // Llama 3.x may open a call with it

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// JSON as Python's json.dumps (and Jinja's tojson) writes it: ", " and ": " between items.
std::string spaced(const json& v) {
    if (v.is_object()) {
        std::string out = "{";
        for (auto it = v.begin(); it != v.end(); ++it)
            out += (it == v.begin() ? "" : ", ") + json(it.key()).dump() + ": " + spaced(it.value());
        return out + "}";
    }
    if (v.is_array()) {
        std::string out = "[";
        for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + spaced(v[i]);
        return out + "]";
    }
    return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parameters_of(const ChatTool& t) {
    return t.parameters.empty() ? json{{"type", "object"}, {"properties", json::object()}} : json::parse(t.parameters);
}

// OpenAI's tool object, as the templates show it to the model.
json tool_json(const ChatTool& t) {
    json f = {{"name", t.name}};
    if (!t.description.empty()) f["description"] = t.description;
    f["parameters"] = parameters_of(t);
    return {{"type", "function"}, {"function", f}};
}

std::string call_text(ToolCallStyle style, const ChatToolCall& c) {
    const std::string args = c.arguments.empty() ? "{}" : c.arguments;
    const std::string name = json(c.name).dump(-1, ' ', false, json::error_handler_t::replace);
    switch (style) {
        case ToolCallStyle::Hermes:
            return std::string(kCallOpen) + "\n{\"name\": " + name + ", \"arguments\": " + args + "}\n" +
                   std::string(kCallClose);
        case ToolCallStyle::Llama3:
            return "{\"name\": " + name + ", \"parameters\": " + args + "}";
        case ToolCallStyle::OneLine:
            break;
    }
    return std::string(kCallOpen) + "{\"name\": " + name + ", \"arguments\": " + args + "}" + std::string(kCallClose);
}

const char* call_separator(ToolCallStyle style) { return style == ToolCallStyle::OneLine ? " " : "\n"; }

std::string tools_section(ToolCallStyle style, std::span<const ChatTool> tools) {
    std::string s;
    switch (style) {
        case ToolCallStyle::Hermes:
            s = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
            for (const ChatTool& t : tools) s += "\n" + spaced(tool_json(t));
            return s + "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                       "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                       "\"arguments\": <args-json-object>}\n</tool_call>";
        case ToolCallStyle::Llama3:
            s = "Given the following functions, please respond with a JSON for a function call with its proper "
                "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
                "\"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n";
            for (const ChatTool& t : tools) s += tool_json(t).dump(4) + "\n\n";
            return s;
        case ToolCallStyle::OneLine:
            break;
    }
    s = "You can call these functions:";
    for (const ChatTool& t : tools) s += "\n" + spaced(tool_json(t)["function"]);
    return s + "\nTo call one, answer with one line: <tool_call>{\"name\": NAME, \"arguments\": {...}}</tool_call>";
}

// The end of the JSON object that starts at s[0] ('{'), strings and escapes respected; npos when
// it does not close.
size_t object_end(std::string_view s) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
        }
    }
    return std::string_view::npos;
}

// The call in the object text `s`: {"name": one of tools, "arguments"/"parameters": an object (or
// JSON text of one)}; false when it is not one.
bool read_call(std::string_view s, std::span<const ChatTool> tools, const char* args_key, ChatToolCall& out) {
    json v = json::parse(s, nullptr, /*allow_exceptions=*/false);
    if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) return false;
    const std::string name = v["name"];
    if (std::none_of(tools.begin(), tools.end(), [&](const ChatTool& t) { return t.name == name; })) return false;
    json args = json::object();
    for (const char* key : {args_key, "arguments", "parameters"})
        if (v.contains(key)) {
            args = v[key];
            break;
        }
    if (args.is_string()) args = json::parse(args.get<std::string>(), nullptr, false);
    if (!args.is_object()) return false;
    out = {"", name, args.dump(-1, ' ', false, json::error_handler_t::replace)};
    return true;
}

}  // namespace

ToolCallStyle tool_call_style(ChatFormat format) {
    if (format == ChatFormat::ChatMl) return ToolCallStyle::Hermes;
    if (format == ChatFormat::Llama3) return ToolCallStyle::Llama3;
    return ToolCallStyle::OneLine;
}

std::vector<ChatMessage> tool_turns(ChatFormat format, std::span<const ChatMessage> messages,
                                    std::span<const ChatTool> tools) {
    const ToolCallStyle style = tool_call_style(format);
    std::vector<ChatMessage> out;
    if (!tools.empty()) {
        const bool has_system = !messages.empty() && messages[0].role == "system";
        std::string system = has_system ? messages[0].content : "";
        if (style == ToolCallStyle::Llama3)
            system = "Environment: ipython" + (system.empty() ? "" : "\n\n" + system);
        else
            system += (system.empty() ? "" : "\n\n") + tools_section(style, tools);
        out.push_back({"system", system});
        messages = messages.subspan(has_system ? 1 : 0);
    }
    bool tools_told = style != ToolCallStyle::Llama3 || tools.empty();
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "tool") {
            if (style == ToolCallStyle::Llama3) {
                out.push_back({"ipython", m.content});
                continue;
            }
            // Consecutive results (parallel calls) are one user turn, so every template keeps its
            // alternation of user and assistant.
            const std::string wrapped = style == ToolCallStyle::Hermes
                                            ? "<tool_response>\n" + m.content + "\n</tool_response>"
                                            : "<tool_response>" + m.content + "</tool_response>";
            if (i > 0 && messages[i - 1].role == "tool")
                out.back().content += "\n" + wrapped;
            else
                out.push_back({"user", wrapped});
            continue;
        }
        ChatMessage plain{m.role, m.content};
        if (!tools_told && m.role == "user") {  // Llama 3.1 tells the tools in the first user turn
            plain.content = tools_section(style, tools) + m.content;
            tools_told = true;
        }
        // The calls follow what the assistant said.
        for (const ChatToolCall& c : m.tool_calls)
            plain.content += (plain.content.empty() ? "" : call_separator(style)) + call_text(style, c);
        out.push_back(std::move(plain));
    }
    return out;
}

ToolCallReply parse_tool_calls(ChatFormat format, std::string_view reply, std::span<const ChatTool> tools,
                               size_t max_calls) {
    const ToolCallStyle style = tool_call_style(format);
    ToolCallReply r;
    if (style == ToolCallStyle::Llama3) {
        // The whole reply is the calls: JSON objects, one after another (whitespace or ';' between).
        std::string_view rest = trim(reply);
        if (rest.substr(0, kPythonTag.size()) == kPythonTag) rest = trim(rest.substr(kPythonTag.size()));
        while (!rest.empty() && rest[0] == '{' && r.calls.size() < max_calls) {
            const size_t end = object_end(rest);
            ChatToolCall c;
            if (end == std::string_view::npos || !read_call(rest.substr(0, end), tools, "parameters", c)) break;
            r.calls.push_back(std::move(c));
            rest = rest.substr(end);
            while (!rest.empty() && (is_space(rest[0]) || rest[0] == ';')) rest.remove_prefix(1);
        }
        if (r.calls.empty()) r.content = std::string(reply);
        return r;
    }
    size_t first = std::string_view::npos;
    for (size_t at = reply.find(kCallOpen); at != std::string_view::npos && r.calls.size() < max_calls;
         at = reply.find(kCallOpen, at + 1)) {
        std::string_view body = reply.substr(at + kCallOpen.size());
        while (!body.empty() && is_space(body[0])) body.remove_prefix(1);
        const size_t end = body.empty() || body[0] != '{' ? std::string_view::npos : object_end(body);
        ChatToolCall c;
        if (end == std::string_view::npos || !read_call(body.substr(0, end), tools, "arguments", c)) continue;
        const std::string_view after = trim(body.substr(end));
        if (!after.empty() && after.substr(0, kCallClose.size()) != kCallClose) continue;
        if (first == std::string_view::npos) first = at;
        r.calls.push_back(std::move(c));
    }
    r.content = std::string(r.calls.empty() ? reply : trim(reply.substr(0, first)));
    return r;
}

std::string tool_call_gbnf(ChatFormat format, std::span<const ChatTool> tools, size_t max_calls) {
    const ToolCallStyle style = tool_call_style(format);
    std::string calls, rules;
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string rule = "tool" + std::to_string(i);
        rules += json_schema_rules_gbnf(parameters_of(tools[i]).dump(), rule + "-args");
        // The call's text around its arguments, split where they go.
        const std::string text = call_text(style, {"", tools[i].name, "\x01"});
        const size_t cut = text.find('\x01');
        rules += rule + " ::= " + json(text.substr(0, cut)).dump() + " " + rule + "-args " +
                 json(text.substr(cut + 1)).dump() + "\n";
        calls += (i ? " | " : "") + rule;
    }
    std::string root = "root ::= call";
    if (max_calls > 1)
        root += " (" + json(call_separator(style)).dump() + " call){0," + std::to_string(max_calls - 1) + "}";
    return root + "\ncall ::= " + calls + "\n" + rules + json_primitives_gbnf(/*compact=*/true);
}

std::string ToolCallStream::push(std::string_view text) {
    reply_ += text;
    if (holding_) return "";
    size_t end = reply_.size();
    if (tool_call_style(format_) == ToolCallStyle::Llama3) {
        // A reply that begins with an object (or the python tag) may be a call: hold it all.
        const std::string_view lead = trim(reply_);
        const bool may_call = lead.empty() || lead[0] == '{' ||
                              kPythonTag.substr(0, std::min(lead.size(), kPythonTag.size())) ==
                                  lead.substr(0, std::min(lead.size(), kPythonTag.size()));
        if (may_call) {
            holding_ = !lead.empty();
            return "";
        }
    } else if (const size_t at = reply_.find(kCallOpen, shown_); at != std::string::npos) {
        end = at;
        holding_ = true;
    } else {  // hold a tail that may begin the marker
        for (size_t keep = std::min(kCallOpen.size() - 1, end - shown_); keep > 0; --keep)
            if (reply_.compare(end - keep, keep, kCallOpen, 0, keep) == 0) {
                end -= keep;
                break;
            }
    }
    std::string out = reply_.substr(shown_, end - shown_);
    shown_ = end;
    return out;
}

ToolCallReply ToolCallStream::finish() {
    ToolCallReply r = parse_tool_calls(format_, reply_, tools_, max_calls_);
    if (r.calls.empty()) {
        r.content = reply_.substr(shown_);
    } else {
        // The content before the calls, less what was shown of it already.
        const size_t end = tool_call_style(format_) == ToolCallStyle::Llama3 ? 0 : reply_.find(kCallOpen);
        r.content = shown_ < end ? std::string(reply_.substr(shown_, end - shown_)) : "";
        while (!r.content.empty() && is_space(r.content.back())) r.content.pop_back();
    }
    shown_ = reply_.size();
    return r;
}

}  // namespace graphrun
