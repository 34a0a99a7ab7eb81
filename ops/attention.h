// ops/attention.h — the instruction-set paths of attention, public so tests and benchmarks can hold
// each one against the reference. The op table's kernels (attention_prepare / attention_run) use the
// best path the CPU has, chosen once; the library is built without -march, so the AVX paths are
// compiled with target attributes and chosen at run time. Every path computes the same bits as
// attention_reference (the numerics are llama.cpp's, see ops/attention.cpp); they differ in speed only.
#pragma once

#include <cstdint>

#include "ops/cpu.h"
#include "runtime/kernel.h"

namespace graphrun::ops {

struct AttentionParams {
    int n_head = 0;     // query heads
    int n_head_kv = 0;  // key/value heads; n_head / n_head_kv query heads share one (grouped-query)
    int head_dim = 0;   // elements per head
    int layer = -1;     // which layer of the KV cache this node reads and writes
};

// head_dim above this is a plan error: the kernel keeps q and the accumulator of one head on its stack.
constexpr int kAttentionMaxHeadDim = 512;

// attention_prepare / attention_run through one path; the path must be available.
void attention_prepare_path(SimdLevel path, const KernelArgs& args, int64_t begin, int64_t end);
void attention_run_path(SimdLevel path, const KernelArgs& args, int64_t begin, int64_t end);

}  // namespace graphrun::ops
