// tests/engine/scheduler_test.cpp — the batch API: each request gets the tokens (and logits, bit for bit) it
// gets alone, under both policies; static batches run to their end before others join; requests that
// cannot run are refused with a reason; cancelling frees blocks; the context's end is a reason the
// caller sees; shared prefixes use one prefix's blocks and skip its evaluation; the engine thread.
#include "engine/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using graph::FinishReason;
using graph::Policy;
using graph::Request;
using graph::Scheduler;
using graph::TokenEvent;
using ::testing::HasSubstr;

std::shared_ptr<const graph::Model> test_model() {
    static auto model =
        graph::Model::load(testing::random_model_file(testing::spec_of(48, 2, 4, 2, 96), "scheduler"));
    return model;
}

// What a request got: its tokens, the logits each was sampled from, how it ended.
struct Outcome {
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> logits;
    FinishReason finish = FinishReason::None;
    graph::RequestTiming timing;
};

struct Collector {
    std::vector<Outcome> outcomes;
    graph::TokenCallback for_request(size_t i) {
        if (outcomes.size() <= i) outcomes.resize(i + 1);
        return [this, i](const TokenEvent& e) {
            Outcome& o = outcomes[i];
            if (e.token >= 0) {
                o.tokens.push_back(e.token);
                o.logits.emplace_back(e.logits.begin(), e.logits.end());
            }
            if (e.finish != FinishReason::None) {
                o.finish = e.finish;
                o.timing = *e.timing;
            }
        };
    }
};

std::vector<Request> mixed_requests() {
    std::vector<Request> requests;
    for (int i = 0; i < 6; ++i) {
        Request r;
        r.prompt = testing::random_tokens(size_t(3 + 11 * i), 320, uint32_t(40 + i));  // 3 .. 58 tokens
        r.max_tokens = 4 + 3 * (i % 3);
        r.sampling.temperature = i % 2 ? 0.8f : 0.0f;  // greedy and seeded sampling
        r.sampling.seed = uint64_t(100 + i);
        requests.push_back(r);
    }
    return requests;
}

std::vector<Outcome> run_all(const std::vector<Request>& requests, graph::SchedulerOptions options) {
    Scheduler scheduler(test_model(), options);
    Collector c;
    for (size_t i = 0; i < requests.size(); ++i) scheduler.submit(requests[i], c.for_request(i));
    scheduler.run_until_idle();
    EXPECT_EQ(scheduler.metrics().kv_blocks_in_use, 0);
    return c.outcomes;
}

TEST(Scheduler, EveryRequestGetsItsAloneTokensAndLogitsUnderBothPolicies) {
    const std::vector<Request> requests = mixed_requests();
    std::vector<Outcome> alone;
    for (const Request& r : requests)
        alone.push_back(run_all({r}, {.parallel = 1, .n_ctx = 128, .step_tokens = 64, .n_threads = 1})[0]);
    for (Policy policy : {Policy::Static, Policy::Continuous})
        for (int threads : {1, 2}) {
            SCOPED_TRACE(std::string(graph::policy_name(policy)) + ", " + std::to_string(threads) +
                         " threads");
            const std::vector<Outcome> together = run_all(
                requests,
                {.policy = policy, .parallel = 4, .n_ctx = 128, .step_tokens = 24, .n_threads = threads});
            for (size_t i = 0; i < requests.size(); ++i) {
                EXPECT_EQ(together[i].tokens, alone[i].tokens) << "request " << i;
                EXPECT_EQ(together[i].finish, FinishReason::Length);
                ASSERT_EQ(together[i].logits.size(), alone[i].logits.size());
                for (size_t k = 0; k < alone[i].logits.size(); ++k)
                    EXPECT_EQ(std::memcmp(together[i].logits[k].data(), alone[i].logits[k].data(),
                                          alone[i].logits[k].size() * sizeof(float)),
                              0)
                        << "request " << i << " token " << k;
            }
        }
}

