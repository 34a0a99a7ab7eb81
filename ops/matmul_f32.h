// ops/matmul_f32.h — the instruction-set paths of matmul_f32, public so tests and benchmarks can hold
// each one against the scalar path. The op table's kernel (matmul_f32_run) picks the best path the
// CPU has once, at first use; the library is built without -march, so the AVX paths are compiled
// with target attributes and chosen at run time.
//   x (n_tokens, K) f32 · W (N, K) f32|f16 ᵀ  ->  y (n_tokens, N) f32
#pragma once

#include <cstdint>

#include "runtime/kernel.h"

namespace graphrun::ops {

enum class MatmulF32Path { Scalar, Avx2, Avx512 };

const char* matmul_f32_path_name(MatmulF32Path path);  // "scalar", "avx2", "avx512"
bool matmul_f32_path_available(MatmulF32Path path);    // does this CPU (and OS) support it
MatmulF32Path matmul_f32_best_path();

// Output columns (weight rows) [begin, end) through one path; the path must be available.
void matmul_f32_run_path(MatmulF32Path path, const KernelArgs& args, int64_t begin, int64_t end);

}  // namespace graphrun::ops
