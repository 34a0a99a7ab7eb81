// tests/ops/ops_attention_test.cpp — attention over the paged f16 KV cache with llama.cpp's flash-attention
// numerics, and kv_write, which fills the cache: every instruction-set path and the op-table kernel
// equal the plain reference bit for bit on odd head sizes and GQA ratios, several sequences per call
// with their blocks scattered through the pool and ranges split at odd places; the paged layout gives
// the bits of a contiguous one; a token's output depends on its own sequence alone (not on the other
// tokens of the call, never on another sequence's blocks); the reference is attention to f16
// precision; hand-computed cases pin each rounding step (q and K/V to f16, ggml's dot lane order, the
// f16 accumulator, the two-rounding sum); the GQA head mapping; infer's error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/attention.h"
#include "tests/common/op_test_util.h"
#include "tests/common/same_bits.h"

namespace graphrun::testing {
namespace {

using ops::SimdLevel;
using ::testing::HasSubstr;

constexpr uint16_t kF16Nan = 0x7e00;
constexpr int64_t B = kKvBlockSize;

// A sequence of an attention call: its tokens sit at positions first_pos .. first_pos + n_tokens - 1 and
// attend to every position up to their own, all of which the cache holds (earlier tokens and, as
// kv_write would have stored them, the call's own).
struct SeqSpec {
    int32_t first_pos = 0;
    int64_t n_tokens = 1;
};

// One attention call: q, k_cache, v_cache, positions, kv_table -> out. Sequences own blocks of a pool
// (scattered in a seeded order, or in order 0, 1, 2, ... when contiguous); every cache row no sequence
// holds is NaN, and so is the block a table's unused entries point at, so a read outside the token's
// own positions poisons its output.
struct AttentionCase {
    OpCall call;
    int hd = 0, n_head = 0, n_head_kv = 0;
    int64_t kv_width = 0;
    std::vector<std::vector<int32_t>> tables;  // per sequence

