// ops/op_table.cpp — the single op table, TensorDesc helpers and kernel choice.
#include "ops/op_table.h"


#include <vector>

#include "ops/op_rows.h"

namespace graphrun::ops {

int64_t TensorDesc::n_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

int64_t TensorDesc::nbytes() const {
    if (shape.empty()) return dtype_traits(dtype).block_bytes;
    return n_elements() / shape.back() * row_bytes(dtype, shape.back());
}

std::string TensorDesc::str() const {
    std::string s = std::string(dtype_name(dtype)) + " (";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + ")";
}

PlanError::PlanError(const NodeInfo& node, const std::string& what)
    : std::runtime_error("[" + node.op + "] node '" + node.name + "': " + what) {}

namespace {

// One row per kernel; each family's functions live in ops/<family>.cpp and are declared in op_rows.h.
// Fields: name, n_inputs, in_place, infer, scratch_bytes, work_items, grain, run, prepare,
//         prepare_items, reference, flops.
const std::vector<OpDef> kOps = {
    // f32 ops (ops/embedding.cpp, rmsnorm.cpp, matmul_f32.cpp, rope.cpp, attention.cpp, swiglu.cpp, add.cpp).
    // Grains: 16 weight rows are 128 KiB (f16) to 256 KiB (f32) of weights at n_embd 4096 and still
    // leave 4 ranges for a 64-wide toy model; per-token ops split by single tokens (a row is already
    // thousands of elements); attention splits by single (token, head) pairs.
    {"embedding", 2, false, embedding_infer, nullptr, embedding_work_items, 8, embedding_run, nullptr, nullptr,
     embedding_reference, embedding_flops},
    {"rmsnorm", 2, true, rmsnorm_infer, nullptr, rmsnorm_work_items, 1, rmsnorm_run, nullptr, nullptr,
     rmsnorm_reference, rmsnorm_flops},
    {"matmul_f32", 2, false, matmul_f32_infer, nullptr, matmul_f32_work_items, 16, matmul_f32_run, nullptr,
     nullptr, matmul_f32_reference, matmul_f32_flops},
    {"rope", 2, true, rope_infer, nullptr, rope_work_items, 1, rope_run, nullptr, nullptr, rope_reference,
     rope_flops},
    {"attention", 4, false, attention_infer, nullptr, attention_work_items, 1, attention_run, attention_prepare,
     attention_prepare_items, attention_reference, attention_flops},
    {"swiglu", 2, true, swiglu_infer, nullptr, swiglu_work_items, 1, swiglu_run, nullptr, nullptr,
     swiglu_reference, swiglu_flops},
    {"add", 2, true, add_infer, nullptr, add_work_items, 1, add_run, nullptr, nullptr, add_reference, add_flops},
    {"matmul_q8", 2, false, matmul_q8_infer, matmul_quant_scratch_bytes, matmul_quant_work_items, 32,
     matmul_q8_run, matmul_quant_prepare, matmul_quant_prepare_items, matmul_q8_reference, matmul_quant_flops},
    {"matmul_q4", 2, false, matmul_q4_infer, matmul_quant_scratch_bytes, matmul_quant_work_items, 32,
     matmul_q4_run, matmul_quant_prepare, matmul_quant_prepare_items, matmul_q4_reference, matmul_quant_flops},
    // Elementwise ops of GLU variants (ops/gelu.cpp, mul.cpp): split by single rows, like add.
    {"gelu", 1, true, gelu_infer, nullptr, gelu_work_items, 1, gelu_run, nullptr, nullptr, gelu_reference,
     gelu_flops},
    {"mul", 2, true, mul_infer, nullptr, mul_work_items, 1, mul_run, nullptr, nullptr, mul_reference, mul_flops},
};

}  // namespace

std::span<const OpDef> op_table() { return kOps; }

const OpDef* find_op(std::string_view kernel_name) {
    for (const OpDef& op : kOps)
        if (kernel_name == op.name) return &op;
    return nullptr;
}

const OpDef& choose_kernel(const NodeInfo& node) {
    std::string kernel = node.op;
    if (node.op == "matmul") {
        if (node.inputs.size() != 2) throw PlanError(node, "expects 2 inputs (x, weight), got " +
                                                           std::to_string(node.inputs.size()));
        switch (node.inputs[1].dtype) {
            case DType::F32:
            case DType::F16: kernel = "matmul_f32"; break;
            case DType::Q8_0: kernel = "matmul_q8"; break;
            case DType::Q4_0: kernel = "matmul_q4"; break;
            default:
                throw PlanError(node, std::string("no matmul kernel for weights of type ") +
                                          dtype_name(node.inputs[1].dtype));
        }
    }
    const OpDef* op = find_op(kernel);
    if (!op) throw PlanError(node, "unknown op '" + node.op + "'");
    return *op;
}

}  // namespace graphrun::ops
