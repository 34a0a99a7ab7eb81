// bench/families_bench.cpp — the ops the Qwen2/Qwen3 and Llama 3.1 graphs add, at 8B widths (32 query
// heads of 128, n_embd 4096), one thread, the whole range in one call: rope in each mode with and without
// frequency factors, rmsnorm by heads (Qwen3's QK-norm) beside the whole-row norm, add_bias (Qwen2).
//   graphrun_bench --benchmark_filter='BM_(rope_modes|rmsnorm_by_heads|add_bias)'
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/op_bench_util.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"

namespace graphrun::testing {
namespace {

constexpr int64_t kWidth = int64_t(kHeads) * kHeadDim;

// q (T, 32 * 128), positions (T) [, factors (64)] -> same shape; mode 0 normal, 1 neox.
void BM_rope_modes(benchmark::State& state) {
    const int64_t T = state.range(0);
    const int mode = int(state.range(1));
    const bool factors = state.range(2) != 0;
    state.SetLabel(std::string(mode == ops::kRopeNeox ? "neox" : "normal") + (factors ? " + freq_factors" : ""));
    std::vector<int32_t> pos(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) pos[size_t(t)] = int32_t(500 + t);
    OpCall c;
    c.in = {f32_tensor({T, kWidth}, random_floats(size_t(T * kWidth), 3)), i32_tensor({T}, pos)};
    if (factors) c.in.push_back(f32_tensor({kHeadDim / 2}, random_floats(kHeadDim / 2, 4, 1, 8)));
    c.out = output_tensor(DType::F32, {T, kWidth});
    c.params = OpParams::of(ops::RopeParams{.n_head = kHeads, .head_dim = kHeadDim, .base = 500000.0f, .mode = mode});
    run_and_report(state, "rope", c);
}
BENCHMARK(BM_rope_modes)
    ->ArgNames({"T", "mode", "factors"})
    ->ArgsProduct({{1, 32}, {ops::kRopeNormal, ops::kRopeNeox}, {0, 1}})
    ->MinTime(kMinTime);

// q (T, 32 * 128), w (128) -> each head normalised on its own; group 0 is the whole-row norm over
// (T, 4096) with a 4096 weight, for comparison.
void BM_rmsnorm_by_heads(benchmark::State& state) {
    const int64_t T = state.range(0);
    const int group = int(state.range(1));
    state.SetLabel(group ? "per head" : "whole row");
    const int64_t w = group ? group : kWidth;
    OpCall c;
    c.in = {f32_tensor({T, kWidth}, random_floats(size_t(T * kWidth), 5)),
            f32_tensor({w}, random_floats(size_t(w), 6, 0.5f, 1.5f))};
    c.out = output_tensor(DType::F32, {T, kWidth});
    c.params = OpParams::of(ops::RmsnormParams{.eps = 1e-6f, .group = group});
    run_and_report(state, "rmsnorm", c);
}
BENCHMARK(BM_rmsnorm_by_heads)->ArgNames({"T", "group"})->ArgsProduct({{1, 32}, {0, kHeadDim}})->MinTime(kMinTime);

// q (T, 4096) + bias (4096)
void BM_add_bias(benchmark::State& state) {
    const int64_t T = state.range(0);
    OpCall c;
    c.in = {f32_tensor({T, kWidth}, random_floats(size_t(T * kWidth), 7)),
            f32_tensor({kWidth}, random_floats(size_t(kWidth), 8))};
    c.out = output_tensor(DType::F32, {T, kWidth});
    run_and_report(state, "add_bias", c);
}
BENCHMARK(BM_add_bias)->Arg(1)->Arg(32)->MinTime(kMinTime);

}  // namespace
}  // namespace graphrun::testing
