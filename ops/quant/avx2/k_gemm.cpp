// ops/quant/avx2/k_gemm.cpp — AVX2 GEMMs for Q4_K and Q6_K weights against Q8_K activations: one weight
// row against up to 8 tokens at once, the row's quants and scales unpacked once for all of them.
//
//   xq (n_tokens, K) Q8_K · W (N, K)ᵀ Q4_K / Q6_K -> y (n_tokens, N) f32, rows [row_begin, row_end)
//
// Exactness is ops/quant/avx2/k_dots.cpp's: per (token, row, super-block) the int32 sums
//   Q4_K: sumi = sum_s scale_s * (q_s · x_s),   summ = sum_s min_s * (sum of x over sub-block s)
//   Q6_K: sumi = sum_s scale_s * (q_s · x_s) - 32 * sum_s scale_s * (sum of x over sub-block s)
// are exact in any order of addition, and each token's total folds them in super-block order with
// k_superblock_total's operations (two muls, a sub, an add; this file is built with -ffp-contract=off),
// one float lane per token. So y[t, n] is the scalar vec_dot's bits for any n_tokens, row range or
// thread count: a lane's arithmetic does not depend on where its tile falls.
//
// Tile: one weight row x T <= 8 tokens, lane t = token t. Per 64-weight (Q4_K) or 32-weight (Q6_K)
// chunk of a super-block the row's quants are unpacked and its sub-block scales broadcast once, then
// each token runs maddubs + madd against them; after the super-block the 8 tokens' int32 accumulators
// are reduced together by one tree of horizontal adds. Rows go in blocks of 16, so a token group's
// activations (8 x 292 bytes per super-block) stay in cache while the block's rows pass. One token
// (decode) runs the per-row dot, which is the same arithmetic with a prefetch tuned for it.
//
// Integer ranges (|x| <= 128): Q4_K: maddubs(nibble <= 15, x) pairs <= 2 * 15 * 128 = 3840 (int16);
// madd by a 6-bit scale then sums 2 pairs per int32 lane; a super-block's |sumi| <= 256 * 63 * 15 * 128
// < 2^31. Sub-block sums of x: bsums pairs <= 32 * 128 = 4096 (int16), times a 6-bit min, 8 of them.
// Q6_K: maddubs(q <= 63, x) pairs <= 2 * 63 * 128 = 16128 (int16); madd by a signed 8-bit scale; a
// super-block's |sumi| <= 256 * 128 * 63 * 128 < 2^31, and 32 * sum scale * bsum <= 32 * 16 * 128 * 2048.
#include <algorithm>

#include "ops/quant/avx2/util.h"
#include "ops/quant/kernels.h"