    int64_t slot(size_t seq, int64_t pos) const { return tables[seq][size_t(pos / B)] * B + pos % B; }
    uint16_t* cache(int which) { return reinterpret_cast<uint16_t*>(call.in[size_t(which)].bytes.data()); }
    std::vector<uint16_t> halves(int which) const {
        const TestTensor& t = call.in[size_t(which)];
        std::vector<uint16_t> h(t.bytes.size() / 2);
        std::memcpy(h.data(), t.bytes.data(), t.bytes.size());
        return h;
    }
    // Position `pos` of sequence `seq` holds f16(k), f16(v) (kv_width values each).
    void set_kv(size_t seq, int64_t pos, const float* k, const float* v) {
        for (int64_t i = 0; i < kv_width; ++i) {
            cache(1)[slot(seq, pos) * kv_width + i] = f32_to_fp16(k[i]);
            cache(2)[slot(seq, pos) * kv_width + i] = f32_to_fp16(v[i]);
        }
    }
    KernelArgs args() { return call.args(); }
};

AttentionCase attention_case(const std::vector<SeqSpec>& seqs, int n_head, int n_head_kv, int hd,
                             uint32_t seed, float q_scale = 1.0f, bool contiguous = false) {
    AttentionCase c;
    c.hd = hd, c.n_head = n_head, c.n_head_kv = n_head_kv;
    const int64_t qw = int64_t(n_head) * hd, kvw = int64_t(n_head_kv) * hd;
    c.kv_width = kvw;
    int64_t n_tokens = 0, width = 1, used = 0;
    for (const SeqSpec& s : seqs) {
        n_tokens += s.n_tokens;
        width = std::max(width, (s.first_pos + s.n_tokens + B - 1) / B + 1);  // one entry to spare
        used += (s.first_pos + s.n_tokens + B - 1) / B;
    }
    const int64_t n_blocks = used + 2;  // the last one is the NaN block unused entries point at
    std::vector<int32_t> order(static_cast<size_t>(n_blocks - 1));
    for (size_t b = 0; b < order.size(); ++b) order[b] = int32_t(b);
    if (!contiguous) std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    std::vector<uint16_t> nan_rows(static_cast<size_t>(n_blocks * B * kvw), kF16Nan);
    c.call.in = {f32_tensor({n_tokens, qw}, std::vector<float>(size_t(n_tokens * qw))),
                 raw_tensor(DType::F16, {n_blocks * B, kvw}, nan_rows.data(), nan_rows.size() * 2),
                 raw_tensor(DType::F16, {n_blocks * B, kvw}, nan_rows.data(), nan_rows.size() * 2),
                 i32_tensor({n_tokens}, std::vector<int32_t>(size_t(n_tokens))),
                 i32_tensor({n_tokens, width}, std::vector<int32_t>(size_t(n_tokens * width)))};
    size_t next_block = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
        const int64_t n_pos = seqs[s].first_pos + seqs[s].n_tokens;
        c.tables.emplace_back();
        for (int64_t b = 0; b < (n_pos + B - 1) / B; ++b) c.tables[s].push_back(order[next_block++]);
        // Values depend on (seed, sequence, position) only, not on where the blocks are.
        const std::vector<float> k = random_floats(size_t(n_pos * kvw), seed + 100 * uint32_t(s) + 1);
        const std::vector<float> v = random_floats(size_t(n_pos * kvw), seed + 100 * uint32_t(s) + 2);
        for (int64_t p = 0; p < n_pos; ++p) c.set_kv(s, p, &k[size_t(p * kvw)], &v[size_t(p * kvw)]);
    }
    auto* q = reinterpret_cast<float*>(c.call.in[0].bytes.data());
    auto* positions = reinterpret_cast<int32_t*>(c.call.in[3].bytes.data());
    auto* table = reinterpret_cast<int32_t*>(c.call.in[4].bytes.data());
    int64_t t = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
        std::vector<float> qs = random_floats(size_t(seqs[s].n_tokens * qw), seed + 100 * uint32_t(s) + 3);
        for (float& x : qs) x *= q_scale;
        for (int64_t i = 0; i < seqs[s].n_tokens; ++i, ++t) {
            std::copy_n(&qs[size_t(i * qw)], qw, q + t * qw);
            positions[t] = seqs[s].first_pos + int32_t(i);
            for (int64_t e = 0; e < width; ++e)
                table[t * width + e] =
                    size_t(e) < c.tables[s].size() ? c.tables[s][size_t(e)] : int32_t(n_blocks - 1);
        }
    }
    c.call.out = output_tensor(DType::F32, {n_tokens, qw});
    c.call.params =
        OpParams::of(ops::AttentionParams{.n_head = n_head, .n_head_kv = n_head_kv, .head_dim = hd});
    return c;
}

// The same call for token t alone: its q row, position and table row, the same caches.
AttentionCase single_token(const AttentionCase& c, int64_t t) {
    AttentionCase one = c;
    const int64_t qw = int64_t(c.n_head) * c.hd, width = c.call.in[4].shape[1];
    const std::vector<float> q = c.call.in[0].floats();
    one.call.in[0] = f32_tensor({1, qw}, std::vector<float>(q.begin() + t * qw, q.begin() + (t + 1) * qw));
    const auto* pos = reinterpret_cast<const int32_t*>(c.call.in[3].bytes.data());
    const auto* table = reinterpret_cast<const int32_t*>(c.call.in[4].bytes.data());
    one.call.in[3] = i32_tensor({1}, {pos[t]});
    one.call.in[4] = i32_tensor({1, width}, std::vector<int32_t>(table + t * width, table + (t + 1) * width));
    one.call.out = output_tensor(DType::F32, {1, qw});
    return one;
}

bool has_nan(const std::vector<float>& x) {
    return std::any_of(x.begin(), x.end(), [](float v) { return std::isnan(v); });
}

// A kernel to hold against the reference: one instruction-set path, or (nullopt) the op table's row.
using Kernel = std::optional<SimdLevel>;

std::vector<Kernel> kernels() {
    std::vector<Kernel> k = {std::nullopt};
    for (SimdLevel p : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512})
        if (ops::simd_level_available(p)) k.push_back(p);
    return k;
}

