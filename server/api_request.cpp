// server/api_request.cpp — see api_request.h.
#include "server/api_request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>
#include <tuple>

#include <nlohmann/json.hpp>

#include "runtime/json_depth.h"
#include "graph/limits.h"
#include "engine/prompt_lookup.h"
#include "runtime/text/json_schema.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace graphrun::server {

using nlohmann::json;
using namespace request_fields;

namespace {

double get_number(const json& body, const char* name, double fallback, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) wrong_type(name, "a number", *v);
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
        bad(name, "'" + std::string(name) + "' must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " +
            v->dump());
    return x;
}

int64_t get_integer(const json& body, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    // 3.0 is an integer to JavaScript clients; 3.5 is not.
    if (!v->is_number() || (v->is_number_float() && v->get<double>() != std::floor(v->get<double>())))
        wrong_type(name, "an integer", *v);
    const double x = v->get<double>();
    if (!(x >= double(lo) && x <= double(hi)))
        bad(name, "'" + std::string(name) + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
            "], got " + v->dump());
    return v->is_number_unsigned() ? int64_t(v->get<uint64_t>()) : v->get<int64_t>();
}

bool get_bool(const json& body, const char* name, bool fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
    return v->get<bool>();
}

std::vector<std::string> get_stop(const json& body) {
    const json* v = field(body, "stop");
    if (!v) return {};
    std::vector<std::string> stop;
    if (v->is_string()) {
        stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
        for (size_t i = 0; i < v->size(); ++i) {
            if (!(*v)[i].is_string()) wrong_type("stop[" + std::to_string(i) + "]", "a string", (*v)[i]);
            stop.push_back((*v)[i].get<std::string>());
        }
    } else {
        wrong_type("stop", "a string or an array of strings", *v);
    }
    if (stop.size() > kMaxStopStrings)
        bad("stop", "'stop' holds " + std::to_string(stop.size()) + " strings, at most " + std::to_string(kMaxStopStrings));
    for (size_t i = 0; i < stop.size(); ++i)
        if (stop[i].empty()) bad("stop[" + std::to_string(i) + "]", "'stop[" + std::to_string(i) + "]' is empty");
    return stop;
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
std::string message_content(const json& content, const std::string& where) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) wrong_type(where, "a string or an array of text parts", content);
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string at = where + "[" + std::to_string(i) + "]";
        if (!part.is_object()) wrong_type(at, "an object", part);
        const json* type = field(part, "type");
        if (!type || !type->is_string() || type->get<std::string>() != "text")
            bad(at + ".type", "'" + at + ".type' must be \"text\" (this model reads text only)");
        const json* t = field(part, "text");
        if (!t || !t->is_string()) bad(at + ".text", "'" + at + ".text' must be a string", "invalid_type");
        text += t->get<std::string>();
    }
    return text;
}

// Each field of a message is honoured, accepted without effect (`name`, `refusal`, `annotations`:
// no chat template graphrun renders shows them) or refused.
void check_message_fields(const json& m, const std::string& at) {
    for (const auto& [key, value] : m.items()) {
        if (value.is_null() || key == "role" || key == "content") continue;
        const std::string name = at + "." + key;
        if (key == "name" || key == "refusal") {
            if (!value.is_string()) wrong_type(name, "a string", value);
        } else if (key == "annotations") {
            if (!value.is_array()) wrong_type(name, "an array", value);
        } else if (key == "tool_calls" || key == "tool_call_id") {
            continue;  // read by get_messages
        } else {
            unknown_field(name, "of a message");
        }
    }
}

// logit_bias: {"token id": bias}, the ids as decimal strings (JSON keys), biases in [-100, 100]
// added to the logits before sampling. Ids are held to the vocabulary where it is known
// (CompletionRun); here only their form.
std::vector<LogitBias> get_logit_bias(const json& body) {
    const json* v = field(body, "logit_bias");
    if (!v) return {};
    if (!v->is_object()) wrong_type("logit_bias", "an object of token ids (as strings) to biases", *v);
    std::vector<LogitBias> biases;
    for (const auto& [key, value] : v->items()) {
        const std::string at = "logit_bias[\"" + (key.size() > 32 ? key.substr(0, 32) + "..." : key) + "\"]";
        const bool digits = !key.empty() && key.size() <= 10 &&
                            std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || std::stoll(key) > std::numeric_limits<int32_t>::max())
            bad("logit_bias", "'logit_bias' keys are token ids in decimal; " + at + " is not one");
        if (!value.is_number()) wrong_type(at, "a number", value);
        const double bias = value.get<double>();
        if (!(bias >= -100 && bias <= 100))
            bad("logit_bias", "'" + at + "' must be in [-100, 100], got " + value.dump());
        biases.push_back({int32_t(std::stoll(key)), float(bias)});
    }
    return biases;
}

