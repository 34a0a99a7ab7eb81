// tests/tools/perplexity_test.cpp — graphrun perplexity as llama-perplexity computes it: chunks of n_ctx from
// an empty cache, BOS first, the second half scored; the base log-prob file and the KL divergence
// against it; the same figures on 1 and 2 threads; errors that name the problem.
#include "tools/lib/perplexity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/text/tokenizer.h"
#include "tests/common/error_of.h"
#include "tests/common/parity_util.h"
#include "tests/common/quantize_test_util.h"
#include "tests/common/test_models.h"
#include "tools/lib/quantize_model.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string model_path() {
    return testing::random_model_file(testing::spec_of(64, 2, 4, 2, 160, 320, 5), "ppl_model");
}

// The definition, by hand: each chunk from an empty cache with BOS first; -log softmax in double.
double ppl_by_hand(const std::string& path, const std::vector<int32_t>& tokens, int64_t n_ctx) {
    const auto model = graph::Model::load(path);
    graph::Session session(model, {.n_ctx = n_ctx});
    double nll = 0;
    int64_t count = 0;
    for (size_t start = 0; start + size_t(n_ctx) <= tokens.size(); start += size_t(n_ctx)) {
        std::vector<int32_t> chunk(tokens.begin() + std::ptrdiff_t(start),
                                   tokens.begin() + std::ptrdiff_t(start) + n_ctx);
        chunk[0] = 1;  // BOS of the random vocabulary
        session.reset();
        const auto logits = session.eval(chunk);
        const int64_t v = session.n_vocab();
        for (int64_t j = n_ctx / 2; j < n_ctx - 1; ++j) {
            const float* row = logits.data() + j * v;
            double max = row[0], sum = 0;
            for (int64_t i = 0; i < v; ++i) max = std::max(max, double(row[i]));
            for (int64_t i = 0; i < v; ++i) sum += std::exp(double(row[i]) - max);
            nll += -(double(row[tokens[start + size_t(j) + 1]]) - max - std::log(sum));
            ++count;
        }
    }
    return std::exp(nll / double(count));
}

TEST(Perplexity, EqualsTheDefinitionComputedByHand) {
    const std::string path = model_path();
    const auto tokens = testing::random_tokens(3 * 40 + 7, 320, 11);  // 3 whole chunks and a rest
    const graph::PerplexityRun run = graph::perplexity(graph::Model::load(path), tokens, {.n_ctx = 40});
    EXPECT_EQ(run.n_chunks, 3);
    EXPECT_EQ(run.count, 3 * (40 - 1 - 20));
    ASSERT_EQ(run.running_ppl.size(), 3u);
    EXPECT_EQ(run.running_ppl.back(), run.ppl);
    EXPECT_NEAR(run.ppl, ppl_by_hand(path, tokens, 40), 1e-6 * run.ppl);
    EXPECT_GT(run.ppl_error, 0);
    EXPECT_LT(run.ppl_error, run.ppl);
    EXPECT_GT(run.ppl, 1);
    // --chunks
    EXPECT_EQ(graph::perplexity(graph::Model::load(path), tokens, {.n_ctx = 40, .max_chunks = 2}).n_chunks,
              2);
}

TEST(Perplexity, FiguresDoNotDependOnTheThreadCount) {
    const std::string path = model_path();
    const auto tokens = testing::random_tokens(2 * 48, 320, 12);
    const auto one = graph::perplexity(graph::Model::load(path), tokens, {.n_ctx = 48, .n_threads = 1});
    const auto two = graph::perplexity(graph::Model::load(path), tokens, {.n_ctx = 48, .n_threads = 2});
    EXPECT_EQ(one.ppl, two.ppl);
    EXPECT_EQ(one.ppl_error, two.ppl_error);
}

