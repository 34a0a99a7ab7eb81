// ops/op_rows.h — the functions behind each row of the op table (ops/op_table.cpp).
// Each op family declares here what its row points at; the definitions live in ops/<family>.cpp.
#pragma once

#include "ops/op_table.h"

namespace graphrun::ops {

// ---- matmul on quantized weights (ops/matmul_quant.cpp): matmul_q8, matmul_q4 ----
// x (n_tokens, K) f32 · W (N, K)ᵀ Q8_0|Q4_0 -> y (n_tokens, N) f32; scratch holds x as Q8_0.
TensorDesc matmul_q8_infer(const NodeInfo& node);
TensorDesc matmul_q4_infer(const NodeInfo& node);
int64_t matmul_quant_scratch_bytes(const NodeInfo& node);
int64_t matmul_quant_work_items(const KernelArgs& args);     // N (weight rows)
int64_t matmul_quant_prepare_items(const KernelArgs& args);  // n_tokens
void matmul_quant_prepare(const KernelArgs& args, int64_t begin, int64_t end);
void matmul_q8_run(const KernelArgs& args, int64_t begin, int64_t end);
void matmul_q4_run(const KernelArgs& args, int64_t begin, int64_t end);
void matmul_q8_reference(const KernelArgs& args);
void matmul_q4_reference(const KernelArgs& args);
double matmul_quant_flops(const KernelArgs& args);

}  // namespace graphrun::ops