std::string kernel_name(const Kernel& k) {
    return k ? ops::simd_level_name(*k) : "op table";
}

// The (token, head) units through one kernel; with `split`, as three ranges cut at odd places.
void run_kernel(const char* op_name, const Kernel& kernel, const KernelArgs& args, bool split) {
    const ops::OpDef& op = op_row(op_name);
    if (!kernel) return run_op(op, args, split);
    const int64_t n = op.work_items(args);
    const KernelFn path = op.run.at(*kernel);
    int64_t begin = 0;
    for (int64_t cut : split ? odd_cuts(n) : std::vector<int64_t>{}) {
        path(args, begin, cut);
        begin = cut;
    }
    path(args, begin, n);
}
void run_attention(const Kernel& kernel, const KernelArgs& args, bool split) {
    run_kernel("attention", kernel, args, split);
}

TEST(OpsAttention, EveryKernelEqualsReferenceOnScatteredBlocksAndGqa) {
    const ops::OpDef& op = op_row("attention");
    struct Heads {
        int n_head, n_head_kv;
    };
    // Batches: one sequence; one decoding (a token at 21, a second block) beside a prompt chunk crossing a
    // block boundary; three sequences, one of them fresh.
    const std::vector<std::vector<SeqSpec>> batches = {
        {{0, 3}}, {{21, 1}, {13, 7}}, {{5, 2}, {0, 1}, {40, 3}}};
    // hd: below 64 (the dot all in double), 64 (all in float lanes), and lanes plus a tail of 6 or 8.
    for (size_t b = 0; b < batches.size(); ++b)
        for (int hd : {8, 12, 64, 70, 136})
            for (Heads h : {Heads{4, 4}, Heads{4, 2}, Heads{8, 2}})
                for (float q_scale : {1.0f, 400.0f}) {  // 400: score gaps past exp's float range
                    SCOPED_TRACE("batch " + std::to_string(b) + " hd=" + std::to_string(hd) + " heads " +
                                 std::to_string(h.n_head) + "/" + std::to_string(h.n_head_kv) + " q_scale " +
                                 std::to_string(q_scale));
                    const AttentionCase base =
                        attention_case(batches[b], h.n_head, h.n_head_kv, hd, uint32_t(b * 31 + hd), q_scale);
                    AttentionCase ref = base;
                    EXPECT_EQ(op.infer(ref.call.node("attention")).shape, ref.call.out.shape);
                    op.reference(ref.args());
                    ASSERT_FALSE(has_nan(ref.call.out.floats()));
                    for (const Kernel& kernel : kernels())
                        for (bool split : {false, true}) {
                            AttentionCase c = base;
                            run_attention(kernel, c.args(), split);
                            EXPECT_TRUE(same_bits(c.call.out.floats(), ref.call.out.floats()))
                                << kernel_name(kernel) << (split ? " split" : "");
                        }
                }
}

// The block table changes where a position's row is read, never the order positions are folded in.
TEST(OpsAttention, PagedEqualsContiguousBitForBit) {
    for (const Kernel& kernel : kernels())
        for (int hd : {12, 64, 136}) {
            const std::vector<SeqSpec> seqs = {{37, 4}, {0, 9}, {16, 1}};
            AttentionCase paged = attention_case(seqs, 4, 2, hd, 5, 4.0f, false);
            AttentionCase contiguous = attention_case(seqs, 4, 2, hd, 5, 4.0f, true);
            ASSERT_NE(paged.tables, contiguous.tables);
            run_attention(kernel, paged.args(), true);
            run_attention(kernel, contiguous.args(), false);
            EXPECT_TRUE(same_bits(paged.call.out.floats(), contiguous.call.out.floats()))
                << kernel_name(kernel) << " hd " << hd;
        }
}

