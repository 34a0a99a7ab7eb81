// ops/matmul_quant.h — the quantized matmul, one implementation for every weight type with a
// QuantTraits row (ops/quant/traits.h): its plan-time and run-time pieces, which the op table's matmul
// rows point at, and its plain-loop reference.
//   x (n_tokens, K) f32 · W (N, K)ᵀ quantized -> y (n_tokens, N) f32; scratch: x in the weight
//   type's vec_dot_type, n_tokens rows.
#pragma once

#include "ops/op_table.h"

namespace graphrun::ops {

// Checks x f32 (.., K), W a matrix (N, K) of a type with a vec_dot, K a multiple of its block size.
TensorDesc matmul_quant_infer(const NodeInfo& node);
int64_t matmul_quant_scratch_bytes(const NodeInfo& node);
// The same for a weight type and shape: xq, then the group sums a gemm may read (ops/matmul_quant.cpp).
int64_t matmul_quant_scratch_bytes_for(DType weight, int64_t n_tokens, int64_t k);
int64_t matmul_quant_work_items(const KernelArgs& args);     // N (weight rows)
int64_t matmul_quant_prepare_items(const KernelArgs& args);  // n_tokens
void matmul_quant_reference(const KernelArgs& args);
double matmul_quant_flops(const KernelArgs& args);

}  // namespace graphrun::ops
