// ops/quant/ref/q8_0_q4_0.cpp — the Q8_0 / Q4_0 reference quantizers and scalar paths, and the fp16
// table. (Q4_1, Q5_0, Q5_1, Q8_1: ops/quant/ref/q4_1_q5.cpp; the super-block types:
// ops/quant/ref/k_quants.cpp, k_dots.cpp, iq4.cpp; SIMD paths: ops/quant/avx2/; the traits table that
// picks among them: ops/quant/traits.cpp.)
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ops/quant/kernels.h"
#include "ops/quant/traits.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

const float* fp16_to_f32_table() {
    static const std::unique_ptr<float[]> table = [] {
        auto t = std::make_unique<float[]>(65536);
        for (uint32_t h = 0; h < 65536; ++h) t[h] = fp16_to_f32(uint16_t(h));
        return t;
    }();
    return table.get();
}

// ---- reference quantizers (ggml's *_ref functions: the format's definition) ----

void group_sums_q8_0(const void* row, int16_t* out, int64_t n) {
    const auto* x = static_cast<const block_q8_0*>(row);
    for (int64_t b = 0; b < n / kQK; ++b) {
        int sum = 0;
        for (int i = 0; i < kQK; ++i) sum += x[b].qs[i];
        out[b] = int16_t(sum);
    }
}

void quantize_row_q8_0_ref(const float* x, block_q8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_fp16(d);
        for (int j = 0; j < kQK; ++j) y[b].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
    }
}

void quantize_row_q4_0_ref(const float* x, block_q4_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        // The signed extreme maps to -8 exactly, so the 16 levels cover [-8d, 7d] with no level wasted
        // on the side that lacks the extreme.
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kQK; ++j) {
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_fp16(d);
        for (int j = 0; j < kQK / 2; ++j) {
            // +8.5 then truncation = round half up into 0..16; 16 (only the -8d side's far edge) clamps.
            const uint8_t lo = std::min(15, int(static_cast<int8_t>(x[j] * id + 8.5f)));
            const uint8_t hi = std::min(15, int(static_cast<int8_t>(x[j + kQK / 2] * id + 8.5f)));
            y[b].qs[j] = uint8_t(lo | hi << 4);
        }
    }
}

void dequantize_row_q8_0(const block_q8_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
        const float d = fp16_to_f32(x[b].d);
        for (int j = 0; j < kQK; ++j) y[j] = d * float(x[b].qs[j]);
    }
}

void dequantize_row_q4_0(const block_q4_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
        const float d = fp16_to_f32(x[b].d);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = d * float((x[b].qs[j] & 15) - 8);
            y[j + kQK / 2] = d * float((x[b].qs[j] >> 4) - 8);
        }
    }
}

// ---- scalar paths ----

namespace scalar {

float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q8_0*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int32_t dot = 0;
        for (int j = 0; j < kQK; ++j) dot += int32_t(wb[b].qs[j]) * int32_t(xb[b].qs[j]);
        sum += float(dot) * (fp16_to_f32(wb[b].d) * fp16_to_f32(xb[b].d));
    }
    return sum;
}

float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q4_0*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int32_t dot = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            dot += ((wb[b].qs[j] & 15) - 8) * int32_t(xb[b].qs[j]);
            dot += ((wb[b].qs[j] >> 4) - 8) * int32_t(xb[b].qs[j + kQK / 2]);
        }
        sum += float(dot) * (fp16_to_f32(wb[b].d) * fp16_to_f32(xb[b].d));
    }
    return sum;
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_f32(x[i]);
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

}  // namespace scalar

}  // namespace graphrun::ops
