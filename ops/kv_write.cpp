// ops/kv_write.cpp — storing a batch's keys or values in the KV cache.
//   cache (n_slots, width) f16: planned state, one layer's K or V; x (n_tokens, width) f32;
//   slots (n_tokens) i32: the cache row of each token (its sequence's block for its position)
//     ->  cache, updated in place: cache[slots[t]] = f16(x[t]) (round to nearest even, as llama.cpp
//         stores its F16 cache), every other row unchanged
// Units: tokens. The node's output is the cache itself, so an attention node that takes it as input
// runs after the write and reads this batch's rows too. The kernel is the f16 row conversion of the
// level (ops/quant/kernels.h), the same bits at every level.
#include <cassert>

#include "ops/op_checks.h"
#include "ops/op_rows.h"
#include "ops/quant/kernels.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

TensorDesc kv_write_infer(const NodeInfo& node) {
    check_input_count(node, 3, "cache, x, slots");
    check_dtype(node, 0, "cache", DType::F16);
    check_dtype(node, 1, "x", DType::F32);
    check_dtype(node, 2, "slots", DType::I32);
    check_rank(node, 0, "cache", 2, "(n_slots, width)");
    check_rank(node, 1, "x", 2, "(n_tokens, width)");
    check_rank(node, 2, "slots", 1, "(n_tokens)");
    const TensorDesc &cache = node.inputs[0], &x = node.inputs[1];
    if (x.shape[1] != cache.shape[1])
        throw PlanError(node, "x rows have " + std::to_string(x.shape[1]) + " elements, the cache's " +
                                  std::to_string(cache.shape[1]));
    if (node.inputs[2].shape[0] != x.shape[0])
        throw PlanError(node, "slots has " + std::to_string(node.inputs[2].shape[0]) + " entries, x has " +
                                  std::to_string(x.shape[0]) + " rows");
    return cache;
}

int64_t kv_write_work_items(const KernelArgs& args) {
    return args.in[1].rows();
}

// cache[slots[t]] = f16(x[t]) for tokens [begin, end), converted by ToF16.
template <void (*ToF16)(const float* x, uint16_t* y, int64_t n)>
void kv_write_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t row = args.out.cols(), n_slots = args.out.rows();
    const int32_t* slots = args.in[2].as<int32_t>();
    uint16_t* cache = args.out.as<uint16_t>();
    assert(row == args.in[1].cols());
    for (int64_t t = begin; t < end; ++t) {
        const int64_t slot = slots[t];
        assert(0 <= slot && slot < n_slots);  // the session computes slots from block tables it checked
        (void)n_slots;
        ToF16(args.in[1].as<float>() + t * row, cache + slot * row, row);
    }
}

void kv_write_reference(const KernelArgs& args) {
    const int64_t width = args.in[1].cols();
    for (int64_t t = 0; t < args.in[1].rows(); ++t) {
        const int64_t slot = args.in[2].as<int32_t>()[t];
        for (int64_t i = 0; i < width; ++i)
            args.out.as<uint16_t>()[slot * width + i] = f32_to_fp16(args.in[1].as<float>()[t * width + i]);
    }
}

double kv_write_flops(const KernelArgs&) {
    return 0.0;  // a converting copy
}

}  // namespace

const OpDef kKvWriteOp = {
    .name = "kv_write",
    .n_inputs = 3,
    .state_inputs = 0b001,  // the cache
    .writes_state = true,
    .infer = kv_write_infer,
    .work_items = kv_write_work_items,
    .grain = 4,
    .run = {.scalar = kv_write_run<scalar::f32_to_f16_row>, .avx2 = kv_write_run<avx2::f32_to_f16_row>},
    .reference = kv_write_reference,
    .flops = kv_write_flops,
};

}  // namespace graphrun::ops
