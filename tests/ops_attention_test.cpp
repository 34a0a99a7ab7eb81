// tests/ops_attention_test.cpp — attention: the online-softmax kernel against the plain reference on
// odd head sizes and GQA ratios with prior cache contents, a cached continuation equal to the full
// sequence, hand-computed softmax weights, the GQA head mapping, and infer's error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/op_test_util.h"

namespace graphrun::testing {
namespace {

using ::testing::HasSubstr;

// An attention call plus the KV cache layer it reads and writes, k, v (n_ctx, n_head_kv * hd).
struct AttentionCase {
    OpCall call;
    std::vector<float> cache_k, cache_v;
    int64_t n_ctx = 0;

    KernelArgs args() {
        call.kv = {cache_k.data(), cache_v.data(), n_ctx,
                   int64_t(call.params.n_head_kv) * call.params.head_dim};
        return call.args();
    }
};

// Tokens at positions first_pos .. first_pos + n_tokens - 1. Cache rows before first_pos hold earlier
// tokens (random here); the rows this call writes start as NaN, so a missed write poisons the output.
AttentionCase attention_case(int64_t n_tokens, int n_head, int n_head_kv, int hd, int32_t first_pos,
                             uint32_t seed, float q_scale = 1.0f) {
    AttentionCase c;
    c.n_ctx = first_pos + n_tokens + 3;
    const int64_t qw = int64_t(n_head) * hd, kvw = int64_t(n_head_kv) * hd;
    std::vector<float> q = random_floats(size_t(n_tokens * qw), seed);
    for (float& x : q) x *= q_scale;
    std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) pos[size_t(t)] = first_pos + int32_t(t);
    c.call.in = {f32_tensor({n_tokens, qw}, q),
                 f32_tensor({n_tokens, kvw}, random_floats(size_t(n_tokens * kvw), seed + 1)),
                 f32_tensor({n_tokens, kvw}, random_floats(size_t(n_tokens * kvw), seed + 2)),
                 i32_tensor({n_tokens}, pos)};
    c.call.out = output_tensor(DType::F32, {n_tokens, qw});
    c.call.params.n_head = n_head;
    c.call.params.n_head_kv = n_head_kv;
    c.call.params.head_dim = hd;
    c.call.params.layer = 0;
    c.cache_k = random_floats(size_t(c.n_ctx * kvw), seed + 3);
    c.cache_v = random_floats(size_t(c.n_ctx * kvw), seed + 4);
    for (int64_t i = first_pos * kvw; i < c.n_ctx * kvw; ++i)
        c.cache_k[size_t(i)] = c.cache_v[size_t(i)] = std::numeric_limits<float>::quiet_NaN();
    return c;
}

// Bitwise equality that treats NaN rows (never written, never read) as equal.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(OpsAttention, MatchesReferenceWithPriorCacheAndGqa) {
    const ops::OpDef& op = op_row("attention");
    struct Heads {
        int n_head, n_head_kv;
    };
    for (int64_t t : {1, 3, 7})
        for (int hd : {8, 12})
            for (Heads h : {Heads{4, 4}, Heads{4, 2}, Heads{8, 2}})
                for (int32_t first : {0, 5})
                    for (float q_scale : {1.0f, 400.0f}) {  // 400: score gaps past exp's float range
                        SCOPED_TRACE("T=" + std::to_string(t) + " hd=" + std::to_string(hd) + " heads " +
                                     std::to_string(h.n_head) + "/" + std::to_string(h.n_head_kv) +
                                     " first " + std::to_string(first) + " q_scale " +
                                     std::to_string(q_scale));
                        const AttentionCase base = attention_case(t, h.n_head, h.n_head_kv, hd, first,
                                                                  uint32_t(t * 31 + hd + first), q_scale);
                        AttentionCase ref = base;
                        EXPECT_EQ(op.infer(ref.call.node("attention")).shape, ref.call.out.shape);
                        op.reference(ref.args());
                        for (bool split : {false, true}) {
                            AttentionCase c = base;
                            run_op(op, c.args(), split);
                            EXPECT_LT(nmse(c.call.out.floats(), ref.call.out.floats()), 1e-10);
                            EXPECT_TRUE(same_bits(c.cache_k, ref.cache_k));
                            EXPECT_TRUE(same_bits(c.cache_v, ref.cache_v));
                        }
                    }
}

