// tests/engine/pipeline_test.cpp — engine/pipeline.h over in-process links (a rank per thread):
// an engine whose layers run on 2 or 3 ranks returns the bits of one process, through every call
// that changes it (sequences added, forked, truncated, removed, prefixes reused, batches of several
// sequences); the stages cut where asked, and each holds only its layers' weights.
#include "engine/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "graph/stages.h"
#include "tests/common/same_bits.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using graph::BatchToken;
using graph::Engine;
using graph::FinishReason;
using graph::SeqId;
using ::testing::HasSubstr;
using testing::same_bits;

std::string model_file(const std::string& arch) {
    graph::RandomLlamaSpec spec = testing::spec_of(32, 5, 4, 2, 64, 320, 11);
    spec.arch = arch;
    return testing::random_model_file(spec, "pipeline_" + arch);
}

// What a test does with an engine; every logits row it reads is appended to `out`.
void drive(Engine& e, std::vector<float>& out) {
    auto keep = [&](std::span<const float> rows) { out.insert(out.end(), rows.begin(), rows.end()); };
    const SeqId a = e.add_sequence(), b = e.add_sequence();
    const std::vector<int32_t> prompt = testing::random_tokens(40, 320, 3);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({a, prompt[i], i + 1 == prompt.size()});
    for (int32_t t : {5, 6, 7}) batch.push_back({b, t, true});
    keep(e.decode(batch));
    const SeqId c = e.fork(a);
    for (int step = 0; step < 6; ++step)
        keep(e.decode(std::vector<BatchToken>{{a, 10 + step, true}, {b, 20 + step, true}, {c, 30 + step, true}}));
    e.truncate(b, 2);
    keep(e.decode(std::vector<BatchToken>{{b, 99, true}}));
    e.remove_sequence(a);
    const SeqId d = e.add_sequence();
    const int64_t reused = e.reuse_prefix(d, prompt);  // a's full blocks stay cached under its prefix
    EXPECT_EQ(reused, 32);
    batch.clear();
    for (size_t i = size_t(reused); i < prompt.size(); ++i) batch.push_back({d, prompt[i], true});
    keep(e.decode(batch));
    keep(e.decode(std::vector<BatchToken>{{d, 1, false}, {c, 2, true}}));  // a row not asked for
}

std::vector<float> alone(const std::string& file) {
    Engine e(graph::Model::load(file), {.n_ctx = 128, .n_seq = 4, .n_threads = 1, .max_batch = 64});
    std::vector<float> out;
    drive(e, out);
    return out;
}

// Rank 0 drives the engine; ranks 1 .. n-1 follow on their own threads.
// micro_batch: rank 0 cuts batches into chunks of at least this many tokens (0: never).
std::vector<float> over_ranks(const std::string& file, int n_ranks, const std::string& stages,
                              std::vector<std::string>* summaries = nullptr, int64_t micro_batch = 0) {
    std::vector<std::unique_ptr<graph::StageLink>> links = graph::local_stage_links(n_ranks);
    std::vector<std::string> lines(static_cast<size_t>(n_ranks));
    std::vector<std::thread> followers;
    std::vector<std::unique_ptr<graph::Pipeline>> pipelines;
    for (int r = 0; r < n_ranks; ++r)
        pipelines.push_back(std::make_unique<graph::Pipeline>(std::move(links[size_t(r)]), stages));
    for (int r = 1; r < n_ranks; ++r)
        followers.emplace_back([&, r] { lines[size_t(r)] = pipelines[size_t(r)]->follow(); });
    std::vector<float> out;
    {
        auto model = graph::Model::load(file, "", pipelines[0].get());
        Engine e(model, {.n_ctx = 128, .n_seq = 4, .n_threads = 1, .max_batch = 64, .micro_batch = micro_batch});
        drive(e, out);
        lines[0] = pipelines[0]->summary();
    }
    pipelines[0].reset();  // tells the others to stop
    for (std::thread& t : followers) t.join();
    if (summaries) *summaries = lines;
    return out;
}

TEST(Pipeline, TwoRanksGiveTheBitsOfOneProcessForLlamaAndQwen3) {
    for (const std::string arch : {"llama", "qwen3"}) {
        const std::string file = model_file(arch);
        const std::vector<float> one = alone(file);
        ASSERT_EQ(one.size(), size_t(1 + 3 + 6 * 3 + 1 + 8 + 1) * 320) << arch;
        EXPECT_TRUE(same_bits(over_ranks(file, 2, ""), one)) << arch;
        EXPECT_TRUE(same_bits(over_ranks(file, 2, "0-0,1-4"), one)) << arch;
        // The 43-token batch in 4 chunks of 10-11 tokens, one after another down the ranks.
        EXPECT_TRUE(same_bits(over_ranks(file, 2, "", nullptr, 8), one)) << arch;
    }
}

