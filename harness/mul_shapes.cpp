// harness/mul_shapes.cpp — mul's shapes for the op-table walk, ranks 1 to 3.
//   a (..., n) f32, b (same shape) f32 -> y (same shape) f32
#include "harness/op_coverage.h"

namespace graphrun::testing {
namespace {

const bool mul_registered = register_op_coverage({
    .row = "mul",
    .max_nmse = 0,  // one float multiply per element, as the reference
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (int64_t t : {1, 3, 7})
                for (int64_t n : {1, 5, 100})
                    s.push_back(same_shape_f32({t, n}, 2, uint32_t(7 * t + n), -3, 3));
            s.push_back(same_shape_f32({3, 5, 7}, 2, 11, -3, 3));
            s.push_back(same_shape_f32({37}, 2, 12, -3, 3));
            return s;
        },
    .bench_shapes =
        [] {  // GeGLU's gate times up at Llama-2-7B's feed-forward width
            return std::vector<OpShape>{same_shape_f32({1, 11008}, 2, 22), same_shape_f32({32, 11008}, 2, 22)};
        },
});

}  // namespace
}  // namespace graphrun::testing
