// ops/quant/avx2/block_dots.cpp — AVX2 + FMA + F16C paths for the 32-weight block dot products (Q5_0, IQ4_NL
// against Q8_0; Q4_1, Q5_1 against Q8_1) and row conversions. (Q8_0 and Q4_0, whose matmul is a GEMM,
// are in ops/quant/avx2/gemm_tiles.cpp; the super-block types in ops/quant/avx2/k_dots.cpp.)
//
// Built without -march flags: each kernel carries __attribute__((target)), and the exported
// functions are plain wrappers, so nothing here runs unless cpu_features().avx2 said it may.
// The dot products give the scalar path's bits: an exact integer block dot, then the scalar path's
// float operations in its order (dot_rows).
#include <cmath>
#include <cstring>

#include "ops/quant/avx2/util.h"
#include "ops/quant/kernels.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

using avx2_util::load32;
using avx2_util::nibbles32;

// The fifth bits of a Q5 block as bytes of 16 (or 0) in weight order: byte j takes bit j of qh.
// Each byte picks the qh byte holding its bit (bytes 0..7 from qh[0], ...) and tests its own bit.
GR_AVX2 inline __m256i fifth_bits(const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof bits);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int32_t(bits)), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2,
                                                           2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(16));
}

// Each block's integer dot comes as 8 int32 partial sums (their total is the scalar path's `dot`).
// Q5_0 weights are q - 16 with q = nibble | fifth bit (0..31): w · x = q · x - 16 · x, as for Q4_0.
// int16 pair sums: 2 * 31 * 127 + 2 * 16 * 127 < 32767.
GR_AVX2 inline __m256i partials_q5_0(const block_q5_0& w, const block_q8_0& x) {
    const __m256i q = _mm256_or_si256(nibbles32(w.qs), fifth_bits(w.qh));
    const __m256i xq = load32(x.qs);
    const __m256i pairs =
        _mm256_sub_epi16(_mm256_maddubs_epi16(q, xq), _mm256_maddubs_epi16(_mm256_set1_epi8(16), xq));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// IQ4_NL: the nibbles index kIq4nlValues (one vpshufb of a table in both halves); signed values times
// signed activations as |v| · (x with v's sign). Pair sums: 2 * 127 * 127 < 32767.
GR_AVX2 inline __m256i partials_iq4_nl(const block_iq4_nl& w, const block_q8_0& x) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
    const __m256i v = _mm256_shuffle_epi8(table, nibbles32(w.qs));
    const __m256i xq = load32(x.qs);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(xq, v)),
                             _mm256_set1_epi16(1));
}

// Q4_1 / Q5_1 against Q8_1: w = d q + m, so w · x = d_w d_x (q · x) + m s_x. The quants are
// unsigned (0..15 or 0..31), one maddubs.
GR_AVX2 inline __m256i partials_q4_1(const block_q4_1& w, const block_q8_1& x) {
    return avx2_util::dot_u8_i8(nibbles32(w.qs), load32(x.qs));
}
GR_AVX2 inline __m256i partials_q5_1(const block_q5_1& w, const block_q8_1& x) {
    return avx2_util::dot_u8_i8(_mm256_or_si256(nibbles32(w.qs), fifth_bits(w.qh)), load32(x.qs));
}

