// ops/op_rows.h — the functions behind each op-table row, and the rows themselves.
// Each op family lists its functions here and adds its rows to GRAPHRUN_OP_ROWS.
#pragma once

#include "ops/op_table.h"

namespace graphrun::ops {
// (families add their declarations below)
}  // namespace graphrun::ops

// Row fields: name, n_inputs, in_place, infer, scratch_bytes, work_items, grain, run, prepare,
//             prepare_items, reference, flops.
#define GRAPHRUN_OP_ROWS
