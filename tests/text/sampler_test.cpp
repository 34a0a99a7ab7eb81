// tests/text/sampler_test.cpp — each sampling stage held to its definition on known logits, then the chain.
#include "runtime/text/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace graphrun {
namespace {

// Logits whose softmax is exactly the given probabilities (up to rounding): l_i = log p_i.
std::vector<float> logits_for(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
    return l;
}

std::vector<float> random_logits(int n, uint32_t seed, float scale = 3.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = normal(rng);
    return l;
}

std::vector<int32_t> ids(const Candidates& c) {
    std::vector<int32_t> out;
    for (const TokenCandidate& t : c.data) out.push_back(t.id);
    return out;
}

std::set<int32_t> id_set(const Candidates& c) {
    std::set<int32_t> out;
    for (const TokenCandidate& t : c.data) out.insert(t.id);
    return out;
}

// Softmax in double, as the independent reference the float stages are compared against.
std::vector<double> softmax_ref(const std::vector<float>& logits, double temperature = 1.0) {
    const double mx = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p;
    for (float l : logits) p.push_back(std::exp((l - mx) / temperature));
    const double sum = std::accumulate(p.begin(), p.end(), 0.0);
    for (double& x : p) x /= sum;
    return p;
}

SamplerParams plain(float temperature) {
    SamplerParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 42;
    return p;
}

TEST(Sampler, GreedyPicksArgmaxAndLowestIdOnTies) {
    Candidates c = Candidates::from_logits(std::vector<float>{0.5f, 2.0f, -1.0f, 2.0f, 1.9f});
    EXPECT_EQ(sampler_greedy(c), 1);
    Candidates empty;
    EXPECT_THROW(sampler_greedy(empty), std::invalid_argument);
}

TEST(Sampler, TopK1EqualsGreedy) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        const std::vector<float> logits = random_logits(517, seed);
        Candidates ref = Candidates::from_logits(logits);
        const int32_t greedy = sampler_greedy(ref);

        SamplerParams p = plain(1.5f);
        p.top_k = 1;
        p.seed = seed;
        Sampler top1(p, 517);
        Sampler argmax(plain(0.0f), 517);
        EXPECT_EQ(top1.sample(logits), greedy) << "logit seed " << seed;
        EXPECT_EQ(argmax.sample(logits), greedy) << "logit seed " << seed;
    }
}

TEST(Sampler, TopKKeepsTheKHighestInOrder) {
    const std::vector<float> logits = random_logits(1001, 7);
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });

    Candidates c = Candidates::from_logits(logits);
    sampler_top_k(c, 37);
    EXPECT_TRUE(c.sorted);
    EXPECT_EQ(ids(c), std::vector<int32_t>(order.begin(), order.begin() + 37));

    Candidates off = Candidates::from_logits(logits);
    sampler_top_k(off, 0);
    EXPECT_EQ(off.data.size(), logits.size()) << "top_k 0 must be a no-op";

    Candidates small = Candidates::from_logits(std::vector<float>{1, 2, 3});
    sampler_top_k(small, 10);
    EXPECT_EQ(ids(small), (std::vector<int32_t>{2, 1, 0})) << "k larger than the set keeps all, sorted";

    Candidates min_keep = Candidates::from_logits(logits);
    sampler_top_k(min_keep, 2, 5);
    EXPECT_EQ(min_keep.data.size(), 5u) << "min_keep wins over a smaller k";
}

