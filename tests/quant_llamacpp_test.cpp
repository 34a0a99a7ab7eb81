// tests/quant_llamacpp_test.cpp — graphrun's quantizers against llama.cpp's own output: the same
// random model, F32 and as quantized by llama-quantize (../shared/testdata/llamacpp-quantized), must
// give the same blocks byte for byte when graphrun quantizes the F32 tensors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/quant.h"
#include "runtime/gguf.h"

namespace graphrun::ops {
namespace {

const std::string kDir = GRAPHRUN_SOURCE_DIR "/../shared/testdata/llamacpp-quantized/";

// A tensor of the llama.cpp-quantized file: where its blocks are and what type ggml says they are.
struct QuantizedTensor {
    std::string name;
    uint32_t ggml_type;
    std::vector<int64_t> ne;
    const uint8_t* data;
};

std::vector<QuantizedTensor> tensors_of(const GgufFile& file) {
    std::vector<QuantizedTensor> out;
    for (const GgufTensor& t : file.tensors())
        out.push_back({t.name, dtype_traits(t.type).ggml_type, t.ne, t.data});
    return out;
}

// GgufFile refuses files with tensors graphrun cannot run (the Q4_0 file's output.weight is Q6_K),
// as a model loader should. This test only needs the tensor directory, so it walks it itself:
// header, metadata (skipped), tensor infos, aligned data section. Trusted test data: no hostile-file
// checks beyond bounds.
class TensorDirectory {
  public:
    explicit TensorDirectory(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        if (bytes_.size() < 24 || std::memcmp(bytes_.data(), "GGUF", 4) != 0)
            throw std::runtime_error(path + ": not a GGUF file");
        pos_ = 8;  // magic, version
        const uint64_t n_tensors = read<uint64_t>(), n_kv = read<uint64_t>();
        uint64_t alignment = 32;
        for (uint64_t i = 0; i < n_kv; ++i) {
            const std::string key = read_string();
            const auto type = GgufType(read<uint32_t>());
            if (key == "general.alignment" && type == GgufType::U32) {
                alignment = read<uint32_t>();
                continue;
            }
            skip_value(type);
        }
        std::vector<std::pair<QuantizedTensor, uint64_t>> infos;
        for (uint64_t i = 0; i < n_tensors; ++i) {
            QuantizedTensor t;
            t.name = read_string();
            t.ne.resize(read<uint32_t>());
            for (int64_t& d : t.ne) d = int64_t(read<uint64_t>());
            t.ggml_type = read<uint32_t>();
            infos.push_back({t, read<uint64_t>()});
        }
        const uint64_t data_start = (pos_ + alignment - 1) / alignment * alignment;
        for (auto& [t, offset] : infos) {
            if (data_start + offset > bytes_.size())
                throw std::runtime_error(path + ": " + t.name + " past the end");
            t.data = bytes_.data() + data_start + offset;
            tensors_.push_back(t);
        }
    }
    const std::vector<QuantizedTensor>& tensors() const { return tensors_; }

  private:
    template <typename T>
    T read() {
        if (pos_ + sizeof(T) > bytes_.size()) throw std::runtime_error("GGUF truncated");
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof v);
        pos_ += sizeof v;
        return v;
    }
    std::string read_string() {
        const uint64_t n = read<uint64_t>();
        if (pos_ + n > bytes_.size()) throw std::runtime_error("GGUF truncated");
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), size_t(n));
        pos_ += n;
        return s;
    }
    void skip_value(GgufType type) {
        switch (type) {
            case GgufType::U8:
            case GgufType::I8:
            case GgufType::BOOL:
                pos_ += 1;
                break;
            case GgufType::U16:
            case GgufType::I16:
                pos_ += 2;
                break;
            case GgufType::U32:
            case GgufType::I32:
            case GgufType::F32:
                pos_ += 4;
                break;
            case GgufType::U64:
            case GgufType::I64:
            case GgufType::F64:
                pos_ += 8;
                break;
            case GgufType::STRING:
                read_string();
                break;
            case GgufType::ARRAY: {
                const auto elem = GgufType(read<uint32_t>());
                const uint64_t count = read<uint64_t>();
                for (uint64_t i = 0; i < count; ++i) skip_value(elem);
                break;
            }
            default:
                throw std::runtime_error("GGUF value of unknown type " + std::to_string(uint32_t(type)));
        }
    }
    std::vector<uint8_t> bytes_;
    size_t pos_ = 0;
    std::vector<QuantizedTensor> tensors_;
};

// Quantizes every tensor stored as `type` from its F32 twin and compares bytes; returns how many
// tensors were compared. Others (F32 norms, the Q4_0 file's Q6_K output.weight) are skipped.
int compare_with_llamacpp(const std::vector<QuantizedTensor>& quantized, DType type) {
    const auto f32 = GgufFile::open(kDir + "rand256-F32.gguf");
    int compared = 0;
    for (const QuantizedTensor& q : quantized) {
        if (q.ggml_type != dtype_traits(type).ggml_type) continue;
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

TEST(QuantLlamaCpp, Q8_0BlocksEqualLlamaQuantize) {
    if (!std::filesystem::exists(kDir + "rand256-Q8_0.gguf"))
        GTEST_SKIP() << "test data missing: " << kDir << " (../shared beside the source tree)";
    const auto file = GgufFile::open(kDir + "rand256-Q8_0.gguf");
    const int n = compare_with_llamacpp(tensors_of(*file), DType::Q8_0);
    EXPECT_EQ(n, 16);  // token_embd, output and 7 matrices in each of the 2 layers
}

TEST(QuantLlamaCpp, Q4_0BlocksEqualLlamaQuantize) {
    if (!std::filesystem::exists(kDir + "rand256-Q4_0.gguf"))
        GTEST_SKIP() << "test data missing: " << kDir << " (../shared beside the source tree)";
    const TensorDirectory file(kDir + "rand256-Q4_0.gguf");
    const int n = compare_with_llamacpp(file.tensors(), DType::Q4_0);
    EXPECT_EQ(n, 15);  // the same less output.weight, which is Q6_K there
}

}  // namespace
}  // namespace graphrun::ops
