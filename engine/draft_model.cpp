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
    : length_(options.draft_min, options.draft_max), session_(std::move(model), session) {}

void DraftModel::propose(std::span<const int32_t> history, int64_t max_tokens, std::vector<int32_t>& draft) {
    draft.clear();
    const int64_t n = std::min(max_tokens, length_.next());
    if (n <= 0 || history.empty()) return;
    // Room in the draft's own cache: the history, then every guess but the last (never evaluated).
    if (int64_t(history.size()) + n - 1 > session_.n_ctx()) return;

    // Keep the common prefix, but always re-evaluate at least the last token: its logits give guess 1.
    size_t keep = size_t(std::mismatch(fed_.begin(), fed_.end(), history.begin(), history.end()).first -
                         fed_.begin());
    keep = std::min(keep, history.size() - 1);
    session_.truncate(int64_t(keep));
    fed_.resize(keep);

    std::span<const float> logits = session_.eval(history.subspan(keep), Session::Logits::Last);
    fed_.insert(fed_.end(), history.begin() + std::ptrdiff_t(keep), history.end());
    for (int64_t i = 0; i < n; ++i) {
        const int32_t guess = argmax(logits);
        draft.push_back(guess);
        if (i + 1 == n) break;
        const int32_t one[1] = {guess};
        logits = session_.eval(one, Session::Logits::Last);
        fed_.push_back(guess);
    }
}

}  // namespace graphrun::graph
