// tests/parity/quant_ggml_test.cpp — graphrun's quantizers and dequantizers against ggml's own, called in
// the prebuilt libggml-base.so that the llama.cpp reference harness (node-llama-cpp, installed by
// tools/parity-setup.sh) ships: ggml_quantize_chunk (what llama-quantize calls, here without an
// importance matrix) must write the same bytes as graphrun for the same rows, and ggml's to_float
// must decode graphrun's blocks to the same floats as graphrun's dequantize_row.
// Rows come from the four weight distributions of the accuracy tests plus hand-made edge cases.
// Skipped when the harness is not installed.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ops/quant/traits.h"
#include "tests/common/parity_util.h"
#include "tests/common/quant_test_util.h"

namespace graphrun::ops {
namespace {

// ggml's C API, as declared in ggml.h (the struct's leading fields are checked before use).
struct GgmlTypeTraits {
    const char* type_name;
    int64_t blck_size;
    int64_t blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    void (*to_float)(const void* x, float* y, int64_t k);
    void (*from_float_ref)(const float* x, void* y, int64_t k);
};
using QuantizeChunkFn = size_t (*)(int type, const float* src, void* dst, int64_t start, int64_t nrows,
                                   int64_t n_per_row, const float* imatrix);
using GetTypeTraitsFn = const GgmlTypeTraits* (*)(int type);

struct Ggml {
    void* handle = nullptr;
    QuantizeChunkFn quantize_chunk = nullptr;
    GetTypeTraitsFn type_traits = nullptr;
    std::string why_missing;

    Ggml() {
        if (auto missing = test::parity_harness_missing()) {
            why_missing = *missing;
            return;
        }
        const std::filesystem::path bins = std::filesystem::path(test::parity_dir()) /
                                           "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";
        const std::string lib = (bins / "libggml-base.so").string();
        handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            why_missing = "cannot load " + lib + ": " + dlerror();
            return;
        }
        quantize_chunk = reinterpret_cast<QuantizeChunkFn>(dlsym(handle, "ggml_quantize_chunk"));
        type_traits = reinterpret_cast<GetTypeTraitsFn>(dlsym(handle, "ggml_get_type_traits"));
        if (!quantize_chunk || !type_traits)
            why_missing = lib + " lacks ggml_quantize_chunk / ggml_get_type_traits";
    }
    ~Ggml() {
        if (handle) dlclose(handle);
    }
};

const Ggml& ggml() {
    static const Ggml g;
    return g;
}

// The weight types graphrun quantizes, and ggml's name for each (checks the traits struct's layout).
const std::pair<DType, const char*> kTypes[] = {
    {DType::Q8_0, "q8_0"}, {DType::Q4_0, "q4_0"}, {DType::Q4_1, "q4_1"},
    {DType::Q5_0, "q5_0"}, {DType::Q5_1, "q5_1"}, {DType::Q4_K, "q4_K"},
    {DType::Q5_K, "q5_K"}, {DType::Q6_K, "q6_K"}, {DType::IQ4_XS, "iq4_xs"}, {DType::IQ4_NL, "iq4_nl"}};

// Rows of 1024 values: the four distributions at three scales, and edge cases.
std::vector<std::vector<float>> test_rows() {
    constexpr size_t n = 1024;
    std::vector<std::vector<float>> rows;
    uint32_t seed = 1;
    for (testing::Dist d : {testing::Dist::Uniform, testing::Dist::Normal, testing::Dist::StudentT3,
                            testing::Dist::NormalOutliers})
        for (float scale : {1.0f, 0.02f, 300.0f}) {
            std::vector<float> v = testing::random_values(n, d, seed++);
            for (float& x : v) x *= scale;
            rows.push_back(v);
        }
    rows.push_back(std::vector<float>(n, 0.0f));    // all zero
    rows.push_back(std::vector<float>(n, 0.75f));   // constant, positive
    rows.push_back(std::vector<float>(n, -2.5f));   // constant, negative
    rows.push_back(std::vector<float>(n, 1e-20f));  // below every format's "all zero" threshold
    std::vector<float> spikes(n, 0.0f);
    for (size_t i = 0; i < n; i += 97) spikes[i] = (i % 2 ? -1.0f : 1.0f) * float(i + 1);
    rows.push_back(spikes);
    std::vector<float> ramp(n);
    for (size_t i = 0; i < n; ++i) ramp[i] = float(int(i % 64) - 32) / 8.0f;  // exact levels, ties
    rows.push_back(ramp);
    std::vector<float> positive = testing::random_values(n, testing::Dist::Uniform, 99);
    for (float& x : positive) x = std::fabs(x) + 0.5f;  // min > 0: the affine types' min clamps at 0
    rows.push_back(positive);
    return rows;
}

TEST(QuantGgml, QuantizersWriteGgmlsBytes) {
    if (!ggml().why_missing.empty()) GTEST_SKIP() << ggml().why_missing;
    const auto rows = test_rows();
    for (auto [type, ggml_name] : kTypes) {
        const GgmlTypeTraits* gt = ggml().type_traits(int(type));
        ASSERT_STREQ(gt->type_name, ggml_name);
        ASSERT_EQ(gt->blck_size, dtype_traits(type).block_size);
        ASSERT_EQ(int64_t(gt->type_size), dtype_traits(type).block_bytes);
        const int64_t n = int64_t(rows[0].size()), rb = row_bytes(type, n);
        for (size_t r = 0; r < rows.size(); ++r) {
            std::vector<uint8_t> theirs(static_cast<size_t>(rb)), mine(static_cast<size_t>(rb));
            ggml().quantize_chunk(int(type), rows[r].data(), theirs.data(), 0, 1, n, nullptr);
            quant_traits(type)->quantize_row(rows[r].data(), mine.data(), n);
            int64_t first_bad = -1;
            for (int64_t i = 0; i < rb && first_bad < 0; ++i)
                if (mine[size_t(i)] != theirs[size_t(i)]) first_bad = i;
            EXPECT_EQ(first_bad, -1) << dtype_name(type) << " row " << r << ": first differing byte "
                                     << first_bad << " (block " << first_bad / dtype_traits(type).block_bytes
                                     << ")";
        }
    }
}

TEST(QuantGgml, DequantizersDecodeLikeGgml) {
    if (!ggml().why_missing.empty()) GTEST_SKIP() << ggml().why_missing;
    const auto rows = test_rows();
    for (auto [type, ggml_name] : kTypes) {
        const GgmlTypeTraits* gt = ggml().type_traits(int(type));
        ASSERT_STREQ(gt->type_name, ggml_name);
        const int64_t n = int64_t(rows[0].size());
        for (size_t r = 0; r < rows.size(); ++r) {
            std::vector<uint8_t> q(size_t(row_bytes(type, n)));
            quant_traits(type)->quantize_row(rows[r].data(), q.data(), n);
            std::vector<float> theirs(static_cast<size_t>(n)), mine(static_cast<size_t>(n));
            gt->to_float(q.data(), theirs.data(), n);
            dequantize_row(type, q.data(), mine.data(), n);
            EXPECT_EQ(std::memcmp(theirs.data(), mine.data(), size_t(n) * sizeof(float)), 0)
                << dtype_name(type) << " row " << r;
        }
    }
}

}  // namespace
}  // namespace graphrun::ops
