// tests/engine/batch_invariance_test.cpp — a sequence's logits are the same bits whatever shares its batch.
//
// Every sequence is first run alone in an engine of its own (its prompt as one batch, then one token
// per step, greedy), which records the logits of its last prompt token and of every decoded token.
// Then the same sequences run together: prompts cut into chunks that share batches with other
// sequences' decoding, one sequence joining late and one leaving early, at several thread counts, with
// their blocks scattered through the pool; sharing cached prefixes and forking. Every row must equal
// the alone run's bit for bit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "engine/engine.h"
#include "tests/common/same_bits.h"
#include "tests/common/test_models.h"
#include "tools/lib/quantize_model.h"

namespace graphrun {
namespace {

using graph::BatchToken;
using graph::Engine;
using graph::SeqId;
using testing::same_bits;
using Rows = std::vector<std::vector<float>>;

int32_t argmax(std::span<const float> row) {
    return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
}

struct Alone {
    Rows logits;                  // the last prompt token's, then each decoded token's
    std::vector<int32_t> tokens;  // the greedy tokens, the first sampled from the prompt's logits
};

// The sequence alone: prompt in one batch, then n_decode greedy steps.
Alone run_alone(const std::shared_ptr<const graph::Model>& model, const std::vector<int32_t>& prompt,
                int n_decode, int n_threads = 1) {
    Engine engine(model, {.n_ctx = 128, .n_threads = n_threads, .max_batch = 64, .prefix_cache = false});
    const SeqId s = engine.add_sequence();
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({s, prompt[i], i + 1 == prompt.size()});
    Alone out;
    std::span<const float> row = engine.decode(batch);
    for (int k = 0;; ++k) {
        out.logits.emplace_back(row.begin(), row.end());
        out.tokens.push_back(argmax(row));
        if (k == n_decode) break;
        const BatchToken next{s, out.tokens.back(), true};
        row = engine.decode({&next, 1});
    }
    return out;
}

// A sequence in a shared run: its prompt goes in chunks of `chunk` tokens, from step `join` on; after
// its prompt it decodes greedily; it leaves after n_decode steps (or at step `leave` if earlier).
struct SeqPlan {
    std::vector<int32_t> prompt;
    int join = 0;
    int64_t chunk = 8;
    int n_decode = 6;
    int leave = 1 << 30;
};

struct Shared {
    std::vector<Rows> logits;  // per sequence, like Alone::logits
    bool scattered = false;    // some sequence's blocks were not consecutive
};

Shared run_together(Engine& engine, const std::vector<SeqPlan>& plans) {
    struct State {
        SeqId seq = -1;
        size_t fed = 0;        // prompt tokens given
        int32_t pending = -1;  // the sampled token to feed next
        int decoded = 0;
        bool done = false;
    };
    std::vector<State> st(plans.size());
    Shared out;
    out.logits.resize(plans.size());
    for (int step = 0; std::any_of(st.begin(), st.end(), [](const State& s) { return !s.done; }); ++step) {
        std::vector<BatchToken> batch;
        std::vector<size_t> owner;  // which sequence each logits row belongs to
        for (size_t i = 0; i < plans.size(); ++i) {
            State& s = st[i];
            if (s.done || step < plans[i].join) continue;
            if (step >= plans[i].leave) {  // leaves early: its blocks go back at once
                engine.remove_sequence(s.seq);
                s.done = true;
                continue;
            }
            if (s.seq < 0) s.seq = engine.add_sequence();
            if (s.fed < plans[i].prompt.size()) {
                const size_t n = std::min(plans[i].prompt.size() - s.fed, size_t(plans[i].chunk));
                for (size_t k = 0; k < n; ++k, ++s.fed) {
                    const bool last = s.fed + 1 == plans[i].prompt.size();
                    batch.push_back({s.seq, plans[i].prompt[s.fed], last});
                    if (last) owner.push_back(i);
                }
            } else {
                batch.push_back({s.seq, s.pending, true});
                owner.push_back(i);
            }
        }
        if (batch.empty()) continue;
        std::span<const float> rows = engine.decode(batch);
        const size_t n_vocab = size_t(engine.n_vocab());
        for (size_t r = 0; r < owner.size(); ++r) {
            State& s = st[owner[r]];
            const std::span<const float> row = rows.subspan(r * n_vocab, n_vocab);
            out.logits[owner[r]].emplace_back(row.begin(), row.end());
            s.pending = argmax(row);
            if (s.fed == plans[owner[r]].prompt.size() && out.logits[owner[r]].size() > 1) ++s.decoded;
            if (s.decoded == plans[owner[r]].n_decode) {
                const std::span<const int32_t> table = engine.block_table(s.seq);
                for (size_t b = 1; b < table.size(); ++b) out.scattered |= table[b] != table[b - 1] + 1;
                engine.remove_sequence(s.seq);
                s.done = true;
            }
        }
    }
    return out;
}

void expect_rows_equal(const Rows& got, const Rows& want, size_t n, const std::string& what) {
    ASSERT_GE(got.size(), n) << what;
    ASSERT_GE(want.size(), n) << what;
    for (size_t k = 0; k < n; ++k) EXPECT_TRUE(same_bits(got[k], want[k])) << what << ": row " << k;
}

struct ModelCase {
    const char* name;
    DType type;
};

class BatchInvariance : public ::testing::TestWithParam<ModelCase> {
  protected:
    void SetUp() override {
        graph::RandomLlamaSpec spec = testing::spec_of(64, 2, 4, 2, 96);
        const DType type = GetParam().type;
        if (type == DType::F16) spec.type = type;
        std::string path = testing::random_model_file(spec, std::string("invariance_") + GetParam().name);
        if (type == DType::Q8_0 || type == DType::Q4_0) {
            const std::string quantized =
                (testing::test_temp_dir() / (std::string("invariance_") + GetParam().name + "_q.gguf"))
                    .string();
            if (!std::filesystem::exists(quantized)) graph::quantize_model(path, quantized, type);
            path = quantized;
        }
        model_ = graph::Model::load(path);
        // A: long prompt in chunks; B: short, decodes early, leaves early; C: starts late; D: a prompt
        // that ends exactly on a block boundary.
        plans_ = {{testing::random_tokens(37, 320, 1), 0, 8, 7},
                  {testing::random_tokens(5, 320, 2), 0, 8, 9, 6},
                  {testing::random_tokens(20, 320, 3), 3, 6, 5},
                  {testing::random_tokens(16, 320, 4), 1, 16, 4}};
        for (const SeqPlan& p : plans_) alone_.push_back(run_alone(model_, p.prompt, p.n_decode));
    }
    std::shared_ptr<const graph::Model> model_;
    std::vector<SeqPlan> plans_;
    std::vector<Alone> alone_;
};

TEST_P(BatchInvariance, MixedBatchesEqualEachSequenceAloneAtEveryThreadCount) {
    for (int threads : {1, 2, 3}) {
        Engine engine(
            model_, {.n_ctx = 128, .n_seq = 4, .n_threads = threads, .max_batch = 64, .prefix_cache = false});
        const Shared shared = run_together(engine, plans_);
        EXPECT_TRUE(shared.scattered) << "the test should mix blocks of several sequences";
        for (size_t i = 0; i < plans_.size(); ++i) {
            // B left at step 6, after its prompt (step 0) and five decoded tokens.
            const size_t n = i == 1 ? 6 : size_t(plans_[i].n_decode + 1);
            expect_rows_equal(shared.logits[i], alone_[i].logits, n,
                              "sequence " + std::to_string(i) + ", " + std::to_string(threads) + " threads");
        }
        EXPECT_EQ(engine.pool().n_in_use(), 0);  // every block came back
    }
}

TEST_P(BatchInvariance, AloneRunIsTheSameForAnyThreadCountAndCachedEqualsRecomputed) {
    const SeqPlan& p = plans_[0];
    const Alone three = run_alone(model_, p.prompt, p.n_decode, 3);
    expect_rows_equal(three.logits, alone_[0].logits, alone_[0].logits.size(), "3 threads vs 1");
    // Recomputing the whole sequence up to each decoded token gives that token's cached logits exactly.
    std::vector<int32_t> seq = p.prompt;
    for (size_t k = 1; k < alone_[0].logits.size(); ++k) {
        seq.push_back(alone_[0].tokens[k - 1]);
        Engine engine(model_, {.n_ctx = 128, .max_batch = 64, .prefix_cache = false});
        const SeqId s = engine.add_sequence();
        std::vector<BatchToken> batch;
        for (size_t i = 0; i < seq.size(); ++i) batch.push_back({s, seq[i], i + 1 == seq.size()});
        EXPECT_TRUE(same_bits(engine.decode(batch), alone_[0].logits[k])) << "decoded token " << k;
    }
}

TEST_P(BatchInvariance, SharedPrefixEqualsUnshared) {
    Engine engine(model_, {.n_ctx = 128, .n_seq = 3, .max_batch = 64});
    // The first sequence computes A's prompt and finishes: its two full blocks stay cached.
    const std::vector<int32_t>& prompt = plans_[0].prompt;  // 37 tokens: 2 full blocks and 5 positions
    {
        const SeqId s = engine.add_sequence();
        std::vector<BatchToken> batch;
        for (int32_t t : prompt) batch.push_back({s, t, false});
        engine.decode(batch);
        engine.remove_sequence(s);
    }
    EXPECT_EQ(engine.pool().n_cached(), 2);
    EXPECT_EQ(engine.pool().n_in_use(), 0);
    // A later sequence with the same prompt skips the cached 32 positions and decodes A's bits.
    for (int repeat = 0; repeat < 2; ++repeat) {
        const SeqId s = engine.add_sequence();
        EXPECT_EQ(engine.reuse_prefix(s, prompt), 32);
        std::vector<BatchToken> batch;
        for (size_t i = 32; i < prompt.size(); ++i) batch.push_back({s, prompt[i], i + 1 == prompt.size()});
        Rows rows;
        std::span<const float> row = engine.decode(batch);
        for (int k = 0;; ++k) {
            rows.emplace_back(row.begin(), row.end());
            if (k == plans_[0].n_decode) break;
            const BatchToken next{s, argmax(row), true};
            row = engine.decode({&next, 1});
        }
        expect_rows_equal(rows, alone_[0].logits, rows.size(),
                          "shared prefix, repeat " + std::to_string(repeat));
        engine.remove_sequence(s);
    }
    // D's prompt is exactly one block: found whole, its last position is recomputed into a private copy
    // of the cached block (copy on write), and the copy is dropped again for the cached original.
    const std::vector<int32_t>& block = plans_[3].prompt;
    const SeqId first = engine.add_sequence();
    std::vector<BatchToken> batch;
    for (int32_t t : block) batch.push_back({first, t, false});
    engine.decode(batch);
    engine.remove_sequence(first);
    const SeqId s = engine.add_sequence();
    EXPECT_EQ(engine.reuse_prefix(s, block), 15);
    const int32_t cached = engine.block_table(s)[0];
    const BatchToken last{s, block.back(), true};
    EXPECT_TRUE(same_bits(engine.decode({&last, 1}), alone_[3].logits[0]));
    EXPECT_EQ(engine.block_table(s)[0], cached);  // deduplicated back onto the cached block
    engine.remove_sequence(s);
}

TEST_P(BatchInvariance, ForkedSequencesShareBlocksAndCopyOnWrite) {
    // Two sequences continuing one 21-token prompt (one full block and 5 positions) with different
    // tokens: the fork shares both blocks, the first write into the partial one copies it, and neither
    // sequence sees the other's token.
    Engine engine(model_, {.n_ctx = 128, .n_seq = 2, .max_batch = 64, .prefix_cache = false});
    const std::vector<int32_t> prompt = testing::random_tokens(21, 320, 8);
    const SeqId a = engine.add_sequence();
    std::vector<BatchToken> batch;
    for (int32_t t : prompt) batch.push_back({a, t, false});
    engine.decode(batch);
    const SeqId b = engine.fork(a);
    EXPECT_EQ(engine.pool().n_in_use(), 2);
    EXPECT_EQ(engine.pool().refcount(engine.block_table(a)[1]), 2);
    const std::vector<BatchToken> step = {{a, 7, true}, {b, 9, true}};
    std::span<const float> rows = engine.decode(step);
    const std::vector<float> row_a(rows.begin(), rows.begin() + engine.n_vocab());
    const std::vector<float> row_b(rows.begin() + engine.n_vocab(), rows.end());
    EXPECT_EQ(engine.block_table(a)[0], engine.block_table(b)[0]);  // the full block stays shared
    EXPECT_NE(engine.block_table(a)[1], engine.block_table(b)[1]);  // the partial one was copied
    EXPECT_EQ(engine.pool().n_in_use(), 3);
    for (int32_t next : {7, 9}) {
        std::vector<int32_t> seq = prompt;
        seq.push_back(next);
        const Alone alone = run_alone(model_, seq, 0);
        EXPECT_TRUE(same_bits(next == 7 ? row_a : row_b, alone.logits[0])) << "continuation " << next;
    }
}

TEST_P(BatchInvariance, TruncatingAndGoingOnEqualsTheShorterSequenceGoingOn) {
    // A sequence rewound into a registered block (the block is copied before it is written) and
    // continued with other tokens gives the bits of a fresh sequence of those tokens.
    Engine engine(model_, {.n_ctx = 128, .n_seq = 2, .max_batch = 64});
    const std::vector<int32_t>& prompt = plans_[0].prompt;
    const SeqId s = engine.add_sequence();
    std::vector<BatchToken> batch;
    for (int32_t t : prompt) batch.push_back({s, t, false});
    engine.decode(batch);
    engine.truncate(s, 20);
    EXPECT_EQ(engine.length(s), 20);
    EXPECT_EQ(engine.block_table(s).size(), 2u);
    std::vector<int32_t> other(prompt.begin(), prompt.begin() + 20);
    const std::vector<int32_t> tail = testing::random_tokens(6, 320, 77);
    other.insert(other.end(), tail.begin(), tail.end());
    batch.clear();
    for (size_t i = 0; i < tail.size(); ++i) batch.push_back({s, tail[i], i + 1 == tail.size()});
    EXPECT_TRUE(same_bits(engine.decode(batch), run_alone(model_, other, 0).logits[0]));
    EXPECT_THROW(engine.truncate(s, 27), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Types, BatchInvariance,
                         ::testing::Values(ModelCase{"f32", DType::F32}, ModelCase{"f16", DType::F16},
                                           ModelCase{"q8_0", DType::Q8_0}, ModelCase{"q4_0", DType::Q4_0}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace graphrun
