// server/api_response.cpp — see api_response.h.
#include "server/api_response.h"

#include <algorithm>

namespace graphrun::server {

using nlohmann::json;

namespace {

json bytes_of(const std::string& piece) {
    json bytes = json::array();
    for (const char c : piece) bytes.push_back(int(uint8_t(c)));
    return bytes;
}

}  // namespace

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens}};
}

json logprobs_json(const Tokenizer& tokenizer, const std::vector<TokenLogprob>& tokens, bool chat,
                   size_t text_offset) {
    if (chat) {
        json content = json::array();
        for (const TokenLogprob& t : tokens) {
            const std::string piece = tokenizer.token_to_piece(t.token);
            json top = json::array();
            for (const auto& [id, lp] : t.top) {
                const std::string p = tokenizer.token_to_piece(id);
                top.push_back({{"token", p}, {"logprob", lp}, {"bytes", bytes_of(p)}});
            }
            content.push_back({{"token", piece}, {"logprob", t.logprob}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}});
        }
        return {{"content", content}};
    }
    json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    for (const TokenLogprob& t : tokens) {
        const std::string piece = tokenizer.token_to_piece(t.token);
        toks.push_back(piece);
        lps.push_back(t.logprob);
        json top = json::object();
        for (const auto& [id, lp] : t.top) top[tokenizer.token_to_piece(id)] = lp;  // dump() replaces bytes that are not UTF-8
        tops.push_back(top);
        offsets.push_back(text_offset);
        text_offset += piece.size();
    }
    return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json echo_logprobs_json(const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                        const std::vector<TokenLogprob>& scored, const std::string& text) {
    json j = logprobs_json(tokenizer, scored, false, 0);
    if (prompt.empty()) return j;
    const std::string first = tokenizer.token_to_piece(prompt[0]);
    j["tokens"].insert(j["tokens"].begin(), first);
    j["token_logprobs"].insert(j["token_logprobs"].begin(), nullptr);
    j["top_logprobs"].insert(j["top_logprobs"].begin(), nullptr);
    // Offsets in the pieces' text, moved back by what the echoed text lacks at its start (the space
    // an SPM vocabulary prefixes), each within the text.
    size_t pieces = first.size();
    json offsets = json::array({0});
    for (size_t i = 1; i < prompt.size(); ++i) {
        offsets.push_back(pieces);
        pieces += tokenizer.token_to_piece(prompt[i]).size();
    }
    const size_t lead = pieces > text.size() ? pieces - text.size() : 0;
    for (json& o : offsets) o = std::min(o.get<size_t>() - std::min(o.get<size_t>(), lead), text.size());
    j["text_offset"] = offsets;
    return j;
}

json concat_logprobs(const json& first, const json& second) {
    json out = first;
    for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
        out[key].insert(out[key].end(), second[key].begin(), second[key].end());
    return out;
}

json choice_json(const AnswerHeader& h, int64_t index, const std::string& text, const char* finish_reason,
                 const json& logprobs) {
    json choice = {{"index", index}, {"logprobs", logprobs}, {"finish_reason", finish_reason ? finish_reason : "stop"}};
    if (h.chat)
        choice["message"] = {{"role", "assistant"}, {"content", text}};
    else
        choice["text"] = text;
    return choice;
}

json answer_json(const AnswerHeader& h, json choices, int64_t prompt_tokens, int64_t completion_tokens) {
    return {{"id", h.id},
            {"object", h.chat ? "chat.completion" : "text_completion"},
            {"created", h.created},
            {"model", h.model},
            {"choices", std::move(choices)},
            {"usage", usage_json(prompt_tokens, completion_tokens)}};
}

json answer_json(const AnswerHeader& h, const std::string& text, const char* finish_reason, const json& logprobs,
                 int64_t prompt_tokens, int64_t completion_tokens) {
    return answer_json(h, json::array({choice_json(h, 0, text, finish_reason, logprobs)}), prompt_tokens,
                       completion_tokens);
}

json chunk_json(const AnswerHeader& h, const std::string& text, const char* finish_reason, const json& logprobs,
                bool first, int64_t index) {
    json choice = {{"index", index}, {"logprobs", logprobs}, {"finish_reason", nullptr}};
    if (finish_reason) choice["finish_reason"] = finish_reason;
    if (h.chat) {
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!text.empty() || first) delta["content"] = text;
        choice["delta"] = delta;
    } else {
        choice["text"] = text;
    }
    return {{"id", h.id},
            {"object", h.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", h.created},
            {"model", h.model},
            {"choices", json::array({choice})}};
}

json tool_calls_json(const AnswerHeader& h, int64_t index, const std::vector<ChatToolCall>& calls, bool streamed) {
    json out = json::array();
    const std::string answer = h.id.substr(h.id.find('-') + 1);
    for (size_t i = 0; i < calls.size(); ++i) {
        json call = {{"id", "call_" + answer + "_" + std::to_string(index) + "_" + std::to_string(i)},
                     {"type", "function"},
                     {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (streamed) call["index"] = i;
        out.push_back(std::move(call));
    }
    return out;
}

void add_tool_calls(json& choice, const AnswerHeader& h, int64_t index, const std::vector<ChatToolCall>& calls) {
    if (calls.empty()) return;
    json& message = choice["message"];
    if (message["content"] == "") message["content"] = nullptr;
    message["tool_calls"] = tool_calls_json(h, index, calls, false);
}

json tool_calls_chunk_json(const AnswerHeader& h, int64_t index, const std::vector<ChatToolCall>& calls) {
    json chunk = chunk_json(h, "", nullptr, nullptr, false, index);
    chunk["choices"][0]["delta"] = {{"tool_calls", tool_calls_json(h, index, calls, true)}};
    return chunk;
}

json usage_chunk_json(const AnswerHeader& h, int64_t prompt_tokens, int64_t completion_tokens) {
    return {{"id", h.id},
            {"object", h.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", h.created},
            {"model", h.model},
            {"choices", json::array()},
            {"usage", usage_json(prompt_tokens, completion_tokens)}};
}

}  // namespace graphrun::server