// Genesis 1:1-8 (KJV): text the shipped model knows.
const char* kGenesis =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
    "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And "
    "God "
    "said, Let there be light: and there was light. And God saw the light, that it was good: and God divided "
    "the light from the darkness. And God called the light Day, and the darkness he called Night. And the "
    "evening and the morning were the first day. And God said, Let there be a firmament in the midst of the "
    "waters, and let it divide the waters from the waters. And God made the firmament, and divided the "
    "waters "
    "which were under the firmament from the waters which were above the firmament: and it was so. And God "
    "called the firmament Heaven. And the evening and the morning were the second day.";

// The base file in llama.cpp's layout; a model against its own base has (almost) no divergence: only
// the 16-bit rounding of the stored log-probs (steps of 16 / 65535 nats).
TEST(Perplexity, BaseFileAndKlDivergenceAgainstItself) {
    const auto model = graph::Model::load(graph::default_model_path());  // models/kjv-q8_0.gguf
    const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
    const std::vector<int32_t> tokens = tokenizer.encode(kGenesis, true);
    ASSERT_GE(tokens.size(), 96u);
    testing::TempFile base("ppl_base");
    const auto run = graph::perplexity(model, tokens, {.n_ctx = 32, .save_base = base.path});
    const int64_t n_vocab = 2048, nv = 2 * ((n_vocab + 1) / 2) + 4, scored = 32 - 1 - 16;
    const int64_t chunks = int64_t(tokens.size()) / 32;
    EXPECT_EQ(run.n_chunks, chunks);
    EXPECT_EQ(std::filesystem::file_size(base.path),
              uint64_t(20 + chunks * 32 * 4 + chunks * scored * nv * 2));
    std::ifstream in(base.path, std::ios::binary);
    char head[20];
    in.read(head, 20);
    EXPECT_EQ(std::memcmp(head, "_logits_", 8), 0);
    int32_t fields[3];
    std::memcpy(fields, head + 8, 12);
    EXPECT_EQ(fields[0], 32);  // n_ctx
    EXPECT_EQ(fields[1], n_vocab);
    EXPECT_EQ(fields[2], chunks);
    int32_t first_tokens[2];
    in.read(reinterpret_cast<char*>(first_tokens), 8);
    EXPECT_EQ(first_tokens[0], tokens[0]);  // BOS
    EXPECT_EQ(first_tokens[1], tokens[1]);

    const graph::KlDivergence k = graph::kl_divergence(model, base.path, {});
    EXPECT_EQ(k.count, run.count);
    EXPECT_NEAR(k.ppl, run.ppl, 1e-4 * run.ppl);
    EXPECT_NEAR(k.ppl_base, run.ppl, 1e-3 * run.ppl);  // from 16-bit log-probs
    EXPECT_LT(std::fabs(k.kld_mean), 1e-4);
    EXPECT_GT(k.kld_min, -1e-4);
    EXPECT_LT(k.kld_max, 1e-3);
    EXPECT_EQ(k.same_top, 1.0);
    EXPECT_LT(std::fabs(k.p_diff_mean), 1e-3);
    // The shipped model reads Genesis far better than chance (2,048 tokens).
    EXPECT_LT(run.ppl, 100);
}

// A quantized copy against the F32 base: divergence that orders the types.
TEST(Perplexity, QuantizedModelsDivergeFromTheirBaseInOrderOfBits) {
    const std::string f32 =
        testing::random_model_file(testing::spec_of(256, 2, 4, 2, 512, 320, 6), "ppl_model_256");
    const auto tokens = testing::random_tokens(2 * 64, 320, 14);
    testing::TempFile base("ppl_base_256");
    graph::perplexity(graph::Model::load(f32), tokens, {.n_ctx = 64, .save_base = base.path});
    double last = 0;
    for (const char* mix : {"q8_0", "q6_k", "q4_k_m"}) {
        testing::TempFile q(std::string("ppl_") + mix);
        graph::quantize_model(f32, q.path, graph::QuantizeOptions{.mix = mix});
        const graph::KlDivergence k = graph::kl_divergence(graph::Model::load(q.path), base.path, {});
        EXPECT_GT(k.kld_mean, last) << mix;
        EXPECT_LT(k.kld_mean, 0.5) << mix;
        EXPECT_GT(k.kld_max, k.kld_median) << mix;
        EXPECT_LE(k.same_top, 1.0) << mix;
        last = k.kld_mean;
    }
}

