// ops/quant/avx512/lanes_gemm.cpp — AVX-512 VNNI GEMM for Q8_0 and Q4_0 weights against Q8_0
// activations, one weight row per 32-bit lane, 16 rows a register.
//
//   xq (n_tokens, K) Q8_0 · W (N, K)ᵀ Q8_0 / Q4_0 -> y (n_tokens, N) f32, rows [row_begin, row_end)
//
// ops/quant/avx2/lanes_gemm.cpp's layout, twice as wide: a block of 16 weight rows is transposed so
// that vector s holds, in lane r, row r's 4 weights 4s .. 4s + 3 as unsigned bytes; one activation
// block's 4 values 4s .. 4s + 3, broadcast to every lane, meet them in one vpdpbusd (4 products
// u8 · s8 summed into the lane's int32). After the 8 steps of a block, lane r holds
//   sum (w_unsigned · x) = idot + z · sum(x),
// and the zero point z · sum(x) is taken off with the sums of each 32 activations the matmul's prepare
// wrote (GemmArgs::x_group_sums):
//   Q4_0: the nibbles 0..15 are the weights + 8 (z = 8, as the format stores them);
//   Q8_0: the weights are made unsigned by flipping their sign bit, w + 128 (z = 128).
// Integer ranges: |x| <= 127, so a lane's sum is at most 32 * 255 * 127 < 2^20: exact in int32.
//
// Exactness is the AVX2 file's: every output is summed in the scalar vec_dot's order with its
// operations, sum = 0; for each block b in order: sum = sum + float(idot_b) * (d_w,b * d_x,b) (a plain
// mul and add: this file is built with -ffp-contract=off), so y[t, n] is scalar::vec_dot's bits for
// any n_tokens, row range or thread count, and the AVX2 kernels' bits.
//
// Prompts: 16 rows are transposed 16 KiB at a time into a buffer on the stack, and every group of 4
// tokens passes over that chunk, its running sums kept in y between chunks (a float stored and loaded
// back is the same float). Decode, calls of up to 8 tokens and the tokens past the last group of 4: each
// block of 16 rows is transposed in registers and used at once by all of them, the next group's rows
// fetched meanwhile when the call is all decode-like (memory-bound). The kernel allocates nothing.
//
// Q4_0 repacked at load (q4_0x8, ops/quant/packed.h) is read as two groups of 8 rows: each block's step
// vectors are the two groups' 32-byte vectors side by side, loaded as they lie, and its scales their two
// rows of 8 fp16; nothing is transposed, and the values, hence the bits, are those of the rows as stored.
#include <algorithm>
#include <cstring>

#include "ops/quant/kernels.h"
#include "ops/quant/packed.h"
#include "ops/simd.h"

