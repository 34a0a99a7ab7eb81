// ops/quant/avx512/block_dots.cpp — AVX-512 VNNI paths for Q8_0 / Q4_0 dot products.
//
// Two 32-weight blocks fill one 512-bit register; vpdpbusd (unsigned byte · signed byte, four
// products summed into each int32 lane) does the integer block dots in one instruction.
// Lanes 0..7 of the result belong to the first block, lanes 8..15 to the second, so one FMA with
// a two-valued scale vector applies both blocks' d_w * d_x.
// Like ops/quant/avx2/block_dots.cpp: target attributes, no -march, plain exported wrappers.
#include "ops/quant/kernels.h"
#include "ops/simd.h"

// GCC 12's AVX-512 headers fill "don't care" operands with a self-initialised variable
// (_mm512_undefined_*), which -Wuninitialized reports wherever the intrinsic is inlined
// (GCC bug 105593, fixed in GCC 13). The values are never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace graphrun::ops {

namespace {

GR_AVX512 inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Weight rows stream from DRAM once per call, and the matmul walks them in order. The hardware
// prefetcher alone leaves the loop waiting on memory, so each step asks for the bytes at the same
// offset in the row that comes next after the ones in flight: one row ahead for the single-row
// kernel, four rows ahead for the four-row one. That lead is a whole row group whatever K is; a fixed
// 512 bytes ahead within the row was 1.3-1.5x slower at K = 2048, whose short rows left the start of
// every next row unrequested. Prefetches never fault, so running past the matrix end is harmless.
GR_AVX512 inline void prefetch(const void* p, int64_t ahead_bytes) {
    _mm_prefetch(static_cast<const char*>(p) + ahead_bytes, _MM_HINT_T0);
}

// Scale vector for blocks b and b+1: lanes 0..7 = d_w[b] * d_x[b], lanes 8..15 = d_w[b+1] * d_x[b+1].
// The four scales are broadcast from the fp16 table in memory (pure loads) and blended, which keeps
// the shuffle port free for the dot products.
template <typename WBlock>
GR_AVX512 inline __m512 pair_scale(const WBlock* w, const block_q8_0* x, const float* f16) {
    const __m512 dw = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(f16[w[0].d]), _mm512_set1_ps(f16[w[1].d]));
    const __m512 dx = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(f16[x[0].d]), _mm512_set1_ps(f16[x[1].d]));
    return _mm512_mul_ps(dw, dx);
}

// Two blocks' 32 quants side by side (an insert from memory is a blend, not a shuffle).
GR_AVX512 inline __m512i load_pair(const int8_t* a, const int8_t* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// Blocks b, b+1 of Q8_0 weights · activations -> 16 int32 lanes, 8 per block.
// vpdpbusd is unsigned · signed, so w's sign moves onto x: |w| · (x * sign(w)); |w| <= 128 fits u8.
GR_AVX512 inline __m512i dot_pair_q8(const block_q8_0* w, const block_q8_0* x) {
    const __m512i wq = load_pair(w[0].qs, w[1].qs), xq = load_pair(x[0].qs, x[1].qs);
    const __m512i x_signed = _mm512_mask_sub_epi8(xq, _mm512_movepi8_mask(wq), _mm512_setzero_si512(), xq);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(wq), x_signed);
}

// Blocks b, b+1 of Q4_0 weights · activations. Q4_0 weights are nibble - 8, so
// w · x = nibble · x - 8 · x: two vpdpbusd, the nibbles already being the unsigned operand.
// The nibbles come out in weight order [lo(b) hi(b) lo(b+1) hi(b+1)] without a shuffle: each block's
// 16 packed bytes are broadcast to two 128-bit lanes (pure loads), and the second lane of each
// shifted right by 4.
GR_AVX512 inline __m512i dot_pair_q4(const block_q4_0* w, const block_q8_0* x) {
    const __m512i first = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs)));
    const __m512i both = _mm512_mask_broadcast_i32x4(
        first, 0xff00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs)));
    const __m512i shifted = _mm512_mask_srli_epi16(both, 0xff00ff00, both, 4);  // 16-bit words of lanes 1, 3
    const __m512i nibbles = _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f));
    const __m512i xq = load_pair(x[0].qs, x[1].qs);
    const __m512i nx = _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibbles, xq);
    return _mm512_sub_epi32(nx, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), xq));
}

