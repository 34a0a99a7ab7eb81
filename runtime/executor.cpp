// runtime/executor.cpp — the oneTBB executor.
#include "runtime/executor.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "runtime/checked_math.h"

namespace graphrun {

Executor::Executor(int n_threads)
    : n_threads_(n_threads > 0 ? n_threads : tbb::info::default_concurrency()),
      arena_(std::make_unique<tbb::task_arena>(n_threads_)) {}

Executor::~Executor() = default;

void Executor::run_phase(int step, int phase, KernelFn fn, const KernelArgs& args, int64_t items, int64_t grain) {
    if (items <= 0) return;
    auto run_range = [&](int64_t begin, int64_t end) {
        if (!timeline_) return fn(args, begin, end);
        const int64_t start = StepTimeline::now_ns();
        fn(args, begin, end);
        const int thread = n_threads_ == 1 ? 0 : tbb::this_task_arena::current_thread_index();
        timeline_->range_done(thread, {step, phase, begin, end, start, StepTimeline::now_ns()});
    };
    if (n_threads_ == 1 || items <= grain) return run_range(0, items);
    // Static partitioning: ranges of equal size, one or a few per thread, because the work per
    // unit is uniform and the fewer hand-offs the better for a memory-bound matmul. The range is one of
    // grain-sized chunks, so every cut falls on a multiple of the grain: a kernel that groups units
    // (a matmul's four-row tiles) then groups the same units for every thread count.
    const int64_t chunks = ceil_div(items, grain);
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, chunks, 1),
        [&](const tbb::blocked_range<int64_t>& r) { run_range(r.begin() * grain, std::min(items, r.end() * grain)); },
        tbb::static_partitioner());
}

void Executor::run(std::span<const Step> steps) {
    if (timeline_) timeline_->start_run(steps.size(), n_threads_);
    arena_->execute([&] {
        for (size_t i = 0; i < steps.size(); ++i) {
            const Step& step = steps[i];
            const int64_t start = timeline_ ? StepTimeline::now_ns() : 0;
            if (step.prepare) run_phase(int(i), 0, step.prepare, step.args, step.prepare_items, 1);
            run_phase(int(i), 1, step.run, step.args, step.run_items, step.grain);
            if (timeline_) timeline_->step_done(i, start, StepTimeline::now_ns());
        }
    });
    if (timeline_) timeline_->finish_run(steps);
}

}  // namespace graphrun
