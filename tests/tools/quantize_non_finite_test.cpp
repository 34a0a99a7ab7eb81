// tests/tools/quantize_non_finite_test.cpp — `quantize` refuses NaN and Inf in weights with the tensor and
// element named, as it refuses weights too large for a quantized block's fp16 scale (the check
// itself, runtime/finite_check.h, is tests/runtime/finite_weights_test.cpp's).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "runtime/fp16.h"
#include "runtime/gguf.h"
#include "tests/common/error_of.h"
#include "tests/common/test_models.h"
#include "tools/lib/quantize_model.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

using testing::error_of;

// A copy of `in` with n bytes of tensor `name`, from byte `at`, replaced.
std::string with_poked_bytes(const std::string& in, const std::string& name, int64_t at, const void* bytes,
                             size_t n, const std::string& out_name) {
    auto file = GgufFile::open(in);
    GgufWriter w;
    for (const auto& [key, v] : file->metadata()) w.set(key, v);
    std::vector<uint8_t> changed;
    for (const GgufTensor& t : file->tensors()) {
        if (t.name != name) {
            w.add_tensor(t.name, t.type, t.ne, t.data, t.nbytes);
            continue;
        }
        changed.assign(t.data, t.data + t.nbytes);
        std::memcpy(changed.data() + at, bytes, n);
        w.add_tensor(t.name, t.type, t.ne, changed.data(), changed.size());
    }
    const std::string path = (testing::test_temp_dir() / (out_name + ".gguf")).string();
    w.write(path);
    return path;
}

std::string with_poked_weight(const std::string& in, const std::string& name, int64_t index, float value,
                              const std::string& out_name) {
    EXPECT_EQ(GgufFile::open(in)->find_tensor(name)->type, DType::F32);
    return with_poked_bytes(in, name, 4 * index, &value, 4, out_name);
}

TEST(QuantizeNonFinite, NaNOrInfAnywhereIsRefusedNamingTensorAndElement) {
    const std::string clean = testing::random_model_file(testing::spec_of(64, 1, 4, 2, 128), "finite_clean");
    const std::string out = (testing::test_temp_dir() / "finite_out.gguf").string();
    struct Case {
        const char* tensor;
        int64_t index;
        float value;
        const char* expected;
    };
    const Case cases[] = {
        {"blk.0.attn_norm.weight", 17, std::nanf(""), "tensor 'blk.0.attn_norm.weight' has NaN at element 17 (row 0, column 17)"},
        {"blk.0.attn_q.weight", 64 * 3 + 5, std::numeric_limits<float>::infinity(),
         "tensor 'blk.0.attn_q.weight' has +Inf at element 197 (row 3, column 5)"},
        {"output.weight", 0, -std::numeric_limits<float>::infinity(), "tensor 'output.weight' has -Inf at element 0"},
    };
    for (const Case& c : cases) {
        const std::string bad = with_poked_weight(clean, c.tensor, c.index, c.value, "finite_bad");
        for (DType type : {DType::Q8_0, DType::Q4_0}) {
            const std::string message = error_of([&] { graph::quantize_model(bad, out, type); });
            EXPECT_THAT(message, AllOf(HasSubstr(bad + ": "), HasSubstr(c.expected),
                                       HasSubstr("does not quantize non-finite weights")));
            EXPECT_FALSE(std::filesystem::exists(out));
        }
    }
    // A quantized input whose block scale is NaN is refused the same way, copied or converted.
    const std::string q8 = (testing::test_temp_dir() / "finite_q8.gguf").string();
    graph::quantize_model(clean, q8, DType::Q8_0);
    const uint16_t nan16 = 0x7e00;
    const std::string bad_q8 = with_poked_bytes(q8, "blk.0.attn_k.weight", 34 * 3, &nan16, 2, "finite_bad_q8");
    for (DType type : {DType::Q8_0, DType::Q4_0})
        EXPECT_THAT(error_of([&] { graph::quantize_model(bad_q8, out, type); }),
                    HasSubstr("tensor 'blk.0.attn_k.weight' has a block whose scale is NaN at element 96 (row 1, "
                              "column 32)"));
    EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(QuantizeNonFinite, WeightsTooLargeForAnFp16ScaleAreRefused) {
    const std::string clean = testing::random_model_file(testing::spec_of(64, 1, 4, 2, 128), "finite_clean");
    const std::string big = with_poked_weight(clean, "blk.0.ffn_up.weight", 64 * 2 + 40, 1e7f, "finite_big");
    const std::string out = (testing::test_temp_dir() / "finite_big_out.gguf").string();
    EXPECT_THAT(error_of([&] { graph::quantize_model(big, out, DType::Q8_0); }),
                AllOf(HasSubstr("tensor 'blk.0.ffn_up.weight': the block at element 160 (row 2, column 32)"),
                      HasSubstr("too large for q8_0")));
    EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace graphrun