// A token's output is its own: alone in a call it gives the bits it gives among others, and it never
// reads a block its table does not hold (every other row is NaN and would show).
TEST(OpsAttention, TokensOfOneCallAreIndependentAndSequencesNeverMix) {
    for (const Kernel& kernel : kernels()) {
        AttentionCase batch = attention_case({{30, 2}, {0, 5}, {17, 1}}, 8, 2, 64, 9);
        run_attention(kernel, batch.args(), true);
        const std::vector<float> all = batch.call.out.floats();
        ASSERT_FALSE(has_nan(all)) << kernel_name(kernel);
        const int64_t qw = 8 * 64;
        for (int64_t t = 0; t < 8; ++t) {
            AttentionCase one = single_token(batch, t);
            run_attention(kernel, one.args(), false);
            const std::vector<float> row(all.begin() + t * qw, all.begin() + (t + 1) * qw);
            EXPECT_TRUE(same_bits(one.call.out.floats(), row)) << kernel_name(kernel) << " token " << t;
        }
        // Poison the first sequence's rows: only its own two tokens change.
        AttentionCase poisoned = batch;
        for (int64_t p = 0; p < 32; ++p)
            for (int64_t i = 0; i < poisoned.kv_width; ++i)
                poisoned.cache(1)[poisoned.slot(0, p) * poisoned.kv_width + i] = kF16Nan;
        run_attention(kernel, poisoned.args(), false);
        const std::vector<float> out = poisoned.call.out.floats();
        EXPECT_TRUE(has_nan(std::vector<float>(out.begin(), out.begin() + 2 * qw)));
        EXPECT_TRUE(same_bits(std::vector<float>(out.begin() + 2 * qw, out.end()),
                              std::vector<float>(all.begin() + 2 * qw, all.end())))
            << kernel_name(kernel);
    }
}

// The reference is attention: in double from q and the cached f16 keys and values, it agrees to f16
// precision (q rounded once, the accumulator rounded per position).
TEST(OpsAttention, ReferenceIsAttentionToF16Precision) {
    const ops::OpDef& op = op_row("attention");
    for (float q_scale : {1.0f, 8.0f}) {
        AttentionCase c = attention_case({{27, 5}}, 4, 2, 12, 17, q_scale);
        op.reference(c.args());
        const std::vector<float> q = c.call.in[0].floats(), got = c.call.out.floats();
        const std::vector<uint16_t> ck = c.halves(1), cv = c.halves(2);
        std::vector<float> want(got.size());
        const int hd = 12, kvw = 24;
        for (int t = 0; t < 5; ++t)
            for (int h = 0; h < 4; ++h) {
                const int g = h / 2, n_pos = 27 + t + 1;
                std::vector<double> s(static_cast<size_t>(n_pos));
                for (int p = 0; p < n_pos; ++p) {
                    double dot = 0;
                    for (int i = 0; i < hd; ++i)
                        dot += double(q[size_t((t * 4 + h) * hd + i)]) *
                               fp16_to_f32(ck[size_t(c.slot(0, p) * kvw + g * hd + i)]);
                    s[size_t(p)] = dot / std::sqrt(double(hd));
                }
                const double max = *std::max_element(s.begin(), s.end());
                double total = 0;
                for (double& x : s) total += (x = std::exp(x - max));
                for (int i = 0; i < hd; ++i) {
                    double acc = 0;
                    for (int p = 0; p < n_pos; ++p)
                        acc +=
                            s[size_t(p)] / total * fp16_to_f32(cv[size_t(c.slot(0, p) * kvw + g * hd + i)]);
                    want[size_t((t * 4 + h) * hd + i)] = float(acc);
                }
            }
        const double err = nmse(got, want);
        EXPECT_LT(err, 1e-5) << "q_scale " << q_scale;
        EXPECT_GT(err, 0.0) << "f16 rounding should show";
    }
}