TEST(Pipeline, ThreeRanksGiveTheBitsOfOneProcess) {
    const std::string file = model_file("llama");
    std::vector<std::string> lines;
    EXPECT_TRUE(same_bits(over_ranks(file, 3, "0-1,2-2,3-4", &lines), alone(file)));
    EXPECT_TRUE(same_bits(over_ranks(file, 3, "0-1,2-2,3-4", nullptr, 5), alone(file)));  // 6 chunks
    EXPECT_THAT(lines[0], HasSubstr("rank 0 of 3: layers 0-1 of 5"));
    EXPECT_THAT(lines[1], HasSubstr("rank 1 of 3: layers 2-2 of 5"));
    EXPECT_THAT(lines[2], HasSubstr("rank 2 of 3: layers 3-4 of 5"));
}

// Engine::embed over ranks: the last rank's final hidden state comes back to rank 0.
TEST(Pipeline, EmbeddingsOverTwoRanksAreTheBitsOfOneProcess) {
    const std::string file = model_file("qwen3");
    auto embed_all = [](Engine& e) {
        const SeqId a = e.add_sequence(), b = e.add_sequence();
        std::vector<BatchToken> batch;
        for (int32_t t : testing::random_tokens(20, 320, 5)) batch.push_back({a, t, true});
        for (int32_t t : {7, 8, 9}) batch.push_back({b, t, t == 9});
        const std::span<const float> rows = e.embed(batch);
        return std::vector<float>(rows.begin(), rows.end());
    };
    Engine one(graph::Model::load(file), {.n_ctx = 64, .n_threads = 1, .max_batch = 32});
    const std::vector<float> expected = embed_all(one);
    ASSERT_EQ(expected.size(), size_t(21 * 32));

    std::vector<std::unique_ptr<graph::StageLink>> links = graph::local_stage_links(2);
    graph::Pipeline lead(std::move(links[0]), ""), follower(std::move(links[1]), "");
    std::thread t([&] { follower.follow(); });
    std::vector<float> got;
    {
        Engine e(graph::Model::load(file, "", &lead), {.n_ctx = 64, .n_threads = 1, .max_batch = 32});
        EXPECT_EQ(e.n_embd(), 32);
        got = embed_all(e);
    }
    lead.tell(graph::PipelineMessage().put(int64_t(graph::PipelineCommand::Stop)));
    t.join();
    EXPECT_TRUE(same_bits(got, expected));
}

// A batch cut into chunks is checked whole: one that does not fit the pool consumes nothing on
// any rank, and the engines go on as one process's.
TEST(Pipeline, AChunkedBatchThatDoesNotFitConsumesNothing) {
    const std::string file = model_file("llama");
    const std::vector<int32_t> prompt = testing::random_tokens(40, 320, 9);
    auto run = [&](Engine& e) {
        const SeqId s = e.add_sequence();
        std::vector<BatchToken> batch;
        for (int32_t t : prompt) batch.push_back({s, t, true});
        EXPECT_THROW(e.decode(batch), graph::KvPoolFull);  // 3 blocks needed, 2 in the pool
        EXPECT_EQ(e.length(s), 0);
        batch.resize(32);
        const std::span<const float> rows = e.decode(batch);
        return std::vector<float>(rows.begin(), rows.end());
    };
    const graph::EngineOptions o{.n_ctx = 64, .kv_blocks = 2, .n_threads = 1, .max_batch = 64, .micro_batch = 8};
    Engine one(graph::Model::load(file), o);
    const std::vector<float> expected = run(one);
    std::vector<std::unique_ptr<graph::StageLink>> links = graph::local_stage_links(2);
    graph::Pipeline lead(std::move(links[0]), ""), follower(std::move(links[1]), "");
    std::thread t([&] { follower.follow(); });
    std::vector<float> got;
    {
        Engine e(graph::Model::load(file, "", &lead), o);
        got = run(e);
    }
    lead.tell(graph::PipelineMessage().put(int64_t(graph::PipelineCommand::Stop)));
    t.join();
    EXPECT_TRUE(same_bits(got, expected));
}