namespace graphrun::ops {

namespace {

constexpr int kRows = 16;   // rows per group: one per lane
constexpr int kSteps = 8;   // 4-weight steps per 32-weight block
constexpr int kTokens = 4;  // tokens per micro-tile
constexpr int kChunkBytes = 16384;
constexpr int kFewTokens = 8;  // calls of up to this many tokens run all in registers

// 16 bytes of rows r, r + 4, r + 8, r + 12 (at byte `offset` of block b) in the four 128-bit lanes.
template <typename Block>
GR_AVX512 inline __m512i load_rows4(const Block* const w[kRows], int r, int64_t b, int offset) {
    auto row = [&](int i) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[r + 4 * i][b].qs + offset));
    };
    const __m256i low = _mm256_inserti128_si256(_mm256_castsi128_si256(row(0)), row(1), 1);
    const __m256i high = _mm256_inserti128_si256(_mm256_castsi128_si256(row(2)), row(3), 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

// p[j]: per 128-bit lane L, the 4 dwords of row j + 4 L -> u[s]: lane r = row r's dword s.
GR_AVX512 inline void transpose4(const __m512i p[4], __m512i u[4]) {
    const __m512i t0 = _mm512_unpacklo_epi32(p[0], p[1]), t1 = _mm512_unpackhi_epi32(p[0], p[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(p[2], p[3]), t3 = _mm512_unpackhi_epi32(p[2], p[3]);
    u[0] = _mm512_unpacklo_epi64(t0, t2);
    u[1] = _mm512_unpackhi_epi64(t0, t2);
    u[2] = _mm512_unpacklo_epi64(t1, t3);
    u[3] = _mm512_unpackhi_epi64(t1, t3);
}

// Per weight type: transpose() lays block b of 16 rows out as the 8 step vectors of unsigned weights.
struct Q4Lanes {
    using Block = block_q4_0;
    static constexpr int kZeroPoint = 8;
    static constexpr bool kPacked = false;
    // Byte i of a Q4_0 block holds weight i (low nibble) and weight i + 16 (high nibble): dword s of the
    // packed bytes gives the weights of steps s (low) and s + 4 (high).
    GR_AVX512 static void transpose(const block_q4_0* const w[kRows], int64_t b, __m512i v[kSteps]) {
        __m512i p[4], u[4];
        for (int r = 0; r < 4; ++r) p[r] = load_rows4(w, r, b, 0);
        transpose4(p, u);
        const __m512i low = _mm512_set1_epi8(0x0f);
        for (int s = 0; s < 4; ++s) {
            v[s] = _mm512_and_si512(u[s], low);
            v[s + 4] = _mm512_and_si512(_mm512_srli_epi16(u[s], 4), low);
        }
    }
};

struct Q8Lanes {
    using Block = block_q8_0;
    static constexpr int kZeroPoint = 128;
    static constexpr bool kPacked = false;
    GR_AVX512 static void transpose(const block_q8_0* const w[kRows], int64_t b, __m512i v[kSteps]) {
        __m512i p[4];
        for (int r = 0; r < 4; ++r) p[r] = load_rows4(w, r, b, 0);
        transpose4(p, v);  // weights 0..15: steps 0..3
        for (int r = 0; r < 4; ++r) p[r] = load_rows4(w, r, b, 16);
        transpose4(p, v + 4);  // weights 16..31: steps 4..7
        const __m512i sign = _mm512_set1_epi8(int8_t(0x80));
        for (int s = 0; s < kSteps; ++s) v[s] = _mm512_xor_si512(v[s], sign);  // w + 128 as u8
    }
};

// The fp16 scales d of block b of 16 rows as floats in row order (an exact conversion).
template <typename Block>
GR_AVX512 inline __m512 row_scales16(const Block* const w[kRows], int64_t b) {
    alignas(32) uint16_t d[kRows];
    for (int r = 0; r < kRows; ++r) d[r] = w[r][b].d;
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d)));
}

// Q4_0 packed at load: the arithmetic of Q4Lanes on bytes laid out as its transposition leaves them.
struct Q4x8Lanes {
    using Block = block_q4_0;
    static constexpr int kZeroPoint = 8;
    static constexpr bool kPacked = true;
};

// 16 rows: as stored, rows[r] is row r (rows past the range repeat a valid row, computed, not stored);
// packed, rows[0] and rows[1] are the first bytes of the two groups of 8 (the first again for a range
// of 8 rows).
struct Group {
    const uint8_t* rows[kRows];
    int n_rows;
    int64_t row0;
};

// The group of 16 rows at row r0 of W (rows [r0, row_end) of the call's range).
template <typename L>
GR_AVX512 inline Group make_group(const uint8_t* w, int64_t row_bytes, int64_t r0, int64_t row_end) {
    Group g{.rows = {}, .n_rows = int(std::min<int64_t>(kRows, row_end - r0)), .row0 = r0};
    if constexpr (L::kPacked) {
        g.rows[0] = w + r0 * row_bytes;
        g.rows[1] = w + (r0 + (g.n_rows > kQ4_0x8Rows ? kQ4_0x8Rows : 0)) * row_bytes;
    } else {
        for (int r = 0; r < kRows; ++r) g.rows[r] = w + (r0 + std::min(r, g.n_rows - 1)) * row_bytes;
    }
    return g;
}

// q4_0x8 read as two groups of 8 rows: block b of each is 144 bytes, the 8 scales and then the 4 vectors
// u[s] that Q4Lanes::transpose builds for 8 rows; lanes() puts the two groups' vectors side by side.
struct Q4x8PairView {
    GR_AVX512 static const uint8_t* block(const Group& g, int half, int64_t b) {
        return g.rows[half] + b * kQ4_0x8BlockBytes;
    }
    GR_AVX512 static void lanes(const Group& g, int64_t b, __m512i v[kSteps]) {
        const uint8_t* q0 = block(g, 0, b) + kQ4_0x8QuantOffset;
        const uint8_t* q1 = block(g, 1, b) + kQ4_0x8QuantOffset;
        const __m512i low = _mm512_set1_epi8(0x0f);
        for (int s = 0; s < 4; ++s) {
            const __m256i u0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q0 + 32 * s));
            const __m256i u1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q1 + 32 * s));
            const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(u0), u1, 1);
            v[s] = _mm512_and_si512(u, low);
            v[s + 4] = _mm512_and_si512(_mm512_srli_epi16(u, 4), low);
        }
    }
    GR_AVX512 static __m512 scales(const Group& g, int64_t b) {
        const __m128i d0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block(g, 0, b)));
        const __m128i d1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block(g, 1, b)));
        return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(d0), d1, 1));
    }
    // Each group's 3 lines of block b in the groups `next` bytes on.
    GR_AVX512 static void prefetch(const Group& g, int64_t b, int64_t next) {
        for (int half = 0; half < 2; ++half) {
            const char* p = reinterpret_cast<const char*>(block(g, half, b)) + next;
            for (int line = 0; line < 3; ++line) _mm_prefetch(p + 64 * line, _MM_HINT_T0);
        }
    }
};

