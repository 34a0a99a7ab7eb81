// ops/rope.cpp — rotary position embedding in ggml's two plain modes, with Llama 3.1's frequency factors.
//   x (n_tokens, n_head * head_dim) f32, positions (n_tokens) i32 [, freq_factors (head_dim / 2) f32]
//     ->  y (n_tokens, n_head * head_dim) f32
//   Within each head, pair i in [0, head_dim/2) turns by angle_i = theta_i / factor_i, where
//   theta_i = pos * base^(-2i/head_dim) and factor_i = freq_factors[i] (1 without that input):
//     y[a] = x[a] * cos(angle_i) - x[b] * sin(angle_i)
//     y[b] = x[a] * sin(angle_i) + x[b] * cos(angle_i)
//   mode normal (Llama): a = 2i,  b = 2i + 1          (ggml's GGML_ROPE_TYPE_NORMAL)
//   mode neox (Qwen2/3): a = i,   b = i + head_dim/2  (GGML_ROPE_TYPE_NEOX: the halves of the head turn)
// theta is computed exactly as ggml does, in float: theta_scale = powf(base, -2.0f / head_dim),
// theta_0 = (float)pos, theta_{i+1} = theta_i * theta_scale; then cosf/sinf of theta_i / factor_i
// (ggml_rope_cache_init; a factor of 1 and ggml's unit freq_scale and attn_factor change no bits). The
// repeated product drifts from the closed form at large positions; matching llama.cpp bit for bit matters
// more here. Llama 3.1+ files carry the factors as `rope_freqs.weight` (8 for the slowest pairs, 1 for the
// fastest, a smooth ramp between), so the model sees positions up to 8x farther than it was trained on.
// Units: tokens. In place: y may be x's memory (each pair is read before it is written).
#include "ops/rope.h"

#include <cmath>

#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

TensorDesc rope_infer(const NodeInfo& node) {
    check_input_count(node, 2, 3, "x, positions[, freq_factors]");
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
    if (p.mode != kRopeNormal && p.mode != kRopeNeox)
        throw PlanError(node, "mode must be normal (0) or neox (1), got " + std::to_string(p.mode));
    if (x.shape[1] != int64_t(p.n_head) * p.head_dim)
        throw PlanError(node, "x rows have " + std::to_string(x.shape[1]) + " elements, n_head " +
                                  std::to_string(p.n_head) + " * head_dim " + std::to_string(p.head_dim) +
                                  " = " + std::to_string(int64_t(p.n_head) * p.head_dim));
    if (pos.shape[0] != x.shape[0])
        throw PlanError(node, "positions has " + std::to_string(pos.shape[0]) + " entries, x has " +
                                  std::to_string(x.shape[0]) + " tokens");
    if (node.inputs.size() == 3) {
        check_dtype(node, 2, "freq_factors", DType::F32);
        check_rank(node, 2, "freq_factors", 1, "(head_dim / 2)");
        const int64_t n = node.inputs[2].shape[0];
        if (n != p.head_dim / 2)
            throw PlanError(node, input_label(2, "freq_factors") + " has " + std::to_string(n) +
                                      " elements, head_dim " + std::to_string(p.head_dim) + " needs " +
                                      std::to_string(p.head_dim / 2) + " (one per rotated pair)");
    }
    return {DType::F32, x.shape};
}

int64_t rope_work_items(const KernelArgs& args) {
    return args.in[0].rows();
}

void rope_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const RopeParams p = args.params.get<RopeParams>();
    const int n_head = p.n_head, head_dim = p.head_dim, half = head_dim / 2;
    const int64_t width = int64_t(n_head) * head_dim;
    // Pair i is (x[first], x[first + offset]) with first = i * step.
    const int step = p.mode == kRopeNeox ? 1 : 2, offset = p.mode == kRopeNeox ? half : 1;
    const float theta_scale = std::pow(p.base, -2.0f / float(head_dim));
    const int32_t* positions = args.in[1].as<int32_t>();
    const float* factors = args.n_in > 2 ? args.in[2].as<float>() : nullptr;
    for (int64_t t = begin; t < end; ++t) {
        const float* x = args.in[0].as<float>() + t * width;
        float* y = args.out.as<float>() + t * width;
        // Pair index outermost: each cos/sin is computed once per token and used for every head.
        float theta = float(positions[t]);
        for (int i = 0; i < half; ++i) {
            const float angle = factors ? theta / factors[i] : theta;
            const float c = std::cos(angle), s = std::sin(angle);
            const int a = i * step, b = a + offset;
            for (int64_t h = 0; h < n_head; ++h) {
                const float x0 = x[h * head_dim + a], x1 = x[h * head_dim + b];
                y[h * head_dim + a] = x0 * c - x1 * s;
                y[h * head_dim + b] = x0 * s + x1 * c;
            }
            theta *= theta_scale;
        }
    }
}

// Each mode spelled out on its own, head by head, as ggml's formula reads.
void rope_reference(const KernelArgs& args) {
    const RopeParams p = args.params.get<RopeParams>();
    const int n_head = p.n_head, head_dim = p.head_dim;
    const int64_t n_tokens = args.in[0].rows();
    const float theta_scale = std::pow(p.base, -2.0f / float(head_dim));
    const float* in = args.in[0].as<float>();
    float* out = args.out.as<float>();
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int h = 0; h < n_head; ++h) {
            const int64_t base = t * n_head * head_dim + int64_t(h) * head_dim;
            float theta = float(args.in[1].as<int32_t>()[t]);
            for (int i = 0; i < head_dim / 2; ++i) {
                const float factor = args.n_in > 2 ? args.in[2].as<float>()[i] : 1.0f;
                const float cos_a = std::cos(theta / factor), sin_a = std::sin(theta / factor);
                int64_t a = 0, b = 0;
                if (p.mode == kRopeNormal) {
                    a = base + 2 * i;
                    b = base + 2 * i + 1;
                } else {
                    a = base + i;
                    b = base + i + head_dim / 2;
                }
                const float x0 = in[a], x1 = in[b];
                out[a] = x0 * cos_a - x1 * sin_a;
                out[b] = x0 * sin_a + x1 * cos_a;
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
    choice_attr<&RopeParams::mode>("mode", "normal|neox",
                                   "which elements turn together: consecutive pairs (normal, the default) or "
                                   "i and i + head_dim/2 (neox)"),
};

const OpDef kRopeOp = {
    .name = "rope",
    .n_inputs = 2,
    .n_optional_inputs = 1,
    .in_place = true,
    .attrs = kRopeAttrs,
    .defaults = OpParams::of(RopeParams{}),
    .infer = rope_infer,
    .work_items = rope_work_items,
    .grain = 1,
    .run = {.scalar = rope_run},
    .reference = rope_reference,
    .flops = rope_flops,
};

}  // namespace graphrun::ops
