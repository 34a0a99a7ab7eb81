// tests/engine/scheduler_prompt_logits_test.cpp — Request::prompt_logits: every prompt position's row,
// bit for bit the rows a Session gives for the whole prompt (the path graphrun perplexity takes), in
// order and before the first generated token, also when another request shares the prompt's blocks
// and the prompt is longer than a step; max_tokens 0 ends after the prompt with no token.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/session.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using graph::FinishReason;

std::shared_ptr<const graph::Model> prompt_logits_model() {
    static auto model =
        graph::Model::load(testing::random_model_file(testing::spec_of(48, 2, 4, 2, 96), "prompt_logits"));
    return model;
}

TEST(SchedulerPromptLogits, RowsOfEveryPromptPositionAreTheSessionsBits) {
    auto model = prompt_logits_model();
    std::vector<int32_t> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back(int32_t(1 + (i * 7) % 90));
    graph::Session session(model, {.n_ctx = 64, .n_threads = 1});
    const std::span<const float> all = session.eval(prompt);
    const size_t n_vocab = size_t(session.n_vocab());

    // step_tokens 16: the prompt comes in three chunks; a first request registers its full blocks,
    // which the prompt_logits request must not take (it needs every row).
    graph::Scheduler scheduler(model, {.parallel = 2, .n_ctx = 64, .step_tokens = 16, .n_threads = 1});
    scheduler.submit({.prompt = prompt, .max_tokens = 1}, [](const graph::TokenEvent&) {});
    scheduler.run_until_idle();
    std::vector<int64_t> positions;
    std::vector<std::vector<float>> rows;
    int32_t tokens = 0;
    FinishReason finish = FinishReason::None;
    for (const int64_t max_tokens : {int64_t(0), int64_t(2)}) {
        positions.clear();
        rows.clear();
        tokens = 0;
        scheduler.submit({.prompt = prompt, .max_tokens = max_tokens, .prompt_logits = true},
                         [&](const graph::TokenEvent& e) {
                             if (e.prompt_position >= 0) {
                                 EXPECT_EQ(tokens, 0) << "prompt rows come before any generated token";
                                 positions.push_back(e.prompt_position);
                                 rows.emplace_back(e.logits.begin(), e.logits.end());
                             }
                             if (e.token >= 0) ++tokens;
                             if (e.finish != FinishReason::None) finish = e.finish;
                         });
        scheduler.run_until_idle();
        ASSERT_EQ(positions.size(), prompt.size());
        for (size_t p = 0; p < prompt.size(); ++p) {
            EXPECT_EQ(positions[p], int64_t(p));
            EXPECT_EQ(std::memcmp(rows[p].data(), all.data() + p * n_vocab, n_vocab * sizeof(float)), 0)
                << "position " << p;
        }
        EXPECT_EQ(tokens, max_tokens);
        EXPECT_EQ(finish, FinishReason::Length);
    }
    EXPECT_THROW(scheduler.submit({.prompt = prompt, .max_tokens = -1, .prompt_logits = true}, {}), graph::RequestRefused);
    EXPECT_THROW(scheduler.submit({.prompt = prompt, .max_tokens = 0}, {}), graph::RequestRefused);
}

}  // namespace
}  // namespace graphrun
