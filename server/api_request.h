// server/api_request.h — the bodies of POST /v1/completions, /v1/chat/completions, /tokenize and
// /detokenize, checked.
//
// Fields as OpenAI (and llama-server, for top_k, min_p, repeat_penalty) define them. A field that
// is absent or null takes its default. Nothing is ignored silently: every other field is honoured,
// on a short documented list of fields accepted without effect (user, metadata, ...), or an
// ApiError 400 whose `param` names it — an unknown field, or one graphrun does not honour yet with
// the value given (best_of > 1, suffix, functions; docs/server.md lists them).
// A known field of the wrong type or out of its range is a 400 too; each message names the field,
// what it must be and what it was. Sampling defaults are llama.cpp's (runtime/text/sampler.h), as
// llama-server's are.
// These functions throw nothing but ApiError (fuzz/server_request_fuzz.cpp holds them to that).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/text/chat_template.h"
#include "runtime/text/sampler.h"
#include "server/backend.h"

namespace graphrun::server {

inline constexpr size_t kMaxStopStrings = 4;
inline constexpr int64_t kMaxChoices = 16;  // `n` at most
inline constexpr int kMaxTopLogprobs = 20;  // chat; completions' integer `logprobs` goes to 5

struct CompletionRequest {
    bool chat = false;
    std::string model;
    // Completions: the prompt as text, or as token ids (an array of integers).
    std::string prompt;
    std::vector<int32_t> prompt_ids;
    bool prompt_is_ids = false;
    std::vector<ChatMessage> messages;  // chat
    // 1 .. graph::kMaxPredict (completions: 0 too, the prompt only); -1: until a stop or the end of the context
    int64_t max_tokens = -1;
    SamplerParams sampling{};
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    bool logprobs = false;
    int top_logprobs = 0;  // alternatives per token
    bool echo = false;     // completions: the prompt's text (and its tokens' log-probabilities) first
    int64_t n = 1;         // choices; choice i samples with seed + i (completion.h)
    // response_format json_object / json_schema, or a GBNF `grammar`: what the output keeps to (the
    // vocabulary is the server's, joined to it when the job is made). null: unconstrained.
    std::shared_ptr<const Grammar> grammar{};
    // Chat: the functions the model may call (runtime/text/tool_calls.h renders them in the model's
    // chat template). tool_choice "none" gives none here; with `tool_required` the reply is
    // grammar-constrained to calls of `tools` (a named tool_choice leaves only that one).
    std::vector<ChatTool> tools{};
    bool tool_required = false;
    bool parallel_tool_calls = true;  // false: at most one call
    JobSpeculation speculation{};     // "speculative.type", ".n_max", ".n_min", ".ngram"
};

inline constexpr size_t kMaxTools = 128;
inline constexpr size_t kMaxParallelToolCalls = 8;  // calls read from one reply

// Parses the text of a request body (malformed JSON is a 400 naming the byte) and checks it.
CompletionRequest parse_completion_request(const std::string& body, bool chat);
CompletionRequest parse_completion_request(const nlohmann::json& body, bool chat);

// The body as a JSON object, or ApiError 400 (malformed JSON at byte N, a number past a double,
// nesting deeper than kMaxRequestDepth, or not an object).
nlohmann::json parse_json_object(const std::string& body);

// Arrays and objects in a request body nest at most this deep (OpenAI's bodies nest 4 levels). Each
// level costs the JSON library some 160 bytes, so 8 MiB of '[' would hold 1.3 GB while it parses.
inline constexpr int kMaxRequestDepth = 64;

// POST /tokenize: {"content": TEXT, "add_special": false, "with_pieces": false}.
struct TokenizeRequest {
    std::string content;
    bool add_special = false;  // BOS first, when the tokenizer has one
    bool with_pieces = false;  // answer {"id", "piece"} objects instead of ids
};
TokenizeRequest parse_tokenize_request(const nlohmann::json& body);

// POST /detokenize: {"tokens": [ids]}, each id in [0, n_vocab).
std::vector<int32_t> parse_detokenize_request(const nlohmann::json& body, int64_t n_vocab);

}  // namespace graphrun::server