TEST(OpsAttention, FirstPositionReturnsItsF16ValueRowPerKvGroup) {
    // One attended position: softmax weight 1, so each query head returns its kv head's v row as the
    // cache holds it (rounded to f16). n_head 4 over n_head_kv 2: heads 0,1 read kv head 0, heads 2,3 kv 1.
    for (const Kernel& kernel : kernels()) {
        AttentionCase c = attention_case({{0, 1}}, 4, 2, 8, 3);
        const std::vector<uint16_t> v = c.halves(2);
        run_attention(kernel, c.args(), false);
        const std::vector<float> y = c.call.out.floats();
        for (int h = 0; h < 4; ++h)
            for (int i = 0; i < 8; ++i)
                EXPECT_EQ(y[size_t(h * 8 + i)], fp16_to_f32(v[size_t(c.slot(0, 0) * 16 + (h / 2) * 8 + i)]))
                    << kernel_name(kernel) << " head " << h;
    }
}

// Tokens at positions 0 .. n_tokens - 1 of one sequence, one query head of hd elements, the cache
// holding f16(k), f16(v), through every kernel: one output (n_tokens, hd) per kernel.
std::vector<std::vector<float>> run_positions(int64_t n_tokens, int hd, const std::vector<float>& q,
                                              const std::vector<float>& k, const std::vector<float>& v) {
    std::vector<std::vector<float>> outs;
    for (const Kernel& kernel : kernels()) {
        AttentionCase c = attention_case({{0, n_tokens}}, 1, 1, hd, 4);
        c.call.in[0] = f32_tensor({n_tokens, hd}, q);
        for (int64_t p = 0; p < n_tokens; ++p) c.set_kv(0, p, &k[size_t(p * hd)], &v[size_t(p * hd)]);
        run_attention(kernel, c.args(), false);
        outs.push_back(c.call.out.floats());
    }
    return outs;
}

TEST(OpsAttention, HandComputedSoftmaxWeights) {
    // hd 2, scale 1/sqrt(2). q = (1, 0); k0 = 0 and k1 = (sqrt(2) ln 3, 0) give scores 0 and ln 3, so
    // weights 1/4 and 3/4 of v0 = (1, 0) and v1 = (0, 1), up to f16's relative step 2^-11 (k1 and the
    // accumulator are f16).
    const float k1 = float(std::sqrt(2.0) * std::log(3.0));
    for (const std::vector<float>& y : run_positions(2, 2, {1, 0, 1, 0}, {0, 0, k1, 0}, {1, 0, 0, 1})) {
        EXPECT_EQ(y[0], 1.0f);  // token 0 sees only position 0
        EXPECT_EQ(y[1], 0.0f);
        EXPECT_NEAR(y[2], 0.25, 0.25 / 2048);
        EXPECT_NEAR(y[3], 0.75, 0.75 / 2048);
    }
}

TEST(OpsAttention, QueryIsRoundedToF16AndSumRoundsTwice) {
    // hd 1, scale 1. q = 1 + 2^-12 rounds to 1, so the scores are exactly 0, k1 and 4. Position 1 adds
    // vs = expf(k1) to S = 1; position 2 is a new maximum, ms = expf(-4), and S = f32(S * ms) + 1,
    // rounded twice (k1 is one where a fused multiply-add gives another float). acc ends at v2 = 1.
    const float q = 1.0f + std::ldexp(1.0f, -12), k1 = fp16_to_f32(0xbd3b);  // -1.3076172
    volatile float S = 1.0f + std::exp(k1);
    volatile float scaled = S * std::exp(-4.0f);
    const float want = 1.0f / (scaled + 1.0f);
    ASSERT_NE(want, 1.0f / std::fma(float(S), std::exp(-4.0f), 1.0f));
    for (const std::vector<float>& y : run_positions(3, 1, {q, q, q}, {0, k1, 4}, {0, 0, 1}))
        EXPECT_EQ(y[2], want);
}

TEST(OpsAttention, AccumulatorIsF16RoundedAfterEveryPosition) {
    // q = 0: every score is 0, weights 1/3 each. v = 1, 2^-12, 2^-12: each 2^-12 is a quarter of f16's
    // step at 1, so the f16 accumulator stays at 1 (an f32 one would reach 1 + 2^-11).
    const float tiny = std::ldexp(1.0f, -12);
    for (const std::vector<float>& y : run_positions(3, 1, {0, 0, 0}, {0, 0, 0}, {1, tiny, tiny}))
        EXPECT_EQ(y[2], 1.0f * (1.0f / 3.0f));
}

