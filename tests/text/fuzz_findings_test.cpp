// tests/text/fuzz_findings_test.cpp — one regression test per bug the fuzz targets (fuzz/*_fuzz.cpp)
// found (and per bug seen while fixing one); each fuzz input is also in fuzz/corpus/, so every
// fuzz run replays it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "runtime/text/sampler.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string rejection(const SamplerParams& p) {
    try {
        sampler_validate(p);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

// sampler: finite but absurd penalties (repeat 3.4e38, frequency 2.3e38) overflowed every penalised
// logit to -inf, and sampling then failed mid-generation. They are refused when the sampler is made.
TEST(FuzzFindings, PenaltiesThatOverflowLogitsAreRefusedUpFront) {
    SamplerParams p;
    p.repeat_penalty = 3.39615e38f;
    EXPECT_THAT(rejection(p), AllOf(HasSubstr("repeat_penalty is 3396149945"), HasSubstr("expected a value > 0 and at most 10000")));
    p = {};
    p.frequency_penalty = 2.2933e38f;
    EXPECT_THAT(rejection(p), HasSubstr("frequency_penalty"));
    p = {};
    p.presence_penalty = -1.92353e38f;
    EXPECT_THAT(rejection(p), HasSubstr("presence_penalty"));
    p = {};
    p.repeat_penalty = kMaxPenalty;
    p.frequency_penalty = -kMaxPenalty;
    p.presence_penalty = kMaxPenalty;
    EXPECT_EQ(rejection(p), "");
    p = {};
    p.temperature = std::numeric_limits<float>::infinity();
    EXPECT_THAT(rejection(p), HasSubstr("temperature"));
}

// sampler (seen while reading the finding above): a tiny temperature divides finite logits into
// +inf, and exp(inf - inf) made every
// probability NaN (the draw then returned the last candidate, not the best). The softmax of
// overflowed logits is now its limit: an even split among the infinite ones.
TEST(FuzzFindings, ATinyTemperatureSamplesTheBestToken) {
    SamplerParams p;
    p.temperature = 1e-38f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 5;
    Sampler sampler(p, 4);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(sampler.sample(std::vector<float>{1.0f, 7.0f, -3.0f, 2.0f}), 1);
}

}  // namespace
}  // namespace graphrun