// Fields accepted without effect on the answer (docs/server.md says why each), and the fields of
// OpenAI's API graphrun refuses unless their value asks for what it does anyway; then any field
// left is unknown and refused. A null field is an absent one.
// response_format (OpenAI's) or grammar (llama-server's GBNF text): the grammar the output keeps to,
// null for none. A bad schema or grammar is a 400 naming the field; the message names the keyword and
// its path in the schema, or the line and column in the grammar.
std::shared_ptr<const Grammar> get_grammar(const json& body) {
    std::string gbnf, param;
    if (const json* rf = field(body, "response_format")) {
        const json* type = rf->is_object() ? field(*rf, "type") : nullptr;
        if (!type || !type->is_string())
            bad("response_format", "'response_format' must be an object with a 'type' string", "invalid_type");
        for (const auto& [key, value] : rf->items())
            if (key != "type" && key != "json_schema" && !value.is_null())
                unknown_field("response_format." + key, "of response_format");
        const std::string t = type->get<std::string>();
        if (t == "json_object") {
            gbnf = json_object_gbnf();
            param = "response_format";
        } else if (t == "json_schema") {
            const json* js = field(*rf, "json_schema");
            if (!js || !js->is_object())
                bad("response_format.json_schema", "'response_format.json_schema' must be an object", "invalid_type");
            for (const auto& [key, value] : js->items()) {
                if (value.is_null()) continue;
                if (key == "name" || key == "description") {
                    if (!value.is_string()) wrong_type("response_format.json_schema." + key, "a string", value);
                } else if (key == "strict") {  // every schema is enforced strictly (docs/grammars.md)
                    if (!value.is_boolean()) wrong_type("response_format.json_schema.strict", "a boolean", value);
                } else if (key != "schema") {
                    unknown_field("response_format.json_schema." + key, "of response_format.json_schema");
                }
            }
            const json* schema = field(*js, "schema");
            if (!schema || !(schema->is_object() || schema->is_boolean()))
                bad("response_format.json_schema.schema", "'response_format.json_schema.schema' must be a JSON schema (an object)",
                    "invalid_type");
            param = "response_format.json_schema.schema";
            try {
                gbnf = json_schema_to_gbnf(schema->dump());
            } catch (const JsonSchemaError& e) {
                bad(param, "'" + param + "' is refused: " + e.what());
            }
        } else if (t != "text") {
            bad("response_format.type", "'response_format.type' is " + type->dump() + ": give text, json_object or json_schema");
        }
    }
    if (const json* g = field(body, "grammar")) {
        if (!g->is_string()) wrong_type("grammar", "a string (GBNF)", *g);
        if (!gbnf.empty()) bad("grammar", "give either 'grammar' or a JSON 'response_format', not both");
        gbnf = g->get<std::string>();
        param = "grammar";
        if (gbnf.empty()) return nullptr;
    }
    if (gbnf.empty()) return nullptr;
    try {
        return std::make_shared<const Grammar>(grammar_parse(gbnf));
    } catch (const GrammarError& e) {
        bad(param, "'" + param + "' is refused: " + e.what());
    }
}