TEST(Sampler, SoftmaxSortsAndNormalises) {
    const std::vector<float> logits = random_logits(300, 3);
    Candidates c = Candidates::from_logits(logits);
    sampler_softmax(c);
    const std::vector<double> ref = softmax_ref(logits);
    double sum = 0.0;
    for (size_t i = 0; i < c.data.size(); ++i) {
        if (i > 0) {
            EXPECT_GE(c.data[i - 1].logit, c.data[i].logit);
        }
        EXPECT_NEAR(c.data[i].p, ref[static_cast<size_t>(c.data[i].id)], 1e-6);
        sum += c.data[i].p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
    // Shuffled so the stage has to sort: probabilities 0.5 (id 2), 0.3 (id 0), 0.15 (id 3), 0.05 (id 1).
    const std::vector<float> logits = logits_for({0.3, 0.05, 0.5, 0.15});
    auto run = [&](float p) {
        Candidates c = Candidates::from_logits(logits);
        sampler_top_p(c, p);
        return ids(c);
    };
    EXPECT_EQ(run(0.45f), (std::vector<int32_t>{2}));
    EXPECT_EQ(run(0.75f), (std::vector<int32_t>{2, 0}));
    EXPECT_EQ(run(0.81f), (std::vector<int32_t>{2, 0, 3}));
    EXPECT_EQ(run(0.96f), (std::vector<int32_t>{2, 0, 3, 1}));
    EXPECT_EQ(run(0.0f), (std::vector<int32_t>{2})) << "p 0 still keeps min_keep = 1";
    EXPECT_EQ(run(1.0f).size(), 4u);

    Candidates keep3 = Candidates::from_logits(logits);
    sampler_top_p(keep3, 0.1f, 3);
    EXPECT_EQ(keep3.data.size(), 3u) << "min_keep";

    // Against a double-precision reference on a larger random vocabulary: p halfway between the
    // cumulative sums of the best n-1 and the best n tokens must keep exactly n.
    const std::vector<float> big = random_logits(777, 11, 2.0f);
    std::vector<double> sorted_p = softmax_ref(big);
    std::sort(sorted_p.rbegin(), sorted_p.rend());
    std::vector<double> cum(sorted_p.size());
    std::partial_sum(sorted_p.begin(), sorted_p.end(), cum.begin());
    for (size_t n : {2u, 6u, 41u, 300u}) {
        const float p = static_cast<float>((cum[n - 2] + cum[n - 1]) / 2);
        Candidates c = Candidates::from_logits(big);
        sampler_top_p(c, p);
        EXPECT_EQ(c.data.size(), n) << "p " << p;
        Candidates presorted = Candidates::from_logits(big);
        sampler_softmax(presorted);  // the path where an earlier stage already sorted
        sampler_top_p(presorted, p);
        EXPECT_EQ(ids(presorted), ids(c)) << "p " << p;
    }
}

TEST(Sampler, MinPThresholdIsRelativeToTheLargestProbability) {
    const std::vector<float> logits = logits_for({0.3, 0.05, 0.5, 0.15});
    auto run = [&](float p, size_t min_keep = 1) {
        Candidates c = Candidates::from_logits(logits);
        sampler_min_p(c, p, min_keep);
        return ids(c);
    };
    // threshold = min_p * 0.5
    EXPECT_EQ(run(0.2f), (std::vector<int32_t>{0, 2, 3})) << "0.05 < 0.1 goes; order kept";
    EXPECT_EQ(run(0.29f), (std::vector<int32_t>{0, 2, 3})) << "0.15 >= 0.145 stays";
    EXPECT_EQ(run(0.31f), (std::vector<int32_t>{0, 2})) << "0.15 < 0.155 goes";
    EXPECT_EQ(run(0.7f), (std::vector<int32_t>{2}));
    EXPECT_EQ(run(1.0f), (std::vector<int32_t>{2}));
    EXPECT_EQ(run(0.0f).size(), 4u) << "min_p 0 is a no-op";
    EXPECT_EQ(run(0.9f, 2), (std::vector<int32_t>{2, 0})) << "min_keep keeps the best two";
}

TEST(Sampler, TemperatureScalesLogitsAndZeroKeepsArgmax) {
    Candidates c = Candidates::from_logits(std::vector<float>{1.0f, -2.0f, 4.0f});
    sampler_temperature(c, 0.5f);
    EXPECT_FLOAT_EQ(c.data[0].logit, 2.0f);
    EXPECT_FLOAT_EQ(c.data[1].logit, -4.0f);
    EXPECT_FLOAT_EQ(c.data[2].logit, 8.0f);
    sampler_temperature(c, 0.0f);
    EXPECT_EQ(ids(c), (std::vector<int32_t>{2}));
}

// Frequencies of `draws` samples against softmax(logits / t): Pearson chi-square with 5 degrees of
// freedom must stay under 20.5 (the 0.001 critical value). The seed is fixed, so this is
// deterministic; a wrong temperature or a biased draw moves the statistic into the hundreds.
double chi_square_at(const std::vector<float>& logits, float t, int draws, std::vector<int>* counts_out) {
    std::mt19937 rng(1234);
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < draws; ++i) {
        Candidates c = Candidates::from_logits(logits);
        sampler_temperature(c, t);
        ++counts[static_cast<size_t>(sampler_dist(c, rng))];
    }
    const std::vector<double> p = softmax_ref(logits, t);
    double chi2 = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double expected = p[i] * draws;
        chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
    }
    if (counts_out) *counts_out = counts;
    return chi2;
}

