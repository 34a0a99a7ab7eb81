// tests/runtime/executor_test.cpp — the executor's hand-off: every unit of hundreds of short steps runs once
// whatever the thread count, logits are the same bits on 1, 2 and 3 threads, and a kernel that throws
// on any thread ends the run with its exception (no thread left waiting) and leaves the executor usable.
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/session.h"
#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

// A phase of `items` units whose kernel counts how often each unit ran (in args.scratch).
Step counting_step(std::vector<std::atomic<int>>& counts, int64_t grain) {
    Step step;
    step.run = [](const KernelArgs& args, int64_t begin, int64_t end) {
        auto* c = static_cast<std::atomic<int>*>(args.scratch);
        for (int64_t i = begin; i < end; ++i) c[i].fetch_add(1, std::memory_order_relaxed);
    };
    step.run_items = int64_t(counts.size());
    step.grain = grain;
    step.args.scratch = counts.data();
    return step;
}

TEST(Executor, EveryUnitOfManyShortStepsRunsOnce) {
    for (int threads : {1, 2, 3, 4}) {
        Executor executor(threads);
        std::vector<std::vector<std::atomic<int>>> counts;
        for (int64_t items : {1, 2, 3, 7, 64, 1000}) counts.emplace_back(size_t(items));
        std::vector<Step> steps;
        for (int repeat = 0; repeat < 50; ++repeat)  // a decode-like run: hundreds of tiny steps
            for (auto& c : counts) steps.push_back(counting_step(c, repeat % 3 + 1));
        for (int run = 0; run < 3; ++run) executor.run(steps);
        for (auto& c : counts)
            for (size_t i = 0; i < c.size(); ++i)
                ASSERT_EQ(c[i].load(), 150) << threads << " threads, unit " << i << " of " << c.size();
    }
}

// The kernel throws on the second range: range 0 waits (up to a second) until another thread has
// taken range 1, so that it is a helper that fails (or the caller, if no helper came in time).
std::atomic<bool> g_range1_started{false};

TEST(Executor, KernelThatThrowsOnAHelperEndsTheRunWithItsError) {
    Executor executor(2);
    Step step;
    step.run = [](const KernelArgs&, int64_t begin, int64_t) {
        if (begin > 0) {
            g_range1_started = true;
            throw std::runtime_error("range " + std::to_string(begin) + " failed");
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (!g_range1_started && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    };
    step.run_items = 2;
    const std::vector<Step> steps(3, step);
    for (int run = 0; run < 2; ++run) {  // and the executor stays usable after a failed run
        g_range1_started = false;
        EXPECT_THROW(
            {
                try {
                    executor.run(steps);
                } catch (const std::runtime_error& e) {
                    EXPECT_STREQ(e.what(), "range 1 failed");
                    throw;
                }
            },
            std::runtime_error);
    }
    std::vector<std::atomic<int>> counts(5);
    executor.run(std::vector<Step>{counting_step(counts, 1)});
    for (auto& c : counts) EXPECT_EQ(c.load(), 1);
}

TEST(Executor, KernelThatThrowsOnTheCallingThreadEndsTheRun) {
    Executor executor(2);
    Step step;
    step.run = [](const KernelArgs&, int64_t begin, int64_t) {
        if (begin == 0) throw std::runtime_error("first range failed");
    };
    step.run_items = 2;
    EXPECT_THROW(executor.run(std::vector<Step>(4, step)), std::runtime_error);
    std::vector<std::atomic<int>> counts(3);
    executor.run(std::vector<Step>{counting_step(counts, 1)});
    for (auto& c : counts) EXPECT_EQ(c.load(), 1);
}

// graphrun's invariant: the thread count changes no bit of the logits, prompt or decode. The model
// is wide enough that every matmul and the attention split over 2 and 3 threads.
TEST(Executor, LogitsAreTheSameBitsOnOneTwoAndThreeThreads) {
    auto model = graph::Model::load(
        testing::random_model_file(testing::spec_of(128, 2, 4, 2, 256, 320, 3), "executor_threads"));
    const std::vector<int32_t> prompt = testing::random_tokens(9, 320, 11);
    std::vector<std::vector<float>> logits;  // per thread count: prompt, then 4 decoded tokens
    for (int threads : {1, 2, 3}) {
        graph::Session session(model, {.n_ctx = 32, .n_threads = threads});
        auto out = session.eval(prompt);
        std::vector<float> all(out.begin(), out.end());
        for (int32_t id : {5, 17, 300, 2}) {
            auto step = session.eval(std::span<const int32_t>(&id, 1));
            all.insert(all.end(), step.begin(), step.end());
        }
        logits.push_back(std::move(all));
    }
    for (size_t i = 1; i < logits.size(); ++i) {
        ASSERT_EQ(logits[i].size(), logits[0].size());
        EXPECT_EQ(std::memcmp(logits[i].data(), logits[0].data(), logits[0].size() * sizeof(float)), 0)
            << i + 1 << " threads differ from 1 thread";
    }
}

}  // namespace
}  // namespace graphrun
