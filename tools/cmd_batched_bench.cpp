// tools/cmd_batched_bench.cpp — `graphrun batched-bench`: prompt and generation speed over N parallel
// sequences, modelled on llama.cpp's llama-batched-bench.
//
//   graphrun batched-bench -m MODEL -t 2 --npp 128 --ntg 64 --npl 1,2,4,8,16 [--output-format jsonl]
//
// For each N of --npl: N sequences of --npp prompt tokens each are evaluated (batches of up to --batch
// tokens, several sequences per batch), then --ntg steps decode one token of every sequence in one
// forward pass. Prompts are distinct seeded random ids and nothing is shared between sequences, so
// every token is computed. Columns as llama-batched-bench prints them:
//   PP, TG, B        prompt tokens and generated tokens per sequence, sequences
//   N_KV             positions in the KV cache at the end: B * (PP + TG)
//   T_PP, S_PP       prompt time and B * PP / T_PP;  T_TG, S_TG: generation time and B * TG / T_TG
//   T, S             both: T_PP + T_TG and N_KV / T
// stderr also shows the weight bytes one generation step reads and the bandwidth that implies.
// (llama-batched-bench spells the options -npp, -ntg, -npl; the argument parser takes only the
// double-dash forms.)
#include <tbb/info.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tools/lib/bench.h"
#include "engine/engine.h"
#include "tools/commands.h"
#include "tools/option_checks.h"

namespace graphrun::tools {

namespace {

struct BatchedBenchOptions {
    std::string graph_path, model_path;
    int threads = 0;
    int64_t npp = 128, ntg = 64, batch = 512;
    std::string npl = "1,2,4,8,16";
    std::string output_format = "md";
    uint64_t seed = 1;
};

std::vector<int64_t> parse_npl(const std::string& text) {
    std::vector<int64_t> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || v < 1 || v > graph::kMaxSequences)
            throw std::runtime_error("--npl: '" + item + "' is not a number of sequences from 1 to " +
                                     std::to_string(graph::kMaxSequences));
        out.push_back(v);
    }
    if (out.empty()) throw std::runtime_error("--npl: give the numbers of parallel sequences, e.g. 1,2,4,8");
    return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Row {
    int64_t pp, tg, pl, n_kv;
    double t_pp, t_tg;
};

// One row: B sequences, their prompts, then ntg decode steps. Returns the timings.
Row run_row(const std::shared_ptr<const graph::Model>& model, const BatchedBenchOptions& opt, int64_t n_seq,
            int64_t* weight_bytes) {
    const int64_t n_ctx = opt.npp + opt.ntg;
    graph::Engine engine(model, {.n_ctx = n_ctx,
                                 .n_seq = n_seq,
                                 .n_threads = opt.threads,
                                 .max_batch = std::max(opt.batch, n_seq),
                                 .prefix_cache = false});
    *weight_bytes = graph::step_weight_bytes(engine.plan(n_seq, n_seq));
    std::mt19937 rng(uint32_t(opt.seed + uint64_t(n_seq)));
    std::uniform_int_distribution<int32_t> pick(0, int32_t(engine.n_vocab() - 1));
    std::vector<graph::SeqId> seqs;
    std::vector<graph::BatchToken> all;  // every prompt token, sequence after sequence
    for (int64_t s = 0; s < n_seq; ++s) {
        seqs.push_back(engine.add_sequence());
        for (int64_t i = 0; i < opt.npp; ++i) all.push_back({seqs.back(), pick(rng), i + 1 == opt.npp});
    }
    // Warm up the plans of this row's shapes on a sequence of its own (llama-batched-bench warms up too).
    {
        const graph::SeqId w = engine.add_sequence();
        const graph::BatchToken t{w, 1, true};
        engine.decode({&t, 1});
        engine.remove_sequence(w);
    }
    const auto pp_start = std::chrono::steady_clock::now();
    for (size_t start = 0; start < all.size(); start += size_t(engine.max_batch())) {
        const size_t n = std::min(all.size() - start, size_t(engine.max_batch()));
        std::span<const float> rows = engine.decode(std::span(all).subspan(start, n));
        (void)rows;
    }
    const double t_pp = seconds_since(pp_start);
    std::vector<graph::BatchToken> step(static_cast<size_t>(n_seq));
    const auto tg_start = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < opt.ntg; ++k) {
        for (int64_t s = 0; s < n_seq; ++s) step[size_t(s)] = {seqs[size_t(s)], pick(rng), true};
        engine.decode(step);
    }
    const double t_tg = seconds_since(tg_start);
    return {opt.npp, opt.ntg, n_seq, n_seq * n_ctx, t_pp, t_tg};
}

