// tests/ops_attention_test.cpp — attention over the f16 KV cache with llama.cpp's flash-attention
// numerics: every instruction-set path and the op-table kernel equal the plain reference bit for bit on
// odd head sizes and GQA ratios with prior cache contents and ranges split at odd places; the reference
// is attention to f16 precision; a cached continuation equals the full sequence bit for bit;
// hand-computed cases pin each rounding step (q and K/V to f16, ggml's dot lane order, the f16
// accumulator, the two-rounding sum); the GQA head mapping; infer's error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "ops/attention.h"
#include "tests/op_test_util.h"

namespace graphrun::testing {
namespace {

using ops::SimdLevel;
using ::testing::HasSubstr;

constexpr uint16_t kF16Nan = 0x7e00;

// An attention call plus the KV cache layer it reads and writes, k, v (n_ctx, n_head_kv * hd) f16.
struct AttentionCase {
    OpCall call;
    std::vector<uint16_t> cache_k, cache_v;
    int64_t n_ctx = 0;

    KernelArgs args() {
        const ops::AttentionParams p = call.params.get<ops::AttentionParams>();
        call.kv = {cache_k.data(), cache_v.data(), n_ctx, int64_t(p.n_head_kv) * p.head_dim};
        return call.args();
    }
};

std::vector<uint16_t> to_f16(const std::vector<float>& x) {
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = f32_to_fp16(x[i]);
    return h;
}

float round_to_f16(float x) {
    return fp16_to_f32(f32_to_fp16(x));
}

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
    c.call.params = OpParams::of(
        ops::AttentionParams{.n_head = n_head, .n_head_kv = n_head_kv, .head_dim = hd, .layer = 0});
    c.cache_k = to_f16(random_floats(size_t(c.n_ctx * kvw), seed + 3));
    c.cache_v = to_f16(random_floats(size_t(c.n_ctx * kvw), seed + 4));
    for (int64_t i = first_pos * kvw; i < c.n_ctx * kvw; ++i)
        c.cache_k[size_t(i)] = c.cache_v[size_t(i)] = kF16Nan;
    return c;
}

// Bitwise equality, which also treats NaN rows (never written, never read) as equal.
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
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

// prepare over the tokens, then run over the (token, head) units; with `split`, each phase as three
// ranges cut at odd places.
void run_kernel(const Kernel& kernel, const KernelArgs& args, bool split) {
    const ops::OpDef& op = op_row("attention");
    if (!kernel) return run_op(op, args, split);
    for (bool prepare : {true, false}) {
        const int64_t n = prepare ? op.prepare_items(args) : op.work_items(args);
        int64_t begin = 0;
        for (int64_t cut : split ? odd_cuts(n) : std::vector<int64_t>{}) {
            prepare ? ops::attention_prepare_path(*kernel, args, begin, cut)
                    : ops::attention_run_path(*kernel, args, begin, cut);
            begin = cut;
        }
        prepare ? ops::attention_prepare_path(*kernel, args, begin, n)
                : ops::attention_run_path(*kernel, args, begin, n);
    }
}

bool has_nan(const std::vector<float>& x) {
    for (float v : x)
        if (std::isnan(v)) return true;
    return false;
}

TEST(OpsAttention, EveryKernelEqualsReferenceWithPriorCacheAndGqa) {
    const ops::OpDef& op = op_row("attention");
    struct Heads {
        int n_head, n_head_kv;
    };
    // hd: below 64 (the dot all in double), 64 (all in float lanes), and lanes plus a tail of 6 or 8.
    for (int64_t t : {1, 3, 7})
        for (int hd : {8, 12, 64, 70, 136})
            for (Heads h : {Heads{4, 4}, Heads{4, 2}, Heads{8, 2}})
                for (int32_t first : {0, 5, 13})
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
                        ASSERT_FALSE(has_nan(ref.call.out.floats()));
                        for (const Kernel& kernel : kernels())
                            for (bool split : {false, true}) {
                                AttentionCase c = base;
                                run_kernel(kernel, c.args(), split);
                                EXPECT_TRUE(same_bits(c.call.out.floats(), ref.call.out.floats()))
                                    << kernel_name(kernel) << (split ? " split" : "");
                                EXPECT_TRUE(same_bits(c.cache_k, ref.cache_k)) << kernel_name(kernel);
                                EXPECT_TRUE(same_bits(c.cache_v, ref.cache_v)) << kernel_name(kernel);
                            }
                    }
}

