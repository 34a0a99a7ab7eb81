// graph/session.h — a loaded model and a decoding session over it.
//
//   auto model = Model::load("stories260K.gguf");          // maps weights, binds models/<arch>.json
//   Session session(model, {.n_ctx = 256, .n_threads = 2});
//   auto logits = session.eval(prompt_ids);                 // (n_prompt, n_vocab), KV cache filled
//   logits = session.eval({{next_id}});                     // (1, n_vocab) at position n_prompt
//
// A session plans once per batch size (cached), owns the arena and the KV cache, and runs the
// plan's steps on its executor. Positions continue from the KV cache across calls.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/plan.h"
#include "runtime/aligned_buffer.h"
#include "runtime/executor.h"
#include "runtime/gguf.h"
#include "runtime/kv_cache.h"

namespace graphrun::graph {

class Model {
public:
    // Opens and validates the model file, binds the graph to it and plans one token to check every shape;
    // throws GgufError/GraphError/PlanError. No graph_path: the shipped graph of the file's
    // general.architecture (graph_path_for).
    static std::shared_ptr<const Model> load(const std::string& model_path, const std::string& graph_path = "");
    const GgufFile& file() const { return *file_; }
    const Graph& graph() const { return graph_; }
    int64_t context_length() const { return context_length_; }  // what the model was trained for (0: unknown)

private:
    std::shared_ptr<const GgufFile> file_;
    Graph graph_;
    int64_t context_length_ = 0;
};

struct SessionOptions {
    int64_t n_ctx = 0;        // KV cache positions; 0: the model's context length, at most 2048
    int n_threads = 0;        // 0: every core
    int64_t max_batch = 256;  // longer inputs are evaluated in chunks of this many tokens
};

class Session {
public:
    Session(std::shared_ptr<const Model> model, SessionOptions options = {});

    // Evaluates `tokens` at positions n_past().. and appends them to the KV cache.
    // Returns their logits (tokens.size(), n_vocab), valid until the next call.
    std::span<const float> eval(std::span<const int32_t> tokens);

    void reset() { n_past_ = 0; }  // forget the sequence (the cache rows get overwritten)
    // Keeps the first n positions (0 <= n <= n_past()) and forgets the rest, as reset() does all:
    // a conversation whose history was re-rendered differently rewinds to where they part.
    void truncate(int64_t n) {
        if (n < 0 || n > n_past_)
            throw std::invalid_argument("Session::truncate(" + std::to_string(n) +
                                        "): " + std::to_string(n_past_) + " positions are in use");
        n_past_ = n;
    }
    int64_t n_past() const { return n_past_; }
    int64_t n_ctx() const { return n_ctx_; }
    int64_t n_vocab() const { return n_vocab_; }
    int n_threads() const { return executor_.n_threads(); }
    const Model& model() const { return *model_; }
    // Every step of later evals is timed into `timeline` (graph/profile.h); nullptr stops that.
    void set_timeline(StepTimeline* timeline) { executor_.set_timeline(timeline); }

    // The plan used for batches of n_tokens (made and cached on first use).
    const Plan& plan(int64_t n_tokens) { return bound(n_tokens).plan; }

private:
    struct BoundPlan {
        Plan plan;
        std::vector<Step> steps;
    };
    BoundPlan& bound(int64_t n_tokens);
    std::span<const float> eval_chunk(std::span<const int32_t> tokens);

    std::shared_ptr<const Model> model_;
    SessionOptions options_;
    int64_t n_ctx_ = 0, n_vocab_ = 0, n_past_ = 0;
    std::map<int64_t, std::unique_ptr<BoundPlan>> plans_;
    AlignedBuffer arena_;
    KvCache kv_;
    Executor executor_;
    std::vector<float> chunked_logits_;  // only for inputs longer than max_batch
};

}  // namespace graphrun::graph
