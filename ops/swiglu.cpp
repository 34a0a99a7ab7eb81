// ops/swiglu.cpp — the gated activation of Llama's feed-forward block.
//   gate (n_tokens, n_ff) f32, up (n_tokens, n_ff) f32  ->  y (n_tokens, n_ff) f32
//   y = silu(gate) * up,  silu(x) = x / (1 + exp(-x))   (expf in float, as ggml's silu)
// Units: tokens. In place: y may be gate's memory.
#include <cmath>

#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

TensorDesc swiglu_infer(const NodeInfo& node) {
    check_input_count(node, 2, "gate, up");
    check_dtype(node, 0, "gate", DType::F32);
    check_dtype(node, 1, "up", DType::F32);
    check_rank(node, 0, "gate", 2, "(n_tokens, n_ff)");
    check_rank(node, 1, "up", 2, "(n_tokens, n_ff)");
    const TensorDesc &gate = node.inputs[0], &up = node.inputs[1];
    if (gate.shape != up.shape)
        throw PlanError(node, "gate " + gate.str() + " and up " + up.str() + " must have the same shape");
    return {DType::F32, gate.shape};
}

int64_t swiglu_work_items(const KernelArgs& args) {
    return args.in[0].rows();
}

void swiglu_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t n = args.in[0].cols();
    const float* gate = args.in[0].as<float>();
    const float* up = args.in[1].as<float>();
    float* y = args.out.as<float>();
    for (int64_t i = begin * n; i < end * n; ++i) {
        const float g = gate[i];
        y[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

void swiglu_reference(const KernelArgs& args) {
    const int64_t rows = args.in[0].rows(), n = args.in[0].cols();
    for (int64_t t = 0; t < rows; ++t) {
        for (int64_t i = 0; i < n; ++i) {
            const float g = args.in[0].as<float>()[t * n + i];
            const float silu = g / (1.0f + std::exp(-g));
            args.out.as<float>()[t * n + i] = silu * args.in[1].as<float>()[t * n + i];
        }
    }
}

// Counted as 5 per element: negate, exp, add, divide, multiply.
double swiglu_flops(const KernelArgs& args) {
    return 5.0 * double(args.in[0].n_elements());
}

}  // namespace

const OpDef kSwigluOp = {
    .name = "swiglu",
    .n_inputs = 2,
    .in_place = true,
    .infer = swiglu_infer,
    .work_items = swiglu_work_items,
    .grain = 1,
    .run = {.scalar = swiglu_run},
    .reference = swiglu_reference,
    .flops = swiglu_flops,
};

}  // namespace graphrun::ops
