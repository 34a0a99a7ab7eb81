// runtime/text/sampler.h — picking the next token from a row of logits (n_vocab) f32.
//
// The chain and every stage follow llama.cpp's semantics (llama-sampling.cpp and common's default
// order), so a graphrun run and a llama.cpp run with the same settings filter the same tokens:
//   [grammar] -> logit_bias -> penalties -> top_k -> top_p -> min_p -> temperature -> dist (a seeded draw)
// With a grammar (SamplerParams::grammar, runtime/text/grammar_vocab.h) every token it refuses is -inf
// before any other stage, greedy or sampled, and the token sample() returns advances the grammar.
// temperature <= 0 is greedy: argmax of the logits after penalties, ties going to the lowest id.
//
// Each stage is a free function over a candidates array so tests can hold it to its definition;
// Sampler strings them together and keeps the recent-token history the penalties look at.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "runtime/text/grammar_vocab.h"

namespace graphrun {

struct TokenCandidate {
    int32_t id;
    float logit;
    float p;  // probability, valid only after sampler_softmax (or a stage that calls it)
};

struct Candidates {
    std::vector<TokenCandidate> data;
    bool sorted = false;  // true when data is in descending logit order (ties: ascending id)

    // Every token of the vocabulary, candidates[i].id == i, p = 0.
    static Candidates from_logits(std::span<const float> logits);
    void assign(std::span<const float> logits);  // same, reusing this object's storage
};

// ---- Stages. Each keeps at least min_keep candidates (when that many are there). ----

// A value added to one token's logit before any other stage (OpenAI's and llama.cpp's logit_bias);
// -inf keeps the token from ever being sampled.
struct LogitBias {
    int32_t token;
    float bias;
};

// logit[token] += bias for every entry (a token listed twice gets both). Tokens absent from c are
// skipped. Candidates made by from_logits are found by index, others by a search.
void sampler_logit_bias(Candidates& c, std::span<const LogitBias> biases);

// Sorts descending by logit (ties: lowest id first) and sets p to the softmax over the candidates.
void sampler_softmax(Candidates& c);

// Repeat penalty on every distinct token of `recent`: a positive logit is divided by `repeat`,
// a non-positive one multiplied (both make the token less likely). Then
// logit -= count * frequency + (count > 0) * presence, with count = occurrences in `recent`.
// Tokens absent from `recent` are untouched. No-op when repeat == 1 and both penalties are 0.
void sampler_penalties(Candidates& c, std::span<const int32_t> recent, float repeat, float frequency,
                       float presence);

// Keeps the k highest logits (partial sort, not a full sort of the vocabulary). k <= 0: no-op.
void sampler_top_k(Candidates& c, int32_t k, size_t min_keep = 1);

// Keeps the smallest prefix (by probability) whose cumulative probability is >= p. p >= 1: no-op.
void sampler_top_p(Candidates& c, float p, size_t min_keep = 1);

// Keeps tokens whose probability is >= p * (the largest probability), i.e.
// logit >= max_logit + log(p). p <= 0: no-op. Keeps the order it was given.
void sampler_min_p(Candidates& c, float p, size_t min_keep = 1);

// logit /= t. t <= 0 keeps only the argmax (ties: lowest id), as llama.cpp's temp stage does.
void sampler_temperature(Candidates& c, float t);

// The id with the highest logit; ties go to the lowest id. Throws when c is empty.
int32_t sampler_greedy(const Candidates& c);

// Softmax, then one draw from the resulting distribution using rng.
int32_t sampler_dist(Candidates& c, std::mt19937& rng);

// ---- The chain. ----

// LLAMA_DEFAULT_SEED's value: "pick a seed from std::random_device".
inline constexpr uint64_t kSamplerRandomSeed = 0xFFFFFFFF;

// The longest penalty window (repeat_last_n): the history is kept in a vector shifted per token.
inline constexpr int32_t kMaxRepeatLastN = 1 << 20;
// The largest |penalty| (repeat, frequency, presence): larger ones rank nothing differently but
// overflow ordinary logits to -inf.
inline constexpr float kMaxPenalty = 1e4f;

struct SamplerParams {
    float temperature = 0.8f;     // <= 0: greedy; finite
    int32_t top_k = 40;           // 0: off; must not be negative
    float top_p = 0.95f;          // in [0, 1]; 1: off
    float min_p = 0.05f;          // in [0, 1]; 0: off
    float repeat_penalty = 1.0f;  // in (0, kMaxPenalty]; 1: off
    int32_t repeat_last_n = 64;   // tokens of history the penalties see; 0: off, -1: all since reset;
                                  // at most kMaxRepeatLastN
    float frequency_penalty = 0.0f;  // in [-kMaxPenalty, kMaxPenalty]
    float presence_penalty = 0.0f;   // in [-kMaxPenalty, kMaxPenalty]
    uint64_t seed = kSamplerRandomSeed;  // seeds std::mt19937, so at most 32 bits
    std::vector<LogitBias> logit_bias{};  // token ids inside the vocabulary; bias finite or -inf
    // Constrained decoding: only tokens that keep the output inside the grammar are sampled, and an
    // end-of-generation token only where the grammar can end. null: unconstrained.
    std::shared_ptr<const GrammarConstraint> grammar{};
};

// Throws std::invalid_argument naming the field and the accepted range. Token ids of logit_bias
// are held to the vocabulary by Sampler's constructor, which knows its size.
void sampler_validate(const SamplerParams& p);

class Sampler {
  public:
    Sampler(SamplerParams params, int32_t n_vocab);  // validates; throws std::invalid_argument

