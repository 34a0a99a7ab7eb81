// engine/profile.cpp — adding up recorded runs per step, and the summary tables.
#include "engine/profile.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace graphrun::graph {

namespace {

double tensor_bytes(const TensorRef& t) {
    if (!t.data || t.rank == 0) return 0;
    return double(t.rows()) * double(row_bytes(t.dtype, t.cols()));
}

std::string format(const char* fmt, auto... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

}  // namespace

double step_bytes(const Step& step) {
    const KernelArgs& a = step.args;
    auto is = [&](const char* name) { return step.kernel && std::strcmp(step.kernel, name) == 0; };
    if (is("kv_write")) {
        // (cache, x, slots) -> cache: the cache is the whole pool, of which only the batch's rows are
        // written, in fp16.
        return tensor_bytes(a.in[1]) + tensor_bytes(a.in[2]) + double(a.in[1].n_elements()) * sizeof(uint16_t);
    }
    if (is("attention") && a.n_in >= 5) {
        // (q, k_cache, v_cache, positions, kv_table): a token at position p reads its sequence's rows
        // 0..p of K and of V through its table row, fp16; the rest of the pool is not touched.
        const int32_t* positions = a.in[3].as<int32_t>();
        double rows_read = 0;
        for (int64_t t = 0; t < a.in[3].n_elements(); ++t) rows_read += double(std::max<int32_t>(positions[t], 0) + 1);
        const double cache = rows_read * double(a.in[1].cols() + a.in[2].cols()) * sizeof(uint16_t);
        return tensor_bytes(a.out) + tensor_bytes(a.in[0]) + tensor_bytes(a.in[3]) + tensor_bytes(a.in[4]) + cache;
    }
    double bytes = tensor_bytes(a.out);
    for (int i = 0; i < a.n_in; ++i) {
        if (is("embedding") && i == 1)  // ids (T) pick T rows of the table (n_vocab, n_embd)
            bytes += double(a.in[0].n_elements()) * double(row_bytes(a.in[1].dtype, a.in[1].cols()));
        else
            bytes += tensor_bytes(a.in[i]);
    }
    return bytes;
}

Profiler::Profiler(bool summary, std::string trace_path)
    : summary_(summary), trace_path_(std::move(trace_path)) {
    if (!trace_path_.empty()) {
        trace_file_.reset(std::fopen(trace_path_.c_str(), "w"));
        if (!trace_file_)
            throw std::runtime_error("--trace: cannot write '" + trace_path_ + "': " + std::strerror(errno));
    }
}

Profiler::~Profiler() = default;

void Profiler::clear() {
    groups_.clear();
    trace_.clear();
    trace_runs_.clear();
}

Profiler::Group& Profiler::group_for(std::span<const Step> steps) {
    for (Group& g : groups_)
        if (g.section == section_ && g.steps == steps.data() && g.totals.size() == steps.size()) return g;
    Group& g = groups_.emplace_back();
    g.section = section_;
    g.steps = steps.data();
    g.totals.resize(steps.size());
    for (const Step& s : steps) {
        g.nodes.push_back(s.node.empty() ? s.label : s.node);
        g.kernels.push_back(s.kernel ? s.kernel : "?");
    }
    return g;
}

void Profiler::run_finished(std::span<const Step> steps) {
    Group& g = group_for(steps);
    const int threads = n_threads();
    g.runs += 1;
    g.n_threads = std::max(g.n_threads, threads);
    const std::span<const StepSpan> spans = step_spans();
    g.run_ns += double(run_end_ns() - run_start_ns());

    if (summary_) {
        thread_busy_.assign(steps.size() * size_t(threads), 0.0);
        std::vector<uint8_t> phase_seen(steps.size() * 2, 0);
        for (int t = 0; t < threads; ++t)
            for (const RangeTiming& r : ranges(t)) {
                thread_busy_[size_t(r.step) * size_t(threads) + size_t(t)] += double(r.end_ns - r.start_ns);
                phase_seen[size_t(r.step) * 2 + size_t(r.phase)] = 1;
            }
        for (size_t i = 0; i < steps.size(); ++i) {
            StepTotals& s = g.totals[i];
            s.ns += double(spans[i].end_ns - spans[i].start_ns);
            const double* busy = &thread_busy_[i * size_t(threads)];
            s.busiest_ns += *std::max_element(busy, busy + threads);
            for (int t = 0; t < threads; ++t) s.work_ns += busy[t];
            s.phases += phase_seen[i * 2] + phase_seen[i * 2 + 1];
            if (steps[i].flops) s.flops += steps[i].flops(steps[i].args);
            s.bytes += step_bytes(steps[i]);
        }
    }
    if (trace_file_) trace_run(int(&g - groups_.data()), steps);
}

std::string Profiler::summary() const {
    std::string out;
    if (!summary_) return out;
    for (const Group& g : groups_) {
        if (g.runs == 0 || g.run_ns <= 0) continue;
        const double runs = double(g.runs);
        double step_ns = 0, busiest_ns = 0, work_ns = 0;
        int64_t phases = 0;
        for (const StepTotals& s : g.totals)
            step_ns += s.ns, busiest_ns += s.busiest_ns, work_ns += s.work_ns, phases += s.phases;
        const double run_ms = g.run_ns / runs / 1e6;
        out += format("\nprofile '%s': %lld runs of %zu steps on %d thread%s, %.3f ms per run\n",
                      g.section.c_str(), (long long)g.runs, g.totals.size(), g.n_threads,
                      g.n_threads == 1 ? "" : "s", run_ms);
        out += format(
            "  between steps %.3f ms per run (%.2f us per step); inside steps the busiest thread's kernels "
            "%.3f ms, the rest %.3f ms (%.2f us per parallel phase: hand-offs and waiting)\n",
            (g.run_ns - step_ns) / runs / 1e6, (g.run_ns - step_ns) / runs / 1e3 / double(g.totals.size()),
            busiest_ns / runs / 1e6, (step_ns - busiest_ns) / runs / 1e6,
            phases ? (step_ns - busiest_ns) / double(phases) / 1e3 : 0.0);
        out += format(
            "  threads busy in kernels %.1f%% of the run (kernel time of all threads / (run time x %d))\n",
            100.0 * work_ns / (g.run_ns * double(g.n_threads)), g.n_threads);

        struct Kind {
            std::string name;
            int count = 0;
            double ns = 0, flops = 0, bytes = 0;
        };
        std::vector<Kind> kinds;
        for (size_t i = 0; i < g.totals.size(); ++i) {
            auto it = std::find_if(kinds.begin(), kinds.end(),
                                   [&](const Kind& k) { return k.name == g.kernels[i]; });
            if (it == kinds.end()) it = kinds.insert(kinds.end(), Kind{g.kernels[i]});
            it->count += 1;
            it->ns += g.totals[i].ns, it->flops += g.totals[i].flops, it->bytes += g.totals[i].bytes;
        }
        std::sort(kinds.begin(), kinds.end(), [](const Kind& a, const Kind& b) { return a.ns > b.ns; });
        out += format("  %-14s %6s %10s %7s %9s %9s\n", "op kind", "nodes", "ms/run", "share", "GB/s",
                      "GFLOP/s");
        for (const Kind& k : kinds)
            out += format("  %-14s %6d %10.3f %6.1f%% %9.2f %9.2f\n", k.name.c_str(), k.count,
                          k.ns / runs / 1e6, 100.0 * k.ns / g.run_ns, k.ns > 0 ? k.bytes / k.ns : 0.0,
                          k.ns > 0 ? k.flops / k.ns : 0.0);

        out += format("  %5s %-24s %-14s %10s %7s %9s %9s\n", "step", "node", "kernel", "us/run", "share",
                      "GB/s", "GFLOP/s");
        for (size_t i = 0; i < g.totals.size(); ++i) {
            const StepTotals& s = g.totals[i];
            out += format("  %5zu %-24s %-14s %10.2f %6.2f%% %9.2f %9.2f\n", i, g.nodes[i].c_str(),
                          g.kernels[i].c_str(), s.ns / runs / 1e3, 100.0 * s.ns / g.run_ns,
                          s.ns > 0 ? s.bytes / s.ns : 0.0, s.ns > 0 ? s.flops / s.ns : 0.0);
        }
    }
    return out;
}

}  // namespace graphrun::graph
