// engine/draft_model.h — a proposer that asks a smaller model: its greedy continuation of the history.
//
//   DraftModel draft(Model::load("small.gguf"), {.draft_min = 1, .draft_max = 8}, {.n_ctx = 512});
//   generate(session, sampler, prompt, n, on_token, nullptr, &draft);   // engine/generate.h
//
//   Engine drafts(small, {.n_ctx = 512, .n_seq = 8});       // the Scheduler's: one engine for all
//   DraftModel a(drafts, {...}), b(drafts, {...});          // a draft sequence each on it
//
// The draft model runs on the same engine code with a KV cache of its own: an engine of its own, or a
// sequence of its own on an engine shared by many drafts (the Scheduler's requests). Its cache is kept
// in step with the history it is shown: positions past the longest common prefix of what it evaluated
// and the new history are truncated (the target's rejected guesses are the draft's own, dropped here),
// so each proposal evaluates only the tokens it has not seen. Guesses are greedy (argmax, lowest id on
// ties): any guess is exact, since the target verifies every guess against its own sampling.
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
    // An engine of its own, with one sequence:
    DraftModel(std::shared_ptr<const Model> model, DraftModelOptions options, SessionOptions session);
    // A sequence of its own on `shared`, which must outlive it (removed again by the destructor):
    DraftModel(Engine& shared, DraftModelOptions options);
    ~DraftModel() override;
    DraftModel(const DraftModel&) = delete;
    DraftModel& operator=(const DraftModel&) = delete;

    void propose(std::span<const int32_t> history, int64_t max_tokens, std::vector<int32_t>& draft) override;
    void observe(int64_t proposed, int64_t accepted) override { length_.observe(proposed, accepted); }
    const DraftLength& length() const { return length_; }
    int64_t n_vocab() const { return engine_->n_vocab(); }

  private:
    // Appends `tokens` to the draft's sequence (in chunks of the engine's max_batch) and returns the
    // last one's row of logits (n_vocab).
    std::span<const float> eval_last(std::span<const int32_t> tokens);

    DraftLength length_;
    std::unique_ptr<Engine> own_;  // the engine of its own, or null on a shared one
    Engine* engine_;
    SeqId seq_;
    std::vector<int32_t> fed_;  // the tokens in the draft's KV cache, position by position
    std::vector<BatchToken> batch_;
};

}  // namespace graphrun::graph