void check_other_fields(const json& body, bool chat) {
    // Honoured: read by parse_completion_request.
    static constexpr std::string_view kHonoured[] = {
        "model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
        "repeat_penalty", "seed", "stop", "stream", "stream_options", "logprobs", "logit_bias", "n",
        "response_format", "grammar", "speculative.type", "speculative.n_max", "speculative.n_min",
        "speculative.ngram"};
    // echo: the prompt's text and log-probabilities first (max_tokens 0: only those, lm-eval's loglikelihood).
    static constexpr std::string_view kHonouredChat[] = {"messages", "max_completion_tokens", "top_logprobs", "tools",
                                                         "tool_choice", "parallel_tool_calls"};
    static constexpr std::string_view kHonouredCompletions[] = {"prompt", "echo"};
    static constexpr std::string_view kNoEffectStrings[] = {"user", "safety_identifier", "prompt_cache_key",
                                                            "service_tier"};
    for (const auto& [key, value] : body.items()) {
        if (value.is_null() || listed(kHonoured, key) ||
            (chat ? listed(kHonouredChat, key) : listed(kHonouredCompletions, key)))
            continue;
        // Without effect: identifiers and hints for OpenAI's own bookkeeping, billing and caching.
        if (listed(kNoEffectStrings, key)) {
            if (!value.is_string()) wrong_type(key, "a string", value);
        } else if (key == "metadata") {
            if (!value.is_object()) wrong_type(key, "an object", value);
        } else if (key == "store") {
            if (!value.is_boolean()) wrong_type(key, "a boolean", value);
            if (value.get<bool>()) unsupported(key, "is true: it asks for the answer to be kept for later retrieval");
        } else if (chat && key == "functions") {  // OpenAI's deprecated form of tools
            if (!value.is_array()) wrong_type(key, "an array", value);
            if (!value.empty()) unsupported(key, "holds " + std::to_string(value.size()) + " functions (give them as 'tools')");
        } else if (chat && key == "function_call") {
            const bool no_call = value.is_string() && (value.get<std::string>() == "none" ||
                                                       value.get<std::string>() == "auto");
            if (!no_call) unsupported(key, "is " + value.dump() + " (give 'tool_choice')");
        } else if (chat && key == "modalities") {
            if (!value.is_array()) wrong_type(key, "an array", value);
            for (const json& m : value)
                if (m != "text") unsupported(key, "asks for " + m.dump() + " output: this server answers text");
        } else if (chat && key == "audio") {
            unsupported(key, "asks for audio output");
        } else if (!chat && key == "best_of") {
            if (get_integer(body, "best_of", 1, 1, std::numeric_limits<int32_t>::max()) != 1)
                unsupported(key, "is " + value.dump() + ": candidates beyond the n returned");
            if (const json* n = field(body, "n"); n && n->is_number() && n->get<double>() > 1)
                bad(key, "'best_of' is 1, fewer than 'n' (" + n->dump() + "): best_of must be at least n");
        } else if (!chat && key == "suffix") {
            if (!value.is_string()) wrong_type(key, "a string", value);
            if (!value.get<std::string>().empty()) unsupported(key, "is set: text inserted before a suffix");
        } else {
            unknown_field(key, chat ? "of /v1/chat/completions" : "of /v1/completions");
        }
    }
}

// A tool call of an assistant message. `arguments` is OpenAI's JSON text, kept as it came (it is not
// parsed: it can be anything); the chat template writes it in its tool format (tool_calls.h).
ChatToolCall read_tool_call(const json& call, const std::string& at) {
    if (!call.is_object()) wrong_type(at, "an object", call);
    for (const auto& [key, value] : call.items())
        if (!value.is_null() && key != "id" && key != "type" && key != "function")
            unknown_field(at + "." + key, "of a tool call");
    if (const json* type = field(call, "type"); type && *type != "function")
        bad(at + ".type", "'" + at + ".type' must be \"function\", got " + type->dump());
    ChatToolCall out;
    if (const json* id = field(call, "id")) {
        if (!id->is_string()) wrong_type(at + ".id", "a string", *id);
        out.id = id->get<std::string>();
    }
    const json* function = field(call, "function");
    if (!function) bad(at + ".function", "'" + at + ".function' is missing", "missing_field");
    if (!function->is_object()) wrong_type(at + ".function", "an object", *function);
    for (const auto& [key, value] : function->items())
        if (!value.is_null() && key != "name" && key != "arguments")
            unknown_field(at + ".function." + key, "of a function call");
    const json* name = field(*function, "name");
    if (!name) bad(at + ".function.name", "'" + at + ".function.name' is missing", "missing_field");
    if (!name->is_string()) wrong_type(at + ".function.name", "a string", *name);
    out.name = name->get<std::string>();
    out.arguments = "{}";
    if (const json* args = field(*function, "arguments")) {
        if (!args->is_string()) wrong_type(at + ".function.arguments", "a string (JSON text)", *args);
        out.arguments = args->get<std::string>();
    }
    return out;
}

