// ops/quant/avx2/k_lanes_gemm.cpp — AVX2 GEMMs for Q4_K and Q6_K weights against Q8_K activations in
// prompts, with one weight row per 32-bit lane: ops/quant/avx2/lanes_gemm.cpp's layout for the K-quants.
//
//   xq (n_tokens, K) Q8_K · W (N, K)ᵀ Q4_K / Q6_K -> y (n_tokens, N) f32, rows [row_begin, row_end)
//
// A super-block of 8 weight rows is transposed so that vector (g, j) holds, in lane r, row r's 4
// quants 32g + 4j .. +3 (unsigned: Q4_K's nibbles, Q6_K's q in 0..63). Four activation values, broadcast
// to every lane, meet them in one maddubs; steps add up in int16 and one madd by the lanes' sub-block
// scales widens them, so after the super-block lane r holds row r's
//   Q4_K: sumi = sum_s scale_s * (q_s · x_s),  and 4 madds of its mins by the token's sub-block sums
//         give summ = sum_s min_s * (sum of x over sub-block s);
//   Q6_K: sumi = sum_s scale_s * (q_s · x_s) - 32 * sum_s scale_s * (sum of x over sub-block s)
// with no reduction across lanes. These are exact integers, the scalar dot's, and each (token, row)
// folds them in super-block order with k_superblock_total's operations (this file is built with
// -ffp-contract=off), so y[t, n] is the scalar vec_dot's bits for any n_tokens, row range or thread count.
//
// Prompts (more than kFewTokens tokens): a group of 8 rows is transposed kChunk super-blocks at a time
// into a buffer on the stack, then the tokens pass over it kTokens at a time, their running sums kept
// in y between chunks (a float stored and loaded back is the same float). The last n_tokens % kTokens
// tokens, and calls of up to kFewTokens tokens, run ops/quant/avx2/k_gemm.cpp's row tiles, which unpack
// a row once for up to 8 tokens without the transposition.
//
// Integer ranges (|x| <= 128): Q4_K: maddubs(nibble <= 15, x) pairs <= 2 * 15 * 128 = 3840; a lane's
// int16 half adds the 8 steps of a sub-block, <= 30720 < 32767. Q6_K: pairs <= 2 * 63 * 128 = 16128, so
// only 2 steps are added in int16 (<= 32256) before each madd by the signed scale. A super-block's
// |sumi| < 2^31 as in ops/quant/avx2/k_gemm.cpp.
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

constexpr int kRows = 8;                // rows per group: one per lane
constexpr int kSteps = 8;               // 4-weight steps per 32 weights
constexpr int kTokens = 4;              // tokens per prompt micro-tile
constexpr int kFewTokens = 8;           // calls of up to this many tokens run the row tiles
constexpr int kStackBytes = 24 * 1024;  // the super-blocks transposed at once, about L1-sized

GR_AVX2 inline __m256i load_lanes(const int32_t v[kRows]) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(v));
}

// An int16 in both halves of an int32 lane (a madd multiplier for a lane's two pair sums).
inline int32_t pair16(int lo, int hi) {
    return int32_t(uint32_t(uint16_t(lo)) | uint32_t(uint16_t(hi)) << 16);
}

// 8 rows' 32 bytes (p[r]: row r's), transposed: t[j] lane r = row r's dword j (bytes 4j .. 4j + 3).
GR_AVX2 void transpose32(const uint8_t* const p[kRows], __m256i t[8]) {
    for (int half = 0; half < 2; ++half) {
        __m256i v[4];
        for (int r = 0; r < 4; ++r) v[r] = load16x2(p[r] + 16 * half, p[r + 4] + 16 * half);
        transpose4(v, t + 4 * half);
    }
}

// The 8 rows' `bytes` of block b at `offset`: the pointers transpose32 takes.
template <typename Block, typename Field>
GR_AVX2 inline void row_bytes8(const Block* const w[kRows], int64_t b, Field field, int offset,
                               const uint8_t* p[kRows]) {
    for (int r = 0; r < kRows; ++r) p[r] = (w[r][b].*field) + offset;
}

