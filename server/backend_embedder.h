// server/backend_embedder.h — what a backend answers /v1/embeddings with: an engine/embedding.h
// Embedder of its own (its own KV cache of one context and arena), made at the first request so a
// server that is never asked for embeddings holds no second engine; or, for a graph that declares
// no embedding output or a pooling graphrun does not do, the reason it refuses (known at start).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/embedding.h"

namespace graphrun::server {

class BackendEmbedder {
  public:
    BackendEmbedder(std::shared_ptr<const graph::Model> model, int64_t n_ctx, int n_threads);
    // Embedder::embed_all; throws JobRefused (server/backend.h) with the reason when embeddings cannot
    // be served or a text cannot be taken.
    std::vector<std::vector<float>> embed(std::span<const std::vector<int32_t>> texts);
    int64_t n_embd() const { return n_embd_; }               // 0: no embeddings
    const std::string& refused() const { return why_not_; }  // "" when embeddings are served

  private:
    std::shared_ptr<const graph::Model> model_;
    int64_t n_ctx_;
    int n_threads_;
    int64_t n_embd_ = 0;
    std::string why_not_;
    std::mutex mutex_;  // making embedder_
    std::unique_ptr<graph::Embedder> embedder_;
};

}  // namespace graphrun::server
