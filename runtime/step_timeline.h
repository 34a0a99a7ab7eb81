// runtime/step_timeline.h — what the executor records when asked: when each step of a run began and
// ended, and which thread ran which range of its work units, when.
//
// The executor holds a StepTimeline pointer that is null unless someone profiles; with it null the
// only cost is that check. With it set, each step costs two clock reads on the calling thread and
// each range two on the thread that runs it; the buffers are reserved when the run starts, so
// recording allocates nothing in the step loop (unless a run has more ranges than reserved).
// Times are nanoseconds of std::chrono::steady_clock.
//
// A consumer (engine/profile.h) derives from StepTimeline and reads the run in run_finished(), which
// the executor calls after the last step, on the calling thread, before run() returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/kernel.h"

namespace graphrun {

// One range [begin, end) of a step's work units, run on one thread.
struct RangeTiming {
    int32_t step = 0;
    int32_t phase = 0;  // 0: Step::prepare, 1: Step::run
    int64_t begin = 0, end = 0;
    int64_t start_ns = 0, end_ns = 0;
};

struct StepSpan {
    int64_t start_ns = 0, end_ns = 0;
};

class StepTimeline {
  public:
    explicit StepTimeline(int max_threads = 64) : ranges_(size_t(max_threads > 0 ? max_threads : 1)) {}
    virtual ~StepTimeline() = default;
    StepTimeline(const StepTimeline&) = delete;
    StepTimeline& operator=(const StepTimeline&) = delete;

    static int64_t now_ns() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }

    // ---- executor side ----
    // Clears the previous run (keeping capacity) and makes room for n_steps steps on n_threads threads.
    void start_run(size_t n_steps, int n_threads) {
        run_start_ns_ = now_ns();
        steps_.assign(n_steps, StepSpan{});
        if (ranges_.size() < size_t(n_threads)) ranges_.resize(size_t(n_threads));
        used_threads_ = n_threads;
        for (auto& r : ranges_) {
            r.clear();
            r.reserve(4 * n_steps);  // a prepare and a run phase, each usually one range per thread
        }
    }
    void step_done(size_t step, int64_t start_ns, int64_t end_ns) { steps_[step] = {start_ns, end_ns}; }
    // Called by `thread` (0 = the thread that called run(), 1.. the helpers) for its own ranges only.
    void range_done(int thread, const RangeTiming& r) { ranges_[size_t(thread)].push_back(r); }
    void finish_run(std::span<const Step> steps) {
        run_end_ns_ = now_ns();
        run_finished(steps);
    }

    // ---- consumer side (valid in run_finished) ----
    int64_t run_start_ns() const { return run_start_ns_; }
    int64_t run_end_ns() const { return run_end_ns_; }
    std::span<const StepSpan> step_spans() const { return steps_; }
    int n_threads() const { return used_threads_; }
    std::span<const RangeTiming> ranges(int thread) const { return ranges_[size_t(thread)]; }

  protected:
    virtual void run_finished(std::span<const Step> steps) = 0;

  private:
    int64_t run_start_ns_ = 0, run_end_ns_ = 0;
    int used_threads_ = 0;
    std::vector<StepSpan> steps_;
    std::vector<std::vector<RangeTiming>> ranges_;  // per thread
};

}  // namespace graphrun
