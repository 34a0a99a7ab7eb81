// ops/op_table.h — the op table: one row per kernel, the only thing the planner knows of ops.
//
// An op is three small pieces (STYLE.md): shape/dtype inference run at plan time, a kernel that
// writes into memory it is given, and a plain-loop reference that tests hold the kernel against.
// Adding an op = writing those in ops/<family>.cpp and adding its row in ops/op_table.cpp.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/kernel.h"

namespace graphrun::ops {

// A tensor at plan time: dtype and shape (outermost first), no memory yet.
struct TensorDesc {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;

    int64_t n_elements() const;
    int64_t nbytes() const;  // row_bytes of the innermost dimension times the other dimensions
    std::string str() const;  // "f32 (5, 64)"
};

// What inference sees of a node: its name, op, input descriptions and typed params.
struct NodeInfo {
    std::string name;  // node id from the graph, e.g. "blk.3.attn_q"
    std::string op;    // op as written in the graph, e.g. "matmul"
    std::vector<TensorDesc> inputs;
    OpParams params;
};

// Errors read like "[rmsnorm] node 'blk.0.attn_norm': weight has 63 elements, input rows have 64".
class PlanError : public std::runtime_error {
public:
    PlanError(const NodeInfo& node, const std::string& what);
    using std::runtime_error::runtime_error;
};

struct OpDef {
    const char* name;  // kernel name as the plan dump shows it: "matmul_q8"
    int n_inputs;
    bool in_place;  // output may share input 0's memory (same shape and dtype, read before written)
    TensorDesc (*infer)(const NodeInfo& node);             // throws PlanError
    int64_t (*scratch_bytes)(const NodeInfo& node);        // may be nullptr: no scratch
    int64_t (*work_items)(const KernelArgs& args);         // units `run` is split over
    int64_t grain;                                         // smallest worthwhile range of units
    KernelFn run;
    KernelFn prepare;                                      // may be nullptr
    int64_t (*prepare_items)(const KernelArgs& args);      // may be nullptr when prepare is
    void (*reference)(const KernelArgs& args);             // the whole op as plain loops
    double (*flops)(const KernelArgs& args);               // for benchmarks and the plan dump
};

std::span<const OpDef> op_table();
const OpDef* find_op(std::string_view kernel_name);

// Picks the kernel for a graph op given its inputs: "matmul" with a Q8_0 weight -> "matmul_q8".
// Ops with a single kernel map to themselves. Throws PlanError for an unknown op or weight type.
const OpDef& choose_kernel(const NodeInfo& node);

}  // namespace graphrun::ops
