// ops/op_table.cpp — the single op table, TensorDesc helpers and kernel choice.
#include "ops/op_table.h"

#include <cstdio>
#include <vector>

#include "ops/op_rows.h"
#include "runtime/checked_math.h"

namespace graphrun::ops {

// Shapes come from model files and batch sizes: every product is checked (SizeError names the tensor shape).
int64_t TensorDesc::n_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n = checked_mul(n, d, [&] { return "elements of " + str(); });
    return n;
}

int64_t TensorDesc::nbytes() const {
    if (shape.empty()) return dtype_traits(dtype).block_bytes;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) rows = checked_mul(rows, shape[i], [&] { return "rows of " + str(); });
    return checked_mul(rows, row_bytes(dtype, shape.back()), [&] { return "bytes of " + str(); });
}

std::string TensorDesc::str() const {
    std::string s = std::string(dtype_name(dtype)) + " (";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + ")";
}

std::string attr_value_text(const AttrDecl& decl, const OpParams& params) {
    const double value = decl.get(params);
    if (decl.kind == AttrKind::Choice) {
        std::string_view choices = decl.choices;
        for (int i = 0; i < int(value); ++i) choices.remove_prefix(choices.find('|') + 1);
        return std::string(choices.substr(0, choices.find('|')));
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", value);
    return buf;
}

PlanError::PlanError(const NodeInfo& node, const std::string& what)
    : std::runtime_error("[" + node.op + "] node '" + node.name + "': " + what) {}

namespace {

// Every row, in the order the plan dump and the op harness list them. Grains, in each row: 16 weight
// rows are 128 KiB (f16) to 256 KiB (f32) of weights at n_embd 4096 and still leave 4 ranges for a
// 64-wide toy model; per-token ops split by single tokens (a row is already thousands of elements);
// attention splits by single (token, head) pairs.
constexpr const OpDef* kOps[] = {
    &kEmbeddingOp, &kRmsnormOp,  &kMatmulF32Op, &kRopeOp, &kAttentionOp, &kSwigluOp,
    &kAddOp,       &kMatmulQ8Op, &kMatmulQ4Op,  &kGeluOp, &kMulOp,
};

}  // namespace

std::span<const OpDef* const> op_table() {
    return kOps;
}

const OpDef* find_op(std::string_view kernel_name) {
    for (const OpDef* op : kOps)
        if (kernel_name == op->name) return op;
    return nullptr;
}

const OpDef* find_graph_op(std::string_view op) {
    for (const OpDef* row : kOps)
        if (op == row->op_name()) return row;
    return nullptr;
}

const OpDef& choose_kernel(const NodeInfo& node) {
    std::string kernel = node.op;
    if (node.op == "matmul") {
        if (node.inputs.size() != 2)
            throw PlanError(node, "expects 2 inputs (x, weight), got " + std::to_string(node.inputs.size()));
        switch (node.inputs[1].dtype) {
            case DType::F32:
            case DType::F16:
                kernel = "matmul_f32";
                break;
            case DType::Q8_0:
                kernel = "matmul_q8";
                break;
            case DType::Q4_0:
                kernel = "matmul_q4";
                break;
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
