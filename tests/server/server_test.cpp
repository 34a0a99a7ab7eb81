// tests/server/server_test.cpp — `graphrun serve` in process: every endpoint and every error over real HTTP
// on loopback, answers held to the library's own generation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "engine/generate.h"
#include "runtime/text/grammar_match.h"
#include "runtime/text/json_schema.h"
#include "server/api_request.h"
#include "tests/common/server_test_util.h"

namespace graphrun {
namespace {

using nlohmann::json;
using testing::expect_error;
using testing::post_json;
using testing::sse_data;
using testing::TestServer;

// What the CLI generates greedily for `prompt` (BOS first as the tokenizer asks), as text.
std::string greedy_reference(const std::string& prompt, int64_t n, int64_t n_ctx = 256) {
    auto model = testing::kjv_model();
    const Tokenizer tok = Tokenizer::from_gguf(model->file());
    graph::Session session(model, {.n_ctx = n_ctx, .n_threads = 1});
    SamplerParams greedy;
    greedy.temperature = 0;
    Sampler sampler(greedy, tok.n_vocab());
    // Pieces as streamed (an SPM vocabulary's first piece keeps its space, as in llama-server).
    TokenTextStream text(tok);
    std::string out;
    graph::generate(session, sampler, tok.encode(prompt, tok.add_bos()), n, [&](int32_t id) {
        if (tok.is_end_of_generation(id)) return false;
        out += text.push(id);
        return true;
    });
    return out + text.flush();
}

TEST(Server, HealthModelsAndPlan) {
    TestServer server;
    auto c = server.client();
    auto health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    EXPECT_EQ(json::parse(health->body), json({{"status", "ok"}}));
    auto ready = c.Get("/health/ready");
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->status, 200);
    EXPECT_EQ(json::parse(ready->body), json({{"status", "ready"}}));
    auto models = c.Get("/v1/models");
    ASSERT_TRUE(models);
    const json m = json::parse(models->body);
    EXPECT_EQ(m["object"], "list");
    EXPECT_EQ(m["data"][0]["id"], "kjv-q8_0.gguf");
    EXPECT_EQ(m["data"][0]["meta"]["n_ctx"], 256);
    auto plan = c.Get("/plan");
    ASSERT_TRUE(plan);
    EXPECT_NE(plan->body.find("matmul"), std::string::npos) << plan->body.substr(0, 400);
    // The graph file by its name: the host's folders were in it ("plan of /home/.../models/llama.json").
    EXPECT_EQ(plan->body.rfind("plan of llama.json for 1 token(s)", 0), 0u) << plan->body.substr(0, 200);
    EXPECT_EQ(plan->body.find(GRAPHRUN_SOURCE_DIR), std::string::npos) << plan->body.substr(0, 200);
    auto page = c.Get("/");
    ASSERT_TRUE(page);
    EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
    EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
}

TEST(Server, GreedyCompletionEqualsTheLibrarysGeneration) {
    TestServer server;
    auto c = server.client();
    const json r = post_json(c, "/v1/completions",
                             {{"model", "anything"}, {"prompt", "And God said"}, {"max_tokens", 24}, {"temperature", 0}},
                             200);
    EXPECT_EQ(r["object"], "text_completion");
    EXPECT_EQ(r["model"], "kjv-q8_0.gguf");  // whatever name was asked for
    EXPECT_EQ(r["choices"][0]["text"], greedy_reference("And God said", 24));
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(r["usage"]["completion_tokens"], 24);
    const Tokenizer tok = Tokenizer::from_gguf(testing::kjv_model()->file());
    EXPECT_EQ(r["usage"]["prompt_tokens"], tok.encode("And God said", tok.add_bos()).size());
    EXPECT_EQ(r["usage"]["total_tokens"], r["usage"]["prompt_tokens"].get<int>() + 24);
    EXPECT_TRUE(r["id"].get<std::string>().rfind("cmpl-", 0) == 0);
}

TEST(Server, StreamedCompletionIsTheWholeAnswerInPieces) {
    TestServer server;
    auto c = server.client();
    const json body = {{"prompt", "In the beginning"}, {"max_tokens", 20}, {"temperature", 0}, {"stream", true},
                       {"stream_options", {{"include_usage", true}}}};
    std::string raw;
    auto r = testing::post_streaming(c, "/v1/completions", body.dump(), [&](const std::string& d) {
        raw += d;
        return true;
    });
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
    // Content chunks (finish_reason null), the finish chunk, the usage chunk, [DONE].
    const std::vector<std::string> data = sse_data(raw);
    ASSERT_GE(data.size(), 4u);
    EXPECT_EQ(data.back(), "[DONE]");
    std::string text;
    for (size_t i = 0; i + 3 < data.size(); ++i) {
        const json chunk = json::parse(data[i]);
        EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null()) << data[i];
        EXPECT_TRUE(chunk.contains("usage") && chunk["usage"].is_null()) << data[i];
        text += chunk["choices"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(text, greedy_reference("In the beginning", 20));
    const json finish = json::parse(data[data.size() - 3]);
    EXPECT_EQ(finish["choices"][0]["finish_reason"], "length");
    const json usage = json::parse(data[data.size() - 2]);
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["completion_tokens"], 20);
}

// response_format: the answer is JSON valid under the schema, or cut by max_tokens ("length") as a
// prefix the grammar still accepts; the same through /v1/completions and a GBNF `grammar`.
TEST(Server, ResponseFormatConstrainsTheAnswer) {
    TestServer server;
    auto c = server.client();
    const json schema = {{"type", "object"},
                         {"properties", {{"word", {{"type", "string"}, {"maxLength", 8}}}, {"n", {{"type", "integer"}}}}},
                         {"required", {"word", "n"}},
                         {"additionalProperties", false}};
    const Grammar grammar = grammar_parse(json_schema_to_gbnf(schema.dump()));
    for (const bool chat : {true, false})
        for (const int max_tokens : {4, 120})
            for (const int seed : {1, 2}) {
                json body = {{"max_tokens", max_tokens}, {"temperature", seed == 1 ? 0.0 : 1.0}, {"seed", seed},
                             {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"strict", true}, {"schema", schema}}}}}};
                if (chat) body["messages"] = {{{"role", "user"}, {"content", "A word and a number?"}}};
                else body["prompt"] = "A word and a number, as JSON:";
                const json r = post_json(c, chat ? "/v1/chat/completions" : "/v1/completions", body, 200);
                const json& choice = r["choices"][0];
                const std::string text = chat ? choice["message"]["content"] : choice["text"];
                const std::string reason = choice["finish_reason"];
                if (reason == "length") {
                    GrammarMatcher m(grammar);
                    EXPECT_TRUE(m.accept(text)) << text;
                    continue;
                }
                EXPECT_EQ(reason, "stop") << text;
                if (chat && text.find('\n') != std::string::npos) continue;
                EXPECT_TRUE(grammar_matches(grammar, text)) << text;
                const json value = json::parse(text);
                EXPECT_TRUE(value["word"].is_string() && value["n"].is_number_integer()) << text;
            }
    const json yes_no = post_json(c, "/v1/completions", {{"prompt", "Is it so?"}, {"grammar", "root ::= \"yea\" | \"nay\""},
                                                         {"max_tokens", 10}, {"temperature", 0}}, 200);
    const std::string answer = yes_no["choices"][0]["text"];
    EXPECT_TRUE(answer == "yea" || answer == "nay") << answer;
    EXPECT_EQ(yes_no["choices"][0]["finish_reason"], "stop");
    const json any = post_json(c, "/v1/completions", {{"prompt", "JSON:"}, {"response_format", {{"type", "json_object"}}},
                                                      {"max_tokens", 2}}, 200);
    EXPECT_EQ(any["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(std::string(any["choices"][0]["text"]).substr(0, 1), "{");
}

TEST(Server, ChatAnswersInTheTemplateAndStreamsTheSameText) {
    TestServer server;
    auto c = server.client();
    const json body = {{"messages", {{{"role", "system"}, {"content", "Answer as the scripture does."}},
                                     {{"role", "user"}, {"content", "Who made the heaven?"}}}},
                       {"max_tokens", 40},
                       {"temperature", 0}};
    const json whole = post_json(c, "/v1/chat/completions", body, 200);
    EXPECT_EQ(whole["object"], "chat.completion");
    EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
    const std::string answer = whole["choices"][0]["message"]["content"];
    // The KJV model has no chat template: the plain fallback still gives a reply that says something.
    EXPECT_NE(answer.find_first_not_of(" \n"), std::string::npos) << "'" << answer << "'";
    const std::string reason = whole["choices"][0]["finish_reason"];
    EXPECT_TRUE(reason == "stop" || reason == "length") << reason;
    EXPECT_EQ(answer.find('\n'), std::string::npos) << "a plain reply ends at its newline: " << answer;

    json streamed = body;
    streamed["stream"] = true;
    std::string raw;
    ASSERT_TRUE(testing::post_streaming(c, "/v1/chat/completions", streamed.dump(), [&](const std::string& d) {
        raw += d;
        return true;
    }));
    const std::vector<std::string> data = sse_data(raw);
    ASSERT_GE(data.size(), 3u);
    EXPECT_EQ(data.back(), "[DONE]");
    EXPECT_EQ(json::parse(data.front())["choices"][0]["delta"]["role"], "assistant");
    std::string text;
    for (size_t i = 0; i + 1 < data.size(); ++i) {
        const json chunk = json::parse(data[i]);
        EXPECT_EQ(chunk["object"], "chat.completion.chunk");
        const json& choice = chunk["choices"][0];
        if (i + 2 < data.size()) {
            EXPECT_TRUE(choice["finish_reason"].is_null());
        }
        if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    }
    EXPECT_EQ(json::parse(data[data.size() - 2])["choices"][0]["finish_reason"], reason);
    EXPECT_EQ(text, answer);
}

// A tool-call conversation replays (an agent loop's second turn): its prompt is the chat template's
// rendering of the same turns written out as text in its tool format (the KJV model's plain
// template: the generic one-line format), so answers and prompt sizes are equal.
TEST(Server, ToolCallConversationsReplayThroughTheTemplate) {
    TestServer server;
    auto c = server.client();
    const json replay = json::parse(R"({"max_tokens": 12, "temperature": 0, "messages": [
        {"role": "user", "content": "What saith the weather?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Sion\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "rain for forty days"}]})");
    const json as_text = {
        {"max_tokens", 12},
        {"temperature", 0},
        {"messages",
         {{{"role", "user"}, {"content", "What saith the weather?"}},
          {{"role", "assistant"},
           {"content", "<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\":\"Sion\"}}</tool_call>"}},
          {{"role", "user"}, {"content", "<tool_response>rain for forty days</tool_response>"}}}}};
    const json a = post_json(c, "/v1/chat/completions", replay, 200);
    const json b = post_json(c, "/v1/chat/completions", as_text, 200);
    EXPECT_EQ(a["usage"]["prompt_tokens"], b["usage"]["prompt_tokens"]);
    EXPECT_GT(a["usage"]["prompt_tokens"].get<int>(), 30);
    EXPECT_EQ(a["choices"][0]["message"]["content"], b["choices"][0]["message"]["content"]);
}

TEST(Server, StopStringsEndTheTextBeforeThem) {
    TestServer server;
    auto c = server.client();
    const std::string full = greedy_reference("And God said", 24);
    const size_t cut = full.find(' ', 6);  // the second word on
    ASSERT_NE(cut, std::string::npos) << full;
    const std::string stop = full.substr(cut, 4);
    const json r = post_json(c, "/v1/completions",
                             {{"prompt", "And God said"}, {"max_tokens", 24}, {"temperature", 0}, {"stop", {"zzzz", stop}}},
                             200);
    EXPECT_EQ(r["choices"][0]["text"], full.substr(0, full.find(stop))) << "stop '" << stop << "' in '" << full << "'";
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
    EXPECT_LT(r["usage"]["completion_tokens"].get<int>(), 24);
}

TEST(Server, LogprobsAreTheModelsLogSoftmax) {
    TestServer server;
    auto c = server.client();
    const json r = post_json(c, "/v1/chat/completions",
                             {{"messages", {{{"role", "user"}, {"content", "Say it"}}}},
                              {"max_tokens", 5}, {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 3}},
                             200);
    const json& content = r["choices"][0]["logprobs"]["content"];
    ASSERT_FALSE(content.empty());
    for (const json& t : content) {
        ASSERT_EQ(t["top_logprobs"].size(), 3u);
        // Greedy: the token sampled is the most likely one.
        EXPECT_EQ(t["logprob"], t["top_logprobs"][0]["logprob"]);
        double p = 0;
        for (const json& alt : t["top_logprobs"]) {
            EXPECT_LE(alt["logprob"].get<double>(), 0.0);
            p += std::exp(alt["logprob"].get<double>());
        }
        EXPECT_LE(p, 1.0 + 1e-5);
    }
    const json completion = post_json(c, "/v1/completions",
                                      {{"prompt", "And"}, {"max_tokens", 4}, {"temperature", 0}, {"logprobs", 2}}, 200);
    const json& lp = completion["choices"][0]["logprobs"];
    EXPECT_EQ(lp["tokens"].size(), 4u);
    EXPECT_EQ(lp["token_logprobs"].size(), 4u);
    EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
    EXPECT_EQ(lp["text_offset"][0], 0);
}

TEST(Server, TokenizeAndDetokenizeAsLlamaServer) {
    TestServer server;
    auto c = server.client();
    const Tokenizer tok = Tokenizer::from_gguf(testing::kjv_model()->file());
    const json t = post_json(c, "/tokenize", {{"content", "And God said"}}, 200);
    EXPECT_EQ(t["tokens"].get<std::vector<int32_t>>(), tok.encode("And God said", false, true));
    const json with_bos = post_json(c, "/tokenize", {{"content", "And"}, {"add_special", true}, {"with_pieces", true}}, 200);
    EXPECT_EQ(with_bos["tokens"][0]["id"], tok.bos());
    const json d = post_json(c, "/detokenize", {{"tokens", t["tokens"]}}, 200);
    EXPECT_EQ(d["content"], "And God said");
    const json bad = post_json(c, "/detokenize", {{"tokens", {1, 999999}}}, 400);
    EXPECT_NE(bad["error"]["message"].get<std::string>().find("tokens[1]"), std::string::npos);
    post_json(c, "/tokenize", {{"content", 5}}, 400);
}

TEST(Server, BadRequestsGetClearErrorsAndTheServerKeepsServing) {
    TestServer server(testing::BackendSpec{.n_ctx = 64}, {.max_body_bytes = 4096});
    auto c = server.client();
    auto post = [&](const std::string& path, const std::string& body) {
        return c.Post(path, body, "application/json");
    };
    expect_error(post("/v1/completions", "{\"prompt\": \"x\","), 400, "invalid_json", "byte");
    expect_error(post("/v1/completions", "[1, 2]"), 400, "invalid_json", "must be a JSON object");
    // Was a 500: nlohmann's out_of_range escaped the route (server_request_fuzz).
    expect_error(post("/v1/completions", R"({"prompt": "x", "temperature": 1e400})"), 400, "invalid_json", "out of range");
    expect_error(post("/v1/completions", R"({"max_tokens": 5})"), 400, "missing_field", "'prompt'", "prompt");
    expect_error(post("/v1/completions", R"({"prompt": "x", "max_tokens": "5"})"), 400, "invalid_type",
                 "'max_tokens' must be an integer, got string", "max_tokens");
    // Completions take max_tokens 0 (the prompt only, echo's loglikelihood); below it, and 0 on chat, are refused.
    expect_error(post("/v1/completions", R"({"prompt": "x", "max_tokens": -1})"), 400, "invalid_value", "'max_tokens'",
                 "max_tokens");
    expect_error(post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})"),
                 400, "invalid_value", "'max_tokens'", "max_tokens");
    expect_error(post("/v1/completions", R"({"prompt": "x", "max_tokens": 2.5})"), 400, "invalid_type", "'max_tokens'",
                 "max_tokens");
    expect_error(post("/v1/completions", R"({"prompt": "x", "temperature": 3})"), 400, "invalid_value", "'temperature'",
                 "temperature");
    expect_error(post("/v1/completions", R"({"prompt": "x", "stream": "yes"})"), 400, "invalid_type", "'stream'", "stream");
    expect_error(post("/v1/completions", R"({"prompt": "x", "stop": ["a","b","c","d","e"]})"), 400, "invalid_value",
                 "at most 4", "stop");
    expect_error(post("/v1/completions", R"({"prompt": "x", "seed": -7})"), 400, "invalid_value", "'seed'", "seed");
    expect_error(post("/v1/completions", R"({"prompt": [1, 99999]})"), 400, "invalid_value", "prompt[1]", "prompt[1]");
    expect_error(post("/v1/completions", R"({"prompt": "x", "logit_bias": {"99999": 1}})"), 400, "invalid_value",
                 "token 99999", "logit_bias");
    expect_error(post("/v1/chat/completions", R"({"messages": []})"), 400, "invalid_value", "'messages' is empty",
                 "messages");
    expect_error(post("/v1/chat/completions", R"({"messages": [{"role": "user"}]})"), 400, "missing_field",
                 "messages[0].content", "messages[0].content");
    expect_error(post("/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "x"}]})"), 400,
                 "invalid_value", "messages[0].role", "messages[0].role");
    std::string long_prompt;
    for (int i = 0; i < 400; ++i) long_prompt += "And God said ";
    expect_error(post("/v1/completions", json({{"prompt", long_prompt}}).dump()), 413, "body_too_large", "4096 bytes");
    expect_error(post("/v1/completions", json({{"prompt", long_prompt.substr(0, 1000)}}).dump()), 400,
                 "context_length_exceeded", "the context holds 64", "prompt");
    expect_error(post("/v1/nothing", "{}"), 404, "not_found", "POST /v1/nothing");
    expect_error(c.Get("/v2/models"), 404, "not_found", "GET /v2/models");
    // A route asked for with the wrong method: 405 with the method it takes (was a 404).
    auto get_post_route = c.Get("/v1/chat/completions");
    expect_error(get_post_route, 405, "method_not_allowed", "/v1/chat/completions takes POST, not GET");
    EXPECT_EQ(get_post_route->get_header_value("Allow"), "POST");
    auto post_get_route = post("/health", "{}");
    expect_error(post_get_route, 405, "method_not_allowed", "/health takes GET, not POST");
    EXPECT_EQ(post_get_route->get_header_value("Allow"), "GET");

    // No field is ignored silently: unknown ones, and known ones not honoured, are refused by name.
    expect_error(post("/v1/completions", R"({"prompt": "x", "best_of_unknown": "zz"})"), 400, "unknown_field",
                 "'best_of_unknown'", "best_of_unknown");
    expect_error(post("/v1/completions", R"({"prompt": "x", "best_of": 2})"), 400, "unsupported_value", "'best_of'",
                 "best_of");
    expect_error(post("/v1/completions", R"({"prompt": "x", "echo": "yes"})"), 400, "invalid_type", "'echo'", "echo");
    expect_error(post("/v1/completions", R"({"prompt": "x", "suffix": "amen"})"), 400, "unsupported_value", "'suffix'",
                 "suffix");
    const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
    expect_error(post("/v1/chat/completions", "{" + user +
                          R"(, "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "number", "minimum": 1}}}})"),
                 400, "invalid_value", "unsupported keyword 'minimum' at #/minimum", "response_format.json_schema.schema");
    expect_error(post("/v1/chat/completions",
                      "{" + user + R"(, "tools": [{"type": "function", "function": {"name": "f g"}}]})"),
                 400, "invalid_value", "letters, digits", "tools[0].function.name");
    expect_error(post("/v1/chat/completions", "{" + user + R"(, "tool_choice": "required"})"), 400, "invalid_value",
                 "'tools' is empty", "tool_choice");
    expect_error(post("/v1/chat/completions", "{" + user + R"(, "n": 17})"), 400, "invalid_value", "'n'", "n");

    // Fields without effect (of any value of their type) and null for anything are accepted, and
    // the server still answers.
    const json ok = post_json(c, "/v1/completions",
                              {{"prompt", "And"}, {"max_tokens", 3}, {"temperature", 0}, {"user", "u-1"},
                               {"metadata", {{"x", "1"}}}, {"suffix", nullptr}, {"top_p", nullptr}, {"echo", false}},
                              200);
    EXPECT_EQ(ok["usage"]["completion_tokens"], 3);
}