namespace graphrun::ops {

namespace {

using avx2_util::broadcast_scale;
using avx2_util::lane_sums8;
using avx2_util::load32;

constexpr int kTokens = 8;         // tokens per tile: one int32 / float lane each
constexpr int64_t kRowBlock = 16;  // rows that pass over one token group before the next group

// y[t0 + t, row] for t < T: weight row `w` against tokens t0 .. t0 + T - 1.
template <int T>
GR_AVX2 void row_tokens(const GemmArgs& a, const block_q4_K* w, int64_t row, int64_t t0,
                        const int16_t* sums) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK_K;
    const block_q8_K* x[kTokens];  // lanes past T repeat token t0: computed, never stored
    for (int t = 0; t < kTokens; ++t)
        x[t] = reinterpret_cast<const block_q8_K*>(static_cast<const uint8_t*>(a.xq) +
                                                   (t0 + (t < T ? t : 0)) * a.xq_row_bytes);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256 total = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        avx2_util::prefetch_lines(w + nb + b, sizeof(block_q4_K));  // the next row, same offset
        const avx2_util::KScalesMins k = avx2_util::k_scales_mins(w[b].scales);
        const __m256i scales = _mm256_broadcastsi128_si256(k.scales16);
        __m256i acc[kTokens];
        for (__m256i& v : acc) v = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            // Byte l of chunk c: weight 64c + l (low nibble, sub-block 2c), 64c + 32 + l (high, 2c + 1).
            const __m256i bits = load32(w[b].qs + 32 * c);
            const __m256i lo = _mm256_and_si256(bits, low4),
                          hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
            const __m256i sc_lo = broadcast_scale(scales, 2 * c), sc_hi = broadcast_scale(scales, 2 * c + 1);
            for (int t = 0; t < T; ++t) {
                const int8_t* xq = x[t][b].qs + 64 * c;
                const __m256i d_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load32(xq)), sc_lo);
                const __m256i d_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load32(xq + 32)), sc_hi);
                acc[t] = _mm256_add_epi32(acc[t], _mm256_add_epi32(d_lo, d_hi));
            }
        }
        __m128i mins[kTokens];
        for (int t = 0; t < kTokens; ++t)
            mins[t] = t < T ? _mm_madd_epi16(k.mins16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                                                           sums + ((t0 + t) * nb + b) * 8)))
                            : _mm_setzero_si128();
        const __m256 sumi = _mm256_cvtepi32_ps(lane_sums8(acc)), summ = _mm256_cvtepi32_ps(lane_sums8(mins));
        // k_superblock_total per lane: total + ((dx dw) sumi - (dx dmin) summ).
        const __m256 dx = _mm256_setr_ps(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d, x[4][b].d, x[5][b].d,
                                         x[6][b].d, x[7][b].d);
        const __m256 d = _mm256_mul_ps(dx, _mm256_set1_ps(f16[w[b].d]));
        const __m256 dmin = _mm256_mul_ps(dx, _mm256_set1_ps(f16[w[b].dmin]));
        total = _mm256_add_ps(total, _mm256_sub_ps(_mm256_mul_ps(d, sumi), _mm256_mul_ps(dmin, summ)));
    }
    alignas(32) float out[kTokens];
    _mm256_store_ps(out, total);
    for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.y_stride + row] = out[t];
}

using RowTokensFn = void (*)(const GemmArgs&, const block_q4_K*, int64_t, int64_t, const int16_t*);
constexpr RowTokensFn kRowTokens[kTokens + 1] = {nullptr,       row_tokens<1>, row_tokens<2>,
                                                 row_tokens<3>, row_tokens<4>, row_tokens<5>,
                                                 row_tokens<6>, row_tokens<7>, row_tokens<8>};

GR_AVX2 void gemm_q4_k(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
    const auto* w = static_cast<const uint8_t*>(a.w);
    if (a.n_tokens == 1) {
        for (int64_t row = row_begin; row < row_end; ++row)
            a.y[row] = avx2::vec_dot_q4_k_q8_k(a.k, w + row * a.w_row_bytes, a.xq);
        return;
    }
    // The 8 sub-block sums of x of every (token, super-block), from the matmul's prepare:
    // sums[(t * nb + b) * 8 + s] (GemmArgs::x_group_sums, one per 32 values).
    const int16_t* sums = a.x_group_sums;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRowBlock) {
        const int64_t r1 = std::min(row_end, r0 + kRowBlock);
        for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kTokens) {
            const RowTokensFn tile = kRowTokens[std::min<int64_t>(kTokens, a.n_tokens - t0)];
            for (int64_t row = r0; row < r1; ++row)
                tile(a, reinterpret_cast<const block_q4_K*>(w + row * a.w_row_bytes), row, t0, sums);
        }
    }
}