// tools: [{"type": "function", "function": {"name", "description", "parameters", "strict"}}]. A name
// is 1-64 of [a-zA-Z0-9_-] (OpenAI's rule) and unique; parameters is a JSON schema the converter takes
// (json_schema.h), since a required call is constrained by it; strict is accepted (every constrained
// call keeps to its schema).
std::vector<ChatTool> get_tools(const json& body) {
    const json* v = field(body, "tools");
    if (!v) return {};
    if (!v->is_array()) wrong_type("tools", "an array", *v);
    if (v->size() > kMaxTools)
        bad("tools", "'tools' holds " + std::to_string(v->size()) + " tools, at most " + std::to_string(kMaxTools));
    std::vector<ChatTool> tools;
    for (size_t i = 0; i < v->size(); ++i) {
        const json& t = (*v)[i];
        const std::string at = "tools[" + std::to_string(i) + "]";
        if (!t.is_object()) wrong_type(at, "an object", t);
        for (const auto& [key, value] : t.items())
            if (!value.is_null() && key != "type" && key != "function") unknown_field(at + "." + key, "of a tool");
        const json* type = field(t, "type");
        if (!type || *type != "function")
            bad(at + ".type", "'" + at + ".type' must be \"function\" (the only kind of tool graphrun serves)");
        const json* f = field(t, "function");
        if (!f) bad(at + ".function", "'" + at + ".function' is missing", "missing_field");
        if (!f->is_object()) wrong_type(at + ".function", "an object", *f);
        ChatTool tool;
        for (const auto& [key, value] : f->items()) {
            if (value.is_null()) continue;
            const std::string name = at + ".function." + key;
            if (key == "name" || key == "description") {
                if (!value.is_string()) wrong_type(name, "a string", value);
            } else if (key == "strict") {
                if (!value.is_boolean()) wrong_type(name, "a boolean", value);
            } else if (key == "parameters") {
                if (!value.is_object()) wrong_type(name, "an object (a JSON schema)", value);
                try {
                    (void)json_schema_to_gbnf(value.dump());
                } catch (const JsonSchemaError& e) {
                    bad(name, "'" + name + "' is refused: " + e.what());
                }
                tool.parameters = value.dump();
            } else {
                unknown_field(name, "of a function");
            }
        }
        const json* name = field(*f, "name");
        if (!name) bad(at + ".function.name", "'" + at + ".function.name' is missing", "missing_field");
        tool.name = name->get<std::string>();
        const bool well_named = !tool.name.empty() && tool.name.size() <= 64 &&
                                std::all_of(tool.name.begin(), tool.name.end(), [](char c) {
                                    return std::isalnum(uint8_t(c)) || c == '_' || c == '-';
                                });
        if (!well_named)
            bad(at + ".function.name", "'" + at + ".function.name' must be 1 to 64 letters, digits, '_' or '-', got " +
                                           name->dump());
        for (size_t j = 0; j < tools.size(); ++j)
            if (tools[j].name == tool.name)
                bad(at + ".function.name", "'" + at + ".function.name' is \"" + tool.name + "\", as tools[" +
                                               std::to_string(j) + "] is: names must differ");
        if (const json* d = field(*f, "description")) tool.description = d->get<std::string>();
        tools.push_back(std::move(tool));
    }
    return tools;
}

