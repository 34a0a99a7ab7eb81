// ops/quant/kernels.h — every code path behind QuantTraits, callable one by one.
//
// quant_traits_at() hands out the kernels of one SIMD level; the matmul rows bind one level per plan.
// Tests hold each SIMD path against the scalar one, and benchmarks time them side by side, so the
// paths are exposed here by name. Calling an avx2:: function on a CPU without the
// features that cpu_features() reports for it is undefined (an illegal instruction).
#pragma once

#include <cstdint>

#include "ops/cpu.h"
#include "ops/quant/traits.h"
#include "runtime/kernel.h"

namespace graphrun::ops {

// The dispatch level (cpu_features(), active_simd_level(), GRAPHRUN_SIMD) is ops/cpu.h's.

// ---- reference quantizers and dequantizers ----
// ggml's reference quantizers (its quantize_row_*_ref, and for IQ4_XS quantize_iq4_xs without an
// importance matrix), bit for bit, so files graphrun writes equal llama-quantize's. n is a multiple
// of the block size. docs/quantization.md describes each algorithm.
//   Q8_0: d = amax / 127, q = round(x / d)
//   Q4_0: m = the element of largest magnitude (signed), d = m / -8, q = min(15, int8(x / d + 8.5))
// Both scale by 1/d of the float d and store d rounded to fp16, as ggml does.
void quantize_row_q8_0_ref(const float* x, block_q8_0* y, int64_t n);
void quantize_row_q4_0_ref(const float* x, block_q4_0* y, int64_t n);
void quantize_row_q4_1_ref(const float* x, block_q4_1* y, int64_t n);
void quantize_row_q5_0_ref(const float* x, block_q5_0* y, int64_t n);
void quantize_row_q5_1_ref(const float* x, block_q5_1* y, int64_t n);
void quantize_row_q8_1_ref(const float* x, block_q8_1* y, int64_t n);
void quantize_row_q4_k_ref(const float* x, block_q4_K* y, int64_t n);
void quantize_row_q5_k_ref(const float* x, block_q5_K* y, int64_t n);
void quantize_row_q6_k_ref(const float* x, block_q6_K* y, int64_t n);
void quantize_row_q8_k_ref(const float* x, block_q8_K* y, int64_t n);
void quantize_row_iq4_xs_ref(const float* x, block_iq4_xs* y, int64_t n);
void quantize_row_iq4_nl_ref(const float* x, block_iq4_nl* y, int64_t n);  // as quantize_iq4_nl writes files

// The sum of each 32 consecutive activation values of a quantized row, out[n / 32] (|sum| <= 32 * 128):
// what a GEMM with a zero point or mins takes off, computed once per matmul call in its prepare.
void group_sums_q8_0(const void* row, int16_t* out, int64_t n);
void group_sums_q8_k(const void* row, int16_t* out, int64_t n);  // from Q8_K's 16-value bsums

void dequantize_row_q8_0(const block_q8_0* x, float* y, int64_t n);
void dequantize_row_q4_0(const block_q4_0* x, float* y, int64_t n);
void dequantize_row_q4_1(const block_q4_1* x, float* y, int64_t n);
void dequantize_row_q5_0(const block_q5_0* x, float* y, int64_t n);
void dequantize_row_q5_1(const block_q5_1* x, float* y, int64_t n);
void dequantize_row_q8_1(const block_q8_1* x, float* y, int64_t n);
void dequantize_row_q4_k(const block_q4_K* x, float* y, int64_t n);
void dequantize_row_q5_k(const block_q5_K* x, float* y, int64_t n);
void dequantize_row_q6_k(const block_q6_K* x, float* y, int64_t n);
void dequantize_row_q8_k(const block_q8_K* x, float* y, int64_t n);
void dequantize_row_iq4_xs(const block_iq4_xs* x, float* y, int64_t n);
void dequantize_row_iq4_nl(const block_iq4_nl* x, float* y, int64_t n);

// All 65536 halves as floats, built once. SIMD kernels read a block's scale with one load (and can
// broadcast it straight from memory), which is cheaper than converting it in registers.
const float* fp16_to_f32_table();

// ---- dot products: weight row · activation row (the traits' vec_dot_type), n elements ----
// 32-weight blocks (Q8_0, Q4_0, Q5_0, IQ4_NL against Q8_0; Q4_1, Q5_1 against Q8_1): sum over blocks
// of (integer block dot) * d_w * d_x (+ m_w * s_x for Q4_1 / Q5_1);
// the paths differ only in the order the float products are added.
// Super-blocks (Q4_K, Q5_K, Q6_K, IQ4_XS against Q8_K): exact integer sums per super-block folded in
// with k_superblock_total (ops/quant/k_common.h), so every path gives the scalar path's bits.
namespace scalar {
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* x);
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* x);
float vec_dot_q4_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_q5_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_q6_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq4_xs_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* x);
void f16_to_f32_row(const uint16_t* x, float* y, int64_t n);
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);
}  // namespace scalar

