// ops/matmul_f32.h — the instruction-set paths of matmul_f32, public so tests and benchmarks can hold
// each one against the scalar path. The op table's kernel (matmul_f32_run) runs the level ops/cpu.h
// chose; the library is built without -march, so the AVX paths are compiled with target attributes.
//   x (n_tokens, K) f32 · W (N, K) f32|f16 ᵀ  ->  y (n_tokens, N) f32
#pragma once

#include <cstdint>

#include "ops/cpu.h"
#include "runtime/kernel.h"

namespace graphrun::ops {

// Output columns (weight rows) [begin, end) through one path; the path must be available.
void matmul_f32_run_path(SimdLevel path, const KernelArgs& args, int64_t begin, int64_t end);

}  // namespace graphrun::ops
