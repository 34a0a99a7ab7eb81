// ops/gelu.cpp — GELU activation, ggml's tanh approximation (the worked example of docs/adding-an-op.md).
//   x (..., n) f32  ->  y (same shape) f32
//   y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// This is the formula of ggml's ggml_gelu_f32, computed here in f32 for every x. (ggml's CPU backend by
// default rounds x to f16 and reads a precomputed table instead, so it differs from this by f16 rounding.)
// Units: rows (all dimensions but the innermost). In place: y may be x's memory.
#include <cmath>

#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;  // sqrt(2 / pi)
constexpr double kGeluCoefA = 0.044715;

TensorDesc gelu_infer(const NodeInfo& node) {
    check_input_count(node, 1, "x");
    check_dtype(node, 0, "x", DType::F32);
    const TensorDesc& x = node.inputs[0];
    if (x.shape.empty() || x.shape.size() > size_t(kMaxRank))
        throw PlanError(node,
                        "input 0 (x) must have rank 1 to " + std::to_string(kMaxRank) + ", got " + x.str());
    for (int64_t d : x.shape)
        if (d <= 0) throw PlanError(node, "input 0 (x) has an empty dimension: " + x.str());
    return {DType::F32, x.shape};
}

int64_t gelu_work_items(const KernelArgs& args) {
    return args.in[0].rows();
}

// 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)), so y = x / (1 + exp(-2u)): one expf instead of tanhf, and
// no cancellation in 1 + tanh(u) for large negative x. Below x ~ -10 exp overflows to inf and y = -0;
// x = +inf gives inf and x = -inf gives NaN, as the formula itself does.
void gelu_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t n = args.in[0].cols();
    const float* x = args.in[0].as<float>();
    float* y = args.out.as<float>();
    constexpr float k2 = float(2.0 * kSqrt2OverPi), k2a = float(2.0 * kSqrt2OverPi * kGeluCoefA);
    for (int64_t i = begin * n; i < end * n; ++i) {
        const float v = x[i];
        y[i] = v / (1.0f + std::exp(-v * (k2 + k2a * v * v)));
    }
}

// The formula as written, in double: what gelu_run is held against.
void gelu_reference(const KernelArgs& args) {
    const int64_t rows = args.in[0].rows(), n = args.in[0].cols();
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < n; ++i) {
            const double x = args.in[0].as<float>()[r * n + i];
            const double y = 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + kGeluCoefA * x * x * x)));
            args.out.as<float>()[r * n + i] = float(y);
        }
    }
}

// Counted as 7 per element, as gelu_run computes it: square, scale, add, multiply by -x, exp, add, divide.
double gelu_flops(const KernelArgs& args) {
    return 7.0 * double(args.in[0].n_elements());
}

}  // namespace

const OpDef kGeluOp = {
    .name = "gelu",
    .n_inputs = 1,
    .in_place = true,
    .infer = gelu_infer,
    .work_items = gelu_work_items,
    .grain = 1,
    .run = {.scalar = gelu_run},
    .reference = gelu_reference,
    .flops = gelu_flops,
};

}  // namespace graphrun::ops
