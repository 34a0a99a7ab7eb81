// tests/common/near_tie.h — the parity rule against llama.cpp: graphrun's greedy tokens are llama.cpp's, except
// where llama.cpp's own two best logits are within kNearTie (there, any numeric difference may flip
// the choice, and neither side is wrong).
//
// The check is teacher-forced: graphrun reads llama.cpp's continuation in one batch, and at every one
// of its positions graphrun's argmax must be llama.cpp's token unless llama.cpp's top-2 gap there is
// at most kNearTie. So a flip is judged where it happens, not by the divergence it causes after.
#pragma once

#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/parity_util.h"
#include "tests/common/quantize_test_util.h"

namespace graphrun::testing {

constexpr float kNearTie = 0.02f;

struct NearTieCheck {
    bool ok = true;
    int flips = 0;     // positions whose argmax is not llama.cpp's token
    std::string what;  // one line per flip: position, the two tokens, llama.cpp's gap
};

// ref: llama.cpp's greedy run of `prompt` with logit_gaps.
inline NearTieCheck check_up_to_near_ties(const std::string& model, const std::vector<int32_t>& prompt,
                                          const test::LlamaReference& ref) {
    NearTieCheck c;
    const std::vector<int32_t>& theirs = ref.greedy_ids;
    if (theirs.empty()) return c;
    if (ref.top2_gaps.size() != theirs.size()) {
        c.ok = false;
        c.what = "llama.cpp's reference has no top-2 gaps (run it with logit_gaps)";
        return c;
    }
    std::vector<int32_t> tokens = prompt;
    tokens.insert(tokens.end(), theirs.begin(), theirs.end() - 1);
    int64_t n_vocab = 0;
    const std::vector<float> logits = batch_logits(model, tokens, &n_vocab);
    std::ostringstream what;
    for (size_t k = 0; k < theirs.size(); ++k) {
        const auto row = std::span<const float>(logits).subspan((prompt.size() - 1 + k) * size_t(n_vocab),
                                                                size_t(n_vocab));
        const int32_t ours = argmax(row);
        if (ours == theirs[k]) continue;
        ++c.flips;
        const bool near = ref.top2_gaps[k] <= kNearTie;
        c.ok = c.ok && near;
        what << "position " << k << ": graphrun " << ours << ", llama.cpp " << theirs[k]
             << " (llama.cpp's top-2 gap " << ref.top2_gaps[k] << (near ? ", a near-tie" : ", NOT a near-tie")
             << ")\n";
    }
    c.what = what.str();
    return c;
}

}  // namespace graphrun::testing
