// harness/rmsnorm_shapes.cpp — rmsnorm's shapes for the op-table walk: whole rows and groups (QK-norm).
//   x (T, n) f32, w (n or group) f32 -> y (T, n) f32
#include "harness/op_coverage.h"
#include "ops/rmsnorm.h"

namespace graphrun::testing {
namespace {

// group 0: the whole row is one group, w (n).
OpShape rmsnorm_shape(int64_t n_tokens, int64_t n, int group, uint32_t seed) {
    std::string label = "T" + std::to_string(n_tokens) + ".n" + std::to_string(n);
    if (group) label += ".group" + std::to_string(group);
    return {label, [=] {
                const int64_t w = group ? group : n;
                OpCall c;
                c.in = {f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), seed, -3, 3)),
                        f32_tensor({w}, random_floats(size_t(w), seed + 1, 0.5f, 1.5f))};
                c.out = output_tensor(DType::F32, {n_tokens, n});
                c.params = OpParams::of(ops::RmsnormParams{.eps = 1e-5f, .group = group});
                return op_case(std::move(c));
            }};
}

const bool rmsnorm_registered = register_op_coverage({
    .row = "rmsnorm",
    // The kernel's partial double sums against one serial sum: double rounding, far below float's.
    .max_nmse = 1e-10,
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (int64_t t : {1, 3, 7})
                for (int64_t n : {5, 48, 100}) s.push_back(rmsnorm_shape(t, n, 0, uint32_t(t * 1000 + n)));
            for (int group : {1, 6, 100}) s.push_back(rmsnorm_shape(3, 3 * group, group, uint32_t(group)));
            return s;
        },
    .bench_shapes =
        [] {
            // The block norms at n_embd 4096, and Qwen3's QK-norm over 32 heads of 128.
            return std::vector<OpShape>{rmsnorm_shape(1, 4096, 0, 1), rmsnorm_shape(32, 4096, 0, 2),
                                        rmsnorm_shape(32, 4096, 128, 3)};
        },
});

}  // namespace
}  // namespace graphrun::testing