// y[t0 + t, row] for t < T: Q6_K weight row `w` against tokens t0 .. t0 + T - 1. The 6-bit quants q
// in 0..63 stand for q - 32: the dot is taken on q (unsigned, as maddubs wants) and 32 times the
// scaled activation sums (Q8_K's own bsums, one per 16 values) are taken off, as in dot_q6_k.
template <int T>
GR_AVX2 void row_tokens_q6_k(const GemmArgs& a, const block_q6_K* w, int64_t row, int64_t t0) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK_K;
    const block_q8_K* x[kTokens];  // lanes past T repeat token t0: computed, never stored
    for (int t = 0; t < kTokens; ++t)
        x[t] = reinterpret_cast<const block_q8_K*>(static_cast<const uint8_t*>(a.xq) +
                                                   (t0 + (t < T ? t : 0)) * a.xq_row_bytes);
    const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(3);
    __m256 total = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        avx2_util::prefetch_lines(w + nb + b, sizeof(block_q6_K));  // the next row, same offset
        const __m256i scales16 =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
        __m256i acc[kTokens], offset[kTokens];
        for (int t = 0; t < kTokens; ++t) {
            acc[t] = _mm256_setzero_si256();
            // sum_s scale_s * bsum_s, 8 lanes of 2 sub-blocks each.
            offset[t] = t < T ? _mm256_madd_epi16(scales16, load32(x[t][b].bsums)) : _mm256_setzero_si256();
        }
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = w[b].ql + 64 * h;
            const __m256i high = load32(w[b].qh + 32 * h);
            const __m256i ql0 = load32(ql), ql1 = load32(ql + 32);
            for (int k = 0; k < 4; ++k) {
                // Weights 128h + 32k .. +31: the low or high nibbles of ql0 (k = 0, 2) or ql1 (k = 1, 3),
                // with bits 2k, 2k + 1 of qh as bits 4 and 5; sub-blocks s = 8h + 2k and s + 1.
                const __m256i lowbits = k % 2 == 0 ? ql0 : ql1;
                const __m256i nib = k < 2 ? _mm256_and_si256(lowbits, low4)
                                          : _mm256_and_si256(_mm256_srli_epi16(lowbits, 4), low4);
                const __m256i q = _mm256_or_si256(
                    nib, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 2 * k), low2), 4));
                const int s = 8 * h + 2 * k;
                const __m256i scale =
                    _mm256_set_m128i(_mm_set1_epi16(w[b].scales[s + 1]), _mm_set1_epi16(w[b].scales[s]));
                for (int t = 0; t < T; ++t) {
                    const __m256i xq = load32(x[t][b].qs + 128 * h + 32 * k);
                    acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q, xq), scale));
                }
            }
        }
        const __m256i sumi_i = _mm256_sub_epi32(lane_sums8(acc), _mm256_slli_epi32(lane_sums8(offset), 5));
        // k_superblock_total per lane with dmin_w = 0 and summ = 0: total + ((dx dw) sumi - (dx 0) 0).
        const __m256 dx = _mm256_setr_ps(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d, x[4][b].d, x[5][b].d,
                                         x[6][b].d, x[7][b].d);
        const __m256 d = _mm256_mul_ps(dx, _mm256_set1_ps(f16[w[b].d]));
        const __m256 dmin = _mm256_mul_ps(dx, _mm256_setzero_ps());
        total = _mm256_add_ps(total, _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(sumi_i)),
                                                   _mm256_mul_ps(dmin, _mm256_setzero_ps())));
    }
    alignas(32) float out[kTokens];
    _mm256_store_ps(out, total);
    for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.y_stride + row] = out[t];
}

using RowTokensQ6Fn = void (*)(const GemmArgs&, const block_q6_K*, int64_t, int64_t);
constexpr RowTokensQ6Fn kRowTokensQ6[kTokens + 1] = {nullptr,
                                                     row_tokens_q6_k<1>,
                                                     row_tokens_q6_k<2>,
                                                     row_tokens_q6_k<3>,
                                                     row_tokens_q6_k<4>,
                                                     row_tokens_q6_k<5>,
                                                     row_tokens_q6_k<6>,
                                                     row_tokens_q6_k<7>,
                                                     row_tokens_q6_k<8>};

GR_AVX2 void gemm_q6_k(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
    const auto* w = static_cast<const uint8_t*>(a.w);
    if (a.n_tokens == 1) {
        for (int64_t row = row_begin; row < row_end; ++row)
            a.y[row] = avx2::vec_dot_q6_k_q8_k(a.k, w + row * a.w_row_bytes, a.xq);
        return;
    }
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRowBlock) {
        const int64_t r1 = std::min(row_end, r0 + kRowBlock);
        for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kTokens) {
            const RowTokensQ6Fn tile = kRowTokensQ6[std::min<int64_t>(kTokens, a.n_tokens - t0)];
            for (int64_t row = r0; row < r1; ++row)
                tile(a, reinterpret_cast<const block_q6_K*>(w + row * a.w_row_bytes), row, t0);
        }
    }
}

}  // namespace

namespace avx2 {

void gemm_q4_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm_q4_k(args, row_begin, row_end);
}

void gemm_q6_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm_q6_k(args, row_begin, row_end);
}

}  // namespace avx2

}  // namespace graphrun::ops
