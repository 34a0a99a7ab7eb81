// ops/simd.h — x86 intrinsics for the SIMD kernel paths (each selected at run time, so the build
// needs no -march flags: functions carry __attribute__((target(...))) instead).
#pragma once

// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm256_undefined_pd (GCC bug 105593);
// the diagnostic state at the header's lines is what counts, so it is silenced for the include only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
