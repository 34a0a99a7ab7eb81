// ops/quant/avx2/lanes_gemm.cpp — AVX2 GEMM for Q8_0 and Q4_0 weights against Q8_0 activations, with one
// weight row per 32-bit lane: no horizontal adds.
//
//   xq (n_tokens, K) Q8_0 · W (N, K)ᵀ Q8_0 / Q4_0 -> y (n_tokens, N) f32, rows [row_begin, row_end)
//
// A block of 8 weight rows is transposed so that vector s holds, in lane r, row r's 4 weights
// 4s .. 4s + 3. One activation block's 4 values 4s .. 4s + 3, broadcast to every lane, meet them in
// one maddubs: after the 8 steps s of a block, lane r holds row r's exact integer block dot, and the
// 8 rows' dots are ready for their scales without any reduction across lanes. (The gemm of
// ops/quant/avx2/gemm_tiles.cpp multiplies a row's 32 weights at once and then needs a tree of horizontal
// adds per 8 (row, token) pairs.)
//
// Exactness is that file's: every output is summed in the scalar vec_dot's order with its operations,
//   sum = 0; for each block b in order: sum = sum + float(idot_b) * (d_w,b * d_x,b)
// (a plain mul and add, this file is built with -ffp-contract=off), idot_b exact; so y[t, n] is the
// same bits for any n_tokens, row range or thread count, and equals scalar::vec_dot.
//
// Prompts: a group of 8 rows is transposed 16 KiB of blocks at a time into a buffer on the stack, then
// every token passes over that chunk, 4 tokens at a time, its 8 running sums kept in y between chunks
// (a float stored and loaded back is the same float, so the order of the sum is unchanged). Decode and
// passes of up to 8 tokens (and a prompt's last n_tokens % 4): each block is transposed in registers
// and used at once by all of them, or for Q4_0's 8-token passes by 4 tokens at a time in two passes
// over the group (Q4Lanes::kRegisterTokens). The kernel allocates nothing.
//
// Integer ranges (|x| <= 127: activations are quantized with amax -> 127):
//   Q4_0: maddubs(nibble 0..15, x) pairs <= 2 * 15 * 127 = 3810; a lane's int16 half adds 8 of them,
//         <= 30480 < 32767, then madd widens. The zero point: (n - 8) · x = n · x - 8 * sum(x), with
//         sum(x) of each (token, block) from the matmul's prepare (GemmArgs::x_group_sums).
//   Q8_0: maddubs(|w|, x with w's sign) pairs <= 2 * 128 * 127 = 32512, widened by madd every step.
#include <algorithm>
#include <cstring>

#include "ops/quant/avx2/util.h"
#include "ops/quant/kernels.h"
#include "ops/quant/packed.h"

