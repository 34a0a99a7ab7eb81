// ops/quant_avx512.cpp — AVX-512 VNNI paths for Q8_0 / Q4_0 dot products.
//
// Two 32-weight blocks fill one 512-bit register; vpdpbusd (unsigned byte · signed byte, four
// products summed into each int32 lane) does the integer block dots in one instruction.
// Lanes 0..7 of the result belong to the first block, lanes 8..15 to the second, so one FMA with
// a two-valued scale vector applies both blocks' d_w * d_x.
// Like ops/quant_avx2.cpp: target attributes, no -march, plain exported wrappers.
#include <immintrin.h>

#include "ops/quant_kernels.h"

// GCC 12's AVX-512 headers fill "don't care" operands with a self-initialised variable
// (_mm512_undefined_*), which -Wuninitialized reports wherever the intrinsic is inlined
// (GCC bug 105593, fixed in GCC 13). The values are never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace graphrun::ops {

namespace {

#define GR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

GR_AVX512 inline float fp16_scale(uint16_t h) {
    return _cvtsh_ss(h);
}

// Scale vector for blocks b and b+1: lanes 0..7 = d_w[b] * d_x[b], lanes 8..15 = d_w[b+1] * d_x[b+1].
template <typename WBlock>
GR_AVX512 inline __m512 pair_scale(const WBlock* w, const block_q8_0* x) {
    const __m256 d0 = _mm256_set1_ps(fp16_scale(w[0].d) * fp16_scale(x[0].d));
    const __m256 d1 = _mm256_set1_ps(fp16_scale(w[1].d) * fp16_scale(x[1].d));
    return _mm512_insertf32x8(_mm512_castps256_ps512(d0), d1, 1);
}

GR_AVX512 inline __m512i load_pair(const int8_t* a, const int8_t* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// signed · signed bytes via vpdpbusd (unsigned · signed): |w| · (x with w's sign). |w| <= 128 fits u8.
GR_AVX512 inline __m512i dot_i8_pair(__m512i w, __m512i x) {
    const __mmask64 negative = _mm512_movepi8_mask(w);
    const __m512i x_signed = _mm512_mask_sub_epi8(x, negative, _mm512_setzero_si512(), x);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), x_signed);
}

GR_AVX512 inline __m256i dot_i8_one(__m256i w, __m256i x) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

GR_AVX512 inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

GR_AVX512 float dot_q8_q8(int64_t n, const block_q8_0* w, const block_q8_0* x) {
    const int64_t nb = n / kQK;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 3 < nb; b += 4) {
        const __m512i s0 = dot_i8_pair(load_pair(w[b].qs, w[b + 1].qs), load_pair(x[b].qs, x[b + 1].qs));
        const __m512i s1 =
            dot_i8_pair(load_pair(w[b + 2].qs, w[b + 3].qs), load_pair(x[b + 2].qs, x[b + 3].qs));
        acc0 = _mm512_fmadd_ps(pair_scale(w + b, x + b), _mm512_cvtepi32_ps(s0), acc0);
        acc1 = _mm512_fmadd_ps(pair_scale(w + b + 2, x + b + 2), _mm512_cvtepi32_ps(s1), acc1);
    }
    for (; b + 1 < nb; b += 2) {
        const __m512i s = dot_i8_pair(load_pair(w[b].qs, w[b + 1].qs), load_pair(x[b].qs, x[b + 1].qs));
        acc0 = _mm512_fmadd_ps(pair_scale(w + b, x + b), _mm512_cvtepi32_ps(s), acc0);
    }
    const __m512 acc = _mm512_add_ps(acc0, acc1);
    __m256 tail = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    if (b < nb) {
        const __m256i s = dot_i8_one(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs)),
                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs)));
        tail = _mm256_fmadd_ps(_mm256_set1_ps(fp16_scale(w[b].d) * fp16_scale(x[b].d)), _mm256_cvtepi32_ps(s),
                               tail);
    }
    return hsum256(tail);
}

// Two Q4_0 blocks' 32 packed bytes -> 64 unsigned nibbles in weight order:
// [lo(b) hi(b) lo(b+1) hi(b+1)], each 16 bytes (low nibbles are weights 0..15 of a block).
GR_AVX512 inline __m512i unpack_q4_pair(const block_q4_0* w) {
    const __m256i packed = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs)), 1);
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i lo = _mm256_and_si256(packed, mask);                        // [lo(b) lo(b+1)]
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), mask);  // [hi(b) hi(b+1)]
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0));
}

// Q4_0 weights are nibble - 8, so w · x = nibble · x - 8 · sum(x): two vpdpbusd, no sign juggling,
// since the nibbles are already the unsigned operand vpdpbusd wants.
GR_AVX512 inline __m512i dot_q4_pair(__m512i nibbles, __m512i x) {
    const __m512i nx = _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibbles, x);
    const __m512i ex = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), x);
    return _mm512_sub_epi32(nx, ex);
}

GR_AVX512 float dot_q4_q8(int64_t n, const block_q4_0* w, const block_q8_0* x) {
    const int64_t nb = n / kQK;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 3 < nb; b += 4) {
        const __m512i s0 = dot_q4_pair(unpack_q4_pair(w + b), load_pair(x[b].qs, x[b + 1].qs));
        const __m512i s1 = dot_q4_pair(unpack_q4_pair(w + b + 2), load_pair(x[b + 2].qs, x[b + 3].qs));
        acc0 = _mm512_fmadd_ps(pair_scale(w + b, x + b), _mm512_cvtepi32_ps(s0), acc0);
        acc1 = _mm512_fmadd_ps(pair_scale(w + b + 2, x + b + 2), _mm512_cvtepi32_ps(s1), acc1);
    }
    for (; b + 1 < nb; b += 2) {
        const __m512i s = dot_q4_pair(unpack_q4_pair(w + b), load_pair(x[b].qs, x[b + 1].qs));
        acc0 = _mm512_fmadd_ps(pair_scale(w + b, x + b), _mm512_cvtepi32_ps(s), acc0);
    }
    const __m512 acc = _mm512_add_ps(acc0, acc1);
    __m256 tail = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    if (b < nb) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
        const __m256i nibbles =
            _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0f));
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
        const __m256i s =
            _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles, xv),
                             _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), xv));
        tail = _mm256_fmadd_ps(_mm256_set1_ps(fp16_scale(w[b].d) * fp16_scale(x[b].d)), _mm256_cvtepi32_ps(s),
                               tail);
    }
    return hsum256(tail);
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

}  // namespace avx512

}  // namespace graphrun::ops