TEST(Server, ApiKeyIsRequiredEverywhereButHealth) {
    TestServer server({}, {.api_key = "sesame"});
    auto c = server.client();
    expect_error(c.Get("/v1/models"), 401, "invalid_api_key", "Authorization: Bearer");
    expect_error(c.Post("/v1/completions", R"({"prompt": "x"})", "application/json"), 401, "invalid_api_key", "");
    expect_error(c.Get("/metrics", {{"Authorization", "Bearer wrong"}}), 401, "invalid_api_key", "not this server's");
    auto health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto models = c.Get("/v1/models", {{"Authorization", "Bearer sesame"}});
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 200);
}

// A browser opening the page cannot send a Bearer header: GET / asks for HTTP Basic credentials
// (WWW-Authenticate), takes the key as the password with any user name, and so do the API routes
// the page then calls with the browser's cached credentials.
TEST(Server, ThePageTakesTheKeyAsBasicAuthentication) {
    TestServer server({}, {.api_key = "sesame"});
    auto c = server.client();
    auto refused = c.Get("/");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401);
    EXPECT_EQ(refused->get_header_value("WWW-Authenticate"), "Basic realm=\"graphrun\"");
    EXPECT_EQ(c.Get("/", {httplib::make_basic_authentication_header("anyone", "wrong")})->status, 401);
    EXPECT_EQ(c.Get("/", {{"Authorization", "Basic !!not-base64"}})->status, 401);
    EXPECT_EQ(c.Get("/", {{"Authorization", "Bearer sesame"}})->status, 200);
    auto page = c.Get("/", {httplib::make_basic_authentication_header("anyone", "sesame")});
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_NE(page->body.find("<form id=\"chat\">"), std::string::npos);
    EXPECT_EQ(c.Get("/v1/models", {httplib::make_basic_authentication_header("", "sesame")})->status, 200);
    expect_error(c.Get("/v1/models", {httplib::make_basic_authentication_header("sesame", "")}), 401,
                 "invalid_api_key", "not this server's");
}

