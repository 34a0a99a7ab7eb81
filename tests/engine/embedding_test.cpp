// tests/engine/embedding_test.cpp — engine/embedding.h: a text's embedding is its final hidden states
// (computed separately, by a graph whose only output is the final norm), pooled and L2-normalised;
// several texts in one call are the bits of each alone; the pooling types pick what they say.
#include "engine/embedding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tests/common/graph_test_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using graph::Pooling;
using ::testing::HasSubstr;

constexpr int64_t kEmbd = 32;

std::string embedding_model_file() {
    return testing::random_model_file(testing::spec_of(kEmbd, 2, 4, 2, 72), "embedding");
}

// llama.json whose one output is the final norm: its "logits" are the final hidden state, read by
// Engine::decode like any logits (the output matrix is left unread). Its engine takes the width of
// that output for the vocabulary, so the texts here are of tokens below kEmbd (tokens of the model
// all the same: control and byte tokens).
std::shared_ptr<const graph::Model> hidden_state_model() {
    const std::string path = (testing::test_temp_dir() / "hidden_state.json").string();
    std::string text = testing::replace_once(testing::llama_json(), "\"unread_tensors\": \"refuse\"",
                                             "\"unread_tensors\": \"allow\"");
    text = testing::replace_once(text, R"("outputs": { "logits": "logits", "embedding": "out_norm" })",
                                 R"("outputs": ["out_norm"])");
    std::ofstream(path) << text;
    return graph::Model::load(embedding_model_file(), path);
}

// Every token's final hidden state, (n_tokens, n_embd), by one decode of the hidden-state graph.
std::vector<float> hidden_states(const std::vector<int32_t>& tokens) {
    static const auto model = hidden_state_model();
    graph::Engine engine(model, {.n_ctx = 512, .n_threads = 1, .max_batch = 512, .prefix_cache = false});
    EXPECT_EQ(engine.n_vocab(), kEmbd);
    const graph::SeqId seq = engine.add_sequence();
    std::vector<graph::BatchToken> batch;
    for (const int32_t t : tokens) batch.push_back({seq, t, true});
    const std::span<const float> rows = engine.decode(batch);
    return {rows.begin(), rows.end()};
}

// The plain loop: mean (or one row) in double, divided by its Euclidean norm.
std::vector<float> reference_pool(const std::vector<float>& rows, Pooling pooling) {
    const size_t n = rows.size() / kEmbd;
    std::vector<double> v(kEmbd, 0.0);
    for (size_t r = 0; r < n; ++r) {
        if (pooling == Pooling::First && r != 0) continue;
        if (pooling == Pooling::Last && r != n - 1) continue;
        for (size_t i = 0; i < kEmbd; ++i) v[i] += rows[r * kEmbd + i];
    }
    if (pooling == Pooling::Mean)
        for (double& x : v) x /= double(n);
    double norm = 0;
    for (const double x : v) norm += x * x;
    std::vector<float> out(kEmbd);
    for (size_t i = 0; i < kEmbd; ++i) out[i] = float(v[i] / std::sqrt(norm));
    return out;
}

double norm_of(const std::vector<float>& v) {
    double n = 0;
    for (const float x : v) n += double(x) * x;
    return std::sqrt(n);
}

std::shared_ptr<const graph::Model> model() {
    static const auto m = graph::Model::load(embedding_model_file());
    return m;
}

graph::Embedder embedder(Pooling pooling, int64_t n_seq = 4) {
    return graph::Embedder(model(), {.n_ctx = 320, .n_threads = 1, .n_seq = n_seq, .pooling = pooling});
}

TEST(Embedding, IsThePooledNormalisedFinalHiddenState) {
    const std::vector<int32_t> text = testing::random_tokens(40, kEmbd, 3);
    const std::vector<float> hidden = hidden_states(text);
    for (const Pooling pooling : {Pooling::Mean, Pooling::First, Pooling::Last}) {
        graph::Embedder e = embedder(pooling);
        EXPECT_EQ(e.n_embd(), kEmbd);
        const std::vector<float> got = e.embed(text), want = reference_pool(hidden, pooling);
        ASSERT_EQ(got.size(), size_t(kEmbd));
        for (size_t i = 0; i < got.size(); ++i)
            EXPECT_NEAR(got[i], want[i], 1e-6) << graph::pooling_name(pooling) << " [" << i << "]";
        EXPECT_NEAR(norm_of(got), 1.0, 1e-6) << graph::pooling_name(pooling);
    }
}

