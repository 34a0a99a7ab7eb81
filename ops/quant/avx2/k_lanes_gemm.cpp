// ops/quant/avx2/k_lanes_gemm.cpp — AVX2 GEMM for Q4_K weights against Q8_K activations in prompts,
// with one weight row per 32-bit lane: ops/quant/avx2/lanes_gemm.cpp's layout for a K-quant.
//
//   xq (n_tokens, K) Q8_K · W (N, K)ᵀ Q4_K -> y (n_tokens, N) f32, rows [row_begin, row_end)
//
// A super-block of 8 weight rows is transposed so that vector (s, j) holds, in lane r, row r's 4
// nibbles 4j .. 4j + 3 of sub-block s. Four activation values 32 s + 4j .. +3, broadcast to every
// lane, meet them in one maddubs; the 8 steps j of a sub-block add up in int16 and one madd by the
// lanes' 6-bit scales of sub-block s widens them, so after the 8 sub-blocks lane r holds row r's
//   sumi = sum_s scale_s * (q_s · x_s)
// with no reduction across lanes, and 4 madds of the lanes' mins by the token's sub-block sums give
//   summ = sum_s min_s * (sum of x over sub-block s).
// Both are exact integers, the same as the scalar dot's, and each (token, row) folds them in
// super-block order with k_superblock_total's operations (this file is built with -ffp-contract=off),
// so y[t, n] is scalar::vec_dot_q4_k_q8_k's bits for any n_tokens, row range or thread count.
//
// Prompts (more than kFewTokens tokens): a group of 8 rows is transposed kChunk super-blocks at a time
// into a buffer on the stack, then the tokens pass over it kTokens at a time, their running sums kept
// in y between chunks (a float stored and loaded back is the same float). The last n_tokens % kTokens
// tokens, and calls of up to kFewTokens tokens, run ops/quant/avx2/k_gemm.cpp's row tiles, which unpack
// a row once for up to 8 tokens without the transposition.
//
// Integer ranges (|x| <= 128): maddubs(nibble <= 15, x) pairs <= 2 * 15 * 128 = 3840; a lane's int16
// half adds 8 of them, <= 30720 < 32767; madd by a 6-bit scale widens. A super-block's |sumi| <= 256 *
// 63 * 15 * 128 < 2^31. Sub-block sums of x <= 32 * 128 = 4096 (int16), times a 6-bit min, 8 of them.
#include <algorithm>
#include <cstring>

#include "ops/quant/avx2/util.h"
#include "ops/quant/k_common.h"
#include "ops/quant/kernels.h"

