// tests/engine/session_test.cpp — running the whole graph: cached decoding equals full recomputation,
// one thread equals all threads, chunked prompts equal one batch, bad input fails cleanly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "engine/session.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;
using testing::max_relative_error;
using testing::random_tokens;

struct CachedModelCase {
    const char* name;
    int64_t embd, layers, heads, kv_heads, ff;
    DType type;
};

class CachedDecoding : public ::testing::TestWithParam<CachedModelCase> {};

// The logits of token n from the KV-cache path equal those of reprocessing the whole sequence
// 0..n in one batch, for every position of a 64-token sequence.
TEST_P(CachedDecoding, EqualsFullRecomputationAtEveryPosition) {
    const CachedModelCase c = GetParam();
    graph::RandomLlamaSpec spec = testing::spec_of(c.embd, c.layers, c.heads, c.kv_heads, c.ff);
    spec.type = c.type;
    auto model = graph::Model::load(testing::random_model_file(spec, std::string("cached_") + c.name));
    const std::vector<int32_t> tokens = random_tokens(64, 320, 11);

    graph::Session cached(model, {.n_ctx = 64});
    std::vector<std::vector<float>> step_logits;
    for (int32_t id : tokens) {
        auto row = cached.eval(std::span<const int32_t>(&id, 1));
        step_logits.emplace_back(row.begin(), row.end());
    }
    EXPECT_EQ(cached.n_past(), 64);

    graph::Session full(model, {.n_ctx = 64});
    for (size_t n = 1; n <= tokens.size(); ++n) {
        full.reset();
        auto logits = full.eval(std::span<const int32_t>(tokens.data(), n));
        auto last = logits.subspan((n - 1) * size_t(full.n_vocab()));
        EXPECT_LT(max_relative_error(step_logits[n - 1], last), 1e-5) << "position " << n - 1;
    }
}

INSTANTIATE_TEST_SUITE_P(Models, CachedDecoding,
                         ::testing::Values(CachedModelCase{"mha", 24, 2, 3, 3, 40, DType::F32},
                                           CachedModelCase{"gqa2", 32, 2, 4, 2, 72, DType::F32},
                                           CachedModelCase{"gqa4_f16", 48, 2, 8, 2, 100, DType::F16}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Session, OneThreadAndAllThreadsAgree) {
    auto model = graph::Model::load(testing::random_model_file(testing::spec_of(64, 2, 8, 4, 176), "threads"));
    const std::vector<int32_t> tokens = random_tokens(20, 320, 5);
    graph::Session one(model, {.n_ctx = 64, .n_threads = 1});
    graph::Session all(model, {.n_ctx = 64, .n_threads = 0});
    auto a = one.eval(tokens);
    std::vector<float> first(a.begin(), a.end());
    auto b = all.eval(tokens);
    EXPECT_LT(max_relative_error(first, b), 1e-6);
    for (int i = 0; i < 8; ++i) {  // and decoding steps
        const int32_t id = tokens[size_t(i)];
        auto x = one.eval(std::span<const int32_t>(&id, 1));
        std::vector<float> xs(x.begin(), x.end());
        EXPECT_LT(max_relative_error(xs, all.eval(std::span<const int32_t>(&id, 1))), 1e-6);
    }
}

TEST(Session, ChunkedPromptEqualsOneBatch) {
    auto model = graph::Model::load(testing::random_model_file(testing::spec_of(32, 2, 4, 2, 72), "chunks"));
    const std::vector<int32_t> tokens = random_tokens(23, 320, 9);
    graph::Session whole(model, {.n_ctx = 32});
    auto a = whole.eval(tokens);
    std::vector<float> expected(a.begin(), a.end());
    graph::Session chunked(model, {.n_ctx = 32, .max_batch = 5});
    EXPECT_LT(max_relative_error(chunked.eval(tokens), expected), 1e-5);
}

TEST(Session, BadTokensAndFullContextFailWithReasons) {
    auto model = graph::Model::load(testing::random_model_file(testing::spec_of(16, 1, 4, 2, 48), "errors"));
    graph::Session session(model, {.n_ctx = 8});
    const std::vector<int32_t> bad = {1, 320};
    try {
        session.eval(bad);
        FAIL();
    } catch (const std::out_of_range& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("token 1"), HasSubstr("320"), HasSubstr("vocabulary of 320")));
    }
    EXPECT_EQ(session.n_past(), 0);  // nothing was consumed
    const std::vector<int32_t> nine(9, 5);
    try {
        session.eval(nine);
        FAIL();
    } catch (const std::runtime_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("context is full"));
    }
    EXPECT_NO_THROW(session.eval(std::vector<int32_t>(8, 5)));
}

TEST(Session, LoadErrorsNameTheFile) {
    EXPECT_THROW(graph::Model::load("/nonexistent/model.gguf"), GgufError);
    const std::string model = testing::random_model_file(testing::spec_of(16, 1, 4, 2, 48), "load_errors");
    EXPECT_THROW(graph::Model::load(model, "/nonexistent/graph.json"), graph::GraphError);
}

}  // namespace
}  // namespace graphrun
