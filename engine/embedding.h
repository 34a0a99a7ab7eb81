// engine/embedding.h — a text's embedding: the graph's "embedding" output (the final hidden state,
// after the final norm, before the output matrix) of every token, pooled and L2-normalised.
//
//   Embedder embedder(model, {.n_ctx = 2048, .n_threads = 2});
//   std::vector<float> e = embedder.embed(ids);            // n_embd floats, |e| = 1
//
// Pooling is the GGUF's `<arch>.pooling_type` when it declares one (llama.cpp's numbers: 1 mean,
// 2 cls: the first token, 3 last: the last token), else the mean over the tokens; a type graphrun
// does not pool (0 none, 4 rank) is refused when the Embedder is made, naming the key.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "engine/engine.h"

namespace graphrun::graph {

enum class Pooling { Mean, First, Last };
const char* pooling_name(Pooling pooling);  // "mean", "cls", "last"
// The model's pooling (above); throws std::invalid_argument naming the key for a type not pooled here.
Pooling pooling_of(const Model& model);

struct EmbedderOptions {
    int64_t n_ctx = 0;  // tokens per text at most; 0: the model's context, at most 2048
    int n_threads = 0;
};

// Its own engine of one sequence (no prefix cache), so embeddings never wait for or disturb the
// sequences of a scheduler; one text at a time (embed() takes a lock).
class Embedder {
  public:
    Embedder(std::shared_ptr<const Model> model, EmbedderOptions options = {});
    // Throws std::invalid_argument for no tokens, a token outside the vocabulary, or more than n_ctx().
    std::vector<float> embed(std::span<const int32_t> tokens);
    int64_t n_embd() const { return engine_.n_embd(); }
    int64_t n_ctx() const { return engine_.n_ctx(); }
    Pooling pooling() const { return pooling_; }

  private:
    std::mutex mutex_;
    Engine engine_;
    Pooling pooling_;
    std::vector<BatchToken> batch_;
};

// Pools `rows` (n_rows, n_embd), row-major, and L2-normalises the result (a zero vector stays zero).
// The mean sums in double, in row order, so it is the same bits however the rows were computed.
std::vector<float> pool_embedding(std::span<const float> rows, int64_t n_embd, Pooling pooling);

}  // namespace graphrun::graph
