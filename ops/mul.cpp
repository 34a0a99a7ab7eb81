// ops/mul.cpp — elementwise product, the gate of GLU feed-forward blocks (GeGLU: mul(gelu(gate), up)).
//   a (..., n) f32, b (same shape) f32  ->  y (same shape) f32
//   y[i] = a[i] * b[i]
// Units: rows (all dimensions but the innermost). In place: y may be a's memory.
#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

TensorDesc mul_infer(const NodeInfo& node) {
    check_input_count(node, 2, "a, b");
    check_dtype(node, 0, "a", DType::F32);
    check_dtype(node, 1, "b", DType::F32);
    const TensorDesc &a = node.inputs[0], &b = node.inputs[1];
    if (a.shape.empty() || a.shape.size() > size_t(kMaxRank))
        throw PlanError(node,
                        "input 0 (a) must have rank 1 to " + std::to_string(kMaxRank) + ", got " + a.str());
    for (int64_t d : a.shape)
        if (d <= 0) throw PlanError(node, "input 0 (a) has an empty dimension: " + a.str());
    // No broadcasting: a weight-like b of shape (n) would need its own op (and its own reference).
    if (a.shape != b.shape)
        throw PlanError(node, "inputs must have the same shape, got a " + a.str() + " and b " + b.str());
    return {DType::F32, a.shape};
}

int64_t mul_work_items(const KernelArgs& args) {
    return args.in[0].rows();
}

void mul_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t n = args.in[0].cols();
    const float* a = args.in[0].as<float>();
    const float* b = args.in[1].as<float>();
    float* y = args.out.as<float>();
    // One flat loop over the range's rows, which the compiler vectorizes; in place (y == a) is safe
    // because each element is read before it is written.
    for (int64_t i = begin * n; i < end * n; ++i) y[i] = a[i] * b[i];
}

void mul_reference(const KernelArgs& args) {
    const int64_t rows = args.in[0].rows(), n = args.in[0].cols();
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i)
            args.out.as<float>()[r * n + i] =
                args.in[0].as<float>()[r * n + i] * args.in[1].as<float>()[r * n + i];
}

double mul_flops(const KernelArgs& args) {
    return double(args.in[0].n_elements());
}

}  // namespace

const OpDef kMulOp = {
    .name = "mul",
    .n_inputs = 2,
    .in_place = true,
    .infer = mul_infer,
    .work_items = mul_work_items,
    .grain = 1,
    .run = {.scalar = mul_run},
    .reference = mul_reference,
    .flops = mul_flops,
};

}  // namespace graphrun::ops
