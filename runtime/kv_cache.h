// runtime/kv_cache.h — the KV cache: keys and values of every past position, per layer.
//   k, v: (n_layer, n_ctx, row) fp16 bits, row = n_head_kv * head_dim.
// One persistent allocation, sized once from the plan; attention kernels write row `pos` of
// their layer and read rows 0..pos.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/kernel.h"

namespace graphrun {

class KvCache {
public:
    KvCache() = default;
    KvCache(int64_t n_layer, int64_t n_ctx, int64_t row);

    KvLayer layer(int64_t index);  // throws std::out_of_range for a layer the cache does not have
    int64_t n_layer() const { return n_layer_; }
    int64_t n_ctx() const { return n_ctx_; }
    int64_t row() const { return row_; }
    int64_t bytes() const { return int64_t((k_.size() + v_.size()) * sizeof(uint16_t)); }
    void clear();

private:
    int64_t n_layer_ = 0, n_ctx_ = 0, row_ = 0;
    std::vector<uint16_t> k_, v_;
};

}  // namespace graphrun