namespace graphrun::ops {

namespace {

using avx2_util::broadcast4;
using avx2_util::load16x2;
using avx2_util::row_scales8;
using avx2_util::transpose4;

constexpr int kRows = 8;            // rows per group: one per lane
constexpr int kSteps = 8;           // 4-weight steps per 32-weight block
constexpr int kTokens = 4;          // tokens per prompt micro-tile
constexpr int kFewTokens = 8;       // calls of up to this many tokens run all in registers
constexpr int kChunkBytes = 16384;  // the blocks transposed at once: 16 KiB of lanes on the stack

// A group of 8 weight rows: as stored, rows[r] is row r (rows past the range repeat a valid row, computed,
// not stored); packed (Q4_0 as q4_0x8, ops/quant/packed.h), rows[0] is the group's first byte.
struct Group {
    const uint8_t* rows[kRows];
    int n_rows;
    int64_t row0;
};

template <typename Block>
GR_AVX2 inline const Block* row_blocks(const Group& g, int r) {
    return reinterpret_cast<const Block*>(g.rows[r]);
}

// The 8 rows' fp16 scales of block b as floats, rows as stored.
template <typename Block>
GR_AVX2 inline __m256 stored_scales(const Group& g, int64_t b) {
    const Block* w[kRows];
    for (int r = 0; r < kRows; ++r) w[r] = row_blocks<Block>(g, r);
    return row_scales8(w, b);
}

// Rows as stored: the next group's lines of blocks b and b + 1, asked for at every other block.
template <typename Block>
GR_AVX2 inline void prefetch_stored(const Group& g, int64_t b, int64_t next) {
    if (b & 1) return;
    for (int r = 0; r < kRows; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(row_blocks<Block>(g, r) + b) + next, _MM_HINT_T0);
}

// Q4_0's 4 vectors of packed bytes u[s] (lane r: row r's bytes 4s .. 4s + 3) -> its 8 lane vectors: step s
// from the low nibbles, step s + 4 from the high ones.
GR_AVX2 inline void split_nibbles(const __m256i u[4], __m256i v[8]) {
    const __m256i low = _mm256_set1_epi8(0x0f);
    for (int s = 0; s < 4; ++s) {
        v[s] = _mm256_and_si256(u[s], low);
        v[s + 4] = _mm256_and_si256(_mm256_srli_epi16(u[s], 4), low);
    }
}

// Per weight type and layout: lanes() lays block b of the group's 8 rows out as kVectors lane vectors,
// scales() gives their 8 scales, prefetch() asks for the next group's bytes (`next` bytes on); dots()
// takes the lane vectors and one activation block to the 8 rows' exact integer block dots.
struct Q4Lanes {
    using Block = block_q4_0;
    static constexpr bool kZeroPoint = true;
    static constexpr int kVectors = kSteps;
    // Tokens in registers at once. At 8, the 8 lane vectors and the 8 tokens' sums fill the 16 registers,
    // and the spills cost more than transposing the blocks a second time: 8 tokens run as 4 + 4
    // (whole-process 0.90x at 8-token passes; 6 or 7 tokens are faster in one pass; docs/performance.md).
    static constexpr int kRegisterTokens = 7;
    static constexpr bool kPacked = false;
    // Byte i of a Q4_0 block holds weight i (low nibble) and weight i + 16 (high nibble): dword s of the
    // packed bytes gives the weights of steps s (low) and s + 4 (high).
    GR_AVX2 static void lanes(const Group& g, int64_t b, __m256i v[kVectors]) {
        __m256i p[4], u[4];
        for (int r = 0; r < 4; ++r)
            p[r] = load16x2(row_blocks<Block>(g, r)[b].qs, row_blocks<Block>(g, r + 4)[b].qs);
        transpose4(p, u);
        split_nibbles(u, v);
    }
    GR_AVX2 static __m256 scales(const Group& g, int64_t b) { return stored_scales<Block>(g, b); }
    GR_AVX2 static void prefetch(const Group& g, int64_t b, int64_t next) {
        prefetch_stored<Block>(g, b, next);
    }
    // sum over the block of nibble · x, per lane (the zero point is taken off by the caller).
    GR_AVX2 static __m256i dots(const __m256i v[kVectors], const int8_t* x) {
        __m256i acc = _mm256_maddubs_epi16(v[0], broadcast4(x));
        for (int s = 1; s < kSteps; ++s)
            acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(v[s], broadcast4(x + 4 * s)));
        return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
    }
};

struct Q8Lanes {
    using Block = block_q8_0;
    static constexpr bool kZeroPoint = false;
    static constexpr int kVectors = 2 * kSteps;         // the weights' 8 lane vectors, then their magnitudes
    static constexpr int kRegisterTokens = kFewTokens;  // its transposition costs more than the spills
    static constexpr bool kPacked = false;
    GR_AVX2 static void lanes(const Group& g, int64_t b, __m256i v[kVectors]) {
        const Block* w[kRows];
        for (int r = 0; r < kRows; ++r) w[r] = row_blocks<Block>(g, r);
        __m256i p[4];
        for (int r = 0; r < 4; ++r) p[r] = load16x2(w[r][b].qs, w[r + 4][b].qs);
        transpose4(p, v);  // weights 0..15: steps 0..3
        for (int r = 0; r < 4; ++r) p[r] = load16x2(w[r][b].qs + 16, w[r + 4][b].qs + 16);
        transpose4(p, v + 4);  // weights 16..31: steps 4..7
        for (int s = 0; s < kSteps; ++s) v[kSteps + s] = _mm256_sign_epi8(v[s], v[s]);
    }
    GR_AVX2 static __m256 scales(const Group& g, int64_t b) { return stored_scales<Block>(g, b); }
    GR_AVX2 static void prefetch(const Group& g, int64_t b, int64_t next) {
        prefetch_stored<Block>(g, b, next);
    }
    // |w| · (x with w's sign): unsigned · signed for maddubs.
    GR_AVX2 static __m256i dots(const __m256i v[kVectors], const int8_t* x) {
        const __m256i ones = _mm256_set1_epi16(1);
        __m256i acc = _mm256_setzero_si256();
        for (int s = 0; s < kSteps; ++s) {
            const __m256i xs = _mm256_sign_epi8(broadcast4(x + 4 * s), v[s]);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(v[kSteps + s], xs), ones));
        }
        return acc;
    }
};

