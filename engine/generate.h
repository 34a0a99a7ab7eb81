// engine/generate.h — the decode loop: evaluate a prompt, then sample and feed back one token at a
// time, timing both phases so the command line can report tokens/s and the bandwidth they imply.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "engine/profile.h"
#include "engine/session.h"
#include "runtime/text/sampler.h"

namespace graphrun::graph {

struct GenerationStats {
    int64_t prompt_tokens = 0;
    double prompt_seconds = 0;
    int64_t generated_tokens = 0;  // tokens handed to on_token
    int64_t decode_steps = 0;      // one-token evaluations (generated_tokens, less the last)
    double decode_seconds = 0;
    bool context_full = false;     // stopped because the KV cache had no room for the next token
    // The last token on_token accepted, when the loop ended before evaluating it (n_predict was
    // reached or the context is full); -1 when on_token stopped the loop (every accepted token was
    // evaluated). A caller that continues the same sequence must evaluate it first.
    int32_t unevaluated_token = -1;
};

// Evaluates `prompt` (appending it to the session's KV cache), then repeats: sample a token,
// hand it to on_token, and evaluate it, until on_token returns false or n_predict tokens were
// produced (n_predict < 0: until the context is full), or the context is full (stats say which).
// The prompt tokens are accepted into the
// sampler's history first, so repetition penalties see them, as in llama.cpp.
// With a profiler, the prompt's runs are recorded under the section "prompt", the rest under "decode".
GenerationStats generate(Session& session, Sampler& sampler, std::span<const int32_t> prompt, int64_t n_predict,
                         const std::function<bool(int32_t token)>& on_token, Profiler* profiler = nullptr);

}  // namespace graphrun::graph
