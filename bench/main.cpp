// bench/main.cpp — graphrun_bench's main: Google Benchmark's, plus the op walk's registration, which must
// wait until static initialisation has registered every op's shapes (harness/op_coverage.h).
#include <benchmark/benchmark.h>

#include "bench/op_walk_bench.h"

int main(int argc, char** argv) {
    graphrun::bench::register_op_walk_benchmarks();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
