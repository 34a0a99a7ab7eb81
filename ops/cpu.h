// ops/cpu.h — the one CPU-feature dispatcher every kernel family uses.
//
// The library is built without -march: SIMD kernels carry __attribute__((target(...))) and the path
// is chosen at run time. Every family (matmul_f32, the quantized matmuls, attention, ...) asks this
// file which level to run, so one setting caps them all:
//   GRAPHRUN_SIMD=scalar|avx2|avx512  caps the level (never raises it past what the CPU has).
// Tests and benchmarks that walk every path (tests/ops/op_table_walk_test.cpp) force one level at a time
// with ForcedSimdLevel, which every family obeys because they all ask active_simd_level() per call.
// The plan dump names the level each step's kernel runs at (OpDef::simd_path in ops/op_table.h).
#pragma once

namespace graphrun::ops {

enum class SimdLevel { Scalar, Avx2, Avx512 };

struct CpuFeatures {
    bool avx2 = false;    // avx2 + fma + f16c: the Avx2 level
    bool avx512 = false;  // avx512 f + bw + vl + dq + vnni (and avx2): the Avx512 level
};
const CpuFeatures& cpu_features();

const char* simd_level_name(SimdLevel level);  // "scalar", "avx2", "avx512"
bool simd_level_available(SimdLevel level);    // does this CPU (and OS) run it
SimdLevel cpu_simd_level();                    // the best level the CPU has
SimdLevel active_simd_level();  // the level kernels run: cpu_simd_level() capped by GRAPHRUN_SIMD,
                                // or the level a ForcedSimdLevel holds

// While alive, kernels run at `level` (which this CPU must have: std::invalid_argument otherwise),
// GRAPHRUN_SIMD notwithstanding; the previous setting returns when it is destroyed. For the op harness
// and benchmarks, one thread at a time: a plan or kernel running meanwhile on another thread would see
// the change.
class ForcedSimdLevel {
  public:
    explicit ForcedSimdLevel(SimdLevel level);
    ~ForcedSimdLevel();
    ForcedSimdLevel(const ForcedSimdLevel&) = delete;
    ForcedSimdLevel& operator=(const ForcedSimdLevel&) = delete;

  private:
    int previous_;
};

// A family whose best path is below the active level (no AVX-512 path written yet, say) runs the
// best one it has: min(active_simd_level(), best_of_family).
inline SimdLevel simd_level_capped(SimdLevel best_of_family) {
    const SimdLevel active = active_simd_level();
    return active < best_of_family ? active : best_of_family;
}

}  // namespace graphrun::ops
