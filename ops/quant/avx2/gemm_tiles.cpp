// ops/quant/avx2/gemm_tiles.cpp — AVX2 GEMM for Q8_0 weights against Q8_0 activations in tiles of weight
// rows × tokens, and the one-row dots (vec_dot) of Q8_0 and Q4_0 in the same order.
//
// Since ops/quant/avx2/lanes_gemm.cpp (one weight row per lane, no horizontal adds) took over prompts and
// every Q4_0 call, this gemm runs Q8_0 calls of 1 to 3 tokens (decode, small batches): a Q8_0 block
// needs no unpacking, and its straight 32-weight dot beats the lanes' transposition when a block
// serves one token.
//
//   xq (n_tokens, K) Q8_0 · W (N, K)ᵀ Q8_0 / Q4_0 -> y (n_tokens, N) f32, rows [row_begin, row_end)
//
// Exactness (what batch invariance builds on): every output y[t, n] is computed in the scalar
// vec_dot's order with its operations, whatever tile it falls in:
//   sum = 0; for each block b in order: sum = sum + float(idot_b) * (d_w,b * d_x,b)
// with idot_b the exact integer block dot, and a plain mul and add (no FMA), as scalar:: does. So a
// token's row is the same bits for any n_tokens, tile boundary, row range or thread count, and equals
// scalar::vec_dot (tests/ops/matmul_gemm_test.cpp checks all of it).
//
// A micro-tile holds 8 (row, token) pairs per accumulator vector, one pair per float lane, in two
// shapes: 4 rows × 2 tokens and 8 × 1 (decode). The integer
// block dots of 8 pairs are reduced together by one tree of horizontal adds into the 8 lanes; the
// scales and the float sums are then one vector multiply and add for all 8.
//
// The 8 × 1 tile (decode: every call with one token) has its own kernel, tile_8x1: with one token there
// is no activation block to share, so what costs is per (row, block) work. It builds the 8 rows' scales
// with the scalar ALUs and one F16C conversion instead of 8 table loads and 7 inserts, and asks for the
// next tile's rows while it reads this one's. Same per-output order and operations as every other tile.
// The 4 × 2 tile (tile_4x2: 2 or 3 tokens) takes its two tokens half block by half block (TokenPair),
// so one maddubs serves two pairs and the tree starts from 4 vectors; it builds the scales by F16C
// too and asks for the next rows in the same way.
#include <algorithm>

#include "ops/quant/avx2/util.h"
#include "ops/quant/kernels.h"

namespace graphrun::ops {

namespace {

using avx2_util::load32;
using avx2_util::nibbles32;
using avx2_util::row_scales8;

constexpr int kLanes = 8;         // (row, token) pairs per accumulator
constexpr int kTileRows = 8;      // rows of one micro-tile, every shape
constexpr int64_t kRowTile = 16;  // rows whose weights stay in L1/L2 while every token passes over them

// v[0..7] (8 int32 each) -> lane l = the sum of v[l]'s 8 lanes. Integer adds, exact in any order.
GR_AVX2 inline __m256i reduce8(const __m256i v[kLanes]) {
    const __m256i q0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i q1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    // q0 = [v0..v3 low halves | v0..v3 high halves], q1 likewise for v4..v7.
    return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q0, q1, 0x31));
}

// The 4 × 2 tile's activations: the two tokens' blocks laid out half by half, the first halves of
// both in one vector ([token 0's q 0..15 | token 1's q 0..15]) and the second halves in another.
// Against a weight row's half broadcast to both 128-bit lanes, one maddubs then serves the row's two
// (row, token) pairs, and a pair's two halves add lane by lane with no shuffle: the tree of horizontal
// adds that reduces 8 pairs starts from 4 vectors, not 8.
struct TokenPair {
    __m256i lo, hi;
};
GR_AVX2 inline TokenPair token_pair(const block_q8_0& first, const block_q8_0& second) {
    const __m256i a = load32(first.qs), b = load32(second.qs);
    return {_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31)};
}

