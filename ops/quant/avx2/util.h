// ops/quant/avx2/util.h — AVX2 building blocks the quant kernel files share. Internal to ops/.
//
// Every function carries the target attribute (the library is built without -march), so it may only
// run where cpu_features().avx2 said so; the files that include this export plain wrappers.
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/simd.h"

namespace graphrun::ops::avx2_util {

GR_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Sum of the 8 int32 lanes (exact).
GR_AVX2 inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

// v[0..7] (8 int32 each) -> lane i = sum of v[i]'s lanes (exact): 8 horizontal sums in one tree.
GR_AVX2 inline __m256i lane_sums8(const __m256i v[8]) {
    const __m256i s0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i s4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    // s0123 = [v0..v3: lanes 0-3 sums | v0..v3: lanes 4-7 sums], s4567 likewise.
    return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20),
                            _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

// m[0..7] (4 int32 each) -> lane i = sum of m[i]'s lanes.
GR_AVX2 inline __m256i lane_sums8(const __m128i m[8]) {
    const __m128i s0123 = _mm_hadd_epi32(_mm_hadd_epi32(m[0], m[1]), _mm_hadd_epi32(m[2], m[3]));
    const __m128i s4567 = _mm_hadd_epi32(_mm_hadd_epi32(m[4], m[5]), _mm_hadd_epi32(m[6], m[7]));
    return _mm256_set_m128i(s4567, s0123);
}

GR_AVX2 inline __m256i load32(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// 16 packed bytes -> 32 nibbles in weight order: the low nibbles (weights 0..15) then the high
// ones (weights 16..31), the layout of Q4_0, Q4_1, Q5_0, Q5_1 and an IQ4_XS sub-block. The bytes
// are broadcast to both halves and the upper half shifted by 4, which needs no shuffle.
GR_AVX2 inline __m256i nibbles32(const uint8_t* packed) {
    const __m256i both =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed)));
    return _mm256_and_si256(_mm256_srlv_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                            _mm256_set1_epi8(0x0f));
}

// 8 int16 pair sums of unsigned bytes u (< 128 here) times signed bytes s, widened to 8 int32.
GR_AVX2 inline __m256i dot_u8_i8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// 4 activation bytes (x.qs + 4 s, not 4-byte aligned inside a block) broadcast to every lane.
GR_AVX2 inline __m256i broadcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

GR_AVX2 inline __m256i load16x2(const void* low, const void* high) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(low))),
                                   _mm_loadu_si128(static_cast<const __m128i*>(high)), 1);
}

// p[0..3]: per 128-bit half, 4 dwords of one row each (rows r | r + 4) -> u[s]: dword s of rows
// 0..3 | 4..7, i.e. lane r = row r's dword s.
GR_AVX2 inline void transpose4(const __m256i p[4], __m256i u[4]) {
    const __m256i t0 = _mm256_unpacklo_epi32(p[0], p[1]), t1 = _mm256_unpackhi_epi32(p[0], p[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(p[2], p[3]), t3 = _mm256_unpackhi_epi32(p[2], p[3]);
    u[0] = _mm256_unpacklo_epi64(t0, t2);
    u[1] = _mm256_unpackhi_epi64(t0, t2);
    u[2] = _mm256_unpacklo_epi64(t1, t3);
    u[3] = _mm256_unpackhi_epi64(t1, t3);
}

// The first n (1..8) of the 8 floats at y, stored from / loaded into the lanes of a vector: a lanes GEMM's
// running sums of a group of 8 rows, of which the last group of a range may hold fewer. Lanes past n load
// as 0 and are not stored.
GR_AVX2 inline void store_first(float* y, int n, __m256 v) {
    if (n == 8) return _mm256_storeu_ps(y, v);
    alignas(32) float out[8];
    _mm256_store_ps(out, v);
    for (int r = 0; r < n; ++r) y[r] = out[r];
}
GR_AVX2 inline __m256 load_first(const float* y, int n) {
    if (n == 8) return _mm256_loadu_ps(y);
    alignas(32) float in[8] = {};
    for (int r = 0; r < n; ++r) in[r] = y[r];
    return _mm256_load_ps(in);
}

// The fp16 scales d of block b of 8 rows (w[0..7], blocks with a `uint16_t d`) as floats in row order.
// The scalar ALUs (idle in the kernels that call this) pack the 8 halves into two 64-bit words and F16C
// converts them: the same floats as the fp16 table (both conversions are exact; a NaN scale stays a
// NaN, and the multiply by d_x quiets it either way).
template <typename Block>
GR_AVX2 inline __m256 row_scales8(const Block* const w[8], int64_t b) {
    uint64_t low = 0, high = 0;
    for (int r = 0; r < 4; ++r) low |= uint64_t(w[r][b].d) << (16 * r);
    for (int r = 0; r < 4; ++r) high |= uint64_t(w[r + 4][b].d) << (16 * r);
    // Keep the packing in general registers: left alone, GCC moves it into vector shifts and ors,
    // which compete with the block dots for the vector ports.
    asm("" : "+r"(low), "+r"(high));
    return _mm256_cvtph_ps(_mm_set_epi64x(int64_t(high), int64_t(low)));
}

// Asks for the cache lines of [p, p + bytes): the matmul walks weight rows in order, and the kernels
// request the next row's bytes at the offset they are reading. The lead is a whole row, whatever K is:
// a fixed distance within the row left the start of every next row unrequested at K = 2048.
GR_AVX2 inline void prefetch_lines(const void* p, int bytes) {
    for (int off = 0; off < bytes; off += 64) _mm_prefetch(static_cast<const char*>(p) + off, _MM_HINT_T0);
}

// A Q4_K / Q5_K super-block's 8 sub-block scales and 8 mins, each as 8 int16, from its 12 packed
// bytes: the masks pull the four 6-bit fields of each 32-bit word at once (see unpack_k_scales in
// ops/quant/k_common.h for the layout).
struct KScalesMins {
    __m128i scales16, mins16;
};
GR_AVX2 inline KScalesMins k_scales_mins(const uint8_t packed[12]) {
    uint32_t a[3];
    std::memcpy(a, packed, sizeof a);
    const uint32_t sc_lo = a[0] & 0x3f3f3f3f, m_lo = a[1] & 0x3f3f3f3f;
    const uint32_t sc_hi = (a[2] & 0x0f0f0f0f) | ((a[0] >> 6) & 0x03030303) << 4;
    const uint32_t m_hi = ((a[2] >> 4) & 0x0f0f0f0f) | ((a[1] >> 6) & 0x03030303) << 4;
    return {_mm_cvtepu8_epi16(_mm_set_epi32(0, 0, int32_t(sc_hi), int32_t(sc_lo))),
            _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, int32_t(m_hi), int32_t(m_lo)))};
}

// Scale s of 8 int16 scales (both 128-bit halves hold all 8) in every int16 lane.
GR_AVX2 inline __m256i broadcast_scale(__m256i scales16, int s) {
    return _mm256_shuffle_epi8(scales16, _mm256_set1_epi16(int16_t(0x0100 + 0x0202 * s)));
}

}  // namespace graphrun::ops::avx2_util
