// harness/rope_shapes.cpp — rope's shapes for the op-table walk: both modes, with and without Llama 3.1's
// frequency factors.
//   x (T, n_head * head_dim) f32, positions (T) i32 [, freq_factors (head_dim / 2) f32] -> y like x
#include "harness/op_coverage.h"
#include "ops/rope.h"

namespace graphrun::testing {
namespace {

OpShape rope_shape(int64_t n_tokens, int n_head, int head_dim, int mode, bool factors, int32_t first_pos,
                   uint32_t seed) {
    const std::string label = "T" + std::to_string(n_tokens) + ".heads" + std::to_string(n_head) + "x" +
                              std::to_string(head_dim) + (mode == ops::kRopeNeox ? ".neox" : ".normal") +
                              (factors ? ".factors" : "");
    return {label, [=] {
                const int64_t width = int64_t(n_head) * head_dim;
                std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
                for (int64_t t = 0; t < n_tokens; ++t) pos[size_t(t)] = first_pos + int32_t(37 * t);
                OpCall c;
                c.in = {f32_tensor({n_tokens, width}, random_floats(size_t(n_tokens * width), seed)),
                        i32_tensor({n_tokens}, pos)};
                if (factors)
                    c.in.push_back(f32_tensor({head_dim / 2}, random_floats(size_t(head_dim / 2), seed + 1, 0.5f, 8)));
                c.out = output_tensor(DType::F32, {n_tokens, width});
                c.params = OpParams::of(
                    ops::RopeParams{.n_head = n_head, .head_dim = head_dim, .base = 10000.0f, .mode = mode});
                return op_case(std::move(c));
            }};
}

const bool rope_registered = register_op_coverage({
    .row = "rope",
    // The kernel does the reference's float arithmetic in another loop order: identical values.
    .max_nmse = 0,
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (int mode : {ops::kRopeNormal, ops::kRopeNeox})
                for (int64_t t : {1, 3, 7})
                    for (int hd : {2, 12, 64})
                        for (int n_head : {1, 3})
                            s.push_back(rope_shape(t, n_head, hd, mode, t == 3, 5, uint32_t(t * 100 + hd + n_head)));
            return s;
        },
    .bench_shapes =
        [] {
            // q of Llama-2-7B (32 heads of 128) at positions from 500.
            std::vector<OpShape> s;
            for (int mode : {ops::kRopeNormal, ops::kRopeNeox})
                for (int64_t t : {1, 32}) s.push_back(rope_shape(t, 32, 128, mode, false, 500, 3));
            s.push_back(rope_shape(32, 32, 128, ops::kRopeNormal, true, 500, 4));
            return s;
        },
});

}  // namespace
}  // namespace graphrun::testing