TEST(Pipeline, EachStageHoldsOnlyItsLayersWeightsAndCaches) {
    const auto whole = graph::Model::load(model_file("llama"));
    const graph::Graph& g = whole->graph();
    const auto ranges = graph::stage_ranges(g, 2, "");
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0].first, 0);
    EXPECT_EQ(ranges[1].second, 4);
    EXPECT_EQ(ranges[0].second + 1, ranges[1].first);
    int64_t sum = 0;
    size_t states = 0;
    for (int r = 0; r < 2; ++r) {
        const graph::Graph stage = graph::cut_stage(g, ranges, r);
        ASSERT_TRUE(stage.stage);
        const graph::GraphStage& s = *stage.stage;
        sum += s.weight_bytes;
        states += stage.states.size();
        // Balanced by bytes: each within 35-65 % of the whole (the embedding and output matrices
        // weigh on the first and last stage).
        EXPECT_GT(s.weight_bytes, s.whole_weight_bytes * 35 / 100) << r;
        EXPECT_LT(s.weight_bytes, s.whole_weight_bytes * 65 / 100) << r;
        for (const graph::GraphWeight& w : stage.weights) {
            const std::string& name = w.name;
            if (name.rfind("blk.", 0) != 0) continue;
            const int layer = std::stoi(name.substr(4));
            EXPECT_GE(layer, s.first_layer) << name;
            EXPECT_LE(layer, s.last_layer) << name;
        }
        EXPECT_EQ(s.first() ? s.receives : s.sends, "");
    }
    EXPECT_EQ(states, g.states.size());  // every KV cache on exactly one rank
    int64_t whole_bytes = 0;
    for (const graph::GraphWeight& w : g.weights) whole_bytes += int64_t(w.tensor->nbytes);
    EXPECT_GE(sum, whole_bytes);  // a tied matrix read by the first and last stage counts twice
}

TEST(Pipeline, StageSpecsThatDoNotCoverTheLayersOnceInOrderAreRefused) {
    const auto whole = graph::Model::load(model_file("llama"));
    const graph::Graph& g = whole->graph();
    for (const auto& [spec, says] : std::vector<std::pair<std::string, std::string>>{
             {"0-1", "1 ranges for 2 ranks"},
             {"0-1,3-4", "layer 2"},
             {"0-2,2-4", "range 1 must start at layer 3"},
             {"0-1,2-5", "must end at layer 4"},
             {"1-2,3-4", "layer 0"},
             {"0-x,2-4", "0-x"},
             {"2-1,2-4", "range 0 must start at layer 0"},
         }) {
        try {
            graph::stage_ranges(g, 2, spec);
            ADD_FAILURE() << spec << " was accepted";
        } catch (const graph::GraphError& e) {
            EXPECT_THAT(e.what(), HasSubstr(says)) << spec;
        }
    }
    EXPECT_THROW(graph::stage_ranges(g, 6, ""), graph::GraphError);  // more ranks than layers
}

TEST(Pipeline, AHungRankIsAnErrorNamingItWithinTheTimeout) {
    std::vector<std::unique_ptr<graph::StageLink>> links = graph::local_stage_links(2);
    links[0]->set_timeout_s(0.2);
    graph::Pipeline pipeline(std::move(links[0]), "");
    // No rank 1 follows: the first pass waits for its rows in vain.
    auto model = graph::Model::load(model_file("llama"), "", &pipeline);
    Engine e(model, {.n_ctx = 64, .n_threads = 1, .max_batch = 8});
    const SeqId s = e.add_sequence();
    try {
        e.decode(std::vector<BatchToken>{{s, 3, true}});
        ADD_FAILURE() << "the pass returned without rank 1";
    } catch (const graph::StageLinkError& err) {
        EXPECT_THAT(err.what(), HasSubstr("rank 1"));
    }
}