// Per weight type: `Weight` is a block made ready for maddubs once per row, `Act` an activation block
// made ready once per token; dot() is their exact block dot as 8 int32 partial sums.
struct Q8Block {
    using Block = block_q8_0;
    struct Weight {
        __m256i q, abs_q;
    };
    struct Act {
        __m256i q;
    };
    GR_AVX2 static Weight weight(const block_q8_0& w) {
        const __m256i q = load32(w.qs);
        return {q, _mm256_sign_epi8(q, q)};
    }
    GR_AVX2 static Act act(const block_q8_0& x) { return {load32(x.qs)}; }
    // |w| · (x with w's sign): unsigned · signed for maddubs; pairs <= 2 * 128 * 127 < 32767.
    GR_AVX2 static __m256i dot(const Weight& w, const Act& x) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(w.abs_q, _mm256_sign_epi8(x.q, w.q)),
                                 _mm256_set1_epi16(1));
    }
    // Block b of 8 rows · one activation block -> lane r = row r's exact block dot.
    GR_AVX2 static __m256i dots8(const block_q8_0* const w[kLanes], int64_t b, const Act& x) {
        __m256i sums[kLanes];
        for (int r = 0; r < kLanes; ++r) sums[r] = dot(weight(w[r][b]), x);
        return reduce8(sums);
    }

    // The 4 × 2 tile (see TokenPair): a row's block as two halves, each broadcast to both 128-bit lanes.
    struct Halves {
        __m256i lo, hi;
    };
    GR_AVX2 static Halves halves(const block_q8_0& w) {
        return {_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs))),
                _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + 16)))};
    }
    // One row's halves · the token pair -> [the first token's 4 int32 partial sums | the second's].
    // |x| · (w with x's sign) for maddubs: the magnitudes are the tokens', so the compiler computes
    // them once per block for every row of the tile. Pairs <= 2 * 127 * 128 < 32767 (|x| <= 127, as
    // for dot()), but two halves' pair sums could pass it, so each is widened before they add.
    GR_AVX2 static __m256i pair_dot(const Halves& w, const TokenPair& x) {
        const __m256i lo = _mm256_maddubs_epi16(_mm256_sign_epi8(x.lo, x.lo), _mm256_sign_epi8(w.lo, x.lo));
        const __m256i hi = _mm256_maddubs_epi16(_mm256_sign_epi8(x.hi, x.hi), _mm256_sign_epi8(w.hi, x.hi));
        const __m256i one = _mm256_set1_epi16(1);
        return _mm256_add_epi32(_mm256_madd_epi16(lo, one), _mm256_madd_epi16(hi, one));
    }
};

struct Q4Block {
    using Block = block_q4_0;
    struct Weight {
        __m256i nibbles;
    };
    struct Act {
        __m256i q, eight_x;  // eight_x: 8 * (x pair sums), the zero-point term, shared by every row
    };
    GR_AVX2 static Weight weight(const block_q4_0& w) { return {nibbles32(w.qs)}; }
    GR_AVX2 static Act act(const block_q8_0& x) {
        const __m256i q = load32(x.qs);
        return {q, _mm256_maddubs_epi16(_mm256_set1_epi8(8), q)};
    }
    // (nibble - 8) · x = nibble · x - 8 · x; pair sums <= 2 * 15 * 127 and 2 * 8 * 127.
    GR_AVX2 static __m256i dot(const Weight& w, const Act& x) {
        return _mm256_madd_epi16(pair_sums(w, x), _mm256_set1_epi16(1));
    }
    // (nibble - 8) · x for the 16 pairs of weights, as int16.
    GR_AVX2 static __m256i pair_sums(const Weight& w, const Act& x) {
        return _mm256_sub_epi16(_mm256_maddubs_epi16(w.nibbles, x.q), x.eight_x);
    }
};

