// ops/attention_paths.cpp — attention's kernels per instruction set: one driver, two sets of loops
// (scalar; AVX2 + FMA + F16C, which AVX-512 CPUs run too).
//
// The numerics are llama.cpp's, spelled out in ops/attention.cpp, whose attention_reference every path
// equals bit for bit. The speed is in the order of the work, which the numerics leave free:
//   - the query heads of one kv group (8 per kv head in TinyLlama) share one widening of each block of
//     cached K and V rows from f16 to f32 (exact), done once per (token, group) and not per head;
//   - a block's softmax decisions (new maximum or not, the two factors) are taken first, position by
//     position as the numerics say, and the value rows are then folded in with the accumulator held
//     in registers across the block: its f16 rounding after every position is a round trip through
//     F16C in registers, not a load and a store.
// The driver is a template over a set of loops and is inlined (flatten) into each path's entry point,
// which carries that path's target attribute, so the loops inline into it too.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "ops/attention.h"
#include "ops/simd.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

constexpr int kLanes = 64;        // ggml's f16 dot on AVX-512: 4 accumulators of 16 floats per 64 elements
constexpr int kHeadsAtOnce = 8;   // query heads of one group sharing a widened block
constexpr int kRowPad = 8;        // widened rows start at multiples of 8 floats (32 bytes)

int padded(int hd) {
    return (hd + kRowPad - 1) / kRowPad * kRowPad;
}

// S * ms + vs with the product rounded before the add, as llama.cpp's compiled code does it (this file
// is also built with -ffp-contract=off; the empty asm says so where it matters).
inline float mul_then_add(float a, float b, float c) {
    float product = a * b;
    __asm__("" : "+x"(product));
    return product + c;
}

// ggml's dot for the elements past the last multiple of 64, added to the lanes' sum in double one by
// one (for hd < 64, the whole dot).
inline double dot_tail(const float* q, const float* k, int n64, int hd, double sum) {
    for (int i = n64; i < hd; ++i) sum += double(q[i] * k[i]);
    return sum;
}

// One position's softmax step (attention.cpp, step 3), decided before the values are folded in.
struct SoftmaxStep {
    float ms = 1.0f, vs = 1.0f;  // what the accumulator so far is worth now; the weight of this value
    bool rescale = false;        // a new maximum: acc = f16(acc * ms) first
};

// ---- scalar ------------------------------------------------------------------------------------------

struct ScalarLoops {
    static void round_q(const float* q, float* qf, int n) {
        for (int i = 0; i < n; ++i) qf[i] = fp16_to_f32(f32_to_fp16(q[i]));
    }
    // rows (nb, hd) of f16 at `stride` -> out (nb, padded hd) f32
    static void widen(const uint16_t* rows, int64_t stride, int nb, int hd, float* out) {
        for (int j = 0; j < nb; ++j)
            for (int i = 0; i < hd; ++i) out[j * padded(hd) + i] = fp16_to_f32(rows[j * stride + i]);
    }
    static void dots(const float* qf, const float* k, int nb, int hd, float* s) {
        const int n64 = hd / kLanes * kLanes;
        for (int j = 0; j < nb; ++j) {
            const float* kj = k + j * padded(hd);
            float lane[kLanes] = {};
            for (int i = 0; i < n64; ++i) lane[i % kLanes] = std::fma(qf[i], kj[i], lane[i % kLanes]);
            float r[16];
            for (int l = 0; l < 16; ++l) r[l] = (lane[l] + lane[32 + l]) + (lane[16 + l] + lane[48 + l]);
            for (int w = 8; w >= 1; w /= 2)
                for (int l = 0; l < w; ++l) r[l] += r[l + w];
            s[j] = float(dot_tail(qf, kj, n64, hd, r[0]));
        }
    }
    static void fold(float* acc, const float* v, const SoftmaxStep* steps, int nb, int hd) {
        for (int i = 0; i < hd; ++i) {
            float a = acc[i];
            for (int j = 0; j < nb; ++j) {
                if (steps[j].rescale) a = fp16_to_f32(f32_to_fp16(a * steps[j].ms));
                a = fp16_to_f32(f32_to_fp16(std::fma(v[j * padded(hd) + i], steps[j].vs, a)));
            }
            acc[i] = a;
        }
    }
    static void finish(const float* acc, float inv, float* out, int n) {
        for (int i = 0; i < n; ++i) out[i] = acc[i] * inv;
    }
};

// ---- AVX2 + FMA + F16C -------------------------------------------------------------------------------

GR_AVX2 inline __m256 load_f16x8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
GR_AVX2 inline __m256 round_f16x8(__m256 x) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}
// One float through f16 and back (the vector instructions on lane 0: clang's _cvtss_sh macro is not
// pedantic-clean C++).
GR_AVX2 inline float round_f16_one(float x) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT)));
}

