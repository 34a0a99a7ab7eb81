// ops/quant/traits.h — the quantized types as data: one traits row per type drives the quantized matmul.
//
// A matmul on quantized weights quantizes each activation row once to the type's `vec_dot_type`
// (Q8_0 for Q4_0 / Q5_0 / Q8_0, Q8_1 for Q4_1 / Q5_1 whose mins need the block sums, Q8_K for the
// super-block types), then runs integer dot products (`vec_dot`) between weight rows and those
// activation rows. Adding a type is one row here (ops/quant/traits.cpp) plus its kernels; the
// planner, the op table and the matmul read everything else from the row.
// Block layouts: ops/quant/blocks.h (ggml's, byte for byte).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ops/cpu.h"
#include "ops/quant/blocks.h"
#include "runtime/dtype.h"

namespace graphrun::ops {

// n is a multiple of the type's block size (callers check at plan time).
using QuantizeRowFn = void (*)(const float* x, void* blocks, int64_t n);
using DequantizeRowFn = void (*)(const void* row, float* y, int64_t n);
// Dot product of a weight row (this type) with an activation row quantized to `vec_dot_type`.
using VecDotFn = float (*)(int64_t n, const void* weight_row, const void* act_row);
// Four weight rows, w_stride bytes apart, · one activation row -> out[0..3].
using VecDot4Fn = void (*)(int64_t n, const void* w, int64_t w_stride, const void* x, float* out);

// A tiled matmul over weight rows [row_begin, row_end) and every token: each weight block loaded
// serves several tokens (prompts, batched decode). Q8_0, Q4_0 and Q4_K have one at the AVX2 level. W is
// as stored in the file (rows of w_row_bytes), or for a packed_gemm in its packed layout (the same
// bytes per row); xq holds n_tokens activation rows of xq_row_bytes.
struct GemmArgs {
    int64_t k, n_tokens;
    const void* w;
    int64_t w_row_bytes;
    const void* xq;
    int64_t xq_row_bytes;
    float* y;  // y[t * y_stride + row]
    int64_t y_stride;
    // (n_tokens, k / 32): the sum of each 32 activation values of xq[t], when the weight's traits have
    // gemm_group_sums (Q4_0's zero point, Q4_K's mins); nullptr otherwise.
    const int16_t* x_group_sums = nullptr;
};
using GemmFn = void (*)(const GemmArgs& args, int64_t row_begin, int64_t row_end);
// Weight rows (n_rows, k) from one layout to another (same bytes, no overlap): ops/quant/packed.h.
using PackFn = void (*)(const void* from, void* to, int64_t n_rows, int64_t k);
// A quantized activation row -> the sum of each 32 of its values, out[n / 32].
using GroupSumsFn = void (*)(const void* row, int16_t* out, int64_t n);

struct QuantTraits {
    DType type;
    DType vec_dot_type;              // what activation rows are quantized to (F32 for the float types)
    QuantizeRowFn quantize_row;      // float -> this type; for weights, ggml's reference rounding
    DequantizeRowFn dequantize_row;  // this type -> float
    VecDotFn vec_dot;                // nullptr: no quantized matmul on weights of this type
    const char* matmul_kernel;       // the op-table row of that matmul ("matmul_q4_k"), nullptr if none
    // Fast paths, optional. The matmul's invariant binds them: a (token, weight row) output is the same
    // bits whatever the batch and however rows are split over threads, so a path may depend on the
    // row index and the matrix shape but never on n_tokens or the range being run.
    VecDot4Fn
        vec_dot4;  // four rows at once (AVX-512 Q8_0 / Q4_0); used for rows in whole aligned groups of 4
    GemmFn gemm;   // every call when set (any n_tokens); must give vec_dot's bits for every output
    bool gemm_group_sums;    // the gemm reads GemmArgs::x_group_sums (the matmul's prepare fills them)
    GroupSumsFn group_sums;  // activation types (Q8_0, Q8_K): how those sums are read off a row
    // Byte offset in a weight block of the fp16 min m whose term the kernels take as m * the Q8_1
    // activation block's stored sum, as ggml does (Q4_1, Q5_1: 2); -1 for types without (the
    // K-quants' dmin is folded in from Q8_K's exact integer sums). matmul_quant_reference follows it.
    int min_offset;
    // What llama-quantize writes instead when a tensor's rows are not whole blocks of this type
    // (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL); the type itself where it has none.
    DType short_row_fallback;
    // Weights repacked at load (ops/quant/packed.h): `pack` turns rows (n_rows, k) as stored into
    // `packed_layout` ("q4_0x8"; same bytes, n_rows a multiple of packed_rows) and `unpack` back, at
    // every level (plain C++). `packed_gemm` runs on the packed bytes, with row ranges that start on a
    // group of packed_rows; it is set only at a level whose own `gemm` it replaces (the same level of
    // the kernels, the same bits), so Q4_0 at AVX-512 keeps its 16-row VNNI GEMM on the rows as
    // stored. The planner binds packed bytes only where this level has a packed_gemm.
    PackFn pack;
    PackFn unpack;
    const char* packed_layout;   // nullptr: the type is never repacked
    const char* packed_variant;  // the matmul's path in a plan dump ("gemm_q4_0x8")
    int packed_rows;
    GemmFn packed_gemm;
};

// The traits of `type` at this process's level (ops/cpu.h: active_simd_level), or nullptr for a type
// graphrun has no kernels for
// (I32, the i-quants other than IQ4_XS, ...). F32 and F16 have rows (conversions, no vec_dot).
const QuantTraits* quant_traits(DType type);
// The traits row of `type` with the kernels of `level` (which the CPU must support), for plans bound at
// a level, tests and benchmarks that run one path; quant_traits() is this for active_simd_level().
// nullptr where quant_traits(type) is.
const QuantTraits* quant_traits_at(DType type, SimdLevel level);

// The weight types a matmul runs, once for every caller: f32, f16 (matmul_f32), then each quantized
// type whose traits have a vec_dot and name its matmul row, in ggml id order.
std::span<const DType> runnable_weight_types();
// The quantized ones alone: runnable_weight_types() without f32 and f16.
std::span<const DType> runnable_quantized_weight_types();
// "f32, f16, q8_0, q4_0, ...": runnable_weight_types() for messages that say what does run.
std::string runnable_weight_type_names();

// Convenience for embedding lookups and tests: row of n elements of `type` -> float.
// Throws std::invalid_argument for a type without a dequantize_row.
void dequantize_row(DType type, const void* row, float* y, int64_t n);

}  // namespace graphrun::ops