// tool_choice: "none" (the tools are not shown, nothing is called), "auto" (the default: the reply
// is read for calls), "required" (a call of some tool, constrained), or {"type": "function",
// "function": {"name": N}} (a call of N, constrained).
void get_tool_choice(const json& body, CompletionRequest& r) {
    r.parallel_tool_calls = get_bool(body, "parallel_tool_calls", true);
    const json* v = field(body, "tool_choice");
    if (!v) return;
    if (v->is_string()) {
        const std::string c = v->get<std::string>();
        if (c == "none") {
            r.tools.clear();
        } else if (c == "required") {
            if (r.tools.empty()) bad("tool_choice", "'tool_choice' is \"required\" but 'tools' is empty");
            r.tool_required = true;
        } else if (c != "auto") {
            bad("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a function, got " + v->dump());
        }
        return;
    }
    if (!v->is_object()) wrong_type("tool_choice", "a string or an object", *v);
    for (const auto& [key, value] : v->items())
        if (!value.is_null() && key != "type" && key != "function")
            unknown_field("tool_choice." + key, "of tool_choice");
    const json* type = field(*v, "type");
    if (!type || *type != "function")
        bad("tool_choice.type", "'tool_choice.type' must be \"function\" (allowed_tools and custom are not served)");
    const json* f = field(*v, "function");
    if (!f || !f->is_object()) bad("tool_choice.function", "'tool_choice.function' must be an object", "invalid_type");
    const json* name = field(*f, "name");
    if (!name || !name->is_string())
        bad("tool_choice.function.name", "'tool_choice.function.name' must be a string", "invalid_type");
    const auto it = std::find_if(r.tools.begin(), r.tools.end(), [&](const ChatTool& t) { return t.name == *name; });
    if (it == r.tools.end())
        bad("tool_choice.function.name", "'tool_choice.function.name' is " + name->dump() + ", which 'tools' does not hold");
    r.tools = {*it};
    r.tool_required = true;
}

std::vector<ChatMessage> get_messages(const json& body) {
    const json* v = field(body, "messages");
    if (!v) bad("messages", "'messages' is missing: a chat completion needs at least one message", "missing_field");
    if (!v->is_array()) wrong_type("messages", "an array", *v);
    if (v->empty()) bad("messages", "'messages' is empty: a chat completion needs at least one message");
    std::vector<ChatMessage> messages;
    for (size_t i = 0; i < v->size(); ++i) {
        const json& m = (*v)[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) wrong_type(at, "an object", m);
        const json* role = field(m, "role");
        if (!role) bad(at + ".role", "'" + at + ".role' is missing", "missing_field");
        if (!role->is_string()) wrong_type(at + ".role", "a string", *role);
        const std::string r = role->get<std::string>();
        if (r != "system" && r != "user" && r != "assistant" && r != "developer" && r != "tool")
            bad(at + ".role",
                "'" + at + ".role' must be system, developer, user, assistant or tool, got \"" + r + "\"");
        check_message_fields(m, at);
        const json* content = field(m, "content");
        const json* calls = field(m, "tool_calls");
        if (calls && r != "assistant")
            bad(at + ".tool_calls", "'" + at + ".tool_calls' is for assistant messages, this one is " + r);
        if (calls && !calls->is_array()) wrong_type(at + ".tool_calls", "an array", *calls);
        const bool has_calls = calls && !calls->empty();
        // An assistant message that calls tools may have no content (OpenAI sends null).
        if (!content && !has_calls) bad(at + ".content", "'" + at + ".content' is missing", "missing_field");
        std::string text = content ? message_content(*content, at + ".content") : std::string();
        if (r == "tool") {
            const json* id = field(m, "tool_call_id");
            if (!id)
                bad(at + ".tool_call_id", "'" + at + ".tool_call_id' is missing: a tool message answers a call",
                    "missing_field");
            if (!id->is_string()) wrong_type(at + ".tool_call_id", "a string", *id);
            messages.push_back({"tool", std::move(text), {}, id->get<std::string>()});
            continue;
        }
        if (field(m, "tool_call_id"))
            bad(at + ".tool_call_id", "'" + at + ".tool_call_id' is for tool messages, this one is " + r);
        std::vector<ChatToolCall> tool_calls;
        for (size_t j = 0; has_calls && j < calls->size(); ++j)
            tool_calls.push_back(read_tool_call((*calls)[j], at + ".tool_calls[" + std::to_string(j) + "]"));
        // OpenAI's "developer" is the system message of newer models.
        messages.push_back({r == "developer" ? "system" : r, std::move(text), std::move(tool_calls)});
    }
    return messages;
}

