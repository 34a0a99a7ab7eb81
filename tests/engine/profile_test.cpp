// tests/engine/profile_test.cpp — what the executor records when asked (every step, ranges that cover each
// phase exactly once), the profiler's sums and byte counts, the trace file, and that recording
// changes no result.
#include "engine/profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/session.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

// Wide enough that every matmul splits into ranges on 2 threads (grain 16-32 weight rows).
std::string profile_model_file() {
    return testing::random_model_file(testing::spec_of(128, 2, 4, 2, 256, 320, 3), "profile_model");
}

// Keeps the raw timeline of the last run.
class LastRun : public StepTimeline {
  public:
    std::vector<StepSpan> steps;
    std::vector<std::vector<RangeTiming>> thread_ranges;
    std::vector<int64_t> items[2];  // per step: prepare and run units
    int64_t start = 0, end = 0;

  protected:
    void run_finished(std::span<const Step> s) override {
        steps.assign(step_spans().begin(), step_spans().end());
        thread_ranges.clear();
        for (int t = 0; t < n_threads(); ++t) thread_ranges.emplace_back(ranges(t).begin(), ranges(t).end());
        items[0].clear(), items[1].clear();
        for (const Step& step : s) {
            items[0].push_back(step.prepare ? step.prepare_items : 0);
            items[1].push_back(step.run_items);
        }
        start = run_start_ns(), end = run_end_ns();
    }
};

class ExecutorTimeline : public ::testing::TestWithParam<int> {};

