// ops/quant_kernels.h — every code path behind QuantTraits, callable one by one.
//
// quant_traits() (ops/quant.h) hands out the best path this CPU can run, chosen once at start-up.
// Tests hold each SIMD path against the scalar one, and benchmarks time them side by side, so the
// paths are exposed here by name. Calling an avx2:: or avx512:: function on a CPU without the
// features that cpu_features() reports for it is undefined (an illegal instruction).
#pragma once

#include <cstdint>

#include "ops/cpu.h"
#include "ops/quant.h"
#include "runtime/kernel.h"

namespace graphrun::ops {

// The dispatch level (cpu_features(), active_simd_level(), GRAPHRUN_SIMD) is ops/cpu.h's.

// ggml's reference quantizers (quantize_row_q8_0_ref / quantize_row_q4_0_ref), bit for bit, so files
// graphrun writes equal llama-quantize's. n is a multiple of 32.
//   Q8_0: d = amax / 127, q = round(x / d)
//   Q4_0: m = the element of largest magnitude (signed), d = m / -8, q = min(15, int8(x / d + 8.5))
// Both scale by 1/d of the float d and store d rounded to fp16, as ggml does.
void quantize_row_q8_0_ref(const float* x, block_q8_0* y, int64_t n);
void quantize_row_q4_0_ref(const float* x, block_q4_0* y, int64_t n);
void dequantize_row_q8_0(const block_q8_0* x, float* y, int64_t n);
void dequantize_row_q4_0(const block_q4_0* x, float* y, int64_t n);

// All 65536 halves as floats, built once. SIMD kernels read a block's scale with one load (and can
// broadcast it straight from memory), which is cheaper than converting it in registers.
const float* fp16_to_f32_table();

// Weight row · activation row, n elements (a multiple of 32). The activation row is always Q8_0.
// All paths compute sum over blocks of (integer block dot) * d_w * d_x; they differ only in the
// order the float products are added.
namespace scalar {
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x);
void f16_to_f32_row(const uint16_t* x, float* y, int64_t n);
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);
}  // namespace scalar

namespace avx2 {
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x);
void f16_to_f32_row(const uint16_t* x, float* y, int64_t n);  // F16C; bit-exact with scalar::
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);  // F16C, round to nearest even
// quantize_row_q8_0_ref's result, bit for bit, 8 floats at a time (activations, once per matmul).
void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n);
}  // namespace avx2

// Four weight rows, w_stride bytes apart, · one activation row -> out[0..3]: what vec_dot gives for
// each row, up to float rounding. The matmul's inner loop; sharing the activation's loads, scales and
// zero-point correction across the rows saves about a third of the vector work per weight byte.
using VecDot4Fn = void (*)(int64_t n, const void* w, int64_t w_stride, const void* x, float* out);

namespace avx512 {
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x);
void vec_dot4_q8_0_q8_0(int64_t n, const void* w, int64_t w_stride, const void* x, float* out);
void vec_dot4_q4_0_q8_0(int64_t n, const void* w, int64_t w_stride, const void* x, float* out);
}  // namespace avx512

// The four-row kernel of the active level for Q8_0 / Q4_0 weights; nullptr where the level has none
// (callers then use the traits' vec_dot row by row).
VecDot4Fn active_vec_dot4(DType weight_type);

// matmul_q8_run / matmul_q4_run (ops/matmul_quant.cpp) with the dot kernels given explicitly
// (W's dtype picks the row size): same args, work units and scratch contract as the op's run.
// dot4 may be nullptr (rows one at a time). Tests and benchmarks run the op's loop on each path.
void matmul_quant_run_with(const KernelArgs& args, int64_t begin, int64_t end, VecDotFn dot,
                           VecDot4Fn dot4 = nullptr);

}  // namespace graphrun::ops
