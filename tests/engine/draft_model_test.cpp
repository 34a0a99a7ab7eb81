// tests/engine/draft_model_test.cpp — speculative decoding with a draft model gives plain decoding's
// tokens, greedy and seeded-sampled. The shipped model as its own draft guesses the greedy continuation
// exactly, so greedy decoding must accept every guess; a sampled run accepts fewer, and still matches.
#include <gtest/gtest.h>

#include <optional>

#include "engine/draft_model.h"
#include "engine/generate.h"
#include "runtime/text/tokenizer.h"

namespace graphrun {
namespace {

using graph::DraftModel;
using graph::GenerationStats;
using graph::Model;
using graph::Session;

std::shared_ptr<const Model> kjv() {
    static const auto model = Model::load(std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf");
    return model;
}

struct Outcome {
    std::vector<int32_t> tokens;
    GenerationStats stats;
};

Outcome run(const SamplerParams& sampling, bool with_draft, int64_t n_predict) {
    const Tokenizer tokenizer = Tokenizer::from_gguf(kjv()->file());
    const std::vector<int32_t> prompt = tokenizer.encode("In the beginning", tokenizer.add_bos());
    Session session(kjv(), {.n_ctx = 256, .n_threads = 1});
    Sampler sampler(sampling, int32_t(session.n_vocab()));
    std::optional<DraftModel> draft;
    if (with_draft) draft.emplace(kjv(), graph::DraftModelOptions{.draft_min = 1, .draft_max = 6},
                                  graph::SessionOptions{.n_ctx = 256, .n_threads = 1});
    Outcome out;
    out.stats = graph::generate(
        session, sampler, prompt, n_predict, [&](int32_t t) { out.tokens.push_back(t); return true; },
        nullptr, draft ? &*draft : nullptr);
    return out;
}

TEST(DraftModelSpeculative, SelfDraftGreedyEqualsPlainAndAcceptsEverything) {
    const SamplerParams greedy{.temperature = 0.0f};
    const Outcome plain = run(greedy, false, 80);
    const Outcome spec = run(greedy, true, 80);
    EXPECT_EQ(spec.tokens, plain.tokens);
    EXPECT_EQ(spec.stats.decode_steps, plain.stats.decode_steps);
    EXPECT_GT(spec.stats.draft_proposed, 0);
    EXPECT_EQ(spec.stats.draft_accepted, spec.stats.draft_proposed) << "its own greedy guesses were rejected";
    EXPECT_LT(spec.stats.decode_passes, plain.stats.decode_passes);
}

TEST(DraftModelSpeculative, SelfDraftSampledEqualsPlain) {
    const SamplerParams sampled{
        .temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.1f, .seed = 1234};
    const Outcome plain = run(sampled, false, 80);
    const Outcome spec = run(sampled, true, 80);
    EXPECT_EQ(spec.tokens, plain.tokens);
    EXPECT_EQ(spec.stats.decode_passes + spec.stats.draft_accepted, spec.stats.decode_steps);
    EXPECT_GT(spec.stats.draft_proposed, 0);
}

}  // namespace
}  // namespace graphrun