// The 4 × 2 micro-tile: kTileRows weight rows (two groups of 4) × tokens t0, t0 + 1 over all K, each
// accumulator lane in the scalar order. Rows past the range repeat a valid row (computed, not stored).
// Vector i of a group is pair_dot(row i, the token pair), so the tree leaves row i's first token in
// lane i and its second token in lane i + 4: lanes (row, token) = (0,0) (1,0) (2,0) (3,0) (0,1) (1,1)
// (2,1) (3,1). A lane's scale is d_w[row] * d_x[token], the same two floats (F16C conversions, exact
// like the table) and multiply as scalar::, moved into the lane by a permute.
template <typename B>
GR_AVX2 void tile_4x2(const GemmArgs& a, const uint8_t* const rows[kTileRows], int n_rows, int64_t t0,
                      int64_t row0, bool prefetch_next) {
    constexpr int R = 4, G = kTileRows / R;
    const int64_t nb = a.k / kQK;
    const typename B::Block* w[kTileRows];
    for (int r = 0; r < kTileRows; ++r) w[r] = reinterpret_cast<const typename B::Block*>(rows[r]);
    const auto* x0 =
        reinterpret_cast<const block_q8_0*>(static_cast<const uint8_t*>(a.xq) + t0 * a.xq_row_bytes);
    const auto* x1 =
        reinterpret_cast<const block_q8_0*>(reinterpret_cast<const uint8_t*>(x0) + a.xq_row_bytes);
    const __m256i token_lanes = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const __m256i row_lanes[G] = {_mm256_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3),
                                  _mm256_setr_epi32(4, 5, 6, 7, 4, 5, 6, 7)};
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const int64_t next = prefetch_next ? kTileRows * a.w_row_bytes : 0;
    for (int64_t b = 0; b < nb; ++b) {
        if (next && (b & 1) == 0)  // as in tile_8x1
            for (int r = 0; r < kTileRows; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(w[r] + b) + next, _MM_HINT_T0);
        const TokenPair xp = token_pair(x0[b], x1[b]);
        uint32_t packed = uint32_t(x0[b].d) | uint32_t(x1[b].d) << 16;
        asm("" : "+r"(packed));  // as in row_scales8
        const __m256 dx = _mm256_permutevar8x32_ps(
            _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128(int(packed)))), token_lanes);
        const __m256 dw = row_scales8(w, b);
        for (int g = 0; g < G; ++g) {
            __m256i v[R];
            for (int r = 0; r < R; ++r) v[r] = B::pair_dot(B::halves(w[g * R + r][b]), xp);
            const __m256i dots =
                _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
            const __m256 scale = _mm256_mul_ps(_mm256_permutevar8x32_ps(dw, row_lanes[g]), dx);
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_cvtepi32_ps(dots), scale));
        }
    }
    alignas(32) float out[kTileRows * 2];
    for (int g = 0; g < G; ++g) _mm256_store_ps(out + g * kLanes, acc[g]);
    for (int g = 0; g < G; ++g)
        for (int i = 0; i < R && g * R + i < n_rows; ++i)
            for (int t = 0; t < 2; ++t)
                a.y[(t0 + t) * a.y_stride + row0 + g * R + i] = out[g * kLanes + t * R + i];
}

// The 8 × 1 micro-tile: 8 weight rows · token t, lane r = row r, in the scalar order like every tile.
// With prefetch_next, the next 8 rows are asked for at the offset being read, about one cache line per
// row every two blocks: 8 short row streams at once are more than the hardware prefetcher follows.
// (A hint: it cannot fault. Without it the T1 kernel took 1.3-1.6x the CPU time on 5 of 6 TinyLlama
// shapes, docs/performance.md.)
template <typename B>
GR_AVX2 void tile_8x1(const GemmArgs& a, const uint8_t* const rows[kTileRows], int n_rows, int64_t t,
                      int64_t row0, bool prefetch_next) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = a.k / kQK;
    const typename B::Block* w[kTileRows];
    for (int r = 0; r < kTileRows; ++r) w[r] = reinterpret_cast<const typename B::Block*>(rows[r]);
    const auto* x =
        reinterpret_cast<const block_q8_0*>(static_cast<const uint8_t*>(a.xq) + t * a.xq_row_bytes);
    const int64_t next = prefetch_next ? kTileRows * a.w_row_bytes : 0;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        if (next && (b & 1) == 0)
            for (int r = 0; r < kTileRows; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(w[r] + b) + next, _MM_HINT_T0);
        const __m256 scale = _mm256_mul_ps(row_scales8(w, b), _mm256_set1_ps(f16[x[b].d]));
        const __m256i dots = B::dots8(w, b, B::act(x[b]));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(dots), scale));
    }
    alignas(32) float out[kTileRows];
    _mm256_store_ps(out, acc);
    for (int r = 0; r < n_rows; ++r) a.y[t * a.y_stride + row0 + r] = out[r];
}