using testing::error_of;

TEST(Perplexity, ErrorsNameTheProblem) {
    const std::string path = model_path();
    const auto model = graph::Model::load(path);
    EXPECT_THAT(
        error_of([&] { graph::perplexity(model, testing::random_tokens(50, 320, 1), {.n_ctx = 32}); }),
        HasSubstr("the text is 50 tokens; a context of 32 needs at least 64"));
    EXPECT_THAT(error_of([&] { graph::perplexity(model, testing::random_tokens(50, 320, 1), {.n_ctx = 2}); }),
                HasSubstr("outside 4.."));
    testing::TempFile bad("ppl_bad_base");
    {
        std::ofstream out(bad.path, std::ios::binary);
        out << "not a base file at all";
    }
    EXPECT_THAT(error_of([&] { graph::kl_divergence(model, bad.path, {}); }),
                AllOf(HasSubstr(bad.path), HasSubstr("does not start with \"_logits_\"")));
    // A real base file, cut short.
    testing::TempFile base("ppl_cut_base");
    graph::perplexity(model, testing::random_tokens(64, 320, 2), {.n_ctx = 32, .save_base = base.path});
    std::filesystem::resize_file(base.path, std::filesystem::file_size(base.path) - 10);
    EXPECT_THAT(error_of([&] { graph::kl_divergence(model, base.path, {}); }), HasSubstr("but its header"));
    // Another model's vocabulary.
    testing::TempFile base2("ppl_other_vocab");
    const std::string other =
        testing::random_model_file(testing::spec_of(64, 2, 4, 2, 160, 400, 5), "ppl_v400");
    graph::perplexity(graph::Model::load(other), testing::random_tokens(64, 400, 3),
                      {.n_ctx = 32, .save_base = base2.path});
    EXPECT_THAT(error_of([&] { graph::kl_divergence(model, base2.path, {}); }),
                HasSubstr("vocabulary of 400 tokens, the model has 320"));
    EXPECT_THAT(error_of([&] { graph::kl_divergence(model, "/nonexistent/base", {}); }),
                HasSubstr("/nonexistent/base"));
}

TEST(PerplexityCli, PrintsRunningAndFinalFiguresAndComparesWithABase) {
    const std::string path = model_path();
    const std::string text_path = (testing::test_temp_dir() / "ppl_text.txt").string();
    {
        std::ofstream out(text_path);
        for (int i = 0; i < 40; ++i) out << "the quick brown fox jumps over the lazy dog " << i << "\n";
    }
    testing::TempFile base("ppl_cli_base");
    const test::ProcessResult r = test::run_graphrun(
        {"perplexity", "-m", path, "-f", text_path, "-c", "64", "--kl-divergence-base", base.path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, AllOf(HasSubstr("[1]"), HasSubstr("Final estimate: PPL = "),
                             HasSubstr("saved the log-probs")));
    const test::ProcessResult k =
        test::run_graphrun({"perplexity", "-m", path, "--kl-divergence-base", base.path, "--kl-divergence"});
    ASSERT_EQ(k.exit_code, 0) << k.err;
    EXPECT_THAT(k.out, AllOf(HasSubstr("Mean    KLD:"), HasSubstr("Same top p: 100.000")));
    const test::ProcessResult missing = test::run_graphrun({"perplexity", "-m", path, "--kl-divergence"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_THAT(missing.err, HasSubstr("--kl-divergence needs --kl-divergence-base"));
    std::filesystem::remove(text_path);
}

}  // namespace
}  // namespace graphrun