// Q4_K: 8 sub-blocks of 32, 6-bit scales and mins.
struct Q4KLanes {
    using Block = block_q4_K;
    struct Lanes {
        __m256i q[8 * kSteps];  // (s, j): lane r = row r's nibbles 4j .. 4j + 3 of sub-block s
        __m256i scale[8];       // lane r = row r's scale of sub-block s, in both int16 halves
        __m256i min_pairs[4];   // lane r = row r's mins of sub-blocks 2p (low int16) and 2p + 1
        __m256 d, dmin;         // lane r = row r's d and dmin
    };
    static void row_tiles(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
        avx2::gemm_q4_k_q8_k(a, row_begin, row_end);
    }
    // Byte l of 32-byte chunk c of qs holds weight 64c + l (low nibble, sub-block 2c) and 64c + 32 + l
    // (high nibble, sub-block 2c + 1): dword j of the chunk is step j of both.
    GR_AVX2 static void transpose(const Block* const w[kRows], int64_t b, const float* f16, Lanes& out) {
        const __m256i low4 = _mm256_set1_epi8(0x0f);
        for (int c = 0; c < 4; ++c) {
            const uint8_t* p[kRows];
            row_bytes8(w, b, &Block::qs, 32 * c, p);
            __m256i t[8];
            transpose32(p, t);
            for (int j = 0; j < kSteps; ++j) {
                out.q[(2 * c) * kSteps + j] = _mm256_and_si256(t[j], low4);
                out.q[(2 * c + 1) * kSteps + j] = _mm256_and_si256(_mm256_srli_epi16(t[j], 4), low4);
            }
        }
        alignas(32) int32_t scale[8][kRows], min_pairs[4][kRows];
        alignas(32) float d[kRows], dmin[kRows];
        for (int r = 0; r < kRows; ++r) {
            uint8_t sc[8], mn[8];
            unpack_k_scales(w[r][b].scales, sc, mn);
            for (int s = 0; s < 8; ++s) scale[s][r] = pair16(sc[s], sc[s]);
            for (int p = 0; p < 4; ++p) min_pairs[p][r] = pair16(mn[2 * p], mn[2 * p + 1]);
            d[r] = f16[w[r][b].d];
            dmin[r] = f16[w[r][b].dmin];
        }
        for (int s = 0; s < 8; ++s) out.scale[s] = load_lanes(scale[s]);
        for (int p = 0; p < 4; ++p) out.min_pairs[p] = load_lanes(min_pairs[p]);
        out.d = _mm256_load_ps(d);
        out.dmin = _mm256_load_ps(dmin);
    }
    // kTokens tokens' super-block b added to their 8 rows' running sums acc[i]. sums[i]: token i's 8
    // sub-block sums of x for this super-block (GemmArgs::x_group_sums).
    GR_AVX2 static void add_superblock(__m256 acc[kTokens], const Lanes& l,
                                       const block_q8_K* const x[kTokens],
                                       const int16_t* const sums[kTokens]) {
        __m256i sumi[kTokens];
        for (__m256i& v : sumi) v = _mm256_setzero_si256();
        for (int s = 0; s < 8; ++s) {
            __m256i dots[kTokens];
            for (int i = 0; i < kTokens; ++i)
                dots[i] = _mm256_maddubs_epi16(l.q[s * kSteps], broadcast4(x[i]->qs + 32 * s));
            for (int j = 1; j < kSteps; ++j)
                for (int i = 0; i < kTokens; ++i)
                    dots[i] = _mm256_add_epi16(
                        dots[i],
                        _mm256_maddubs_epi16(l.q[s * kSteps + j], broadcast4(x[i]->qs + 32 * s + 4 * j)));
            for (int i = 0; i < kTokens; ++i)
                sumi[i] = _mm256_add_epi32(sumi[i], _mm256_madd_epi16(dots[i], l.scale[s]));
        }
        for (int i = 0; i < kTokens; ++i) {
            const auto* pairs = reinterpret_cast<const int8_t*>(sums[i]);  // two int16 sums per int32
            __m256i summ = _mm256_madd_epi16(l.min_pairs[0], broadcast4(pairs));
            for (int p = 1; p < 4; ++p)
                summ = _mm256_add_epi32(summ, _mm256_madd_epi16(l.min_pairs[p], broadcast4(pairs + 4 * p)));
            // k_superblock_total per lane: total + ((dx dw) sumi - (dx dmin) summ).
            const __m256 dx = _mm256_set1_ps(x[i]->d);
            const __m256 d = _mm256_mul_ps(dx, l.d), dmin = _mm256_mul_ps(dx, l.dmin);
            acc[i] = _mm256_add_ps(acc[i], _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(sumi[i])),
                                                         _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(summ))));
        }
    }
};

