// ops/rmsnorm.cpp — RMS normalisation, one row (or one group of a row) at a time.
//   x (n_tokens, n) f32, w (g) f32  ->  y (n_tokens, n) f32, g = group (n when group is 0)
//   for each run r of g elements of a row (the whole row when group is 0):
//     y[t,r,i] = (x[t,r,i] * (1 / sqrt(mean_i(x[t,r,i]^2) + eps))) * w[i]
// group = head_dim is Qwen3's QK-norm: q (n_tokens, n_head * head_dim) normalised head by head with one
// weight of head_dim elements, what llama.cpp does by viewing q as (n_tokens * n_head, head_dim) rows.
// Numerics follow llama.cpp: each square is a float product, the squares are summed in double, the
// mean is rounded to float, scale = 1.0f / sqrtf(mean + eps); x*scale is rounded before the weight
// multiply (ggml does rms_norm and the weight multiply as two ops, or fused in that order).
// Units: tokens. In place: y may be x's memory (a group is fully read before it is written).
#include "ops/rmsnorm.h"

#include <cmath>

#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

TensorDesc rmsnorm_infer(const NodeInfo& node) {
    check_input_count(node, 2, "x, weight");
    check_dtype(node, 0, "x", DType::F32);
    check_dtype(node, 1, "weight", DType::F32);
    check_rank(node, 0, "x", 2, "(n_tokens, n)");
    check_rank(node, 1, "weight", 1, "(n)");
    const TensorDesc &x = node.inputs[0], &w = node.inputs[1];
    const int group = node.params.get<RmsnormParams>().group;
    if (group < 0) throw PlanError(node, "group must be >= 0, got " + std::to_string(group));
    if (group == 0) {
        if (w.shape[0] != x.shape[1])
            throw PlanError(node, "weight has " + std::to_string(w.shape[0]) + " elements, input rows have " +
                                      std::to_string(x.shape[1]));
        return {DType::F32, x.shape};
    }
    if (x.shape[1] % group != 0)
        throw PlanError(node, "input rows have " + std::to_string(x.shape[1]) +
                                  " elements, not a whole number of groups of " + std::to_string(group));
    if (w.shape[0] != group)
        throw PlanError(node, "weight has " + std::to_string(w.shape[0]) + " elements, groups have " +
                                  std::to_string(group));
    return {DType::F32, x.shape};
}

int64_t rmsnorm_work_items(const KernelArgs& args) {
    return args.in[0].rows();
}

void rmsnorm_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const RmsnormParams p = args.params.get<RmsnormParams>();
    const int64_t row = args.in[0].cols(), n = p.group > 0 ? p.group : row;
    const float* w = args.in[1].as<float>();
    const float eps = p.eps;
    // Groups of consecutive rows are consecutive groups: tokens [begin, end) are groups
    // [begin * row / n, end * row / n).
    for (int64_t g = begin * (row / n); g < end * (row / n); ++g) {
        const float* x = args.in[0].as<float>() + g * n;
        float* y = args.out.as<float>() + g * n;
        // Four double partial sums break the add-latency chain; the result differs from one serial
        // double sum only in double rounding, far below the float the mean is rounded to.
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) {
            s0 += double(x[i] * x[i]);
            s1 += double(x[i + 1] * x[i + 1]);
            s2 += double(x[i + 2] * x[i + 2]);
            s3 += double(x[i + 3] * x[i + 3]);
        }
        for (; i < n; ++i) s0 += double(x[i] * x[i]);
        const float mean = float((s0 + s1 + s2 + s3) / double(n));
        const float scale = 1.0f / std::sqrt(mean + eps);
        for (int64_t j = 0; j < n; ++j) y[j] = (x[j] * scale) * w[j];
    }
}

void rmsnorm_reference(const KernelArgs& args) {
    const RmsnormParams p = args.params.get<RmsnormParams>();
    const int64_t rows = args.in[0].rows(), row = args.in[0].cols();
    const int64_t n = p.group > 0 ? p.group : row;
    for (int64_t t = 0; t < rows; ++t) {
        for (int64_t g = 0; g < row / n; ++g) {
            const int64_t start = t * row + g * n;
            const float* x = args.in[0].as<float>() + start;
            double sum = 0;
            for (int64_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
            const float mean = float(sum / double(n));
            const float scale = 1.0f / std::sqrt(mean + p.eps);
            for (int64_t i = 0; i < n; ++i)
                args.out.as<float>()[start + i] = (x[i] * scale) * args.in[1].as<float>()[i];
        }
    }
}

// Square, add, scale, weight: 4 per element.
double rmsnorm_flops(const KernelArgs& args) {
    return 4.0 * double(args.in[0].n_elements());
}

}  // namespace

constexpr AttrDecl kRmsnormAttrs[] = {
    float_attr<&RmsnormParams::eps>("eps", 0.0, 1.0, "added to the mean square before the square root"),
    int_attr<&RmsnormParams::group>("group", 0, kMaxHeadDim,
                                    "normalise each run of this many elements on its own, with a weight of "
                                    "that length (QK-norm: head_dim); 0, the default: the whole row",
                                    Optional),
};

const OpDef kRmsnormOp = {
    .name = "rmsnorm",
    .n_inputs = 2,
    .in_place = true,
    .attrs = kRmsnormAttrs,
    .defaults = OpParams::of(RmsnormParams{}),
    .infer = rmsnorm_infer,
    .work_items = rmsnorm_work_items,
    .grain = 1,
    .run = {.scalar = rmsnorm_run},
    .reference = rmsnorm_reference,
    .flops = rmsnorm_flops,
};

}  // namespace graphrun::ops
