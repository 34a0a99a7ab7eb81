// engine/session.h — one sequence over an engine: the simple API for a single decoding stream.
//
//   auto model = Model::load("stories260K.gguf");          // maps weights, binds models/<arch>.json
//   Session session(model, {.n_ctx = 256, .n_threads = 2});
//   auto logits = session.eval(prompt_ids);                 // (n_prompt, n_vocab), KV cache filled
//   logits = session.eval({{next_id}});                     // (1, n_vocab) at position n_prompt
//   logits = session.eval(more_ids, Session::Logits::Last); // only the last token's row (1, n_vocab)
//
// A session is an Engine (engine/engine.h) holding one sequence: plans cached per batch shape, one
// arena, the paged KV cache. Positions continue across calls. Many sequences at once: use the
// Engine, or the Scheduler (engine/scheduler.h) for requests.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "engine/engine.h"

namespace graphrun::graph {

struct SessionOptions {
    int64_t n_ctx = 0;        // KV cache positions; 0: the model's context length, at most 2048
    int n_threads = 0;        // 0: every core
    int64_t max_batch = 256;  // longer inputs are evaluated in chunks of this many tokens
};

class Session {
  public:
    Session(std::shared_ptr<const Model> model, SessionOptions options = {});

    enum class Logits { All, Last };
    // Evaluates `tokens` at positions n_past().. and appends them to the KV cache. Returns their logits,
    // (tokens.size(), n_vocab) or with Last only the last token's (1, n_vocab): the graph then computes
    // the vocabulary matmul for that row alone. Valid until the next call.
    std::span<const float> eval(std::span<const int32_t> tokens, Logits which = Logits::All);

    void reset();  // forget the sequence
    // Keeps the first n positions (0 <= n <= n_past()) and forgets the rest, as reset() does all:
    // a conversation whose history was re-rendered differently rewinds to where they part.
    void truncate(int64_t n) { engine_.truncate(seq_, n); }
    int64_t n_past() const { return engine_.length(seq_); }
    int64_t n_ctx() const { return engine_.n_ctx(); }
    int64_t n_vocab() const { return engine_.n_vocab(); }
    int n_threads() const { return engine_.n_threads(); }
    const Model& model() const { return engine_.model(); }
    Engine& engine() { return engine_; }
    // Every step of later evals is timed into `timeline` (engine/profile.h); nullptr stops that.
    void set_timeline(StepTimeline* timeline) { engine_.set_timeline(timeline); }

    // The plan used for batches of n_tokens with logits for the last (made and cached on first use).
    const Plan& plan(int64_t n_tokens) { return engine_.plan(n_tokens, 1); }

  private:
    Engine engine_;
    SeqId seq_ = 0;
    std::vector<BatchToken> batch_;
    std::vector<float> logits_;
};

}  // namespace graphrun::graph
