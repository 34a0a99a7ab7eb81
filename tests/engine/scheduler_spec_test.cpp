// tests/engine/scheduler_spec_test.cpp — speculative decoding in the Scheduler: with prompt lookup and with
// a draft model, for 1, 4 and 8 sequences, greedy and seeded-sampled, continuous and static, every request
// gets the tokens, the logits' bits and the finish that the same scheduler gives it without speculation;
// on the shipped model, on stories260K (when /work/shared has it) and on random-weight models. The
// metrics show that guesses were made and kept; bad speculation settings and a draft model of another
// vocabulary are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "engine/scheduler.h"
#include "runtime/text/grammar.h"
#include "runtime/text/grammar_vocab.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/vocab_match.h"
#include "tests/common/same_bits.h"
#include "tests/common/spec_texts.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using graph::FinishReason;
using graph::Model;
using graph::Policy;
using graph::Request;
using graph::Scheduler;
using graph::SpecMode;
using graph::Speculation;
using graph::TokenEvent;
using ::testing::HasSubstr;
using testing::kGreedy;
using testing::kRepeated;
using testing::same_bits;

struct SpecOutcome {
    std::vector<int32_t> tokens;
    std::vector<float> logits;  // every token's row, one after the other
    FinishReason finish = FinishReason::None;
};

struct Run {
    std::vector<SpecOutcome> outcomes;
    graph::SchedulerMetrics metrics;
};

struct SpecSetup {
    std::shared_ptr<const Model> model{};
    std::shared_ptr<const Model> draft{};  // for SpecMode::Draft
    Policy policy = Policy::Continuous;
    int64_t n_ctx = 256;
    int64_t step_tokens = 64;
};

Run run(const SpecSetup& setup, const std::vector<Request>& requests, Speculation speculation) {
    Scheduler scheduler(setup.model, {.policy = setup.policy,
                                      .parallel = int64_t(requests.size()),
                                      .max_queue = int64_t(requests.size()),
                                      .n_ctx = setup.n_ctx,
                                      .step_tokens = setup.step_tokens,
                                      .n_threads = 1,
                                      .speculation = speculation,
                                      .draft_model = speculation.mode == SpecMode::Draft ? setup.draft : nullptr});
    Run out;
    out.outcomes.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i)
        scheduler.submit(requests[i], [&out, i](const TokenEvent& e) {
            SpecOutcome& o = out.outcomes[i];
            if (e.token >= 0) {
                o.tokens.push_back(e.token);
                o.logits.insert(o.logits.end(), e.logits.begin(), e.logits.end());
            }
            if (e.finish != FinishReason::None) o.finish = e.finish;
        });
    scheduler.run_until_idle();
    out.metrics = scheduler.metrics();
    EXPECT_EQ(out.metrics.kv_blocks_in_use, 0);
    return out;
}

// Speculative against plain, request by request. Returns the speculative run's metrics.
graph::SchedulerMetrics expect_same_as_plain(const SpecSetup& setup, const std::vector<Request>& requests,
                                             Speculation speculation) {
    const Run plain = run(setup, requests, {});
    const Run spec = run(setup, requests, speculation);
    for (size_t i = 0; i < requests.size(); ++i) {
        SCOPED_TRACE("request " + std::to_string(i));
        EXPECT_EQ(spec.outcomes[i].tokens, plain.outcomes[i].tokens);
        EXPECT_TRUE(same_bits(spec.outcomes[i].logits, plain.outcomes[i].logits)) << "the rows' bits differ";
        EXPECT_EQ(spec.outcomes[i].finish, plain.outcomes[i].finish);
    }
    EXPECT_EQ(plain.metrics.draft_proposed, 0);
    EXPECT_EQ(plain.metrics.decode_tokens, plain.metrics.decode_turns);
    EXPECT_EQ(spec.metrics.generated_tokens, plain.metrics.generated_tokens);
    // Each turn samples its token and one more per guess kept; a guess is kept at most once.
    EXPECT_EQ(spec.metrics.decode_tokens, spec.metrics.decode_turns + spec.metrics.draft_accepted);
    EXPECT_LE(spec.metrics.draft_accepted, spec.metrics.draft_proposed);
    EXPECT_GT(spec.metrics.draft_proposed, 0) << "nothing was guessed: speculation did not run";
    return spec.metrics;
}

SamplerParams sampled(uint64_t seed) {
    return {.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.1f, .seed = seed};
}