// The last block of a row with an odd block count, at 256 bits, same arithmetic.
GR_AVX512 inline __m256i dot_one_q8(const block_q8_0* w, const block_q8_0* x) {
    const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w->qs));
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x->qs));
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(wq), _mm256_sign_epi8(xq, wq));
}

GR_AVX512 inline __m256i dot_one_q4(const block_q4_0* w, const block_q8_0* x) {
    const __m256i packed =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w->qs)));
    const __m256i nibbles =
        _mm256_and_si256(_mm256_mask_srli_epi16(packed, 0xff00, packed, 4), _mm256_set1_epi8(0x0f));
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x->qs));
    return _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles, xq),
                            _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), xq));
}

template <typename WBlock, __m512i (*DotPair)(const WBlock*, const block_q8_0*)>
GR_AVX512 inline __m512 pair(const WBlock* w, const block_q8_0* x, const float* f16, __m512 acc,
                             int64_t row_size) {
    prefetch(w, row_size);
    return _mm512_fmadd_ps(pair_scale(w, x, f16), _mm512_cvtepi32_ps(DotPair(w, x)), acc);
}

// Eight blocks per iteration into four accumulators (an FMA waits 4 cycles on its accumulator), then
// pairs, then a lone last block.
template <typename WBlock, __m512i (*DotPair)(const WBlock*, const block_q8_0*),
          __m256i (*DotOne)(const WBlock*, const block_q8_0*)>
GR_AVX512 inline float dot_rows(int64_t n, const WBlock* w, const block_q8_0* x) {
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = n / kQK, row_size = nb * int64_t(sizeof(WBlock));
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t b = 0;
    for (; b + 7 < nb; b += 8) {
        acc0 = pair<WBlock, DotPair>(w + b, x + b, f16, acc0, row_size);
        acc1 = pair<WBlock, DotPair>(w + b + 2, x + b + 2, f16, acc1, row_size);
        acc2 = pair<WBlock, DotPair>(w + b + 4, x + b + 4, f16, acc2, row_size);
        acc3 = pair<WBlock, DotPair>(w + b + 6, x + b + 6, f16, acc3, row_size);
    }
    for (; b + 1 < nb; b += 2) acc0 = pair<WBlock, DotPair>(w + b, x + b, f16, acc0, row_size);
    const __m512 acc = _mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3));
    __m256 tail = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    if (b < nb) {
        const __m256 d = _mm256_mul_ps(_mm256_broadcast_ss(f16 + w[b].d), _mm256_broadcast_ss(f16 + x[b].d));
        tail = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(DotOne(w + b, x + b)), tail);
    }
    return hsum256(tail);
}

GR_AVX512 float dot_q8_q8(int64_t n, const block_q8_0* w, const block_q8_0* x) {
    return dot_rows<block_q8_0, dot_pair_q8, dot_one_q8>(n, w, x);
}

GR_AVX512 float dot_q4_q8(int64_t n, const block_q4_0* w, const block_q8_0* x) {
    return dot_rows<block_q4_0, dot_pair_q4, dot_one_q4>(n, w, x);
}

// ---- four weight rows against one activation row (the matmul's inner loop) ----
// Per pair of blocks the activation loads, its scales and the zero-point correction are computed once
// and shared by the four rows, which leaves 7-8 vector ops per row and pair instead of 10-12.

// Blocks b, b+1 of a Q4_0 row as nibbles [lo(b) hi(b) lo(b+1) hi(b+1)] (see dot_pair_q4).
GR_AVX512 inline __m512i nibbles_pair(const block_q4_0* w) {
    const __m512i first = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs)));
    const __m512i both = _mm512_mask_broadcast_i32x4(
        first, 0xff00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs)));
    return _mm512_and_si512(_mm512_mask_srli_epi16(both, 0xff00ff00, both, 4), _mm512_set1_epi8(0x0f));
}

