// tools/cmd_batch_bench.cpp — `graphrun batch-bench`: static versus continuous batching under load.
//
//   graphrun batch-bench [-m MODEL] [--policy static|continuous|both] [--requests N] [--rate R]
//                        [--parallel P] [--json] [--svg FILE]
//
// A reproducible synthetic workload: N requests arriving as a Poisson process of R requests/s (the
// gaps are exponential, drawn from --seed), each a prompt of random ids whose length is uniform in
// [--prompt-min, --prompt-max] (the first --shared-prefix ids the same for every request) and a
// number of tokens to generate uniform in [--gen-min, --gen-max], greedy, no stop ids. A client
// thread submits each request at its arrival time to a scheduler running on its own thread; the
// figures are per policy:
//   requests/s, generated tokens/s  completed requests and tokens over the time from the first
//                                   arrival to the last completion
//   TTFT                            submission to the first token, p50/p90/p99 over requests
//   TPOT                            time per output token after the first, p50/p90/p99
//   occupancy                       sequences per forward pass / --parallel, the mean over passes
//   KV blocks peak                  blocks of 16 positions held at once, at most
// The defaults offer more load than the shipped model serves on two cores, so the policies differ.
// --repeat N alternates the policies N times and prints each figure's median.
// --svg runs a sweep of arrival rates (--sweep, requests/s) for both policies, alternated at each rate
// (--repeat times, medians drawn), and draws throughput and latency against the offered load.
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/scheduler.h"
#include "tools/commands.h"
#include "tools/option_checks.h"
#include "tools/svg_chart.h"