TEST(Server, MetricsInPrometheusText) {
    TestServer server;
    auto c = server.client();
    post_json(c, "/v1/completions", {{"prompt", "And"}, {"max_tokens", 4}, {"temperature", 0}}, 200);
    c.Post("/v1/completions", "{", "application/json");
    const std::vector<std::string> lines = {
        "graphrun_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1",
        "graphrun_requests_total{endpoint=\"/v1/completions\",status=\"400\"} 1",
        "graphrun_generated_tokens_total 4", "graphrun_queue_depth 0", "graphrun_active_sequences 0",
        "graphrun_time_to_first_token_seconds_count 1", "graphrun_time_per_output_token_seconds_count 3",
        "# TYPE graphrun_time_to_first_token_seconds histogram", "graphrun_kv_blocks_in_use ",
        "graphrun_batch_occupancy "};
    auto missing = [&](const std::string& t) {
        for (const std::string& line : lines)
            if (t.find(line) == std::string::npos) return line;
        return std::string();
    };
    // A request is counted once its answer is written, which can be just after the client read it.
    std::string text, absent;
    for (int i = 0; i < 100; ++i) {
        auto m = c.Get("/metrics");
        ASSERT_TRUE(m);
        EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
        text = m->body;
        if ((absent = missing(text)).empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(absent, "") << "not in\n" << text;
}

// A prompt sent twice takes its full 16-position blocks from the prefix cache the second time, and
// /metrics counts them (what a balancer's prefix-aware routing is measured by: docs/deploy.md).
TEST(Server, MetricsCountThePromptPositionsTakenFromThePrefixCache) {
    TestServer server;
    auto c = server.client();
    const std::string body = json({{"prompt", "And God said, Let there be light: and there was light. And God saw the light"},
                                   {"max_tokens", 1},
                                   {"temperature", 0}})
                                 .dump();
    auto cached = [&] {
        const std::string text = c.Get("/metrics")->body;
        const std::string key = "\ngraphrun_prompt_tokens_cached_total ";
        const size_t at = text.find(key);
        EXPECT_NE(at, std::string::npos) << text;
        return at == std::string::npos ? -1 : std::stoll(text.substr(at + key.size()));
    };
    ASSERT_EQ(c.Post("/v1/completions", body, "application/json")->status, 200);
    EXPECT_EQ(cached(), 0);
    ASSERT_EQ(c.Post("/v1/completions", body, "application/json")->status, 200);
    EXPECT_EQ(cached(), 16) << "the prompt's one full block";
}

// A stream read to its end is counted once, as a 200, with every token it generated.
TEST(Server, AStreamReadToItsEndIsCountedOnceAs200) {
    TestServer server;
    auto c = server.client();
    ASSERT_TRUE(testing::post_streaming(
        c, "/v1/completions",
        json({{"prompt", "And"}, {"max_tokens", 5}, {"temperature", 0}, {"stream", true}}).dump(),
        [](const std::string&) { return true; }));
    const std::string done = "graphrun_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1\n";
    std::string text;
    for (int i = 0; i < 500 && text.find(done) == std::string::npos; ++i) {
        if (i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        text = c.Get("/metrics")->body;
    }
    EXPECT_NE(text.find(done), std::string::npos) << text;
    EXPECT_NE(text.find("\ngraphrun_generated_tokens_total 5\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("status=\"cancelled\""), std::string::npos) << text;
}

// The KJV context is 256 and a request asks for most of it: long enough to hang up in the middle.
constexpr int64_t kLongAnswer = 200;

// A streamed completion read on a thread of its own, as another client would.
class BackgroundStream {
  public:
    BackgroundStream(TestServer& server, int64_t max_tokens)
        : thread_([this, &server, max_tokens] {
              auto c = server.client();
              const json body = {{"prompt", "And"}, {"max_tokens", max_tokens}, {"stream", true}, {"temperature", 0}};
              testing::post_streaming(c, "/v1/completions", body.dump(), [&](const std::string& d) {
                  std::lock_guard lock(mutex_);
                  raw_ += d;
                  return true;
              });
          }) {}
    ~BackgroundStream() { join(); }
    void wait_started() {
        while (raw().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::string raw() {
        std::lock_guard lock(mutex_);
        return raw_;
    }
    void join() {
        if (thread_.joinable()) thread_.join();
    }

  private:
    std::mutex mutex_;
    std::string raw_;
    std::thread thread_;  // last: it starts once the members above are made
};

TEST(Server, ADisconnectedStreamFreesItsSequence) {
    TestServer server;
    auto c = server.client();
    int chunks = 0;
    const json body = {{"prompt", "And"}, {"max_tokens", kLongAnswer}, {"stream", true}, {"temperature", 0}};
    testing::post_streaming(c, "/v1/completions", body.dump(), [&](const std::string&) { return ++chunks < 3; });
    // The job is cancelled before its next forward pass: the backend is idle long before 200 tokens.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (server.backend().metrics().active > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(server.backend().metrics().active, 0);
    // Counted as cancelled, not 200, once the server has let go of the stream; its tokens count
    // (they were missing from graphrun_generated_tokens_total).
    const std::string cancelled = "graphrun_requests_total{endpoint=\"/v1/completions\",status=\"cancelled\"} 1\n";
    std::string text;
    for (int i = 0; i < 500 && text.find(cancelled) == std::string::npos; ++i) {
        if (i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        auto m = server.client().Get("/metrics");
        ASSERT_TRUE(m);
        text = m->body;
    }
    EXPECT_NE(text.find(cancelled), std::string::npos) << text;
    EXPECT_EQ(text.find("graphrun_requests_total{endpoint=\"/v1/completions\",status=\"200\"}"), std::string::npos)
        << text;
    const size_t at = text.find("\ngraphrun_generated_tokens_total ");
    ASSERT_NE(at, std::string::npos);
    const int64_t generated = std::stoll(text.substr(at + 33));
    EXPECT_GE(generated, 2) << "the chunks the client read held tokens: " << text.substr(at, 50);
    EXPECT_LT(generated, kLongAnswer) << text.substr(at, 50);
}

TEST(Server, AFullQueueIsA503WithRetryAfter) {
    TestServer server(testing::BackendSpec{.parallel = 1, .queue = 0});
    BackgroundStream holder(server, kLongAnswer);
    holder.wait_started();
    auto c = server.client();
    auto busy = c.Post("/v1/completions", R"({"prompt": "And", "max_tokens": 2})", "application/json");
    expect_error(busy, 503, "server_busy", "queue is full");
    // Said once: it was "the queue is full (the queue is full (0 requests waiting, 1 running))".
    const std::string message = json::parse(busy->body)["error"]["message"];
    EXPECT_EQ(message.find("queue is full"), message.rfind("queue is full")) << message;
    EXPECT_EQ(message.find("(("), std::string::npos) << message;
    EXPECT_EQ(message.find("))"), std::string::npos) << message;
    EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
    auto health = c.Get("/health");  // answers while the sequence is busy
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    holder.join();
    // Free again once the backend has let go of the finished job.
    int status = 0;
    for (int i = 0; i < 200 && status != 200; ++i) {
        auto again = c.Post("/v1/completions", R"({"prompt": "And", "max_tokens": 2})", "application/json");
        ASSERT_TRUE(again);
        status = again->status;
        if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(status, 200);
}

TEST(Server, DrainFinishesRequestsInFlightThenStops) {
    TestServer server;
    BackgroundStream stream(server, 60);
    stream.wait_started();
    auto c = server.client();
    std::thread drain([&] { server.http().drain(std::chrono::seconds(30)); });
    while (c.Get("/health") && stream.raw().find("[DONE]") == std::string::npos) {
        auto refused = c.Post("/v1/completions", R"({"prompt": "And"})", "application/json");
        if (refused && refused->status == 503) {  // a completion that arrives while draining
            EXPECT_NE(refused->body.find("shutting_down"), std::string::npos) << refused->body;
            auto ready = c.Get("/health/ready");  // a balancer's probe sends new requests elsewhere
            ASSERT_TRUE(ready);
            EXPECT_EQ(ready->status, 503);
            EXPECT_EQ(json::parse(ready->body), json({{"status", "draining"}}));
            EXPECT_EQ(c.Get("/health")->status, 200) << "the process is still up";
            break;
        }
    }
    drain.join();
    server.join();  // listen() returned
    stream.join();
    EXPECT_NE(stream.raw().find("data: [DONE]"), std::string::npos) << "the request in flight was finished";
    EXPECT_NE(stream.raw().find("\"finish_reason\":\"length\""), std::string::npos);
    EXPECT_FALSE(server.client().Get("/health")) << "no new connections after a drain";
}

TEST(Server, DrainCutsOffWhatOutlastsItsDeadline) {
    TestServer server;
    BackgroundStream stream(server, kLongAnswer);
    stream.wait_started();
    server.http().drain(std::chrono::milliseconds(0));
    server.join();
    stream.join();
    EXPECT_NE(stream.raw().find("data: [DONE]"), std::string::npos) << "the stream still ends properly";
}

}  // namespace
}  // namespace graphrun