// Q6_K: 16 sub-blocks of 16, signed 8-bit scales; the 6-bit q in 0..63 stands for q - 32, so the dot is
// taken on q (unsigned, as maddubs wants) and 32 * sum_s scale_s * (sum of x over sub-block s) taken off,
// from Q8_K's own bsums, as in dot_q6_k.
struct Q6KLanes {
    using Block = block_q6_K;
    struct Lanes {
        __m256i q[8 * kSteps];   // (g, j): lane r = row r's q of weights 32g + 4j .. +3
        __m256i scale[16];       // lane r = row r's scale of sub-block s, in both int16 halves
        __m256i scale_pairs[8];  // lane r = row r's scales of sub-blocks 2p (low int16) and 2p + 1
        __m256 d;
    };
    static void row_tiles(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
        avx2::gemm_q6_k_q8_k(a, row_begin, row_end);
    }
    // Weights 128h + 32k + l (group g = 4h + k): the low (k < 2) or high nibble of ql[64h + 32(k % 2) + l],
    // with bits 2k, 2k + 1 of qh[32h + l] as bits 4 and 5.
    GR_AVX2 static void transpose(const Block* const w[kRows], int64_t b, const float* f16, Lanes& out) {
        const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(3);
        for (int h = 0; h < 2; ++h) {
            __m256i ql[2][8], qh[8];
            const uint8_t* p[kRows];
            row_bytes8(w, b, &Block::ql, 64 * h, p);
            transpose32(p, ql[0]);
            row_bytes8(w, b, &Block::ql, 64 * h + 32, p);
            transpose32(p, ql[1]);
            row_bytes8(w, b, &Block::qh, 32 * h, p);
            transpose32(p, qh);
            for (int k = 0; k < 4; ++k)
                for (int j = 0; j < kSteps; ++j) {
                    const __m256i lowbits = ql[k % 2][j];
                    const __m256i nib = k < 2 ? _mm256_and_si256(lowbits, low4)
                                              : _mm256_and_si256(_mm256_srli_epi16(lowbits, 4), low4);
                    out.q[(4 * h + k) * kSteps + j] = _mm256_or_si256(
                        nib, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh[j], 2 * k), low2), 4));
                }
        }
        alignas(32) int32_t scale[16][kRows], scale_pairs[8][kRows];
        alignas(32) float d[kRows];
        for (int r = 0; r < kRows; ++r) {
            const int8_t* sc = w[r][b].scales;
            for (int s = 0; s < 16; ++s) scale[s][r] = pair16(sc[s], sc[s]);
            for (int p = 0; p < 8; ++p) scale_pairs[p][r] = pair16(sc[2 * p], sc[2 * p + 1]);
            d[r] = f16[w[r][b].d];
        }
        for (int s = 0; s < 16; ++s) out.scale[s] = load_lanes(scale[s]);
        for (int p = 0; p < 8; ++p) out.scale_pairs[p] = load_lanes(scale_pairs[p]);
        out.d = _mm256_load_ps(d);
    }
    // As Q4KLanes::add_superblock. Two steps of maddubs pairs (<= 2 * 63 * 128 each) fit an int16
    // (<= 32256), so each half of a 16-weight sub-block is widened by its own madd.
    GR_AVX2 static void add_superblock(__m256 acc[kTokens], const Lanes& l,
                                       const block_q8_K* const x[kTokens],
                                       const int16_t* const /*sums*/[kTokens]) {
        __m256i sumi[kTokens];
        for (__m256i& v : sumi) v = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g)
            for (int j = 0; j < kSteps; j += 2) {
                const __m256i scale = l.scale[2 * g + j / 4];
                for (int i = 0; i < kTokens; ++i) {
                    const int8_t* xq = x[i]->qs + 32 * g + 4 * j;
                    const __m256i two =
                        _mm256_add_epi16(_mm256_maddubs_epi16(l.q[g * kSteps + j], broadcast4(xq)),
                                         _mm256_maddubs_epi16(l.q[g * kSteps + j + 1], broadcast4(xq + 4)));
                    sumi[i] = _mm256_add_epi32(sumi[i], _mm256_madd_epi16(two, scale));
                }
            }
        for (int i = 0; i < kTokens; ++i) {
            const auto* pairs = reinterpret_cast<const int8_t*>(x[i]->bsums);
            __m256i offset = _mm256_madd_epi16(l.scale_pairs[0], broadcast4(pairs));
            for (int p = 1; p < 8; ++p)
                offset =
                    _mm256_add_epi32(offset, _mm256_madd_epi16(l.scale_pairs[p], broadcast4(pairs + 4 * p)));
            const __m256i total_i = _mm256_sub_epi32(sumi[i], _mm256_slli_epi32(offset, 5));
            // k_superblock_total per lane with dmin_w = 0 and summ = 0: total + ((dx dw) sumi - (dx 0) 0).
            const __m256 dx = _mm256_set1_ps(x[i]->d), zero = _mm256_setzero_ps();
            const __m256 d = _mm256_mul_ps(dx, l.d), dmin = _mm256_mul_ps(dx, zero);
            acc[i] = _mm256_add_ps(acc[i], _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(total_i)),
                                                         _mm256_mul_ps(dmin, zero)));
        }
    }
};

