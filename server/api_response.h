// server/api_response.h — the JSON of completion answers and of their streamed chunks, in the
// shapes OpenAI's clients parse (text_completion, chat.completion, chat.completion.chunk).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer.h"
#include "server/completion.h"

namespace graphrun::server {

struct AnswerHeader {
    std::string id;  // "cmpl-..." or "chatcmpl-..."
    int64_t created = 0;  // Unix seconds
    std::string model;
    bool chat = false;
};

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// The logprobs object of a choice: completions' {tokens, token_logprobs, top_logprobs, text_offset}
// or chat's {content: [{token, logprob, bytes, top_logprobs}]}. `text_offset` counts from the start
// of the generated text.
nlohmann::json logprobs_json(const Tokenizer& tokenizer, const std::vector<TokenLogprob>& tokens, bool chat,
                             size_t text_offset);

// A whole answer (stream: false).
nlohmann::json answer_json(const AnswerHeader& h, const std::string& text, const char* finish_reason,
                           const nlohmann::json& logprobs, int64_t prompt_tokens, int64_t completion_tokens);

// One chunk of a stream. `first` (chat) carries the assistant role; finish_reason is null but on the
// last chunk; `usage` null unless include_usage, then on the extra last chunk with no choices.
nlohmann::json chunk_json(const AnswerHeader& h, const std::string& text, const char* finish_reason,
                          const nlohmann::json& logprobs, bool first);
nlohmann::json usage_chunk_json(const AnswerHeader& h, int64_t prompt_tokens, int64_t completion_tokens);

// JSON text that never throws on invalid UTF-8 (a token piece can be part of a character).
std::string dump(const nlohmann::json& j);

}  // namespace graphrun::server
