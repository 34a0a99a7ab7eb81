// server/backend_embedder.h — what a backend answers /v1/embeddings with: an engine/embedding.h
// Embedder of its own (one sequence, its own KV cache and arena, made with the backend), or, for a
// graph that declares no embedding output or a pooling graphrun does not do, the reason it refuses.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/embedding.h"

namespace graphrun::server {

class BackendEmbedder {
  public:
    BackendEmbedder(std::shared_ptr<const graph::Model> model, int64_t n_ctx, int n_threads);
    // Throws JobRefused (server/backend.h) with the reason when embeddings cannot be served.
    std::vector<float> embed(std::span<const int32_t> tokens);
    int64_t n_embd() const { return embedder_ ? embedder_->n_embd() : 0; }

  private:
    std::unique_ptr<graph::Embedder> embedder_;
    std::string why_not_;
};

}  // namespace graphrun::server
