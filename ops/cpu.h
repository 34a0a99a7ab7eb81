// ops/cpu.h — the one CPU-feature dispatcher every kernel family uses.
//
// The library is built without -march: SIMD kernels carry GR_AVX2 / GR_AVX512 (ops/simd.h), and an
// op-table row holds its kernels per level (PerLevel below). The level is chosen once, when a plan is
// made (graph/plan.h: make_plan's `simd`, by default the level of this process), and the plan binds
// the row's kernel for it; nothing asks for the level while a plan runs. One setting caps every family
// the same way:
//   GRAPHRUN_SIMD=scalar|avx2|avx512  caps the level (never raises it past what the CPU has).
// Tests and benchmarks that walk every path (tests/ops/op_table_walk_test.cpp) take each level's kernel
// from the row themselves. The plan dump names the level of the kernel that was bound (level_of).
#pragma once

namespace graphrun::ops {

enum class SimdLevel { Scalar, Avx2, Avx512 };
constexpr SimdLevel kSimdLevels[] = {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512};

struct CpuFeatures {
    bool avx2 = false;    // avx2 + fma + f16c: the Avx2 level
    bool avx512 = false;  // avx512 f + bw + vl + dq + vnni (and avx2): the Avx512 level
};
const CpuFeatures& cpu_features();

const char* simd_level_name(SimdLevel level);  // "scalar", "avx2", "avx512"
bool simd_level_available(SimdLevel level);    // does this CPU (and OS) run it
SimdLevel cpu_simd_level();                    // the best level the CPU has
// The level plans are made for unless told otherwise: cpu_simd_level() capped by GRAPHRUN_SIMD, read
// once per process.
SimdLevel active_simd_level();

// A kernel per level, as an op-table row (or a traits row) holds them. nullptr falls back to the level
// below: an AVX-512 CPU runs the AVX2 kernel of a family that has no AVX-512 one. A row with a scalar
// kernel alone is plain C++, the same at every level.
template <typename Fn>
struct PerLevel {
    Fn scalar = nullptr, avx2 = nullptr, avx512 = nullptr;

    constexpr Fn at(SimdLevel level) const {
        if (level == SimdLevel::Avx512 && avx512) return avx512;
        if (level >= SimdLevel::Avx2 && avx2) return avx2;
        return scalar;
    }
    // The level whose kernel at(level) returns: what a plan bound at `level` runs.
    constexpr SimdLevel level_of(SimdLevel level) const {
        if (level == SimdLevel::Avx512 && avx512) return SimdLevel::Avx512;
        if (level >= SimdLevel::Avx2 && avx2) return SimdLevel::Avx2;
        return SimdLevel::Scalar;
    }
    constexpr bool plain() const { return !avx2 && !avx512; }  // one kernel for every level
    constexpr explicit operator bool() const { return scalar || avx2 || avx512; }
};

}  // namespace graphrun::ops
