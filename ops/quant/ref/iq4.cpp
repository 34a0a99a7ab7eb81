// ops/quant/ref/iq4.cpp — IQ4_XS and IQ4_NL: 4-bit indices into a fixed non-linear table of 16 levels
// (kIq4nlValues); IQ4_XS has 8 sub-blocks of 32 with 6-bit scales under one fp16 super-block scale,
// IQ4_NL one fp16 scale per block of 32.
//
// The quantizer is ggml's (quantize_iq4_xs without an importance matrix, which is what
// llama-quantize writes), bit for bit: per sub-block the scale maximising the x^2-weighted fit
// (sum w q x)^2 / sum w q^2 over 15 candidate scales, then the 8 scales quantized to 6 bits against
// the largest, and every weight re-indexed with its rounded scale.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/quant/k_common.h"
#include "ops/quant/kernels.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

// The index of the level nearest to v (the lower one on a tie), by bisection of the sorted table.
int nearest_level(float v) {
    const int8_t* values = kIq4nlValues;
    if (v <= values[0]) return 0;
    if (v >= values[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < values[mid])
            hi = mid;
        else
            lo = mid;
    }
    return v - float(values[hi - 1]) < float(values[hi]) - v ? hi - 1 : hi;
}

// The best scale for one sub-block of 32 (0 for an all-zero one); its indices go to L.
float fit_sub_block(const float* x, uint8_t* L) {
    constexpr int kTries = 7;  // candidate inverse scales (k + values[0]) / max for k in -7..7
    float weight[32];
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
        weight[j] = x[j] * x[j];
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    if (amax < kGroupMaxEps) return 0.0f;
    float d = -max / float(kIq4nlValues[0]);
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
        const int l = nearest_level(id * x[j]);
        L[j] = uint8_t(l);
        const float q = float(kIq4nlValues[l]);
        sumqx += weight[j] * q * x[j];
        sumq2 += weight[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int k = -kTries; k <= kTries; ++k) {
        id = float(k + kIq4nlValues[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const float q = float(kIq4nlValues[nearest_level(id * x[j])]);
            sumqx += weight[j] * q * x[j];
            sumq2 += weight[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

}  // namespace

void quantize_row_iq4_xs_ref(const float* x, block_iq4_xs* y, int64_t n) {
    uint8_t L[kQK_K];
    float scales[8];
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        std::memset(&y[b], 0, sizeof y[b]);
        float max_scale = 0, amax_scale = 0;
        for (int s = 0; s < 8; ++s) {
            scales[s] = fit_sub_block(x + 32 * s, L + 32 * s);
            if (std::fabs(scales[s]) > amax_scale) {
                amax_scale = std::fabs(scales[s]);
                max_scale = scales[s];
            }
        }
        const float d = -max_scale / 32;
        y[b].d = f32_to_fp16(d);
        const float id = d != 0 ? 1 / d : 0.f;
        for (int s = 0; s < 8; ++s) {
            // The sub-block scale rounds to d * l with l in -32..31; the weights are re-indexed with it
            // (with the float d, as ggml does, not its fp16 rounding).
            const int l = std::max(-32, std::min(31, nearest_int(id * scales[s])));
            const float dl = d * float(l);
            const float idl = dl != 0 ? 1 / dl : 0.f;
            for (int j = 0; j < 32; ++j) L[32 * s + j] = uint8_t(nearest_level(idl * x[32 * s + j]));
            const int ls = l + 32;
            y[b].scales_l[s / 2] |= uint8_t((ls & 15) << (4 * (s % 2)));
            y[b].scales_h |= uint16_t((ls >> 4) << (2 * s));
        }
        for (int s = 0; s < 8; ++s)
            for (int j = 0; j < 16; ++j)
                y[b].qs[16 * s + j] = uint8_t(L[32 * s + j] | L[32 * s + 16 + j] << 4);
    }
}

// One block of 32 with one fp16 scale (ggml's quantize_iq4_nl, which llama-quantize uses): the fit's
// scale stored as fp16, every weight re-indexed with the float scale.
void quantize_row_iq4_nl_ref(const float* x, block_iq4_nl* y, int64_t n) {
    uint8_t L[kQK];
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        const float d = fit_sub_block(x, L);
        y[b].d = f32_to_fp16(d);
        const float id = d != 0 ? 1 / d : 0.f;
        for (int j = 0; j < kQK; ++j) L[j] = uint8_t(nearest_level(id * x[j]));
        for (int j = 0; j < kQK / 2; ++j) y[b].qs[j] = uint8_t(L[j] | L[j + kQK / 2] << 4);
    }
}

void dequantize_row_iq4_nl(const block_iq4_nl* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
        const float d = fp16_to_f32(x[b].d);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = d * float(kIq4nlValues[x[b].qs[j] & 15]);
            y[j + kQK / 2] = d * float(kIq4nlValues[x[b].qs[j] >> 4]);
        }
    }
}

namespace scalar {

float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_iq4_nl*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int32_t dot = 0;
        for (int j = 0; j < kQK / 2; ++j)
            dot += kIq4nlValues[wb[b].qs[j] & 15] * xb[b].qs[j] +
                   kIq4nlValues[wb[b].qs[j] >> 4] * xb[b].qs[j + kQK / 2];
        sum += float(dot) * (fp16_to_f32(wb[b].d) * fp16_to_f32(xb[b].d));
    }
    return sum;
}

}  // namespace scalar

void dequantize_row_iq4_xs(const block_iq4_xs* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const float d = fp16_to_f32(x[b].d);
        for (int s = 0; s < 8; ++s, y += 32) {
            const float dl = d * float(iq4_xs_scale(x[b], s) - 32);
            const uint8_t* qs = x[b].qs + 16 * s;
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * float(kIq4nlValues[qs[j] & 15]);
                y[j + 16] = dl * float(kIq4nlValues[qs[j] >> 4]);
            }
        }
    }
}

}  // namespace graphrun::ops
