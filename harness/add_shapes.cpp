// harness/add_shapes.cpp — add's and add_bias's shapes for the op-table walk.
//   add:       a (..., n) f32, b (same shape) f32 -> y (same shape) f32
//   add_bias:  x (T, n) f32, b (n) f32            -> y (T, n) f32
#include "harness/op_coverage.h"

namespace graphrun::testing {
namespace {

OpShape add_bias_shape(int64_t n_tokens, int64_t n, uint32_t seed) {
    return {shape_label({n_tokens, n}), [=] {
                OpCall c;
                c.in = {f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), seed, -6, 6)),
                        f32_tensor({n}, random_floats(size_t(n), seed + 1, -2, 2))};
                c.out = output_tensor(DType::F32, {n_tokens, n});
                return op_case(std::move(c));
            }};
}

const bool add_registered = register_op_coverage({
    .row = "add",
    .max_nmse = 0,  // one float add per element, as the reference
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (int64_t t : {1, 3, 7})
                for (int64_t n : {1, 48, 100}) s.push_back(same_shape_f32({t, n}, 2, uint32_t(7 * t + n)));
            s.push_back(same_shape_f32({3, 5, 7}, 2, 5));
            return s;
        },
    .bench_shapes =
        [] {  // the residual adds at n_embd 4096
            return std::vector<OpShape>{same_shape_f32({1, 4096}, 2, 1), same_shape_f32({32, 4096}, 2, 1)};
        },
});

const bool add_bias_registered = register_op_coverage({
    .row = "add_bias",
    .max_nmse = 0,  // one float add per element, as the reference
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (int64_t t : {1, 3, 7})
                for (int64_t n : {1, 5, 72, 100}) s.push_back(add_bias_shape(t, n, uint32_t(3 * t + n)));
            return s;
        },
    .bench_shapes =
        [] {  // Qwen2's q bias at 8B widths
            return std::vector<OpShape>{add_bias_shape(1, 4096, 1), add_bias_shape(32, 4096, 1)};
        },
});

}  // namespace
}  // namespace graphrun::testing
