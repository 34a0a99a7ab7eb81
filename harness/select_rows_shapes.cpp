// harness/select_rows_shapes.cpp — select_rows' shapes for the op-table walk.
//   x (T, n) f32, rows (n_rows) i32 in [0, T) -> y (n_rows, n) f32
#include "harness/op_coverage.h"

namespace graphrun::testing {
namespace {

OpShape select_rows_shape(int64_t n_tokens, int64_t n, std::vector<int32_t> rows, uint32_t seed) {
    const std::string label = "T" + std::to_string(n_tokens) + ".n" + std::to_string(n) + ".rows" + std::to_string(rows.size());
    return {label, [=] {
                OpCall c;
                c.in = {f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), seed)),
                        i32_tensor({int64_t(rows.size())}, rows)};
                c.out = output_tensor(DType::F32, {int64_t(rows.size()), n});
                return op_case(std::move(c));
            }};
}

// The selected rows read and written, and the row list.
double select_rows_bytes(const OpCase& c) {
    return 2.0 * double(c.call.out.bytes.size()) + double(c.call.in[1].bytes.size());
}

const bool select_rows_registered = register_op_coverage({
    .row = "select_rows",
    .max_nmse = 0,  // a copy
    .test_shapes =
        [] {
            return std::vector<OpShape>{select_rows_shape(1, 5, {0}, 1), select_rows_shape(7, 100, {6}, 2),
                                        select_rows_shape(7, 37, {2, 6, 0, 6}, 3),
                                        select_rows_shape(9, 48, {0, 1, 2, 3, 4, 5, 6, 7, 8}, 4)};
        },
    .bench_shapes =
        [] {  // the last token of a 32-token prompt, and of 4 sequences in one batch, at n_embd 4096
            return std::vector<OpShape>{select_rows_shape(32, 4096, {31}, 1),
                                        select_rows_shape(32, 4096, {7, 15, 23, 31}, 2)};
        },
    .bytes_moved = select_rows_bytes,
});

}  // namespace
}  // namespace graphrun::testing
