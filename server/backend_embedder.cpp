// server/backend_embedder.cpp — see backend_embedder.h.
#include "server/backend_embedder.h"

#include <stdexcept>

#include "server/backend.h"

namespace graphrun::server {

BackendEmbedder::BackendEmbedder(std::shared_ptr<const graph::Model> model, int64_t n_ctx, int n_threads)
    : model_(std::move(model)), n_ctx_(n_ctx), n_threads_(n_threads) {
    const std::string no = "this model serves no embeddings: ";
    if (model_->graph().embedding_output < 0) {
        why_not_ = no + "its graph (" + model_->graph().source +
                   ") declares no embedding output (\"outputs\": {\"logits\": ..., \"embedding\": ...})";
        return;
    }
    try {
        graph::pooling_of(*model_);
        n_embd_ = graph::embedding_width(*model_);
    } catch (const std::invalid_argument& e) {
        why_not_ = no + e.what();
    }
}

std::vector<std::vector<float>> BackendEmbedder::embed(std::span<const std::vector<int32_t>> texts) {
    if (n_embd_ == 0) throw JobRefused(why_not_);
    graph::Embedder* embedder = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (!embedder_)
            embedder_ = std::make_unique<graph::Embedder>(
                model_, graph::EmbedderOptions{.n_ctx = n_ctx_, .n_threads = n_threads_});
        embedder = embedder_.get();
    }
    try {
        return embedder->embed_all(texts);
    } catch (const std::invalid_argument& e) {
        throw JobRefused(e.what());
    }
}

}  // namespace graphrun::server