TEST(Scheduler, StaticBatchesRunToTheirEndContinuousOnesRefill) {
    const std::vector<Request> requests = mixed_requests();
    const std::vector<Outcome> s = run_all(requests, {.policy = Policy::Static, .parallel = 2, .n_ctx = 128});
    // Requests 0 and 1 form the first batch; 2 starts only when both have finished.
    EXPECT_GE(s[2].timing.started, std::max(s[0].timing.finished, s[1].timing.finished));
    EXPECT_GE(s[4].timing.started, std::max(s[2].timing.finished, s[3].timing.finished));
    // Continuous: request 2 takes the first free place, before the longer of 0 and 1 ends.
    const std::vector<Outcome> c =
        run_all(requests, {.policy = Policy::Continuous, .parallel = 2, .n_ctx = 128});
    EXPECT_LT(c[2].timing.started, std::max(c[0].timing.finished, c[1].timing.finished));
}

TEST(Scheduler, RequestsThatCannotRunAreRefusedWithAReason) {
    Scheduler scheduler(test_model(), {.parallel = 2, .max_queue = 2, .n_ctx = 64, .kv_blocks = 3});
    auto refusal = [&](Request r) -> std::string {
        try {
            scheduler.submit(std::move(r), {});
        } catch (const graph::RequestRefused& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_THAT(refusal({}), HasSubstr("prompt: empty"));
    EXPECT_THAT(refusal({.prompt = {1, 320}}),
                HasSubstr("token 1 has id 320, outside the vocabulary of 320"));
    EXPECT_THAT(refusal({.prompt = std::vector<int32_t>(65, 5)}),
                HasSubstr("65 tokens do not fit in the context of 64"));
    EXPECT_THAT(refusal({.prompt = {1}, .max_tokens = 0}), HasSubstr("max_tokens: 0 is outside 1 .."));
    Request hot{.prompt = {1}};
    hot.sampling.top_p = 2;
    EXPECT_THAT(refusal(hot), HasSubstr("sampling:"));
    // 3 blocks hold 48 positions: a request that may reach 60 needs 4 blocks and one to copy.
    EXPECT_THAT(refusal({.prompt = std::vector<int32_t>(40, 5), .max_tokens = 20}),
                HasSubstr("may need 5 KV blocks, the pool has 3"));
    // Two free sequences and a queue of two: four are taken (none runs before the first step), the fifth is not.
    for (int i = 0; i < 4; ++i) scheduler.submit({.prompt = {1}}, {});
    EXPECT_THROW(scheduler.submit({.prompt = {1}}, {}), graph::QueueFull);
    EXPECT_EQ(scheduler.metrics().queued, 4);
    scheduler.run_until_idle();
    EXPECT_EQ(scheduler.metrics().finished, 4);
}

TEST(Scheduler, ASequenceAtTheContextsEndStopsWithContextFull) {
    Scheduler scheduler(test_model(), {.parallel = 1, .n_ctx = 32});
    Collector c;
    scheduler.submit({.prompt = testing::random_tokens(30, 320, 5), .max_tokens = 10}, c.for_request(0));
    scheduler.run_until_idle();
    // Positions 30 and 31 take two generated tokens back; the third has no position left.
    EXPECT_EQ(c.outcomes[0].tokens.size(), 3u);
    EXPECT_EQ(c.outcomes[0].finish, FinishReason::ContextFull);
    EXPECT_STREQ(graph::finish_reason_name(FinishReason::ContextFull), "context_full");
}

TEST(Scheduler, StopIdsEndARequest) {
    const Request greedy{
        .prompt = testing::random_tokens(9, 320, 6), .sampling = {.temperature = 0}, .max_tokens = 8};
    const std::vector<Outcome> free_run = run_all({greedy}, {.parallel = 1, .n_ctx = 64});
    Request stopping = greedy;
    stopping.stop_ids = {free_run[0].tokens[2]};
    const std::vector<Outcome> stopped = run_all({stopping}, {.parallel = 1, .n_ctx = 64});
    EXPECT_EQ(stopped[0].finish, FinishReason::Stop);
    ASSERT_LE(stopped[0].tokens.size(), 3u);
    EXPECT_EQ(stopped[0].tokens.back(), free_run[0].tokens[2]);
}

TEST(Scheduler, CancellingFreesTheBlocksBeforeTheNextPass) {
    Scheduler scheduler(test_model(), {.parallel = 1, .n_ctx = 128});
    Collector c;
    const graph::RequestId running =
        scheduler.submit({.prompt = testing::random_tokens(40, 320, 7), .max_tokens = 50}, c.for_request(0));
    const graph::RequestId queued =
        scheduler.submit({.prompt = {1, 2, 3}, .max_tokens = 5}, c.for_request(1));
    EXPECT_TRUE(scheduler.step());  // the first request's prompt; the second waits for the one place
    EXPECT_TRUE(scheduler.step());
    EXPECT_GT(scheduler.metrics().kv_blocks_in_use, 2);
    EXPECT_TRUE(scheduler.cancel(queued));  // queued: at once, with its last event
    EXPECT_EQ(c.outcomes[1].finish, FinishReason::Cancelled);
    EXPECT_TRUE(scheduler.cancel(running));
    EXPECT_FALSE(scheduler.cancel(12345));
    scheduler.step();
    EXPECT_EQ(c.outcomes[0].finish, FinishReason::Cancelled);
    EXPECT_EQ(scheduler.metrics().kv_blocks_in_use, 0);
    EXPECT_EQ(scheduler.metrics().cancelled, 2);
    EXPECT_TRUE(scheduler.idle());
}

// N requests with a 200-token common prefix use about one prefix's worth of KV blocks, and their
// prompt processing skips the shared part.
TEST(Scheduler, SharedPrefixesUseOnePrefixOfBlocksAndSkipItsEvaluation) {
    const std::vector<int32_t> prefix = testing::random_tokens(200, 320, 8);
    std::vector<Request> requests;
    for (int i = 0; i < 4; ++i) {
        Request r{.prompt = prefix, .sampling = {.temperature = 0}, .max_tokens = 40};
        for (int32_t t : testing::random_tokens(8, 320, uint32_t(60 + i))) r.prompt.push_back(t);
        requests.push_back(r);
    }
    auto run = [&](bool prefix_cache, graph::SchedulerMetrics* m) {
        Scheduler scheduler(test_model(), {.parallel = 4, .n_ctx = 256, .prefix_cache = prefix_cache});
        Collector c;
        for (size_t i = 0; i < requests.size(); ++i) scheduler.submit(requests[i], c.for_request(i));
        scheduler.run_until_idle();
        *m = scheduler.metrics();
        return c.outcomes;
    };
    graph::SchedulerMetrics shared, unshared;
    const std::vector<Outcome> with = run(true, &shared), without = run(false, &unshared);
    for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(with[i].tokens, without[i].tokens);
    // 200 positions are 12 full blocks and 8 positions: the later three requests find the 12 blocks.
    EXPECT_EQ(shared.prompt_tokens_reused, 3 * 192);
    EXPECT_EQ(shared.prompt_tokens, 4 * 208 - 3 * 192);
    EXPECT_EQ(unshared.prompt_tokens_reused, 0);
    // All four decode at once, each holding 14 to 16 blocks (up to 247 positions) of its own when
    // nothing is shared; shared, the 12 prefix blocks are held once and each adds at most 4.
    EXPECT_GE(unshared.kv_blocks_peak, 4 * 14);
    EXPECT_LE(shared.kv_blocks_peak, 12 + 4 * 4);
}

TEST(Scheduler, AnEngineThreadServesRequestsFromOtherThreads) {
    Scheduler scheduler(test_model(), {.parallel = 3, .n_ctx = 64});
    scheduler.start();
    std::mutex m;
    std::condition_variable done;
    int finished = 0;
    std::vector<size_t> counts(5);
    for (size_t i = 0; i < 5; ++i)
        scheduler.submit({.prompt = testing::random_tokens(5 + i, 320, uint32_t(i)), .max_tokens = 6},
                         [&, i](const TokenEvent& e) {
                             std::lock_guard lock(m);
                             counts[i] += e.token >= 0;
                             if (e.finish != FinishReason::None) ++finished, done.notify_all();
                         });
    {
        std::unique_lock lock(m);
        ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(60), [&] { return finished == 5; }));
    }
    scheduler.stop();
    for (size_t n : counts) EXPECT_EQ(n, 6u);
    const graph::SchedulerMetrics metrics = scheduler.metrics();
    EXPECT_EQ(metrics.generated_tokens, 30);
    EXPECT_EQ(metrics.active, 0);
    EXPECT_GT(metrics.occupancy_mean, 0.0);
    EXPECT_LE(metrics.occupancy_mean, 1.0);
}

}  // namespace
}  // namespace graphrun
