// tests/tools/quant_mix_test.cpp — the per-tensor type choices of graphrun quantize's mixes (llama-quantize's)
// by their rules, on a 32-layer skeleton: which attn_v / ffn_down layers get more bits in each mix,
// output.weight, tied embeddings, rows that are not whole blocks, --pure, forced types. Whole files
// equal to llama-quantize's rand256 files are tests/parity/llama_quantize_test.cpp.
#include "tools/lib/quant_mix.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "tools/lib/quantize_model.h"
#include "tests/common/quantize_test_util.h"
#include "runtime/gguf.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

// A skeleton of a Llama: n_layer layers of the seven matrices (rows of `k`, ffn_down rows of `ff`),
// norms, token_embd and (unless tied) output; zeros, since only names and shapes matter here.
std::string skeleton(const std::string& name, int n_layer, int64_t k, int64_t ff, bool tied = false,
                     int n_head = 32, int n_head_kv = 8) {
    const std::string path = (testing::test_temp_dir() / (name + ".gguf")).string();
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", uint32_t(n_layer));
    w.set_u32("llama.attention.head_count", uint32_t(n_head));
    w.set_u32("llama.attention.head_count_kv", uint32_t(n_head_kv));
    auto add = [&](const std::string& tensor, std::vector<int64_t> ne) {
        const int64_t n = ne.size() == 1 ? ne[0] : ne[0] * ne[1];
        const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
        w.add_tensor(tensor, DType::F32, ne, zeros.data(), zeros.size() * sizeof(float));
    };
    add("token_embd.weight", {k, 4});
    for (int l = 0; l < n_layer; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        add(b + "attn_norm.weight", {k});
        for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"})
            add(b + m + ".weight", {k, 2});
        add(b + "ffn_down.weight", {ff, 2});
    }
    add("output_norm.weight", {k});
    if (!tied) add("output.weight", {k, 4});
    w.write(path);
    return path;
}

// The type each tensor gets, by name.
std::map<std::string, DType> choices(const std::string& path, const char* mix,
                                     graph::QuantMixOptions o = {}) {
    const auto f = GgufFile::open(path);
    const graph::TensorTypeChooser planner(*f, *graph::find_quant_mix(mix), o);
    std::map<std::string, DType> out;
    for (const GgufTensor& t : f->tensors()) out[t.name] = planner.choose(t).type;
    return out;
}

std::string layer_tensor(int layer, const char* m) {
    return "blk." + std::to_string(layer) + "." + m + ".weight";
}

// use_more_bits for 32 layers: the first 4 (< 32/8), the last 4 (>= 28) and every third between:
// (i - 4) % 3 == 2, i.e. 6, 9, 12, ..., 27.
bool more_bits_32(int i) {
    return i < 4 || i >= 28 || (i - 4) % 3 == 2;
}

TEST(QuantMix, Q4_K_MGivesAttnVAndFfnDownMoreBitsInTheRightLayers) {
    const auto c = choices(skeleton("mix_32", 32, 256, 512), "q4_k_m");
    for (int l = 0; l < 32; ++l) {
        const DType want = more_bits_32(l) ? DType::Q6_K : DType::Q4_K;
        EXPECT_EQ(c.at(layer_tensor(l, "attn_v")), want) << l;
        EXPECT_EQ(c.at(layer_tensor(l, "ffn_down")), want) << l;
        EXPECT_EQ(c.at(layer_tensor(l, "attn_q")), DType::Q4_K);
        EXPECT_EQ(c.at(layer_tensor(l, "ffn_up")), DType::Q4_K);
    }
    EXPECT_EQ(c.at("output.weight"), DType::Q6_K);
    EXPECT_EQ(c.at("token_embd.weight"), DType::Q4_K);
    EXPECT_EQ(c.at("blk.0.attn_norm.weight"), DType::F32);  // not a matrix: untouched
    const auto c5 = choices(skeleton("mix_32", 32, 256, 512), "q5_k_m");
    for (int l = 0; l < 32; ++l)
        EXPECT_EQ(c5.at(layer_tensor(l, "ffn_down")), more_bits_32(l) ? DType::Q6_K : DType::Q5_K);
}

TEST(QuantMix, Q4_K_SGivesQ5_KToTheFirstLayers) {
    const auto c = choices(skeleton("mix_32", 32, 256, 512), "q4_k_s");
    for (int l = 0; l < 32; ++l) {
        EXPECT_EQ(c.at(layer_tensor(l, "attn_v")), l < 4 ? DType::Q5_K : DType::Q4_K) << l;
        EXPECT_EQ(c.at(layer_tensor(l, "ffn_down")), l < 32 / 8 ? DType::Q5_K : DType::Q4_K) << l;
    }
    EXPECT_EQ(c.at("output.weight"), DType::Q6_K);
}

TEST(QuantMix, Iq4XsAttnVWithManyQueryHeadsPerKvHead) {
    const auto gqa4 = choices(skeleton("mix_32", 32, 256, 512), "iq4_xs");  // 32 / 8 heads
    EXPECT_EQ(gqa4.at(layer_tensor(10, "attn_v")), DType::Q5_K);
    EXPECT_EQ(gqa4.at(layer_tensor(3, "ffn_down")), DType::Q5_K);
    EXPECT_EQ(gqa4.at(layer_tensor(10, "ffn_down")), DType::IQ4_XS);
    const auto mha = choices(skeleton("mix_32_mha", 32, 256, 512, false, 8, 8), "iq4_xs");
    EXPECT_EQ(mha.at(layer_tensor(10, "attn_v")), DType::IQ4_XS);
}

