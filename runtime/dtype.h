// runtime/dtype.h — the element types graphrun stores tensors in, as data not branches.
//
// Quantized types are blocks: `block_size` weights share one block of `block_bytes` bytes.
// The layouts are ggml's, byte for byte, so GGUF files move between graphrun and llama.cpp:
//   Q8_0: { fp16 d; int8 q[32]; }                       34 bytes, w = d * q
//   Q4_0: { fp16 d; uint8 qs[16]; }                     18 bytes, w = d * (nibble - 8),
//         low nibbles hold weights 0..15 of the block, high nibbles weights 16..31.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace graphrun {

enum class DType : uint8_t { F32, F16, Q4_0, Q8_0, I32 };

struct DTypeTraits {
    const char* name;     // "f32", "q8_0", ... as the plan dump and the CLI spell it
    uint32_t ggml_type;   // the type id GGUF files store for it
    int64_t block_size;   // elements per block (1 for plain types)
    int64_t block_bytes;  // bytes per block
};

const DTypeTraits& dtype_traits(DType type);
inline const char* dtype_name(DType type) { return dtype_traits(type).name; }

// Bytes of a row of n elements; n must be a multiple of the block size (callers check first).
inline int64_t row_bytes(DType type, int64_t n) {
    const DTypeTraits& t = dtype_traits(type);
    return n / t.block_size * t.block_bytes;
}

// The GGUF/ggml type id <-> DType. Ids graphrun cannot run give nullopt;
// ggml_type_name still names them (for example 14 -> "Q6_K") so errors can say what was found.
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
std::string ggml_type_name(uint32_t ggml_type);
std::optional<DType> dtype_from_name(std::string_view name);  // "f32", "f16", "q8_0", "q4_0", "i32"

}  // namespace graphrun
