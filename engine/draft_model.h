// engine/draft_model.h — a proposer that asks a smaller model: its greedy continuation of the history.
//
//   DraftModel draft(Model::load("small.gguf"), {.draft_min = 1, .draft_max = 8}, {.n_ctx = 512});
//   generate(session, sampler, prompt, n, on_token, nullptr, &draft);   // engine/generate.h
//
// The draft model runs on the same engine code with a KV cache of its own. Its cache is kept in step
// with the history it is shown: positions past the longest common prefix of what it evaluated and the
// new history are truncated (the target's rejected guesses are the draft's own, dropped here), so each
// proposal evaluates only the tokens it has not seen. Guesses are greedy (argmax, lowest id on ties):
// any guess is exact, since generate() verifies every guess against the target's own sampling.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/proposer.h"
#include "engine/session.h"

namespace graphrun::graph {

struct DraftModelOptions {
    int64_t draft_min = 1;  // --draft-min
    int64_t draft_max = 8;  // --draft-max
};

class DraftModel : public DraftProposer {
  public:
    // Throws std::invalid_argument naming the option when the draft bounds are out of range.
    DraftModel(std::shared_ptr<const Model> model, DraftModelOptions options, SessionOptions session);
    void propose(std::span<const int32_t> history, int64_t max_tokens, std::vector<int32_t>& draft) override;
    void observe(int64_t proposed, int64_t accepted) override { length_.observe(proposed, accepted); }
    const DraftLength& length() const { return length_; }
    int64_t n_vocab() const { return session_.n_vocab(); }

  private:
    DraftLength length_;
    Session session_;
    std::vector<int32_t> fed_;  // the tokens in the draft's KV cache, position by position
};

}  // namespace graphrun::graph
