// ops/op_rows.h — the functions behind each row of the op table (ops/op_table.cpp).
// Each op family declares here what its row points at; the definitions live in ops/<family>.cpp.
#pragma once

#include "ops/op_table.h"

namespace graphrun::ops {

}  // namespace graphrun::ops
