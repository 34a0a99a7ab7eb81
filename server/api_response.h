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

// completions' logprobs object for an echoed prompt: every prompt token (BOS too, whose text is
// empty), the first with null log-probability and alternatives (nothing comes before it), then
// `scored[i]` for prompt token i + 1. `text_offset` counts bytes of `text`, the echoed prompt: an SPM
// vocabulary's leading space, which the text does not have, is not counted.
nlohmann::json echo_logprobs_json(const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                                  const std::vector<TokenLogprob>& scored, const std::string& text);
// completions' logprobs objects one after the other (the echo's, then the generated tokens').
nlohmann::json concat_logprobs(const nlohmann::json& first, const nlohmann::json& second);

// One choice of a whole answer; answer_json puts the choices (stream: false) in the answer.
nlohmann::json choice_json(const AnswerHeader& h, int64_t index, const std::string& text, const char* finish_reason,
                           const nlohmann::json& logprobs);
nlohmann::json answer_json(const AnswerHeader& h, nlohmann::json choices, int64_t prompt_tokens,
                           int64_t completion_tokens);
// A whole answer of one choice.
nlohmann::json answer_json(const AnswerHeader& h, const std::string& text, const char* finish_reason,
                           const nlohmann::json& logprobs, int64_t prompt_tokens, int64_t completion_tokens);

// One chunk of a stream, for choice `index`. `first` (chat) carries the assistant role; finish_reason
// is null but on the choice's last chunk; `usage` null unless include_usage, then on the extra last
// chunk with no choices.
nlohmann::json chunk_json(const AnswerHeader& h, const std::string& text, const char* finish_reason,
                          const nlohmann::json& logprobs, bool first, int64_t index = 0);
// The tool calls of choice `index` (OpenAI's message.tool_calls): ids call_<answer>_<choice>_<i>,
// arguments as JSON text. A whole answer's message gets them with content null when the reply said
// nothing else; a stream sends them in one chunk whose delta.tool_calls carry their index.
nlohmann::json tool_calls_json(const AnswerHeader& h, int64_t index, const std::vector<ChatToolCall>& calls,
                               bool streamed);
void add_tool_calls(nlohmann::json& choice, const AnswerHeader& h, int64_t index,
                    const std::vector<ChatToolCall>& calls);
nlohmann::json tool_calls_chunk_json(const AnswerHeader& h, int64_t index, const std::vector<ChatToolCall>& calls);
nlohmann::json usage_chunk_json(const AnswerHeader& h, int64_t prompt_tokens, int64_t completion_tokens);

// JSON text that never throws on invalid UTF-8 (a token piece can be part of a character).
std::string dump(const nlohmann::json& j);

}  // namespace graphrun::server
