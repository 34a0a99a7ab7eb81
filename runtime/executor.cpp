// runtime/executor.cpp — the oneTBB executor.
#include "runtime/executor.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

namespace graphrun {

Executor::Executor(int n_threads)
    : n_threads_(n_threads > 0 ? n_threads : tbb::info::default_concurrency()),
      arena_(std::make_unique<tbb::task_arena>(n_threads_)) {}

Executor::~Executor() = default;

void Executor::run_phase(KernelFn fn, const KernelArgs& args, int64_t items, int64_t grain) {
    if (items <= 0) return;
    if (n_threads_ == 1 || items <= grain) {
        fn(args, 0, items);
        return;
    }
    // Static partitioning: ranges of equal size, one or a few per thread, because the work per
    // unit is uniform and the fewer hand-offs the better for a memory-bound matmul.
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, items, size_t(grain)),
        [&](const tbb::blocked_range<int64_t>& r) { fn(args, r.begin(), r.end()); },
        tbb::static_partitioner());
}

void Executor::run(std::span<const Step> steps) {
    arena_->execute([&] {
        for (const Step& step : steps) {
            if (step.prepare) run_phase(step.prepare, step.args, step.prepare_items, 1);
            run_phase(step.run, step.args, step.run_items, step.grain);
        }
    });
}

}  // namespace graphrun