TEST(Sampler, TemperatureShapesTheDrawnDistribution) {
    const std::vector<float> logits{1.0f, 0.2f, 2.0f, -0.5f, 1.5f, 0.0f};
    const int draws = 20000;
    std::vector<int> cold, warm, hot;
    EXPECT_LT(chi_square_at(logits, 0.7f, draws, &cold), 20.5);
    EXPECT_LT(chi_square_at(logits, 1.0f, draws, &warm), 20.5);
    EXPECT_LT(chi_square_at(logits, 2.5f, draws, &hot), 20.5);
    // The favourite (id 2) loses share as the temperature rises, the least likely (id 3) gains.
    EXPECT_GT(cold[2], warm[2]);
    EXPECT_GT(warm[2], hot[2]);
    EXPECT_LT(cold[3], warm[3]);
    EXPECT_LT(warm[3], hot[3]);
    // And the statistic does notice a wrong distribution: the t = 2.5 counts judged against t = 0.7.
    const std::vector<double> p_cold = softmax_ref(logits, 0.7);
    double chi2 = 0.0;
    for (size_t i = 0; i < logits.size(); ++i)
        chi2 += (hot[i] - p_cold[i] * draws) * (hot[i] - p_cold[i] * draws) / (p_cold[i] * draws);
    EXPECT_GT(chi2, 1000.0);
}

TEST(Sampler, PenaltiesChangeExactlyThePenalisedTokens) {
    const std::vector<float> logits{2.0f, -1.0f, 3.0f, 0.0f, -0.5f, 1.25f, 4.0f, -2.0f};
    const std::vector<int32_t> recent{2, 5, 5, 7, 5, 1};  // counts: 1:1, 2:1, 5:3, 7:1
    const float repeat = 1.5f, freq = 0.25f, presence = 0.5f;
    Candidates c = Candidates::from_logits(logits);
    sampler_penalties(c, recent, repeat, freq, presence);

    auto expected = [&](float l, int count) {
        const float scaled = l > 0.0f ? l / repeat : l * repeat;
        return scaled - count * freq - presence;
    };
    EXPECT_FLOAT_EQ(c.data[1].logit, expected(-1.0f, 1));
    EXPECT_FLOAT_EQ(c.data[2].logit, expected(3.0f, 1));
    EXPECT_FLOAT_EQ(c.data[5].logit, expected(1.25f, 3));
    EXPECT_FLOAT_EQ(c.data[7].logit, expected(-2.0f, 1));
    for (int32_t untouched : {0, 3, 4, 6})
        EXPECT_EQ(c.data[static_cast<size_t>(untouched)].logit, logits[static_cast<size_t>(untouched)])
            << "token " << untouched << " is not in the history";

    // The same on a shuffled (non-identity) candidate array.
    Candidates shuffled = Candidates::from_logits(logits);
    std::reverse(shuffled.data.begin(), shuffled.data.end());
    sampler_penalties(shuffled, recent, repeat, freq, presence);
    for (const TokenCandidate& t : shuffled.data) EXPECT_EQ(t.logit, c.data[static_cast<size_t>(t.id)].logit);

    Candidates off = Candidates::from_logits(logits);
    sampler_penalties(off, recent, 1.0f, 0.0f, 0.0f);
    for (size_t i = 0; i < logits.size(); ++i) EXPECT_EQ(off.data[i].logit, logits[i]);
}