// Engine::embed's rows are the final norm's rows bit for bit: the same kernels on the same inputs,
// only the output read differs (the hidden-state graph stops before the output matrix).
TEST(Embedding, EngineRowsAreTheHiddenStatesBitForBit) {
    const std::vector<int32_t> text = testing::random_tokens(21, kEmbd, 8);
    graph::Engine engine(model(), {.n_ctx = 64, .n_threads = 1, .prefix_cache = false});
    ASSERT_EQ(engine.n_embd(), kEmbd);
    const graph::SeqId seq = engine.add_sequence();
    std::vector<graph::BatchToken> batch;
    for (const int32_t t : text) batch.push_back({seq, t, true});
    const std::span<const float> rows = engine.embed(batch);
    EXPECT_EQ(std::vector<float>(rows.begin(), rows.end()), hidden_states(text));
    // Only the rows marked are returned, as decode's logits.
    const graph::SeqId other = engine.add_sequence();
    batch.clear();
    for (size_t i = 0; i < text.size(); ++i) batch.push_back({other, text[i], i == 4 || i == 20});
    const std::span<const float> two = engine.embed(batch);
    const std::vector<float> all = hidden_states(text);
    ASSERT_EQ(two.size(), size_t(2 * kEmbd));
    EXPECT_TRUE(std::equal(two.begin(), two.begin() + kEmbd, all.begin() + 4 * kEmbd));
    EXPECT_TRUE(std::equal(two.begin() + kEmbd, two.end(), all.begin() + 20 * kEmbd));
}

// Several texts in one call (sharing passes, n_seq at a time, one of them longer than a pass of 256
// tokens) are the bits of each text alone, in order.
TEST(Embedding, SeveralTextsInOneCallAreEachAloneBitForBit) {
    std::vector<std::vector<int32_t>> texts;
    for (const size_t n : {1, 17, 40, 300, 5, 16, 33})
        texts.push_back(testing::random_tokens(n, 320, uint32_t(n)));
    for (const Pooling pooling : {Pooling::Mean, Pooling::Last}) {
        graph::Embedder batched = embedder(pooling, 3), alone = embedder(pooling, 1);
        const std::vector<std::vector<float>> all = batched.embed_all(texts);
        ASSERT_EQ(all.size(), texts.size());
        for (size_t i = 0; i < texts.size(); ++i) {
            EXPECT_EQ(all[i], alone.embed(texts[i])) << "text " << i << ", " << graph::pooling_name(pooling);
            EXPECT_EQ(all[i], batched.embed(texts[i])) << "text " << i;
        }
        EXPECT_NE(all[1], all[2]);
    }
}

TEST(Embedding, MeanAndLastPoolingDifferAsTheyShould) {
    const std::vector<int32_t> text = testing::random_tokens(12, kEmbd, 5);
    graph::Embedder mean = embedder(Pooling::Mean), last = embedder(Pooling::Last),
                    cls = embedder(Pooling::First);
    const std::vector<float> m = mean.embed(text), l = last.embed(text), c = cls.embed(text);
    EXPECT_NE(m, l);
    EXPECT_NE(l, c);
    // Last: the last token's state, which the whole text reaches; cls: the first token's, which
    // only it does (a causal model), so it is the one-token text's embedding.
    std::vector<int32_t> changed = text;
    changed[0] = changed[0] == 30 ? 31 : 30;
    EXPECT_NE(last.embed(changed), l);
    std::vector<int32_t> tail = text;
    tail.back() = tail.back() == 30 ? 31 : 30;
    EXPECT_EQ(cls.embed(tail), c);
    EXPECT_EQ(c, cls.embed(std::vector<int32_t>{text[0]}));
    // The mean is the normalised mean of the rows the last pooling picks from.
    const std::vector<float> rows = hidden_states(text);
    const std::vector<float> want = reference_pool(rows, Pooling::Mean);
    for (size_t i = 0; i < m.size(); ++i) EXPECT_NEAR(m[i], want[i], 1e-6);
    // One token: every pooling is that token's state.
    const std::vector<int32_t> one{text[3]};
    EXPECT_EQ(mean.embed(one), last.embed(one));
    EXPECT_EQ(mean.embed(one), cls.embed(one));
}