void get_prompt(const json& body, CompletionRequest& r) {
    const json* v = field(body, "prompt");
    if (!v) bad("prompt", "'prompt' is missing", "missing_field");
    if (v->is_string()) {
        r.prompt = v->get<std::string>();
        return;
    }
    if (!v->is_array()) wrong_type("prompt", "a string, an array of one string, or an array of token ids", *v);
    if (v->size() == 1 && (*v)[0].is_string()) {
        r.prompt = (*v)[0].get<std::string>();
        return;
    }
    if (!v->empty() && (*v)[0].is_string())
        bad("prompt", "'prompt' holds " + std::to_string(v->size()) + " prompts; this server answers one per request");
    r.prompt_is_ids = true;
    for (size_t i = 0; i < v->size(); ++i) {
        const json& id = (*v)[i];
        if (!id.is_number_integer()) wrong_type("prompt[" + std::to_string(i) + "]", "a token id (an integer)", id);
        const int64_t x = id.get<int64_t>();
        if (x < 0 || x > std::numeric_limits<int32_t>::max())
            bad("prompt[" + std::to_string(i) + "]", "'prompt[" + std::to_string(i) + "]' is not a token id: " + id.dump());
        r.prompt_ids.push_back(int32_t(x));
    }
}

}  // namespace

json parse_json_object(const std::string& body) {
    if (const size_t at = graph::json_too_deep_at(body, kMaxRequestDepth); at != std::string::npos)
        bad("", "the body nests arrays and objects deeper than " + std::to_string(kMaxRequestDepth) + " levels at byte " +
                std::to_string(at),
            "invalid_json");
    json parsed;
    try {
        parsed = json::parse(body);
    } catch (const json::parse_error& e) {
        bad("", "the body is not valid JSON: byte " + std::to_string(e.byte) + ": " + e.what(), "invalid_json");
    } catch (const json::out_of_range& e) {  // a number past a double, such as 1e400 (server_request_fuzz)
        bad("", std::string("the body is not valid JSON: a number is out of range: ") + e.what(), "invalid_json");
    }
    if (!parsed.is_object()) bad("", std::string("the body must be a JSON object, got ") + json_type(parsed), "invalid_json");
    return parsed;
}

TokenizeRequest parse_tokenize_request(const json& body) {
    TokenizeRequest r;
    const json* content = field(body, "content");
    if (!content) bad("content", "'content' is missing: the text to tokenize", "missing_field");
    if (!content->is_string()) wrong_type("content", "a string", *content);
    r.content = content->get<std::string>();
    r.add_special = get_bool(body, "add_special", false);
    r.with_pieces = get_bool(body, "with_pieces", false);
    return r;
}

