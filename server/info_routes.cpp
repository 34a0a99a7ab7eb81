// server/info_routes.cpp — the routes that answer at once: the page, health, models, metrics, the
// plan, and llama-server's /tokenize and /detokenize.
#include <filesystem>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "graph/plan.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/routes.h"

namespace graphrun::server {

using nlohmann::json;

namespace {

void send_json(httplib::Response& res, const json& body) { res.set_content(dump(body), "application/json"); }

// Runs `handler`, answering an ApiError (or a tokenizer's complaint, as a 400 about the field
// `text_field`) in OpenAI's shape.
template <class Handler>
httplib::Server::Handler guarded(ServerContext& ctx, const char* text_field, Handler handler) {
    return [&ctx, text_field, handler](const httplib::Request& req, httplib::Response& res) {
        try {
            handler(req, res);
        } catch (const ApiError& e) {
            send_error(res, e, ctx.retry_after_seconds);
        } catch (const TokenizerError& e) {
            send_error(res, ApiError(400, "invalid_value", e.what(), text_field), ctx.retry_after_seconds);
        }
    };
}

}  // namespace

std::string served_plan_text(const graph::Graph& graph, int64_t n_ctx) {
    graph::Graph named = graph;  // once, at start: the plan dump prints `source`
    named.source = std::filesystem::path(graph.source).filename().string();
    return graph::dump_plan_text(graph::make_plan(named, 1, n_ctx), named);
}

void add_info_routes(httplib::Server& http, ServerContext& ctx) {
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(kPageHtml, "text/html; charset=utf-8");
    });
    // Both answer at once: they take no lock the engine holds while a prompt is evaluated.
    // /health: the process is up (a liveness probe). /health/ready: it takes new requests (a load
    // balancer's or an orchestrator's readiness probe): the model is loaded before the socket is bound,
    // so only a drain (SIGTERM) makes it 503.
    http.Get("/health", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"status":"ok"})", "application/json");
    });
    http.Get("/health/ready", [&ctx](const httplib::Request&, httplib::Response& res) {
        if (!ctx.draining) return res.set_content(R"({"status":"ready"})", "application/json");
        res.status = 503;
        res.set_header("Retry-After", std::to_string(ctx.retry_after_seconds));
        res.set_content(R"({"status":"draining"})", "application/json");
    });
    http.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
        const json model = {{"id", ctx.info.id},
                            {"object", "model"},
                            {"created", ctx.created},
                            {"owned_by", "graphrun"},
                            {"meta",
                             {{"n_ctx", ctx.backend.n_ctx()},
                              {"n_vocab", ctx.info.n_vocab},
                              {"n_embd", ctx.backend.n_embd()},
                              {"parallel", ctx.backend.parallel()},
                              {"chat_template", ctx.info.chat_template.name()}}}};
        send_json(res, {{"object", "list"}, {"data", json::array({model})}});
    });
    http.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
        res.set_content(ctx.metrics.render(ctx.backend.metrics()), "text/plain; version=0.0.4; charset=utf-8");
    });
    http.Get("/plan", [&ctx](const httplib::Request&, httplib::Response& res) {
        res.set_content(ctx.info.plan_text, "text/plain; charset=utf-8");
    });

    // {"content": TEXT, "add_special": false, "with_pieces": false} -> {"tokens": [ids]} or, with
    // pieces, {"tokens": [{"id", "piece"}]}; special token texts in TEXT are parsed (llama-server does).
    http.Post("/tokenize", guarded(ctx, "content", [&ctx](const httplib::Request& req, httplib::Response& res) {
        const TokenizeRequest r = parse_tokenize_request(parse_json_object(req.body));
        const Tokenizer& tok = ctx.info.tokenizer;
        const std::vector<int32_t> ids = tok.encode(r.content, r.add_special && tok.add_bos(), /*parse_special=*/true);
        json tokens = json::array();
        if (r.with_pieces) {
            for (const int32_t id : ids) tokens.push_back({{"id", id}, {"piece", tok.token_to_piece(id, true)}});
        } else {
            tokens = ids;
        }
        send_json(res, {{"tokens", tokens}});
    }));
    // {"tokens": [ids]} -> {"content": TEXT}.
    http.Post("/detokenize", guarded(ctx, "tokens", [&ctx](const httplib::Request& req, httplib::Response& res) {
        const std::vector<int32_t> ids = parse_detokenize_request(parse_json_object(req.body), ctx.info.n_vocab);
        send_json(res, {{"content", ctx.info.tokenizer.decode(ids)}});
    }));
}

}  // namespace graphrun::server