void run_batched_bench(BatchedBenchOptions opt) {
    if (opt.model_path.empty()) opt.model_path = graph::default_model_path();
    const std::vector<int64_t> npl = parse_npl(opt.npl);
    auto model = graph::Model::load(opt.model_path, opt.graph_path);
    const bool jsonl = opt.output_format == "jsonl";
    if (!jsonl) {
        std::printf("\n|%6s | %6s | %4s | %6s | %8s | %8s | %8s | %8s | %8s | %8s |\n", "PP", "TG", "B",
                    "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s");
        std::printf("|%6s-|-%6s-|-%4s-|-%6s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|\n", "------", "------",
                    "----", "------", "--------", "--------", "--------", "--------", "--------", "--------");
    }
    for (int64_t n_seq : npl) {
        int64_t weight_bytes = 0;
        const Row r = run_row(model, opt, n_seq, &weight_bytes);
        const double speed_pp = double(r.pl * r.pp) / r.t_pp, speed_tg = double(r.pl * r.tg) / r.t_tg;
        const double t = r.t_pp + r.t_tg, speed = double(r.n_kv) / t;
        if (jsonl) {
            const nlohmann::ordered_json j = {
                {"n_kv_max", r.n_kv},   {"n_batch", opt.batch}, {"n_threads", opt.threads}, {"pp", r.pp},
                {"tg", r.tg},           {"pl", r.pl},           {"n_kv", r.n_kv},           {"t_pp", r.t_pp},
                {"speed_pp", speed_pp}, {"t_tg", r.t_tg},       {"speed_tg", speed_tg},     {"t", t},
                {"speed", speed}};
            std::printf("%s\n", j.dump().c_str());
        } else {
            std::printf("|%6lld | %6lld | %4lld | %6lld | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |\n",
                        (long long)r.pp, (long long)r.tg, (long long)r.pl, (long long)r.n_kv, r.t_pp,
                        speed_pp, r.t_tg, speed_tg, t, speed);
        }
        std::fflush(stdout);
        const double step_seconds = r.t_tg / double(r.tg);
        std::fprintf(stderr,
                     "graphrun: B=%lld: a generation step reads %.3f GB of weights in %.1f ms: %.2f GB/s\n",
                     (long long)r.pl, double(weight_bytes) / 1e9, step_seconds * 1e3,
                     double(weight_bytes) / step_seconds / 1e9);
    }
}

}  // namespace

void register_batched_bench(CLI::App& app) {
    auto opt = std::make_shared<BatchedBenchOptions>();
    CLI::App* cmd =
        app.add_subcommand("batched-bench", "prompt and generation speed over N parallel sequences");
    cmd->add_option("--graph", opt->graph_path, "graph (JSON); default: models/<general.architecture>.json");
    cmd->add_option("-m,--model", opt->model_path, "model file (GGUF); default: models/kjv-q8_0.gguf");
    const int max_threads = tbb::info::default_concurrency();
    cmd->add_option("-t,--threads", opt->threads, "threads (0: every core)")
        ->check(whole_number_in(0, max_threads, "the threads this machine runs"));
    cmd->add_option("--npp", opt->npp, "prompt tokens per sequence")
        ->check(whole_number_in(1, graph::kMaxContext / 2))
        ->capture_default_str();
    cmd->add_option("--ntg", opt->ntg, "tokens generated per sequence")
        ->check(whole_number_in(1, graph::kMaxContext / 2))
        ->capture_default_str();
    cmd->add_option("--npl", opt->npl, "numbers of parallel sequences, comma-separated")
        ->capture_default_str();
    cmd->add_option("-b,--batch", opt->batch, "prompt tokens per forward pass at most")
        ->check(whole_number_in(1, graph::kMaxBatch, "the batch ceiling"))
        ->capture_default_str();
    cmd->add_option("--output-format", opt->output_format, "md (a table) or jsonl (an object per row)")
        ->check(CLI::IsMember({"md", "jsonl"}))
        ->capture_default_str();
    cmd->add_option("--seed", opt->seed, "seed of the random prompt ids")->capture_default_str();
    cmd->callback([opt] { run_batched_bench(*opt); });
}

}  // namespace graphrun::tools