TEST(QuantMix, LegacyMixesOnlyChangeTheOutput) {
    for (const char* mix : {"q4_0", "q4_1", "q5_0", "q5_1", "q6_k", "q5_k_s"}) {
        const auto c = choices(skeleton("mix_32", 32, 256, 512), mix);
        const DType base = graph::find_quant_mix(mix)->base;
        for (int l = 0; l < 32; ++l)
            for (const char* m : {"attn_v", "ffn_down", "attn_k"})
                EXPECT_EQ(c.at(layer_tensor(l, m)), base) << mix;
        EXPECT_EQ(c.at("output.weight"), DType::Q6_K) << mix;
    }
    EXPECT_EQ(choices(skeleton("mix_32", 32, 256, 512), "q8_0").at("output.weight"), DType::Q8_0);
}

// Rows of 896 (Qwen2.5-0.5B) are not whole 256-blocks: Q4_K -> Q5_0, Q6_K -> Q8_0; rows of 4864 + 100
// fit no 32-block either: F16 (llama.cpp's choice); in a 32-block mix graphrun keeps them as they are.
TEST(QuantMix, RowsThatAreNotWholeBlocksFallBack) {
    const std::string path = skeleton("mix_896", 8, 896, 4964);
    const auto c = choices(path, "q4_k_m");
    EXPECT_EQ(c.at(layer_tensor(2, "attn_q")), DType::Q5_0);
    EXPECT_EQ(c.at(layer_tensor(0, "attn_v")), DType::Q8_0);  // Q6_K (more bits) -> Q8_0
    EXPECT_EQ(c.at(layer_tensor(2, "ffn_down")), DType::F16);
    EXPECT_EQ(c.at("output.weight"), DType::Q8_0);
    EXPECT_EQ(choices(path, "q5_k_m").at(layer_tensor(2, "attn_q")), DType::Q5_1);
    const auto f = GgufFile::open(path);
    const graph::TensorTypeChooser q4_0(*f, *graph::find_quant_mix("q4_0"), {});
    const graph::TensorChoice down = q4_0.choose(*f->find_tensor(layer_tensor(2, "ffn_down")));
    EXPECT_TRUE(down.unblockable);
    EXPECT_EQ(down.type, DType::F32);
    EXPECT_THAT(down.why, HasSubstr("4964"));
    const graph::TensorChoice q = graph::TensorTypeChooser(*f, *graph::find_quant_mix("q4_k_m"), {})
                                      .choose(*f->find_tensor(layer_tensor(2, "attn_q")));
    EXPECT_THAT(q.why, HasSubstr("rows of 896 elements are not a multiple of the q4_k block size 256: q5_0"));
}

TEST(QuantMix, TiedEmbeddingsAreTreatedAsTheOutput) {
    const auto c = choices(skeleton("mix_tied", 4, 256, 512, true), "q4_k_m");
    EXPECT_EQ(c.at("token_embd.weight"), DType::Q6_K);
}

TEST(QuantMix, PureAndForcedTypes) {
    const std::string path = skeleton("mix_32", 32, 256, 512);
    const auto pure = choices(path, "q4_k_m", {.pure = true});
    for (const auto& [name, type] : pure) {
        if (name.find("norm") == std::string::npos) {
            EXPECT_EQ(type, DType::Q4_K) << name;
        }
    }
    const auto forced =
        choices(path, "q4_k_m", {.output_tensor_type = DType::Q8_0, .token_embedding_type = DType::F16});
    EXPECT_EQ(forced.at("output.weight"), DType::Q8_0);
    EXPECT_EQ(forced.at("token_embd.weight"), DType::F16);
    EXPECT_EQ(forced.at(layer_tensor(0, "attn_v")), DType::Q6_K);  // the mix's other rules still apply
}

TEST(QuantMix, NamesAndErrors) {
    EXPECT_STREQ(graph::find_quant_mix("Q4_K_M")->name, "q4_k_m");
    EXPECT_STREQ(graph::find_quant_mix("q4_k")->name, "q4_k_m");  // llama-quantize's alias
    EXPECT_EQ(graph::find_quant_mix("q4_k_m")->llama_ftype, 15u);
    EXPECT_EQ(graph::find_quant_mix("q3_k_m"), nullptr);
    const std::string path = skeleton("mix_32", 32, 256, 512);
    testing::TempFile out("mix_errors");
    try {
        graph::quantize_model(path, out.path, graph::QuantizeOptions{.mix = "q3_k_m"});
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), HasSubstr("unknown type 'q3_k_m', expected one of q8_0, q4_0"));
    }
    // A forced type whose blocks do not divide the rows is refused before anything is written.
    try {
        graph::quantize_model(skeleton("mix_896", 8, 896, 4964), out.path,
                              graph::QuantizeOptions{.mix = "q8_0", .output_tensor_type = DType::Q4_K});
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(),
                    HasSubstr("tensor 'output.weight' has rows of 896 elements, not whole q4_k blocks"));
    }
    EXPECT_FALSE(std::filesystem::exists(out.path));
}

}  // namespace
}  // namespace graphrun
