// tests/runtime/dtype_test.cpp — the dtype table: every ggml type's id, block size and bytes per block, so
// any GGUF file can be read and sized, and the names the CLI and plan dump use.
#include "runtime/dtype.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace graphrun {
namespace {

// Bytes per block from ggml's block structs (ggml-common.h), written out field by field.
TEST(DType, BlockLayoutsAreGgmls) {
    struct Expected {
        uint32_t id;
        const char* name;
        int64_t block_size, block_bytes;
    };
    const Expected expected[] = {
        {0, "f32", 1, 4},
        {1, "f16", 1, 2},
        {2, "q4_0", 32, 2 + 16},
        {3, "q4_1", 32, 4 + 16},
        {6, "q5_0", 32, 2 + 4 + 16},
        {7, "q5_1", 32, 4 + 4 + 16},
        {8, "q8_0", 32, 2 + 32},
        {9, "q8_1", 32, 4 + 32},
        {10, "q2_k", 256, 84},
        {11, "q3_k", 256, 110},
        {12, "q4_k", 256, 144},
        {13, "q5_k", 256, 176},
        {14, "q6_k", 256, 210},
        {15, "q8_k", 256, 292},
        {16, "iq2_xxs", 256, 66},
        {17, "iq2_xs", 256, 74},
        {18, "iq3_xxs", 256, 98},
        {19, "iq1_s", 256, 50},
        {20, "iq4_nl", 32, 18},
        {21, "iq3_s", 256, 110},
        {22, "iq2_s", 256, 82},
        {23, "iq4_xs", 256, 136},
        {24, "i8", 1, 1},
        {25, "i16", 1, 2},
        {26, "i32", 1, 4},
        {27, "i64", 1, 8},
        {28, "f64", 1, 8},
        {29, "iq1_m", 256, 56},
        {30, "bf16", 1, 2},
        {34, "tq1_0", 256, 54},
        {35, "tq2_0", 256, 66},
        {39, "mxfp4", 32, 17},
        {40, "nvfp4", 64, 36},
        {41, "q1_0", 128, 18},
        {42, "q2_0", 64, 18},
    };
    EXPECT_EQ(dtype_table().size(), std::size(expected));
    for (const Expected& e : expected) {
        const std::optional<DType> type = dtype_from_ggml(e.id);
        ASSERT_TRUE(type.has_value()) << "ggml id " << e.id;
        const DTypeTraits& t = dtype_traits(*type);
        EXPECT_EQ(uint32_t(*type), e.id);  // a DType's value is its ggml id
        EXPECT_EQ(t.ggml_type, e.id);
        EXPECT_STREQ(t.name, e.name);
        EXPECT_EQ(t.block_size, e.block_size) << e.name;
        EXPECT_EQ(t.block_bytes, e.block_bytes) << e.name;
        EXPECT_EQ(t.quantized, e.block_size > 1) << e.name;
        EXPECT_EQ(dtype_from_name(e.name), type) << e.name;
    }
}

TEST(DType, RemovedAndUnknownIdsAreNamedButAreNoType) {
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u})
        EXPECT_FALSE(dtype_from_ggml(id).has_value()) << id;
    EXPECT_EQ(ggml_type_name(14), "Q6_K");
    EXPECT_EQ(ggml_type_name(31), "Q4_0_4_4 (removed from ggml)");
    EXPECT_EQ(ggml_type_name(4), "Q4_2 (removed from ggml)");
    EXPECT_EQ(ggml_type_name(99), "unknown type 99");
    EXPECT_FALSE(dtype_from_name("Q4_K").has_value());    // names are lower case
    EXPECT_FALSE(dtype_from_name("q4_k_m").has_value());  // a file mix, not a type
}

TEST(DType, SizesAndBitsPerWeight) {
    EXPECT_EQ(row_bytes(DType::Q4_K, 4096), 16 * 144);
    EXPECT_EQ(row_bytes(DType::Q6_K, 768), 3 * 210);
    EXPECT_EQ(row_bytes(DType::F16, 7), 14);
    EXPECT_DOUBLE_EQ(dtype_bits_per_weight(DType::Q4_0), 4.5);
    EXPECT_DOUBLE_EQ(dtype_bits_per_weight(DType::Q4_K), 4.5);
    EXPECT_DOUBLE_EQ(dtype_bits_per_weight(DType::Q5_K), 5.5);
    EXPECT_DOUBLE_EQ(dtype_bits_per_weight(DType::Q6_K), 6.5625);
    EXPECT_DOUBLE_EQ(dtype_bits_per_weight(DType::IQ4_XS), 4.25);
    EXPECT_DOUBLE_EQ(dtype_bits_per_weight(DType::F32), 32.0);
    std::set<std::string> names;
    for (const DTypeTraits& t : dtype_table()) EXPECT_TRUE(names.insert(t.name).second) << t.name;
}

}  // namespace
}  // namespace graphrun
