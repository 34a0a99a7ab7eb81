// ops/select_rows.cpp — the rows of a batch that go on (the ones whose logits are read).
//   x (n_tokens, n) f32, rows (n_rows) i32, each in [0, n_tokens)  ->  y (n_rows, n) f32, y[r] = x[rows[r]]
// The graph selects, before the final norm and the output matmul, the tokens whose logits the caller
// samples (the last of each sequence in the batch), so a long prompt does not pay the vocabulary-wide
// matmul for every token. Every later op works row by row, so a selected row's logits are the bits it
// would have had without the selection. Units: selected rows.
#include <cassert>
#include <cstring>
#include <limits>

#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

TensorDesc select_rows_infer(const NodeInfo& node) {
    check_input_count(node, 2, "x, rows");
    check_dtype(node, 0, "x", DType::F32);
    check_dtype(node, 1, "rows", DType::I32);
    check_rank(node, 0, "x", 2, "(n_tokens, n)");
    check_rank(node, 1, "rows", 1, "(n_rows)");
    if (node.inputs[1].shape[0] > node.inputs[0].shape[0])
        throw PlanError(node, "selects " + std::to_string(node.inputs[1].shape[0]) + " rows of " +
                                  std::to_string(node.inputs[0].shape[0]));
    return {DType::F32, {node.inputs[1].shape[0], node.inputs[0].shape[1]}};
}

int64_t select_rows_work_items(const KernelArgs& args) {
    return args.in[1].n_elements();
}

// A row index outside x is a bug upstream (the session fills `rows`): debug builds assert, release
// builds write NaN rather than read outside x, as the embedding does.
void select_rows_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t n = args.in[0].cols(), n_tokens = args.in[0].rows();
    const int32_t* rows = args.in[1].as<int32_t>();
    for (int64_t r = begin; r < end; ++r) {
        float* y = args.out.as<float>() + r * n;
        assert(0 <= rows[r] && rows[r] < n_tokens);
        if (rows[r] < 0 || rows[r] >= n_tokens) {
            for (int64_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
            continue;
        }
        std::memcpy(y, args.in[0].as<float>() + rows[r] * n, size_t(n) * sizeof(float));
    }
}

void select_rows_reference(const KernelArgs& args) {
    const int64_t n = args.in[0].cols(), n_tokens = args.in[0].rows();
    for (int64_t r = 0; r < args.in[1].n_elements(); ++r) {
        const int64_t row = args.in[1].as<int32_t>()[r];
        for (int64_t i = 0; i < n; ++i)
            args.out.as<float>()[r * n + i] = row >= 0 && row < n_tokens
                                                  ? args.in[0].as<float>()[row * n + i]
                                                  : std::numeric_limits<float>::quiet_NaN();
    }
}

double select_rows_flops(const KernelArgs&) {
    return 0.0;
}

}  // namespace

const OpDef kSelectRowsOp = {
    .name = "select_rows",
    .n_inputs = 2,
    .infer = select_rows_infer,
    .work_items = select_rows_work_items,
    .grain = 8,
    .run = {.scalar = select_rows_run},
    .reference = select_rows_reference,
    .flops = select_rows_flops,
};

}  // namespace graphrun::ops
