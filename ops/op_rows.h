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

// ---- embedding (ops/embedding.cpp): ids (T) i32, table (n_vocab, n_embd) f32|f16|q8_0|q4_0 -> (T, n_embd) ----
TensorDesc embedding_infer(const NodeInfo& node);
int64_t embedding_work_items(const KernelArgs& args);  // tokens
void embedding_run(const KernelArgs& args, int64_t begin, int64_t end);
void embedding_reference(const KernelArgs& args);
double embedding_flops(const KernelArgs& args);

// ---- rmsnorm (ops/rmsnorm.cpp): x (T, n), w (n) -> (T, n); in place ----
TensorDesc rmsnorm_infer(const NodeInfo& node);
int64_t rmsnorm_work_items(const KernelArgs& args);  // tokens
void rmsnorm_run(const KernelArgs& args, int64_t begin, int64_t end);
void rmsnorm_reference(const KernelArgs& args);
double rmsnorm_flops(const KernelArgs& args);

// ---- matmul on f32/f16 weights (ops/matmul_f32.cpp, paths in ops/matmul_f32.h) ----
// x (T, K) f32 · W (N, K)ᵀ f32|f16 -> y (T, N) f32
TensorDesc matmul_f32_infer(const NodeInfo& node);
int64_t matmul_f32_work_items(const KernelArgs& args);  // N (weight rows)
void matmul_f32_run(const KernelArgs& args, int64_t begin, int64_t end);
void matmul_f32_reference(const KernelArgs& args);
double matmul_f32_flops(const KernelArgs& args);

// ---- rope (ops/rope.cpp): x (T, n_head * head_dim), positions (T) i32 -> same shape; in place ----
TensorDesc rope_infer(const NodeInfo& node);
int64_t rope_work_items(const KernelArgs& args);  // tokens
void rope_run(const KernelArgs& args, int64_t begin, int64_t end);
void rope_reference(const KernelArgs& args);
double rope_flops(const KernelArgs& args);

// ---- attention (ops/attention.cpp): q, k, v, positions + KV cache layer -> (T, n_head * head_dim) ----
TensorDesc attention_infer(const NodeInfo& node);
int64_t attention_prepare_items(const KernelArgs& args);  // tokens: write k, v into the cache
void attention_prepare(const KernelArgs& args, int64_t begin, int64_t end);
int64_t attention_work_items(const KernelArgs& args);  // n_tokens * n_head (token, query head) pairs
void attention_run(const KernelArgs& args, int64_t begin, int64_t end);
void attention_reference(const KernelArgs& args);
double attention_flops(const KernelArgs& args);

// ---- swiglu (ops/swiglu.cpp): gate (T, F), up (T, F) -> silu(gate) * up; in place ----
TensorDesc swiglu_infer(const NodeInfo& node);
int64_t swiglu_work_items(const KernelArgs& args);  // tokens
void swiglu_run(const KernelArgs& args, int64_t begin, int64_t end);
void swiglu_reference(const KernelArgs& args);
double swiglu_flops(const KernelArgs& args);

// ---- add (ops/add.cpp): a, b same shape -> a + b; in place ----
TensorDesc add_infer(const NodeInfo& node);
int64_t add_work_items(const KernelArgs& args);  // rows
void add_run(const KernelArgs& args, int64_t begin, int64_t end);
void add_reference(const KernelArgs& args);
double add_flops(const KernelArgs& args);

// ---- gelu (ops/gelu.cpp): x (..., n) -> 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); in place ----
TensorDesc gelu_infer(const NodeInfo& node);
int64_t gelu_work_items(const KernelArgs& args);  // rows
void gelu_run(const KernelArgs& args, int64_t begin, int64_t end);
void gelu_reference(const KernelArgs& args);
double gelu_flops(const KernelArgs& args);

// ---- mul (ops/mul.cpp): a, b same shape -> a * b; in place ----
TensorDesc mul_infer(const NodeInfo& node);
int64_t mul_work_items(const KernelArgs& args);  // rows
void mul_run(const KernelArgs& args, int64_t begin, int64_t end);
void mul_reference(const KernelArgs& args);
double mul_flops(const KernelArgs& args);

}  // namespace graphrun::ops
