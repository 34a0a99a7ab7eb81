// ops/quant.cpp — reference (scalar) quantizers, dot products and the QuantTraits table.
//
// The SIMD paths live in ops/quant_avx2.cpp and ops/quant_avx512.cpp; this file picks among them
// once, from what the CPU reports, so the same binary runs on any x86-64.
#include "ops/quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ops/quant_kernels.h"
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

// ---- the traits table ----

namespace {

void quantize_f32(const float* x, void* y, int64_t n) {
    std::memcpy(y, x, size_t(n) * sizeof(float));
}
void dequantize_f32(const void* x, float* y, int64_t n) {
    std::memcpy(y, x, size_t(n) * sizeof(float));
}

void quantize_f16(const float* x, void* y, int64_t n) {
    if (active_simd_level() >= SimdLevel::Avx2) return avx2::f32_to_f16_row(x, static_cast<uint16_t*>(y), n);
    scalar::f32_to_f16_row(x, static_cast<uint16_t*>(y), n);
}
void dequantize_f16(const void* x, float* y, int64_t n) {
    const auto* h = static_cast<const uint16_t*>(x);
    if (active_simd_level() >= SimdLevel::Avx2) return avx2::f16_to_f32_row(h, y, n);
    scalar::f16_to_f32_row(h, y, n);
}

void quantize_q8_0(const float* x, void* y, int64_t n) {
    // Weights and activations alike get the reference rounding; the AVX2 version is bit-identical.
    if (active_simd_level() >= SimdLevel::Avx2)
        return avx2::quantize_row_q8_0(x, static_cast<block_q8_0*>(y), n);
    quantize_row_q8_0_ref(x, static_cast<block_q8_0*>(y), n);
}
void dequantize_q8_0(const void* x, float* y, int64_t n) {
    dequantize_row_q8_0(static_cast<const block_q8_0*>(x), y, n);
}
void quantize_q4_0(const float* x, void* y, int64_t n) {
    quantize_row_q4_0_ref(x, static_cast<block_q4_0*>(y), n);
}
void dequantize_q4_0(const void* x, float* y, int64_t n) {
    dequantize_row_q4_0(static_cast<const block_q4_0*>(x), y, n);
}

// Indexed by DType; built once, for the active SIMD level.
struct TraitsTable {
    std::array<QuantTraits, 4> rows;
    TraitsTable() {
        VecDotFn dot_q8 = scalar::vec_dot_q8_0_q8_0, dot_q4 = scalar::vec_dot_q4_0_q8_0;
        switch (active_simd_level()) {
            case SimdLevel::Avx512:
                dot_q8 = avx512::vec_dot_q8_0_q8_0;
                dot_q4 = avx512::vec_dot_q4_0_q8_0;
                break;
            case SimdLevel::Avx2:
                dot_q8 = avx2::vec_dot_q8_0_q8_0;
                dot_q4 = avx2::vec_dot_q4_0_q8_0;
                break;
            case SimdLevel::Scalar:
                break;
        }
        rows = {{
            {DType::F32, quantize_f32, dequantize_f32, nullptr, DType::F32},
            {DType::F16, quantize_f16, dequantize_f16, nullptr, DType::F32},
            {DType::Q4_0, quantize_q4_0, dequantize_q4_0, dot_q4, DType::Q8_0},
            {DType::Q8_0, quantize_q8_0, dequantize_q8_0, dot_q8, DType::Q8_0},
        }};
    }
};

}  // namespace

const QuantTraits* quant_traits(DType type) {
    static const TraitsTable table;
    for (const QuantTraits& t : table.rows)
        if (t.type == type) return &t;
    return nullptr;
}

VecDot4Fn active_vec_dot4(DType weight_type) {
    if (active_simd_level() != SimdLevel::Avx512) return nullptr;
    if (weight_type == DType::Q8_0) return avx512::vec_dot4_q8_0_q8_0;
    if (weight_type == DType::Q4_0) return avx512::vec_dot4_q4_0_q8_0;
    return nullptr;
}

void dequantize_row(DType type, const void* row, float* y, int64_t n) {
    const QuantTraits* t = quant_traits(type);
    // Only i32 has no row: its tensors are token ids, never weights. Callers check at plan time.
    if (!t)
        throw std::invalid_argument(std::string("dequantize_row: no float conversion for ") +
                                    dtype_name(type));
    t->dequantize_row(row, y, n);
}

}  // namespace graphrun::ops
