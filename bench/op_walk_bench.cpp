// bench/op_walk_bench.cpp — the op-table walk as benchmarks: every op-table row, at the Llama shapes its
// harness/<family>_shapes.cpp declares, on every kernel path this CPU has, one thread, all units in one
// call (prepare, then run, as the executor calls them), with bytes/s and FLOP/s counters.
//   graphrun_bench --benchmark_filter='op/'                  every row
//   graphrun_bench --benchmark_filter='op/matmul_q4_k/'      one row, all its shapes and paths
//   graphrun_bench --benchmark_filter='op/rmsnorm/.*/avx2'   one path
// Names: op/<row>/<shape>/<path>, e.g. op/matmul_q8_0/q8_0.4096x4096.T1/avx2. The shapes are the ones the
// tests' OpTableWalk would walk at Llama widths, built from the same generators; a row the walk covers
// is benchmarked with no file of its own. Buffers are built when a benchmark runs, not when it is listed.
#include "bench/op_walk_bench.h"

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "bench/op_bench_util.h"
#include "harness/op_coverage.h"

namespace graphrun::bench {
namespace {

using testing::KernelPath;
using testing::kMinTime;
using testing::OpCase;
using testing::OpCoverage;
using testing::OpShape;

void BM_op(benchmark::State& state, const ops::OpDef* op, const OpCoverage* coverage, OpShape shape,
           KernelPath path) {
    OpCase c = shape.make();
    const KernelArgs args = c.args(*op);
    const int64_t prepare_units = op->prepare ? op->prepare_items(args) : 0, units = op->work_items(args);
    const KernelFn prepare = op->prepare.at(path.level), run = op->run.at(path.level);
    for (auto _ : state) {
        if (prepare) prepare(args, 0, prepare_units);
        run(args, 0, units);
        benchmark::ClobberMemory();
    }
    testing::report_op_counters(state, testing::bytes_moved(*coverage, c), op->flops(args));
    std::string label =
        op->run.plain() ? "plain C++" : std::string("runs ") + ops::simd_level_name(op->run.level_of(path.level));
    std::vector<ops::TensorDesc> descs;
    for (const testing::TestTensor& t : c.call.in) descs.push_back(t.desc());
    if (const char* variant = op->path_variant ? op->path_variant(descs, path.level) : nullptr)
        label += std::string("+") + variant;
    state.SetLabel(label);
}

}  // namespace

void register_op_walk_benchmarks() {
    for (const ops::OpDef* op : ops::op_table()) {
        const OpCoverage* coverage = testing::find_op_coverage(op->name);
        if (!coverage || !coverage->bench_shapes) continue;  // OpTableWalk fails such a row by name
        for (const OpShape& shape : coverage->bench_shapes())
            for (const KernelPath& path : testing::kernel_paths_on_this_cpu()) {
                const std::string name = std::string("op/") + op->name + "/" + shape.label + "/" + path.name;
                benchmark::RegisterBenchmark(name.c_str(), BM_op, op, coverage, shape, path)
                    ->MinTime(kMinTime)
                    ->Unit(benchmark::kMicrosecond);
            }
    }
}

}  // namespace graphrun::bench