namespace graphrun::ops {

namespace {

using avx2_util::broadcast4;
using avx2_util::load16x2;
using avx2_util::transpose4;

constexpr int kRows = 8;        // rows per group: one per lane
constexpr int kSubBlocks = 8;   // 32-weight sub-blocks per super-block
constexpr int kSteps = 8;       // 4-weight steps per sub-block
constexpr int kTokens = 4;      // tokens per prompt micro-tile
constexpr int kFewTokens = 8;   // calls of up to this many tokens run the row tiles
constexpr int kChunk = 8;       // super-blocks transposed at once: 8 x 2.4 KiB on the stack

// One super-block of 8 rows in lanes.
struct Lanes {
    __m256i q[kSubBlocks * kSteps];  // (s, j): lane r = row r's nibbles 4j .. 4j + 3 of sub-block s
    __m256i scale[kSubBlocks];       // lane r = row r's scale of sub-block s, in both int16 halves
    __m256i min_pairs[kSubBlocks / 2];  // lane r = row r's mins of sub-blocks 2p (low half), 2p + 1
    __m256 d, dmin;                  // lane r = row r's d and dmin
};

// Super-block b of rows w[0..7] -> lanes. Byte l of 32-byte chunk c of qs holds weight 64c + l (low
// nibble, sub-block 2c) and 64c + 32 + l (high nibble, sub-block 2c + 1), so dword j of the chunk gives
// step j of both sub-blocks.
GR_AVX2 void transpose(const block_q4_K* const w[kRows], int64_t b, const float* f16, Lanes& out) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int c = 0; c < 4; ++c)
        for (int half = 0; half < 2; ++half) {  // dwords 0..3, then 4..7
            __m256i p[4], u[4];
            for (int r = 0; r < 4; ++r) p[r] = load16x2(w[r][b].qs + 32 * c + 16 * half,
                                                        w[r + 4][b].qs + 32 * c + 16 * half);
            transpose4(p, u);
            for (int i = 0; i < 4; ++i) {
                const int j = 4 * half + i;
                out.q[(2 * c) * kSteps + j] = _mm256_and_si256(u[i], low4);
                out.q[(2 * c + 1) * kSteps + j] = _mm256_and_si256(_mm256_srli_epi16(u[i], 4), low4);
            }
        }
    alignas(32) int32_t scale[kSubBlocks][kRows], min_pairs[kSubBlocks / 2][kRows];
    alignas(32) float d[kRows], dmin[kRows];
    for (int r = 0; r < kRows; ++r) {
        uint8_t sc[kSubBlocks], mn[kSubBlocks];
        unpack_k_scales(w[r][b].scales, sc, mn);
        for (int s = 0; s < kSubBlocks; ++s) scale[s][r] = int32_t(sc[s]) | int32_t(sc[s]) << 16;
        for (int p = 0; p < kSubBlocks / 2; ++p) min_pairs[p][r] = int32_t(mn[2 * p]) | int32_t(mn[2 * p + 1]) << 16;
        d[r] = f16[w[r][b].d];
        dmin[r] = f16[w[r][b].dmin];
    }
    for (int s = 0; s < kSubBlocks; ++s) out.scale[s] = _mm256_load_si256(reinterpret_cast<const __m256i*>(scale[s]));
    for (int p = 0; p < kSubBlocks / 2; ++p)
        out.min_pairs[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(min_pairs[p]));
    out.d = _mm256_load_ps(d);
    out.dmin = _mm256_load_ps(dmin);
}

struct Group {
    const block_q4_K* rows[kRows];  // rows past the range repeat a valid row (computed, not stored)
    int n_rows;
    int64_t row0;
};

GR_AVX2 inline void store_rows(const GemmArgs& a, const Group& g, int64_t t, __m256 acc) {
    if (g.n_rows == kRows) return _mm256_storeu_ps(a.y + t * a.y_stride + g.row0, acc);
    alignas(32) float out[kRows];
    _mm256_store_ps(out, acc);
    for (int r = 0; r < g.n_rows; ++r) a.y[t * a.y_stride + g.row0 + r] = out[r];
}

GR_AVX2 inline __m256 load_rows(const GemmArgs& a, const Group& g, int64_t t) {
    if (g.n_rows == kRows) return _mm256_loadu_ps(a.y + t * a.y_stride + g.row0);
    alignas(32) float in[kRows] = {};
    for (int r = 0; r < g.n_rows; ++r) in[r] = a.y[t * a.y_stride + g.row0 + r];
    return _mm256_load_ps(in);
}

