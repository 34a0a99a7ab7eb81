// runtime/finite_check.h — finding NaN and Inf in stored weights.
//
// A non-finite weight makes an F32 model's logits NaN, which the sampler refuses; in a quantized
// path the activation quantizer turns NaN into a finite number and the model prints plausible
// garbage instead. So `graphrun quantize` refuses non-finite input weights (and scales that
// overflow fp16), and `graphrun --check-weights` scans the weights a graph reads at load.
// What "non-finite" means per type:
//   f32, f16      an element that is NaN or +-Inf
//   block types   a block one of whose fp16 scales (d, and m / dmin where the type has one) is NaN or
//                 +-Inf (the quants are integers or table indices, always finite)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/dtype.h"

namespace graphrun {

struct NonFiniteValue {
    int64_t index = 0;  // the element (for a block type: the block's first element)
    float value = 0;    // the element, or the block's scale
};

// The first non-finite value among `n_elements` values of `type` stored at `data`, or nullopt
// when all are finite. For a block type, n_elements must be a multiple of the block size.
// Types without a rule here (the integer types; Q8_K, MXFP4, NVFP4, IQ1_M, whose scales are not
// fp16) are never non-finite.
std::optional<NonFiniteValue> find_non_finite(DType type, const void* data, int64_t n_elements);

// "NaN", "+Inf" or "-Inf".
std::string non_finite_name(float value);

}  // namespace graphrun
