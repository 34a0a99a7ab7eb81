// ops/add.cpp — sums: elementwise (the residual connections) and a bias added to every row.
//   add:       a (..., n) f32, b (same shape) f32  ->  y (same shape) f32,   y[i] = a[i] + b[i]
//   add_bias:  x (n_tokens, n) f32, b (n) f32      ->  y (n_tokens, n) f32,  y[t,i] = x[t,i] + b[i]
// add_bias is Qwen2's bias on the Q, K and V projections; llama.cpp adds it with ggml_add broadcasting b
// over the rows, one float add per element, as here.
// Units: rows (all dimensions but the innermost). In place: y may be a's (x's) memory.
#include <cassert>

#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

TensorDesc add_infer(const NodeInfo& node) {
    check_input_count(node, 2, "a, b");
    check_dtype(node, 0, "a", DType::F32);
    check_dtype(node, 1, "b", DType::F32);
    const TensorDesc &a = node.inputs[0], &b = node.inputs[1];
    if (a.shape.empty()) throw PlanError(node, "input 0 (a) has no shape");
    if (a.shape != b.shape)
        throw PlanError(node, "inputs must have the same shape, got a " + a.str() + " and b " + b.str());
    return {DType::F32, a.shape};
}

int64_t add_work_items(const KernelArgs& args) {
    return args.in[0].rows();
}

void add_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t n = args.in[0].cols();
    const float* a = args.in[0].as<float>();
    const float* b = args.in[1].as<float>();
    float* y = args.out.as<float>();
    // Plain loop: with no aliasing between b and y the compiler vectorizes it; a and y may be one buffer,
    // which is fine because each element is read before it is written.
    for (int64_t i = begin * n; i < end * n; ++i) y[i] = a[i] + b[i];
}

void add_reference(const KernelArgs& args) {
    const int64_t rows = args.in[0].rows(), n = args.in[0].cols();
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i)
            args.out.as<float>()[r * n + i] =
                args.in[0].as<float>()[r * n + i] + args.in[1].as<float>()[r * n + i];
}

double add_flops(const KernelArgs& args) {
    return double(args.in[0].n_elements());
}

TensorDesc add_bias_infer(const NodeInfo& node) {
    check_input_count(node, 2, "x, bias");
    check_dtype(node, 0, "x", DType::F32);
    check_dtype(node, 1, "bias", DType::F32);
    check_rank(node, 0, "x", 2, "(n_tokens, n)");
    check_rank(node, 1, "bias", 1, "(n)");
    const TensorDesc &x = node.inputs[0], &b = node.inputs[1];
    if (b.shape[0] != x.shape[1])
        throw PlanError(node, "bias has " + std::to_string(b.shape[0]) + " elements, x rows have " +
                                  std::to_string(x.shape[1]));
    return {DType::F32, x.shape};
}

void add_bias_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t n = args.in[0].cols();
    const float* b = args.in[1].as<float>();
    for (int64_t t = begin; t < end; ++t) {
        const float* x = args.in[0].as<float>() + t * n;
        float* y = args.out.as<float>() + t * n;
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] + b[i];
    }
}

void add_bias_reference(const KernelArgs& args) {
    const int64_t rows = args.in[0].rows(), n = args.in[0].cols();
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t i = 0; i < n; ++i)
            args.out.as<float>()[t * n + i] = args.in[0].as<float>()[t * n + i] + args.in[1].as<float>()[i];
}

}  // namespace

const OpDef kAddBiasOp = {
    .name = "add_bias",
    .n_inputs = 2,
    .in_place = true,
    .infer = add_bias_infer,
    .work_items = add_work_items,
    .grain = 1,
    .run = {.scalar = add_bias_run},
    .reference = add_bias_reference,
    .flops = add_flops,
};

const OpDef kAddOp = {
    .name = "add",
    .n_inputs = 2,
    .in_place = true,
    .infer = add_infer,
    .work_items = add_work_items,
    .grain = 1,
    .run = {.scalar = add_run},
    .reference = add_reference,
    .flops = add_flops,
};

}  // namespace graphrun::ops