GR_AVX512 inline void store_rows(const GemmArgs& a, const Group& g, int64_t t, __m512 acc) {
    const __mmask16 mask = __mmask16((1u << g.n_rows) - 1);
    _mm512_mask_storeu_ps(a.y + t * a.y_stride + g.row0, mask, acc);
}
GR_AVX512 inline __m512 load_rows(const GemmArgs& a, const Group& g, int64_t t) {
    const __mmask16 mask = __mmask16((1u << g.n_rows) - 1);
    return _mm512_maskz_loadu_ps(mask, a.y + t * a.y_stride + g.row0);
}

// One token's block b added to the 16 rows' running sums, in the scalar order:
//   acc + float(idot) * (d_w * d_x), idot = sum(u · x) - z * sum(x) from 8 vpdpbusd steps.
template <typename L>
GR_AVX512 inline __m512 add_block(__m512 acc, const __m512i v[kSteps], __m512 dw_b, const block_q8_0& x,
                                  int16_t x_sum, const float* f16) {
    __m512i dots = _mm512_set1_epi32(-L::kZeroPoint * x_sum);
    for (int s = 0; s < kSteps; ++s) {
        int32_t four;
        std::memcpy(&four, x.qs + 4 * s, sizeof four);
        dots = _mm512_dpbusd_epi32(dots, v[s], _mm512_set1_epi32(four));
    }
    const __m512 scale = _mm512_mul_ps(dw_b, _mm512_set1_ps(f16[x.d]));
    return _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(dots), scale));
}

// Blocks [b0, b1) of the group, transposed into `lanes` ((b1 - b0) * kSteps vectors) with their row
// scales `dw`, then tokens [t0, t0 + kTokens) over them, continuing the sums of blocks < b0.
template <typename L>
GR_AVX512 void group_tokens(const GemmArgs& a, const Group& g, int64_t t0, int64_t b0, int64_t b1,
                            const __m512i* lanes, const float* dw) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK;
    const block_q8_0* x[kTokens];
    for (int i = 0; i < kTokens; ++i)
        x[i] = reinterpret_cast<const block_q8_0*>(static_cast<const uint8_t*>(a.xq) +
                                                   (t0 + i) * a.xq_row_bytes);
    __m512 acc[kTokens];
    for (int i = 0; i < kTokens; ++i) acc[i] = b0 == 0 ? _mm512_setzero_ps() : load_rows(a, g, t0 + i);
    for (int64_t b = b0; b < b1; ++b) {
        const __m512i* v = lanes + (b - b0) * kSteps;
        const __m512 dw_b = _mm512_load_ps(dw + (b - b0) * kRows);
        for (int i = 0; i < kTokens; ++i)
            acc[i] = add_block<L>(acc[i], v, dw_b, x[i][b], a.x_group_sums[(t0 + i) * nb + b], f16);
    }
    for (int i = 0; i < kTokens; ++i) store_rows(a, g, t0 + i, acc[i]);
}

// Tokens [t0, t0 + NT) (NT <= kFewTokens) over the whole group, each block transposed once in
// registers: 8 weight vectors and NT sums of the 32 registers.
template <typename L, int NT>
GR_AVX512 void group_few_tokens(const GemmArgs& a, const Group& g, int64_t t0, bool prefetch_next) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK;
    const typename L::Block* w[kRows];
    for (int r = 0; r < kRows; ++r) w[r] = reinterpret_cast<const typename L::Block*>(g.rows[r]);
    const block_q8_0* x[NT];
    for (int i = 0; i < NT; ++i)
        x[i] = reinterpret_cast<const block_q8_0*>(static_cast<const uint8_t*>(a.xq) +
                                                   (t0 + i) * a.xq_row_bytes);
    const int64_t next = prefetch_next ? kRows * a.w_row_bytes : 0;
    __m512 acc[NT];
    for (int i = 0; i < NT; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        __m512i v[kSteps];
        __m512 dw_b;
        if constexpr (L::kPacked) {
            if (next) Q4x8PairView::prefetch(g, b, next);
            Q4x8PairView::lanes(g, b, v);
            dw_b = Q4x8PairView::scales(g, b);
        } else {
            if (next && (b & 1) == 0)
                for (int r = 0; r < kRows; ++r)
                    _mm_prefetch(reinterpret_cast<const char*>(w[r] + b) + next, _MM_HINT_T0);
            L::transpose(w, b, v);
            dw_b = row_scales16(w, b);
        }
        for (int i = 0; i < NT; ++i)
            acc[i] = add_block<L>(acc[i], v, dw_b, x[i][b], a.x_group_sums[(t0 + i) * nb + b], f16);
    }
    for (int i = 0; i < NT; ++i) store_rows(a, g, t0 + i, acc[i]);
}