// Every step is timed in order inside the run, and the ranges of each phase cover its work units
// [0, items) exactly once, whatever thread ran them.
TEST_P(ExecutorTimeline, CoversEveryUnitOfEveryPhaseOnce) {
    const int threads = GetParam();
    auto model = graph::Model::load(profile_model_file());
    graph::Session session(model, {.n_ctx = 32, .n_threads = threads});
    LastRun timeline;
    session.set_timeline(&timeline);
    for (int64_t n_tokens : {5, 1}) {
        const std::vector<int32_t> tokens = testing::random_tokens(size_t(n_tokens), 320, 2);
        session.eval(tokens);
        ASSERT_EQ(timeline.steps.size(), timeline.items[1].size());
        int64_t previous_end = timeline.start;
        for (const StepSpan& s : timeline.steps) {
            EXPECT_LE(previous_end, s.start_ns);
            EXPECT_LE(s.start_ns, s.end_ns);
            previous_end = s.end_ns;
        }
        EXPECT_LE(previous_end, timeline.end);

        const size_t n_steps = timeline.steps.size();
        std::vector<std::vector<std::pair<int64_t, int64_t>>> covered(2 * n_steps);
        int ranges_on_helpers = 0;
        for (size_t t = 0; t < timeline.thread_ranges.size(); ++t)
            for (const RangeTiming& r : timeline.thread_ranges[t]) {
                ASSERT_LT(size_t(r.step), n_steps);
                const StepSpan& s = timeline.steps[size_t(r.step)];
                EXPECT_LE(s.start_ns, r.start_ns);
                EXPECT_LE(r.end_ns, s.end_ns);
                covered[size_t(r.step) * 2 + size_t(r.phase)].emplace_back(r.begin, r.end);
                ranges_on_helpers += t > 0;
            }
        for (size_t i = 0; i < 2 * n_steps; ++i) {
            auto& c = covered[i];
            std::sort(c.begin(), c.end());
            int64_t next = 0;
            for (auto [begin, end] : c) {
                EXPECT_EQ(begin, next) << "step " << i / 2 << " phase " << i % 2;
                EXPECT_LT(begin, end);
                next = end;
            }
            EXPECT_EQ(next, timeline.items[i % 2][i / 2]) << "step " << i / 2 << " phase " << i % 2;
        }
        if (threads == 1) {
            EXPECT_EQ(ranges_on_helpers, 0);
        }
    }
    session.set_timeline(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Threads, ExecutorTimeline, ::testing::Values(1, 2, 3));

// Recording is only observation: logits with a profiler equal those without, bit for bit.
TEST(Profiler, RecordingChangesNoResult) {
    auto model = graph::Model::load(profile_model_file());
    const std::vector<int32_t> tokens = testing::random_tokens(7, 320, 4);
    graph::Session plain(model, {.n_ctx = 16, .n_threads = 2}),
        profiled(model, {.n_ctx = 16, .n_threads = 2});
    graph::Profiler profiler(true);
    profiled.set_timeline(&profiler);
    auto a = plain.eval(tokens);
    const std::vector<float> expected(a.begin(), a.end());
    auto b = profiled.eval(tokens);
    EXPECT_EQ(std::vector<float>(b.begin(), b.end()), expected);
    profiled.set_timeline(nullptr);
}

TEST(Profiler, SumsPerStepWithTheOpTablesFlopsAndTheTensorsBytes) {
    auto model = graph::Model::load(profile_model_file());
    graph::Session session(model, {.n_ctx = 16, .n_threads = 2});
    graph::Profiler profiler(true);
    session.set_timeline(&profiler);
    profiler.set_section("decode");
    const int32_t token = 9;
    for (int i = 0; i < 3; ++i) session.eval(std::span<const int32_t>(&token, 1));
    session.set_timeline(nullptr);

    ASSERT_EQ(profiler.groups().size(), 1u);
    const graph::Profiler::Group& g = profiler.groups()[0];
    EXPECT_EQ(g.section, "decode");
    EXPECT_EQ(g.runs, 3);
    const graph::Plan& plan = session.plan(1);
    ASSERT_EQ(g.totals.size(), plan.steps.size());
    double step_ns = 0;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        EXPECT_EQ(g.kernels[i], plan.steps[i].op->name);
        EXPECT_EQ(g.nodes[i], plan.tensors[plan.steps[i].output].name);
        EXPECT_GT(g.totals[i].ns, 0);
        EXPECT_LE(g.totals[i].busiest_ns, g.totals[i].ns);
        EXPECT_LE(g.totals[i].work_ns, 2 * g.totals[i].ns);
        step_ns += g.totals[i].ns;
        EXPECT_GT(g.totals[i].bytes, 0) << g.nodes[i];
    }
    EXPECT_LE(step_ns, g.run_ns);
    // A decode matmul x (1, K) · W (N, K)ᵀ: 2·N·K FLOPs and W, x and y in bytes, per run.
    const auto q = std::find(g.nodes.begin(), g.nodes.end(), "blk.0.q") - g.nodes.begin();
    ASSERT_LT(size_t(q), g.nodes.size());
    EXPECT_DOUBLE_EQ(g.totals[size_t(q)].flops, 3 * 2.0 * 128 * 128);
    EXPECT_DOUBLE_EQ(g.totals[size_t(q)].bytes, 3 * (128.0 * 128 * 4 + 128 * 4 + 128 * 4));

    const std::string text = profiler.summary();
    EXPECT_THAT(text, HasSubstr("profile 'decode': 3 runs of " + std::to_string(plan.steps.size()) +
                                " steps on 2 threads"));
    EXPECT_THAT(text, HasSubstr("matmul_f32"));
    EXPECT_THAT(text, HasSubstr("blk.1.attn"));
    EXPECT_THAT(text, HasSubstr("threads busy in kernels"));
}

