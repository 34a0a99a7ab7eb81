// ops/quant/ref/k_quants.cpp — the K-quants' reference quantizers and dequantizers: Q4_K, Q5_K, Q6_K and the
// Q8_K activations they dot against.
//
// The quantizers are ggml's *_ref algorithms, bit for bit (what llama-quantize writes without an
// importance matrix), so every float operation below is done in ggml's order: a reordered sum
// rounds differently and picks another scale. Algorithms:
//   Q4_K / Q5_K: per 32-weight sub-block an affine fit x ~ scale * q - min chosen by a small search
//     over candidate scales (fit_affine_levels); the 8 scales and 8 mins are then quantized to 6 bits
//     against the super-block's largest (d, dmin in fp16), and the weights re-quantized with them.
//   Q6_K: per 16-weight sub-block a symmetric fit (fit_symmetric_levels) weighting each x by x^2,
//     the 16 scales quantized to int8 against the largest, the weights re-quantized.
//   Q8_K: d = max / -127 of the signed extreme, q = round(x / d), plus sums of 16 quants.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/quant/k_common.h"
#include "ops/quant/kernels.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

// Affine fit of n values to levels 0..nmax (ggml's make_qkx2_quants): x_i ~ scale * L_i + min with
// min <= 0. Starts from the range [min(x, 0), max(x)], then tries nstep + 1 other inverse scales
// (rmin + rdelta * k + nmax) / range, each solved by weighted least squares for scale and min, and
// keeps the one with the least weighted squared error. Returns scale; *neg_min = -min (>= 0).
float fit_affine_levels(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                        uint8_t* candidate, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = float(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = uint8_t(std::max(0, std::min(nmax, l)));
        const float diff = scale * float(L[i]) + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    for (int step = 0; step <= nstep; ++step) {
        iscale = (rmin + rdelta * float(step) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
            candidate[i] = uint8_t(l);
            const float w = weights[i];
            sum_l += w * float(l);
            sum_l2 += w * float(l) * float(l);
            sum_xl += w * float(l) * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float error = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = this_scale * float(candidate[i]) + this_min - x[i];
            error += weights[i] * (diff * diff);
        }
        if (error < best_error) {
            std::memcpy(L, candidate, size_t(n));
            best_error = error;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

// Symmetric fit of n values to levels -nmax..nmax-1 stored as L = level + nmax (ggml's
// make_qx_quants with rmse_type 1 and no importance weights): the signed extreme maps to -nmax,
// then 18 nearby inverse scales -(nmax + 0.1 k) / max are tried and the one maximising
// (sum w x l)^2 / sum w l^2 with w = x^2 (the least-squares scale's error reduction) kept.
float fit_symmetric_levels(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    auto level = [nmax](float v) { return std::max(-nmax, std::min(nmax - 1, nearest_int(v))); };
    float iscale = float(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = level(iscale * x[i]);
        L[i] = int8_t(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int step = -9; step <= 9; ++step) {
        if (step == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(step)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = level(iscale * x[i]);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * float(l);
            suml2 += w * float(l) * float(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = int8_t(level(iscale * x[i]) + nmax);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// The common part of Q4_K and Q5_K: fit each sub-block (levels 0..nmax), pack the 6-bit scales and
// mins into `packed`, set d / dmin, and leave the final levels in L (256 of them).
void quantize_k_superblock(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t packed[12],
                           uint16_t& d_out, uint16_t& dmin_out, uint8_t L[kQK_K]) {
    float scales[8], mins[8], weights[32];
    uint8_t candidate[32];
    float max_scale = 0, max_min = 0;  // the min is subtracted, so scales are positive
    for (int s = 0; s < 8; ++s) {
        const float* xs = x + 32 * s;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
        scales[s] =
            fit_affine_levels(32, nmax, xs, weights, L + 32 * s, &mins[s], candidate, rmin, rdelta, nstep);
        if (scales[s] > max_scale) max_scale = scales[s];
        if (mins[s] > max_min) max_min = mins[s];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    std::memset(packed, 0, 12);
    for (int s = 0; s < 8; ++s) {
        // ggml keeps the rounded value in a uint8_t before clamping: a negative scale wraps, then clamps.
        const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[s])));
        const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[s])));
        if (s < 4) {
            packed[s] = ls;
            packed[s + 4] = lm;
        } else {
            packed[s + 4] = uint8_t((ls & 15) | (lm & 15) << 4);
            packed[s - 4] |= uint8_t((ls >> 4) << 6);
            packed[s] |= uint8_t((lm >> 4) << 6);
        }
    }
    d_out = f32_to_fp16(max_scale / 63.f);
    dmin_out = f32_to_fp16(max_min / 63.f);
    uint8_t sc[8], m[8];
    unpack_k_scales(packed, sc, m);
    for (int s = 0; s < 8; ++s) {
        const float d = fp16_to_f32(d_out) * float(sc[s]);
        if (d == 0) continue;  // ggml keeps the fit's levels for a zero scale
        const float dm = fp16_to_f32(dmin_out) * float(m[s]);
        for (int i = 0; i < 32; ++i)
            L[32 * s + i] = uint8_t(std::max(0, std::min(nmax, nearest_int((x[32 * s + i] + dm) / d))));
    }
}

}  // namespace

// ---- reference quantizers ----

void quantize_row_q4_k_ref(const float* x, block_q4_K* y, int64_t n) {
    uint8_t L[kQK_K];
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        quantize_k_superblock(x, 15, -1.f, 0.1f, 20, y[b].scales, y[b].d, y[b].dmin, L);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l)
                y[b].qs[32 * c + l] = uint8_t(L[64 * c + l] | L[64 * c + 32 + l] << 4);
    }
}

void quantize_row_q5_k_ref(const float* x, block_q5_K* y, int64_t n) {
    uint8_t L[kQK_K];
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        quantize_k_superblock(x, 31, -0.5f, 0.1f, 15, y[b].scales, y[b].d, y[b].dmin, L);
        std::memset(y[b].qh, 0, sizeof y[b].qh);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                const uint8_t lo = L[64 * c + l], hi = L[64 * c + 32 + l];
                y[b].qs[32 * c + l] = uint8_t((lo & 15) | (hi & 15) << 4);
                y[b].qh[l] |= uint8_t((lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
            }
    }
}

void quantize_row_q6_k_ref(const float* x, block_q6_K* y, int64_t n) {
    int8_t L[kQK_K];
    float scales[16];
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int s = 0; s < 16; ++s) {
            scales[s] = fit_symmetric_levels(16, 32, x + 16 * s, L + 16 * s);
            if (std::fabs(scales[s]) > max_abs_scale) {
                max_abs_scale = std::fabs(scales[s]);
                max_scale = scales[s];
            }
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[b].d = f32_to_fp16(1 / iscale);
        for (int s = 0; s < 16; ++s) y[b].scales[s] = int8_t(std::min(127, nearest_int(iscale * scales[s])));
        for (int s = 0; s < 16; ++s) {
            const float d = fp16_to_f32(y[b].d) * float(y[b].scales[s]);
            if (d == 0) continue;
            for (int i = 0; i < 16; ++i)
                L[16 * s + i] = int8_t(std::max(-32, std::min(31, nearest_int(x[16 * s + i] / d))) + 32);
        }
        for (int h = 0; h < 2; ++h) {
            const int8_t* q = L + 128 * h;
            uint8_t* ql = y[b].ql + 64 * h;
            uint8_t* qh = y[b].qh + 32 * h;
            for (int l = 0; l < 32; ++l) {
                ql[l] = uint8_t((q[l] & 15) | (q[l + 64] & 15) << 4);
                ql[l + 32] = uint8_t((q[l + 32] & 15) | (q[l + 96] & 15) << 4);
                qh[l] = uint8_t((q[l] >> 4) | (q[l + 32] >> 4) << 2 | (q[l + 64] >> 4) << 4 |
                                (q[l + 96] >> 4) << 6);
            }
        }
    }
}

