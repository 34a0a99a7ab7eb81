// engine/prompt_lookup.cpp — the n-gram proposer.
#include "engine/prompt_lookup.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace graphrun::graph {

std::vector<int32_t> prompt_lookup_continuation(std::span<const int32_t> history, int64_t ngram,
                                                int64_t max_tokens) {
    const int64_t size = int64_t(history.size());
    if (max_tokens <= 0) return {};
    for (int64_t n = std::min(ngram, size - 1); n >= 1; --n) {
        // The pattern is history[size - n, size); a match at `start` must leave a token after it before the
        // pattern's own position, so start + n < size.
        const std::span<const int32_t> pattern = history.subspan(size_t(size - n));
        int64_t best_start = -1, best_len = 0;
        for (int64_t start = size - n - 1; start >= 0; --start) {
            if (!std::equal(pattern.begin(), pattern.end(), history.begin() + start)) continue;
            const int64_t len = std::min(max_tokens, size - (start + n));
            if (len > best_len) best_start = start, best_len = len;
            if (best_len == max_tokens) break;  // the most recent match with a full draft
        }
        if (best_start >= 0) {
            const auto from = history.begin() + best_start + n;
            return {from, from + best_len};
        }
    }
    return {};
}

PromptLookup::PromptLookup(PromptLookupOptions options)
    : options_(options), length_(options.draft_min, options.draft_max) {
    if (options_.ngram < 1 || options_.ngram > kMaxLookupNgram)
        throw std::invalid_argument("the lookup n-gram (--lookup-ngram) " + std::to_string(options_.ngram) +
                                    " is outside 1 .. " + std::to_string(kMaxLookupNgram));
}

void PromptLookup::propose(std::span<const int32_t> history, int64_t max_tokens,
                           std::vector<int32_t>& draft) {
    draft = prompt_lookup_continuation(history, options_.ngram, std::min(max_tokens, length_.next()));
    // A short draft costs a wider pass for little: below draft_min, none.
    if (int64_t(draft.size()) < length_.min()) draft.clear();
}

}  // namespace graphrun::graph
