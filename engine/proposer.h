// engine/proposer.h — what speculative decoding asks of a proposer: tokens likely to come next.
//
//   PromptLookup lookup({.ngram = 3, .draft_min = 1, .draft_max = 8});   // engine/prompt_lookup.h
//   lookup.propose(history, room, draft);    // history: prompt + output + the token about to be fed
//   ... one forward pass over [token, draft...]; decoding accepts the first `accepted` of them ...
//   lookup.observe(int64_t(draft.size()), accepted);
//
// A proposal is only a guess: generate() (engine/generate.h) feeds the token and the draft in one pass,
// samples each row as plain decoding would, keeps the draft's tokens while they are the ones sampled and
// drops the rest from the KV cache. So a proposer changes how fast tokens come, never which tokens.
//
// DraftLength is the adaptive part every proposer shares: how many tokens to propose next, between
// draft_min and draft_max, following the acceptance rate of the proposals verified so far.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace graphrun::graph {

class DraftProposer {
  public:
    virtual ~DraftProposer() = default;
    // Replaces `draft` with at most `max_tokens` tokens likely to follow `history` (every token of the
    // sequence so far, oldest first, the last one being the token about to be evaluated); an empty draft
    // when there is no good guess. max_tokens >= 0 is the room the caller has (context, batch, tokens
    // still to generate); the proposer may propose fewer.
    virtual void propose(std::span<const int32_t> history, int64_t max_tokens,
                         std::vector<int32_t>& draft) = 0;
    // The last non-empty draft was verified: its first `accepted` of `proposed` tokens were kept.
    virtual void observe(int64_t proposed, int64_t accepted) = 0;
};

// Limits on the draft length that every proposer takes from the command line.
inline constexpr int64_t kMaxDraftTokens = 64;

// The number of tokens to propose next: draft_max scaled by a moving average of the acceptance rate
// (accepted / proposed per verified draft, the latest weighing 30%), never below draft_min. It starts at
// draft_max; a run of rejected drafts shrinks it, fully accepted ones grow it back.
class DraftLength {
  public:
    // 1 <= draft_min <= draft_max <= kMaxDraftTokens; throws std::invalid_argument naming the bound.
    DraftLength(int64_t draft_min, int64_t draft_max);
    int64_t next() const;  // draft_min .. draft_max
    int64_t min() const { return min_; }
    void observe(int64_t proposed, int64_t accepted);
    double rate() const { return rate_; }  // the moving average, 0 .. 1

  private:
    int64_t min_, max_;
    double rate_ = 1.0;
};

}  // namespace graphrun::graph
