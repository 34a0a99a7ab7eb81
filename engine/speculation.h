// engine/speculation.h — speculative decoding for the Scheduler's requests (engine/scheduler.h).
//
//   Request r{.prompt = ids, .speculation = Speculation{.mode = SpecMode::Lookup, .draft_max = 8}};
//
// Each request that speculates holds a SequenceSpeculation: its proposer (prompt lookup, or a draft
// sequence on the scheduler's one draft engine) and the history the proposer looks at. Before a pass
// the request's guesses are made; the pass feeds [pending token, guess 1 .. guess k] of the request
// together with every other request's tokens; after it the rows are sampled in order with the request's
// own sampler, as plain decoding would, keeping guesses while they are what was sampled
// (engine/generate.h draws the same picture for one sequence). The tokens, bits and sampler state are
// plain decoding's: a proposer only changes how many passes they take.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "engine/proposer.h"
#include "runtime/text/sampler.h"

namespace graphrun::graph {

enum class SpecMode { Off, Lookup, Draft };
const char* spec_mode_name(SpecMode mode);  // "off", "lookup", "draft"

struct Speculation {
    SpecMode mode = SpecMode::Off;
    int64_t draft_min = 1;  // a shorter guess is not made (--draft-min)
    int64_t draft_max = 8;  // tokens guessed per pass at most (--draft-max)
    int64_t ngram = 3;      // lookup: the longest run of last tokens looked up (--lookup-ngram)
};

// Throws std::invalid_argument naming the bound that `s` is outside (the messages of DraftLength and
// PromptLookup, which name the command-line options).
void validate_speculation(const Speculation& s);

class SequenceSpeculation {
  public:
    // `draft_engine`: the scheduler's engine of the draft model (mode Draft), where this request gets
    // a sequence of its own for as long as it lives. The prompt starts the history.
    SequenceSpeculation(const Speculation& s, Engine* draft_engine, std::span<const int32_t> prompt);
    ~SequenceSpeculation();

    // Every token the request samples, in order (the last one is the token the next pass feeds).
    void sampled(int32_t token) { history_.push_back(token); }
    // The guesses to follow the last sampled token in the next pass: at most `room` of them, cut before
    // the first one the request's grammar would refuse (guesses past it could never be kept).
    std::span<const int32_t> propose(int64_t room, const Sampler& sampler);
    // Fewer guesses than proposed go into the pass (its token budget ran out).
    void keep(size_t n) { draft_.resize(std::min(draft_.size(), n)); }
    std::span<const int32_t> draft() const { return draft_; }
    // The pass was verified: its first `accepted` guesses were kept. Forgets the draft.
    void verified(int64_t accepted);

  private:
    std::unique_ptr<DraftProposer> proposer_;
    std::vector<int32_t> history_;  // prompt, then every sampled token
    std::vector<int32_t> draft_;
};

}  // namespace graphrun::graph
