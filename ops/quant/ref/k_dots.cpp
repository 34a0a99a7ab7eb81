// ops/quant/ref/k_dots.cpp — the scalar dot products of the super-block types against Q8_K activations:
// Q4_K, Q5_K, Q6_K and IQ4_XS.
//
// The arithmetic every path of these types shares (ops/quant/k_common.h: k_superblock_total): per
// super-block, exact int32 sums (sum of scale * sub-block dot, and for the types with mins sum of
// min * activation block sum), folded into the float total in super-block order. The AVX2 paths
// compute the same integers with SIMD and fold them with the same function, so their results equal
// these bit for bit. Contraction into fused multiply-adds is off here too, for builds with -mfma.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "ops/quant/k_common.h"
#include "ops/quant/kernels.h"
#include "runtime/fp16.h"

namespace graphrun::ops::scalar {

namespace {

// q (weights 0..31 of a sub-block, unsigned) · x: exact.
int32_t dot32(const uint8_t* q, const int8_t* x) {
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) s += int32_t(q[i]) * int32_t(x[i]);
    return s;
}

// sum_s min_s * (activation sum of sub-block s): the min term of Q4_K / Q5_K, from the bsums.
int32_t min_term(const uint8_t m[8], const int16_t* bsums) {
    int32_t s = 0;
    for (int k = 0; k < 8; ++k) s += int32_t(m[k]) * (int32_t(bsums[2 * k]) + int32_t(bsums[2 * k + 1]));
    return s;
}

}  // namespace

float vec_dot_q4_k_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q4_K*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float total = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        uint8_t sc[8], m[8], q[64];
        unpack_k_scales(wb[b].scales, sc, m);
        int32_t sumi = 0;
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                q[l] = wb[b].qs[32 * c + l] & 15;
                q[32 + l] = wb[b].qs[32 * c + l] >> 4;
            }
            sumi += sc[2 * c] * dot32(q, xb[b].qs + 64 * c) +
                    sc[2 * c + 1] * dot32(q + 32, xb[b].qs + 64 * c + 32);
        }
        total = k_superblock_total(total, xb[b].d, fp16_to_f32(wb[b].d), fp16_to_f32(wb[b].dmin), sumi,
                                   min_term(m, xb[b].bsums));
    }
    return total;
}

float vec_dot_q5_k_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q5_K*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float total = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        uint8_t sc[8], m[8], q[64];
        unpack_k_scales(wb[b].scales, sc, m);
        int32_t sumi = 0;
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                const uint8_t packed = wb[b].qs[32 * c + l], high = wb[b].qh[l];
                q[l] = uint8_t((packed & 15) | ((high >> (2 * c)) & 1) << 4);
                q[32 + l] = uint8_t((packed >> 4) | ((high >> (2 * c + 1)) & 1) << 4);
            }
            sumi += sc[2 * c] * dot32(q, xb[b].qs + 64 * c) +
                    sc[2 * c + 1] * dot32(q + 32, xb[b].qs + 64 * c + 32);
        }
        total = k_superblock_total(total, xb[b].d, fp16_to_f32(wb[b].d), fp16_to_f32(wb[b].dmin), sumi,
                                   min_term(m, xb[b].bsums));
    }
    return total;
}

float vec_dot_q6_k_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q6_K*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float total = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        int8_t q[kQK_K];  // weights - 32, in order
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = wb[b].ql + 64 * h;
            const uint8_t* qh = wb[b].qh + 32 * h;
            int8_t* out = q + 128 * h;
            for (int l = 0; l < 32; ++l) {
                out[l] = int8_t(((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32);
                out[l + 32] = int8_t(((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32);
                out[l + 64] = int8_t(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
                out[l + 96] = int8_t(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
            }
        }
        int32_t sumi = 0;
        for (int s = 0; s < 16; ++s) {
            int32_t dot = 0;
            for (int i = 0; i < 16; ++i) dot += int32_t(q[16 * s + i]) * int32_t(xb[b].qs[16 * s + i]);
            sumi += int32_t(wb[b].scales[s]) * dot;
        }
        total = k_superblock_total(total, xb[b].d, fp16_to_f32(wb[b].d), 0.0f, sumi, 0);
    }
    return total;
}

float vec_dot_iq4_xs_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_iq4_xs*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float total = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        int32_t sumi = 0;
        for (int s = 0; s < 8; ++s) {
            const uint8_t* qs = wb[b].qs + 16 * s;
            const int8_t* xs = xb[b].qs + 32 * s;
            int32_t dot = 0;
            for (int j = 0; j < 16; ++j)
                dot += kIq4nlValues[qs[j] & 15] * xs[j] + kIq4nlValues[qs[j] >> 4] * xs[j + 16];
            sumi += (iq4_xs_scale(wb[b], s) - 32) * dot;
        }
        total = k_superblock_total(total, xb[b].d, fp16_to_f32(wb[b].d), 0.0f, sumi, 0);
    }
    return total;
}

}  // namespace graphrun::ops::scalar
