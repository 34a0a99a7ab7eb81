// tests/engine/draft_model_test.cpp — speculative decoding with a draft model gives plain decoding's
// tokens, greedy and seeded-sampled. The shipped model as its own draft guesses the greedy continuation
// exactly, so greedy decoding must accept every guess; a sampled run accepts fewer, and still matches.
#include "engine/draft_model.h"

#include <gtest/gtest.h>

#include <optional>

#include "engine/generate.h"
#include "runtime/text/tokenizer.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using graph::DraftModel;
using graph::GenerationStats;
using graph::Model;
using graph::Session;

struct DraftOutcome {
    std::vector<int32_t> tokens;
    GenerationStats stats;
};

DraftOutcome run(const SamplerParams& sampling, bool with_draft, int64_t n_predict) {
    const Tokenizer tokenizer = Tokenizer::from_gguf(testing::kjv_model()->file());
    const std::vector<int32_t> prompt = tokenizer.encode("In the beginning", tokenizer.add_bos());
    Session session(testing::kjv_model(), {.n_ctx = 256, .n_threads = 1});
    Sampler sampler(sampling, int32_t(session.n_vocab()));
    std::optional<DraftModel> draft;
    if (with_draft)
        draft.emplace(testing::kjv_model(), graph::DraftModelOptions{.draft_min = 1, .draft_max = 6},
                      graph::SessionOptions{.n_ctx = 256, .n_threads = 1});
    DraftOutcome out;
    out.stats = graph::generate(
        session, sampler, prompt, n_predict, [&](int32_t t) { out.tokens.push_back(t); return true; },
        nullptr, draft ? &*draft : nullptr);
    return out;
}

TEST(DraftModelSpeculative, SelfDraftGreedyEqualsPlainAndAcceptsEverything) {
    const SamplerParams greedy{.temperature = 0.0f};
    const DraftOutcome plain = run(greedy, false, 80);
    const DraftOutcome spec = run(greedy, true, 80);
    EXPECT_EQ(spec.tokens, plain.tokens);
    EXPECT_EQ(spec.stats.decode_steps, plain.stats.decode_steps);
    EXPECT_GT(spec.stats.draft_proposed, 0);
    EXPECT_EQ(spec.stats.draft_accepted, spec.stats.draft_proposed) << "its own greedy guesses were rejected";
    EXPECT_LT(spec.stats.decode_passes, plain.stats.decode_passes);
}

TEST(DraftModelSpeculative, SelfDraftSampledEqualsPlain) {
    const SamplerParams sampled{
        .temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.1f, .seed = 1234};
    const DraftOutcome plain = run(sampled, false, 80);
    const DraftOutcome spec = run(sampled, true, 80);
    EXPECT_EQ(spec.tokens, plain.tokens);
    EXPECT_EQ(spec.stats.decode_passes + spec.stats.draft_accepted, spec.stats.decode_steps);
    EXPECT_GT(spec.stats.draft_proposed, 0);
}

}  // namespace
}  // namespace graphrun
