// tests/engine/speculative_test.cpp — speculative decoding with the prompt-lookup proposer gives plain
// decoding's tokens, token for token, greedy and seeded-sampled, and leaves the same KV cache and sampler
// behind: on the shipped model, on a random-weight one and on stories260K (when /work/shared has it).
// Each run also says how many guesses were accepted, so a test can show that speculation really ran.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <optional>

#include "engine/generate.h"
#include "engine/prompt_lookup.h"
#include "runtime/text/tokenizer.h"
#include "tests/common/same_bits.h"
#include "tests/common/spec_texts.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using graph::GenerationStats;
using graph::Model;
using graph::PromptLookup;
using graph::PromptLookupOptions;
using graph::Session;
using testing::kGreedy;
using testing::kRepeated;
using testing::same_bits;

struct SpeculativeOutcome {
    std::vector<int32_t> tokens;  // every token handed to on_token
    GenerationStats stats;
    int64_t n_past = 0;           // the session's positions at the end
    std::vector<float> next_row;  // the logits after feeding one more token: the KV cache left behind
    int32_t next_sample = -1;     // the sampler's next token from them: its history and RNG left behind
};

struct Setup {
    int64_t n_predict = 48;
    int64_t n_ctx = 256;
    int64_t stop_after = -1;  // on_token returns false at this token (counting from 1), like an EOS
    SamplerParams sampling{.temperature = 0.0f};
};

SpeculativeOutcome run(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& prompt,
                       const Setup& setup, std::optional<PromptLookupOptions> lookup) {
    Session session(model, {.n_ctx = setup.n_ctx, .n_threads = 1});
    Sampler sampler(setup.sampling, int32_t(session.n_vocab()));
    std::optional<PromptLookup> proposer;
    if (lookup) proposer.emplace(*lookup);
    SpeculativeOutcome out;
    out.stats = graph::generate(
        session, sampler, prompt, setup.n_predict,
        [&](int32_t token) {
            out.tokens.push_back(token);
            return int64_t(out.tokens.size()) != setup.stop_after;
        },
        nullptr, proposer ? &*proposer : nullptr);
    out.n_past = session.n_past();
    if (session.n_past() < session.n_ctx()) {
        const int32_t feed =
            out.stats.unevaluated_token >= 0 ? out.stats.unevaluated_token : out.tokens.back();
        const std::span<const float> row = session.eval(std::span<const int32_t>(&feed, 1));
        out.next_row.assign(row.begin(), row.end());
        out.next_sample = sampler.sample(row);
    }
    return out;
}

// Speculative against plain: the same tokens, stop, cache and sampler. Returns the speculative run.
SpeculativeOutcome expect_same_as_plain(const std::shared_ptr<const Model>& model,
                                        const std::vector<int32_t>& prompt, const Setup& setup,
                                        PromptLookupOptions lookup = {}) {
    const SpeculativeOutcome plain = run(model, prompt, setup, std::nullopt);
    const SpeculativeOutcome spec = run(model, prompt, setup, lookup);
    EXPECT_EQ(spec.tokens, plain.tokens);
    EXPECT_EQ(spec.stats.generated_tokens, plain.stats.generated_tokens);
    EXPECT_EQ(spec.stats.decode_steps, plain.stats.decode_steps);
    EXPECT_EQ(spec.stats.context_full, plain.stats.context_full);
    EXPECT_EQ(spec.stats.unevaluated_token, plain.stats.unevaluated_token);
    EXPECT_EQ(spec.n_past, plain.n_past);
    EXPECT_TRUE(same_bits(spec.next_row, plain.next_row)) << "the KV caches left behind differ";
    EXPECT_EQ(spec.next_sample, plain.next_sample);
    // Plain decoding: one pass per fed-back token, nothing guessed.
    EXPECT_EQ(plain.stats.decode_passes, plain.stats.decode_steps);
    EXPECT_EQ(plain.stats.draft_proposed, 0);
    // Speculative: every accepted guess saved a pass.
    EXPECT_EQ(spec.stats.decode_passes + spec.stats.draft_accepted, spec.stats.decode_steps);
    EXPECT_LE(spec.stats.draft_accepted, spec.stats.draft_proposed);
    return spec;
}

const SamplerParams kSampled{
    .temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.1f, .seed = 1234};
const SamplerParams kHot{.temperature = 1.5f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 99};

std::vector<int32_t> kjv_ids(const std::string& text) {
    const Tokenizer tokenizer = Tokenizer::from_gguf(testing::kjv_model()->file());
    return tokenizer.encode(text, tokenizer.add_bos());
}

TEST(Speculative, ShippedModelGreedyRepeatedTextAcceptsGuesses) {
    const SpeculativeOutcome spec = expect_same_as_plain(testing::kjv_model(), kjv_ids(kRepeated),
                                                         {.n_predict = 64, .sampling = kGreedy});
    EXPECT_GT(spec.stats.draft_accepted, 0) << "lookup accepted nothing: speculation did not run";
    EXPECT_LT(spec.stats.decode_passes, spec.stats.decode_steps);
}