template <typename B>
GR_AVX2 void gemm(const GemmArgs& a, int64_t row_begin, int64_t row_end) {
    const auto* w = static_cast<const uint8_t*>(a.w);
    for (int64_t n0 = row_begin; n0 < row_end; n0 += kRowTile) {
        const int64_t n1 = std::min(row_end, n0 + kRowTile);
        for (int64_t t0 = 0; t0 < a.n_tokens;) {
            const int64_t left = a.n_tokens - t0;
            for (int64_t r0 = n0; r0 < n1; r0 += kTileRows) {
                const int n_rows = int(std::min<int64_t>(kTileRows, n1 - r0));
                const uint8_t* rows[kTileRows];
                for (int r = 0; r < kTileRows; ++r)
                    rows[r] = w + (r0 + std::min(r, n_rows - 1)) * a.w_row_bytes;
                // The next tile's rows are the next ones read in decode (one token), and nearly so in
                // the calls of 2 or 3 tokens the traits give this gemm (the 3rd token's 8 × 1 tiles
                // reread rows already in cache).
                if (left >= 2)
                    tile_4x2<B>(a, rows, n_rows, t0, r0, a.n_tokens <= 3 && r0 + kTileRows < row_end);
                else
                    tile_8x1<B>(a, rows, n_rows, t0, r0, a.n_tokens == 1 && r0 + kTileRows < row_end);
            }
            t0 += left >= 2 ? 2 : 1;
        }
    }
}

// One row · one token in the same order: 8 blocks' integer dots reduced at once, then the float
// sum block by block.
template <typename B>
GR_AVX2 float dot_in_scalar_order(int64_t n, const typename B::Block* w, const block_q8_0* x) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = n / kQK;
    float sum = 0.0f;
    int64_t b = 0;
    for (; b + kLanes <= nb; b += kLanes) {
        __m256i sums[kLanes];
        float dw[kLanes], dx[kLanes];
        for (int i = 0; i < kLanes; ++i) {
            sums[i] = B::dot(B::weight(w[b + i]), B::act(x[b + i]));
            dw[i] = f16[w[b + i].d];
            dx[i] = f16[x[b + i].d];
        }
        const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(dw), _mm256_loadu_ps(dx));
        alignas(32) float prod[kLanes];
        _mm256_store_ps(prod, _mm256_mul_ps(_mm256_cvtepi32_ps(reduce8(sums)), scale));
        for (float p : prod) sum += p;
    }
    for (; b < nb; ++b) {
        const int32_t dot = avx2_util::hsum_i32(B::dot(B::weight(w[b]), B::act(x[b])));
        sum += float(dot) * (f16[w[b].d] * f16[x[b].d]);
    }
    return sum;
}

}  // namespace

namespace avx2 {

void gemm_q8_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end) {
    gemm<Q8Block>(args, row_begin, row_end);
}
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x) {
    return dot_in_scalar_order<Q8Block>(n, static_cast<const block_q8_0*>(w),
                                        static_cast<const block_q8_0*>(x));
}
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x) {
    return dot_in_scalar_order<Q4Block>(n, static_cast<const block_q4_0*>(w),
                                        static_cast<const block_q8_0*>(x));
}

}  // namespace avx2

}  // namespace graphrun::ops
