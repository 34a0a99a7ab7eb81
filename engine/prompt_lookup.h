// engine/prompt_lookup.h — the prompt-lookup (n-gram) proposer: no second model, the sequence itself.
//
//   history  ... the  king  said  unto  him ... (later) ... the  king  said | ?
//                      \____ match ____/ \_ proposed _/            \_ the last n tokens _/
//
// The last n tokens of the sequence (n from `ngram` down to 1, the longest that matches first) are looked
// up earlier in the prompt and the output; the tokens that followed the match are proposed. Of the matches
// of that length, the most recent one with a full draft of continuation wins, else the one with the
// longest continuation (the most recent of those). Strong where the output quotes its context: edits,
// summaries, code, a passage asked for again, a model that loops.
#pragma once

#include "engine/proposer.h"

namespace graphrun::graph {

struct PromptLookupOptions {
    int64_t ngram = 3;      // the longest run of last tokens looked up (--lookup-ngram), 1 .. kMaxLookupNgram
    int64_t draft_min = 1;  // a match with fewer tokens after it is not proposed (--draft-min)
    int64_t draft_max = 8;  // tokens proposed at most (--draft-max)
};

inline constexpr int64_t kMaxLookupNgram = 16;

class PromptLookup : public DraftProposer {
  public:
    explicit PromptLookup(PromptLookupOptions options);  // throws std::invalid_argument naming the option
    void propose(std::span<const int32_t> history, int64_t max_tokens, std::vector<int32_t>& draft) override;
    void observe(int64_t proposed, int64_t accepted) override { length_.observe(proposed, accepted); }
    const DraftLength& length() const { return length_; }

  private:
    PromptLookupOptions options_;
    DraftLength length_;
};

// The lookup itself, for tests: the continuation (at most max_tokens) of the best match of the last
// n tokens of history, n = ngram .. 1; empty when no suffix of history occurs earlier with a token after it.
std::vector<int32_t> prompt_lookup_continuation(std::span<const int32_t> history, int64_t ngram,
                                                int64_t max_tokens);

}  // namespace graphrun::graph