// Engine::submit/collect over 2 ranks: passes of different sequences in flight together come back
// in order with one process's bits; decode and a second collect are refused while they are out.
TEST(Pipeline, PassesInFlightTogetherAreCollectedInOrderWithOneProcessesBits) {
    const std::string file = model_file("llama");
    auto run = [&](Engine& e, bool overlap) {
        std::vector<float> out;
        const SeqId a = e.add_sequence(), b = e.add_sequence();
        for (int step = 0; step < 4; ++step) {
            const std::vector<BatchToken> pa{{a, 3 + step, true}}, pb{{b, 40 + step, true}, {b, 41, true}};
            if (overlap) {
                e.submit(pa);
                e.submit(pb);
                EXPECT_EQ(e.in_flight(), 2);
                EXPECT_THROW(e.decode(pa), std::logic_error);
                for (int k = 0; k < 2; ++k) {
                    const std::span<const float> rows = e.collect();
                    out.insert(out.end(), rows.begin(), rows.end());
                }
                EXPECT_THROW(e.collect(), std::logic_error);
            } else {
                for (const auto& p : {pa, pb}) {
                    const std::span<const float> rows = e.decode(p);
                    out.insert(out.end(), rows.begin(), rows.end());
                }
            }
        }
        return out;
    };
    Engine one(graph::Model::load(file), {.n_ctx = 64, .n_seq = 2, .n_threads = 1, .max_batch = 16});
    EXPECT_EQ(one.pipeline_depth(), 1);
    const std::vector<float> expected = run(one, false);
    ASSERT_EQ(expected.size(), size_t(4 * 3 * 320));

    std::vector<std::unique_ptr<graph::StageLink>> links = graph::local_stage_links(2);
    graph::Pipeline lead(std::move(links[0]), ""), follower(std::move(links[1]), "");
    std::thread t([&] { follower.follow(); });
    std::vector<float> got;
    {
        Engine e(graph::Model::load(file, "", &lead), {.n_ctx = 64, .n_seq = 2, .n_threads = 1, .max_batch = 16});
        EXPECT_EQ(e.pipeline_depth(), 2);
        got = run(e, true);
    }
    lead.tell(graph::PipelineMessage().put(int64_t(graph::PipelineCommand::Stop)));
    t.join();
    EXPECT_TRUE(same_bits(got, expected));
}

// What a scheduler run gives each request: its tokens, the bits of their rows, how it finished.
struct PipelineOutcome {
    std::vector<int32_t> tokens;
    std::vector<float> rows;
    FinishReason finish = FinishReason::None;
    bool operator==(const PipelineOutcome&) const = default;
};

// Six requests (greedy and seeded sampling, prompts of 1 to 70 tokens, one cancelled at its third
// token) through a continuous scheduler of 4 sequences; over a pipeline, groups of at least
// `group_min` decoding requests take turns.
// With `speculation`, the requests speculate (a draft model, when given, on rank 0 alone).
std::vector<PipelineOutcome> schedule(std::shared_ptr<const graph::Model> model,
                                      graph::SchedulerMetrics* metrics, int64_t group_min = 4,
                                      graph::Speculation speculation = {},
                                      std::shared_ptr<const graph::Model> draft = nullptr) {
    graph::Scheduler scheduler(std::move(model), {.parallel = 4, .step_tokens = 32, .n_threads = 1,
                                                  .pipeline_group_min = group_min,
                                                  .speculation = speculation,
                                                  .draft_model = std::move(draft)});
    std::vector<PipelineOutcome> outcomes(6);
    for (size_t i = 0; i < outcomes.size(); ++i) {
        graph::Request request;
        request.prompt = testing::random_tokens(i == 2 ? 1 : 10 + 12 * int64_t(i), 320, 20 + int(i));
        request.max_tokens = 12 + 3 * int64_t(i);
        request.sampling.temperature = i % 2 ? 0.9f : 0.0f;
        request.sampling.seed = 100 + i;
        request.stop_ids = {7};
        PipelineOutcome& o = outcomes[i];
        scheduler.submit(std::move(request), [&, i](const graph::TokenEvent& e) {
            if (e.token >= 0) {
                o.tokens.push_back(e.token);
                o.rows.insert(o.rows.end(), e.logits.begin(), e.logits.end());
            }
            if (e.finish != FinishReason::None) o.finish = e.finish;
            if (i == 3 && e.index == 2 && e.token >= 0) scheduler.cancel(e.request);
        });
    }
    scheduler.run_until_idle();
    *metrics = scheduler.metrics();
    return outcomes;
}

