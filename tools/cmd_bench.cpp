// tools/cmd_bench.cpp — `graphrun bench`: pp/tg tokens/s as llama-bench measures them (tools/lib/bench.h).
//
//   graphrun bench -m MODEL.gguf -t 2 -p 512 -n 128 -r 5           markdown table on stdout
//   graphrun bench -m MODEL.gguf -t 1,2 -n 128 -d 0,1024 -o json   llama-bench's JSON fields
//   graphrun bench -m MODEL.gguf -p 0 -n 32 --profile              where the time goes, on stderr
// The options are llama-bench's (parsed by tools/lib/bench_options.cpp, so they read the same); stdout
// holds the table, JSON or CSV and nothing else; progress, bandwidth and profiles go to stderr.
#include <cstdio>
#include <map>
#include <optional>

#include "tools/lib/bench.h"
#include "tools/lib/bench_report.h"
#include "runtime/read_bandwidth.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

void run_bench(const std::vector<std::string>& args) {
    const graph::BenchOptions opt = graph::parse_bench_options(args);
    if (opt.help) {
        std::fputs(graph::bench_usage().c_str(), stdout);
        return;
    }
    const std::vector<graph::BenchTest> tests = graph::bench_tests(opt);
    std::optional<graph::Profiler> profiler;
    if (opt.profile || !opt.trace_path.empty()) profiler.emplace(opt.profile, opt.trace_path);

    // Load every model first, so a bad file fails before anything is measured.
    std::map<std::string, std::shared_ptr<const graph::Model>> models;
    for (const graph::BenchTest& t : tests)
        if (!models.count(t.model_path))
            models[t.model_path] = graph::Model::load(t.model_path, opt.graph_path);

    std::map<int, double> read_gbps;
    if (opt.bandwidth_mib > 0) {
        const ReadBandwidth bandwidth(opt.bandwidth_mib << 20);
        for (const graph::BenchTest& t : tests)
            if (!read_gbps.count(t.n_threads)) {
                read_gbps[t.n_threads] = bandwidth.best_gbps(t.n_threads);
                std::fprintf(stderr,
                             "graphrun bench: read bandwidth on %d thread%s: %.2f GB/s (%lld MiB, 4 streams "
                             "per thread, best of 5)\n",
                             t.n_threads, t.n_threads == 1 ? "" : "s", read_gbps[t.n_threads],
                             (long long)opt.bandwidth_mib);
            }
    }

    auto printer = graph::make_bench_printer(opt.output, stdout, opt);
    printer->header();
    for (size_t i = 0; i < tests.size(); ++i) {
        const graph::BenchTest& t = tests[i];
        if (opt.progress)
            std::fprintf(stderr, "graphrun bench: test %zu/%zu: %s, %d threads, %s\n", i + 1, tests.size(),
                         t.name().c_str(), t.n_threads, t.model_path.c_str());
        graph::BenchResult r = graph::run_bench_test(models.at(t.model_path), t, opt.repetitions, opt.warmup,
                                                     profiler ? &*profiler : nullptr);
        if (read_gbps.count(t.n_threads)) r.read_gbps = read_gbps.at(t.n_threads);
        printer->row(r);
    }
    printer->footer();
    if (profiler) {
        std::fputs(profiler->summary().c_str(), stderr);
        profiler->write_trace();
        if (!opt.trace_path.empty())
            std::fprintf(stderr, "graphrun bench: wrote %s\n", opt.trace_path.c_str());
    }
}

}  // namespace

void register_bench(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("bench",
                                       "Prompt and generation tokens/s, as llama-bench measures them "
                                       "(graphrun bench --help)");
    // llama-bench's spelling (-ub, -pg, repeated options, ranges) is parsed by tools/lib/bench_options.cpp.
    cmd->prefix_command();
    cmd->allow_extras();
    cmd->set_help_flag();
    cmd->callback([cmd] { run_bench(cmd->remaining()); });
}

}  // namespace graphrun::tools
