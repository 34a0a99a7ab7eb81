// tests/parity/quant_llamacpp_test.cpp — graphrun's quantizers against llama.cpp's own output: the same
// random model, F32 and as quantized by llama-quantize (../shared/testdata/llamacpp-quantized), must
// give the same blocks byte for byte when graphrun quantizes the F32 tensors.
// (The types no shared file holds are compared with ggml's own quantizer in tests/parity/quant_ggml_test.cpp.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ops/quant/traits.h"
#include "runtime/gguf.h"

namespace graphrun::ops {
namespace {

const std::string kQuantizedDir = GRAPHRUN_SOURCE_DIR "/../shared/testdata/llamacpp-quantized/";

// Quantizes every tensor of `quantized` stored as `type` from its F32 twin and compares bytes; returns
// how many tensors were compared. Tensors of other types (F32 norms, the mixes' Q6_K) are skipped.
int compare_with_llamacpp(const GgufFile& quantized, DType type) {
    const auto f32 = GgufFile::open(kQuantizedDir + "rand256-F32.gguf");
    int compared = 0;
    for (const GgufTensor& q : quantized.tensors()) {
        if (q.type != type) continue;
        const GgufTensor* src = f32->find_tensor(q.name);
        EXPECT_NE(src, nullptr) << q.name << " missing from the F32 file";
        if (!src) continue;
        EXPECT_EQ(src->type, DType::F32) << q.name;
        EXPECT_EQ(src->ne, q.ne) << q.name;
        const int64_t k = q.ne[0], rows = src->n_elements() / k;
        const int64_t rb = row_bytes(type, k);
        std::vector<uint8_t> mine(static_cast<size_t>(rb));
        const auto* x = reinterpret_cast<const float*>(src->data);
        int64_t bad_rows = 0, first_bad = -1;
        for (int64_t r = 0; r < rows; ++r) {
            quant_traits(type)->quantize_row(x + r * k, mine.data(), k);
            if (std::memcmp(mine.data(), q.data + r * rb, size_t(rb)) != 0 && bad_rows++ == 0) first_bad = r;
        }
        EXPECT_EQ(bad_rows, 0) << q.name << " (" << dtype_name(type) << ", " << rows << " rows of " << k
                               << "): first differing row " << first_bad;
        ++compared;
    }
    return compared;
}

struct FileCase {
    const char* file;
    std::vector<std::pair<DType, int>> tensors;  // type -> how many tensors of it the file holds
};

// Every quantized tensor of every file llama-quantize wrote (2 layers of 7 matrices, token_embd and
// output = 16): Q8_0; Q4_0 with its Q6_K output.weight; the K mixes, whose attn_v / ffn_down of the
// last layer and output.weight get more bits.
TEST(QuantLlamaCpp, BlocksEqualLlamaQuantizeInEveryFile) {
    const FileCase cases[] = {
        {"rand256-Q8_0.gguf", {{DType::Q8_0, 16}}},
        {"rand256-Q4_0.gguf", {{DType::Q4_0, 15}, {DType::Q6_K, 1}}},
        {"rand256-Q4_K_M.gguf", {{DType::Q4_K, 13}, {DType::Q6_K, 3}}},
        {"rand256-Q5_K_M.gguf", {{DType::Q5_K, 13}, {DType::Q6_K, 3}}},
        {"rand256-Q6_K.gguf", {{DType::Q6_K, 16}}},
    };
    for (const FileCase& c : cases) {
        const std::string path = kQuantizedDir + c.file;
        if (!std::filesystem::exists(path)) GTEST_SKIP() << "test data missing: " << path << " (../shared)";
        const auto file = GgufFile::open(path);
        for (auto [type, count] : c.tensors)
            EXPECT_EQ(compare_with_llamacpp(*file, type), count) << c.file << " " << dtype_name(type);
    }
}

}  // namespace
}  // namespace graphrun::ops
