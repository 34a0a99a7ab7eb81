// harness/op_coverage.h — what the op-table walk knows of every op-table row, declared beside the table
// (test data stays out of the shipped library): the NMSE bound its kernel is held to against the row's
// `reference`, and its shape generators, small odd shapes for the test and Llama shapes for the benchmark.
//
//   tests/ops/op_table_walk_test.cpp (OpTableWalk.*)  every row, every kernel path this CPU has, every test
//                                                 shape, whole and split ranges: kernel == reference
//   bench/op_walk_bench.cpp (op/<row>/<shape>/<path>)  the same rows at the Llama shapes: bytes/s, FLOP/s
//
// A row's coverage lives in harness/<family>_shapes.cpp and registers itself:
//   const bool registered = register_op_coverage({.row = "gelu", .max_nmse = 1e-12, .test_shapes = ...});
// so covering a new op is that one file (docs/adding-an-op.md). A row without coverage, a reference or a
// shape fails the walk by name.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/op_call.h"
#include "ops/cpu.h"

namespace graphrun::testing {

// One call of an op with every buffer it touches: inputs (planned state such as the KV cache among
// them), output and scratch. Copies are independent.
struct OpCase {
    OpCall call;
    std::vector<uint8_t> scratch;

    // call.args() with scratch of the size the row asks for this node (the arena bytes the planner would
    // give it); for a row that writes state (kv_write), the output is input 0's memory, as planned.
    KernelArgs args(const ops::OpDef& op);
    // The bytes the op wrote: the output, or for a row that writes state, input 0.
    const TestTensor& written(const ops::OpDef& op) const { return op.writes_state ? call.in[0] : call.out; }
};

// A case of an op with no state beside its buffers.
inline OpCase op_case(OpCall call) {
    return OpCase{std::move(call), {}};
}

// One shape of an op: a name for messages and benchmark names, and how to build its buffers (called only
// when the shape runs, so listing the Llama shapes allocates nothing).
struct OpShape {
    std::string label;  // "T3.n100": letters, digits, '.', '_' and 'x' only
    std::function<OpCase()> make;
};

// "3x5x7": a shape as shape labels write it.
std::string shape_label(const std::vector<int64_t>& shape);

// An op on `n_inputs` f32 tensors of one shape, values uniform in [lo, hi), writing that shape in f32
// (add, mul, swiglu, gelu); labelled by the shape.
OpShape same_shape_f32(std::vector<int64_t> shape, int n_inputs, uint32_t seed, float lo = -1, float hi = 1);

// A (rows, cols) matrix of `values` stored as `type`: f32, f16 (rounded to nearest even) or any quantized
// type with a quantizer (ggml's reference rounding, the bytes llama-quantize writes).
TestTensor matrix_of(DType type, int64_t rows, int64_t cols, const std::vector<float>& values);

struct OpCoverage {
    std::string row;      // the op-table row's name: "rmsnorm", "matmul_q4_k"
    double max_nmse = 0;  // bound on NMSE(kernel, reference); 0: the kernel's values equal the reference's
    std::function<std::vector<OpShape>()> test_shapes;   // odd sizes, milliseconds each
    std::function<std::vector<OpShape>()> bench_shapes;  // Llama-7B / TinyLlama widths
    // Bytes one call must move, for bytes/s; nullptr: each input read once and the output written once
    // .
    double (*bytes_moved)(const OpCase& c) = nullptr;
};

// Adds a row's coverage (at static initialisation; a second entry for one row is reported by the walk).
bool register_op_coverage(OpCoverage coverage);
const std::vector<OpCoverage>& op_coverages();
const OpCoverage* find_op_coverage(std::string_view row);
double bytes_moved(const OpCoverage& coverage, const OpCase& c);

// ---- kernel paths ----------------------------------------------------------------------------------
// A path is a level of the one dispatcher (ops/cpu.h); the walk runs every row's kernel of each level
// this CPU has. A path chosen by shape (a prompt-batch GEMM, say) is walked by giving the op a test shape
// that takes it; a path chosen by a setting is one more entry in kKernelPaths (harness/op_coverage.cpp).
struct KernelPath {
    const char* name;  // "scalar", "avx2", "avx512"
    ops::SimdLevel level;
};
std::vector<KernelPath> kernel_paths_on_this_cpu();

// How a kernel's work units are cut into ranges when a case runs.
enum class Split {
    Whole,     // one range [0, n)
    OddCuts,   // [0, 2n/7), [2n/7, 5n/7), [5n/7, n): ranges start and end off any block size
    EachUnit,  // [0, 1), [1, 2), ...: every unit in a range of its own
};
const char* split_name(Split split);

// The row's prepare (if any) then run of `level`, each phase cut as `split` says.
void run_case(const ops::OpDef& op, ops::SimdLevel level, const KernelArgs& args, Split split);

}  // namespace graphrun::testing