// Lanes l and l + 8 of a 16-float accumulator are lo[l] and hi[l]; this is _mm512_reduce_add_ps's
// order: 16 -> 8 (lo + hi), 8 -> 4, then (x0 + x2) + (x1 + x3).
GR_AVX2 inline float reduce16(__m256 lo, __m256 hi) {
    const __m256 y = _mm256_add_ps(lo, hi);
    const __m128 x = _mm_add_ps(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));
    const __m128 w = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(w, _mm_movehdup_ps(w)));
}

struct Avx2Loops {
    GR_AVX2 static void round_q(const float* q, float* qf, int n) {
        int i = 0;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(qf + i, round_f16x8(_mm256_loadu_ps(q + i)));
        for (; i < n; ++i) qf[i] = round_f16_one(q[i]);
    }
    GR_AVX2 static void widen(const uint16_t* rows, int64_t stride, int nb, int hd, float* out) {
        const int hp = padded(hd);
        for (int j = 0; j < nb; ++j) {
            const uint16_t* r = rows + j * stride;
            float* o = out + j * hp;
            int i = 0;
            for (; i + 8 <= hd; i += 8) _mm256_store_ps(o + i, load_f16x8(r + i));
            for (; i < hd; ++i) o[i] = _cvtsh_ss(r[i]);
        }
    }
    // ggml's 16-float accumulator g is a[2g] (its lanes 0..7) and a[2g + 1] (lanes 8..15); products of two
    // halves are exact in float, so the FMA here rounds exactly as ggml's does.
    GR_AVX2 static void dots(const float* qf, const float* k, int nb, int hd, float* s) {
        const int hp = padded(hd), n64 = hd / kLanes * kLanes;
        for (int j = 0; j < nb; ++j) {
            const float* kj = k + j * hp;
            __m256 a[8];
            for (__m256& x : a) x = _mm256_setzero_ps();
            for (int c = 0; c < n64; c += kLanes)
                for (int r = 0; r < 8; ++r)
                    a[r] = _mm256_fmadd_ps(_mm256_loadu_ps(qf + c + 8 * r), _mm256_load_ps(kj + c + 8 * r), a[r]);
            // (g0 + g2) + (g1 + g3), lanes 0..7 and 8..15 separately
            const __m256 lo = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6]));
            const __m256 hi = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]));
            s[j] = float(dot_tail(qf, kj, n64, hd, reduce16(lo, hi)));
        }
    }
    // The block's positions in order, for 64 elements at a time (8 accumulator registers, whose chains
    // of fma and f16 round trips overlap), then 8 at a time, then one by one.
    template <int R>
    GR_AVX2 static void fold_lanes(float* acc, const float* v, int hp, const SoftmaxStep* steps, int nb) {
        // The r loops are unrolled before GCC's loop interchange could put j inside them, which would
        // leave one dependency chain at a time.
        __m256 a[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) a[r] = _mm256_load_ps(acc + 8 * r);
        for (int j = 0; j < nb; ++j) {
            if (steps[j].rescale) {
                const __m256 ms = _mm256_set1_ps(steps[j].ms);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) a[r] = round_f16x8(_mm256_mul_ps(a[r], ms));
            }
            const __m256 vs = _mm256_set1_ps(steps[j].vs);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                a[r] = round_f16x8(_mm256_fmadd_ps(_mm256_load_ps(v + j * hp + 8 * r), vs, a[r]));
        }
        for (int r = 0; r < R; ++r) _mm256_store_ps(acc + 8 * r, a[r]);
    }
    GR_AVX2 static void fold(float* acc, const float* v, const SoftmaxStep* steps, int nb, int hd) {
        const int hp = padded(hd);
        int i = 0;
        for (; i + 64 <= hd; i += 64) fold_lanes<8>(acc + i, v + i, hp, steps, nb);
        for (; i + 8 <= hd; i += 8) fold_lanes<1>(acc + i, v + i, hp, steps, nb);
        for (; i < hd; ++i) {
            float a = acc[i];
            for (int j = 0; j < nb; ++j) {
                if (steps[j].rescale) a = round_f16_one(a * steps[j].ms);
                a = round_f16_one(std::fma(v[j * hp + i], steps[j].vs, a));
            }
            acc[i] = a;
        }
    }
    GR_AVX2 static void finish(const float* acc, float inv, float* out, int n) {
        const __m256 m = _mm256_set1_ps(inv);
        int i = 0;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_load_ps(acc + i), m));
        for (; i < n; ++i) out[i] = acc[i] * inv;
    }
};

// ---- the driver ---------------------------------------------------------------------------------------

// One head's online softmax: the largest score so far and the sum of weights.
struct HeadState {
    float max = -std::numeric_limits<float>::infinity();
    float sum = 0.0f;
};

