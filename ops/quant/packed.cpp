// ops/quant/packed.cpp — q4_0x8 packing and unpacking (the layout: ops/quant/packed.h), plain C++.
#include "ops/quant/packed.h"

#include <cstring>

#include "ops/quant/blocks.h"

namespace graphrun::ops {

namespace {

// Block b of group row r: its scale at 2r, its quant bytes 4s .. 4s + 3 at 16 + 32s + 4r.
template <bool kPack>
void convert(const uint8_t* from, uint8_t* to, int64_t n_rows, int64_t k) {
    const int64_t nb = k / kQK, row_bytes = nb * int64_t(sizeof(block_q4_0));
    for (int64_t g = 0; g < n_rows / kQ4_0x8Rows; ++g) {
        const int64_t group = g * kQ4_0x8Rows * row_bytes;
        for (int64_t b = 0; b < nb; ++b) {
            const int64_t packed_block = group + b * kQ4_0x8BlockBytes;
            for (int r = 0; r < kQ4_0x8Rows; ++r) {
                const int64_t stored = group + r * row_bytes + b * int64_t(sizeof(block_q4_0));
                const auto copy = [&](int64_t stored_at, int64_t packed_at, size_t n) {
                    if (kPack)
                        std::memcpy(to + packed_at, from + stored_at, n);
                    else
                        std::memcpy(to + stored_at, from + packed_at, n);
                };
                copy(stored, packed_block + 2 * r, 2);
                for (int s = 0; s < 4; ++s)
                    copy(stored + 2 + 4 * s, packed_block + kQ4_0x8QuantOffset + 32 * s + 4 * r, 4);
            }
        }
    }
}

}  // namespace

void pack_q4_0x8(const void* rows, void* packed, int64_t n_rows, int64_t k) {
    convert<true>(static_cast<const uint8_t*>(rows), static_cast<uint8_t*>(packed), n_rows, k);
}

void unpack_q4_0x8(const void* packed, void* rows, int64_t n_rows, int64_t k) {
    convert<false>(static_cast<const uint8_t*>(packed), static_cast<uint8_t*>(rows), n_rows, k);
}

}  // namespace graphrun::ops
