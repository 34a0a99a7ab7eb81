// runtime/dtype.h — every element type a GGUF file can store, as data not branches.
//
// Quantized types are blocks: `block_size` weights share one block of `block_bytes` bytes.
// The layouts are ggml's, byte for byte, so GGUF files move between graphrun and llama.cpp
// (docs/quantization.md has the block structs of the types graphrun runs). A DType's value is its
// ggml type id, so the id a GGUF file stores is the DType (ids ggml removed are not DTypes).
//
// Knowing a type's layout is enough to read a file, print its tensors and compute their sizes;
// running a type needs kernels (ops/quant/traits.h), and the planner refuses a type only where a plan
// would need a kernel that is missing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace graphrun {

enum class DType : uint8_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
    Q2_0 = 42,
};

// Where a block type keeps its fp16 scales (ggml-common.h): byte offsets within the block. The quants
// themselves are integers or table indices, always finite, so these are the values that can be NaN or
// Inf. Types whose scales are not fp16 (Q8_K's float d, MXFP4's e8m0, NVFP4's e4m3, IQ1_M's scales
// spread over nibbles) and the plain types list none.
struct Fp16ScaleOffsets {
    int count = 0;
    int offset[2] = {0, 0};
};

struct DTypeTraits {
    DType type;
    const char* name;     // "f32", "q8_0", "q4_k", ... as the plan dump and the CLI spell it
    uint32_t ggml_type;   // the type id GGUF files store for it (== the DType's value)
    int64_t block_size;   // elements per block (1 for plain types)
    int64_t block_bytes;  // bytes per block
    bool quantized;       // a block type (as opposed to a plain number type)
    Fp16ScaleOffsets fp16_scales{};
};

// Every known type, in ggml id order.
std::span<const DTypeTraits> dtype_table();
const DTypeTraits& dtype_traits(DType type);
inline const char* dtype_name(DType type) { return dtype_traits(type).name; }

// Bits of storage per element: 8 * block_bytes / block_size (4.5 for Q4_0 and Q4_K).
inline double dtype_bits_per_weight(DType type) {
    const DTypeTraits& t = dtype_traits(type);
    return 8.0 * double(t.block_bytes) / double(t.block_size);
}

// Bytes of a row of n elements; n must be a multiple of the block size (callers check first).
inline int64_t row_bytes(DType type, int64_t n) {
    const DTypeTraits& t = dtype_traits(type);
    return n / t.block_size * t.block_bytes;
}

// The GGUF/ggml type id -> DType; nullopt for ids ggml removed or never had.
// ggml_type_name names any id, known or not ("Q6_K", "Q4_0_4_4 (removed from ggml)",
// "unknown type 99"), so errors can say what was found.
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
std::string ggml_type_name(uint32_t ggml_type);
std::optional<DType> dtype_from_name(std::string_view name);  // "f32", "q8_0", "q4_k", ... (lower case)

}  // namespace graphrun