// Tokens [t0, t0 + n), 1 <= n <= kFewTokens, over rows [row_begin, row_end), as group_few_tokens.
template <typename L>
GR_AVX512 void gemm_few_tokens(const GemmArgs& a, int64_t t0, int64_t n, int64_t row_begin, int64_t row_end,
                               bool prefetch) {
    const auto* w = static_cast<const uint8_t*>(a.w);
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRows) {
        const Group g = make_group<L>(w, a.w_row_bytes, r0, row_end);
        const bool prefetch_next = prefetch && r0 + kRows < row_end;
        switch (n) {
            case 1:
                group_few_tokens<L, 1>(a, g, t0, prefetch_next);
                break;
            case 2:
                group_few_tokens<L, 2>(a, g, t0, prefetch_next);
                break;
            case 3:
                group_few_tokens<L, 3>(a, g, t0, prefetch_next);
                break;
            case 4:
                group_few_tokens<L, 4>(a, g, t0, prefetch_next);
                break;
            case 5:
                group_few_tokens<L, 5>(a, g, t0, prefetch_next);
                break;
            case 6:
                group_few_tokens<L, 6>(a, g, t0, prefetch_next);
                break;
            case 7:
                group_few_tokens<L, 7>(a, g, t0, prefetch_next);
                break;
            default:
                group_few_tokens<L, 8>(a, g, t0, prefetch_next);
                break;
        }
    }
}

template <typename L>
GR_AVX512 void gemm_tokens(const GemmArgs& a, int64_t n_tokens, int64_t row_begin, int64_t row_end) {
    constexpr int kChunk = kChunkBytes / (kSteps * 64);  // 32 blocks of 16 rows
    alignas(64) __m512i lanes[kChunk * kSteps];          // (kChunk, kSteps) vectors
    alignas(64) float dw[kChunk * kRows];                // (kChunk, 16)
    const int64_t nb = a.k / kQK;
    const auto* w = static_cast<const uint8_t*>(a.w);
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRows) {
        const Group g = make_group<L>(w, a.w_row_bytes, r0, row_end);
        const typename L::Block* rows[kRows];
        for (int r = 0; r < kRows; ++r) rows[r] = reinterpret_cast<const typename L::Block*>(g.rows[r]);
        for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
            const int64_t b1 = std::min<int64_t>(nb, b0 + kChunk);
            for (int64_t b = b0; b < b1; ++b) {
                if constexpr (L::kPacked) {
                    Q4x8PairView::lanes(g, b, lanes + (b - b0) * kSteps);
                    _mm512_store_ps(dw + (b - b0) * kRows, Q4x8PairView::scales(g, b));
                } else {
                    L::transpose(rows, b, lanes + (b - b0) * kSteps);
                    _mm512_store_ps(dw + (b - b0) * kRows, row_scales16(rows, b));
                }
            }
            for (int64_t t = 0; t < n_tokens; t += kTokens) group_tokens<L>(a, g, t, b0, b1, lanes, dw);
        }
    }
}

// Calls of up to kFewTokens tokens all in registers (the weights stream past once, as in decode);
// longer ones the first n_tokens / 4 * 4 tokens in staged chunks, the rest (fewer than 4) in registers.
template <typename L>
GR_AVX512 void gemm(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
    const int64_t tiled = a.n_tokens <= kFewTokens ? 0 : a.n_tokens / kTokens * kTokens;
    if (tiled > 0) gemm_tokens<L>(a, tiled, row_begin, row_end);
    if (tiled < a.n_tokens) gemm_few_tokens<L>(a, tiled, a.n_tokens - tiled, row_begin, row_end, tiled == 0);
}

}  // namespace

namespace avx512 {

void gemm_lanes_q8_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm<Q8Lanes>(args, row_begin, row_end);
}
void gemm_lanes_q4_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm<Q4Lanes>(args, row_begin, row_end);
}
void gemm_lanes_q4_0x8_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm<Q4x8Lanes>(args, row_begin, row_end);
}

}  // namespace avx512

}  // namespace graphrun::ops
