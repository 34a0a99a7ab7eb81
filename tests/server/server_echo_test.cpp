// tests/server/server_echo_test.cpp — `graphrun serve` in process: /v1/completions' `echo` (the prompt's
// tokens and log-probabilities, lm-eval's loglikelihood request) held to `graphrun perplexity`, and
// `n` choices held to the same requests one by one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "runtime/text/tokenizer.h"
#include "tests/common/server_test_util.h"
#include "tools/lib/perplexity.h"

namespace graphrun {
namespace {

using nlohmann::json;
using testing::post_json;
using testing::stream_data;
using testing::TestServer;

const char* const kText =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
    "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.";

Tokenizer kjv_tokenizer() { return Tokenizer::from_gguf(testing::kjv_model()->file()); }

// The loglikelihood request: the prompt's log-probabilities agree with the perplexity tool's NLL on
// the same chunks (each chunk alone, its first token BOS, the second half scored, as perplexity.h).
TEST(ServerEcho, PromptLogprobsAgreeWithThePerplexityTool) {
    const Tokenizer tok = kjv_tokenizer();
    const std::vector<int32_t> tokens = tok.encode(kText, tok.add_bos());
    const int64_t n_ctx = 16;
    ASSERT_GE(int64_t(tokens.size()), 2 * n_ctx);
    const graph::PerplexityRun ppl =
        graph::perplexity(testing::kjv_model(), tokens, {.n_ctx = n_ctx, .n_threads = 1});
    const double tool_nll = std::log(ppl.ppl) * double(ppl.count);

    TestServer server;
    auto c = server.client();
    double nll = 0;
    int64_t count = 0;
    for (int64_t chunk = 0; chunk < ppl.n_chunks; ++chunk) {
        std::vector<int32_t> ids(tokens.begin() + chunk * n_ctx, tokens.begin() + (chunk + 1) * n_ctx);
        ids[0] = tok.bos();
        const json r = post_json(c, "/v1/completions",
                                 {{"prompt", ids}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 0}}, 200);
        const json& lp = r["choices"][0]["logprobs"];
        ASSERT_EQ(lp["tokens"].size(), size_t(n_ctx));
        EXPECT_TRUE(lp["token_logprobs"][0].is_null());
        EXPECT_TRUE(lp["top_logprobs"][0].is_null());
        EXPECT_EQ(lp["top_logprobs"][1].size(), 1u);
        EXPECT_EQ(r["usage"]["completion_tokens"], 0);
        EXPECT_EQ(r["usage"]["prompt_tokens"], n_ctx);
        EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
        for (int64_t j = n_ctx / 2 + 1; j < n_ctx; ++j, ++count) nll -= lp["token_logprobs"][size_t(j)].get<double>();
    }
    EXPECT_EQ(count, ppl.count);
    EXPECT_NEAR(nll, tool_nll, 1e-4 * std::abs(tool_nll)) << "server " << nll << ", perplexity tool " << tool_nll;
}

// A string prompt echoed: the text is the prompt and then the completion, the tokens are the
// prompt's (BOS first, null) and the generated ones, and each text_offset points at its token's text.
TEST(ServerEcho, EchoedTextAndOffsetsLineUpWithTheTokens) {
    const Tokenizer tok = kjv_tokenizer();
    const std::string prompt = "And God said";
    const std::vector<int32_t> ids = tok.encode(prompt, tok.add_bos());
    TestServer server;
    auto c = server.client();
    const json plain =
        post_json(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 2}}, 200);
    const json body = {{"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 2}, {"echo", true}};
    const json echoed = post_json(c, "/v1/completions", body, 200);
    const json& choice = echoed["choices"][0];
    const std::string text = choice["text"];
    EXPECT_EQ(text, prompt + plain["choices"][0]["text"].get<std::string>());
    const json& lp = choice["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), ids.size() + 6);
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    for (size_t i = 1; i < ids.size(); ++i) {
        EXPECT_EQ(lp["tokens"][i], tok.token_to_piece(ids[i]));
        EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
        EXPECT_EQ(lp["top_logprobs"][i].size(), 2u);
    }
    for (size_t i = 0; i < 6; ++i) {  // the generated tokens are the plain answer's
        EXPECT_EQ(lp["tokens"][ids.size() + i], plain["choices"][0]["logprobs"]["tokens"][i]);
        EXPECT_EQ(lp["token_logprobs"][ids.size() + i], plain["choices"][0]["logprobs"]["token_logprobs"][i]);
    }
    // Each token's text begins at its offset (an SPM first piece's space is not in the text).
    for (size_t i = 0; i < lp["tokens"].size(); ++i) {
        const size_t at = lp["text_offset"][i];
        std::string piece = lp["tokens"][i];
        if (at == 0 && !piece.empty() && piece[0] == ' ' && text.rfind(piece, 0) != 0) piece.erase(0, 1);
        EXPECT_EQ(text.substr(at, piece.size()), piece) << "token " << i;
    }

    // Streamed: the prompt's chunk first, then the same text and log-probabilities.
    std::string stream_text;
    json tokens = json::array(), offsets = json::array();
    for (const std::string& d : stream_data(c, "/v1/completions", body)) {
        if (d == "[DONE]") break;
        const json ch = json::parse(d);
        stream_text += ch["choices"][0]["text"].get<std::string>();
        const json& l = ch["choices"][0]["logprobs"];
        if (l.is_null()) continue;
        for (const json& t : l["tokens"]) tokens.push_back(t);
        for (const json& o : l["text_offset"]) offsets.push_back(o);
    }
    EXPECT_EQ(stream_text, text);
    EXPECT_EQ(tokens, lp["tokens"]);
    EXPECT_EQ(offsets, lp["text_offset"]);

    // Echo without logprobs is the text alone; max_tokens 0 without echo is an empty answer.
    const json text_only = post_json(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 0}, {"echo", true}}, 200);
    EXPECT_EQ(text_only["choices"][0]["text"], prompt);
    EXPECT_TRUE(text_only["choices"][0]["logprobs"].is_null());
    const json nothing = post_json(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 0}}, 200);
    EXPECT_EQ(nothing["choices"][0]["text"], "");
    EXPECT_EQ(nothing["usage"]["completion_tokens"], 0);
}

