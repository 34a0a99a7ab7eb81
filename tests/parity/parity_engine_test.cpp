// tests/parity/parity_engine_test.cpp — graphrun's greedy tokens equal llama.cpp's.
//
// Two sources of truth: expected.json in ../shared (ids llama.cpp wrote for stories260K and the
// rand256 files) and live runs of llama.cpp (node-llama-cpp) on files `graphrun make-model` writes
// at several shapes: odd widths, GQA ratios 1, 2 and 4, F32 and F16 weights. Where graphrun's ids
// differ, every differing position must be one of llama.cpp's near-ties (tests/common/near_tie.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/common/near_tie.h"
#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

std::vector<int32_t> graphrun_greedy(const std::string& model, const std::vector<int32_t>& prompt, int n,
                                     int threads = 0) {
    test::ProcessResult r = test::run_graphrun(
        {"-m", model, "--tokens", test::join_ids(prompt), "-n", std::to_string(n), "-t", std::to_string(threads)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return test::parse_ids(r.out);
}

// graphrun's greedy ids `got` against llama.cpp's `want`: equal, or differing only at llama.cpp's
// near-ties, which a live llama.cpp run with logit gaps tells.
void expect_llama_ids_up_to_near_ties(const std::string& model, const std::vector<int32_t>& prompt,
                                      const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
    if (got == want) return;
    test::LlamaReferenceOptions options;
    options.ignore_eos = true;
    options.logit_gaps = true;
    const auto ref = test::llama_cpp_reference(model, prompt, int(want.size()), options);
    ASSERT_TRUE(ref) << "graphrun's ids differ from llama.cpp's; telling a near-tie needs llama.cpp: "
                     << test::parity_harness_missing().value_or("");
    const testing::NearTieCheck c = testing::check_up_to_near_ties(model, prompt, *ref);
    EXPECT_TRUE(c.ok) << c.what;
    if (c.ok) std::printf("[ near-tie ] %s: %d flip(s), all near-ties\n%s", model.c_str(), c.flips, c.what.c_str());
}

class ExpectedJson : public ::testing::TestWithParam<std::string> {};

TEST_P(ExpectedJson, GreedyIdsEqualLlamaCpps) {
    const std::string dir = testing::shared_dir();
    const std::string expected_path = dir + "/testdata/llamacpp-quantized/expected.json";
    if (!std::filesystem::exists(expected_path)) GTEST_SKIP() << "no " << expected_path << " (needs ../shared)";
    std::ifstream in(expected_path);
    const auto expected = nlohmann::json::parse(in);
    const std::string file = GetParam();
    const std::string model = file == "stories260K.gguf" ? dir + "/models/" + file
                                                         : dir + "/testdata/llamacpp-quantized/" + file;
    const auto prompt = expected["prompt_ids"].get<std::vector<int32_t>>();
    const auto want = expected["greedy_ids"][file].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = graphrun_greedy(model, prompt, int(want.size()));
    EXPECT_EQ(graphrun_greedy(model, prompt, int(want.size()), 1), got) << file << ": one thread differs from two";
    expect_llama_ids_up_to_near_ties(model, prompt, got, want);
}

INSTANTIATE_TEST_SUITE_P(Files, ExpectedJson,
                         ::testing::Values("stories260K.gguf", "rand256-F32.gguf", "rand256-Q8_0.gguf",
                                           "rand256-Q4_0.gguf", "rand256-Q4_K_M.gguf", "rand256-Q5_K_M.gguf",
                                           "rand256-Q6_K.gguf"),
                         [](const auto& info) {
                             std::string name = info.param.substr(0, info.param.find('.'));
                             for (char& c : name)
                                 if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

struct ParityShape {
    const char* name;
    int64_t embd, layers, heads, kv_heads, ff;
    DType type;
};

class LiveLlamaCpp : public ::testing::TestWithParam<ParityShape> {};

TEST_P(LiveLlamaCpp, MakeModelFilesDecodeLikeLlamaCpp) {
    const ParityShape s = GetParam();
    graph::RandomLlamaSpec spec = testing::spec_of(s.embd, s.layers, s.heads, s.kv_heads, s.ff, 320, 1234);
    spec.type = s.type;
    const std::string model = testing::random_model_file(spec, std::string("parity_") + s.name);
    const std::vector<int32_t> prompt = {1, 45, 300, 77, 12, 260};
    const int n = 24;
    test::LlamaReferenceOptions options;
    options.ignore_eos = true;  // graphrun's --tokens mode generates exactly n tokens
    auto ref = test::llama_cpp_reference(model, prompt, n, options);
    if (!ref) GTEST_SKIP() << test::parity_harness_missing().value_or("llama.cpp reference not installed");
    const std::vector<int32_t> got = graphrun_greedy(model, prompt, n);
    EXPECT_EQ(graphrun_greedy(model, prompt, n, 1), got) << s.name << ": one thread differs from two";
    expect_llama_ids_up_to_near_ties(model, prompt, got, ref->greedy_ids);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LiveLlamaCpp,
                         ::testing::Values(ParityShape{"w24_mha", 24, 2, 6, 6, 56, DType::F32},
                                           ParityShape{"w40_gqa2", 40, 3, 4, 2, 88, DType::F32},
                                           ParityShape{"w48_gqa4_f16", 48, 2, 8, 2, 100, DType::F16},
                                           ParityShape{"w72_gqa2_f16", 72, 2, 6, 3, 136, DType::F16}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace graphrun
