// ops/simd.h — x86 intrinsics for the SIMD kernel paths, and the target attributes that mark them.
//
// The library is built without -march: a SIMD kernel carries one of these attributes, and runs only
// where the op-table row's kernel for that level was bound (ops/cpu.h: PerLevel), which the planner
// does only for a level this CPU has. They are defined here and nowhere else; a file with SIMD
// kernels includes this header.
#pragma once

// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm256_undefined_pd (GCC bug 105593);
// the diagnostic state at the header's lines is what counts, so it is silenced for the include only.
// (clang has neither the bug nor the second warning's name.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

// SimdLevel::Avx2: AVX2 + FMA + F16C.
#define GR_AVX2 __attribute__((target("avx2,fma,f16c")))
// SimdLevel::Avx512: AVX-512 F/BW/VL/DQ + VNNI, and everything of the AVX2 level.
#define GR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
