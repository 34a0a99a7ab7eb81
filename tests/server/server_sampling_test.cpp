// tests/server/server_sampling_test.cpp — `graphrun serve` in process: what the sampling fields do to an
// answer (logit_bias) and how log-probabilities line up with the text a stop string cut.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/text/tokenizer.h"
#include "tests/common/server_test_util.h"

namespace graphrun {
namespace {

using nlohmann::json;
using testing::post_json;
using testing::sse_data;
using testing::TestServer;

// logit_bias is a sampler stage: a token banned with -100 is never the greedy pick, a token lifted
// by +100 is.
TEST(Server, LogitBiasSteersGreedySampling) {
    TestServer server;
    auto c = server.client();
    const json plain = post_json(
        c, "/v1/completions", {{"prompt", "And God said"}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 0}}, 200);
    const Tokenizer tok = Tokenizer::from_gguf(testing::kjv_model()->file());
    const std::string first = plain["choices"][0]["logprobs"]["tokens"][0];
    // The id of that piece, and of a word piece that is not it, found in the vocabulary.
    int32_t first_id = -1, lifted_id = -1;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        const std::string piece = tok.token_to_piece(id);
        if (piece == first) first_id = id;
        const bool word = piece.size() >= 4 && piece[0] == ' ' &&
                          std::all_of(piece.begin() + 1, piece.end(), [](char ch) { return std::isalpha(uint8_t(ch)); });
        if (lifted_id < 0 && id > 300 && word && piece != first) lifted_id = id;
    }
    ASSERT_GE(first_id, 0) << first;
    ASSERT_GE(lifted_id, 0);
    const json banned = post_json(c, "/v1/completions",
                                  {{"prompt", "And God said"}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 0},
                                   {"logit_bias", {{std::to_string(first_id), -100}}}},
                                  200);
    EXPECT_NE(banned["choices"][0]["logprobs"]["tokens"][0], first);
    const json lifted = post_json(c, "/v1/completions",
                                  {{"prompt", "And God said"}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 0},
                                   {"logit_bias", {{std::to_string(lifted_id), 100}}}},
                                  200);
    EXPECT_EQ(lifted["choices"][0]["logprobs"]["tokens"][0], tok.token_to_piece(lifted_id));
}

// The logprobs are those of the tokens the text is made of: the token that carried a stop string the
// text leaves out is not among them (text " unto", tokens [" unto", " him"] was the bug), whole and
// streamed.
TEST(Server, LogprobsTokensAgreeWithTheTextAStopStringCut) {
    TestServer server;
    auto c = server.client();
    const json body = {{"prompt", "And God said"}, {"max_tokens", 24}, {"temperature", 0}, {"logprobs", 0}};
    const json full = post_json(c, "/v1/completions", body, 200);
    const std::string text = full["choices"][0]["text"];
    const std::vector<std::string> tokens = full["choices"][0]["logprobs"]["tokens"];
    ASSERT_EQ(tokens.size(), 24u);
    std::string joined;
    for (const std::string& t : tokens) joined += t;
    ASSERT_EQ(joined, text) << "plain word pieces here, so the tokens spell the text";
    // A stop string that is a whole later token, first found where that token begins.
    size_t k = 2, begins = 0;
    for (; k < tokens.size(); ++k) {
        begins = 0;
        for (size_t i = 0; i < k; ++i) begins += tokens[i].size();
        if (tokens[k].size() >= 3 && text.find(tokens[k]) == begins) break;
    }
    ASSERT_LT(k, tokens.size()) << text;
    const std::vector<std::string> expected(tokens.begin(), tokens.begin() + long(k));
    json stopped = body;
    stopped["stop"] = tokens[k];
    const json whole = post_json(c, "/v1/completions", stopped, 200);
    EXPECT_EQ(whole["choices"][0]["text"], text.substr(0, begins));
    EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(whole["choices"][0]["logprobs"]["tokens"].get<std::vector<std::string>>(), expected)
        << "stop '" << tokens[k] << "' in '" << text << "'";
    EXPECT_EQ(whole["choices"][0]["logprobs"]["token_logprobs"].size(), k);

    stopped["stream"] = true;
    std::string raw;
    ASSERT_TRUE(testing::post_streaming(c, "/v1/completions", stopped.dump(), [&](const std::string& d) {
        raw += d;
        return true;
    }));
    std::vector<std::string> streamed_tokens;
    std::string streamed_text;
    for (const std::string& data : sse_data(raw)) {
        if (data == "[DONE]") continue;
        const json chunk = json::parse(data);
        streamed_text += chunk["choices"][0]["text"].get<std::string>();
        const json& lp = chunk["choices"][0]["logprobs"];
        if (!lp.is_null())
            for (const json& t : lp["tokens"]) streamed_tokens.push_back(t);
    }
    EXPECT_EQ(streamed_text, text.substr(0, begins));
    EXPECT_EQ(streamed_tokens, expected);
}

}  // namespace
}  // namespace graphrun
