// bench/ops_bench.cpp — per-op benchmarks of the f32 kernels at Llama-7B widths, one thread, the whole
// range in one call. Each reports bytes/s (the bytes the op must move: inputs read, output written,
// the KV cache rows attention reads) and FLOP/s from the op row's flops().
//   graphrun_bench --benchmark_filter='rmsnorm|rope|attention|swiglu|matmul_f32'
// Default runs are short (MinTime 0.05 s each); pass --benchmark_min_time=1 for steadier figures.
#include <benchmark/benchmark.h>

#include "bench/op_bench_util.h"
#include "ops/attention.h"
#include "ops/op_rows.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"

namespace graphrun::testing {
namespace {

void report(benchmark::State& state, const ops::OpDef& op, const KernelArgs& args, double bytes) {
    report_op_counters(state, bytes, op.flops(args));
}

void run_whole(const ops::OpDef& op, const KernelArgs& args) {
    const ops::SimdLevel level = ops::active_simd_level();
    if (op.prepare) op.prepare.at(level)(args, 0, op.prepare_items(args));
    op.run.at(level)(args, 0, op.work_items(args));
}

// x (T, 4096), w (4096) -> y (T, 4096)
void BM_rmsnorm(benchmark::State& state) {
    const int64_t T = state.range(0);
    OpCall c;
    c.in = {f32_tensor({T, kEmbd}, random_floats(size_t(T * kEmbd), 1)),
            f32_tensor({kEmbd}, random_floats(kEmbd, 2))};
    c.out = output_tensor(DType::F32, {T, kEmbd});
    c.params = OpParams::of(ops::RmsnormParams{.eps = 1e-5f});
    const ops::OpDef& op = op_row("rmsnorm");
    const KernelArgs args = c.args();
    for (auto _ : state) run_whole(op, args), benchmark::ClobberMemory();
    report(state, op, args, 4.0 * (2.0 * double(T) * kEmbd + kEmbd));
}
BENCHMARK(BM_rmsnorm)->Arg(1)->Arg(32)->MinTime(kMinTime);

// x (T, 32 * 128), positions (T) -> same shape
void BM_rope(benchmark::State& state) {
    const int64_t T = state.range(0), width = int64_t(kHeads) * kHeadDim;
    std::vector<int32_t> pos(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) pos[size_t(t)] = int32_t(500 + t);
    OpCall c;
    c.in = {f32_tensor({T, width}, random_floats(size_t(T * width), 3)), i32_tensor({T}, pos)};
    c.out = output_tensor(DType::F32, {T, width});
    c.params = OpParams::of(ops::RopeParams{.n_head = kHeads, .head_dim = kHeadDim, .base = 10000.0f});
    const ops::OpDef& op = op_row("rope");
    const KernelArgs args = c.args();
    for (auto _ : state) run_whole(op, args), benchmark::ClobberMemory();
    report(state, op, args, 4.0 * 2.0 * double(T) * width);
}
BENCHMARK(BM_rope)->Arg(1)->Arg(32)->MinTime(kMinTime);

// Values as the fp16 KV cache holds them.
std::vector<uint16_t> f16_values(const std::vector<float>& x) {
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = f32_to_fp16(x[i]);
    return h;
}

// Decode: one token at position n_pos - 1 attends over n_pos cached rows (blocks 0, 1, 2, ... of the
// paged cache); 32 query heads, hd 128, n_head_kv 32 (Llama-2-7B) or 8 (GQA 4, Llama-3-8B-like).
void BM_attention_decode(benchmark::State& state) {
    const int64_t n_pos = state.range(0);
    const int n_head_kv = int(state.range(1));
    const int64_t qw = int64_t(kHeads) * kHeadDim, kvw = int64_t(n_head_kv) * kHeadDim;
    const std::vector<uint16_t> cache_k = f16_values(random_floats(size_t(n_pos * kvw), 4)),
                                cache_v = f16_values(random_floats(size_t(n_pos * kvw), 5));
    const int64_t n_blocks = n_pos / kKvBlockSize;
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) table[size_t(b)] = int32_t(b);
    OpCall c;
    c.in = {f32_tensor({1, qw}, random_floats(size_t(qw), 6)),
            raw_tensor(DType::F16, {n_pos, kvw}, cache_k.data(), cache_k.size() * 2),
            raw_tensor(DType::F16, {n_pos, kvw}, cache_v.data(), cache_v.size() * 2),
            i32_tensor({1}, {int32_t(n_pos - 1)}), i32_tensor({1, n_blocks}, table)};
    c.out = output_tensor(DType::F32, {1, qw});
    c.params = OpParams::of(ops::AttentionParams{.n_head = kHeads, .n_head_kv = n_head_kv, .head_dim = kHeadDim});
    const ops::OpDef& op = op_row("attention");
    const KernelArgs args = c.args();
    for (auto _ : state) run_whole(op, args), benchmark::ClobberMemory();
    // Every query head reads its kv head's rows; with GQA the group's re-reads hit the cache, so count
    // the f16 cache once plus q and out (f32).
    report(state, op, args, 2.0 * 2.0 * double(n_pos) * kvw + 4.0 * 2.0 * qw);
}
BENCHMARK(BM_attention_decode)
    ->ArgNames({"n_pos", "n_head_kv"})
    ->Args({256, 32})
    ->Args({1024, 32})
    ->Args({256, 8})
    ->Args({1024, 8})
    ->MinTime(kMinTime);

// gate (T, 11008), up (T, 11008) -> y (T, 11008)
void BM_swiglu(benchmark::State& state) {
    const int64_t T = state.range(0);
    OpCall c;
    c.in = {f32_tensor({T, kFf}, random_floats(size_t(T * kFf), 9, -4, 4)),
            f32_tensor({T, kFf}, random_floats(size_t(T * kFf), 10))};
    c.out = output_tensor(DType::F32, {T, kFf});
    const ops::OpDef& op = op_row("swiglu");
    const KernelArgs args = c.args();
    for (auto _ : state) run_whole(op, args), benchmark::ClobberMemory();
    report(state, op, args, 4.0 * 3.0 * double(T) * kFf);
}
BENCHMARK(BM_swiglu)->Arg(1)->Arg(32)->MinTime(kMinTime);

// Decode matmul x (1, 4096) · W (4096, 4096)ᵀ through each path this CPU has; bytes are the weights.
void BM_matmul_f32_decode(benchmark::State& state) {
    const auto path = ops::SimdLevel(state.range(0));
    const DType wtype = state.range(1) ? DType::F16 : DType::F32;
    if (!ops::simd_level_available(path)) {
        state.SkipWithError("path not available on this CPU");
        return;
    }
    state.SetLabel(std::string(ops::simd_level_name(path)) + " " + dtype_name(wtype));
    const int64_t N = kEmbd, K = kEmbd;
    OpCall c;
    static const std::vector<float> w = random_floats(size_t(N * K), 11);  // made once for all six runs
    c.in = {f32_tensor({1, K}, random_floats(size_t(K), 12)),
            wtype == DType::F16 ? f16_tensor({N, K}, w) : f32_tensor({N, K}, w)};
    c.out = output_tensor(DType::F32, {1, N});
    const ops::OpDef& op = op_row("matmul_f32");
    const KernelArgs args = c.args();
    const KernelFn run = op.run.at(path);
    for (auto _ : state) run(args, 0, N), benchmark::ClobberMemory();
    report(state, op, args, double(N * row_bytes(wtype, K)) + 4.0 * double(K + N));
}
BENCHMARK(BM_matmul_f32_decode)
    ->ArgNames({"path", "f16"})
    ->ArgsProduct({{int(ops::SimdLevel::Scalar), int(ops::SimdLevel::Avx2), int(ops::SimdLevel::Avx512)},
                   {0, 1}})
    ->MinTime(kMinTime);

}  // namespace
}  // namespace graphrun::testing