GR_AVX512 inline __m512 blend_scales(const float* f16, uint16_t d0, uint16_t d1) {
    return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(f16[d0]), _mm512_set1_ps(f16[d1]));
}

// Q4_0: w = nibble - 8, so w · x = nibble · x + (-8 · sum x); the second term, per lane, starts the
// vpdpbusd accumulation. Q8_0: w = (w + 128) - 128 with w + 128 = w ^ 0x80 unsigned, so
// w · x = (w ^ 0x80) · x + (-128 · sum x). Either way one vpdpbusd per row and pair.
struct Q4Rows {
    using Block = block_q4_0;
    static constexpr char kZeroPoint = 8;
    GR_AVX512 static __m512i unsigned_pair(const block_q4_0* w) { return nibbles_pair(w); }
    GR_AVX512 static __m256i dot_one(const block_q4_0* w, const block_q8_0* x) { return dot_one_q4(w, x); }
};
struct Q8Rows {
    using Block = block_q8_0;
    static constexpr char kZeroPoint = char(0x80);
    GR_AVX512 static __m512i unsigned_pair(const block_q8_0* w) {
        return _mm512_xor_si512(load_pair(w[0].qs, w[1].qs), _mm512_set1_epi8(char(0x80)));
    }
    GR_AVX512 static __m256i dot_one(const block_q8_0* w, const block_q8_0* x) { return dot_one_q8(w, x); }
};

template <typename Rows>
GR_AVX512 void dot_4rows(int64_t n, const uint8_t* w, int64_t w_stride, const block_q8_0* x, float* out) {
    using Block = typename Rows::Block;
    const float* f16 = fp16_to_f32_table();
    const int64_t nb = n / kQK;
    const Block* rows[4];
    for (int r = 0; r < 4; ++r) rows[r] = reinterpret_cast<const Block*>(w + r * w_stride);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        const __m512i xq = load_pair(x[b].qs, x[b + 1].qs);
        const __m512i zero_point = _mm512_sub_epi32(
            _mm512_setzero_si512(),
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(Rows::kZeroPoint), xq));
        const __m512 dx = blend_scales(f16, x[b].d, x[b + 1].d);
#pragma GCC unroll 4  // keeps the four accumulators in registers
        for (int r = 0; r < 4; ++r) {
            prefetch(rows[r] + b, 4 * w_stride);
            const __m512i dot = _mm512_dpbusd_epi32(zero_point, Rows::unsigned_pair(rows[r] + b), xq);
            const __m512 d = _mm512_mul_ps(blend_scales(f16, rows[r][b].d, rows[r][b + 1].d), dx);
            acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot), acc[r]);
        }
    }
    for (int r = 0; r < 4; ++r) {
        __m256 tail = _mm256_add_ps(_mm512_castps512_ps256(acc[r]), _mm512_extractf32x8_ps(acc[r], 1));
        if (b < nb) {
            const __m256 d =
                _mm256_mul_ps(_mm256_broadcast_ss(f16 + rows[r][b].d), _mm256_broadcast_ss(f16 + x[b].d));
            tail = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(Rows::dot_one(rows[r] + b, x + b)), tail);
        }
        out[r] = hsum256(tail);
    }
}

#undef GR_AVX512

}  // namespace

namespace avx512 {

float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x) {
    return dot_q8_q8(n, static_cast<const block_q8_0*>(w), static_cast<const block_q8_0*>(x));
}
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x) {
    return dot_q4_q8(n, static_cast<const block_q4_0*>(w), static_cast<const block_q8_0*>(x));
}

void vec_dot4_q8_0_q8_0(int64_t n, const void* w, int64_t w_stride, const void* x, float* out) {
    dot_4rows<Q8Rows>(n, static_cast<const uint8_t*>(w), w_stride, static_cast<const block_q8_0*>(x), out);
}
void vec_dot4_q4_0_q8_0(int64_t n, const void* w, int64_t w_stride, const void* x, float* out) {
    dot_4rows<Q4Rows>(n, static_cast<const uint8_t*>(w), w_stride, static_cast<const block_q8_0*>(x), out);
}

}  // namespace avx512

}  // namespace graphrun::ops