template <typename Block>
struct Group {
    const Block* rows[kRows];  // rows past the range repeat a valid row (computed, not stored)
    int n_rows;
    int64_t row0;
};

template <typename Block>
GR_AVX2 inline void store_rows(const GemmArgs& a, const Group<Block>& g, int64_t t, __m256 acc) {
    avx2_util::store_first(a.y + t * a.y_stride + g.row0, g.n_rows, acc);
}

// The group's running sums of token t, stored by store_rows after an earlier chunk.
template <typename Block>
GR_AVX2 inline __m256 load_rows(const GemmArgs& a, const Group<Block>& g, int64_t t) {
    return avx2_util::load_first(a.y + t * a.y_stride + g.row0, g.n_rows);
}

// Super-blocks [b0, b1) of the group (lanes[b - b0]) for tokens [t0, t0 + kTokens), continuing the
// running sums of the super-blocks before b0.
template <typename L>
GR_AVX2 void group_tokens(const GemmArgs& a, const Group<typename L::Block>& g, int64_t t0, int64_t b0,
                          int64_t b1, const typename L::Lanes* lanes) {
    const int64_t nb = a.k / kQK_K;
    const uint8_t* xq[kTokens];
    for (int i = 0; i < kTokens; ++i) xq[i] = static_cast<const uint8_t*>(a.xq) + (t0 + i) * a.xq_row_bytes;
    __m256 acc[kTokens];
    for (int i = 0; i < kTokens; ++i) acc[i] = b0 == 0 ? _mm256_setzero_ps() : load_rows(a, g, t0 + i);
    for (int64_t b = b0; b < b1; ++b) {
        const block_q8_K* x[kTokens];
        const int16_t* sums[kTokens];
        for (int i = 0; i < kTokens; ++i) {
            x[i] = reinterpret_cast<const block_q8_K*>(xq[i]) + b;
            sums[i] = a.x_group_sums ? a.x_group_sums + ((t0 + i) * nb + b) * 8 : nullptr;
        }
        L::add_superblock(acc, lanes[b - b0], x, sums);
    }
    for (int i = 0; i < kTokens; ++i) store_rows(a, g, t0 + i, acc[i]);
}

// Tokens [t0, n_tokens) of rows [row_begin, row_end) by the row tiles: the same call on a view of them.
template <typename L>
void rest_by_row_tiles(const GemmArgs& a, int64_t t0, int64_t row_begin, int64_t row_end) {
    GemmArgs rest = a;
    rest.n_tokens = a.n_tokens - t0;
    rest.xq = static_cast<const uint8_t*>(a.xq) + t0 * a.xq_row_bytes;
    rest.y = a.y + t0 * a.y_stride;
    if (a.x_group_sums) rest.x_group_sums = a.x_group_sums + t0 * (a.k / 32);
    L::row_tiles(rest, row_begin, row_end);
}

template <typename L>
GR_AVX2 void gemm(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
    using Block = typename L::Block;
    constexpr int64_t kChunk = kStackBytes / sizeof(typename L::Lanes);  // 9 of Q4_K, 8 of Q6_K
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK_K;
    const int64_t prompt_tokens = a.n_tokens / kTokens * kTokens;
    typename L::Lanes lanes[kChunk];
    const auto* w = static_cast<const uint8_t*>(a.w);
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRows) {
        Group<Block> g{.rows = {}, .n_rows = int(std::min<int64_t>(kRows, row_end - r0)), .row0 = r0};
        for (int r = 0; r < kRows; ++r)
            g.rows[r] = reinterpret_cast<const Block*>(w + (r0 + std::min(r, g.n_rows - 1)) * a.w_row_bytes);
        for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
            const int64_t b1 = std::min<int64_t>(nb, b0 + kChunk);
            for (int64_t b = b0; b < b1; ++b) L::transpose(g.rows, b, f16, lanes[b - b0]);
            for (int64_t t = 0; t < prompt_tokens; t += kTokens) group_tokens<L>(a, g, t, b0, b1, lanes);
        }
    }
    if (prompt_tokens < a.n_tokens) rest_by_row_tiles<L>(a, prompt_tokens, row_begin, row_end);
}

}  // namespace

namespace avx2 {

void gemm_lanes_q4_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    if (args.n_tokens <= kFewTokens) return gemm_q4_k_q8_k(args, row_begin, row_end);
    gemm<Q4KLanes>(args, row_begin, row_end);
}

void gemm_lanes_q6_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    if (args.n_tokens <= kFewTokens) return gemm_q6_k_q8_k(args, row_begin, row_end);
    gemm<Q6KLanes>(args, row_begin, row_end);
}

}  // namespace avx2

}  // namespace graphrun::ops
