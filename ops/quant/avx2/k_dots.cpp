// ops/quant/avx2/k_dots.cpp — AVX2 dot products of the super-block types against Q8_K activations:
// Q4_K, Q5_K, Q6_K, IQ4_XS.
//
// Each kernel computes a super-block's exact int32 sums with SIMD and folds them into the total with
// k_superblock_total (ops/quant/k_common.h), as the scalar paths do, so the results equal the scalar
// ones bit for bit. For that the float arithmetic must round as written: contraction into fused
// multiply-adds is switched off for this file (the integer work is unaffected).
// Quants are unsigned bytes (nibbles, 5- or 6-bit values, or IQ4 table values made unsigned by
// moving their sign onto the activation), so vpmaddubsw does 32 products into 16 int16 pair sums;
// no pair can overflow int16 (at most 2 * 63 * 127 for Q6_K, 2 * 127 * 127 for IQ4_XS).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "ops/quant/avx2/util.h"
#include "ops/quant/k_common.h"
#include "ops/quant/kernels.h"

namespace graphrun::ops {

namespace {

using avx2_util::broadcast_scale;
using avx2_util::hsum_i32;
using avx2_util::load32;

// A Q4_K / Q5_K super-block's 8 scales as int16 in both halves, and sum_s min_s * (its activation
// sum), the min term.
GR_AVX2 inline __m256i k_scales(const uint8_t packed[12], const int16_t* bsums, int32_t& min_term) {
    const avx2_util::KScalesMins k = avx2_util::k_scales_mins(packed);
    // bsums are per 16 activations; a sub-block of 32 takes two neighbours (hadd pairs them).
    const __m128i pair_sums = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums)),
                                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums + 8)));
    __m128i m = _mm_madd_epi16(k.mins16, pair_sums);
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0x4e));
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0xb1));
    min_term = _mm_cvtsi128_si32(m);
    return _mm256_broadcastsi128_si256(k.scales16);
}

// sum over a 32-weight sub-block of q · x, scaled by its int16 scale: 8 int32 lanes.
GR_AVX2 inline __m256i scaled_dot(__m256i q, const int8_t* x, __m256i scale) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, load32(x)), scale);
}

GR_AVX2 float dot_q4_k(int64_t n, const block_q4_K* w, const block_q8_K* x) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = n / kQK_K;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    float total = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
        avx2_util::prefetch_lines(w + nb + b, sizeof(block_q4_K));  // the next row, same offset
        int32_t min_term;
        const __m256i scales = k_scales(w[b].scales, x[b].bsums, min_term);
        __m256i acc = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            const __m256i bits = load32(w[b].qs + 32 * c);
            const __m256i lo = _mm256_and_si256(bits, low4),
                          hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
            acc = _mm256_add_epi32(acc, scaled_dot(lo, x[b].qs + 64 * c, broadcast_scale(scales, 2 * c)));
            acc = _mm256_add_epi32(acc,
                                   scaled_dot(hi, x[b].qs + 64 * c + 32, broadcast_scale(scales, 2 * c + 1)));
        }
        total = k_superblock_total(total, x[b].d, f16[w[b].d], f16[w[b].dmin], hsum_i32(acc), min_term);
    }
    return total;
}

GR_AVX2 float dot_q5_k(int64_t n, const block_q5_K* w, const block_q8_K* x) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = n / kQK_K;
    const __m256i low4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    float total = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
        avx2_util::prefetch_lines(w + nb + b, sizeof(block_q5_K));
        int32_t min_term;
        const __m256i scales = k_scales(w[b].scales, x[b].bsums, min_term);
        const __m256i high = load32(w[b].qh);  // bit 2c of byte l: weight 64c + l; bit 2c + 1: 64c + 32 + l
        __m256i acc = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            const __m256i bits = load32(w[b].qs + 32 * c);
            // The fifth bit to bit 4: shift the wanted bit down to bit 0 (neighbouring bytes' bits that
            // slide in land above it and are masked off), then up by 4.
            const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 2 * c), one), 4);
            const __m256i h1 =
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 2 * c + 1), one), 4);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(bits, low4), h0);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), low4), h1);
            acc = _mm256_add_epi32(acc, scaled_dot(lo, x[b].qs + 64 * c, broadcast_scale(scales, 2 * c)));
            acc = _mm256_add_epi32(acc,
                                   scaled_dot(hi, x[b].qs + 64 * c + 32, broadcast_scale(scales, 2 * c + 1)));
        }
        total = k_superblock_total(total, x[b].d, f16[w[b].d], f16[w[b].dmin], hsum_i32(acc), min_term);
    }
    return total;
}