// n requests, greedy or seeded (seed 100 + i); every other one repeats `repeated` (what lookup guesses
// well), the others continue `free`; max_tokens varies so that some end inside a pass of guesses.
std::vector<Request> requests_of(size_t n, bool greedy, const std::vector<int32_t>& repeated,
                                 const std::vector<int32_t>& free, const std::vector<int32_t>& stop_ids = {}) {
    std::vector<Request> requests;
    for (size_t i = 0; i < n; ++i) {
        Request r;
        r.prompt = i % 2 == 0 ? repeated : free;
        r.sampling = greedy ? kGreedy : sampled(100 + i);
        r.max_tokens = i == 1 ? 3 : 40 + int64_t(i) * 5;
        r.stop_ids = stop_ids;
        requests.push_back(r);
    }
    return requests;
}

std::vector<int32_t> encode(const Model& model, const std::string& text) {
    const Tokenizer tokenizer = Tokenizer::from_gguf(model.file());
    return tokenizer.encode(text, tokenizer.add_bos());
}

const Speculation kLookup{.mode = SpecMode::Lookup, .draft_min = 1, .draft_max = 6, .ngram = 3};
const Speculation kDraft{.mode = SpecMode::Draft, .draft_min = 1, .draft_max = 5};

TEST(SchedulerSpeculative, ShippedModelLookupAndDraftEqualPlain) {
    const SpecSetup setup{.model = testing::kjv_model(), .draft = testing::kjv_model()};
    const std::vector<int32_t> repeated = encode(*setup.model, kRepeated);
    const std::vector<int32_t> free = encode(*setup.model, "In the beginning");
    for (size_t n : {1, 4, 8})
        for (bool greedy : {true, false}) {
            SCOPED_TRACE(std::to_string(n) + (greedy ? " greedy" : " sampled"));
            const std::vector<Request> requests = requests_of(n, greedy, repeated, free);
            const auto lookup = expect_same_as_plain(setup, requests, kLookup);
            EXPECT_GT(lookup.draft_accepted, 0) << "lookup kept nothing of the repeated passage";
            // The model as its own draft guesses its own greedy choices: greedy keeps every guess.
            const auto draft = expect_same_as_plain(setup, requests, kDraft);
            EXPECT_GT(draft.draft_accepted, 0);
            if (greedy) {
                EXPECT_EQ(draft.draft_accepted, draft.draft_proposed);
            }
        }
}

TEST(SchedulerSpeculative, StaticPolicyEqualsPlain) {
    const SpecSetup setup{.model = testing::kjv_model(), .draft = testing::kjv_model(), .policy = Policy::Static};
    const std::vector<int32_t> repeated = encode(*setup.model, kRepeated);
    const std::vector<int32_t> free = encode(*setup.model, "And the LORD spake unto Moses");
    for (bool greedy : {true, false}) {
        SCOPED_TRACE(greedy ? "greedy" : "sampled");
        const std::vector<Request> requests = requests_of(4, greedy, repeated, free);
        EXPECT_GT(expect_same_as_plain(setup, requests, kLookup).draft_accepted, 0);
        expect_same_as_plain(setup, requests, kDraft);
    }
}

TEST(SchedulerSpeculative, StopsContextAndStepBudgetAsPlainDecoding) {
    const auto model = testing::kjv_model();
    const std::vector<int32_t> repeated = encode(*model, kRepeated);
    const std::vector<int32_t> free = encode(*model, "In the beginning");
    // A stop id inside the passage the guesses repeat: requests end in the middle of kept guesses.
    const std::vector<int32_t> light = encode(*model, " light");
    const std::vector<int32_t> stop_ids = {light.back()};
    for (bool greedy : {true, false}) {
        SCOPED_TRACE(greedy ? "greedy" : "sampled");
        expect_same_as_plain({.model = model, .draft = model}, requests_of(4, greedy, repeated, free, stop_ids),
                             kLookup);
        // The context fills while guesses are in the cache; a pass too small for everyone's guesses.
        expect_same_as_plain({.model = model, .draft = model, .n_ctx = int64_t(repeated.size()) + 21},
                             requests_of(4, greedy, repeated, repeated), kLookup);
        expect_same_as_plain({.model = model, .draft = model, .step_tokens = 10},
                             requests_of(8, greedy, repeated, free), kDraft);
    }
}