TEST(OpsAttention, CachedContinuationEqualsFullSequence) {
    const ops::OpDef& op = op_row("attention");
    for (int n_head_kv : {1, 2, 4}) {
        // Whole sequence of 12 tokens at once ...
        AttentionCase full = attention_case(12, 4, n_head_kv, 12, 0, 99);
        run_op(op, full.args(), true);
        // ... vs tokens 0..4 first, then 5..11 on the cache they left.
        const int64_t qw = 4 * 12, kvw = int64_t(n_head_kv) * 12;
        auto rows = [](const TestTensor& t, int64_t from, int64_t to, int64_t width) {
            const std::vector<float> v = t.floats();
            return std::vector<float>(v.begin() + from * width, v.begin() + to * width);
        };
        AttentionCase first = attention_case(5, 4, n_head_kv, 12, 0, 1);
        first.n_ctx = full.n_ctx;
        first.cache_k.assign(full.cache_k.size(), std::numeric_limits<float>::quiet_NaN());
        first.cache_v = first.cache_k;
        first.call.in[0] = f32_tensor({5, qw}, rows(full.call.in[0], 0, 5, qw));
        first.call.in[1] = f32_tensor({5, kvw}, rows(full.call.in[1], 0, 5, kvw));
        first.call.in[2] = f32_tensor({5, kvw}, rows(full.call.in[2], 0, 5, kvw));
        run_op(op, first.args(), true);

        AttentionCase second = attention_case(7, 4, n_head_kv, 12, 5, 2);
        second.n_ctx = full.n_ctx;
        second.cache_k = first.cache_k;
        second.cache_v = first.cache_v;
        second.call.in[0] = f32_tensor({7, qw}, rows(full.call.in[0], 5, 12, qw));
        second.call.in[1] = f32_tensor({7, kvw}, rows(full.call.in[1], 5, 12, kvw));
        second.call.in[2] = f32_tensor({7, kvw}, rows(full.call.in[2], 5, 12, kvw));
        run_op(op, second.args(), true);

        EXPECT_LT(nmse(first.call.out.floats(), rows(full.call.out, 0, 5, qw)), 1e-12) << n_head_kv;
        EXPECT_LT(nmse(second.call.out.floats(), rows(full.call.out, 5, 12, qw)), 1e-12) << n_head_kv;
        EXPECT_TRUE(same_bits(second.cache_k, full.cache_k));
        EXPECT_TRUE(same_bits(second.cache_v, full.cache_v));
    }
}

TEST(OpsAttention, FirstPositionReturnsItsValueRowPerKvGroup) {
    // One attended position: softmax weight 1, so each query head returns its kv head's v row exactly.
    // n_head 4 over n_head_kv 2: heads 0,1 read kv head 0 and heads 2,3 kv head 1.
    AttentionCase c = attention_case(1, 4, 2, 8, 0, 3);
    run_op(op_row("attention"), c.args(), false);
    const std::vector<float> y = c.call.out.floats(), v = c.call.in[2].floats();
    for (int h = 0; h < 4; ++h)
        for (int i = 0; i < 8; ++i)
            EXPECT_EQ(y[size_t(h * 8 + i)], v[size_t((h / 2) * 8 + i)]) << "head " << h;
}

TEST(OpsAttention, HandComputedSoftmaxWeights) {
    // hd 2, scale 1/sqrt(2). q = (1, 0); k0 = 0 and k1 = (sqrt(2) ln 3, 0) give scores 0 and ln 3,
    // so weights 1/4 and 3/4 of v0 = (1, 0) and v1 = (0, 1).
    AttentionCase c = attention_case(2, 1, 1, 2, 0, 4);
    c.call.in[0] = f32_tensor({2, 2}, {1, 0, 1, 0});
    c.call.in[1] = f32_tensor({2, 2}, {0, 0, float(std::sqrt(2.0) * std::log(3.0)), 0});
    c.call.in[2] = f32_tensor({2, 2}, {1, 0, 0, 1});
    run_op(op_row("attention"), c.args(), false);
    const std::vector<float> y = c.call.out.floats();
    EXPECT_FLOAT_EQ(y[0], 1.0f);  // token 0 sees only position 0
    EXPECT_FLOAT_EQ(y[1], 0.0f);
    EXPECT_NEAR(y[2], 0.25, 1e-6);
    EXPECT_NEAR(y[3], 0.75, 1e-6);
}

TEST(OpsAttention, PrepareWritesOnlyThePositionsRows) {
    const ops::OpDef& op = op_row("attention");
    AttentionCase c = attention_case(3, 2, 1, 8, 4, 5);
    const std::vector<float> before = c.cache_k;
    const KernelArgs args = c.args();
    op.prepare(args, 0, op.prepare_items(args));
    const std::vector<float> k = c.call.in[1].floats();
    for (int64_t p = 0; p < c.n_ctx; ++p)
        for (int i = 0; i < 8; ++i) {
            const float got = c.cache_k[size_t(p * 8 + i)];
            if (p >= 4 && p < 7)
                EXPECT_EQ(got, k[size_t((p - 4) * 8 + i)]);
            else
                EXPECT_TRUE(std::isnan(got) ? std::isnan(before[size_t(p * 8 + i)])
                                            : got == before[size_t(p * 8 + i)]);
        }
}

TEST(OpsAttention, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("attention");
    auto node = [](const AttentionCase& c) { return c.call.node("attention"); };
    AttentionCase c = attention_case(3, 6, 4, 8, 0, 1);
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("n_head 6 is not a multiple of n_head_kv 4"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    c.call.params.head_dim = 12;
    EXPECT_THAT(infer_error(op, node(c)),
                HasSubstr("q rows have 32 elements, expected 48 (n_head 4 * head_dim 12)"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    c.call.in[2].shape = {3, 24};
    EXPECT_THAT(infer_error(op, node(c)),
                HasSubstr("v rows have 24 elements, expected 16 (n_head_kv 2 * head_dim 8)"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    c.call.in[1].shape = {2, 16};
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("k has 2 tokens, q has 3"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    c.call.in[3].dtype = DType::F32;
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("input 3 (positions) must be i32, got f32 (3)"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    c.call.in[3].shape = {4};
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("positions has 4 entries, q has 3 tokens"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    c.call.params.layer = -1;
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("layer must be >= 0"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    c.call.in.pop_back();
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("expects 4 inputs (q, k, v, positions), got 3"));
}

}  // namespace
}  // namespace graphrun::testing
