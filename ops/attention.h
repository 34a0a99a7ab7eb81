// ops/attention.h — the instruction-set paths of attention and kv_write, public so tests and benchmarks
// can hold each one against the reference. The op table's kernels use the best path the CPU has; the
// library is built without -march, so the AVX paths are compiled with target attributes and chosen at
// run time. Every path computes the same bits as
// attention_reference (the numerics are llama.cpp's, see ops/attention.cpp); they differ in speed only.
#pragma once

#include <cstdint>

#include "ops/cpu.h"
#include "runtime/kernel.h"
#include "runtime/kv_blocks.h"

namespace graphrun::ops {

struct AttentionParams {
    int n_head = 0;     // query heads
    int n_head_kv = 0;  // key/value heads; n_head / n_head_kv query heads share one (grouped-query)
    int head_dim = 0;   // elements per head
};

// head_dim above this is a plan error: the kernel keeps q and the accumulator of one head on its stack.
constexpr int kAttentionMaxHeadDim = 512;

// attention's run and kv_write's run through one path; the path must be available (kv_write has no
// AVX-512 path of its own: asked for one, it runs AVX2).
void attention_run_path(SimdLevel path, const KernelArgs& args, int64_t begin, int64_t end);
void kv_write_run_path(SimdLevel path, const KernelArgs& args, int64_t begin, int64_t end);

}  // namespace graphrun::ops
