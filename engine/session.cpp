// engine/session.cpp — the single-sequence session over an engine.
#include "engine/session.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace graphrun::graph {

Session::Session(std::shared_ptr<const Model> model, SessionOptions options)
    : engine_(std::move(model), {.n_ctx = options.n_ctx,
                                 .n_seq = 1,
                                 .n_threads = options.n_threads,
                                 .max_batch = options.max_batch,
                                 .prefix_cache = false}) {
    seq_ = engine_.add_sequence();
}

void Session::reset() {
    engine_.remove_sequence(seq_);
    seq_ = engine_.add_sequence();
}

std::span<const float> Session::eval(std::span<const int32_t> tokens, Logits which) {
    if (tokens.empty()) throw std::invalid_argument("eval: no tokens");
    if (n_past() + int64_t(tokens.size()) > n_ctx())
        throw std::runtime_error("context is full: " + std::to_string(n_past()) + " positions used, " +
                                 std::to_string(tokens.size()) + " more do not fit in " +
                                 std::to_string(n_ctx()) + " (raise -c)");
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= n_vocab())
            throw std::out_of_range("token " + std::to_string(i) + " has id " + std::to_string(tokens[i]) +
                                    ", outside the vocabulary of " + std::to_string(n_vocab()));
    const bool all = which == Logits::All;
    const size_t max_batch = size_t(engine_.max_batch());
    if (all && tokens.size() > max_batch) logits_.resize(tokens.size() * size_t(n_vocab()));
    std::span<const float> part;
    for (size_t start = 0; start < tokens.size(); start += max_batch) {
        const size_t n = std::min(tokens.size() - start, max_batch);
        const bool last_chunk = start + n == tokens.size();
        batch_.clear();
        for (size_t i = 0; i < n; ++i)
            batch_.push_back({seq_, tokens[start + i], all || (last_chunk && i + 1 == n)});
        part = engine_.decode(batch_);
        if (all && tokens.size() > max_batch)
            std::copy(part.begin(), part.end(), logits_.begin() + std::ptrdiff_t(start * size_t(n_vocab())));
    }
    if (all && tokens.size() > max_batch) return logits_;
    return part;
}

}  // namespace graphrun::graph
