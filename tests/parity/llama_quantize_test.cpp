// tests/parity/llama_quantize_test.cpp — `graphrun quantize` reproduces llama-quantize's own files of the
// shared rand256 model (../shared/testdata/llamacpp-quantized), tensor for tensor (type, bytes) and key
// for key: Q8_0, and the Q4_0, Q4_K_M, Q5_K_M and Q6_K mixes. The quantizer's and the mixes' own tests
// are tests/tools/quantize_test.cpp and tests/tools/quant_mix_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "tools/lib/quantize_model.h"
#include "tests/common/quantize_test_util.h"
#include "runtime/gguf.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using testing::metadata_map;
using testing::same_value;

const std::string kDir = testing::shared_dir() + "/testdata/llamacpp-quantized/";

// The strongest check of the whole file: llama-quantize's own Q8_0 file of the shared rand256 model,
// reproduced tensor for tensor and key for key.
TEST(Quantize, ReproducesLlamaQuantizesQ8_0FileOfRand256) {
    const std::string dir = testing::shared_dir() + "/testdata/llamacpp-quantized/";
    if (!std::filesystem::exists(dir + "rand256-Q8_0.gguf"))
        GTEST_SKIP() << "needs " << dir << " (../shared)";
    testing::TempFile out("quantize_rand256_q8_0");
    graph::quantize_model(dir + "rand256-F32.gguf", out.path, DType::Q8_0);
    const auto ours = GgufFile::open(out.path);
    const auto theirs = GgufFile::open(dir + "rand256-Q8_0.gguf");

    ASSERT_EQ(ours->tensors().size(), theirs->tensors().size());
    for (const GgufTensor& t : theirs->tensors()) {
        SCOPED_TRACE(t.name);
        const GgufTensor* o = ours->find_tensor(t.name);
        ASSERT_NE(o, nullptr);
        EXPECT_EQ(o->type, t.type);
        EXPECT_EQ(o->ne, t.ne);
        ASSERT_EQ(o->nbytes, t.nbytes);
        EXPECT_EQ(std::memcmp(o->data, t.data, t.nbytes), 0);
    }
    auto a = metadata_map(*ours), b = metadata_map(*theirs);
    for (const auto& [key, value] : b) {
        ASSERT_TRUE(a.count(key)) << key << " is missing";
        EXPECT_TRUE(same_value(*a.at(key), *value)) << key;
    }
    for (const auto& [key, value] : a) EXPECT_TRUE(b.count(key)) << key << " is not in llama-quantize's file";
}

class LlamaQuantizeFile : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(LlamaQuantizeFile, IsReproducedTensorForTensorAndKeyForKey) {
    const auto [mix, file] = GetParam();
    if (!std::filesystem::exists(kDir + file)) GTEST_SKIP() << "needs " << kDir << " (../shared)";
    testing::TempFile out(std::string("mix_rand256_") + mix);
    graph::quantize_model(kDir + "rand256-F32.gguf", out.path, graph::QuantizeOptions{.mix = mix});
    const auto ours = GgufFile::open(out.path);
    const auto theirs = GgufFile::open(kDir + file);
    ASSERT_EQ(ours->tensors().size(), theirs->tensors().size());
    for (const GgufTensor& t : theirs->tensors()) {
        SCOPED_TRACE(t.name);
        const GgufTensor* o = ours->find_tensor(t.name);
        ASSERT_NE(o, nullptr);
        EXPECT_EQ(o->type, t.type);
        EXPECT_EQ(o->ne, t.ne);
        ASSERT_EQ(o->nbytes, t.nbytes);
        EXPECT_EQ(std::memcmp(o->data, t.data, t.nbytes), 0);
    }
    for (const auto& [key, value] : theirs->metadata()) {
        const GgufValue* mine = ours->find(key);
        ASSERT_NE(mine, nullptr) << key;
        if (value.is_integer()) {
            EXPECT_EQ(mine->as_int(key), value.as_int(key)) << key;
        }
    }
    EXPECT_EQ(ours->metadata().size(), theirs->metadata().size());
}

INSTANTIATE_TEST_SUITE_P(Rand256, LlamaQuantizeFile,
                         ::testing::Values(std::pair{"q4_0", "rand256-Q4_0.gguf"},
                                           std::pair{"q4_k_m", "rand256-Q4_K_M.gguf"},
                                           std::pair{"q5_k_m", "rand256-Q5_K_M.gguf"},
                                           std::pair{"q6_k", "rand256-Q6_K.gguf"}),
                         [](const auto& info) { return std::string(info.param.first); });

}  // namespace
}  // namespace graphrun
