// bench/ops_gelu_bench.cpp — gelu and mul (the ops of the GeGLU example, docs/adding-an-op.md) at Llama-7B's
// feed-forward width, one thread, the whole range in one call. Counters: bytes/s (inputs read plus the
// output written) and FLOP/s from the op row's flops().
//   graphrun_bench --benchmark_filter='BM_(gelu|mul)/'   (a bare 'mul' would match the matmul benchmarks too)
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "bench/op_bench_util.h"

namespace graphrun::testing {
namespace {

// gate (T, 11008) -> gelu(gate) (T, 11008)
void BM_gelu(benchmark::State& state) {
    const int64_t T = state.range(0);
    OpCall c;
    c.in = {f32_tensor({T, kFf}, random_floats(size_t(T * kFf), 21, -4, 4))};
    c.out = output_tensor(DType::F32, {T, kFf});
    run_and_report(state, "gelu", c);
}
BENCHMARK(BM_gelu)->Arg(1)->Arg(32)->MinTime(kMinTime);

// The same values through the formula as written, 0.5x(1 + tanhf(u)) in float: what gelu_run's one-expf
// form (ops/gelu.cpp) is measured against. Not a kernel of the library; bytes/s only.
void BM_gelu_tanhf_formula(benchmark::State& state) {
    const int64_t T = state.range(0);
    const std::vector<float> x = random_floats(size_t(T * kFf), 21, -4, 4);
    std::vector<float> y(x.size());
    constexpr float c = 0.79788456080286535587989211986876f, a = 0.044715f;
    for (auto _ : state) {
        for (size_t i = 0; i < x.size(); ++i)
            y[i] = 0.5f * x[i] * (1.0f + std::tanh(c * (x[i] + a * x[i] * x[i] * x[i])));
        benchmark::ClobberMemory();
    }
    state.counters["bytes/s"] =
        benchmark::Counter(8.0 * double(x.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_gelu_tanhf_formula)->Arg(1)->Arg(32)->MinTime(kMinTime);

// a (T, 11008), b (T, 11008) -> a * b
void BM_mul(benchmark::State& state) {
    const int64_t T = state.range(0);
    OpCall c;
    c.in = {f32_tensor({T, kFf}, random_floats(size_t(T * kFf), 22, -4, 4)),
            f32_tensor({T, kFf}, random_floats(size_t(T * kFf), 23))};
    c.out = output_tensor(DType::F32, {T, kFf});
    run_and_report(state, "mul", c);
}
BENCHMARK(BM_mul)->Arg(1)->Arg(32)->MinTime(kMinTime);

}  // namespace
}  // namespace graphrun::testing