namespace avx2 {
// Q8_0 and Q4_0 (ops/quant/avx2/gemm_tiles.cpp, ops/quant/avx2/lanes_gemm.cpp): the scalar path's bits
// exactly, one row or a whole tile. The traits' gemm is gemm_lanes_*; gemm_q8_0_q8_0 (row tiles) runs its
// Q8_0 calls below 4 tokens.
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x);
void gemm_q8_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end);
void gemm_lanes_q8_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end);
void gemm_lanes_q4_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end);
// The same on Q4_0 packed at load (ops/quant/packed.h: q4_0x8; N % 8 == 0, row ranges start at multiples
// of 8): the same bits, no transposition.
void gemm_lanes_q4_0x8_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end);
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* x);
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* x);
float vec_dot_q4_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_q5_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_q6_k_q8_k(int64_t n, const void* w, const void* x);
// Q4_K (ops/quant/avx2/k_gemm.cpp): vec_dot_q4_k_q8_k's bits for every output, one row x 8 tokens a tile.
void gemm_q4_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end);
// Q6_K (the same file): vec_dot_q6_k_q8_k's bits, one row x 8 tokens a tile, from Q8_K's own bsums.
void gemm_q6_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end);
// Q4_K and Q6_K (ops/quant/avx2/k_lanes_gemm.cpp), the traits' gemms: the same bits, 8 rows in lanes x 4
// tokens a staged tile for calls of more than 8 tokens; up to 8 tokens, and the last n_tokens % 4, run
// gemm_q4_k_q8_k / gemm_q6_k_q8_k above.
void gemm_lanes_q4_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end);
void gemm_lanes_q6_k_q8_k(const GemmArgs& args, int64_t row_begin, int64_t row_end);
float vec_dot_iq4_xs_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* x);
void f16_to_f32_row(const uint16_t* x, float* y, int64_t n);  // F16C; bit-exact with scalar::
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);  // F16C, round to nearest even
// quantize_row_q8_0_ref's result, bit for bit, 8 floats at a time (activations, once per matmul).
void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n);
}  // namespace avx2

namespace avx512 {
// Q8_0 and Q4_0 with VNNI (ops/quant/avx512/lanes_gemm.cpp): the scalar path's bits, 16 rows x 4 tokens
// a staged tile; decode, calls of up to 8 tokens and the last n_tokens % 4 in registers, 16 rows x
// 1-8 tokens. They read GemmArgs::x_group_sums (the zero point of the unsigned weights).
void gemm_lanes_q8_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end);
void gemm_lanes_q4_0_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end);
// The same on Q4_0 packed at load (q4_0x8, read as two groups of 8 rows; N % 8 == 0, row ranges start
// at multiples of 8): the same bits, no transposition.
void gemm_lanes_q4_0x8_q8_0(const GemmArgs& args, int64_t row_begin, int64_t row_end);
}  // namespace avx512

// The matmul op's row loop (ops/matmul_quant.cpp) with a given traits row, whose gemm (or, without
// one, vec_dot / vec_dot4) it uses: same args, work units and scratch contract as the op's run. Tests and
// benchmarks run the op's loop on each path this way.
void matmul_quant_run_with(const KernelArgs& args, int64_t begin, int64_t end, const QuantTraits& traits);
// The op's prepare (x quantized into the scratch, then the group sums when `weight` has
// gemm_group_sums) with the activation type's traits row `act`, for tokens [begin, end).
void matmul_quant_prepare_with(const KernelArgs& args, int64_t begin, int64_t end, const QuantTraits& weight,
                               const QuantTraits& act);

}  // namespace graphrun::ops
