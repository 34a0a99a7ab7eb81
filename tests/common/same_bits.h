// tests/common/same_bits.h — bit-for-bit equality of two arrays: how tests check graphrun's exact invariants
// (batched = unbatched, cached = recomputed, every thread count and SIMD path where the row says exact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace graphrun::testing {

// True when a and b have the same length and the same bytes; a NaN equals the same NaN.
inline bool same_bytes(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
    // (memcmp may not be given an empty vector's null data, even for 0 bytes)
    return a_bytes == b_bytes && (a_bytes == 0 || std::memcmp(a, b, a_bytes) == 0);
}
inline bool same_bits(std::span<const float> a, std::span<const float> b) {
    return same_bytes(a.data(), a.size_bytes(), b.data(), b.size_bytes());
}
inline bool same_bits(std::span<const uint16_t> a, std::span<const uint16_t> b) {
    return same_bytes(a.data(), a.size_bytes(), b.data(), b.size_bytes());
}
inline bool same_bits(std::span<const uint8_t> a, std::span<const uint8_t> b) {
    return same_bytes(a.data(), a.size_bytes(), b.data(), b.size_bytes());
}

}  // namespace graphrun::testing
