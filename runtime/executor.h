// runtime/executor.h — runs a plan's steps in order, each split over threads with oneTBB.
//
// Ops run one after another (each reads what the previous wrote); the parallelism is inside an op:
// its work units (rows, output columns, heads) are split into ranges of at least `grain` units.
// With one thread the executor calls each kernel once over the whole range, no TBB involved.
#pragma once

#include <memory>
#include <span>

#include <tbb/task_arena.h>

#include "runtime/kernel.h"
#include "runtime/step_timeline.h"

namespace graphrun {

class Executor {
public:
    explicit Executor(int n_threads = 0);  // 0: every core
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    void run(std::span<const Step> steps);
    int n_threads() const { return n_threads_; }

    // Record every step's and every range's times into `timeline` (nullptr: stop recording).
    void set_timeline(StepTimeline* timeline) { timeline_ = timeline; }

private:
    void run_phase(int step, int phase, KernelFn fn, const KernelArgs& args, int64_t items, int64_t grain);
    int n_threads_;
    std::unique_ptr<tbb::task_arena> arena_;
    StepTimeline* timeline_ = nullptr;
};

}  // namespace graphrun
