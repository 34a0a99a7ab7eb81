// bench/plan_bench.cpp — binding and planning time against graph size: a chain of `add` nodes
// (n = 1,000 .. 100,000) and the arena placement alone for n tensors that are all alive at once.
// Both should grow as n log n (graph/arena.cpp); the all-pairs placement took 21 s at 100,000 nodes.
//   graphrun_bench --benchmark_filter='plan_'
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "graph/graph.h"
#include "graph/plan.h"
#include "tools/lib/random_model.h"

namespace graphrun::bench {
namespace {

const GgufFile& tiny_model() {
    static const std::shared_ptr<const GgufFile> model = [] {
        const std::string path =
            (std::filesystem::temp_directory_path() / ("graphrun_plan_bench_" + std::to_string(::getpid()) + ".gguf"))
                .string();
        graph::write_random_llama(graph::RandomLlamaSpec{}, path);
        auto file = GgufFile::open(path);
        std::filesystem::remove(path);
        return file;
    }();
    return *model;
}

// embedding, then (n - 2) / 2 blocks of two adds, then the logits: n nodes.
std::string chain_graph(int64_t n) {
    return R"({"architecture": "llama", "inputs": ["tokens", "positions"], "nodes": [
        {"id": "x", "op": "embedding", "in": ["tokens", "token_embd.weight"]},
        {"repeat": )" + std::to_string((n - 2) / 2) + R"(, "nodes": [{"id": "y", "op": "add", "in": ["x", "x"]},
                                                      {"id": "x", "op": "add", "in": ["y", "x"]}]},
        {"id": "logits", "op": "matmul", "in": ["x", "output.weight"]}], "outputs": ["logits"]})";
}

void plan_chain(benchmark::State& state) {
    const graph::GraphFile file = graph::graph_file_from_string(chain_graph(state.range(0)), "chain.json");
    for (auto _ : state) {
        const graph::Graph g = graph::bind_graph(file, tiny_model());
        benchmark::DoNotOptimize(graph::make_plan(g, 4, 16).arena_bytes);
    }
    state.SetComplexityN(state.range(0));
}
BENCHMARK(plan_chain)->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond)->Complexity();

void plan_arena_all_alive(benchmark::State& state) {
    graph::Plan plan;
    const int n = int(state.range(0));
    for (int i = 0; i < n; ++i) {
        graph::PlanTensor t{"t", {DType::F32, {16}}, graph::PlanTensor::Kind::Intermediate};
        t.bytes = 64 + 64 * (i % 7);
        t.first_step = i;
        t.last_step = n + i;
        plan.tensors.push_back(t);
    }
    for (auto _ : state) {
        graph::assign_arena_offsets(plan);
        graph::verify_plan(plan);
        benchmark::DoNotOptimize(plan.arena_bytes);
    }
    state.SetComplexityN(n);
}
BENCHMARK(plan_arena_all_alive)->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond)->Complexity();

}  // namespace
}  // namespace graphrun::bench