// The embedding reads its tokens' rows only; kv_write writes its batch's rows and attention reads the
// cached rows up to each position, never the whole pool.
TEST(Profiler, StepBytesOfEmbeddingAndAttention) {
    std::vector<int32_t> ids = {3, 4};
    std::vector<float> table(10 * 8), out(2 * 8);
    Step embedding;
    embedding.kernel = "embedding";
    embedding.args.n_in = 2;
    embedding.args.in[0] = {DType::I32, 1, {2}, ids.data()};
    embedding.args.in[1] = {DType::F32, 2, {10, 8}, table.data()};
    embedding.args.out = {DType::F32, 2, {2, 8}, out.data()};
    EXPECT_DOUBLE_EQ(graph::step_bytes(embedding), 2 * 4 + 2 * 8 * 4 + 2 * 8 * 4);

    // kv_write: the batch's two rows go into a pool of 32, fp16.
    std::vector<float> x(2 * 8);
    std::vector<int32_t> slots = {5, 6};
    std::vector<uint16_t> k(32 * 8), v(32 * 8);
    Step kv_write;
    kv_write.kernel = "kv_write";
    kv_write.args.n_in = 3;
    kv_write.args.in[0] = {DType::F16, 2, {32, 8}, k.data()};
    kv_write.args.in[1] = {DType::F32, 2, {2, 8}, x.data()};
    kv_write.args.in[2] = {DType::I32, 1, {2}, slots.data()};
    kv_write.args.out = kv_write.args.in[0];
    EXPECT_DOUBLE_EQ(graph::step_bytes(kv_write), 2 * 8 * 4 + 2 * 4 + 2 * 8 * 2);

    std::vector<float> q(2 * 16), y(2 * 16);
    std::vector<int32_t> positions = {5, 6}, block_table = {0, 1, 0, 1};
    Step attention;
    attention.kernel = "attention";
    KernelArgs& a = attention.args;
    a.n_in = 5;
    a.in[0] = {DType::F32, 2, {2, 16}, q.data()};
    a.in[1] = {DType::F16, 2, {32, 8}, k.data()};
    a.in[2] = {DType::F16, 2, {32, 8}, v.data()};
    a.in[3] = {DType::I32, 1, {2}, positions.data()};
    a.in[4] = {DType::I32, 2, {2, 2}, block_table.data()};
    a.out = {DType::F32, 2, {2, 16}, y.data()};
    const double tensors = 4.0 * (32 + 32) + 2 * 4 + 4 * 4;
    const double cache = (6 + 7) * 8.0 * 2 * 2;  // rows 0..5 and 0..6 read, of K and of V; not the pool
    EXPECT_DOUBLE_EQ(graph::step_bytes(attention), tensors + cache);
}

TEST(Profiler, TraceHasEveryStepOfEveryRunOnItsThread) {
    auto model = graph::Model::load(profile_model_file());
    const std::string path = (testing::test_temp_dir() / "trace.json").string();
    size_t n_steps = 0;
    {
        graph::Session session(model, {.n_ctx = 16, .n_threads = 2});
        graph::Profiler profiler(false, path);
        session.set_timeline(&profiler);
        const std::vector<int32_t> prompt = testing::random_tokens(6, 320, 1);
        session.eval(prompt);
        const int32_t token = 2;
        session.eval(std::span<const int32_t>(&token, 1));
        session.set_timeline(nullptr);
        n_steps = session.plan(1).steps.size();
        EXPECT_EQ(profiler.summary().find("steps on"), std::string::npos);  // no summary was asked for
        profiler.write_trace();
    }
    std::ifstream in(path);
    const nlohmann::json trace = nlohmann::json::parse(in);
    int runs = 0, steps = 0, ranges = 0;
    std::set<int> threads;
    for (const nlohmann::json& e : trace["traceEvents"]) {
        if (e["ph"] == "M") continue;
        EXPECT_EQ(e["ph"], "X");
        EXPECT_GE(e["ts"].get<double>(), 0);
        EXPECT_GE(e["dur"].get<double>(), 0);
        if (e["cat"] == "run") {
            ++runs;
        } else if (e["cat"] == "range") {
            ++ranges;
            threads.insert(e["tid"].get<int>());
        } else {
            ++steps;
            EXPECT_EQ(e["tid"], 0);
        }
    }
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(size_t(steps), 2 * n_steps);
    EXPECT_GE(size_t(ranges), 2 * n_steps);  // at least one range per step
    EXPECT_LE(*threads.rbegin(), 1);
}

TEST(Profiler, UnwritableTraceFails) {
    EXPECT_THROW(graph::Profiler(true, "/nonexistent/dir/trace.json"), std::runtime_error);
}

}  // namespace
}  // namespace graphrun
