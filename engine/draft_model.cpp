// engine/draft_model.cpp — the draft model's greedy guesses over a KV cache kept in step with history.
#include "engine/draft_model.h"

#include <algorithm>

namespace graphrun::graph {

namespace {
// Greedy choice: the first maximum, so the guess is a pure function of the logits' bits.
int32_t argmax(std::span<const float> row) {
    return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
}
}  // namespace

DraftModel::DraftModel(std::shared_ptr<const Model> model, DraftModelOptions options, SessionOptions session)
    : length_(options.draft_min, options.draft_max),
      own_(std::make_unique<Engine>(std::move(model), EngineOptions{.n_ctx = session.n_ctx,
                                                                    .n_seq = 1,
                                                                    .n_threads = session.n_threads,
                                                                    .max_batch = session.max_batch,
                                                                    .prefix_cache = false})),
      engine_(own_.get()),
      seq_(engine_->add_sequence()) {}

DraftModel::DraftModel(Engine& shared, DraftModelOptions options)
    : length_(options.draft_min, options.draft_max), engine_(&shared), seq_(engine_->add_sequence()) {}

DraftModel::~DraftModel() {
    if (!own_) engine_->remove_sequence(seq_);
}

std::span<const float> DraftModel::eval_last(std::span<const int32_t> tokens) {
    std::span<const float> logits;
    const size_t chunk = size_t(engine_->max_batch());
    for (size_t at = 0; at < tokens.size(); at += chunk) {
        const size_t n = std::min(chunk, tokens.size() - at);
        batch_.clear();
        for (size_t i = 0; i < n; ++i) batch_.push_back({seq_, tokens[at + i], at + i + 1 == tokens.size()});
        logits = engine_->decode(batch_);
    }
    return logits;
}

void DraftModel::propose(std::span<const int32_t> history, int64_t max_tokens, std::vector<int32_t>& draft) {
    draft.clear();
    const int64_t n = std::min(max_tokens, length_.next());
    if (n <= 0 || history.empty()) return;
    // Room in the draft's own cache: the history, then every guess but the last (never evaluated).
    if (int64_t(history.size()) + n - 1 > engine_->n_ctx()) return;

    // Keep the common prefix, but always re-evaluate at least the last token: its logits give guess 1.
    size_t keep = size_t(std::mismatch(fed_.begin(), fed_.end(), history.begin(), history.end()).first -
                         fed_.begin());
    keep = std::min(keep, history.size() - 1);
    engine_->truncate(seq_, int64_t(keep));
    fed_.resize(keep);

    std::span<const float> logits = eval_last(history.subspan(keep));
    fed_.insert(fed_.end(), history.begin() + std::ptrdiff_t(keep), history.end());
    for (int64_t i = 0; i < n; ++i) {
        const int32_t guess = argmax(logits);
        draft.push_back(guess);
        if (i + 1 == n) break;
        const int32_t one[1] = {guess};
        logits = eval_last(one);
        fed_.push_back(guess);
    }
}

}  // namespace graphrun::graph