void group_sums_q8_k(const void* row, int16_t* out, int64_t n) {
    const auto* x = static_cast<const block_q8_K*>(row);
    for (int64_t b = 0; b < n / kQK_K; ++b)
        for (int g = 0; g < kQK_K / 32; ++g)
            out[b * 8 + g] = int16_t(x[b].bsums[2 * g] + x[b].bsums[2 * g + 1]);
}

void quantize_row_q8_k_ref(const float* x, block_q8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < kQK_K; ++j)
            if (std::fabs(x[j]) > amax) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        if (amax == 0) {
            std::memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        // -127, not -128: ggml keeps the quants symmetric so that every SIMD path can negate them.
        const float iscale = -127.f / max;
        for (int j = 0; j < kQK_K; ++j) y[b].qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
        for (int g = 0; g < kQK_K / 16; ++g) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * g + i];
            y[b].bsums[g] = int16_t(sum);
        }
        y[b].d = 1 / iscale;
    }
}

// ---- dequantizers ----

void dequantize_row_q4_k(const block_q4_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const float d = fp16_to_f32(x[b].d), dmin = fp16_to_f32(x[b].dmin);
        uint8_t sc[8], m[8];
        unpack_k_scales(x[b].scales, sc, m);
        for (int c = 0; c < 4; ++c) {
            const float d1 = d * float(sc[2 * c]), m1 = dmin * float(m[2 * c]);
            const float d2 = d * float(sc[2 * c + 1]), m2 = dmin * float(m[2 * c + 1]);
            const uint8_t* q = x[b].qs + 32 * c;
            for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 15) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
        }
    }
}

void dequantize_row_q5_k(const block_q5_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const float d = fp16_to_f32(x[b].d), dmin = fp16_to_f32(x[b].dmin);
        uint8_t sc[8], m[8];
        unpack_k_scales(x[b].scales, sc, m);
        for (int c = 0; c < 4; ++c) {
            const float d1 = d * float(sc[2 * c]), m1 = dmin * float(m[2 * c]);
            const float d2 = d * float(sc[2 * c + 1]), m2 = dmin * float(m[2 * c + 1]);
            const uint8_t* q = x[b].qs + 32 * c;
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * float((q[l] & 15) | ((x[b].qh[l] >> (2 * c)) & 1) << 4) - m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d2 * float((q[l] >> 4) | ((x[b].qh[l] >> (2 * c + 1)) & 1) << 4) - m2;
        }
    }
}

void dequantize_row_q6_k(const block_q6_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = fp16_to_f32(x[b].d);
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = x[b].ql + 64 * h;
            const uint8_t* qh = x[b].qh + 32 * h;
            const int8_t* sc = x[b].scales + 8 * h;
            float* out = y + 128 * h;
            for (int l = 0; l < 32; ++l) {
                const int s = l / 16;
                const int q1 = ((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                out[l] = d * float(sc[s]) * float(q1);
                out[l + 32] = d * float(sc[s + 2]) * float(q2);
                out[l + 64] = d * float(sc[s + 4]) * float(q3);
                out[l + 96] = d * float(sc[s + 6]) * float(q4);
            }
        }
    }
}

void dequantize_row_q8_k(const block_q8_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b)
        for (int j = 0; j < kQK_K; ++j) *y++ = x[b].d * float(x[b].qs[j]);
}

}  // namespace graphrun::ops