// Q4_0 packed at load (q4_0x8): block b of the group is 144 bytes at rows[0] + 144 b, the 8 scales and
// then the 4 vectors u[s] that Q4Lanes builds by transposing, so nothing is transposed.
struct Q4x8Lanes : Q4Lanes {
    static constexpr bool kPacked = true;
    GR_AVX2 static const uint8_t* block(const Group& g, int64_t b) {
        return g.rows[0] + b * kQ4_0x8BlockBytes;
    }
    GR_AVX2 static void lanes(const Group& g, int64_t b, __m256i v[kVectors]) {
        __m256i u[4];
        for (int s = 0; s < 4; ++s)
            u[s] = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(block(g, b) + kQ4_0x8QuantOffset + 32 * s));
        split_nibbles(u, v);
    }
    GR_AVX2 static __m256 scales(const Group& g, int64_t b) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block(g, b))));
    }
    // The next group's 3 lines of this block: the group is one stream of 144-byte blocks.
    GR_AVX2 static void prefetch(const Group& g, int64_t b, int64_t next) {
        const char* p = reinterpret_cast<const char*>(block(g, b)) + next;
        for (int line = 0; line < 3; ++line) _mm_prefetch(p + 64 * line, _MM_HINT_T0);
    }
};

GR_AVX2 inline void store_rows(const GemmArgs& a, const Group& g, int64_t t, __m256 acc) {
    avx2_util::store_first(a.y + t * a.y_stride + g.row0, g.n_rows, acc);
}

// The group's running sums of token t, stored by store_rows after an earlier chunk.
GR_AVX2 inline __m256 load_rows(const GemmArgs& a, const Group& g, int64_t t) {
    return avx2_util::load_first(a.y + t * a.y_stride + g.row0, g.n_rows);
}

// One token's block b added to the 8 rows' running sums, in the scalar order:
//   acc + float(idot) * (d_w * d_x), idot = L::dots (minus 8 * sum(x) for Q4_0's zero point).
template <typename L>
GR_AVX2 inline __m256 add_block(__m256 acc, const __m256i v[L::kVectors], __m256 dw_b, const block_q8_0& x,
                                int16_t x_sum, const float* f16) {
    __m256i dots = L::dots(v, x.qs);
    if constexpr (L::kZeroPoint) dots = _mm256_sub_epi32(dots, _mm256_set1_epi32(8 * x_sum));
    const __m256 scale = _mm256_mul_ps(dw_b, _mm256_set1_ps(f16[x.d]));
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(dots), scale));
}

// Decode and small passes (and a prompt's last n_tokens % kTokens): tokens [t0, t0 + NT) over the
// whole group, each block transposed once in registers and used at once by the NT tokens, so a pass
// of 2 or 3 tokens costs the weights' unpacking once, as decode does. `prefetch_next` (the memory-bound
// calls): the next group's rows are fetched while this one runs.
template <typename L, int NT>
GR_AVX2 void group_few_tokens(const GemmArgs& a, const Group& g, int64_t t0, bool prefetch_next) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK;
    const block_q8_0* x[NT];
    const int16_t* xsum[NT];  // each token's block sums of x (Q4_0's zero point)
    for (int i = 0; i < NT; ++i) {
        x[i] = reinterpret_cast<const block_q8_0*>(static_cast<const uint8_t*>(a.xq) +
                                                   (t0 + i) * a.xq_row_bytes);
        xsum[i] = L::kZeroPoint ? a.x_group_sums + (t0 + i) * nb : nullptr;
    }
    const int64_t next = prefetch_next ? kRows * a.w_row_bytes : 0;
    __m256 acc[NT];
    for (int i = 0; i < NT; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        if (next) L::prefetch(g, b, next);
        __m256i v[L::kVectors];
        L::lanes(g, b, v);
        const __m256 dw_b = L::scales(g, b);
        for (int i = 0; i < NT; ++i)
            acc[i] = add_block<L>(acc[i], v, dw_b, x[i][b], L::kZeroPoint ? xsum[i][b] : 0, f16);
    }
    for (int i = 0; i < NT; ++i) store_rows(a, g, t0 + i, acc[i]);
}

// Tokens [t0, t0 + n) with 1 <= n <= kFewTokens, as group_few_tokens; above L::kRegisterTokens in two
// passes over the group of about half the tokens each (the second finds the group's blocks in cache).
template <typename L>
GR_AVX2 void group_tokens_in_registers(const GemmArgs& a, const Group& g, int64_t t0, int64_t n,
                                       bool prefetch_next) {
    if (n > L::kRegisterTokens) {
        const int64_t first = (n + 1) / 2;
        group_tokens_in_registers<L>(a, g, t0, first, prefetch_next);
        return group_tokens_in_registers<L>(a, g, t0 + first, n - first, false);
    }
    switch (n) {
        case 1:
            return group_few_tokens<L, 1>(a, g, t0, prefetch_next);
        case 2:
            return group_few_tokens<L, 2>(a, g, t0, prefetch_next);
        case 3:
            return group_few_tokens<L, 3>(a, g, t0, prefetch_next);
        case 4:
            return group_few_tokens<L, 4>(a, g, t0, prefetch_next);
        case 5:
            return group_few_tokens<L, 5>(a, g, t0, prefetch_next);
        case 6:
            return group_few_tokens<L, 6>(a, g, t0, prefetch_next);
        case 7:
            return group_few_tokens<L, 7>(a, g, t0, prefetch_next);
        default:
            return group_few_tokens<L, 8>(a, g, t0, prefetch_next);
    }
}

