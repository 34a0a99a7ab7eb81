// engine/profile.h — where a token's time goes: per op kind and per graph node, and a trace of every
// step on every thread (docs/adding-an-op.md, "Profiling").
//
//   graph::Profiler profiler(/*summary=*/true, /*trace_path=*/"run.json");
//   session.set_timeline(&profiler);
//   profiler.set_section("decode");        // runs are grouped by section and plan
//   ... session.eval(...) ...
//   session.set_timeline(nullptr);
//   std::fputs(profiler.summary().c_str(), stderr);
//   profiler.write_trace();                // Chrome / Perfetto JSON (ui.perfetto.dev, chrome://tracing)
//
// The executor records each step's start and end and each thread's ranges (runtime/step_timeline.h);
// at the end of every run the profiler adds them up per step, with the step's FLOPs (from the op
// table) and bytes (its tensors: inputs, output, the KV rows attention reads) so the summary can say
// GB/s and GFLOP/s. Recording costs two clock reads per step and per range; the trace keeps every
// range in memory (about 40 bytes each) until it is written.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/step_timeline.h"

namespace graphrun::graph {

// Bytes a step moves: every input and the output once, except that an embedding reads only its
// tokens' rows of the table and attention also reads the cached K and V rows its tokens attend to
// and writes its tokens' rows.
double step_bytes(const Step& step);

class Profiler : public StepTimeline {
  public:
    // summary: add up per op kind and node for summary(); trace_path non-empty: keep every range for
    // write_trace(). Throws std::runtime_error if the trace file cannot be written.
    explicit Profiler(bool summary, std::string trace_path = {});
    ~Profiler() override;

    // Later runs are counted under this name ("pp512", "decode"); one table per section and plan.
    void set_section(std::string name) { section_ = std::move(name); }
    void clear();  // forget everything recorded so far (e.g. warm-up runs)

    std::string summary() const;  // the tables, or "" when nothing was recorded
    void write_trace();           // writes trace_path; throws std::runtime_error on I/O failure

    struct StepTotals {
        double ns = 0;          // wall time of the step, summed over runs
        double busiest_ns = 0;  // the busiest thread's kernel time in the step, summed over runs
        double work_ns = 0;     // kernel time of all threads in the step, summed over runs
        double flops = 0, bytes = 0;
        int64_t phases = 0;  // parallel phases run (for the per-phase fork/join cost)
    };
    struct Group {
        std::string section;
        const Step* steps = nullptr;  // identifies the plan's bound steps
        std::vector<std::string> nodes, kernels;
        int64_t runs = 0;
        int n_threads = 0;
        double run_ns = 0;  // Executor::run's own wall time, summed over runs
        std::vector<StepTotals> totals;
    };
    const std::vector<Group>& groups() const { return groups_; }

  protected:
    void run_finished(std::span<const Step> steps) override;

  private:
    struct TraceRange {  // one range (or a whole step when thread < 0) of one run
        int32_t group, step, thread, phase;
        int64_t begin, end, start_ns, end_ns;
    };
    Group& group_for(std::span<const Step> steps);
    void trace_run(int group, std::span<const Step> steps);

    bool summary_;
    std::string trace_path_;
    std::string section_ = "run";
    std::vector<Group> groups_;
    std::vector<TraceRange> trace_;
    std::vector<std::pair<int32_t, std::pair<int64_t, int64_t>>> trace_runs_;  // group, run start/end
    std::vector<double> thread_busy_;  // scratch: per (step, thread) kernel time of the current run
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> trace_file_{nullptr, std::fclose};
};

}  // namespace graphrun::graph