// The scheduler over 2 ranks keeps 2 passes in flight (while rank 1 runs one group of sequences,
// rank 0 runs the other's, or a prompt chunk) and gives every request the tokens and bits of one
// process: with the 4 decoding requests in two groups of 2 and in one group (the default minimum).
TEST(Pipeline, ASchedulerOverTwoRanksKeepsTwoPassesInFlightWithOneProcessesTokens) {
    for (const std::string arch : {"llama", "qwen3"}) {
        const std::string file = model_file(arch);
        graph::SchedulerMetrics m_one;
        const std::vector<PipelineOutcome> expected = schedule(graph::Model::load(file), &m_one);
        EXPECT_EQ(m_one.passes_in_flight_peak, 1) << arch;
        EXPECT_EQ(expected[3].finish, FinishReason::Cancelled) << arch;
        EXPECT_EQ(expected[3].tokens.size(), 3u) << arch;

        for (const int64_t group_min : {2, 4}) {
            SCOPED_TRACE(arch + ", groups of at least " + std::to_string(group_min));
            graph::SchedulerMetrics m_two;
            std::vector<std::unique_ptr<graph::StageLink>> links = graph::local_stage_links(2);
            graph::Pipeline lead(std::move(links[0]), ""), follower(std::move(links[1]), "");
            std::thread t([&] { follower.follow(); });
            const std::vector<PipelineOutcome> got =
                schedule(graph::Model::load(file, "", &lead), &m_two, group_min);
            lead.tell(graph::PipelineMessage().put(int64_t(graph::PipelineCommand::Stop)));
            t.join();
            EXPECT_EQ(m_two.passes_in_flight_peak, 2);
            EXPECT_EQ(m_two.generated_tokens, m_one.generated_tokens);
            ASSERT_EQ(got.size(), expected.size());
            for (size_t i = 0; i < got.size(); ++i) {
                EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
                EXPECT_EQ(got[i].finish, expected[i].finish) << "request " << i;
                EXPECT_TRUE(same_bits(got[i].rows, expected[i].rows)) << "request " << i;
            }
        }
    }
}

// Speculation over 2 ranks: a request's token and guesses go down the ranks in one pass, its rejected
// guesses are truncated on every rank once that pass is back, and every request gets one process's
// plain tokens and bits, with the model as its own draft (greedy: every guess kept) and with lookup.
TEST(Pipeline, SpeculationOverTwoRanksGivesOneProcessesPlainTokens) {
    const std::string file = model_file("llama");
    graph::SchedulerMetrics plain_metrics, m;
    const std::vector<PipelineOutcome> expected = schedule(graph::Model::load(file), &plain_metrics);
    for (const graph::SpecMode mode : {graph::SpecMode::Draft, graph::SpecMode::Lookup})
        for (const int64_t group_min : {2, 4}) {
            SCOPED_TRACE(std::string(graph::spec_mode_name(mode)) + ", groups of at least " +
                         std::to_string(group_min));
            std::vector<std::unique_ptr<graph::StageLink>> links = graph::local_stage_links(2);
            graph::Pipeline lead(std::move(links[0]), ""), follower(std::move(links[1]), "");
            std::thread t([&] { follower.follow(); });
            const std::vector<PipelineOutcome> got =
                schedule(graph::Model::load(file, "", &lead), &m, group_min,
                         {.mode = mode, .draft_min = 1, .draft_max = 4},
                         mode == graph::SpecMode::Draft ? graph::Model::load(file) : nullptr);
            lead.tell(graph::PipelineMessage().put(int64_t(graph::PipelineCommand::Stop)));
            t.join();
            ASSERT_EQ(got.size(), expected.size());
            for (size_t i = 0; i < got.size(); ++i) {
                if (i == 3) {
                    // Cancelled from its third token's callback: the pass that sampled it may have kept
                    // guesses after it, which come out too (a cancel acts before the next pass).
                    ASSERT_GE(got[i].tokens.size(), expected[i].tokens.size());
                    EXPECT_TRUE(std::equal(expected[i].tokens.begin(), expected[i].tokens.end(),
                                           got[i].tokens.begin()));
                    EXPECT_EQ(std::memcmp(got[i].rows.data(), expected[i].rows.data(),
                                          expected[i].rows.size() * sizeof(float)), 0);
                    EXPECT_EQ(got[i].finish, FinishReason::Cancelled);
                    continue;
                }
                EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
                EXPECT_EQ(got[i].finish, expected[i].finish) << "request " << i;
                EXPECT_TRUE(same_bits(got[i].rows, expected[i].rows)) << "request " << i;
            }
            if (mode == graph::SpecMode::Draft) {
                EXPECT_GT(m.draft_accepted, 0);
                EXPECT_LT(m.steps, plain_metrics.steps);
            }
        }
}

}  // namespace
}  // namespace graphrun
