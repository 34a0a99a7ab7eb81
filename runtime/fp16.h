// runtime/fp16.h — IEEE half precision <-> float, bit-exact, portable.
// (SIMD kernels use F16C where the CPU has it; these are the reference conversions.)
#pragma once

#include <cstdint>
#include <cstring>

namespace graphrun {

inline float fp16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1f;
    uint32_t mantissa = h & 0x3ff;
    uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // inf / nan
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;  // signed zero
    } else {
        // Subnormal half: normalise it into a float.
        int shift = 0;
        while ((mantissa & 0x400) == 0) {
            mantissa <<= 1;
            ++shift;
        }
        mantissa &= 0x3ff;
        bits = sign | uint32_t(113 - shift) << 23 | (mantissa << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Round to nearest even, as ggml's (and the hardware's) conversion does.
inline uint16_t f32_to_fp16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t abs = x & 0x7fffffff;
    if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));  // inf / nan
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to a value past 65504: inf
    if (abs < 0x38800000u) {
        // Result is a half subnormal (or zero): scale into the 10-bit mantissa with rounding.
        if (abs < 0x33000000u) return uint16_t(sign);
        const uint32_t exponent = abs >> 23;
        const uint32_t mantissa = (abs & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - exponent;  // 14..24
        uint32_t half = mantissa >> shift;
        const uint32_t rest = mantissa & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1))) ++half;
        return uint16_t(sign | half);
    }
    uint32_t half = ((abs >> 13) - (112u << 10));
    const uint32_t rest = abs & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
    return uint16_t(sign | half);
}

}  // namespace graphrun