TEST(Embedding, PoolEmbeddingOnKnownRows) {
    const std::vector<float> rows{3, 0, 1, 4};  // (2, 2)
    EXPECT_EQ(graph::pool_embedding(rows, 2, Pooling::Mean),
              (std::vector<float>{float(M_SQRT1_2), float(M_SQRT1_2)}));
    EXPECT_EQ(graph::pool_embedding(rows, 2, Pooling::First), (std::vector<float>{1, 0}));
    const std::vector<float> l = graph::pool_embedding(rows, 2, Pooling::Last);
    EXPECT_FLOAT_EQ(l[0], float(1 / std::sqrt(17.0)));
    EXPECT_FLOAT_EQ(l[1], float(4 / std::sqrt(17.0)));
    EXPECT_EQ(graph::pool_embedding(std::vector<float>{0, 0}, 2, Pooling::Mean), (std::vector<float>{0, 0}));
    EXPECT_THROW(graph::pool_embedding({}, 2, Pooling::Mean), std::invalid_argument);
}

// The GGUF's <arch>.pooling_type, as llama.cpp numbers it; absent: mean; none and rank are refused.
TEST(Embedding, PoolingIsTheModelsPoolingType) {
    EXPECT_EQ(graph::pooling_of(*model()), Pooling::Mean);
    for (const auto& [type, want] : std::vector<std::pair<int64_t, Pooling>>{
             {1, Pooling::Mean}, {2, Pooling::First}, {3, Pooling::Last}}) {
        graph::RandomLlamaSpec spec = testing::spec_of(16, 1, 4, 2, 48);
        spec.pooling_type = type;
        auto m = graph::Model::load(testing::random_model_file(spec, "pooling_" + std::to_string(type)));
        EXPECT_EQ(graph::pooling_of(*m), want);
        EXPECT_EQ(graph::Embedder(m, {.n_ctx = 32, .n_threads = 1}).pooling(), want);
    }
    graph::RandomLlamaSpec spec = testing::spec_of(16, 1, 4, 2, 48);
    spec.pooling_type = 0;
    auto none = graph::Model::load(testing::random_model_file(spec, "pooling_0"));
    try {
        graph::Embedder e(none, {.n_ctx = 32, .n_threads = 1});
        ADD_FAILURE() << "pooling type 0 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(),
                    HasSubstr("llama.pooling_type is 0: graphrun pools embeddings by mean (1), cls (2) or "
                              "last (3)"));
    }
}

TEST(Embedding, BadTextsAreRefusedNamingThemAndNothingChanges) {
    graph::Embedder e = embedder(Pooling::Mean);
    const std::vector<int32_t> good = testing::random_tokens(9, 320, 1);
    const std::vector<float> before = e.embed(good);
    auto error = [&](std::vector<std::vector<int32_t>> texts) -> std::string {
        try {
            e.embed_all(texts);
        } catch (const std::invalid_argument& ex) {
            return ex.what();
        }
        return "";
    };
    EXPECT_EQ(error({good, {}}), "text 1 has no tokens to embed");
    EXPECT_EQ(error({testing::random_tokens(321, 320, 2)}),
              "text 0 has 321 tokens, more than the context of 320");
    EXPECT_EQ(error({good, {5, 320}}), "text 1: token 1 is 320, outside the vocabulary of 320");
    EXPECT_EQ(error({{-1}}), "text 0: token 0 is -1, outside the vocabulary of 320");
    EXPECT_EQ(e.embed(good), before);
}

TEST(Embedding, AGraphWithoutAnEmbeddingOutputServesNone) {
    try {
        graph::Embedder e(hidden_state_model(), {.n_ctx = 32, .n_threads = 1});
        ADD_FAILURE() << "an Embedder was made";
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), HasSubstr("hidden_state.json: the graph declares no embedding output"));
    }
    graph::Engine engine(hidden_state_model(), {.n_ctx = 32, .n_threads = 1});
    EXPECT_EQ(engine.n_embd(), 0);
    const graph::SeqId seq = engine.add_sequence();
    const std::vector<graph::BatchToken> batch{{seq, 5, true}};
    EXPECT_THROW(engine.embed(batch), ops::PlanError);
}

}  // namespace
}  // namespace graphrun
