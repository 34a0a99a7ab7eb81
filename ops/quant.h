// ops/quant.h — ggml's Q8_0 and Q4_0 block formats and the per-type traits the kernels use.
//
//   block_q8_0 { fp16 d; int8 qs[32]; }   weight j = d * qs[j]
//   block_q4_0 { fp16 d; uint8 qs[16]; }  weight j = d * ((qs[j] & 15) - 8) for j < 16,
//                                         d * ((qs[j-16] >> 4) - 8) for j >= 16
// Matmuls on quantized weights quantize the activation row to Q8_0 once, then run integer dot
// products (`vec_dot`) between a weight row and that Q8_0 row.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace graphrun::ops {

constexpr int kQK = 32;  // weights per block, both formats

struct block_q8_0 {
    uint16_t d;  // fp16 scale
    int8_t qs[kQK];
};
static_assert(sizeof(block_q8_0) == 34, "Q8_0 block must match ggml's layout");

struct block_q4_0 {
    uint16_t d;  // fp16 scale
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(block_q4_0) == 18, "Q4_0 block must match ggml's layout");

// n must be a multiple of 32 for the quantized types.
using QuantizeRowFn = void (*)(const float* x, void* blocks, int64_t n);
using DequantizeRowFn = void (*)(const void* row, float* y, int64_t n);
// Dot product of a weight row (this type) with an activation row quantized to `vec_dot_type`.
using VecDotFn = float (*)(int64_t n, const void* weight_row, const void* act_row);

struct QuantTraits {
    DType type;
    QuantizeRowFn quantize_row;      // float -> this type (F32, F16 too)
    DequantizeRowFn dequantize_row;  // this type -> float (F32, F16 too)
    VecDotFn vec_dot;                // nullptr for F32/F16
    DType vec_dot_type;              // what the activation row is quantized to (Q8_0)
};

// Traits for F32, F16, Q8_0 and Q4_0; nullptr for any other type.
const QuantTraits* quant_traits(DType type);

// Convenience for embedding lookups and tests: row of n elements of `type` -> float.
void dequantize_row(DType type, const void* row, float* y, int64_t n);

}  // namespace graphrun::ops