TEST(OpsAttention, DotFollowsGgmlLaneOrder) {
    // q = 1s; k0 holds 32768 at element 0, 2^-10 at element e and -32768 at element 2, then k1 = 0.
    // Exactly, s0 = 2^-10 / sqrt(hd) > s1 = 0. ggml's dot for hd >= 64 puts elements 0 and 8 in lanes
    // that are added first (16 -> 8 lanes), in float, where 32768 + 2^-10 rounds to 32768: s0 = 0 = s1
    // and out = (1 + 0) / 2 exactly. For hd < 64 the dot is in double and keeps the 2^-10.
    for (int hd : {64, 8}) {
        const int e = hd == 64 ? 8 : 1;
        std::vector<float> q(size_t(2 * hd), 1.0f), k(size_t(2 * hd), 0.0f), v(size_t(2 * hd), 0.0f);
        k[0] = 32768;
        k[size_t(e)] = std::ldexp(1.0f, -10);
        k[2] = -32768;
        v[0] = 1;
        const float s0 = hd == 64 ? 0.0f : std::ldexp(1.0f, -10) * (1.0f / std::sqrt(float(hd)));
        const float want = s0 == 0.0f ? 0.5f : 1.0f / (1.0f + std::exp(0.0f - s0));
        for (const std::vector<float>& y : run_positions(2, hd, q, k, v))
            EXPECT_EQ(y[size_t(hd)], want) << hd;
    }
}

TEST(OpsAttention, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("attention");
    auto error = [&](const AttentionCase& c) { return infer_error(op, c.call.node("attention")); };
    AttentionCase c = attention_case({{0, 3}}, 6, 4, 8, 1);
    EXPECT_THAT(error(c), HasSubstr("n_head 6 is not a multiple of n_head_kv 4"));
    c = attention_case({{0, 3}}, 4, 2, 8, 1);
    edit_params<ops::AttentionParams>(c.call.params, [](ops::AttentionParams& p) { p.head_dim = 12; });
    EXPECT_THAT(error(c), HasSubstr("q rows have 32 elements, expected 48 (n_head 4 * head_dim 12)"));
    c = attention_case({{0, 3}}, 4, 2, 8, 1);
    c.call.in[2].shape = {32, 24};
    EXPECT_THAT(error(c), HasSubstr("v_cache rows have 24 elements, expected 16 (n_head_kv 2 * head_dim 8)"));
    c = attention_case({{0, 3}}, 4, 2, 8, 1);
    c.call.in[1].dtype = DType::F32;
    EXPECT_THAT(error(c), HasSubstr("input 1 (k_cache) must be f16"));
    c = attention_case({{0, 3}}, 4, 2, 8, 1);
    c.call.in[1].shape = {40, 16};
    EXPECT_THAT(error(c), HasSubstr("k_cache has 40 rows, not whole blocks of 16"));
    c = attention_case({{0, 3}}, 4, 2, 8, 1);
    c.call.in[3].dtype = DType::F32;
    EXPECT_THAT(error(c), HasSubstr("input 3 (positions) must be i32, got f32 (3)"));
    c = attention_case({{0, 3}}, 4, 2, 8, 1);
    c.call.in[3].shape = {4};
    EXPECT_THAT(error(c), HasSubstr("positions has 4 entries, q has 3 tokens"));
    c = attention_case({{0, 3}}, 4, 2, 8, 1);
    c.call.in[4].shape = {2, 2};
    EXPECT_THAT(error(c), HasSubstr("kv_table has 2 rows, q has 3 tokens"));
    c = attention_case({{0, 1}}, 1, 1, 520, 1);
    EXPECT_THAT(error(c), HasSubstr("head_dim 520 is above the kernel's limit of 512"));
    c = attention_case({{0, 3}}, 4, 2, 8, 1);
    c.call.in.pop_back();
    EXPECT_THAT(error(c), HasSubstr("expects 5 inputs (q, k_cache, v_cache, positions, kv_table), got 4"));
}

