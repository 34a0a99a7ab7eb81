// runtime/finite_check.cpp — see finite_check.h. The scans test exponent bits, so the common case
// (everything finite) is a branch-free loop the compiler vectorizes; only a hit is looked at again.
#include "runtime/finite_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/fp16.h"

namespace graphrun {

namespace {

constexpr int64_t kChunk = 4096;  // elements tested branch-free before looking for the culprit

std::optional<NonFiniteValue> scan_f32(const uint8_t* p, int64_t n) {
    for (int64_t start = 0; start < n; start += kChunk) {
        const int64_t end = std::min(n, start + kChunk);
        uint32_t any = 0;
        for (int64_t i = start; i < end; ++i) {
            uint32_t bits;
            std::memcpy(&bits, p + 4 * i, 4);
            any |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
        }
        if (!any) continue;
        for (int64_t i = start; i < end; ++i) {
            float v;
            std::memcpy(&v, p + 4 * i, 4);
            if (!std::isfinite(v)) return NonFiniteValue{i, v};
        }
    }
    return std::nullopt;
}

// fp16 values `stride` bytes apart (2 for an f16 tensor, the block size for a block's scale).
std::optional<NonFiniteValue> scan_f16(const uint8_t* p, int64_t count, int64_t stride, int64_t per_value) {
    for (int64_t start = 0; start < count; start += kChunk) {
        const int64_t end = std::min(count, start + kChunk);
        uint32_t any = 0;
        for (int64_t i = start; i < end; ++i) {
            uint16_t bits;
            std::memcpy(&bits, p + stride * i, 2);
            any |= uint32_t((bits & 0x7c00u) == 0x7c00u);
        }
        if (!any) continue;
        for (int64_t i = start; i < end; ++i) {
            uint16_t bits;
            std::memcpy(&bits, p + stride * i, 2);
            if ((bits & 0x7c00u) == 0x7c00u) return NonFiniteValue{i * per_value, fp16_to_f32(bits)};
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<NonFiniteValue> find_non_finite(DType type, const void* data, int64_t n_elements) {
    const auto* p = static_cast<const uint8_t*>(data);
    const DTypeTraits& t = dtype_traits(type);
    if (type == DType::F32) return scan_f32(p, n_elements);
    if (type == DType::F16) return scan_f16(p, n_elements, 2, 1);
    const Fp16ScaleOffsets& scales = t.fp16_scales;  // the values of a block type that can be NaN / Inf
    std::optional<NonFiniteValue> first;
    for (int s = 0; s < scales.count; ++s) {
        const auto hit = scan_f16(p + scales.offset[s], n_elements / t.block_size, t.block_bytes, t.block_size);
        if (hit && (!first || hit->index < first->index)) first = hit;
    }
    return first;
}

std::string non_finite_name(float value) {
    if (std::isnan(value)) return "NaN";
    return value > 0 ? "+Inf" : "-Inf";
}

}  // namespace graphrun
