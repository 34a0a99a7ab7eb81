// ops/cpu.cpp — CPU features and the active SIMD level, read once.
#include "ops/cpu.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace graphrun::ops {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID leaf 1, ECX bit 29. (clang 14's __builtin_cpu_supports does not know "f16c"; the fuzz build uses clang.)
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif
}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = [] {
        CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        f.avx2 =
            __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
        f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vnni");
#endif
        return f;
    }();
    return features;
}

const char* simd_level_name(SimdLevel level) {
    switch (level) {
        case SimdLevel::Scalar:
            return "scalar";
        case SimdLevel::Avx2:
            return "avx2";
        case SimdLevel::Avx512:
            return "avx512";
    }
    return "?";
}

bool simd_level_available(SimdLevel level) {
    switch (level) {
        case SimdLevel::Scalar:
            return true;
        case SimdLevel::Avx2:
            return cpu_features().avx2;
        case SimdLevel::Avx512:
            return cpu_features().avx512;
    }
    return false;
}

SimdLevel cpu_simd_level() {
    const CpuFeatures& f = cpu_features();
    return f.avx512 ? SimdLevel::Avx512 : f.avx2 ? SimdLevel::Avx2 : SimdLevel::Scalar;
}

SimdLevel active_simd_level() {
    static const SimdLevel configured = [] {
        SimdLevel best = cpu_simd_level();
        if (const char* cap = std::getenv("GRAPHRUN_SIMD")) {
            const std::string_view s = cap;
            const SimdLevel want = s == "scalar" ? SimdLevel::Scalar : s == "avx2" ? SimdLevel::Avx2 : best;
            best = std::min(best, want);
        }
        return best;
    }();
    return configured;
}

}  // namespace graphrun::ops
