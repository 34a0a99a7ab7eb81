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
    {"matmul_q8", 2, false, matmul_q8_infer, matmul_quant_scratch_bytes, matmul_quant_work_items, 32,
     matmul_q8_run, matmul_quant_prepare, matmul_quant_prepare_items, matmul_q8_reference, matmul_quant_flops},
    {"matmul_q4", 2, false, matmul_q4_infer, matmul_quant_scratch_bytes, matmul_quant_work_items, 32,
     matmul_q4_run, matmul_quant_prepare, matmul_quant_prepare_items, matmul_q4_reference, matmul_quant_flops},
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
