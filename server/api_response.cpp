// server/api_response.cpp — see api_response.h.
#include "server/api_response.h"

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

json answer_json(const AnswerHeader& h, const std::string& text, const char* finish_reason, const json& logprobs,
                 int64_t prompt_tokens, int64_t completion_tokens) {
    json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish_reason ? finish_reason : "stop"}};
    if (h.chat)
        choice["message"] = {{"role", "assistant"}, {"content", text}};
    else
        choice["text"] = text;
    return {{"id", h.id},
            {"object", h.chat ? "chat.completion" : "text_completion"},
            {"created", h.created},
            {"model", h.model},
            {"choices", json::array({choice})},
            {"usage", usage_json(prompt_tokens, completion_tokens)}};
}

json chunk_json(const AnswerHeader& h, const std::string& text, const char* finish_reason, const json& logprobs,
                bool first) {
    json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", nullptr}};
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

json usage_chunk_json(const AnswerHeader& h, int64_t prompt_tokens, int64_t completion_tokens) {
    return {{"id", h.id},
            {"object", h.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", h.created},
            {"model", h.model},
            {"choices", json::array()},
            {"usage", usage_json(prompt_tokens, completion_tokens)}};
}

}  // namespace graphrun::server