// Q6_K: q in 0..63 stands for q - 32. sum_s sc_s sum (q - 32) x = sum_s sc_s (q · x) - 32 sum_s sc_s bsum_s,
// the second term from the activation sums, so the quants stay unsigned.
GR_AVX2 float dot_q6_k(int64_t n, const block_q6_K* w, const block_q8_K* x) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = n / kQK_K;
    const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(3);
    float total = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
        avx2_util::prefetch_lines(w + nb + b, sizeof(block_q6_K));
        const __m256i scales16 =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
        const __m256i offset = _mm256_madd_epi16(scales16, load32(x[b].bsums));  // sum sc_s bsum_s, 8 lanes
        __m256i acc = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = w[b].ql + 64 * h;
            const __m256i high = load32(w[b].qh + 32 * h);
            const __m256i ql0 = load32(ql), ql1 = load32(ql + 32);
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, low4),
                                _mm256_slli_epi16(_mm256_and_si256(high, low2), 4)),
                _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 2), low2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 4), low2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 6), low2), 4)),
            };
            for (int k = 0; k < 4; ++k) {
                // Weights 128h + 32k .. +31: sub-blocks s = 8h + 2k (first 16) and s + 1 (last 16).
                const int s = 8 * h + 2 * k;
                const __m256i scale =
                    _mm256_set_m128i(_mm_set1_epi16(w[b].scales[s + 1]), _mm_set1_epi16(w[b].scales[s]));
                acc = _mm256_add_epi32(acc, scaled_dot(q[k], x[b].qs + 128 * h + 32 * k, scale));
            }
        }
        const int32_t sumi = hsum_i32(acc) - 32 * hsum_i32(offset);
        total = k_superblock_total(total, x[b].d, f16[w[b].d], 0.0f, sumi, 0);
    }
    return total;
}

// IQ4_XS: the nibbles index kIq4nlValues (one vpshufb); the signed values times signed activations
// go through vpmaddubsw as |v| · (x with v's sign).
GR_AVX2 float dot_iq4_xs(int64_t n, const block_iq4_xs* w, const block_q8_K* x) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = n / kQK_K;
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
    float total = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
        avx2_util::prefetch_lines(w + nb + b, sizeof(block_iq4_xs));
        __m256i acc = _mm256_setzero_si256();
        for (int s = 0; s < 8; ++s) {
            const __m256i v = _mm256_shuffle_epi8(table, avx2_util::nibbles32(w[b].qs + 16 * s));
            const __m256i xs = load32(x[b].qs + 32 * s);
            const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(xs, v));
            acc = _mm256_add_epi32(
                acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(int16_t(iq4_xs_scale(w[b], s) - 32))));
        }
        total = k_superblock_total(total, x[b].d, f16[w[b].d], 0.0f, hsum_i32(acc), 0);
    }
    return total;
}

}  // namespace

namespace avx2 {

float vec_dot_q4_k_q8_k(int64_t n, const void* w, const void* x) {
    return dot_q4_k(n, static_cast<const block_q4_K*>(w), static_cast<const block_q8_K*>(x));
}
float vec_dot_q5_k_q8_k(int64_t n, const void* w, const void* x) {
    return dot_q5_k(n, static_cast<const block_q5_K*>(w), static_cast<const block_q8_K*>(x));
}
float vec_dot_q6_k_q8_k(int64_t n, const void* w, const void* x) {
    return dot_q6_k(n, static_cast<const block_q6_K*>(w), static_cast<const block_q8_K*>(x));
}
float vec_dot_iq4_xs_q8_k(int64_t n, const void* w, const void* x) {
    return dot_iq4_xs(n, static_cast<const block_iq4_xs*>(w), static_cast<const block_q8_K*>(x));
}

}  // namespace avx2

}  // namespace graphrun::ops
