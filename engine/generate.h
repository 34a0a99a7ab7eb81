// engine/generate.h — the decode loop: evaluate a prompt, then sample and feed back one token at a
// time, timing both phases so the command line can report tokens/s and the bandwidth they imply.
//
// With a proposer (engine/proposer.h) the loop decodes speculatively, and exactly: each fed-back token
// goes into the forward pass with the tokens the proposer guesses will follow it,
//   pass:    [t, d1, d2, d3]            positions p .. p+3, a row of logits each
//   sample:  row 0 -> d1?  row 1 -> d2?  row 2 -> x != d3   keeps t d1 d2, samples x, drops d3's position
// Every row is sampled by the same sampler, in the same order, with the same history and RNG draws as
// plain decoding (a row after the first rejected guess is never sampled), and every row holds the bits
// plain decoding computes (batch invariance, engine/engine.h). So the tokens, the stop, the KV cache
// left behind and the sampler's state are those of plain decoding; only the number of passes differs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "engine/profile.h"
#include "engine/proposer.h"
#include "engine/session.h"
#include "runtime/text/sampler.h"

namespace graphrun::graph {

struct GenerationStats {
    int64_t prompt_tokens = 0;
    double prompt_seconds = 0;
    int64_t generated_tokens = 0;  // tokens handed to on_token
    int64_t decode_steps = 0;   // generated tokens fed back and evaluated (generated_tokens, less the last)
    int64_t decode_passes = 0;  // forward passes that evaluated them (decode_steps without a proposer)
    double decode_seconds = 0;
    int64_t draft_proposed = 0;  // tokens the proposer guessed, each evaluated in a pass
    int64_t draft_accepted = 0;  // of those, the ones decoding produced and kept (counted in decode_steps)
    bool context_full = false;   // stopped because the KV cache had no room for the next token
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
// With a proposer, tokens are evaluated with its guesses (above): the same tokens and calls to on_token,
// the same KV cache at the end, in fewer passes when the guesses are right.
GenerationStats generate(Session& session, Sampler& sampler, std::span<const int32_t> prompt,
                         int64_t n_predict, const std::function<bool(int32_t token)>& on_token,
                         Profiler* profiler = nullptr, DraftProposer* proposer = nullptr);

}  // namespace graphrun::graph
