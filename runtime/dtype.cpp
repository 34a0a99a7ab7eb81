// runtime/dtype.cpp — the dtype traits table and ggml type ids.
#include "runtime/dtype.h"

#include <array>

namespace graphrun {

namespace {

constexpr std::array<DTypeTraits, 5> kTraits = {{
    {"f32", 0, 1, 4},
    {"f16", 1, 1, 2},
    {"q4_0", 2, 32, 18},
    {"q8_0", 8, 32, 34},
    {"i32", 26, 1, 4},
}};

// ggml's type ids as GGUF stores them, so an unsupported tensor is named exactly.
constexpr std::array<const char*, 40> kGgmlNames = {
    "F32",     "F16",    "Q4_0",   "Q4_1",    "Q4_2 (removed)", "Q4_3 (removed)", "Q5_0", "Q5_1",
    "Q8_0",    "Q8_1",   "Q2_K",   "Q3_K",    "Q4_K",           "Q5_K",           "Q6_K", "Q8_K",
    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL",         "IQ3_S",          "IQ2_S", "IQ4_XS",
    "I8",      "I16",    "I32",    "I64",     "F64",            "IQ1_M",          "BF16", "Q4_0_4_4",
    "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};

}  // namespace

const DTypeTraits& dtype_traits(DType type) { return kTraits[static_cast<size_t>(type)]; }

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
    for (size_t i = 0; i < kTraits.size(); ++i)
        if (kTraits[i].ggml_type == ggml_type) return static_cast<DType>(i);
    return std::nullopt;
}

std::string ggml_type_name(uint32_t ggml_type) {
    if (ggml_type < kGgmlNames.size()) return kGgmlNames[ggml_type];
    return "unknown type " + std::to_string(ggml_type);
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (size_t i = 0; i < kTraits.size(); ++i)
        if (name == kTraits[i].name) return static_cast<DType>(i);
    return std::nullopt;
}

}  // namespace graphrun
