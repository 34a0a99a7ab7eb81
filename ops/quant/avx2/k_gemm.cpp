// ops/quant/avx2/k_gemm.cpp — AVX2 GEMM for Q4_K weights against Q8_K activations: one weight row
// against up to 8 tokens at once, the row's nibbles and scales unpacked once for all of them.
//
//   xq (n_tokens, K) Q8_K · W (N, K)ᵀ Q4_K -> y (n_tokens, N) f32, rows [row_begin, row_end)
//
// Exactness is ops/quant/avx2/k_dots.cpp's: per (token, row, super-block) the int32 sums
//   sumi = sum_s scale_s * (q_s · x_s),   summ = sum_s min_s * (sum of x over sub-block s)
// are exact in any order of addition, and each token's total folds them in super-block order with
// k_superblock_total's operations (two muls, a sub, an add; this file is built with -ffp-contract=off),
// one float lane per token. So y[t, n] is scalar::vec_dot_q4_k_q8_k's bits for any n_tokens, row
// range or thread count: a lane's arithmetic does not depend on where its tile falls.
//
// Tile: one weight row x T <= 8 tokens, lane t = token t. Per 64-weight chunk of a super-block the
// row's 32 packed bytes become two nibble vectors and its two sub-block scales are broadcast once,
// then each token runs two maddubs + madd against them; after the super-block the 8 tokens' int32
// accumulators are reduced together by one tree of horizontal adds. Rows go in blocks of 16, so a
// token group's activations (8 x 292 bytes per super-block) stay in cache while the block's rows pass.
// One token (decode) runs the per-row dot, which is the same arithmetic with a prefetch tuned for it.
//
// Integer ranges (|x| <= 128): maddubs(nibble <= 15, x) pairs <= 2 * 15 * 128 = 3840 (int16); madd by a
// 6-bit scale then sums 2 pairs per int32 lane; a super-block's |sumi| <= 256 * 63 * 15 * 128 < 2^31.
// Sub-block sums of x: bsums pairs <= 32 * 128 = 4096 (int16), times a 6-bit min, 8 of them: int32.
#include <algorithm>

#include "ops/quant/avx2/util.h"
#include "ops/quant/kernels.h"

namespace graphrun::ops {

namespace {

using avx2_util::broadcast_scale;
using avx2_util::load32;

constexpr int kTokens = 8;         // tokens per tile: one int32 / float lane each
constexpr int64_t kRowBlock = 16;  // rows that pass over one token group before the next group

// v[0..7] (8 int32 each) -> lane i = sum of v[i]'s lanes.
GR_AVX2 inline __m256i lane_sums8(const __m256i v[kTokens]) {
    const __m256i s0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i s4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    // s0123 = [v0..v3: lanes 0-3 sums | v0..v3: lanes 4-7 sums], s4567 likewise.
    return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20),
                            _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

// m[0..7] (4 int32 each) -> lane i = sum of m[i]'s lanes.
GR_AVX2 inline __m256i lane_sums8(const __m128i m[kTokens]) {
    const __m128i s0123 = _mm_hadd_epi32(_mm_hadd_epi32(m[0], m[1]), _mm_hadd_epi32(m[2], m[3]));
    const __m128i s4567 = _mm_hadd_epi32(_mm_hadd_epi32(m[4], m[5]), _mm_hadd_epi32(m[6], m[7]));
    return _mm256_set_m128i(s4567, s0123);
}

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

}  // namespace

namespace avx2 {

void gemm_q4_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm_q4_k(args, row_begin, row_end);
}

}  // namespace avx2

}  // namespace graphrun::ops
