// ops/attention.h — the instruction-set paths of attention, public so tests and benchmarks can hold
// each one against the reference. The op table's kernels (attention_prepare / attention_run) use the
// best path the CPU has, chosen once; the library is built without -march, so the AVX paths are
// compiled with target attributes and chosen at run time. Every path computes the same bits as
// attention_reference (the numerics are llama.cpp's, see ops/attention.cpp); they differ in speed only.
#pragma once

#include <cstdint>

#include "runtime/kernel.h"

namespace graphrun::ops {

enum class AttentionPath { Scalar, Avx2, Avx512 };

// head_dim above this is a plan error: the kernel keeps q and the accumulator of one head on its stack.
constexpr int kAttentionMaxHeadDim = 512;

const char* attention_path_name(AttentionPath path);  // "scalar", "avx2", "avx512"
bool attention_path_available(AttentionPath path);    // does this CPU (and OS) support it
AttentionPath attention_best_path();

// attention_prepare / attention_run through one path; the path must be available.
void attention_prepare_path(AttentionPath path, const KernelArgs& args, int64_t begin, int64_t end);
void attention_run_path(AttentionPath path, const KernelArgs& args, int64_t begin, int64_t end);

}  // namespace graphrun::ops
