// bench/op_walk_bench.h — the op-table walk as benchmarks (bench/op_walk_bench.cpp).
#pragma once

namespace graphrun::bench {

// Registers op/<row>/<shape>/<path> for every op-table row, Llama shape and kernel path this CPU has.
// Call after static initialisation (from main), when every harness/<family>_shapes.cpp has registered.
void register_op_walk_benchmarks();

}  // namespace graphrun::bench
