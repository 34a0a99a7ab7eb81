// tests/cli/batch_commands_test.cpp — `graphrun batched`, `batch-bench` and `batched-bench` on the shipped
// model: batched sequences are the single-sequence texts (greedy and seeded), the benchmarks print the
// fields they promise (and only JSON with --json), and bad options are refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

// The text after "sequence I:\n", up to the blank line that ends it.
std::vector<std::string> sequences_of(const std::string& out) {
    std::vector<std::string> texts;
    for (size_t i = 0;; ++i) {
        const std::string head = "sequence " + std::to_string(i) + ":\n";
        const size_t at = out.find(head);
        if (at == std::string::npos) return texts;
        const size_t start = at + head.size(), end = out.find("\n\n", start);
        texts.push_back(out.substr(start, end - start));
    }
}

// What `graphrun -p PROMPT -n N ARGS...` prints: the prompt and its continuation.
std::string single(const std::string& prompt, int n, std::vector<std::string> args) {
    std::vector<std::string> all = {"-p", prompt, "-n", std::to_string(n)};
    all.insert(all.end(), args.begin(), args.end());
    const test::ProcessResult r = test::run_graphrun(all);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.size() - 1);  // without the closing newline
}

TEST(BatchedCommand, GreedySequencesEqualTheSingleSequenceText) {
    const test::ProcessResult r = test::run_graphrun(
        {"batched", "-p", "In the beginning", "--parallel", "3", "-n", "24", "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> texts = sequences_of(r.out);
    ASSERT_EQ(texts.size(), 3u) << r.out;
    const std::string want = single("In the beginning", 24, {"--temp", "0"});
    for (const std::string& t : texts) EXPECT_EQ(t, want);
    EXPECT_THAT(r.err, HasSubstr("3 sequences"));
}

TEST(BatchedCommand, OneSequencePerLineAndSeedsCountUp) {
    const std::string path = (testing::test_temp_dir() / "batched_prompts.txt").string();
    std::ofstream(path) << "And God said\nThe LORD is my shepherd\n\nBlessed are\n";
    const test::ProcessResult r = test::run_graphrun({"batched", "-f", path, "-n", "20", "--seed", "7"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> texts = sequences_of(r.out);
    ASSERT_EQ(texts.size(), 3u) << r.out;  // the empty line is no sequence
    const char* prompts[] = {"And God said", "The LORD is my shepherd", "Blessed are"};
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(texts[size_t(i)], single(prompts[i], 20, {"--seed", std::to_string(7 + i)}));
    // More lines than --parallel is refused, naming both.
    const test::ProcessResult few = test::run_graphrun({"batched", "-f", path, "--parallel", "2"});
    EXPECT_EQ(few.exit_code, 1);
    EXPECT_THAT(few.err, HasSubstr("has 3 lines, more than --parallel 2"));
}

TEST(BatchBenchCommand, JsonHasBothPoliciesAndNothingElseOnStdout) {
    const test::ProcessResult r =
        test::run_graphrun({"batch-bench", "--json", "--requests", "12", "--rate", "200", "--parallel", "4",
                            "--prompt-min", "4", "--prompt-max", "20", "--gen-min", "2", "--gen-max", "12"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);  // throws if anything but JSON is there
    for (const char* policy : {"static", "continuous"}) {
        ASSERT_TRUE(j.contains(policy)) << r.out;
        const nlohmann::json& p = j[policy];
        for (const char* key : {"requests_per_s", "gen_tokens_per_s", "occupancy", "kv_blocks_peak"})
            EXPECT_TRUE(p.contains(key)) << policy << " " << key;
        for (const char* key : {"ttft_ms", "tpot_ms"})
            for (const char* pct : {"p50", "p90", "p99"})
                EXPECT_TRUE(p[key].contains(pct)) << key << " " << pct;
        EXPECT_GT(p["requests_per_s"].get<double>(), 0);
        EXPECT_GT(p["gen_tokens_per_s"].get<double>(), 0);
        EXPECT_GT(p["kv_blocks_peak"].get<int64_t>(), 0);
        EXPECT_EQ(p["requests"].get<int64_t>(), 12);
        EXPECT_GT(p["occupancy"].get<double>(), 0);
        EXPECT_LE(p["occupancy"].get<double>(), 1);
        EXPECT_LE(p["ttft_ms"]["p50"].get<double>(), p["ttft_ms"]["p99"].get<double>());
    }
}

TEST(BatchBenchCommand, SharedPrefixIsFoundAndTheSvgIsWritten) {
    const std::string svg = (testing::test_temp_dir() / "sweep.svg").string();
    const test::ProcessResult r = test::run_graphrun(
        {"batch-bench",  "--json", "--policy",        "continuous", "--requests",   "6",
         "--rate",       "100",    "--parallel",      "3",          "--prompt-min", "40",
         "--prompt-max", "48",     "--shared-prefix", "36",         "--gen-min",    "2",
         "--gen-max",    "4",      "--svg",           svg,          "--sweep",      "50,100"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_FALSE(j.contains("static"));
    // 36 shared tokens are two full blocks: the five requests after the first find them.
    EXPECT_EQ(j["continuous"]["prompt_tokens_reused"].get<int64_t>(), 5 * 32);
    std::ifstream in(svg);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_THAT(text.str(), AllOf(HasSubstr("<svg"), HasSubstr("Generated tokens/s"), HasSubstr("static"),
                                  HasSubstr("continuous"), HasSubstr("<polyline")));
}

TEST(BatchBenchCommand, WorkloadsThatCannotRunAreRefused) {
    const test::ProcessResult r =
        test::run_graphrun({"batch-bench", "--prompt-min", "300", "--prompt-max", "300", "--requests", "2"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("do not fit in the context of 256"));
    const test::ProcessResult p = test::run_graphrun({"batch-bench", "--parallel", "0"});
    EXPECT_EQ(p.exit_code, 1);
    EXPECT_THAT(p.err, HasSubstr("--parallel"));
}

TEST(BatchedBenchCommand, JsonlRowsHaveLlamaBatchedBenchsKeys) {
    const test::ProcessResult r = test::run_graphrun({"batched-bench", "-t", "1", "--npp", "20", "--ntg", "6",
                                                      "--npl", "1,3", "--output-format", "jsonl"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::stringstream lines(r.out);
    std::vector<nlohmann::json> rows;
    for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(rows.size(), 2u);
    for (const nlohmann::json& row : rows) {
        for (const char* key :
             {"pp", "tg", "pl", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed"})
            EXPECT_TRUE(row.contains(key)) << key;
        EXPECT_EQ(row["n_kv"].get<int64_t>(), row["pl"].get<int64_t>() * (20 + 6));
        EXPECT_NEAR(row["speed_tg"].get<double>(), row["pl"].get<double>() * 6 / row["t_tg"].get<double>(),
                    1e-6);
    }
    EXPECT_EQ(rows[1]["pl"].get<int64_t>(), 3);
    const test::ProcessResult table =
        test::run_graphrun({"batched-bench", "--npp", "8", "--ntg", "2", "--npl", "2"});
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_THAT(table.out, AllOf(HasSubstr("|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |"),
                                 HasSubstr("|     8 |      2 |    2 |     20 |")));
    const test::ProcessResult bad = test::run_graphrun({"batched-bench", "--npl", "1,x"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_THAT(bad.err, HasSubstr("--npl: 'x' is not a number of sequences"));
}

}  // namespace
}  // namespace graphrun