// ---- kv_write ------------------------------------------------------------------------------------

struct KvWriteCase {
    OpCall call;  // cache, x, slots -> cache (in place: out aliases in[0] through args())
    KernelArgs args() {
        KernelArgs a = call.args();
        a.out = a.in[0];
        return a;
    }
    std::vector<uint16_t> cache() const {
        std::vector<uint16_t> h(call.in[0].bytes.size() / 2);
        std::memcpy(h.data(), call.in[0].bytes.data(), call.in[0].bytes.size());
        return h;
    }
};

KvWriteCase kv_write_case(int64_t n_tokens, int64_t width, const std::vector<int32_t>& slots, uint32_t seed) {
    KvWriteCase c;
    std::vector<float> x =
        random_floats(size_t(n_tokens * width), seed, -70000.0f, 70000.0f);  // past f16's range
    x[0] = 1.0f + std::ldexp(1.0f, -11);                                     // a tie: rounds to even (1.0)
    const std::vector<uint16_t> old = [&] {
        std::vector<uint16_t> h(size_t(64 * width));
        for (size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i * 2654435761u >> 17);
        return h;
    }();
    c.call.in = {raw_tensor(DType::F16, {64, width}, old.data(), old.size() * 2),
                 f32_tensor({n_tokens, width}, x), i32_tensor({n_tokens}, slots)};
    return c;
}

TEST(OpsKvWrite, EveryKernelStoresExactlyTheSlotsRowsRoundedToNearestEven) {
    const ops::OpDef& op = op_row("kv_write");
    EXPECT_TRUE(op.writes_state);
    for (int64_t width : {8, 13, 64}) {
        const std::vector<int32_t> slots = {17, 3, 63, 40, 41, 0, 33};
        const KvWriteCase base = kv_write_case(7, width, slots, uint32_t(width));
        EXPECT_EQ(op.infer(base.call.node("kv_write")).str(), "f16 (64, " + std::to_string(width) + ")");
        KvWriteCase ref = base;
        op.reference(ref.args());
        const std::vector<uint16_t> before = base.cache(), want = ref.cache();
        const std::vector<float> x = base.call.in[1].floats();
        for (int64_t r = 0; r < 64; ++r) {
            const auto it = std::find(slots.begin(), slots.end(), int32_t(r));
            for (int64_t i = 0; i < width; ++i) {
                const uint16_t expected = it == slots.end()
                                              ? before[size_t(r * width + i)]
                                              : f32_to_fp16(x[size_t((it - slots.begin()) * width + i)]);
                ASSERT_EQ(want[size_t(r * width + i)], expected) << "row " << r;
            }
        }
        EXPECT_EQ(want[size_t(17 * width)], 0x3c00);  // 1 + 2^-11 stored as 1.0
        for (const Kernel& kernel : kernels())
            for (bool split : {false, true}) {
                KvWriteCase c = base;
                run_kernel("kv_write", kernel, c.args(), split);
                EXPECT_TRUE(same_bits(c.cache(), want)) << kernel_name(kernel) << " width " << width;
            }
    }
}

TEST(OpsKvWrite, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("kv_write");
    KvWriteCase c = kv_write_case(3, 8, {1, 2, 3}, 1);
    c.call.in[1].shape = {3, 9};
    EXPECT_THAT(infer_error(op, c.call.node("kv_write")), HasSubstr("x rows have 9 elements, the cache's 8"));
    c = kv_write_case(3, 8, {1, 2, 3}, 1);
    c.call.in[2].shape = {2};
    EXPECT_THAT(infer_error(op, c.call.node("kv_write")), HasSubstr("slots has 2 entries, x has 3 rows"));
    c = kv_write_case(3, 8, {1, 2, 3}, 1);
    c.call.in[0].dtype = DType::F32;
    EXPECT_THAT(infer_error(op, c.call.node("kv_write")), HasSubstr("input 0 (cache) must be f16"));
}

}  // namespace
}  // namespace graphrun::testing
