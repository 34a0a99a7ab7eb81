// server/backend_embedder.cpp — see backend_embedder.h.
#include "server/backend_embedder.h"

#include <stdexcept>

#include "server/backend.h"

namespace graphrun::server {

BackendEmbedder::BackendEmbedder(std::shared_ptr<const graph::Model> model, int64_t n_ctx, int n_threads) {
    try {
        embedder_ = std::make_unique<graph::Embedder>(std::move(model),
                                                      graph::EmbedderOptions{.n_ctx = n_ctx, .n_threads = n_threads});
    } catch (const std::invalid_argument& e) {
        why_not_ = e.what();
    }
}

std::vector<float> BackendEmbedder::embed(std::span<const int32_t> tokens) {
    if (!embedder_) throw JobRefused("this model serves no embeddings: " + why_not_);
    try {
        return embedder_->embed(tokens);
    } catch (const std::invalid_argument& e) {
        throw JobRefused(e.what());
    }
}

}  // namespace graphrun::server