std::vector<int32_t> parse_detokenize_request(const json& body, int64_t n_vocab) {
    const json* tokens = field(body, "tokens");
    if (!tokens) bad("tokens", "'tokens' is missing: the token ids to turn into text", "missing_field");
    if (!tokens->is_array()) wrong_type("tokens", "an array", *tokens);
    std::vector<int32_t> ids;
    ids.reserve(tokens->size());
    for (size_t i = 0; i < tokens->size(); ++i) {
        const json& t = (*tokens)[i];
        const std::string at = "tokens[" + std::to_string(i) + "]";
        // The type, not the value: an array or a string here can be megabytes long.
        if (!t.is_number_integer()) wrong_type(at, "a token id (an integer)", t);
        if (t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
            bad(at, "'" + at + "' is not a token id of this vocabulary (0 to " + std::to_string(n_vocab - 1) +
                "): " + t.dump());
        ids.push_back(int32_t(t.get<int64_t>()));
    }
    return ids;
}

CompletionRequest parse_completion_request(const std::string& body, bool chat) {
    return parse_completion_request(parse_json_object(body), chat);
}

CompletionRequest parse_completion_request(const json& body, bool chat) {
    CompletionRequest r;
    r.chat = chat;
    if (const json* m = field(body, "model")) {
        if (!m->is_string()) wrong_type("model", "a string", *m);
        r.model = m->get<std::string>();
    }
    if (chat) {
        r.messages = get_messages(body);
        r.tools = get_tools(body);
        get_tool_choice(body, r);
    } else
        get_prompt(body, r);

    // The scheduler's own ceiling (graph/limits.h): above it the job would be refused in its words.
    // Completions take 0: the prompt is evaluated and nothing generated (with echo, its log-probabilities).
    r.max_tokens = get_integer(body, "max_tokens", -1, chat ? 1 : 0, graph::kMaxPredict);
    if (chat) r.max_tokens = get_integer(body, "max_completion_tokens", r.max_tokens, 1, graph::kMaxPredict);
    r.n = get_integer(body, "n", 1, 1, kMaxChoices);
    if (!chat) r.echo = get_bool(body, "echo", false);

    SamplerParams& s = r.sampling;
    s.temperature = float(get_number(body, "temperature", s.temperature, 0, 2));
    s.top_p = float(get_number(body, "top_p", s.top_p, 0, 1));
    s.top_k = int32_t(get_integer(body, "top_k", s.top_k, 0, std::numeric_limits<int32_t>::max()));
    s.min_p = float(get_number(body, "min_p", s.min_p, 0, 1));
    s.presence_penalty = float(get_number(body, "presence_penalty", s.presence_penalty, -2, 2));
    s.frequency_penalty = float(get_number(body, "frequency_penalty", s.frequency_penalty, -2, 2));
    s.repeat_penalty = float(get_number(body, "repeat_penalty", s.repeat_penalty, 0.0001, kMaxPenalty));
    // Seeds std::mt19937, so 32 bits; -1 (llama-server's "random") or absent draws one.
    const int64_t seed = get_integer(body, "seed", -1, -1, 0xFFFFFFFFLL);
    s.seed = seed < 0 ? kSamplerRandomSeed : uint64_t(seed);
    s.logit_bias = get_logit_bias(body);
    r.grammar = get_grammar(body);
    if (r.grammar && !r.tools.empty())
        bad("tools", "give either 'tools' or a grammar ('response_format' json, 'grammar'), not both, or tool_choice \"none\"");

    r.stop = get_stop(body);
    r.stream = get_bool(body, "stream", false);
    if (const json* opts = field(body, "stream_options")) {
        if (!opts->is_object()) wrong_type("stream_options", "an object", *opts);
        for (const auto& [key, value] : opts->items()) {
            if (value.is_null()) continue;
            // include_obfuscation pads chunks against a side channel of OpenAI's; nothing to pad here.
            if (key != "include_usage" && key != "include_obfuscation") unknown_field("stream_options." + key, "of stream_options");
            if (!value.is_boolean()) wrong_type("stream_options." + key, "a boolean", value);
        }
        r.include_usage = get_bool(*opts, "include_usage", false);
    }
    if (chat) {
        r.logprobs = get_bool(body, "logprobs", false);
        r.top_logprobs = int(get_integer(body, "top_logprobs", 0, 0, kMaxTopLogprobs));
        if (r.top_logprobs > 0 && !r.logprobs) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    } else {
        // Completions' logprobs is the number of alternatives (0 to 5), null for none.
        const json* v = field(body, "logprobs");
        if (v) {
            r.logprobs = true;
            r.top_logprobs = int(get_integer(body, "logprobs", 0, 0, 5));
        }
    }
    // Speculative decoding, in llama-server's flat names (speculative.n_max, speculative.n_min) and
    // graphrun's (type, ngram); the backend checks them against the server's settings.
    if (const json* t = field(body, "speculative.type")) {
        if (!t->is_string()) wrong_type("speculative.type", "a string", *t);
        const std::string type = t->get<std::string>();
        if (type != "off" && type != "lookup" && type != "draft")
            bad("speculative.type", "'speculative.type' must be \"off\", \"lookup\" or \"draft\", got " + t->dump());
        r.speculation.type = type;
    }
    for (const auto& [name, slot, hi] :
         {std::tuple{"speculative.n_max", &r.speculation.n_max, graph::kMaxDraftTokens},
          std::tuple{"speculative.n_min", &r.speculation.n_min, graph::kMaxDraftTokens},
          std::tuple{"speculative.ngram", &r.speculation.ngram, graph::kMaxLookupNgram}})
        if (field(body, name)) *slot = get_integer(body, name, 0, 1, hi);
    check_other_fields(body, chat);
    return r;
}

}  // namespace graphrun::server
