// ops/op_checks.h — small checks that infer functions share, so every PlanError reads the same way:
//   "[rmsnorm] node 'blk.0.attn_norm': input 1 (weight) must be f32, got f16 (64)".
// Plan time only; kernels never include this.
#pragma once

#include <initializer_list>
#include <string>

#include "ops/op_table.h"

namespace graphrun::ops {

// "input 1 (weight)"
inline std::string input_label(int index, const char* name) {
    return "input " + std::to_string(index) + " (" + name + ")";
}

inline void check_input_count(const NodeInfo& node, size_t expected, const char* names) {
    if (node.inputs.size() != expected)
        throw PlanError(node, "expects " + std::to_string(expected) + " inputs (" + names + "), got " +
                                  std::to_string(node.inputs.size()));
}

// For ops with optional trailing inputs: between `min` and `max` inputs.
inline void check_input_count(const NodeInfo& node, size_t min, size_t max, const char* names) {
    if (node.inputs.size() < min || node.inputs.size() > max)
        throw PlanError(node, "expects " + std::to_string(min) + (max == min + 1 ? " or " : " to ") +
                                  std::to_string(max) + " inputs (" + names + "), got " +
                                  std::to_string(node.inputs.size()));
}

inline void check_dtype(const NodeInfo& node, int index, const char* name, DType expected) {
    const TensorDesc& t = node.inputs[index];
    if (t.dtype != expected)
        throw PlanError(node,
                        input_label(index, name) + " must be " + dtype_name(expected) + ", got " + t.str());
}

inline void check_dtype_in(const NodeInfo& node, int index, const char* name,
                           std::initializer_list<DType> allowed) {
    const TensorDesc& t = node.inputs[index];
    std::string names;
    for (DType d : allowed) {
        if (d == t.dtype) return;
        if (!names.empty()) names += '/';
        names += dtype_name(d);
    }
    throw PlanError(node, input_label(index, name) + " must be " + names + ", got " + t.str());
}

// `dims` spells the expected shape for the message, e.g. "(n_tokens, n_embd)".
inline void check_rank(const NodeInfo& node, int index, const char* name, size_t rank, const char* dims) {
    const TensorDesc& t = node.inputs[index];
    if (t.shape.size() != rank)
        throw PlanError(node, input_label(index, name) + " must have rank " + std::to_string(rank) + " " +
                                  dims + ", got " + t.str());
    for (int64_t d : t.shape)
        if (d <= 0) throw PlanError(node, input_label(index, name) + " has an empty dimension: " + t.str());
}

}  // namespace graphrun::ops