// A row's dot folded in the scalar path's order with its operations, block after block:
//   sum = sum + (float(dot_b) * (d_w,b * d_x,b) [+ m_w,b * s_x,b])
// (this file is built with -ffp-contract=off), so the result is the scalar vec_dot's bits. Eight
// blocks go at a time: their integer dots are reduced together (one tree of horizontal adds), their
// terms computed in one vector, and only the 8 additions into `sum` are serial.
template <typename WBlock, typename XBlock, __m256i (*Partials)(const WBlock&, const XBlock&), bool kMin>
GR_AVX2 inline float dot_rows(int64_t n, const WBlock* w, const XBlock* x) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = n / kQK;
    float sum = 0.0f;
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        // The matmul reads weight rows in order: ask for the next row's bytes at this offset
        // (avx2_util::prefetch_lines); the hardware prefetcher alone leaves the loop waiting.
        avx2_util::prefetch_lines(w + nb + b, 8 * int(sizeof(WBlock)));
        __m256i parts[8];
        alignas(32) float dw[8], dx[8], mw[8], sx[8], terms[8];
        for (int i = 0; i < 8; ++i) {
            parts[i] = Partials(w[b + i], x[b + i]);
            dw[i] = f16[w[b + i].d];
            dx[i] = f16[x[b + i].d];
            if constexpr (kMin) {
                mw[i] = f16[w[b + i].m];
                sx[i] = f16[x[b + i].s];
            }
        }
        __m256 term = _mm256_mul_ps(_mm256_cvtepi32_ps(avx2_util::lane_sums8(parts)),
                                    _mm256_mul_ps(_mm256_load_ps(dw), _mm256_load_ps(dx)));
        if constexpr (kMin) term = _mm256_add_ps(term, _mm256_mul_ps(_mm256_load_ps(mw), _mm256_load_ps(sx)));
        _mm256_store_ps(terms, term);
        for (float t : terms) sum = sum + t;
    }
    for (; b < nb; ++b) {
        float term = float(avx2_util::hsum_i32(Partials(w[b], x[b]))) * (f16[w[b].d] * f16[x[b].d]);
        if constexpr (kMin) term = term + f16[w[b].m] * f16[x[b].s];
        sum = sum + term;
    }
    return sum;
}

GR_AVX2 float dot_q5_0_q8(int64_t n, const block_q5_0* w, const block_q8_0* x) {
    return dot_rows<block_q5_0, block_q8_0, partials_q5_0, false>(n, w, x);
}

GR_AVX2 float dot_iq4_nl_q8(int64_t n, const block_iq4_nl* w, const block_q8_0* x) {
    return dot_rows<block_iq4_nl, block_q8_0, partials_iq4_nl, false>(n, w, x);
}

GR_AVX2 float dot_q4_1_q8_1(int64_t n, const block_q4_1* w, const block_q8_1* x) {
    return dot_rows<block_q4_1, block_q8_1, partials_q4_1, true>(n, w, x);
}

GR_AVX2 float dot_q5_1_q8_1(int64_t n, const block_q5_1* w, const block_q8_1* x) {
    return dot_rows<block_q5_1, block_q8_1, partials_q5_1, true>(n, w, x);
}

GR_AVX2 void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
    for (; i < n; ++i) y[i] = _cvtsh_ss(x[i]);
}

GR_AVX2 void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(
            reinterpret_cast<__m128i*>(y + i),
            _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

// roundf (half away from zero) exactly: t = trunc(v); v - t is exact, so compare it with 0.5.
GR_AVX2 inline __m256 round_half_away(__m256 v) {
    const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
    const __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                                      _mm256_or_ps(sign, _mm256_set1_ps(1.0f)));
    return _mm256_add_ps(t, step);
}

GR_AVX2 void quantize_q8(const float* x, block_q8_0* y, int64_t n) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        __m256 v[4];
        __m256 amax = _mm256_setzero_ps();
        for (int k = 0; k < 4; ++k) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            amax = _mm256_max_ps(amax, _mm256_and_ps(v[k], abs_mask));
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_movehdup_ps(m));
        const float d = _mm_cvtss_f32(m) / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_fp16(d);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v[k], vid)));
        // Pack 4×8 int32 -> 32 int8; the packs work per 128-bit lane, the permute puts them back in order.
        const __m256i q16a = _mm256_packs_epi32(q[0], q[1]), q16b = _mm256_packs_epi32(q[2], q[3]);
        const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b),
                                                       _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), q8);
    }
}

}  // namespace

namespace avx2 {

float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* x) {
    return dot_q5_0_q8(n, static_cast<const block_q5_0*>(w), static_cast<const block_q8_0*>(x));
}
float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* x) {
    return dot_iq4_nl_q8(n, static_cast<const block_iq4_nl*>(w), static_cast<const block_q8_0*>(x));
}
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* x) {
    return dot_q4_1_q8_1(n, static_cast<const block_q4_1*>(w), static_cast<const block_q8_1*>(x));
}
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* x) {
    return dot_q5_1_q8_1(n, static_cast<const block_q5_1*>(w), static_cast<const block_q8_1*>(x));
}
void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
    f16_to_f32(x, y, n);
}
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
    f32_to_f16(x, y, n);
}
void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n) {
    quantize_q8(x, y, n);
}

}  // namespace avx2

}  // namespace graphrun::ops