// Prompts: blocks [b0, b1) of the group, transposed into `lanes` ((b1 - b0) * kVectors vectors) with
// their row scales `dw`, then tokens [t0, t0 + kTokens) over them, continuing the sums of blocks < b0.
template <typename L>
GR_AVX2 void group_tokens(const GemmArgs& a, const Group& g, int64_t t0, int64_t b0, int64_t b1,
                          const int32_t* lanes, const float* dw) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK;
    const block_q8_0* x[kTokens];
    for (int i = 0; i < kTokens; ++i)
        x[i] = reinterpret_cast<const block_q8_0*>(static_cast<const uint8_t*>(a.xq) +
                                                   (t0 + i) * a.xq_row_bytes);
    __m256 acc[kTokens];
    for (int i = 0; i < kTokens; ++i) acc[i] = b0 == 0 ? _mm256_setzero_ps() : load_rows(a, g, t0 + i);
    for (int64_t b = b0; b < b1; ++b) {
        __m256i v[L::kVectors];
        for (int s = 0; s < L::kVectors; ++s)
            v[s] = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(lanes + ((b - b0) * L::kVectors + s) * 8));
        const __m256 dw_b = _mm256_loadu_ps(dw + (b - b0) * 8);
        for (int i = 0; i < kTokens; ++i)
            acc[i] = add_block<L>(acc[i], v, dw_b, x[i][b],
                                  L::kZeroPoint ? a.x_group_sums[(t0 + i) * nb + b] : 0, f16);
    }
    for (int i = 0; i < kTokens; ++i) store_rows(a, g, t0 + i, acc[i]);
}

template <typename L>
GR_AVX2 void gemm(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
    constexpr int kChunk = kChunkBytes / (L::kVectors * 32);  // blocks: 64 of Q4_0, 32 of Q8_0
    alignas(32) int32_t lanes[kChunk * L::kVectors * 8];      // (kChunk, kVectors, 8)
    alignas(32) float dw[kChunk * 8];                         // (kChunk, 8)
    const int64_t nb = a.k / kQK;
    // Up to kFewTokens tokens run in registers (the weights are read once, as in decode); more run the
    // staged chunks, kTokens at a time, and the rest (< kTokens) in registers.
    const int64_t prompt_tokens = a.n_tokens <= kFewTokens ? 0 : a.n_tokens / kTokens * kTokens;
    const auto* w = static_cast<const uint8_t*>(a.w);
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRows) {
        Group g{.rows = {}, .n_rows = int(std::min<int64_t>(kRows, row_end - r0)), .row0 = r0};
        for (int r = 0; r < kRows; ++r)
            g.rows[r] = w + (r0 + (L::kPacked ? 0 : std::min(r, g.n_rows - 1))) * a.w_row_bytes;
        for (int64_t b0 = 0; prompt_tokens > 0 && b0 < nb; b0 += kChunk) {
            const int64_t b1 = std::min<int64_t>(nb, b0 + kChunk);
            for (int64_t b = b0; b < b1; ++b) {
                __m256i v[L::kVectors];
                L::lanes(g, b, v);
                for (int s = 0; s < L::kVectors; ++s)
                    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes + ((b - b0) * L::kVectors + s) * 8),
                                       v[s]);
                _mm256_store_ps(dw + (b - b0) * 8, L::scales(g, b));
            }
            for (int64_t t = 0; t < prompt_tokens; t += kTokens) group_tokens<L>(a, g, t, b0, b1, lanes, dw);
        }
        // Only a call that is all in registers reads the next group's rows next.
        if (prompt_tokens < a.n_tokens)
            group_tokens_in_registers<L>(a, g, prompt_tokens, a.n_tokens - prompt_tokens,
                                         prompt_tokens == 0 && r0 + kRows < row_end);
    }
}

}  // namespace

namespace avx2 {

// Below kTokens tokens Q8_0 runs ops/quant/avx2/gemm_tiles.cpp's tiles: a Q8_0 block needs no unpacking, so
// its straight 32-weight dot costs less than the transposition when each block serves one token.
void gemm_lanes_q8_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    if (args.n_tokens < kTokens) return gemm_q8_0_q8_0(args, row_begin, row_end);
    gemm<Q8Lanes>(args, row_begin, row_end);
}
void gemm_lanes_q4_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm<Q4Lanes>(args, row_begin, row_end);
}
void gemm_lanes_q4_0x8_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm<Q4x8Lanes>(args, row_begin, row_end);
}

}  // namespace avx2

}  // namespace graphrun::ops