TEST(SchedulerSpeculative, GrammarRequestsKeepOnlyGuessesTheGrammarAllows) {
    const auto model = testing::kjv_model();
    const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
    auto constraint = std::make_shared<GrammarConstraint>();
    // Words of lower-case letters between spaces and the passage's marks: the model's capitals are refused.
    constraint->grammar = std::make_shared<const Grammar>(grammar_parse("root ::= [a-z ,.:]+"));
    constraint->vocab = GrammarVocab::from_tokenizer(tokenizer);
    std::vector<Request> requests = requests_of(4, true, encode(*model, kRepeated), encode(*model, "In the"));
    for (size_t i = 0; i < requests.size(); ++i) {
        requests[i].sampling = i % 2 ? sampled(7 + i) : kGreedy;
        requests[i].sampling.grammar = constraint;
    }
    expect_same_as_plain({.model = model, .draft = model}, requests, kLookup);
    const auto draft = expect_same_as_plain({.model = model, .draft = model}, requests, kDraft);
    EXPECT_GT(draft.draft_accepted, 0);
}

TEST(SchedulerSpeculative, RandomWeightModels) {
    const auto model = Model::load(testing::random_model_file(testing::spec_of(64, 2, 4, 2, 96), "sched_spec"));
    // Another random model of the same vocabulary: a draft whose guesses are mostly wrong.
    const auto other =
        Model::load(testing::random_model_file(testing::spec_of(32, 1, 2, 1, 64, 320, 99), "sched_spec_draft"));
    std::vector<int32_t> repeated = {1};
    for (int repeat = 0; repeat < 3; ++repeat)
        for (int32_t t : {17, 204, 9, 311, 56, 56, 140, 2, 77, 250}) repeated.push_back(t);
    const std::vector<int32_t> free = testing::random_tokens(12, 320, 5);
    for (size_t n : {1, 4, 8})
        for (bool greedy : {true, false}) {
            SCOPED_TRACE(std::to_string(n) + (greedy ? " greedy" : " sampled"));
            const std::vector<Request> requests = requests_of(n, greedy, repeated, free);
            expect_same_as_plain({.model = model, .draft = nullptr}, requests, kLookup);
            expect_same_as_plain({.model = model, .draft = other}, requests, kDraft);
            const auto self = expect_same_as_plain({.model = model, .draft = model}, requests, kDraft);
            if (greedy) {
                EXPECT_EQ(self.draft_accepted, self.draft_proposed);
            }
        }
}

TEST(SchedulerSpeculative, Stories260K) {
    const std::string path = testing::shared_dir() + "/models/stories260K.gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not there";
    const auto model = Model::load(path);
    const std::string story = "Lily saw a big red ball in the park. She ran to the ball and kicked it. ";
    const std::vector<int32_t> repeated = encode(*model, story + story + "Lily saw a big");
    const std::vector<int32_t> free = encode(*model, "Once upon a time");
    for (size_t n : {1, 4, 8})
        for (bool greedy : {true, false}) {
            SCOPED_TRACE(std::to_string(n) + (greedy ? " greedy" : " sampled"));
            const std::vector<Request> requests = requests_of(n, greedy, repeated, free);
            EXPECT_GT(expect_same_as_plain({.model = model, .draft = nullptr}, requests, kLookup).draft_accepted, 0);
            expect_same_as_plain({.model = model, .draft = model}, requests, kDraft);
        }
}

TEST(SchedulerSpeculative, BadSettingsAndAnotherVocabularyAreRefused) {
    const auto model = testing::kjv_model();
    const auto random = Model::load(testing::random_model_file(testing::spec_of(32, 1, 2, 1, 64), "sched_spec_vocab"));
    EXPECT_THROW(Scheduler(model, {.draft_model = random}), VocabMismatch);
    try {
        Scheduler scheduler(model, {.speculation = {.mode = SpecMode::Draft}});
        ADD_FAILURE() << "draft speculation without a draft model was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), HasSubstr("--model-draft"));
    }
    EXPECT_THROW(Scheduler(model, {.speculation = {.mode = SpecMode::Lookup, .draft_max = 0}}),
                 std::invalid_argument);

    Scheduler scheduler(model, {.n_threads = 1});
    auto refusal = [&](Speculation s) -> std::string {
        try {
            scheduler.submit({.prompt = {1, 2, 3}, .speculation = s}, nullptr);
        } catch (const graph::RequestRefused& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_THAT(refusal({.mode = SpecMode::Draft}), HasSubstr("speculation: draft needs a draft model"));
    EXPECT_THAT(refusal({.mode = SpecMode::Lookup, .draft_min = 5, .draft_max = 4}), HasSubstr("--draft-min"));
    EXPECT_THAT(refusal({.mode = SpecMode::Lookup, .draft_max = 65}), HasSubstr("--draft-max"));
    EXPECT_THAT(refusal({.mode = SpecMode::Lookup, .ngram = 0}), HasSubstr("--lookup-ngram"));
    EXPECT_TRUE(scheduler.idle());
}

}  // namespace
}  // namespace graphrun