// Query heads [h0, h1) of token t, all of one kv group: every KV block of the token's positions is
// widened once, then folded into each head's state and accumulator.
template <class L>
inline void attend_heads(const KernelArgs& args, int64_t t, int h0, int h1, float* work) {
    const AttentionParams p = args.params.get<AttentionParams>();
    const int hd = p.head_dim, hp = padded(hd), n_heads = h1 - h0;
    const int64_t row = args.in[1].cols(), n_slots = args.in[1].rows(), table_width = args.in[4].cols();
    const int64_t kv_offset = int64_t(h0 / (p.n_head / p.n_head_kv)) * hd;
    const int64_t n_pos = int64_t(args.in[3].as<int32_t>()[t]) + 1;
    const int32_t* table = args.in[4].as<int32_t>() + t * table_width;
    assert(0 < n_pos && n_pos <= table_width * kKvBlockSize);
    (void)n_slots;
    float* k = work;                     // (kKvBlockSize, hp): a block's keys, widened
    float* v = k + kKvBlockSize * hp;    // (kKvBlockSize, hp): its values
    float* qf = v + kKvBlockSize * hp;   // (n_heads, hp): q rounded to f16
    float* acc = qf + kHeadsAtOnce * hp;  // (n_heads, hp): sum_p exp(s_p - M) v_p, f16 values
    const float scale = 1.0f / std::sqrt(float(hd));
    HeadState state[kHeadsAtOnce];
    for (int h = 0; h < n_heads; ++h) {
        L::round_q(args.in[0].as<float>() + (t * p.n_head + h0 + h) * hd, qf + h * hp, hd);
        std::fill_n(acc + h * hp, hp, 0.0f);
    }
    for (int64_t p0 = 0; p0 < n_pos; p0 += kKvBlockSize) {
        const int nb = int(std::min<int64_t>(kKvBlockSize, n_pos - p0));
        const int64_t slot = int64_t(table[p0 / kKvBlockSize]) * kKvBlockSize;
        assert(0 <= slot && slot + nb <= n_slots);
        L::widen(args.in[1].as<uint16_t>() + slot * row + kv_offset, row, nb, hd, k);
        L::widen(args.in[2].as<uint16_t>() + slot * row + kv_offset, row, nb, hd, v);
        for (int h = 0; h < n_heads; ++h) {
            HeadState& st = state[h];
            float s[kKvBlockSize];
            SoftmaxStep steps[kKvBlockSize];
            L::dots(qf + h * hp, k, nb, hd, s);
            for (int j = 0; j < nb; ++j) {
                const float score = s[j] * scale;
                SoftmaxStep& step = steps[j];
                if (score > st.max) {  // a new maximum: what the old terms are worth now
                    step.ms = std::exp(st.max - score);
                    step.rescale = true;
                    st.max = score;
                } else {
                    step.vs = std::exp(score - st.max);
                }
                st.sum = mul_then_add(st.sum, step.ms, step.vs);
            }
            L::fold(acc + h * hp, v, steps, nb, hd);
        }
    }
    for (int h = 0; h < n_heads; ++h) {
        const float inv = state[h].sum == 0.0f ? 0.0f : 1.0f / state[h].sum;
        L::finish(acc + h * hp, inv, args.out.as<float>() + (t * p.n_head + h0 + h) * hd, hd);
    }
}

// run: units [begin, end) of n_tokens * n_head, in kv-group-major order
//   u = (g * n_tokens + t) * group + i   for query head h = g * group + i of token t,
// taken as runs of heads of one (token, group). A thread's contiguous share of the units is then a
// share of the kv groups over all the tokens, so a prompt's causal work (token t attends t + 1
// positions) is split evenly, where token-major order gave the last tokens' thread most of it.
template <class L>
inline void attend_units(const KernelArgs& args, int64_t begin, int64_t end) {
    const AttentionParams p = args.params.get<AttentionParams>();
    const int group = p.n_head / p.n_head_kv;
    const int64_t n_tokens = args.in[0].rows();
    assert(0 < p.head_dim && p.head_dim <= kAttentionMaxHeadDim);
    alignas(32) float work[(2 * kKvBlockSize + 2 * kHeadsAtOnce) * kAttentionMaxHeadDim];
    for (int64_t u = begin; u < end;) {
        const int64_t run = u / group;  // (g, t)
        const int g = int(run / n_tokens), i = int(u % group);
        const int64_t t = run % n_tokens;
        const int n = int(std::min<int64_t>({group - i, kHeadsAtOnce, end - u}));
        attend_heads<L>(args, t, g * group + i, g * group + i + n, work);
        u += n;
    }
}

}  // namespace

void attention_run_scalar(const KernelArgs& args, int64_t begin, int64_t end) {
    attend_units<ScalarLoops>(args, begin, end);
}
GR_AVX2 __attribute__((flatten)) void attention_run_avx2(const KernelArgs& args, int64_t begin, int64_t end) {
    attend_units<Avx2Loops>(args, begin, end);
}

}  // namespace graphrun::ops