TEST(Speculative, ShippedModelSampledRepeatedTextAcceptsGuesses) {
    const SpeculativeOutcome spec = expect_same_as_plain(testing::kjv_model(), kjv_ids(kRepeated),
                                                         {.n_predict = 64, .sampling = kSampled});
    EXPECT_GT(spec.stats.draft_accepted, 0) << "lookup accepted nothing: speculation did not run";
}

TEST(Speculative, ShippedModelFreeContinuation) {
    const std::vector<int32_t> prompt = kjv_ids("In the beginning");
    for (const SamplerParams& sampling : {kGreedy, kSampled, kHot}) {
        SCOPED_TRACE(sampling.temperature);
        const SpeculativeOutcome spec =
            expect_same_as_plain(testing::kjv_model(), prompt, {.n_predict = 96, .sampling = sampling});
        EXPECT_GT(spec.stats.draft_proposed, 0);
    }
}

TEST(Speculative, StopsWhereAndAsPlainDecodingDoes) {
    const std::vector<int32_t> prompt = kjv_ids(kRepeated);
    for (const SamplerParams& sampling : {kGreedy, kSampled}) {
        SCOPED_TRACE(sampling.temperature);
        // on_token stops in the middle of accepted guesses (an end-of-generation token would), n_predict
        // ends a pass early, the context fills while guesses are in the cache.
        for (int64_t stop_after : {1, 2, 5, 13, 30})
            expect_same_as_plain(testing::kjv_model(), prompt,
                                 {.n_predict = 64, .stop_after = stop_after, .sampling = sampling});
        for (int64_t n_predict : {1, 2, 3, 7, 19})
            expect_same_as_plain(testing::kjv_model(), prompt,
                                 {.n_predict = n_predict, .sampling = sampling});
        const int64_t n_ctx = int64_t(prompt.size()) + 21;
        const SpeculativeOutcome full = expect_same_as_plain(
            testing::kjv_model(), prompt, {.n_predict = -1, .n_ctx = n_ctx, .sampling = sampling});
        EXPECT_TRUE(full.stats.context_full);
        EXPECT_EQ(full.n_past, n_ctx);
    }
}

TEST(Speculative, DraftLengthsAndNgramsGiveTheSameTokens) {
    const std::vector<int32_t> prompt = kjv_ids(kRepeated);
    for (PromptLookupOptions lookup : {PromptLookupOptions{.ngram = 1, .draft_min = 1, .draft_max = 1},
                                       PromptLookupOptions{.ngram = 2, .draft_min = 2, .draft_max = 4},
                                       PromptLookupOptions{.ngram = 5, .draft_min = 1, .draft_max = 16}}) {
        SCOPED_TRACE(lookup.draft_max);
        const SpeculativeOutcome spec = expect_same_as_plain(testing::kjv_model(), prompt,
                                                             {.n_predict = 48, .sampling = kSampled}, lookup);
        EXPECT_GT(spec.stats.draft_accepted, 0);
    }
}

TEST(Speculative, RandomWeightModel) {
    const auto model =
        Model::load(testing::random_model_file(testing::spec_of(64, 2, 4, 2, 96, 320), "spec_random"));
    // A random token run given three times: guesses come from it whatever the weights make of it.
    std::vector<int32_t> prompt = {1};
    for (int repeat = 0; repeat < 3; ++repeat)
        for (int32_t t : {17, 204, 9, 311, 56, 56, 140, 2, 77, 250}) prompt.push_back(t);
    for (const SamplerParams& sampling : {kGreedy, kSampled, kHot}) {
        SCOPED_TRACE(sampling.temperature);
        const SpeculativeOutcome spec =
            expect_same_as_plain(model, prompt, {.n_predict = 80, .sampling = sampling});
        EXPECT_GT(spec.stats.draft_proposed, 0);
    }
}

TEST(Speculative, Stories260K) {
    const std::string path = testing::shared_dir() + "/models/stories260K.gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not there";
    const auto model = Model::load(path);
    const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
    const std::string story = "Lily saw a big red ball in the park. She ran to the ball and kicked it. ";
    const std::vector<int32_t> repeated =
        tokenizer.encode(story + story + "Lily saw a big", tokenizer.add_bos());
    const SpeculativeOutcome greedy =
        expect_same_as_plain(model, repeated, {.n_predict = 64, .sampling = kGreedy});
    EXPECT_GT(greedy.stats.draft_accepted, 0) << "lookup accepted nothing: speculation did not run";
    expect_same_as_plain(model, repeated, {.n_predict = 64, .sampling = kSampled});
    expect_same_as_plain(model, tokenizer.encode("Once upon a time", tokenizer.add_bos()),
                         {.n_predict = 96, .sampling = kHot});
}

}  // namespace
}  // namespace graphrun