// The reference is attention: in double from q and the cached f16 keys and values, it agrees to f16
// precision (q rounded once, the accumulator rounded per position).
TEST(OpsAttention, ReferenceIsAttentionToF16Precision) {
    const ops::OpDef& op = op_row("attention");
    for (float q_scale : {1.0f, 8.0f}) {
        AttentionCase c = attention_case(5, 4, 2, 12, 27, 17, q_scale);
        op.reference(c.args());
        const std::vector<float> q = c.call.in[0].floats(), got = c.call.out.floats();
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
                               fp16_to_f32(c.cache_k[size_t(p * kvw + g * hd + i)]);
                    s[size_t(p)] = dot / std::sqrt(double(hd));
                }
                const double max = *std::max_element(s.begin(), s.end());
                double total = 0;
                for (double& x : s) total += (x = std::exp(x - max));
                for (int i = 0; i < hd; ++i) {
                    double acc = 0;
                    for (int p = 0; p < n_pos; ++p)
                        acc += s[size_t(p)] / total * fp16_to_f32(c.cache_v[size_t(p * kvw + g * hd + i)]);
                    want[size_t((t * 4 + h) * hd + i)] = float(acc);
                }
            }
        const double err = nmse(got, want);
        EXPECT_LT(err, 1e-5) << "q_scale " << q_scale;
        EXPECT_GT(err, 0.0) << "f16 rounding should show";
    }
}

TEST(OpsAttention, CachedContinuationEqualsFullSequence) {
    for (const Kernel& kernel : kernels())
        for (int n_head_kv : {1, 2, 4}) {
            SCOPED_TRACE(kernel_name(kernel) + " n_head_kv " + std::to_string(n_head_kv));
            // Whole sequence of 12 tokens at once ...
            AttentionCase full = attention_case(12, 4, n_head_kv, 12, 0, 99);
            run_kernel(kernel, full.args(), true);
            // ... vs tokens 0..4 first, then 5..11 on the cache they left.
            const int64_t qw = 4 * 12, kvw = int64_t(n_head_kv) * 12;
            auto rows = [](const TestTensor& t, int64_t from, int64_t to, int64_t width) {
                const std::vector<float> v = t.floats();
                return std::vector<float>(v.begin() + from * width, v.begin() + to * width);
            };
            AttentionCase first = attention_case(5, 4, n_head_kv, 12, 0, 1);
            first.n_ctx = full.n_ctx;
            first.cache_k.assign(full.cache_k.size(), kF16Nan);
            first.cache_v = first.cache_k;
            first.call.in[0] = f32_tensor({5, qw}, rows(full.call.in[0], 0, 5, qw));
            first.call.in[1] = f32_tensor({5, kvw}, rows(full.call.in[1], 0, 5, kvw));
            first.call.in[2] = f32_tensor({5, kvw}, rows(full.call.in[2], 0, 5, kvw));
            run_kernel(kernel, first.args(), true);

            AttentionCase second = attention_case(7, 4, n_head_kv, 12, 5, 2);
            second.n_ctx = full.n_ctx;
            second.cache_k = first.cache_k;
            second.cache_v = first.cache_v;
            second.call.in[0] = f32_tensor({7, qw}, rows(full.call.in[0], 5, 12, qw));
            second.call.in[1] = f32_tensor({7, kvw}, rows(full.call.in[1], 5, 12, kvw));
            second.call.in[2] = f32_tensor({7, kvw}, rows(full.call.in[2], 5, 12, kvw));
            run_kernel(kernel, second.args(), true);

            EXPECT_TRUE(same_bits(first.call.out.floats(), rows(full.call.out, 0, 5, qw)));
            EXPECT_TRUE(same_bits(second.call.out.floats(), rows(full.call.out, 5, 12, qw)));
            EXPECT_TRUE(same_bits(second.cache_k, full.cache_k));
            EXPECT_TRUE(same_bits(second.cache_v, full.cache_v));
        }
}