    // Picks a token from logits (n_vocab). Does not record it: call accept() with the token that
    // is actually fed back (and with the prompt tokens, which the penalties count as well).
    // Throws std::invalid_argument for a NaN logit, or when every candidate is -inf after the
    // penalties (nothing can be sampled).
    // With a grammar, the token returned is fed to it at once: every decode loop keeps the token it
    // samples (prompt tokens, given to accept(), never touch the grammar). GrammarError when the
    // grammar allows no token of the vocabulary (it can neither go on nor end with one).
    int32_t sample(std::span<const float> logits);
    void accept(int32_t token);
    // Forgets the history and restarts the RNG from the same seed, so a rerun repeats itself; a
    // grammar starts again from its start rule.
    void reset();
    // With a grammar: the next token starts a new match (a new reply of a conversation); the history
    // and the RNG go on. No-op without one.
    void restart_grammar() {
        if (grammar_) grammar_->reset();
    }
    // With a grammar: whether the tokens sampled so far are a complete match (true without one).
    bool grammar_complete() const { return !grammar_ || grammar_->can_end(); }
    // How many of `tokens`, fed in order from the match so far, the grammar allows (all of them
    // without one); an end-of-generation token counts where the grammar can end, and nothing after
    // it. The sampler's own match is left as it was: speculative decoding cuts guesses with it.
    size_t grammar_allowed_prefix(std::span<const int32_t> tokens) const;

    const SamplerParams& params() const { return params_; }
    uint64_t seed() const { return seed_; }  // the seed in use (drawn when params.seed was random)
    std::span<const int32_t> history() const { return recent_; }  // oldest first

  private:
    SamplerParams params_;
    int32_t n_vocab_;
    uint64_t seed_;
    std::mt19937 rng_;
    std::vector<int32_t> recent_;  // the last repeat_last_n accepted tokens, oldest first
    Candidates candidates_;        // reused between calls so sampling does not allocate per token
    std::optional<GrammarMatcher> grammar_;  // the match so far, when params_.grammar is set
    std::vector<uint8_t> allowed_;           // (n_vocab) the grammar's mask, reused
    GrammarMaskScratch mask_scratch_;
    void apply_grammar_mask();
    int32_t commit_grammar(int32_t token);
};

}  // namespace graphrun