TEST(Sampler, RepeatPenaltySeesOnlyTheLastNTokens) {
    // Token 0 leads by a little; once it is among the last 2 accepted tokens, greedy moves to 1.
    const std::vector<float> logits{2.0f, 1.8f, 0.1f};
    SamplerParams p = plain(0.0f);
    p.repeat_penalty = 1.3f;
    p.repeat_last_n = 2;
    Sampler s(p, 3);
    EXPECT_EQ(s.sample(logits), 0);
    s.accept(0);
    EXPECT_EQ(s.sample(logits), 1);
    s.accept(2);
    EXPECT_EQ(s.sample(logits), 1);
    s.accept(2);  // token 0 has left the window of 2
    EXPECT_EQ(s.history().size(), 2u);
    EXPECT_EQ(s.sample(logits), 0);

    SamplerParams off = p;
    off.repeat_last_n = 0;
    Sampler s_off(off, 3);
    s_off.accept(0);
    EXPECT_EQ(s_off.sample(logits), 0) << "repeat_last_n 0 disables penalties";
}

TEST(Sampler, ChainRunsStagesInLlamaCppOrder) {
    // The Sampler must equal penalties -> top_k -> top_p -> min_p -> temperature -> dist by hand.
    SamplerParams p;
    p.temperature = 0.9f;
    p.top_k = 50;
    p.top_p = 0.9f;
    p.min_p = 0.02f;
    p.repeat_penalty = 1.1f;
    p.repeat_last_n = 8;
    p.frequency_penalty = 0.1f;
    p.presence_penalty = 0.2f;
    p.seed = 99;
    Sampler s(p, 300);
    std::mt19937 rng(99);
    std::vector<int32_t> recent;
    for (int step = 0; step < 40; ++step) {
        const std::vector<float> logits = random_logits(300, 500u + static_cast<uint32_t>(step), 1.5f);
        Candidates c = Candidates::from_logits(logits);
        sampler_penalties(c, recent, p.repeat_penalty, p.frequency_penalty, p.presence_penalty);
        sampler_top_k(c, p.top_k);
        sampler_top_p(c, p.top_p);
        sampler_min_p(c, p.min_p);
        sampler_temperature(c, p.temperature);
        const int32_t expected = sampler_dist(c, rng);
        const int32_t got = s.sample(logits);
        ASSERT_EQ(got, expected) << "step " << step;
        s.accept(got);
        recent.push_back(got);
        if (recent.size() > 8) recent.erase(recent.begin());
    }
}

TEST(Sampler, TopKBoundsWhatTheChainCanDraw) {
    const std::vector<float> logits = random_logits(200, 5, 0.5f);  // flat: many tokens are likely
    SamplerParams p = plain(1.0f);
    p.top_k = 3;
    Sampler s(p, 200);
    Candidates ref = Candidates::from_logits(logits);
    sampler_top_k(ref, 3);
    const std::set<int32_t> allowed = id_set(ref);
    std::set<int32_t> seen;
    for (int i = 0; i < 500; ++i) seen.insert(s.sample(logits));
    EXPECT_EQ(seen, allowed);
}

std::vector<int32_t> run_chain(Sampler& s, int steps) {
    std::vector<int32_t> out;
    for (int i = 0; i < steps; ++i) {
        const std::vector<float> logits = random_logits(512, 900u + static_cast<uint32_t>(i), 1.0f);
        out.push_back(s.sample(logits));
        s.accept(out.back());
    }
    return out;
}

TEST(Sampler, SameSeedSameTokensDifferentSeedsDiffer) {
    SamplerParams p;  // the defaults: top_k 40, top_p 0.95, min_p 0.05, temperature 0.8
    p.seed = 2024;
    Sampler a(p, 512), b(p, 512);
    const std::vector<int32_t> first = run_chain(a, 100);
    EXPECT_EQ(first, run_chain(b, 100));
    a.reset();
    EXPECT_EQ(first, run_chain(a, 100)) << "reset restarts the RNG from the same seed";

    p.seed = 2025;
    Sampler c(p, 512);
    EXPECT_NE(first, run_chain(c, 100));

    p.seed = kSamplerRandomSeed;
    Sampler r(p, 512);
    EXPECT_LE(r.seed(), 0xFFFFFFFFull);
    SamplerParams replay = p;
    replay.seed = r.seed();
    Sampler r2(replay, 512);
    EXPECT_EQ(run_chain(r, 30), run_chain(r2, 30)) << "a random seed is reported and replays";
}

