// runtime/kv_cache.cpp — the KV cache allocation.
#include "runtime/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace graphrun {

KvCache::KvCache(int64_t n_layer, int64_t n_ctx, int64_t row)
    : n_layer_(n_layer), n_ctx_(n_ctx), row_(row),
      k_(size_t(n_layer * n_ctx * row)), v_(size_t(n_layer * n_ctx * row)) {}

KvLayer KvCache::layer(int64_t index) {
    if (index < 0 || index >= n_layer_)
        throw std::out_of_range("KV cache has " + std::to_string(n_layer_) + " layers, asked for layer " +
                                std::to_string(index));
    const int64_t stride = n_ctx_ * row_;
    return {k_.data() + index * stride, v_.data() + index * stride, n_ctx_, row_};
}

void KvCache::clear() {
    std::fill(k_.begin(), k_.end(), uint16_t(0));  // fp16 +0.0
    std::fill(v_.begin(), v_.end(), uint16_t(0));
}

}  // namespace graphrun
