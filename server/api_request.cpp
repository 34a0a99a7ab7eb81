// server/api_request.cpp — see api_request.h.
#include "server/api_request.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "runtime/json_depth.h"
#include "graph/limits.h"
#include "server/api_error.h"

namespace graphrun::server {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& message, const char* code = "invalid_value") {
    throw ApiError(400, code, message);
}

const char* json_type(const json& v) {
    if (v.is_number_integer()) return "an integer";
    if (v.is_number()) return "a number";
    return v.type_name();
}

// The field when present and not null, else nullptr.
const json* field(const json& body, const char* name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

void wrong_type(const std::string& name, const char* expected, const json& v) {
    bad("'" + name + "' must be " + expected + ", got " + json_type(v), "invalid_type");
}

double get_number(const json& body, const char* name, double fallback, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) wrong_type(name, "a number", *v);
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
        bad("'" + std::string(name) + "' must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " +
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
        bad("'" + std::string(name) + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
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
        bad("'stop' holds " + std::to_string(stop.size()) + " strings, at most " + std::to_string(kMaxStopStrings));
    for (size_t i = 0; i < stop.size(); ++i)
        if (stop[i].empty()) bad("'stop[" + std::to_string(i) + "]' is empty");
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
            bad("'" + at + ".type' must be \"text\" (this model reads text only)");
        const json* t = field(part, "text");
        if (!t || !t->is_string()) bad("'" + at + ".text' must be a string", "invalid_type");
        text += t->get<std::string>();
    }
    return text;
}

std::vector<ChatMessage> get_messages(const json& body) {
    const json* v = field(body, "messages");
    if (!v) bad("'messages' is missing: a chat completion needs at least one message", "missing_field");
    if (!v->is_array()) wrong_type("messages", "an array", *v);
    if (v->empty()) bad("'messages' is empty: a chat completion needs at least one message");
    std::vector<ChatMessage> messages;
    for (size_t i = 0; i < v->size(); ++i) {
        const json& m = (*v)[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) wrong_type(at, "an object", m);
        const json* role = field(m, "role");
        if (!role) bad("'" + at + ".role' is missing", "missing_field");
        if (!role->is_string()) wrong_type(at + ".role", "a string", *role);
        const std::string r = role->get<std::string>();
        if (r != "system" && r != "user" && r != "assistant" && r != "developer")
            bad("'" + at + ".role' must be system, developer, user or assistant, got \"" + r + "\"");
        const json* content = field(m, "content");
        if (!content) bad("'" + at + ".content' is missing", "missing_field");
        // OpenAI's "developer" is the system message of newer models.
        messages.push_back({r == "developer" ? "system" : r, message_content(*content, at + ".content")});
    }
    return messages;
}

void get_prompt(const json& body, CompletionRequest& r) {
    const json* v = field(body, "prompt");
    if (!v) bad("'prompt' is missing", "missing_field");
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
        bad("'prompt' holds " + std::to_string(v->size()) + " prompts; this server answers one per request");
    r.prompt_is_ids = true;
    for (size_t i = 0; i < v->size(); ++i) {
        const json& id = (*v)[i];
        if (!id.is_number_integer()) wrong_type("prompt[" + std::to_string(i) + "]", "a token id (an integer)", id);
        const int64_t x = id.get<int64_t>();
        if (x < 0 || x > std::numeric_limits<int32_t>::max())
            bad("'prompt[" + std::to_string(i) + "]' is not a token id: " + id.dump());
        r.prompt_ids.push_back(int32_t(x));
    }
}

}  // namespace

json parse_json_object(const std::string& body) {
    if (const size_t at = graph::json_too_deep_at(body, kMaxRequestDepth); at != std::string::npos)
        bad("the body nests arrays and objects deeper than " + std::to_string(kMaxRequestDepth) + " levels at byte " +
                std::to_string(at),
            "invalid_json");
    json parsed;
    try {
        parsed = json::parse(body);
    } catch (const json::parse_error& e) {
        bad("the body is not valid JSON: byte " + std::to_string(e.byte) + ": " + e.what(), "invalid_json");
    } catch (const json::out_of_range& e) {  // a number past a double, such as 1e400 (server_request_fuzz)
        bad(std::string("the body is not valid JSON: a number is out of range: ") + e.what(), "invalid_json");
    }
    if (!parsed.is_object()) bad(std::string("the body must be a JSON object, got ") + json_type(parsed), "invalid_json");
    return parsed;
}

TokenizeRequest parse_tokenize_request(const json& body) {
    TokenizeRequest r;
    const json* content = field(body, "content");
    if (!content) bad("'content' is missing: the text to tokenize", "missing_field");
    if (!content->is_string()) wrong_type("content", "a string", *content);
    r.content = content->get<std::string>();
    r.add_special = get_bool(body, "add_special", false);
    r.with_pieces = get_bool(body, "with_pieces", false);
    return r;
}

std::vector<int32_t> parse_detokenize_request(const json& body, int64_t n_vocab) {
    const json* tokens = field(body, "tokens");
    if (!tokens) bad("'tokens' is missing: the token ids to turn into text", "missing_field");
    if (!tokens->is_array()) wrong_type("tokens", "an array", *tokens);
    std::vector<int32_t> ids;
    ids.reserve(tokens->size());
    for (size_t i = 0; i < tokens->size(); ++i) {
        const json& t = (*tokens)[i];
        const std::string at = "tokens[" + std::to_string(i) + "]";
        // The type, not the value: an array or a string here can be megabytes long.
        if (!t.is_number_integer()) wrong_type(at, "a token id (an integer)", t);
        if (t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
            bad("'" + at + "' is not a token id of this vocabulary (0 to " + std::to_string(n_vocab - 1) +
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
    if (chat)
        r.messages = get_messages(body);
    else
        get_prompt(body, r);

    // The scheduler's own ceiling (graph/limits.h): above it the job would be refused in its words.
    r.max_tokens = get_integer(body, "max_tokens", -1, 1, graph::kMaxPredict);
    if (chat) r.max_tokens = get_integer(body, "max_completion_tokens", r.max_tokens, 1, graph::kMaxPredict);
    if (get_integer(body, "n", 1, 1, 1) != 1) bad("'n' must be 1");

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

    r.stop = get_stop(body);
    r.stream = get_bool(body, "stream", false);
    if (const json* opts = field(body, "stream_options")) {
        if (!opts->is_object()) wrong_type("stream_options", "an object", *opts);
        r.include_usage = get_bool(*opts, "include_usage", false);
    }
    if (chat) {
        r.logprobs = get_bool(body, "logprobs", false);
        r.top_logprobs = int(get_integer(body, "top_logprobs", 0, 0, kMaxTopLogprobs));
        if (r.top_logprobs > 0 && !r.logprobs) bad("'top_logprobs' needs 'logprobs': true");
    } else {
        // Completions' logprobs is the number of alternatives (0 to 5), null for none.
        const json* v = field(body, "logprobs");
        if (v) {
            r.logprobs = true;
            r.top_logprobs = int(get_integer(body, "logprobs", 0, 0, 5));
        }
    }
    return r;
}

}  // namespace graphrun::server
