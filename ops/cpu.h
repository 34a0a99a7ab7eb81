// ops/cpu.h — the one CPU-feature dispatcher every kernel family uses.
//
// The library is built without -march: SIMD kernels carry __attribute__((target(...))) and the path
// is chosen at run time. Every family (matmul_f32, the quantized matmuls, attention, ...) asks this
// file which level to run, so one setting caps them all:
//   GRAPHRUN_SIMD=scalar|avx2|avx512  caps the level (never raises it past what the CPU has).
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
SimdLevel active_simd_level();  // the level kernels run: cpu_simd_level() capped by GRAPHRUN_SIMD

// A family whose best path is below the active level (no AVX-512 path written yet, say) runs the
// best one it has: min(active_simd_level(), best_of_family).
inline SimdLevel simd_level_capped(SimdLevel best_of_family) {
    const SimdLevel active = active_simd_level();
    return active < best_of_family ? active : best_of_family;
}

}  // namespace graphrun::ops
