// graph/repack.h — weights repacked at load for the GEMM that reads them fastest.
//
// A matmul weight whose type has a packed layout (QuantTraits::packed_layout; Q4_0 as q4_0x8,
// ops/quant/packed.h) gets a copy of its rows in that layout, once per loaded model, where this CPU's
// level has a GEMM for it (the AVX2 and AVX-512 lanes GEMMs). Plans at
// that level read the copy (the dump says `weight(q4_0x8)` and counts "weights repacked"), plans at
// any other level the mapping; both give the same bits, since the packed GEMM computes every output as
// the scalar vec_dot does. The mapped pages of a repacked weight are released, so the model takes
// the same memory as before.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace graphrun::graph {

// Repacks every weight of `graph` that all its readers read as their op's packed input (OpDef::packed_input:
// a matmul's weight; a tied token embedding, also read by the lookup, stays as stored), 2-D, of a type with a packed layout whose GEMM
// this process's SIMD level runs, and whose rows are whole groups of the layout. Sets
// GraphWeight::packed and releases the weight's mapped pages in `file`. The plan counts what was repacked
// (Plan::packed_weight_bytes).
void repack_weights(Graph& graph, const GgufFile& file);

// false when the environment sets GRAPHRUN_REPACK=0: every weight read as the file stores it.
bool repack_enabled();

}  // namespace graphrun::graph
