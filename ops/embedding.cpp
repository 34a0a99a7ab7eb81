// ops/embedding.cpp — token embedding lookup.
//   ids (n_tokens) i32, table (n_vocab, n_embd) any type with a dequantize_row  ->  y (n_tokens, n_embd) f32
//   y[t] = dequantize(table[ids[t]])
// Units: tokens.
// Out-of-range ids: the session validates ids against n_vocab before running, so an id outside
// [0, n_vocab) here is a bug upstream. Debug builds assert. Release builds never read outside the
// table: they fill that token's row with quiet NaN, which poisons everything computed from it, so the
// mistake shows in the logits rather than passing as a plausible token.
#include <cassert>
#include <limits>

#include "ops/op_checks.h"
#include "ops/op_rows.h"
#include "ops/quant/kernels.h"

namespace graphrun::ops {

namespace {

TensorDesc embedding_infer(const NodeInfo& node) {
    check_input_count(node, 2, "ids, table");
    check_dtype(node, 0, "ids", DType::I32);
    const TensorDesc& table_desc = node.inputs[1];
    const QuantTraits* traits = quant_traits(table_desc.dtype);
    if (!traits || !traits->dequantize_row)
        throw PlanError(node, input_label(1, "table") + " is " + table_desc.str() +
                                  ": graphrun has no dequantize_row kernel for " + dtype_name(table_desc.dtype));
    check_rank(node, 0, "ids", 1, "(n_tokens)");
    check_rank(node, 1, "table", 2, "(n_vocab, n_embd)");
    const TensorDesc& table = node.inputs[1];
    const int64_t block = dtype_traits(table.dtype).block_size;
    if (table.shape[1] % block != 0)
        throw PlanError(node, "table rows have " + std::to_string(table.shape[1]) +
                                  " elements, not a multiple of " + dtype_name(table.dtype) +
                                  "'s block size " + std::to_string(block));
    return {DType::F32, {node.inputs[0].shape[0], table.shape[1]}};
}

int64_t embedding_work_items(const KernelArgs& args) {
    return args.in[0].n_elements();
}

void embedding_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const TensorRef& table = args.in[1];
    const int64_t n_vocab = table.dim(0), n_embd = table.dim(1);
    const int64_t stride = row_bytes(table.dtype, n_embd);
    // Plain C++: a lookup converts one row per token, and every level's conversion has the same bits.
    const DequantizeRowFn dequantize = quant_traits_at(table.dtype, SimdLevel::Scalar)->dequantize_row;
    const int32_t* ids = args.in[0].as<int32_t>();
    for (int64_t t = begin; t < end; ++t) {
        float* y = args.out.as<float>() + t * n_embd;
        const int64_t id = ids[t];
        assert(0 <= id && id < n_vocab);
        if (id < 0 || id >= n_vocab) {
            for (int64_t i = 0; i < n_embd; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
            continue;
        }
        dequantize(static_cast<const uint8_t*>(table.data) + id * stride, y, n_embd);
    }
}

void embedding_reference(const KernelArgs& args) {
    const TensorRef& table = args.in[1];
    const int64_t n_vocab = table.dim(0), n_embd = table.dim(1);
    for (int64_t t = 0; t < args.in[0].n_elements(); ++t) {
        const int64_t id = args.in[0].as<int32_t>()[t];
        float* y = args.out.as<float>() + t * n_embd;
        if (id < 0 || id >= n_vocab) {
            for (int64_t i = 0; i < n_embd; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
            continue;
        }
        dequantize_row(table.dtype,
                       static_cast<const uint8_t*>(table.data) + id * row_bytes(table.dtype, n_embd), y,
                       n_embd);
    }
}

// A copy (with a dequantizing multiply for the block types): counted as no arithmetic.
double embedding_flops(const KernelArgs&) {
    return 0.0;
}

}  // namespace

const OpDef kEmbeddingOp = {
    .name = "embedding",
    .n_inputs = 2,
    .infer = embedding_infer,
    .work_items = embedding_work_items,
    .grain = 8,
    .run = {.scalar = embedding_run},
    .reference = embedding_reference,
    .flops = embedding_flops,
};

}  // namespace graphrun::ops
