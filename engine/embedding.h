// engine/embedding.h — a text's embedding: the graph's "embedding" output (the final hidden state,
// after the final norm, before the output matrix) of every token, pooled and L2-normalised.
//
//   Embedder embedder(model, {.n_ctx = 2048, .n_threads = 2});
//   std::vector<float> e = embedder.embed(ids);                      // n_embd floats, |e| = 1
//   std::vector<std::vector<float>> es = embedder.embed_all(texts);  // several texts share each pass
//
// Pooling is the GGUF's `<arch>.pooling_type` when it declares one (llama.cpp's numbers: 1 mean,
// 2 cls: the first token, 3 last: the last token), else the mean over the tokens; a type graphrun
// does not pool (0 none, 4 rank) is refused when the Embedder is made, naming the key.
// EmbedderOptions::pooling overrides the model's.
//
// Every token's row is read (the plan keeps the embedding output, PlanShape::embedding), so each
// pass also computes every token's logits, which are not read: the plan has no pass that skips them.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "engine/engine.h"

namespace graphrun::graph {

enum class Pooling { Mean, First, Last };
const char* pooling_name(Pooling pooling);  // "mean", "cls", "last"
// The model's pooling (above); throws std::invalid_argument naming the key for a type not pooled here.
Pooling pooling_of(const Model& model);

// The width of the model's embedding output (a plan of one token that keeps it), 0 when its graph
// declares none; throws ops::PlanError when that output is not one row per row of logits.
int64_t embedding_width(const Model& model);

struct EmbedderOptions {
    int64_t n_ctx = 0;  // tokens per text at most; 0: the model's context, at most 2048
    int n_threads = 0;
    // Texts whose tokens share a forward pass at most. The KV cache holds one full context and a
    // block per further text, so short texts share passes and a long one runs alone.
    int64_t n_seq = 4;
    std::optional<Pooling> pooling{};  // instead of the model's
};

// Pools rows of n_embd floats one at a time, then L2-normalises (a zero vector stays zero). The mean
// sums in double, in row order, so it is the same bits however the rows were batched.
class EmbeddingPool {
  public:
    EmbeddingPool(int64_t n_embd, Pooling pooling);
    void add(std::span<const float> row);  // the next token's row, n_embd floats
    std::vector<float> result() const;     // needs at least one row
    int64_t n_rows() const { return n_rows_; }

  private:
    Pooling pooling_;
    std::vector<double> sum_;  // Mean: the sum of the rows; First / Last: the row kept
    int64_t n_rows_ = 0;
};

// Its own engine (no prefix cache, a KV cache of one context and n_seq blocks), so embeddings never
// wait for or disturb the sequences of a scheduler; one call at a time (a lock).
class Embedder {
  public:
    Embedder(std::shared_ptr<const Model> model, EmbedderOptions options = {});
    // Throws std::invalid_argument (naming the text's index and what was wrong) for no tokens, a
    // token outside the vocabulary, or more than n_ctx() tokens; nothing is computed then.
    std::vector<float> embed(std::span<const int32_t> tokens);
    // Each text's embedding, in order. Consecutive texts share forward passes (up to n_seq texts whose
    // blocks fit the KV cache, up to max_batch tokens a pass); every embedding is the bits the text
    // alone gives (the engine's batch invariance).
    std::vector<std::vector<float>> embed_all(std::span<const std::vector<int32_t>> texts);
    int64_t n_embd() const { return engine_.n_embd(); }
    int64_t n_ctx() const { return engine_.n_ctx(); }
    int64_t n_vocab() const { return engine_.n_vocab(); }
    Pooling pooling() const { return pooling_; }

  private:
    void check(std::span<const std::vector<int32_t>> texts) const;

    std::mutex mutex_;
    Engine engine_;
    Pooling pooling_;
    int64_t n_seq_;
    std::vector<BatchToken> batch_;
};

// Pools `rows` (n_rows >= 1, n_embd), row-major, as EmbeddingPool does.
std::vector<float> pool_embedding(std::span<const float> rows, int64_t n_embd, Pooling pooling);

}  // namespace graphrun::graph
