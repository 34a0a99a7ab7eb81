// tests/server/server_spec_test.cpp — speculative decoding in `graphrun serve`: a request that speculates
// (the server's --spec, or its own "speculative.*" fields) answers the text and log-probabilities it
// answers without, greedy and seeded; /metrics counts the guesses; bad fields are a 400 naming them.
#include <gtest/gtest.h>

#include "tests/common/server_test_util.h"
#include "tests/common/spec_texts.h"

namespace graphrun {
namespace {

using nlohmann::json;
using testing::expect_error;
using testing::kRepeated;
using testing::post_json;
using testing::TestServer;

json completion(int64_t seed) {
    json body = {{"prompt", kRepeated}, {"max_tokens", 40}, {"logprobs", 1}};
    if (seed < 0)
        body["temperature"] = 0;
    else
        body.update({{"temperature", 0.8}, {"seed", seed}});
    return body;
}

// The text and the log-probabilities (exact: they are printed from the same float bits).
std::string answer_of(httplib::Client& c, const json& body) {
    const json r = post_json(c, "/v1/completions", body, 200);
    return r["choices"][0]["text"].dump() + r["choices"][0]["logprobs"].dump();
}

int64_t metric(httplib::Client& c, const std::string& name) {
    const std::string text = c.Get("/metrics")->body;
    const size_t at = text.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name << " not in\n" << text;
    return at == std::string::npos ? -1 : std::stoll(text.substr(at + name.size() + 2));
}

TEST(ServerSpeculative, RequestFieldsGiveThePlainAnswerAndAreCounted) {
    TestServer server({.draft_model = testing::kjv_model()});
    auto c = server.client();
    for (int64_t seed : {-1, 7}) {
        SCOPED_TRACE(seed);
        const int64_t proposed_before = metric(c, "graphrun_draft_tokens_proposed_total");
        const std::string plain = answer_of(c, completion(seed));
        EXPECT_EQ(metric(c, "graphrun_draft_tokens_proposed_total"), proposed_before) << "plain requests guess nothing";
        json lookup = completion(seed);
        lookup.update({{"speculative.type", "lookup"}, {"speculative.n_max", 6}, {"speculative.ngram", 2}});
        EXPECT_EQ(answer_of(c, lookup), plain);
        json draft = completion(seed);
        draft.update({{"speculative.type", "draft"}, {"speculative.n_max", 4}, {"speculative.n_min", 2}});
        EXPECT_EQ(answer_of(c, draft), plain);
        EXPECT_GT(metric(c, "graphrun_draft_tokens_proposed_total"), proposed_before);
    }
    EXPECT_GT(metric(c, "graphrun_draft_tokens_accepted_total"), 0);
    const std::string text = c.Get("/metrics")->body;
    EXPECT_NE(text.find("# TYPE graphrun_draft_acceptance_rate gauge"), std::string::npos) << text;
    EXPECT_NE(text.find("# TYPE graphrun_tokens_per_pass gauge"), std::string::npos) << text;
}

TEST(ServerSpeculative, TheServersSpecIsEveryRequestsUnlessItSaysOff) {
    TestServer plain_server;
    auto p = plain_server.client();
    TestServer server({.speculation = {.mode = graph::SpecMode::Lookup}});
    auto c = server.client();
    for (int64_t seed : {-1, 3}) EXPECT_EQ(answer_of(c, completion(seed)), answer_of(p, completion(seed)));
    const int64_t proposed = metric(c, "graphrun_draft_tokens_proposed_total");
    EXPECT_GT(proposed, 0);
    EXPECT_GT(metric(c, "graphrun_draft_tokens_accepted_total"), 0);
    json off = completion(-1);
    off["speculative.type"] = "off";
    EXPECT_EQ(answer_of(c, off), answer_of(p, completion(-1)));
    EXPECT_EQ(metric(c, "graphrun_draft_tokens_proposed_total"), proposed);
    // Chat too: the same reply with and without.
    const json chat = {{"messages", {{{"role", "user"}, {"content", "Who made the light?"}}}},
                       {"max_tokens", 24}, {"temperature", 0}};
    EXPECT_EQ(post_json(c, "/v1/chat/completions", chat, 200)["choices"][0]["message"],
              post_json(p, "/v1/chat/completions", chat, 200)["choices"][0]["message"]);
}

TEST(ServerSpeculative, BadFieldsAreRefusedNamingThem) {
    TestServer server;  // no --spec, no draft model
    auto c = server.client();
    auto send = [&](json fields) {
        json body = {{"prompt", "And"}, {"max_tokens", 2}};
        body.update(fields);
        return c.Post("/v1/completions", body.dump(), "application/json");
    };
    expect_error(send({{"speculative.type", "ngram"}}), 400, "invalid_value", "\"off\", \"lookup\" or \"draft\"",
                 "speculative.type");
    expect_error(send({{"speculative.type", 1}}), 400, "invalid_type", "speculative.type", "speculative.type");
    expect_error(send({{"speculative.type", "lookup"}, {"speculative.n_max", 0}}), 400, "invalid_value",
                 "must be in [1, 64]", "speculative.n_max");
    expect_error(send({{"speculative.type", "lookup"}, {"speculative.ngram", 17}}), 400, "invalid_value",
                 "must be in [1, 16]", "speculative.ngram");
    expect_error(send({{"speculative.n_max", 4}}), 400, "invalid_value", "which is off for this request",
                 "speculative.n_max");
    expect_error(send({{"speculative.type", "draft"}}), 400, "invalid_value", "has no draft model",
                 "speculative.type");
    expect_error(send({{"speculative.type", "lookup"}, {"speculative.n_min", 9}}), 400, "invalid_value",
                 "n_min 9 is more than its n_max 8", "speculative.n_min");
    expect_error(send({{"speculative.p_min", 0.5}}), 400, "unknown_field", "speculative.p_min", "speculative.p_min");
    post_json(c, "/v1/completions", {{"prompt", "And"}, {"max_tokens", 2}, {"speculative.type", "lookup"}}, 200);
}

}  // namespace
}  // namespace graphrun
