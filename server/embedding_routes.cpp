// server/embedding_routes.cpp — POST /v1/embeddings (and /embeddings, as llama-server): each input's
// embedding (engine/embedding.h: the graph's embedding output, pooled by the model's pooling type,
// L2-normalised) in OpenAI's shape, as JSON floats or, with "encoding_format": "base64", the
// base64 of their little-endian float32 bytes (what the openai clients ask for by default).
//
// The work runs on the request's own connection thread, on the backend's embedder (an engine of its
// own, one request at a time), so completions on the scheduler never wait for it.
#include <algorithm>
#include <cstring>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_response.h"
#include "server/embedding_request.h"
#include "server/routes.h"

namespace graphrun::server {

using nlohmann::json;

namespace {

// RFC 4648 base64 of the floats' little-endian IEEE 754 bytes, whatever the host's byte order.
std::string base64_floats(const std::vector<float>& v) {
    static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes(v.size() * 4, '\0');
    for (size_t i = 0; i < v.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &v[i], 4);
        for (size_t b = 0; b < 4; ++b) bytes[i * 4 + b] = char((bits >> (8 * b)) & 0xff);
    }
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t group = 0;
        for (size_t b = 0; b < 3; ++b) group = (group << 8) | (b < n ? uint8_t(bytes[i + b]) : 0u);
        for (size_t c = 0; c < 4; ++c) out += c <= n ? kAlphabet[(group >> (18 - 6 * c)) & 63] : '=';
    }
    return out;
}

// Each input's tokens: text as a completion's prompt is tokenized (BOS when the model asks for it,
// special tokens not parsed), token ids as given; held to the vocabulary and the context.
std::vector<std::vector<int32_t>> input_tokens(const ServerContext& ctx, const EmbeddingRequest& r) {
    const Tokenizer& tok = ctx.info.tokenizer;
    const int64_t n_ctx = ctx.backend.n_ctx();
    std::vector<std::vector<int32_t>> texts;
    for (const EmbeddingInput& in : r.inputs) {
        std::vector<int32_t> ids;
        try {
            ids = in.is_ids ? in.ids : tok.encode(in.text, tok.add_bos());
        } catch (const TokenizerError& e) {
            throw ApiError(400, "invalid_value", "'" + in.param + "': " + e.what(), in.param);
        }
        for (size_t j = 0; in.is_ids && j < ids.size(); ++j)
            if (ids[j] >= ctx.info.n_vocab) {
                const std::string at = in.param + "[" + std::to_string(j) + "]";
                throw ApiError(400, "invalid_value",
                               "'" + at + "' is token " + std::to_string(ids[j]) +
                                   ", outside the vocabulary of " + std::to_string(ctx.info.n_vocab),
                               at);
            }
        if (int64_t(ids.size()) > n_ctx)
            throw ApiError(400, "context_length_exceeded",
                           "'" + in.param + "' is " + std::to_string(ids.size()) +
                               " tokens, more than the context of " + std::to_string(n_ctx) +
                               " (an input is embedded whole, never cut)",
                           in.param);
        texts.push_back(std::move(ids));
    }
    return texts;
}

void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const InFlight in_flight(ctx.in_flight);
    try {
        if (ctx.draining) throw ApiError(503, "shutting_down", "the server is shutting down");
        const EmbeddingRequest request = parse_embedding_request(req.body);
        if (ctx.backend.n_embd() == 0)
            throw ApiError(400, "unsupported_value", ctx.backend.embeddings_refused(), "model");
        const std::vector<std::vector<int32_t>> texts = input_tokens(ctx, request);
        std::vector<std::vector<float>> embeddings;
        try {
            embeddings = ctx.backend.embed(texts);
        } catch (const JobRefused& e) {  // checked above: not expected
            throw ApiError(400, "invalid_value", e.what(), "input");
        }
        json data = json::array();
        int64_t n_tokens = 0;
        for (size_t i = 0; i < embeddings.size(); ++i) {
            n_tokens += int64_t(texts[i].size());
            data.push_back(
                {{"object", "embedding"},
                 {"index", i},
                 {"embedding", request.base64 ? json(base64_floats(embeddings[i])) : json(embeddings[i])}});
        }
        ctx.metrics.count_tokens(n_tokens, 0);
        const json answer = {{"object", "list"},
                             {"data", std::move(data)},
                             {"model", ctx.info.id},
                             {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
        res.set_content(dump(answer), "application/json");
    } catch (const ApiError& e) {
        send_error(res, e, ctx.retry_after_seconds);
    }
}

}  // namespace

void add_embedding_routes(httplib::Server& http, ServerContext& ctx) {
    for (const char* path : {"/v1/embeddings", "/embeddings"})
        http.Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) {
            handle_embeddings(ctx, req, res);
        });
}

}  // namespace graphrun::server
