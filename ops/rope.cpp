// ops/rope.cpp — rotary position embedding, llama.cpp's "normal" mode (the one LLM_ARCH_LLAMA uses).
//   x (n_tokens, n_head * head_dim) f32, positions (n_tokens) i32  ->  y (n_tokens, n_head * head_dim) f32
//   Within each head, consecutive pairs (x[2i], x[2i+1]), i in [0, head_dim/2), turn by
//   theta_i = pos * base^(-2i/head_dim):
//     y[2i]   = x[2i] * cos(theta_i) - x[2i+1] * sin(theta_i)
//     y[2i+1] = x[2i] * sin(theta_i) + x[2i+1] * cos(theta_i)
// theta is computed exactly as ggml does, in float: theta_scale = powf(base, -2.0f / head_dim),
// theta_0 = (float)pos, theta_{i+1} = theta_i * theta_scale; cosf/sinf of that. The repeated product
// drifts from the closed form at large positions; matching llama.cpp bit for bit matters more here.
// Units: tokens. In place: y may be x's memory (each pair is read before it is written).
#include "ops/rope.h"

#include <cmath>

#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

TensorDesc rope_infer(const NodeInfo& node) {
    check_input_count(node, 2, "x, positions");
    check_dtype(node, 0, "x", DType::F32);
    check_dtype(node, 1, "positions", DType::I32);
    check_rank(node, 0, "x", 2, "(n_tokens, n_head * head_dim)");
    check_rank(node, 1, "positions", 1, "(n_tokens)");
    const TensorDesc &x = node.inputs[0], &pos = node.inputs[1];
    const RopeParams p = node.params.get<RopeParams>();
    if (p.n_head <= 0 || p.head_dim <= 0)
        throw PlanError(node, "n_head and head_dim must be > 0, got n_head " + std::to_string(p.n_head) +
                                  ", head_dim " + std::to_string(p.head_dim));
    if (p.head_dim % 2 != 0)
        throw PlanError(node, "head_dim must be even (pairs are rotated), got " + std::to_string(p.head_dim));
    if (x.shape[1] != int64_t(p.n_head) * p.head_dim)
        throw PlanError(node, "x rows have " + std::to_string(x.shape[1]) + " elements, n_head " +
                                  std::to_string(p.n_head) + " * head_dim " + std::to_string(p.head_dim) +
                                  " = " + std::to_string(int64_t(p.n_head) * p.head_dim));
    if (pos.shape[0] != x.shape[0])
        throw PlanError(node, "positions has " + std::to_string(pos.shape[0]) + " entries, x has " +
                                  std::to_string(x.shape[0]) + " tokens");
    return {DType::F32, x.shape};
}

int64_t rope_work_items(const KernelArgs& args) {
    return args.in[0].rows();
}

void rope_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const RopeParams p = args.params.get<RopeParams>();
    const int n_head = p.n_head, head_dim = p.head_dim;
    const int64_t width = int64_t(n_head) * head_dim;
    const float theta_scale = std::pow(p.base, -2.0f / float(head_dim));
    const int32_t* positions = args.in[1].as<int32_t>();
    for (int64_t t = begin; t < end; ++t) {
        const float* x = args.in[0].as<float>() + t * width;
        float* y = args.out.as<float>() + t * width;
        // Pair index outermost: each cos/sin is computed once per token and used for every head.
        float theta = float(positions[t]);
        for (int i = 0; i < head_dim; i += 2) {
            const float c = std::cos(theta), s = std::sin(theta);
            for (int64_t h = 0; h < n_head; ++h) {
                const float x0 = x[h * head_dim + i], x1 = x[h * head_dim + i + 1];
                y[h * head_dim + i] = x0 * c - x1 * s;
                y[h * head_dim + i + 1] = x0 * s + x1 * c;
            }
            theta *= theta_scale;
        }
    }
}

void rope_reference(const KernelArgs& args) {
    const RopeParams p = args.params.get<RopeParams>();
    const int n_head = p.n_head, head_dim = p.head_dim;
    const int64_t n_tokens = args.in[0].rows();
    const float theta_scale = std::pow(p.base, -2.0f / float(head_dim));
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int h = 0; h < n_head; ++h) {
            const int64_t base = t * n_head * head_dim + int64_t(h) * head_dim;
            float theta = float(args.in[1].as<int32_t>()[t]);
            for (int i = 0; i < head_dim / 2; ++i) {
                const float x0 = args.in[0].as<float>()[base + 2 * i];
                const float x1 = args.in[0].as<float>()[base + 2 * i + 1];
                args.out.as<float>()[base + 2 * i] = x0 * std::cos(theta) - x1 * std::sin(theta);
                args.out.as<float>()[base + 2 * i + 1] = x0 * std::sin(theta) + x1 * std::cos(theta);
                theta *= theta_scale;
            }
        }
    }
}

// Per element: two multiplies and an add (the cos/sin are per pair and token, not counted).
double rope_flops(const KernelArgs& args) {
    return 3.0 * double(args.in[0].n_elements());
}

}  // namespace

constexpr AttrDecl kRopeAttrs[] = {
    int_attr<&RopeParams::n_head>("n_head", 1, kMaxHeads, "heads in each row of x"),
    int_attr<&RopeParams::head_dim>("head_dim", 2, kMaxHeadDim, "elements per head (even)"),
    float_attr<&RopeParams::base>("rope_base", 1e-3, 1e12, "theta base (default 10000)", Optional),
};

const OpDef kRopeOp = {
    .name = "rope",
    .n_inputs = 2,
    .in_place = true,
    .attrs = kRopeAttrs,
    .defaults = OpParams::of(RopeParams{}),
    .infer = rope_infer,
    .work_items = rope_work_items,
    .grain = 1,
    .run = rope_run,
    .reference = rope_reference,
    .flops = rope_flops,
};

}  // namespace graphrun::ops