void expect_rejected(SamplerParams p, const std::string& field) {
    try {
        Sampler s(p, 10);
        ADD_FAILURE() << field << " was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
}

// logit_bias adds to the named logits only, runs before every other stage (so a bias can lift a token
// into greedy's pick or ban it with -inf), and ids past the vocabulary or NaN biases are refused.
TEST(Sampler, LogitBiasShiftsTheNamedTokensFirst) {
    Candidates c = Candidates::from_logits(std::vector<float>{0.5f, 2.0f, -1.0f, 1.0f});
    const std::vector<LogitBias> biases = {{2, 4.0f}, {3, -0.5f}, {2, 1.0f}, {9, 7.0f}};
    sampler_logit_bias(c, biases);
    EXPECT_EQ(c.data[0].logit, 0.5f);
    EXPECT_EQ(c.data[1].logit, 2.0f);
    EXPECT_EQ(c.data[2].logit, 4.0f);  // -1 + 4 + 1: listed twice, both count
    EXPECT_EQ(c.data[3].logit, 0.5f);
    // Found by id once the candidates are no longer in id order.
    sampler_softmax(c);
    ASSERT_EQ(c.data[0].id, 2);
    sampler_logit_bias(c, std::vector<LogitBias>{{1, 10.0f}});
    EXPECT_EQ(c.data[1].logit, 12.0f);
    EXPECT_EQ(c.data[1].id, 1);

    SamplerParams p = plain(0.0f);
    const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 1.0f};
    EXPECT_EQ(Sampler(p, 4).sample(logits), 1);
    p.logit_bias = {{3, 1.5f}};
    EXPECT_EQ(Sampler(p, 4).sample(logits), 3);
    p.logit_bias = {{1, -INFINITY}};
    EXPECT_EQ(Sampler(p, 4).sample(logits), 3);
    // A banned token is never drawn, whatever the seed.
    p = plain(1.0f);
    p.logit_bias = {{1, -INFINITY}, {3, -INFINITY}};
    for (uint64_t seed = 0; seed < 50; ++seed) {
        p.seed = seed;
        const int32_t t = Sampler(p, 4).sample(logits);
        EXPECT_TRUE(t == 0 || t == 2) << t;
    }

    p = {};
    p.logit_bias = {{4, 1.0f}};
    EXPECT_NO_THROW(Sampler(p, 5));
    try {
        Sampler(p, 4);
        ADD_FAILURE() << "token 4 of a 4-token vocabulary was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("logit_bias[0].token"), std::string::npos) << e.what();
    }
    p.logit_bias = {{1, 1.0f}, {-1, 1.0f}};
    expect_rejected(p, "logit_bias[1].token");
    p.logit_bias = {{1, std::nanf("")}};
    expect_rejected(p, "logit_bias[0].bias");
    p.logit_bias = {{1, INFINITY}};
    expect_rejected(p, "logit_bias[0].bias");
}

TEST(Sampler, InvalidParamsAreRejected) {
    SamplerParams p;
    p.top_p = -0.1f;
    expect_rejected(p, "top_p");
    p = {};
    p.top_p = 1.5f;
    expect_rejected(p, "top_p");
    p = {};
    p.min_p = -0.01f;
    expect_rejected(p, "min_p");
    p = {};
    p.min_p = 2.0f;
    expect_rejected(p, "min_p");
    p = {};
    p.top_k = -1;
    expect_rejected(p, "top_k");
    p = {};
    p.repeat_penalty = 0.0f;
    expect_rejected(p, "repeat_penalty");
    p = {};
    p.repeat_last_n = -2;
    expect_rejected(p, "repeat_last_n");
    p = {};
    p.temperature = std::nanf("");
    expect_rejected(p, "temperature");
    p = {};
    p.frequency_penalty = INFINITY;
    expect_rejected(p, "frequency_penalty");
    p = {};
    p.seed = 1ull << 40;
    expect_rejected(p, "seed");

    EXPECT_THROW(Sampler(SamplerParams{}, 0), std::invalid_argument);
    Sampler s(SamplerParams{}, 4);
    EXPECT_THROW(s.sample(std::vector<float>(5, 0.0f)), std::invalid_argument);
    EXPECT_THROW(s.sample(std::vector<float>{0.0f, std::nanf(""), 1.0f, 2.0f}), std::invalid_argument);
    EXPECT_THROW(s.accept(4), std::invalid_argument);
    EXPECT_THROW(s.accept(-1), std::invalid_argument);
}

}  // namespace
}  // namespace graphrun
