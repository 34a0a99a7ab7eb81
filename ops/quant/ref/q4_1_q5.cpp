// ops/quant/ref/q4_1_q5.cpp — the other 32-weight blocks: Q4_1, Q5_0, Q5_1 weights and the Q8_1
// activations that Q4_1 / Q5_1 dot against. Reference quantizers (ggml's *_ref, bit for bit: they
// define the formats and are what llama-quantize writes without an importance matrix),
// dequantizers and the scalar dot products.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "ops/quant/kernels.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

void store_u32(uint8_t* p, uint32_t v) {
    std::memcpy(p, &v, sizeof v);
}

// The fifth bit of weight j of a Q5 block, as 0 or 16.
int high_bit(uint32_t qh, int j) {
    return int((qh >> j) & 1) << 4;
}

// min and max of a block, as ggml's Q4_1 / Q5_1 reference finds them (from +-FLT_MAX).
void block_range(const float* x, float& min, float& max) {
    min = FLT_MAX;
    max = -FLT_MAX;
    for (int j = 0; j < kQK; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
}

// The element of largest magnitude, with its sign (the first one on ties), as Q4_0 / Q5_0 use it.
float signed_extreme(const float* x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    return max;
}

}  // namespace

// ---- reference quantizers ----

// d = (max - min) / 15, m = min, q = min(15, trunc((x - min) / d + 0.5)).
void quantize_row_q4_1_ref(const float* x, block_q4_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        float min, max;
        block_range(x, min, max);
        const float d = (max - min) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_fp16(d);
        y[b].m = f32_to_fp16(min);
        for (int j = 0; j < kQK / 2; ++j) {
            const uint8_t lo = std::min(15, int(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
            const uint8_t hi = std::min(15, int(static_cast<int8_t>((x[j + kQK / 2] - min) * id + 0.5f)));
            y[b].qs[j] = uint8_t(lo | hi << 4);
        }
    }
}

// As Q4_0 with 32 levels: the signed extreme lands on -16, d = max / -16.
void quantize_row_q5_0_ref(const float* x, block_q5_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        const float d = signed_extreme(x) / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const uint8_t lo = std::min(31, int(static_cast<int8_t>(x[j] * id + 16.5f)));
            const uint8_t hi = std::min(31, int(static_cast<int8_t>(x[j + kQK / 2] * id + 16.5f)));
            y[b].qs[j] = uint8_t((lo & 15) | (hi & 15) << 4);
            qh |= uint32_t(lo >> 4) << j | uint32_t(hi >> 4) << (j + kQK / 2);
        }
        store_u32(y[b].qh, qh);
    }
}

// As Q4_1 with 32 levels; ggml does not clamp here: (max - min) / d + 0.5 stays below 32.
void quantize_row_q5_1_ref(const float* x, block_q5_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        float min, max;
        block_range(x, min, max);
        const float d = (max - min) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_fp16(d);
        y[b].m = f32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const auto lo = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
            const auto hi = static_cast<uint8_t>((x[j + kQK / 2] - min) * id + 0.5f);
            y[b].qs[j] = uint8_t((lo & 15) | (hi & 15) << 4);
            qh |= uint32_t((lo >> 4) & 1) << j | uint32_t((hi >> 4) & 1) << (j + kQK / 2);
        }
        store_u32(y[b].qh, qh);
    }
}

// Q8_0's rounding, plus s = fp16(d * sum of the quants).
void quantize_row_q8_1_ref(const float* x, block_q8_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            y[b].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
            sum += y[b].qs[j];
        }
        y[b].s = f32_to_fp16(float(sum) * d);
    }
}

// ---- dequantizers ----

void dequantize_row_q4_1(const block_q4_1* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
        const float d = fp16_to_f32(x[b].d), m = fp16_to_f32(x[b].m);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = float(x[b].qs[j] & 15) * d + m;
            y[j + kQK / 2] = float(x[b].qs[j] >> 4) * d + m;
        }
    }
}

void dequantize_row_q5_0(const block_q5_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
        const float d = fp16_to_f32(x[b].d);
        const uint32_t qh = load_u32(x[b].qh);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = float(((x[b].qs[j] & 15) | high_bit(qh, j)) - 16) * d;
            y[j + kQK / 2] = float(((x[b].qs[j] >> 4) | high_bit(qh, j + kQK / 2)) - 16) * d;
        }
    }
}

void dequantize_row_q5_1(const block_q5_1* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
        const float d = fp16_to_f32(x[b].d), m = fp16_to_f32(x[b].m);
        const uint32_t qh = load_u32(x[b].qh);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = float((x[b].qs[j] & 15) | high_bit(qh, j)) * d + m;
            y[j + kQK / 2] = float((x[b].qs[j] >> 4) | high_bit(qh, j + kQK / 2)) * d + m;
        }
    }
}

void dequantize_row_q8_1(const block_q8_1* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
        const float d = fp16_to_f32(x[b].d);
        for (int j = 0; j < kQK; ++j) y[j] = d * float(x[b].qs[j]);
    }
}

// ---- scalar dot products: exact integer block dots, then the block's scales in float ----

namespace scalar {

// sum_j (d_w q_j + m) d_x x_j = d_w d_x sum_j q_j x_j + m s_x, s_x = d_x sum_j x_j from the Q8_1 block.
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q4_1*>(w);
    const auto* xb = static_cast<const block_q8_1*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int32_t dot = 0;
        for (int j = 0; j < kQK / 2; ++j)
            dot += (wb[b].qs[j] & 15) * xb[b].qs[j] + (wb[b].qs[j] >> 4) * xb[b].qs[j + kQK / 2];
        sum += float(dot) * (fp16_to_f32(wb[b].d) * fp16_to_f32(xb[b].d)) +
               fp16_to_f32(wb[b].m) * fp16_to_f32(xb[b].s);
    }
    return sum;
}

float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q5_0*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint32_t qh = load_u32(wb[b].qh);
        int32_t dot = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            dot += (((wb[b].qs[j] & 15) | high_bit(qh, j)) - 16) * xb[b].qs[j];
            dot += (((wb[b].qs[j] >> 4) | high_bit(qh, j + kQK / 2)) - 16) * xb[b].qs[j + kQK / 2];
        }
        sum += float(dot) * (fp16_to_f32(wb[b].d) * fp16_to_f32(xb[b].d));
    }
    return sum;
}

float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q5_1*>(w);
    const auto* xb = static_cast<const block_q8_1*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint32_t qh = load_u32(wb[b].qh);
        int32_t dot = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            dot += ((wb[b].qs[j] & 15) | high_bit(qh, j)) * xb[b].qs[j];
            dot += ((wb[b].qs[j] >> 4) | high_bit(qh, j + kQK / 2)) * xb[b].qs[j + kQK / 2];
        }
        sum += float(dot) * (fp16_to_f32(wb[b].d) * fp16_to_f32(xb[b].d)) +
               fp16_to_f32(wb[b].m) * fp16_to_f32(xb[b].s);
    }
    return sum;
}

}  // namespace scalar

}  // namespace graphrun::ops