// n choices: choice i is what the same request alone with seed + i gives; greedy choices are equal;
// usage counts every choice's tokens; streamed chunks carry their choice's index.
TEST(ServerChoices, EachChoiceIsTheRequestAloneWithItsSeed) {
    TestServer server;
    auto c = server.client();
    for (const bool chat : {false, true}) {
        const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
        json body = {{"max_tokens", 12}, {"temperature", 0.9}, {"seed", 41}};
        if (chat)
            body["messages"] = {{{"role", "user"}, {"content", "Who made light?"}}};
        else
            body["prompt"] = "And God said";
        auto text_of = [&](const json& choice) {
            return chat ? choice["message"]["content"].get<std::string>() : choice["text"].get<std::string>();
        };
        json many = body;
        many["n"] = 3;
        const json r = post_json(c, path, many, 200);
        ASSERT_EQ(r["choices"].size(), 3u);
        int64_t completion = 0;
        std::vector<std::string> alone;
        for (int i = 0; i < 3; ++i) {
            json one = body;
            one["seed"] = 41 + i;
            const json a = post_json(c, path, one, 200);
            alone.push_back(text_of(a["choices"][0]));
            EXPECT_EQ(r["choices"][i]["index"], i);
            EXPECT_EQ(text_of(r["choices"][i]), alone.back()) << path << " choice " << i;
            EXPECT_EQ(r["choices"][i]["finish_reason"], a["choices"][0]["finish_reason"]);
            completion += a["usage"]["completion_tokens"].get<int64_t>();
        }
        EXPECT_EQ(r["usage"]["completion_tokens"], completion);
        EXPECT_EQ(r["usage"]["prompt_tokens"], post_json(c, path, body, 200)["usage"]["prompt_tokens"]);

        json streamed = many;
        streamed["stream_options"] = {{"include_usage", true}};
        std::map<int, std::string> texts;
        std::map<int, int> finishes;
        json usage;
        for (const std::string& d : stream_data(c, path, streamed)) {
            if (d == "[DONE]") break;
            const json ch = json::parse(d);
            if (ch["choices"].empty()) {
                usage = ch["usage"];
                continue;
            }
            const json& choice = ch["choices"][0];
            const int index = choice["index"];
            texts[index] += chat ? choice["delta"].value("content", "") : choice["text"].get<std::string>();
            if (!choice["finish_reason"].is_null()) ++finishes[index];
        }
        ASSERT_EQ(texts.size(), 3u);
        for (int i = 0; i < 3; ++i) {
            EXPECT_EQ(texts[i], alone[size_t(i)]) << path << " streamed choice " << i;
            EXPECT_EQ(finishes[i], 1) << "one finish chunk per choice";
        }
        EXPECT_EQ(usage["completion_tokens"], completion);
    }
    json greedy = {{"prompt", "In the beginning"}, {"max_tokens", 10}, {"temperature", 0}, {"n", 2}};
    const json g = post_json(c, "/v1/completions", greedy, 200);
    EXPECT_EQ(g["choices"][0]["text"], g["choices"][1]["text"]);
    EXPECT_EQ(g["usage"]["completion_tokens"], 20);
}

}  // namespace
}  // namespace graphrun
