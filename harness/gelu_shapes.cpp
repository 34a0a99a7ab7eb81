// harness/gelu_shapes.cpp — gelu's shapes for the op-table walk, ranks 1 to 3.
//   x (..., n) f32 -> y (same shape) f32
#include "harness/op_coverage.h"

namespace graphrun::testing {
namespace {

const bool gelu_registered = register_op_coverage({
    .row = "gelu",
    // The kernel's x / (1 + exp(-2u)) in float against the tanh formula in double (NMSE near 1e-14).
    .max_nmse = 1e-12,
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (int64_t t : {1, 3, 7})
                for (int64_t n : {1, 5, 100, 172})
                    s.push_back(same_shape_f32({t, n}, 1, uint32_t(t * 1000 + n), -12, 12));
            s.push_back(same_shape_f32({3, 5, 7}, 1, 9, -12, 12));
            s.push_back(same_shape_f32({37}, 1, 10, -12, 12));
            return s;
        },
    .bench_shapes =
        [] {  // GeGLU's gate at Llama-2-7B's feed-forward width
            return std::vector<OpShape>{same_shape_f32({1, 11008}, 1, 21, -4, 4),
                                        same_shape_f32({32, 11008}, 1, 21, -4, 4)};
        },
});

}  // namespace
}  // namespace graphrun::testing
