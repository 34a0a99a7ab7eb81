// ops/op_table.cpp — the single op table, TensorDesc helpers and kernel choice.
#include "ops/op_table.h"

#include <cstdio>
#include <vector>

#include "ops/op_rows.h"
#include "ops/quant/traits.h"
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
    if (decl.kind == AttrKind::Choice) return std::string(choice_word(decl.choices, int(value)));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", value);
    return buf;
}

std::string_view choice_word(std::string_view choices, int index) {
    for (int i = 0; i < index; ++i) choices.remove_prefix(choices.find('|') + 1);
    return choices.substr(0, choices.find('|'));
}

int choice_index(std::string_view choices, std::string_view word) {
    for (int index = 0;; ++index) {
        const size_t bar = choices.find('|');
        if (choices.substr(0, bar) == word) return index;
        if (bar == std::string_view::npos) return -1;
        choices.remove_prefix(bar + 1);
    }
}

PlanError::PlanError(const NodeInfo& node, const std::string& what)
    : std::runtime_error("[" + node.op + "] node '" + node.name + "': " + what) {}

namespace {

// Every row, in the order the plan dump and the op harness list them. Grains, in each row: 16 weight
// rows are 128 KiB (f16) to 256 KiB (f32) of weights at n_embd 4096 and still leave 4 ranges for a
// 64-wide toy model; per-token ops split by single tokens (a row is already thousands of elements);
// attention splits by single (token, head) pairs. The quantized matmuls are one row per weight type,
// made from the type traits (matmul_quant_rows), so a new type needs no edit here.
const std::vector<const OpDef*>& all_ops() {
    static const std::vector<const OpDef*> ops = [] {
        std::vector<const OpDef*> v = {&kEmbeddingOp, &kRmsnormOp, &kMatmulF32Op, &kRopeOp,
                                       &kAttentionOp, &kSwigluOp,  &kAddOp};
        for (const OpDef& row : matmul_quant_rows()) v.push_back(&row);
        v.insert(v.end(), {&kGeluOp, &kMulOp, &kAddBiasOp, &kKvWriteOp, &kSelectRowsOp});
        return v;
    }();
    return ops;
}

// "blk.0.ffn_down.weight" when the planner said which tensor input `i` is, else "input i".
std::string input_name(const NodeInfo& node, size_t i) {
    if (i < node.input_names.size() && !node.input_names[i].empty()) return "'" + node.input_names[i] + "'";
    return "input " + std::to_string(i);
}

// The kernel of "matmul" for a weight type: matmul_f32 for the float types, else the quantized row its
// traits name; every other type is refused here, naming the tensor, its type and what does run.
const OpDef& choose_matmul(const NodeInfo& node) {
    if (node.inputs.size() != 2)
        throw PlanError(node, "expects 2 inputs (x, weight), got " + std::to_string(node.inputs.size()));
    const TensorDesc& w = node.inputs[1];
    if (w.dtype == DType::F32 || w.dtype == DType::F16) return kMatmulF32Op;
    const QuantTraits* traits = quant_traits(w.dtype);
    if (traits && traits->matmul_kernel)
        if (const OpDef* op = find_op(traits->matmul_kernel)) return *op;
    throw PlanError(node, "weight " + input_name(node, 1) + " is " + w.str() + ": graphrun has no matmul kernel for " +
                              dtype_name(w.dtype) + " weights (it multiplies " + runnable_weight_type_names() + ")");
}

}  // namespace

std::span<const OpDef* const> op_table() {
    return all_ops();
}

const OpDef* find_op(std::string_view kernel_name) {
    for (const OpDef* op : all_ops())
        if (kernel_name == op->name) return op;
    return nullptr;
}

const OpDef* find_graph_op(std::string_view op) {
    for (const OpDef* row : all_ops())
        if (op == row->op_name()) return row;
    return nullptr;
}

const OpDef& choose_kernel(const NodeInfo& node) {
    if (node.op == "matmul") return choose_matmul(node);
    const OpDef* op = find_op(node.op);
    if (!op) throw PlanError(node, "unknown op '" + node.op + "'");
    return *op;
}

}  // namespace graphrun::ops
