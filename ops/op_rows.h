// ops/op_rows.h — every op family's rows of the op table. Each row is defined, with its attribute
// declarations and the functions it points at, in ops/<family>.cpp; ops/op_table.cpp lists them.
#pragma once

#include <span>

#include "ops/op_table.h"

namespace graphrun::ops {

extern const OpDef kEmbeddingOp;   // ops/embedding.cpp
extern const OpDef kRmsnormOp;     // ops/rmsnorm.cpp
extern const OpDef kMatmulF32Op;   // ops/matmul_f32.cpp
extern const OpDef kRopeOp;        // ops/rope.cpp
extern const OpDef kAttentionOp;   // ops/attention.cpp
extern const OpDef kSwigluOp;      // ops/swiglu.cpp
extern const OpDef kAddOp;         // ops/add.cpp
extern const OpDef kAddBiasOp;     // ops/add.cpp
extern const OpDef kGeluOp;        // ops/gelu.cpp
extern const OpDef kMulOp;         // ops/mul.cpp
extern const OpDef kKvWriteOp;     // ops/kv_write.cpp
extern const OpDef kSelectRowsOp;  // ops/select_rows.cpp

// ops/matmul_quant.cpp: one row per quantized weight type, made from its QuantTraits row (ops/quant/traits.h)
// when first asked for: "matmul_q8_0", "matmul_q4_0", "matmul_q4_1", ..., "matmul_q4_k", "matmul_iq4_xs".
std::span<const OpDef> matmul_quant_rows();

}  // namespace graphrun::ops
