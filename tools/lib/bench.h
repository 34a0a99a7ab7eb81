// tools/lib/bench.h — `graphrun bench`: prompt processing (pp) and generation (tg) speed, measured as
// llama.cpp's llama-bench measures it, so the two tools' figures mean the same thing.
//
//   pp N   evaluate N random tokens (in batches of n_ubatch) into an empty cache: N / time
//   tg N   evaluate N random tokens one at a time, each after the previous: N / time
//   @ dD   the same, after D tokens are already in the cache (computed once per test, then kept:
//          each repetition rewinds to D, as llama-bench restores its saved state)
// Each test gets a fresh session (KV cache of n_depth + n_prompt + n_gen), one warm-up run (pp: the
// whole prompt; tg: one token) and `repetitions` timed runs; t/s is the mean of the runs' t/s and ±
// their sample standard deviation, as llama-bench reports them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/profile.h"
#include "engine/session.h"

namespace graphrun::graph {

struct BenchTest {
    std::string model_path;
    int64_t n_prompt = 0, n_gen = 0, n_depth = 0;
    int n_threads = 1;
    int64_t n_ubatch = 512;
    std::string name() const;  // "pp512", "tg128", "pp512+tg128", then " @ d1024" at a depth
};

struct BenchOptions {
    std::vector<std::string> models;
    std::vector<int64_t> n_prompt{512}, n_gen{128}, n_depth{0}, n_ubatch{512};
    std::vector<std::pair<int64_t, int64_t>> n_pg;  // -pg: pp then tg, timed as one test
    std::vector<int> n_threads;                     // empty: every core
    int repetitions = 5;
    bool warmup = true;
    bool progress = false;
    std::string output = "md";  // md, json, csv
    std::string graph_path = default_graph_path();
    int64_t bandwidth_mib = 1024;  // read bandwidth buffer; 0: do not measure it
    bool profile = false;
    std::string trace_path;
    bool help = false;
    // Which list options were given, so the markdown table shows a column for them as llama-bench does.
    bool ubatch_given = false;
};

// Reads llama-bench's options (graphrun bench --help lists them). Values are comma lists, ranges
// (first-last, first-last+step, first-last*mult) or repeated options. Throws std::runtime_error
// naming the option and the value: "-t: '0' is less than 1".
BenchOptions parse_bench_options(const std::vector<std::string>& args);
std::string bench_usage();
// One value list: "128,512", "128-512*2" -> 128 256 512. Throws std::runtime_error naming `option`.
std::vector<int64_t> parse_bench_list(const std::string& text, const std::string& option, int64_t min_value);

// The tests in llama-bench's order: per model, n_ubatch, thread count and depth, first every pp,
// then every tg, then every pp+tg pair; zero-sized ones are skipped.
std::vector<BenchTest> bench_tests(const BenchOptions& options);

// What llama-bench reports of a model file.
struct BenchModelInfo {
    std::string type;                 // "llama 1.1B Q4_0": architecture, parameters, main weight type
    uint64_t size = 0;                // bytes of all tensors
    uint64_t n_params = 0;            // elements of all tensors
    int64_t decode_weight_bytes = 0;  // weight bytes a one-token step reads (one embedding row, all matrices)
};
BenchModelInfo bench_model_info(const Model& model, Session& session);
// Weight bytes one run of `plan` reads: every matrix in full, an embedding table a row per token (at
// most the table). The tied output matrix counts in full. Decode GB/s is this x steps/s.
int64_t step_weight_bytes(const Plan& plan);

struct BenchResult {
    BenchTest test;
    BenchModelInfo model;
    std::vector<int64_t> samples_ns;
    std::string test_time;  // when the test started, RFC 3339 UTC
    double read_gbps = 0;   // read bandwidth with test.n_threads threads, same run (0: not measured)

    std::vector<double> samples_ts() const;  // (n_prompt + n_gen) / seconds, per run
    double avg_ts() const;
    double stddev_ts() const;  // sample standard deviation (n - 1), 0 for one run
    int64_t avg_ns() const;
    int64_t stddev_ns() const;
    // tg only: the weight bytes one token reads times tokens/s (the bandwidth decoding implies).
    double weights_gbps() const;
};

// Runs one test (warm-up, then `repetitions` timed runs). With a profiler, the timed runs are
// recorded into it under the test's name and thread count ("tg128 t2").
BenchResult run_bench_test(const std::shared_ptr<const Model>& model, const BenchTest& test, int repetitions,
                           bool warmup, Profiler* profiler = nullptr);

}  // namespace graphrun::graph