namespace graphrun::tools {

namespace {

struct WorkloadOptions {
    int64_t requests = 160;
    double rate = 40;  // requests/s
    int64_t prompt_min = 16, prompt_max = 96, gen_min = 16, gen_max = 128, shared_prefix = 0;
    uint64_t seed = 1;
};

struct BenchOptions {
    std::string graph_path, model_path, policy = "both", svg, sweep;
    WorkloadOptions load;
    int64_t parallel = 8, step_tokens = 64, ctx = 0;
    int threads = 0, repeat = 1;
    bool json = false, no_prefix_cache = false;
};

struct Arrival {
    double at = 0;  // seconds after the start
    graph::Request request;
};

// A 64-bit draw in [0, 1), the same on every platform (std:: distributions are not).
double unit(std::mt19937_64& rng) {
    return double(rng() >> 11) * (1.0 / 9007199254740992.0);
}
int64_t uniform_int(std::mt19937_64& rng, int64_t lo, int64_t hi) {
    return lo + int64_t(unit(rng) * double(hi - lo + 1));
}

std::vector<Arrival> make_workload(const WorkloadOptions& w, int32_t n_vocab) {
    std::mt19937_64 rng(w.seed);
    std::vector<int32_t> prefix(size_t(w.shared_prefix));
    for (int32_t& t : prefix) t = int32_t(uniform_int(rng, 0, n_vocab - 1));
    std::vector<Arrival> out;
    double t = 0;
    for (int64_t i = 0; i < w.requests; ++i) {
        t += -std::log(1.0 - unit(rng)) / w.rate;  // exponential gaps: a Poisson process of `rate`
        Arrival a;
        a.at = t;
        a.request.prompt = prefix;
        const int64_t n_prompt = std::max(uniform_int(rng, w.prompt_min, w.prompt_max), w.shared_prefix + 1);
        while (int64_t(a.request.prompt.size()) < n_prompt)
            a.request.prompt.push_back(int32_t(uniform_int(rng, 0, n_vocab - 1)));
        a.request.max_tokens = uniform_int(rng, w.gen_min, w.gen_max);
        a.request.sampling.temperature = 0;
        out.push_back(std::move(a));
    }
    return out;
}

struct Percentiles {
    double p50 = 0, p90 = 0, p99 = 0;
};

// Nearest-rank percentiles.
Percentiles percentiles(std::vector<double> v) {
    if (v.empty()) return {};
    std::sort(v.begin(), v.end());
    auto at = [&](double p) { return v[size_t(std::max(0.0, std::ceil(p / 100.0 * double(v.size())) - 1))]; };
    return {at(50), at(90), at(99)};
}

struct PolicyResult {
    std::string policy;
    double offered_rate = 0, requests_per_s = 0, gen_tokens_per_s = 0, occupancy = 0, seconds = 0;
    Percentiles ttft_ms, tpot_ms;
    int64_t kv_blocks_peak = 0, requests = 0, generated = 0, prompt_tokens = 0, prompt_reused = 0, steps = 0;
};

PolicyResult run_policy(const std::shared_ptr<const graph::Model>& model, const BenchOptions& opt,
                        graph::Policy policy, const WorkloadOptions& load) {
    graph::Scheduler scheduler(model, {.policy = policy,
                                       .parallel = opt.parallel,
                                       .max_queue = load.requests,
                                       .n_ctx = opt.ctx,
                                       .step_tokens = std::max(opt.step_tokens, opt.parallel),
                                       .n_threads = opt.threads,
                                       .prefix_cache = !opt.no_prefix_cache});
    const std::vector<Arrival> arrivals = make_workload(load, int32_t(scheduler.n_vocab()));
    std::mutex m;
    std::condition_variable done;
    std::vector<graph::RequestTiming> timings;
    timings.reserve(arrivals.size());
    scheduler.start();
    const double t0 = scheduler.now();
    for (const Arrival& a : arrivals) {
        const double wait = t0 + a.at - scheduler.now();
        if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
        scheduler.submit(a.request, [&](const graph::TokenEvent& e) {
            if (e.finish == graph::FinishReason::None) return;
            std::lock_guard lock(m);
            timings.push_back(*e.timing);
            done.notify_all();
        });
    }
    {
        std::unique_lock lock(m);
        done.wait(lock, [&] { return timings.size() == arrivals.size(); });
    }
    scheduler.stop();

    PolicyResult r;
    r.policy = graph::policy_name(policy);
    r.offered_rate = load.rate;
    double last = 0;
    std::vector<double> ttft, tpot;
    for (const graph::RequestTiming& t : timings) {
        last = std::max(last, t.finished);
        ttft.push_back((t.first_token - t.submitted) * 1e3);
        if (t.generated > 1) tpot.push_back((t.finished - t.first_token) * 1e3 / double(t.generated - 1));
        r.generated += t.generated;
    }
    r.seconds = last - (t0 + arrivals.front().at);
    r.requests = int64_t(timings.size());
    r.requests_per_s = double(r.requests) / r.seconds;
    r.gen_tokens_per_s = double(r.generated) / r.seconds;
    r.ttft_ms = percentiles(ttft);
    r.tpot_ms = percentiles(tpot);
    const graph::SchedulerMetrics metrics = scheduler.metrics();
    r.occupancy = metrics.occupancy_mean;
    r.kv_blocks_peak = metrics.kv_blocks_peak;
    r.prompt_tokens = metrics.prompt_tokens;
    r.prompt_reused = metrics.prompt_tokens_reused;
    r.steps = metrics.steps;
    return r;
}

nlohmann::ordered_json to_json(const PolicyResult& r) {
    auto pct = [](const Percentiles& p) {
        return nlohmann::ordered_json{{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
    };
    return {{"requests_per_s", r.requests_per_s},
            {"gen_tokens_per_s", r.gen_tokens_per_s},
            {"ttft_ms", pct(r.ttft_ms)},
            {"tpot_ms", pct(r.tpot_ms)},
            {"occupancy", r.occupancy},
            {"kv_blocks_peak", r.kv_blocks_peak},
            {"offered_requests_per_s", r.offered_rate},
            {"requests", r.requests},
            {"generated_tokens", r.generated},
            {"prompt_tokens_evaluated", r.prompt_tokens},
            {"prompt_tokens_reused", r.prompt_reused},
            {"forward_passes", r.steps},
            {"seconds", r.seconds}};
}

// The median of each figure over runs of one policy (runs alternate between the policies, so drift in
// the machine's load falls on both alike).
PolicyResult median_of(std::vector<PolicyResult> runs) {
    auto med = [&](auto field) {
        std::vector<double> v;
        for (const PolicyResult& r : runs) v.push_back(double(field(r)));
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    PolicyResult m = runs.front();
    m.requests_per_s = med([](const PolicyResult& r) { return r.requests_per_s; });
    m.gen_tokens_per_s = med([](const PolicyResult& r) { return r.gen_tokens_per_s; });
    m.occupancy = med([](const PolicyResult& r) { return r.occupancy; });
    m.seconds = med([](const PolicyResult& r) { return r.seconds; });
    m.ttft_ms = {med([](const PolicyResult& r) { return r.ttft_ms.p50; }),
                 med([](const PolicyResult& r) { return r.ttft_ms.p90; }),
                 med([](const PolicyResult& r) { return r.ttft_ms.p99; })};
    m.tpot_ms = {med([](const PolicyResult& r) { return r.tpot_ms.p50; }),
                 med([](const PolicyResult& r) { return r.tpot_ms.p90; }),
                 med([](const PolicyResult& r) { return r.tpot_ms.p99; })};
    m.kv_blocks_peak = int64_t(med([](const PolicyResult& r) { return r.kv_blocks_peak; }));
    m.steps = int64_t(med([](const PolicyResult& r) { return r.steps; }));
    return m;
}

std::vector<graph::Policy> policies_of(const std::string& name) {
    if (name == "static") return {graph::Policy::Static};
    if (name == "continuous") return {graph::Policy::Continuous};
    return {graph::Policy::Static, graph::Policy::Continuous};
}

// Each policy run opt.repeat times, the policies alternated so that drift in the machine's load falls
// on all of them alike, and each policy's medians.
std::vector<PolicyResult> alternated_medians(const std::shared_ptr<const graph::Model>& model,
                                             const BenchOptions& opt, const std::vector<graph::Policy>& policies,
                                             const WorkloadOptions& load) {
    std::vector<std::vector<PolicyResult>> runs(policies.size());
    for (int k = 0; k < opt.repeat; ++k)
        for (size_t p = 0; p < policies.size(); ++p) runs[p].push_back(run_policy(model, opt, policies[p], load));
    std::vector<PolicyResult> medians;
    for (auto& r : runs) medians.push_back(median_of(std::move(r)));
    return medians;
}

std::vector<double> sweep_rates(const BenchOptions& opt) {
    if (opt.sweep.empty()) {
        std::vector<double> rates;
        for (double f : {1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 3.0 / 4, 1.0})
            rates.push_back(opt.load.rate * f);
        return rates;
    }
    std::vector<double> rates;
    std::stringstream in(opt.sweep);
    for (std::string item; std::getline(in, item, ',');) {
        char* end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (item.empty() || *end != '\0' || !(v > 0) || v > 1e6)
            throw std::runtime_error("--sweep: '" + item + "' is not an arrival rate (requests/s, above 0)");
        rates.push_back(v);
    }
    return rates;
}

void write_svg(const std::shared_ptr<const graph::Model>& model, const BenchOptions& opt) {
    const std::vector<double> rates = sweep_rates(opt);
    SvgChart throughput{"Generated tokens/s", "offered load (requests/s)", "tokens/s", {}};
    SvgChart latency{"Time to first token, p50", "offered load (requests/s)", "ms", {}};
    const std::vector<graph::Policy> policies = policies_of("both");
    for (graph::Policy policy : policies) {
        const std::string color = policy == graph::Policy::Static ? "#d62728" : "#1f77b4";
        throughput.series.push_back({graph::policy_name(policy), color, {}});
        latency.series.push_back({graph::policy_name(policy), color, {}});
    }
    // At each rate the policies alternate (--repeat times, medians drawn), so a change in the machine's
    // load during the sweep falls on both alike instead of on one policy's half of it.
    for (double rate : rates) {
        WorkloadOptions load = opt.load;
        load.rate = rate;
        const std::vector<PolicyResult> medians = alternated_medians(model, opt, policies, load);
        for (size_t p = 0; p < policies.size(); ++p) {
            const PolicyResult& r = medians[p];
            std::fprintf(stderr, "graphrun: %s at %.2f requests/s: %.1f gen tok/s, TTFT p50 %.0f ms\n",
                         r.policy.c_str(), rate, r.gen_tokens_per_s, r.ttft_ms.p50);
            throughput.series[p].points.push_back({rate, r.gen_tokens_per_s});
            latency.series[p].points.push_back({rate, r.ttft_ms.p50});
        }
    }
    std::ofstream out(opt.svg);
    if (!out) throw std::runtime_error("--svg: cannot write " + opt.svg);
    out << svg_document({throughput, latency}, std::to_string(opt.load.requests) + " requests, prompts " +
                                                   std::to_string(opt.load.prompt_min) + "-" +
                                                   std::to_string(opt.load.prompt_max) + " tokens, outputs " +
                                                   std::to_string(opt.load.gen_min) + "-" +
                                                   std::to_string(opt.load.gen_max) + " tokens, --parallel " +
                                                   std::to_string(opt.parallel));
    if (!out.flush()) throw std::runtime_error("--svg: cannot write " + opt.svg);
}

void run_batch_bench(BenchOptions opt) {
    if (opt.model_path.empty()) opt.model_path = graph::default_model_path();
    const WorkloadOptions& w = opt.load;
    if (w.prompt_min > w.prompt_max || w.gen_min > w.gen_max)
        throw std::runtime_error("--prompt-min/--gen-min must not be above --prompt-max/--gen-max");
    if (w.shared_prefix >= w.prompt_max)
        throw std::runtime_error("--shared-prefix " + std::to_string(w.shared_prefix) +
                                 " leaves no room in prompts of at most --prompt-max " +
                                 std::to_string(w.prompt_max));
    auto model = graph::Model::load(opt.model_path, opt.graph_path);
    if (!opt.svg.empty()) write_svg(model, opt);

    const std::vector<PolicyResult> results = alternated_medians(model, opt, policies_of(opt.policy), w);
    if (opt.json) {
        nlohmann::ordered_json j = nlohmann::ordered_json::object();
        for (const PolicyResult& r : results) j[r.policy] = to_json(r);
        std::printf("%s\n", j.dump(2).c_str());
        return;
    }
    std::printf(
        "%lld requests at %.2f requests/s (Poisson, seed %llu), prompts %lld-%lld tokens%s, outputs "
        "%lld-%lld "
        "tokens, --parallel %lld%s\n\n",
        (long long)w.requests, w.rate, (unsigned long long)w.seed, (long long)w.prompt_min,
        (long long)w.prompt_max,
        w.shared_prefix ? (" (" + std::to_string(w.shared_prefix) + " shared)").c_str() : "",
        (long long)w.gen_min, (long long)w.gen_max, (long long)opt.parallel,
        opt.repeat > 1 ? (", medians of " + std::to_string(opt.repeat) + " alternated runs").c_str() : "");
    std::printf("%-11s %10s %10s %22s %20s %10s %9s\n", "policy", "requests/s", "gen tok/s",
                "TTFT ms p50/p90/p99", "TPOT ms p50/p90/p99", "occupancy", "KV peak");
    for (const PolicyResult& r : results) {
        char ttft[64], tpot[64];
        std::snprintf(ttft, sizeof ttft, "%.0f/%.0f/%.0f", r.ttft_ms.p50, r.ttft_ms.p90, r.ttft_ms.p99);
        std::snprintf(tpot, sizeof tpot, "%.1f/%.1f/%.1f", r.tpot_ms.p50, r.tpot_ms.p90, r.tpot_ms.p99);
        std::printf("%-11s %10.2f %10.1f %22s %20s %10.2f %9lld\n", r.policy.c_str(), r.requests_per_s,
                    r.gen_tokens_per_s, ttft, tpot, r.occupancy, (long long)r.kv_blocks_peak);
    }
    for (const PolicyResult& r : results)
        std::printf(
            "\n%s: %lld prompt tokens evaluated, %lld found in the prefix cache; %lld forward passes in %.1f "
            "s",
            r.policy.c_str(), (long long)r.prompt_tokens, (long long)r.prompt_reused, (long long)r.steps,
            r.seconds);
    std::printf("\n");
}

}  // namespace

void register_batch_bench(CLI::App& app) {
    auto opt = std::make_shared<BenchOptions>();
    WorkloadOptions& w = opt->load;
    CLI::App* cmd =
        app.add_subcommand("batch-bench", "static versus continuous batching on a synthetic workload");
    cmd->add_option("--graph", opt->graph_path, "graph (JSON); default: models/<general.architecture>.json");
    cmd->add_option("-m,--model", opt->model_path, "model file (GGUF); default: models/kjv-q8_0.gguf");
    cmd->add_option("--policy", opt->policy, "static, continuous or both")
        ->check(CLI::IsMember({"static", "continuous", "both"}))
        ->capture_default_str();
    cmd->add_option("--requests", w.requests, "requests in the workload")
        ->check(whole_number_in(1, 1 << 20))
        ->capture_default_str();
    cmd->add_option("--rate", w.rate, "arrivals per second (Poisson)")
        ->check(CLI::Range(1e-3, 1e6))
        ->capture_default_str();
    cmd->add_option("--parallel", opt->parallel, "sequences per batch")
        ->check(whole_number_in(1, graph::kMaxSequences, "the sequence ceiling"))
        ->capture_default_str();
    cmd->add_option("--prompt-min", w.prompt_min, "shortest prompt (tokens)")
        ->check(whole_number_in(1, graph::kMaxContext))
        ->capture_default_str();
    cmd->add_option("--prompt-max", w.prompt_max, "longest prompt (tokens)")
        ->check(whole_number_in(1, graph::kMaxContext))
        ->capture_default_str();
    cmd->add_option("--gen-min", w.gen_min, "fewest tokens to generate")
        ->check(whole_number_in(1, graph::kMaxContext))
        ->capture_default_str();
    cmd->add_option("--gen-max", w.gen_max, "most tokens to generate")
        ->check(whole_number_in(1, graph::kMaxContext))
        ->capture_default_str();
    cmd->add_option("--shared-prefix", w.shared_prefix, "tokens every prompt starts with (0: none)")
        ->check(whole_number_in(0, graph::kMaxContext))
        ->capture_default_str();
    cmd->add_option("--seed", w.seed, "seed of the workload")->capture_default_str();
    cmd->add_option("--step-tokens", opt->step_tokens,
                    "tokens per forward pass at most (decode + a prompt chunk)")
        ->check(whole_number_in(1, graph::kMaxBatch, "the batch ceiling"))
        ->capture_default_str();
    cmd->add_option("--repeat", opt->repeat, "runs of each policy, alternated; the medians are printed")
        ->check(whole_number_in(1, 100))
        ->capture_default_str();
    cmd->add_flag("--no-prefix-cache", opt->no_prefix_cache, "evaluate every prompt token, share nothing");
    const int max_threads = tbb::info::default_concurrency();
    cmd->add_option("-t,--threads", opt->threads, "threads (0: every core)")
        ->check(whole_number_in(0, max_threads, "the threads this machine runs"));
    cmd->add_option("-c,--ctx-size", opt->ctx, "positions per sequence (0: the model's, at most 2048)")
        ->check(whole_number_in(0, graph::kMaxContext, "the context ceiling"));
    cmd->add_flag("--json", opt->json,
                  "print one JSON object {\"static\": {...}, \"continuous\": {...}} on stdout");
    cmd->add_option("--svg", opt->svg,
                    "also sweep the arrival rate and draw throughput and latency to this file");
    cmd->add_option("--sweep", opt->sweep,
                    "--svg: arrival rates, comma-separated (default: 1/16 .. 1 x --rate)");
    cmd->callback([opt] { run_batch_bench(*opt); });
}

}  // namespace graphrun::tools
