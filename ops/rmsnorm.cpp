// ops/rmsnorm.cpp — RMS normalisation, one row per token.
//   x (n_tokens, n) f32, w (n) f32  ->  y (n_tokens, n) f32
//   y[t,i] = (x[t,i] * (1 / sqrt(mean_i(x[t,i]^2) + eps))) * w[i]
// Numerics follow llama.cpp: each square is a float product, the squares are summed in double, the
// mean is rounded to float, scale = 1.0f / sqrtf(mean + eps); x*scale is rounded before the weight
// multiply (ggml does rms_norm and the weight multiply as two ops).
// Units: tokens. In place: y may be x's memory (a row is fully read before it is written).
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
    if (w.shape[0] != x.shape[1])
        throw PlanError(node, "weight has " + std::to_string(w.shape[0]) + " elements, input rows have " +
                                  std::to_string(x.shape[1]));
    return {DType::F32, x.shape};
}

int64_t rmsnorm_work_items(const KernelArgs& args) {
    return args.in[0].rows();
}

void rmsnorm_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t n = args.in[0].cols();
    const float* w = args.in[1].as<float>();
    const float eps = args.params.get<RmsnormParams>().eps;
    for (int64_t t = begin; t < end; ++t) {
        const float* x = args.in[0].as<float>() + t * n;
        float* y = args.out.as<float>() + t * n;
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
    const int64_t rows = args.in[0].rows(), n = args.in[0].cols();
    const float eps = args.params.get<RmsnormParams>().eps;
    for (int64_t t = 0; t < rows; ++t) {
        const float* x = args.in[0].as<float>() + t * n;
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
        const float mean = float(sum / double(n));
        const float scale = 1.0f / std::sqrt(mean + eps);
        for (int64_t i = 0; i < n; ++i)
            args.out.as<float>()[t * n + i] = (x[i] * scale) * args.in[1].as<float>()[i];
    }
}

// Square, add, scale, weight: 4 per element.
double rmsnorm_flops(const KernelArgs& args) {
    return 4.0 * double(args.in[0].n_elements());
}

}  // namespace

constexpr AttrDecl kRmsnormAttrs[] = {
    float_attr<&RmsnormParams::eps>("eps", 0.0, 1.0, "added to the mean square before the square root"),
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
    .run = rmsnorm_run,
    .reference = rmsnorm_reference,
    .flops = rmsnorm_flops,
};

}  // namespace graphrun::ops
