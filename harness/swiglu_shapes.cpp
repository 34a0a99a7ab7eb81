// harness/swiglu_shapes.cpp — swiglu's shapes for the op-table walk.
//   gate (T, n_ff) f32, up (T, n_ff) f32 -> y (T, n_ff) f32
#include "harness/op_coverage.h"

namespace graphrun::testing {
namespace {

const bool swiglu_registered = register_op_coverage({
    .row = "swiglu",
    // expf in float against the reference's: float rounding of the quotient and product only.
    .max_nmse = 1e-10,
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (int64_t t : {1, 3, 7})
                for (int64_t n : {3, 48, 100}) s.push_back(same_shape_f32({t, n}, 2, uint32_t(t + n), -4, 4));
            return s;
        },
    .bench_shapes =
        [] {  // Llama-2-7B's feed-forward width
            return std::vector<OpShape>{same_shape_f32({1, 11008}, 2, 9, -4, 4),
                                        same_shape_f32({32, 11008}, 2, 9, -4, 4)};
        },
});

}  // namespace
}  // namespace graphrun::testing
