// ops/attention.h — attention's params and its kernels per instruction set (ops/attention_paths.cpp),
// which kAttentionOp.run holds per level (ops/cpu.h). Every path computes the same bits as
// attention_reference (the numerics are llama.cpp's, see ops/attention.cpp); they differ in speed only.
#pragma once

#include <cstdint>

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

// Units: (token, query head) pairs, numbered kv group first (ops/attention.cpp). The AVX2 kernel is the
// AVX-512 level's too: AVX-512 CPUs run it.
void attention_run_scalar(const KernelArgs& args, int64_t begin, int64_t end);
void attention_run_avx2(const KernelArgs& args, int64_t begin, int64_t end);

}  // namespace graphrun::ops
