// tests/tools/bench_test.cpp — `graphrun bench`: llama-bench's options and output formats, on a tiny model.
// Only what the tool prints and how it reads its options is checked here; speed itself is measured
// by running it (docs/performance.md), never asserted in a test.
#include "tools/lib/bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string tiny_model() {
    return testing::random_model_file(testing::spec_of(32, 2, 4, 2, 64), "bench_tiny");
}

std::string bench_error_of(const std::vector<std::string>& args) {
    try {
        graph::parse_bench_options(args);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(BenchOptions, ListsRangesAndRepeatsAsLlamaBench) {
    EXPECT_THAT(graph::parse_bench_list("128,512", "-p", 0), ElementsAre(128, 512));
    EXPECT_THAT(graph::parse_bench_list("128-512*2", "-p", 0), ElementsAre(128, 256, 512));
    EXPECT_THAT(graph::parse_bench_list("1-7+3", "-t", 1), ElementsAre(1, 4, 7));
    EXPECT_THAT(graph::parse_bench_list("1-8+3,0", "-p", 0), ElementsAre(1, 4, 7, 0));
    EXPECT_THAT(graph::parse_bench_list("5-5", "-d", 0), ElementsAre(5));

    const graph::BenchOptions o = graph::parse_bench_options(
        {"-m",  "a.gguf,b.gguf", "-p", "128",    "-p",          "512",       "-n",      "0",
         "-t",  "1,2",           "-d", "0,1024", "-r",          "3",         "-pg",     "64,16",
         "-ub", "256",           "-o", "json",   "--no-warmup", "--profile", "--trace", "t.json"});
    EXPECT_THAT(o.models, ElementsAre("a.gguf", "b.gguf"));
    EXPECT_THAT(o.n_prompt, ElementsAre(128, 512));  // a repeated option adds to the list
    EXPECT_THAT(o.n_gen, ElementsAre(0));
    EXPECT_THAT(o.n_threads, ElementsAre(1, 2));
    EXPECT_THAT(o.n_depth, ElementsAre(0, 1024));
    EXPECT_THAT(o.n_ubatch, ElementsAre(256));
    EXPECT_EQ(o.n_pg, (std::vector<std::pair<int64_t, int64_t>>{{64, 16}}));
    EXPECT_EQ(o.repetitions, 3);
    EXPECT_EQ(o.output, "json");
    EXPECT_FALSE(o.warmup);
    EXPECT_TRUE(o.profile);
    EXPECT_EQ(o.trace_path, "t.json");
    EXPECT_TRUE(o.ubatch_given);

    const graph::BenchOptions d = graph::parse_bench_options({});  // llama-bench's defaults
    EXPECT_THAT(d.n_prompt, ElementsAre(512));
    EXPECT_THAT(d.n_gen, ElementsAre(128));
    EXPECT_THAT(d.n_depth, ElementsAre(0));
    EXPECT_EQ(d.repetitions, 5);
    EXPECT_EQ(d.output, "md");
    EXPECT_TRUE(d.warmup);
}

TEST(BenchOptions, BadValuesNameTheOptionAndTheValue) {
    EXPECT_THAT(bench_error_of({"-t", "0"}), HasSubstr("-t: '0' is less than 1"));
    EXPECT_THAT(bench_error_of({"-p", "12x"}), HasSubstr("-p: '12x' is not a whole number"));
    EXPECT_THAT(bench_error_of({"-p", "1,,2"}), HasSubstr("-p: '' is not a whole number"));
    EXPECT_THAT(bench_error_of({"-n", "-4"}), HasSubstr("-n: '-4' is less than 0"));
    EXPECT_THAT(bench_error_of({"-p", "512-128"}), HasSubstr("-p: range '512-128' ends before it starts"));
    EXPECT_THAT(bench_error_of({"-p", "1-9+0"}), HasSubstr("never advances"));
    EXPECT_THAT(bench_error_of({"-p", "0-9*2"}), HasSubstr("never advances"));
    EXPECT_THAT(bench_error_of({"-r", "0"}), HasSubstr("-r: '0' is not between 1 and 100000"));
    EXPECT_THAT(bench_error_of({"-o", "xml"}), HasSubstr("-o: 'xml' is not md, json or csv"));
    EXPECT_THAT(bench_error_of({"-pg", "512"}), HasSubstr("-pg: '512' is not PP,TG"));
    EXPECT_THAT(bench_error_of({"-d"}), HasSubstr("-d: needs a value"));
    EXPECT_THAT(bench_error_of({"--frobnicate"}), HasSubstr("--frobnicate: unknown option"));
    EXPECT_THAT(bench_error_of({"model.gguf"}), HasSubstr("model.gguf: unexpected argument"));
}

TEST(BenchOptions, TestsComeInLlamaBenchsOrder) {
    graph::BenchOptions o = graph::parse_bench_options(
        {"-m", "m.gguf", "-t", "1,2", "-p", "0,64", "-n", "16", "-d", "0,8", "-pg", "4,2"});
    std::vector<std::string> names;
    for (const graph::BenchTest& t : graph::bench_tests(o))
        names.push_back(t.name() + " t" + std::to_string(t.n_threads));
    // Per thread count, per depth: pp, then tg, then pp+tg; pp0 is no test.
    EXPECT_THAT(names, ElementsAre("pp64 t1", "tg16 t1", "pp4+tg2 t1", "pp64 @ d8 t1", "tg16 @ d8 t1",
                                   "pp4+tg2 @ d8 t1", "pp64 t2", "tg16 t2", "pp4+tg2 t2", "pp64 @ d8 t2",
                                   "tg16 @ d8 t2", "pp4+tg2 @ d8 t2"));
}

TEST(BenchResult, MeanAndSampleDeviationOfTokensPerSecondAsLlamaBench) {
    graph::BenchResult r;
    r.test.n_gen = 100;
    r.samples_ns = {1'000'000'000, 2'000'000'000};
    r.model.decode_weight_bytes = 1'000'000'000;
    EXPECT_THAT(r.samples_ts(), ElementsAre(100.0, 50.0));
    EXPECT_DOUBLE_EQ(r.avg_ts(), 75.0);
    EXPECT_NEAR(r.stddev_ts(), 35.3553390593, 1e-9);  // sqrt(((100-75)^2 + (50-75)^2) / (2 - 1))
    EXPECT_EQ(r.avg_ns(), 1'500'000'000);
    EXPECT_DOUBLE_EQ(r.weights_gbps(), 75.0);  // 1 GB per token at 75 tokens/s
    r.test.n_prompt = 10;                      // pp+tg: no single weight figure
    EXPECT_EQ(r.weights_gbps(), 0.0);
}

// A one-token step reads every matrix and one row of the embedding table.
TEST(BenchModelInfo, DecodeBytesAreTheMatricesAndOneEmbeddingRow) {
    auto model = graph::Model::load(tiny_model());
    graph::Session session(model, {.n_ctx = 16, .n_threads = 1});
    const graph::BenchModelInfo info = graph::bench_model_info(*model, session);
    uint64_t matrices = 0, params = 0, bytes = 0;
    const GgufTensor* embd = model->file().find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    for (const GgufTensor& t : model->file().tensors()) {
        bytes += t.nbytes, params += uint64_t(t.n_elements());
        if (&t != embd) matrices += t.nbytes;
    }
    EXPECT_EQ(info.size, bytes);
    EXPECT_EQ(info.n_params, params);
    EXPECT_EQ(uint64_t(info.decode_weight_bytes), matrices + embd->nbytes / uint64_t(embd->ne[1]));
    char expected[64];
    std::snprintf(expected, sizeof expected, "llama %.1fK F32", double(params) / 1e3);  // "llama 39.1K F32"
    EXPECT_EQ(info.type, expected);
    // A step of 5 tokens (batched-bench's step of 5 sequences) reads 5 rows of the table.
    EXPECT_EQ(uint64_t(graph::step_weight_bytes(session.plan(5))),
              matrices + 5 * (embd->nbytes / uint64_t(embd->ne[1])));
}

TEST(BenchRun, DepthIsInTheCacheAndEveryRepetitionIsTimed) {
    auto model = graph::Model::load(tiny_model());
    graph::BenchTest t{tiny_model(), 0, 4, 6, 1, 512};
    graph::Profiler profiler(true);
    const graph::BenchResult r = graph::run_bench_test(model, t, 3, true, &profiler);
    ASSERT_EQ(r.samples_ns.size(), 3u);
    for (int64_t ns : r.samples_ns) EXPECT_GT(ns, 0);
    // Only the timed runs were recorded: 3 repetitions of 4 one-token evals.
    ASSERT_EQ(profiler.groups().size(), 1u);
    EXPECT_EQ(profiler.groups()[0].section, "tg4 @ d6 t1");
    EXPECT_EQ(profiler.groups()[0].runs, 12);
}

// A prompt test computes the logits of its last token only, as llama-bench's does: the output matrix
// is one row's work (2 n_embd n_vocab flops a run), not n_prompt rows'.
TEST(BenchRun, APromptComputesTheLastTokensLogitsOnly) {
    auto model = graph::Model::load(tiny_model());
    graph::BenchTest t{tiny_model(), 8, 0, 0, 1, 512};
    graph::Profiler profiler(true);
    graph::run_bench_test(model, t, 2, false, &profiler);
    ASSERT_EQ(profiler.groups().size(), 1u);
    const graph::Profiler::Group& g = profiler.groups()[0];
    const auto at = std::find(g.nodes.begin(), g.nodes.end(), "logits");
    ASSERT_NE(at, g.nodes.end());
    const GgufTensor* out = model->file().find_tensor("output.weight");
    if (!out) out = model->file().find_tensor("token_embd.weight");
    ASSERT_NE(out, nullptr);
    const double one_row = 2.0 * double(out->ne[0]) * double(out->ne[1]);
    EXPECT_EQ(g.totals[size_t(at - g.nodes.begin())].flops, 2 * one_row);  // 2 runs
}

// ---- the command line, end to end ----

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST(BenchCli, JsonHasLlamaBenchsFieldsAndNothingElseOnStdout) {
    auto r = test::run_graphrun({"bench", "-m", tiny_model(), "-p", "8", "-n", "4", "-t", "1,2", "-r", "2",
                                 "-o", "json", "--bandwidth-mib", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);  // throws (fails) on anything but JSON
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), 4u);
    const std::vector<std::pair<int, int>> expected = {{8, 0}, {0, 4}, {8, 0}, {0, 4}};
    for (size_t i = 0; i < j.size(); ++i) {
        const nlohmann::json& t = j[i];
        for (const char* key : {"cpu_info", "model_filename", "model_type", "model_size", "model_n_params",
                                "n_ubatch", "n_threads", "n_prompt", "n_gen", "n_depth", "test_time",
                                "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts"})
            EXPECT_TRUE(t.contains(key)) << key;
        EXPECT_EQ(t["n_prompt"], expected[i].first);
        EXPECT_EQ(t["n_gen"], expected[i].second);
        EXPECT_EQ(t["n_threads"], i < 2 ? 1 : 2);
        EXPECT_EQ(t["n_depth"], 0);
        EXPECT_EQ(t["model_filename"], tiny_model());
        ASSERT_EQ(t["samples_ts"].size(), 2u);
        const std::vector<double> ts = t["samples_ts"].get<std::vector<double>>();
        EXPECT_NEAR(t["avg_ts"].get<double>(), (ts[0] + ts[1]) / 2, 1e-6 * ts[0]);
        const std::vector<int64_t> ns = t["samples_ns"].get<std::vector<int64_t>>();
        EXPECT_NEAR(ts[0], 1e9 * double(expected[i].first + expected[i].second) / double(ns[0]),
                    1e-6 * ts[0]);
        EXPECT_GT(t["read_bandwidth_gbps"].get<double>(), 0);
        EXPECT_EQ(t["weights_gbps"].is_null(), expected[i].second == 0);  // tg rows only
    }
    EXPECT_THAT(r.err, HasSubstr("read bandwidth on 2 threads"));
}

TEST(BenchCli, CsvIsAHeaderAndOneQuotedRowPerTest) {
    auto r = test::run_graphrun({"bench", "-m", tiny_model(), "-p", "8", "-n", "4", "-d", "0,4", "-r", "1",
                                 "-t", "1", "-o", "csv", "--bandwidth-mib", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 5u) << r.out;
    EXPECT_THAT(lines[0], HasSubstr("n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts"));
    const auto fields = [](const std::string& line) {  // commas outside quotes, plus one
        bool quoted = false;
        int n = 1;
        for (char c : line) {
            if (c == '"') quoted = !quoted;
            if (c == ',' && !quoted) ++n;
        }
        return n;
    };
    for (size_t i = 1; i < lines.size(); ++i) {
        EXPECT_THAT(lines[i], StartsWith("\""));
        EXPECT_EQ(fields(lines[i]), fields(lines[0])) << lines[i];
    }
    EXPECT_THAT(lines[3], HasSubstr("\"8\",\"0\",\"4\""));  // pp8 at depth 4
    EXPECT_THAT(lines[4], HasSubstr("\"0\",\"4\",\"4\""));  // tg4 at depth 4
}

TEST(BenchCli, MarkdownTableHasLlamaBenchsColumnsAndTheBandwidths) {
    auto r = test::run_graphrun({"bench", "-m", tiny_model(), "-p", "8", "-n", "4", "-d", "4", "-r", "2",
                                 "-t", "1", "--bandwidth-mib", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_GE(lines.size(), 4u) << r.out;
    EXPECT_THAT(
        lines[0],
        ::testing::MatchesRegex(
            R"(\| model +\| +size \| +params \| backend +\| threads \| +test \| +t/s \| weights GB/s \| +read GB/s \|)"));
    EXPECT_THAT(lines[1], StartsWith("| ------------------------------ | ---------: |"));
    EXPECT_THAT(lines[2], HasSubstr("pp8 @ d4"));
    EXPECT_THAT(lines[3], HasSubstr("tg4 @ d4"));
    EXPECT_THAT(lines[2], ::testing::MatchesRegex(R"(.*\| +[0-9.]+ ± [0-9.]+ \| +- \| +[0-9.]+ \|)"));
    EXPECT_THAT(lines[3], ::testing::MatchesRegex(R"(.*\| +[0-9.]+ ± [0-9.]+ \| +[0-9.]+ \| +[0-9.]+ \|)"));
    EXPECT_THAT(r.out, HasSubstr("graphrun bench on "));  // the CPU is named under the table
}

TEST(BenchCli, ErrorsGoToStderrWithTheOption) {
    auto r = test::run_graphrun({"bench", "-m", tiny_model(), "-t", "0"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr("-t: '0' is less than 1"));
    r = test::run_graphrun({"bench", "-m", "/nonexistent/model.gguf", "-o", "json"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr("/nonexistent/model.gguf"));
    r = test::run_graphrun({"bench", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, HasSubstr("-ub, --ubatch-size"));
}

}  // namespace
}  // namespace graphrun
