// tests/parity/families_parity_test.cpp — every family decodes like llama.cpp: `graphrun make-model --arch
// llama|qwen2|qwen3` writes random-weight files (GQA ratios 1 to 4, head sizes 32 to 128, tied and untied
// output, Llama 3.1's rope_freqs), node-llama-cpp loads them, and graphrun (with the graph its default
// picks from general.architecture) gives llama.cpp's greedy ids. A token may differ only where llama.cpp's
// two best logits are within 0.02 (a near-tie, which last-bit differences such as the CPU variant of
// ggml's f16 dot may flip), and the test checks that it is so: once on graphrun's own greedy run up to the
// first difference, and at every position on llama.cpp's continuation fed back to graphrun in one batch.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/common/near_tie.h"
#include "tests/common/parity_util.h"
#include "tests/common/quantize_test_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using testing::kNearTie;

struct FamilyShape {
    const char* name;
    const char* arch;
    int embd, heads, kv_heads, head_dim;  // head_dim 0: embd / heads
    bool tied, rope_freqs, f16;
};

std::string make_model(const FamilyShape& s) {
    const std::string path = (testing::test_temp_dir() / (std::string("fparity_") + s.name + ".gguf")).string();
    std::vector<std::string> args = {"make-model", path, "--arch", s.arch, "--embd", std::to_string(s.embd),
                                     "--layers", "2", "--heads", std::to_string(s.heads), "--kv-heads",
                                     std::to_string(s.kv_heads), "--ff", std::to_string(2 * s.embd + 16),
                                     "--seed", "1234", "--type", s.f16 ? "f16" : "f32"};
    if (s.head_dim) args.insert(args.end(), {"--head-dim", std::to_string(s.head_dim)});
    if (s.tied) args.push_back("--tied");
    if (s.rope_freqs) args.push_back("--rope-freqs");
    const test::ProcessResult r = test::run_graphrun(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
}

class FamilyParity : public ::testing::TestWithParam<FamilyShape> {};

TEST_P(FamilyParity, GreedyIdsEqualLlamaCppsUpToNearTies) {
    const FamilyShape s = GetParam();
    const std::string model = make_model(s);
    const std::vector<int32_t> prompt = {1, 45, 300, 77, 12, 260};
    const int n = 24;
    auto ref = test::llama_cpp_reference(model, prompt, n, {.ignore_eos = true, .logit_gaps = true});
    if (!ref) GTEST_SKIP() << test::parity_harness_missing().value_or("llama.cpp reference not installed");
    ASSERT_EQ(ref->greedy_ids.size(), size_t(n));

    // graphrun's own greedy run, the command with no --graph: equal up to the first difference, which
    // must be a near-tie of llama.cpp's.
    const test::ProcessResult r = test::run_graphrun({"-m", model, "--tokens", test::join_ids(prompt), "-n",
                                                      std::to_string(n)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<int32_t> ours = test::parse_ids(r.out);
    ASSERT_EQ(ours.size(), size_t(n)) << r.out;
    int same = 0;
    while (same < n && ours[size_t(same)] == ref->greedy_ids[size_t(same)]) ++same;
    if (same < n) {
        EXPECT_LT(ref->top2_gaps[size_t(same)], kNearTie)
            << s.name << ": token " << same << " is " << ours[size_t(same)] << ", llama.cpp's is "
            << ref->greedy_ids[size_t(same)] << " with a top-2 gap of " << ref->top2_gaps[size_t(same)];
    }

    // llama.cpp's continuation fed to graphrun in one batch: at every position graphrun's argmax is
    // llama.cpp's token, or llama.cpp itself was at a near-tie there.
    std::vector<int32_t> tokens = prompt;
    tokens.insert(tokens.end(), ref->greedy_ids.begin(), ref->greedy_ids.end() - 1);
    int64_t n_vocab = 0;
    const std::vector<float> logits = testing::batch_logits(model, tokens, &n_vocab);
    int agree = 0;
    float smallest_gap = 1e30f;
    for (int k = 0; k < n; ++k) {
        const auto row = std::span<const float>(logits).subspan((prompt.size() - 1 + size_t(k)) * size_t(n_vocab),
                                                                size_t(n_vocab));
        const int32_t theirs = ref->greedy_ids[size_t(k)], mine = testing::argmax(row);
        smallest_gap = std::min(smallest_gap, ref->top2_gaps[size_t(k)]);
        agree += mine == theirs;
        if (mine != theirs) {
            EXPECT_LT(ref->top2_gaps[size_t(k)], kNearTie)
                << s.name << " position " << k << ": graphrun's argmax " << mine << " (logit " << row[size_t(mine)]
                << "), llama.cpp's token " << theirs << " (graphrun's logit " << row[size_t(theirs)]
                << "), llama.cpp's top-2 gap " << ref->top2_gaps[size_t(k)];
        }
    }
    std::printf("[ parity   ] %-24s greedy %s (%d/%d before any difference); argmax agrees at %d/%d; "
                "smallest llama.cpp top-2 gap %.3g\n",
                s.name, ours == ref->greedy_ids ? "equal" : "differs", same, n, agree, n, smallest_gap);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FamilyParity,
    ::testing::Values(
        // Llama 3.1-like: rope_freqs, GQA 2, head 32.
        FamilyShape{"llama31_hd32_gqa2", "llama", 64, 2, 1, 0, false, true, false},
        // SmolLM2-like: tied output, GQA 3, head 64, F16.
        FamilyShape{"smollm2_hd64_gqa3_tied", "llama", 192, 3, 1, 0, true, false, true},
        FamilyShape{"llama_hd128_mha", "llama", 256, 2, 2, 0, false, false, false},
        FamilyShape{"qwen2_hd32_gqa2", "qwen2", 64, 2, 1, 0, false, false, false},
        FamilyShape{"qwen2_hd64_gqa3_tied_f16", "qwen2", 192, 3, 1, 0, true, false, true},
        FamilyShape{"qwen2_hd128_gqa2", "qwen2", 256, 2, 1, 0, false, false, false},
        // Qwen3: head size from key_length, Q wider (or narrower) than n_embd.
        FamilyShape{"qwen3_hd128_gqa2", "qwen3", 64, 4, 2, 128, false, false, false},
        FamilyShape{"qwen3_hd64_gqa4_tied_f16", "qwen3", 96, 8, 2, 64, true, false, true},
        FamilyShape{"qwen3_hd32_mha", "qwen3", 80, 2, 2, 32, false, false, false}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace graphrun
