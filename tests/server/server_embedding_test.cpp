// tests/server/server_embedding_test.cpp — POST /v1/embeddings over real HTTP on the shipped KJV model:
// OpenAI's answer shape, the library's embedding bit for bit, list and token-id inputs, base64 equal
// to the floats, every refused field naming itself in `param`; the request parser in process.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "engine/embedding.h"
#include "server/api_error.h"
#include "server/embedding_request.h"
#include "tests/common/graph_test_util.h"
#include "tests/common/server_test_util.h"

namespace graphrun {
namespace {

using nlohmann::json;
using testing::expect_error;
using testing::post_json;
using testing::TestServer;

constexpr int64_t kKjvEmbd = 192;

std::vector<int32_t> prompt_tokens(const std::string& text) {
    const Tokenizer tok = Tokenizer::from_gguf(testing::kjv_model()->file());
    return tok.encode(text, tok.add_bos());
}

// What the library embeds `text` as (BOS first, as the tokenizer asks; the model's pooling: mean).
std::vector<float> library_embedding(const std::string& text) {
    static graph::Embedder embedder(testing::kjv_model(), {.n_ctx = 256, .n_threads = 1});
    return embedder.embed(prompt_tokens(text));
}

// A JSON array of numbers as floats: each was written from a float, so it reads back as that float.
std::vector<float> floats(const json& array) {
    std::vector<float> out;
    for (const json& x : array) out.push_back(float(x.get<double>()));
    return out;
}

// RFC 4648 base64 decoded, then read as little-endian float32.
std::vector<float> base64_floats(const std::string& text) {
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<uint8_t> bytes;
    uint32_t bits = 0;
    int n_bits = 0;
    for (const char c : text) {
        if (c == '=') break;
        const size_t v = alphabet.find(c);
        EXPECT_NE(v, std::string::npos) << "not base64: " << c;
        bits = (bits << 6) | uint32_t(v);
        n_bits += 6;
        if (n_bits >= 8) {
            n_bits -= 8;
            bytes.push_back(uint8_t(bits >> n_bits));
        }
    }
    EXPECT_EQ(bytes.size() % 4, 0u);
    std::vector<float> out(bytes.size() / 4);
    for (size_t i = 0; i < out.size(); ++i) {
        const uint32_t u = uint32_t(bytes[4 * i]) | uint32_t(bytes[4 * i + 1]) << 8 |
                           uint32_t(bytes[4 * i + 2]) << 16 | uint32_t(bytes[4 * i + 3]) << 24;
        std::memcpy(&out[i], &u, 4);
    }
    return out;
}

double norm_of(const std::vector<float>& v) {
    double n = 0;
    for (const float x : v) n += double(x) * x;
    return std::sqrt(n);
}

TEST(ServerEmbeddings, TheAnswerHasOpenAisShapeAndTheLibrarysEmbedding) {
    TestServer server;
    auto c = server.client();
    const json models =
        post_json(c, "/v1/embeddings", {{"input", "And God said"}, {"model", "any name"}}, 200);
    EXPECT_EQ(models["object"], "list");
    EXPECT_EQ(models["model"], "kjv-q8_0.gguf");
    ASSERT_EQ(models["data"].size(), 1u);
    const json& d = models["data"][0];
    EXPECT_EQ(d["object"], "embedding");
    EXPECT_EQ(d["index"], 0);
    ASSERT_TRUE(d["embedding"].is_array());
    EXPECT_EQ(d["embedding"].size(), size_t(kKjvEmbd));
    const std::vector<float> e = floats(d["embedding"]);
    EXPECT_EQ(e, library_embedding("And God said"));
    EXPECT_NEAR(norm_of(e), 1.0, 1e-6);
    const int64_t n = int64_t(prompt_tokens("And God said").size());
    EXPECT_EQ(models["usage"]["prompt_tokens"], n);
    EXPECT_EQ(models["usage"]["total_tokens"], n);
    // /v1/models says how long the vectors are; /embeddings answers as /v1/embeddings (llama-server's).
    auto r = c.Get("/v1/models");
    ASSERT_TRUE(r);
    EXPECT_EQ(json::parse(r->body)["data"][0]["meta"]["n_embd"], kKjvEmbd);
    EXPECT_EQ(floats(post_json(c, "/embeddings", {{"input", "And God said"}}, 200)["data"][0]["embedding"]),
              e);
    expect_error(c.Get("/v1/embeddings"), 405, "method_not_allowed", "takes POST");
    r = c.Get("/metrics");
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("graphrun_requests_total{endpoint=\"/v1/embeddings\",status=\"200\"} 1"),
              std::string::npos)
        << r->body;
}

TEST(ServerEmbeddings, AListIsEachInputAloneInOrder) {
    TestServer server;
    auto c = server.client();
    const std::vector<std::string> texts{"In the beginning", "God created the heaven", "and the earth",
                                         "In the beginning"};
    const json answer = post_json(c, "/v1/embeddings", {{"input", texts}}, 200);
    ASSERT_EQ(answer["data"].size(), texts.size());
    int64_t n_tokens = 0;
    std::vector<std::vector<float>> got;
    for (size_t i = 0; i < texts.size(); ++i) {
        EXPECT_EQ(answer["data"][i]["index"], i);
        got.push_back(floats(answer["data"][i]["embedding"]));
        EXPECT_EQ(got[i], library_embedding(texts[i])) << texts[i];
        EXPECT_EQ(got[i],
                  floats(post_json(c, "/v1/embeddings", {{"input", texts[i]}}, 200)["data"][0]["embedding"]));
        n_tokens += int64_t(prompt_tokens(texts[i]).size());
    }
    EXPECT_NE(got[0], got[1]);
    EXPECT_NE(got[1], got[2]);
    EXPECT_EQ(got[0], got[3]);
    EXPECT_EQ(answer["usage"]["prompt_tokens"], n_tokens);
    EXPECT_EQ(answer["usage"]["total_tokens"], n_tokens);
    // Token ids, one array or several, are the texts' tokens as given (BOS included here).
    const json ids = post_json(c, "/v1/embeddings", {{"input", prompt_tokens(texts[1])}}, 200);
    ASSERT_EQ(ids["data"].size(), 1u);
    EXPECT_EQ(floats(ids["data"][0]["embedding"]), got[1]);
    const json lists =
        post_json(c, "/v1/embeddings", {{"input", {prompt_tokens(texts[2]), prompt_tokens(texts[0])}}}, 200);
    ASSERT_EQ(lists["data"].size(), 2u);
    EXPECT_EQ(floats(lists["data"][0]["embedding"]), got[2]);
    EXPECT_EQ(floats(lists["data"][1]["embedding"]), got[0]);
}

TEST(ServerEmbeddings, Base64IsTheFloatsLittleEndianBytes) {
    TestServer server;
    auto c = server.client();
    const json in = {{"input", {"And God said", "Let there be light"}}};
    const json as_floats = post_json(c, "/v1/embeddings", in, 200);
    json b64 = in;
    b64["encoding_format"] = "base64";
    const json as_base64 = post_json(c, "/v1/embeddings", b64, 200);
    ASSERT_EQ(as_base64["data"].size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        ASSERT_TRUE(as_base64["data"][i]["embedding"].is_string());
        // 192 floats are 768 bytes, 1024 characters.
        EXPECT_EQ(as_base64["data"][i]["embedding"].get<std::string>().size(), 1024u);
        EXPECT_EQ(base64_floats(as_base64["data"][i]["embedding"]),
                  floats(as_floats["data"][i]["embedding"]));
    }
    b64["encoding_format"] = "float";
    EXPECT_EQ(post_json(c, "/v1/embeddings", b64, 200)["data"], as_floats["data"]);
}

TEST(ServerEmbeddings, RefusedInputsAndFieldsNameThemselves) {
    TestServer server(testing::BackendSpec{.n_ctx = 64});
    auto c = server.client();
    auto post = [&](const std::string& body) { return c.Post("/v1/embeddings", body, "application/json"); };
    expect_error(post(R"({"model": "m"})"), 400, "missing_field", "'input' is required", "input");
    expect_error(post(R"({"input": null})"), 400, "missing_field", "'input' is required", "input");
    expect_error(post(R"({"input": ""})"), 400, "invalid_value", "'input' is empty", "input");
    expect_error(post(R"({"input": []})"), 400, "invalid_value", "'input' is an empty array", "input");
    expect_error(post(R"({"input": ["a", ""]})"), 400, "invalid_value", "'input[1]' is empty", "input[1]");
    expect_error(post(R"({"input": [[1, 2], []]})"), 400, "invalid_value", "'input[1]' is an empty array",
                 "input[1]");
    expect_error(post(R"({"input": ["a", 3]})"), 400, "invalid_type", "'input[1]' must be a string",
                 "input[1]");
    expect_error(post(R"({"input": [1, "a"]})"), 400, "invalid_type", "'input[1]' must be a token id",
                 "input[1]");
    expect_error(post(R"({"input": [1, 2.5]})"), 400, "invalid_type", "'input[1]'", "input[1]");
    expect_error(post(R"({"input": [1, -2]})"), 400, "invalid_value", "'input[1]' is -2, not a token id",
                 "input[1]");
    expect_error(post(R"({"input": [[1], [5, 99999]]})"), 400, "invalid_value",
                 "'input[1][1]' is token 99999, outside the vocabulary of 2048", "input[1][1]");
    expect_error(post(R"({"input": {"text": "a"}})"), 400, "invalid_type", "'input' must be a string",
                 "input");
    expect_error(post(R"({"input": [{"text": "a"}]})"), 400, "invalid_type", "'input[0]'", "input[0]");
    std::string long_text;
    for (int i = 0; i < 40; ++i) long_text += "And God said ";
    expect_error(post(json({{"input", long_text}}).dump()), 400, "context_length_exceeded",
                 "more than the context of 64 (an input is embedded whole, never cut)", "input");
    expect_error(post(json({{"input", {"a", long_text}}}).dump()), 400, "context_length_exceeded",
                 "'input[1]' is", "input[1]");
    expect_error(post(R"({"input": "a", "dimensions": 64})"), 400, "unsupported_value", "'dimensions'",
                 "dimensions");
    expect_error(post(R"({"input": "a", "encoding_format": "hex"})"), 400, "invalid_value",
                 "'encoding_format' must be \"float\" or \"base64\", got \"hex\"", "encoding_format");
    expect_error(post(R"({"input": "a", "model": 3})"), 400, "invalid_type", "'model' must be a string",
                 "model");
    expect_error(post(R"({"input": "a", "user": 3})"), 400, "invalid_type", "'user' must be a string",
                 "user");
    expect_error(post(R"({"input": "a", "pooling": "last"})"), 400, "unknown_field",
                 "'pooling' is not a field of /v1/embeddings", "pooling");
    expect_error(post(R"({"input": "a")"), 400, "invalid_json", "byte");
    // Accepted: null fields are absent ones, `user` is a string without effect.
    const json ok = post_json(
        c, "/v1/embeddings",
        {{"input", "a"}, {"user", "u-1"}, {"dimensions", nullptr}, {"encoding_format", nullptr}}, 200);
    EXPECT_EQ(ok["data"][0]["embedding"].size(), size_t(kKjvEmbd));
}

// A graph without an embedding output serves none: /v1/embeddings is a 400 naming `model` and why,
// and the completions are unaffected.
TEST(ServerEmbeddings, AModelWithoutAnEmbeddingOutputRefusesNamingTheGraph) {
    const std::string path = (testing::test_temp_dir() / "no_embedding.json").string();
    std::ofstream(path) << testing::replace_once(
        testing::llama_json(), R"("outputs": { "logits": "logits", "embedding": "out_norm" })",
        R"("outputs": ["logits"])");
    auto model = graph::Model::load(std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf", path);
    auto backend = testing::make_test_backend(model, {});
    EXPECT_EQ(backend->n_embd(), 0);
    EXPECT_NE(backend->embeddings_refused().find("no_embedding.json) declares no embedding output"),
              std::string::npos)
        << backend->embeddings_refused();
    server::HttpServer http(testing::model_info(*model, backend->n_ctx()), *backend,
                            {.host = "127.0.0.1", .port = 0});
    const int port = http.bind();
    std::thread thread([&] { http.listen(); });
    httplib::Client c("127.0.0.1", port);
    expect_error(c.Post("/v1/embeddings", R"({"input": "a"})", "application/json"), 400, "unsupported_value",
                 "this model serves no embeddings", "model");
    const json done =
        post_json(c, "/v1/completions", {{"prompt", "And"}, {"max_tokens", 2}, {"temperature", 0}}, 200);
    EXPECT_EQ(done["choices"].size(), 1u);
    auto r = c.Get("/v1/models");
    ASSERT_TRUE(r);
    EXPECT_EQ(json::parse(r->body)["data"][0]["meta"]["n_embd"], 0);
    http.stop();
    thread.join();
}

// The parser alone: each form of `input`, and that it throws nothing but ApiError.
TEST(ServerEmbeddings, TheRequestParserReadsEveryFormOfInput) {
    server::EmbeddingRequest r = server::parse_embedding_request(std::string(R"({"input": "x y"})"));
    ASSERT_EQ(r.inputs.size(), 1u);
    EXPECT_EQ(r.inputs[0].text, "x y");
    EXPECT_EQ(r.inputs[0].param, "input");
    EXPECT_FALSE(r.inputs[0].is_ids);
    EXPECT_FALSE(r.base64);
    r = server::parse_embedding_request(
        std::string(R"({"input": ["a", "b"], "encoding_format": "base64", "model": "m"})"));
    ASSERT_EQ(r.inputs.size(), 2u);
    EXPECT_EQ(r.inputs[1].text, "b");
    EXPECT_EQ(r.inputs[1].param, "input[1]");
    EXPECT_TRUE(r.base64);
    EXPECT_EQ(r.model, "m");
    r = server::parse_embedding_request(std::string(R"({"input": [1, 2.0, 3]})"));
    ASSERT_EQ(r.inputs.size(), 1u);
    EXPECT_TRUE(r.inputs[0].is_ids);
    EXPECT_EQ(r.inputs[0].ids, (std::vector<int32_t>{1, 2, 3}));
    r = server::parse_embedding_request(std::string(R"({"input": [[4], [5, 6]]})"));
    ASSERT_EQ(r.inputs.size(), 2u);
    EXPECT_EQ(r.inputs[1].ids, (std::vector<int32_t>{5, 6}));
    EXPECT_EQ(r.inputs[1].param, "input[1]");
    json many = {{"input", std::vector<std::string>(server::kMaxEmbeddingInputs + 1, "a")}};
    try {
        server::parse_embedding_request(many);
        ADD_FAILURE() << "2049 inputs were accepted";
    } catch (const server::ApiError& e) {
        EXPECT_EQ(e.param(), "input");
        EXPECT_NE(std::string(e.what()).find("at most 2048"), std::string::npos) << e.what();
    }
    for (const char* body :
         {"[]", "3", R"({"input": [[[1]]]})", R"({"input": [1e300]})", R"({"input": true})"})
        EXPECT_THROW(server::parse_embedding_request(std::string(body)), server::ApiError) << body;
}

}  // namespace
}  // namespace graphrun