// Super-blocks [b0, b1) of the group (lanes[b - b0]) for tokens [t0, t0 + kTokens), continuing the
// running sums of the super-blocks before b0.
GR_AVX2 void group_tokens(const GemmArgs& a, const Group& g, int64_t t0, int64_t b0, int64_t b1,
                          const Lanes* lanes) {
    const int64_t nb = a.k / kQK_K;
    const block_q8_K* x[kTokens];
    for (int i = 0; i < kTokens; ++i)
        x[i] = reinterpret_cast<const block_q8_K*>(static_cast<const uint8_t*>(a.xq) + (t0 + i) * a.xq_row_bytes);
    __m256 acc[kTokens];
    for (int i = 0; i < kTokens; ++i) acc[i] = b0 == 0 ? _mm256_setzero_ps() : load_rows(a, g, t0 + i);
    for (int64_t b = b0; b < b1; ++b) {
        const Lanes& l = lanes[b - b0];
        __m256i sumi[kTokens];
        for (__m256i& v : sumi) v = _mm256_setzero_si256();
        for (int s = 0; s < kSubBlocks; ++s) {
            __m256i dots[kTokens];
            for (int i = 0; i < kTokens; ++i)
                dots[i] = _mm256_maddubs_epi16(l.q[s * kSteps], broadcast4(x[i][b].qs + 32 * s));
            for (int j = 1; j < kSteps; ++j)
                for (int i = 0; i < kTokens; ++i)
                    dots[i] = _mm256_add_epi16(
                        dots[i], _mm256_maddubs_epi16(l.q[s * kSteps + j], broadcast4(x[i][b].qs + 32 * s + 4 * j)));
            for (int i = 0; i < kTokens; ++i) sumi[i] = _mm256_add_epi32(sumi[i], _mm256_madd_epi16(dots[i], l.scale[s]));
        }
        for (int i = 0; i < kTokens; ++i) {
            // The token's 8 sub-block sums of x, two per int32 (GemmArgs::x_group_sums).
            const auto* sums = reinterpret_cast<const int8_t*>(a.x_group_sums + ((t0 + i) * nb + b) * kSubBlocks);
            __m256i summ = _mm256_madd_epi16(l.min_pairs[0], broadcast4(sums));
            for (int p = 1; p < kSubBlocks / 2; ++p)
                summ = _mm256_add_epi32(summ, _mm256_madd_epi16(l.min_pairs[p], broadcast4(sums + 4 * p)));
            // k_superblock_total per lane: total + ((dx dw) sumi - (dx dmin) summ).
            const __m256 dx = _mm256_set1_ps(x[i][b].d);
            const __m256 d = _mm256_mul_ps(dx, l.d), dmin = _mm256_mul_ps(dx, l.dmin);
            acc[i] = _mm256_add_ps(acc[i], _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(sumi[i])),
                                                         _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(summ))));
        }
    }
    for (int i = 0; i < kTokens; ++i) store_rows(a, g, t0 + i, acc[i]);
}

// Tokens [t0, n_tokens) of rows [row_begin, row_end) by the row tiles: the same call on a view of them.
void rest_by_row_tiles(const GemmArgs& a, int64_t t0, int64_t row_begin, int64_t row_end) {
    GemmArgs rest = a;
    rest.n_tokens = a.n_tokens - t0;
    rest.xq = static_cast<const uint8_t*>(a.xq) + t0 * a.xq_row_bytes;
    rest.y = a.y + t0 * a.y_stride;
    rest.x_group_sums = a.x_group_sums + t0 * (a.k / 32);
    avx2::gemm_q4_k_q8_k(rest, row_begin, row_end);
}

GR_AVX2 void gemm(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK_K;
    const int64_t prompt_tokens = a.n_tokens / kTokens * kTokens;
    static_assert(sizeof(Lanes) * kChunk <= 20 * 1024, "the stack buffer stays about L1-sized");
    Lanes lanes[kChunk];
    const auto* w = static_cast<const uint8_t*>(a.w);
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRows) {
        Group g{.rows = {}, .n_rows = int(std::min<int64_t>(kRows, row_end - r0)), .row0 = r0};
        for (int r = 0; r < kRows; ++r)
            g.rows[r] = reinterpret_cast<const block_q4_K*>(w + (r0 + std::min(r, g.n_rows - 1)) * a.w_row_bytes);
        for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
            const int64_t b1 = std::min<int64_t>(nb, b0 + kChunk);
            for (int64_t b = b0; b < b1; ++b) transpose(g.rows, b, f16, lanes[b - b0]);
            for (int64_t t = 0; t < prompt_tokens; t += kTokens) group_tokens(a, g, t, b0, b1, lanes);
        }
    }
    if (prompt_tokens < a.n_tokens) rest_by_row_tiles(a, prompt_tokens, row_begin, row_end);
}

}  // namespace

namespace avx2 {

void gemm_lanes_q4_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    if (args.n_tokens <= kFewTokens) return gemm_q4_k_q8_k(args, row_begin, row_end);
    gemm(args, row_begin, row_end);
}

}  // namespace avx2

}  // namespace graphrun::ops
