// engine/embedding.cpp — see embedding.h.
#include "engine/embedding.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace graphrun::graph {

const char* pooling_name(Pooling pooling) {
    switch (pooling) {
        case Pooling::Mean: return "mean";
        case Pooling::First: return "cls";
        case Pooling::Last: return "last";
    }
    return "?";
}

Pooling pooling_of(const Model& model) {
    const std::string arch = model.file().find_string("general.architecture").value_or("");
    const std::string key = arch + ".pooling_type";
    const std::optional<int64_t> type = model.file().find_int(key);
    if (!type || *type == 1) return Pooling::Mean;
    if (*type == 2) return Pooling::First;
    if (*type == 3) return Pooling::Last;
    throw std::invalid_argument(key + " is " + std::to_string(*type) +
                                ": graphrun pools embeddings by mean (1), cls (2) or last (3)");
}

Embedder::Embedder(std::shared_ptr<const Model> model, EmbedderOptions options)
    : engine_(model, {.n_ctx = options.n_ctx, .n_seq = 1, .n_threads = options.n_threads, .prefix_cache = false}),
      pooling_(pooling_of(*model)) {
    if (engine_.n_embd() == 0)
        throw std::invalid_argument(model->graph().source +
                                    ": the graph declares no embedding output (\"outputs\": {\"logits\": ..., "
                                    "\"embedding\": ...}, docs/graph-format.md)");
}

std::vector<float> Embedder::embed(std::span<const int32_t> tokens) {
    if (tokens.empty()) throw std::invalid_argument("no tokens to embed");
    if (int64_t(tokens.size()) > engine_.n_ctx())
        throw std::invalid_argument(std::to_string(tokens.size()) + " tokens do not fit the context of " +
                                    std::to_string(engine_.n_ctx()));
    std::lock_guard lock(mutex_);
    const SeqId seq = engine_.add_sequence();
    const size_t n_embd = size_t(engine_.n_embd()), max_batch = size_t(engine_.max_batch());
    std::vector<float> rows(tokens.size() * n_embd);
    try {
        for (size_t start = 0; start < tokens.size(); start += max_batch) {
            const size_t n = std::min(tokens.size() - start, max_batch);
            batch_.clear();
            for (size_t i = 0; i < n; ++i) batch_.push_back({seq, tokens[start + i], true});
            const std::span<const float> part = engine_.embed(batch_);
            std::copy(part.begin(), part.end(), rows.begin() + std::ptrdiff_t(start * n_embd));
        }
    } catch (...) {
        engine_.remove_sequence(seq);
        throw;
    }
    engine_.remove_sequence(seq);
    return pool_embedding(rows, int64_t(n_embd), pooling_);
}

std::vector<float> pool_embedding(std::span<const float> rows, int64_t n_embd, Pooling pooling) {
    const size_t w = size_t(n_embd), n_rows = rows.size() / w;
    std::vector<double> sum(w, 0.0);
    if (pooling == Pooling::Mean) {
        for (size_t r = 0; r < n_rows; ++r)
            for (size_t i = 0; i < w; ++i) sum[i] += rows[r * w + i];
        for (double& v : sum) v /= double(n_rows);
    } else {
        const size_t r = pooling == Pooling::First ? 0 : n_rows - 1;
        for (size_t i = 0; i < w; ++i) sum[i] = rows[r * w + i];
    }
    double norm = 0;
    for (const double v : sum) norm += v * v;
    norm = std::sqrt(norm);
    std::vector<float> out(w);
    for (size_t i = 0; i < w; ++i) out[i] = float(norm > 0 ? sum[i] / norm : 0.0);
    return out;
}

}  // namespace graphrun::graph
