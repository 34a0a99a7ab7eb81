// runtime/dtype.cpp — the dtype table: ggml's type ids, block sizes and block bytes.
//
// Block bytes are the sizes of ggml's block structs (ggml-common.h), e.g. Q4_K = fp16 d, fp16 dmin,
// 12 bytes of 6-bit scales and mins, 128 bytes of nibbles = 144 bytes per 256 weights. The last field
// of a block type's row is where its fp16 scales sit: {count, {byte offsets}}, d first where the
// block starts with it, else after the quants (Q2_K's d and dmin after 16 scale and 64 quant bytes).
#include "runtime/dtype.h"

#include <array>

namespace graphrun {

namespace {

constexpr std::array<DTypeTraits, 35> kTypes = {{
    {DType::F32, "f32", 0, 1, 4, false},
    {DType::F16, "f16", 1, 1, 2, false},
    {DType::Q4_0, "q4_0", 2, 32, 2 + 16, true, {1, {0, 0}}},             // d, 32 nibbles
    {DType::Q4_1, "q4_1", 3, 32, 2 + 2 + 16, true, {2, {0, 2}}},         // d, m, 32 nibbles
    {DType::Q5_0, "q5_0", 6, 32, 2 + 4 + 16, true, {1, {0, 0}}},         // d, 32 high bits, 32 nibbles
    {DType::Q5_1, "q5_1", 7, 32, 2 + 2 + 4 + 16, true, {2, {0, 2}}},     // d, m, high bits, nibbles
    {DType::Q8_0, "q8_0", 8, 32, 2 + 32, true, {1, {0, 0}}},             // d, 32 int8
    {DType::Q8_1, "q8_1", 9, 32, 2 + 2 + 32, true, {2, {0, 2}}},         // d, d * sum, 32 int8
    {DType::Q2_K, "q2_k", 10, 256, 16 + 64 + 2 + 2, true, {2, {80, 82}}},  // scales/mins, 2-bit quants, d, dmin
    {DType::Q3_K, "q3_k", 11, 256, 32 + 64 + 12 + 2, true, {1, {108, 0}}}, // high bits, 2-bit quants, scales, d
    {DType::Q4_K, "q4_k", 12, 256, 2 + 2 + 12 + 128, true, {2, {0, 2}}}, // d, dmin, 6-bit scales/mins, nibbles
    {DType::Q5_K, "q5_k", 13, 256, 2 + 2 + 12 + 32 + 128, true, {2, {0, 2}}},
    {DType::Q6_K, "q6_k", 14, 256, 128 + 64 + 16 + 2, true, {1, {208, 0}}},  // low nibbles, high 2 bits, int8 scales, d
    {DType::Q8_K, "q8_k", 15, 256, 4 + 256 + 32, true},       // float d, 256 int8, 16 int16 sums
    {DType::IQ2_XXS, "iq2_xxs", 16, 256, 2 + 64, true, {1, {0, 0}}},
    {DType::IQ2_XS, "iq2_xs", 17, 256, 2 + 64 + 8, true, {1, {0, 0}}},
    {DType::IQ3_XXS, "iq3_xxs", 18, 256, 2 + 96, true, {1, {0, 0}}},
    {DType::IQ1_S, "iq1_s", 19, 256, 2 + 32 + 16, true, {1, {0, 0}}},
    {DType::IQ4_NL, "iq4_nl", 20, 32, 2 + 16, true, {1, {0, 0}}},
    {DType::IQ3_S, "iq3_s", 21, 256, 2 + 64 + 8 + 32 + 4, true, {1, {0, 0}}},
    {DType::IQ2_S, "iq2_s", 22, 256, 2 + 64 + 8 + 8, true, {1, {0, 0}}},
    {DType::IQ4_XS, "iq4_xs", 23, 256, 2 + 2 + 4 + 128, true, {1, {0, 0}}},  // d, high scale bits, low scale bits, nibbles
    {DType::I8, "i8", 24, 1, 1, false},
    {DType::I16, "i16", 25, 1, 2, false},
    {DType::I32, "i32", 26, 1, 4, false},
    {DType::I64, "i64", 27, 1, 8, false},
    {DType::F64, "f64", 28, 1, 8, false},
    {DType::IQ1_M, "iq1_m", 29, 256, 32 + 16 + 8, true},
    {DType::BF16, "bf16", 30, 1, 2, false},
    {DType::TQ1_0, "tq1_0", 34, 256, 48 + 4 + 2, true, {1, {52, 0}}},
    {DType::TQ2_0, "tq2_0", 35, 256, 64 + 2, true, {1, {64, 0}}},
    {DType::MXFP4, "mxfp4", 39, 32, 1 + 16, true},  // e8m0 exponent, 32 e2m1 nibbles
    {DType::NVFP4, "nvfp4", 40, 64, 4 + 32, true},  // 4 e4m3 scales, 64 e2m1 nibbles
    {DType::Q1_0, "q1_0", 41, 128, 2 + 16, true, {1, {0, 0}}},   // d, 128 sign bits
    {DType::Q2_0, "q2_0", 42, 64, 2 + 16, true, {1, {0, 0}}},    // d, 64 2-bit quants
}};

// The DType's value indexes this: position in kTypes, or -1 for ids that are no type.
constexpr std::array<int8_t, 43> kIndexOfId = [] {
    std::array<int8_t, 43> index{};
    for (int8_t& i : index) i = -1;
    for (size_t k = 0; k < kTypes.size(); ++k) index[kTypes[k].ggml_type] = int8_t(k);
    return index;
}();

static_assert([] {
    for (const DTypeTraits& t : kTypes)
        if (uint32_t(t.type) != t.ggml_type) return false;
    return true;
}(), "a DType's value must be its ggml type id");

static_assert([] {
    for (const DTypeTraits& t : kTypes)
        for (int s = 0; s < t.fp16_scales.count; ++s)
            if (t.fp16_scales.offset[s] + 2 > t.block_bytes) return false;
    return true;
}(), "an fp16 scale must lie inside its block");

// ggml's names of every id it has used, so an error can name a removed type too.
constexpr std::array<const char*, 43> kGgmlNames = {
    "F32",    "F16",     "Q4_0",    "Q4_1",     "Q4_2",       "Q4_3",       "Q5_0",       "Q5_1",
    "Q8_0",   "Q8_1",    "Q2_K",    "Q3_K",     "Q4_K",       "Q5_K",       "Q6_K",       "Q8_K",
    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",    "IQ4_NL",     "IQ3_S",      "IQ2_S",      "IQ4_XS",
    "I8",     "I16",     "I32",     "I64",      "F64",        "IQ1_M",      "BF16",       "Q4_0_4_4",
    "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0",   "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
    "NVFP4",  "Q1_0",    "Q2_0"};

}  // namespace

std::span<const DTypeTraits> dtype_table() { return kTypes; }

const DTypeTraits& dtype_traits(DType type) { return kTypes[size_t(kIndexOfId[size_t(type)])]; }

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
    if (ggml_type >= kIndexOfId.size() || kIndexOfId[ggml_type] < 0) return std::nullopt;
    return kTypes[size_t(kIndexOfId[ggml_type])].type;
}

std::string ggml_type_name(uint32_t ggml_type) {
    if (ggml_type >= kGgmlNames.size()) return "unknown type " + std::to_string(ggml_type);
    if (kIndexOfId[ggml_type] < 0) return std::string(kGgmlNames[ggml_type]) + " (removed from ggml)";
    return kGgmlNames[ggml_type];
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const DTypeTraits& t : kTypes)
        if (name == t.name) return t.type;
    return std::nullopt;
}

}  // namespace graphrun