TEST(OpsAttention, FirstPositionReturnsItsF16ValueRowPerKvGroup) {
    // One attended position: softmax weight 1, so each query head returns its kv head's v row as the
    // cache holds it (rounded to f16). n_head 4 over n_head_kv 2: heads 0,1 read kv head 0, heads 2,3 kv 1.
    for (const Kernel& kernel : kernels()) {
        AttentionCase c = attention_case(1, 4, 2, 8, 0, 3);
        run_kernel(kernel, c.args(), false);
        const std::vector<float> y = c.call.out.floats(), v = c.call.in[2].floats();
        for (int h = 0; h < 4; ++h)
            for (int i = 0; i < 8; ++i)
                EXPECT_EQ(y[size_t(h * 8 + i)], round_to_f16(v[size_t((h / 2) * 8 + i)]))
                    << kernel_name(kernel) << " head " << h;
    }
}

// Tokens at positions 0 .. n_tokens - 1, one query head of hd elements, through every kernel: one
// output (n_tokens, hd) per kernel.
std::vector<std::vector<float>> run_positions(int64_t n_tokens, int hd, const std::vector<float>& q,
                                              const std::vector<float>& k, const std::vector<float>& v) {
    std::vector<std::vector<float>> outs;
    for (const Kernel& kernel : kernels()) {
        AttentionCase c = attention_case(n_tokens, 1, 1, hd, 0, 4);
        c.call.in[0] = f32_tensor({n_tokens, hd}, q);
        c.call.in[1] = f32_tensor({n_tokens, hd}, k);
        c.call.in[2] = f32_tensor({n_tokens, hd}, v);
        run_kernel(kernel, c.args(), false);
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
    for (const Kernel& kernel : kernels()) {
        AttentionCase c = attention_case(3, 1, 1, 1, 0, 6);
        const float tiny = std::ldexp(1.0f, -12);
        c.call.in[0] = f32_tensor({3, 1}, {0, 0, 0});
        c.call.in[2] = f32_tensor({3, 1}, {1, tiny, tiny});
        run_kernel(kernel, c.args(), false);
        EXPECT_EQ(c.call.out.floats()[2], 1.0f * (1.0f / 3.0f)) << kernel_name(kernel);
    }
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

TEST(OpsAttention, PrepareWritesOnlyThePositionsRowsAsF16) {
    const ops::OpDef& op = op_row("attention");
    for (const Kernel& kernel : kernels()) {
        AttentionCase c = attention_case(3, 2, 1, 8, 4, 5);
        const std::vector<uint16_t> before = c.cache_k;
        const KernelArgs args = c.args();
        if (kernel)
            ops::attention_prepare_path(*kernel, args, 0, op.prepare_items(args));
        else
            op.prepare(args, 0, op.prepare_items(args));
        const std::vector<float> k = c.call.in[1].floats();
        for (int64_t p = 0; p < c.n_ctx; ++p)
            for (int i = 0; i < 8; ++i) {
                const uint16_t want =
                    p >= 4 && p < 7 ? f32_to_fp16(k[size_t((p - 4) * 8 + i)]) : before[size_t(p * 8 + i)];
                EXPECT_EQ(c.cache_k[size_t(p * 8 + i)], want) << kernel_name(kernel) << " position " << p;
            }
    }
}

TEST(OpsAttention, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("attention");
    auto node = [](const AttentionCase& c) { return c.call.node("attention"); };
    AttentionCase c = attention_case(3, 6, 4, 8, 0, 1);
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("n_head 6 is not a multiple of n_head_kv 4"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    edit_params<ops::AttentionParams>(c.call.params, [](ops::AttentionParams& p) { p.head_dim = 12; });
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
    edit_params<ops::AttentionParams>(c.call.params, [](ops::AttentionParams& p) { p.layer = -1; });
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("layer must be >= 0"));
    c = attention_case(1, 1, 1, 520, 0, 1);
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("head_dim 520 is above the kernel's limit of 512"));
    c = attention_case(3, 4, 2, 8, 0, 1);
    c.call.in.pop_back();
    EXPECT_THAT(infer_error(op, node(c)), HasSubstr("expects 4 inputs (q, k, v, positions), got 3"));
}

}  // namespace
}  // namespace graphrun::testing
