// engine/proposer.cpp — the adaptive draft length.
#include "engine/proposer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace graphrun::graph {

namespace {
// The weight of the latest draft in the moving average: about the last three drafts count.
constexpr double kLatestWeight = 0.3;
}  // namespace

DraftLength::DraftLength(int64_t draft_min, int64_t draft_max) : min_(draft_min), max_(draft_max) {
    if (draft_max < 1 || draft_max > kMaxDraftTokens)
        throw std::invalid_argument("the draft's longest length (--draft-max) " + std::to_string(draft_max) +
                                    " is outside 1 .. " + std::to_string(kMaxDraftTokens));
    if (draft_min < 1 || draft_min > draft_max)
        throw std::invalid_argument("the draft's shortest length (--draft-min) " + std::to_string(draft_min) +
                                    " is outside 1 .. " + std::to_string(draft_max) + " (--draft-max)");
}

int64_t DraftLength::next() const {
    return std::clamp<int64_t>(std::llround(double(max_) * rate_), min_, max_);
}

void DraftLength::observe(int64_t proposed, int64_t accepted) {
    if (proposed <= 0) return;
    const double rate = double(std::clamp<int64_t>(accepted, 0, proposed)) / double(proposed);
    rate_ = (1.0 - kLatestWeight) * rate_ + kLatestWeight * rate;
}

}  // namespace graphrun::graph
