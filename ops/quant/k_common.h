// ops/quant/k_common.h — small pieces the K-quant files share (reference, scalar and SIMD paths):
// ggml's rounding, its all-zero threshold and the 6-bit scale/min packing of Q4_K and Q5_K. Internal to ops/.
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/quant/blocks.h"

namespace graphrun::ops {

// A group (sub-block) whose largest |x| is below this quantizes to all zeros, as in ggml's quantizers.
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, as ggml's nearest_int: adding 1.5 * 2^23 leaves the rounded
// integer in the low mantissa bits. Valid for |v| < 2^22 (quantizer arguments are far smaller).
inline int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

// The 8 sub-block scales and mins of a Q4_K / Q5_K super-block, from its 12 packed bytes:
// sub-blocks 0..3 keep their 6 bits in bytes 0..3 (scales) and 4..7 (mins); 4..7 keep the low
// nibbles in bytes 8..11 and their top two bits in the spare high bits of bytes 0..7.
inline void unpack_k_scales(const uint8_t packed[12], uint8_t scale[8], uint8_t min[8]) {
    for (int s = 0; s < 4; ++s) {
        scale[s] = packed[s] & 63;
        min[s] = packed[s + 4] & 63;
        scale[s + 4] = uint8_t((packed[s + 8] & 15) | (packed[s] >> 6) << 4);
        min[s + 4] = uint8_t((packed[s + 8] >> 4) | (packed[s + 4] >> 6) << 4);
    }
}

// The 6-bit scale of sub-block s (0..7) of an IQ4_XS super-block, 0..63 (the weight scale is d * (ls - 32)).
inline int iq4_xs_scale(const block_iq4_xs& b, int s) {
    return ((b.scales_l[s / 2] >> (4 * (s % 2))) & 15) | ((b.scales_h >> (2 * s)) & 3) << 4;
}

// One super-block's contribution to a K-type dot product, added to the running total:
//   total + ((d_x d_w) sumi - (d_x dmin_w) summ)
// with sumi = sum of scale * sub-block dot and summ = sum of min * activation sub-block sum, both
// exact. Every path of every K type (scalar, SIMD, and any future multi-row or GEMM kernel) folds
// its integers in with this, in super-block order and without fused multiply-adds (the SIMD files
// switch contraction off), so all give the same bits for the same row.
inline float k_superblock_total(float total, float dx, float dw, float dmin_w, int32_t sumi, int32_t summ) {
    const float d = dx * dw;
    const float dmin = dx * dmin_w;
    return total + (d * float(sumi) - dmin * float(summ));
}

}  // namespace graphrun::ops
