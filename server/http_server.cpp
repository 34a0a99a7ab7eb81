// server/http_server.cpp — see http_server.h. The routes that answer at once live here; the two
// completion endpoints are in completion_routes.cpp, /v1/embeddings in embedding_routes.cpp, /v1/responses in responses_routes.cpp.
#include "server/http_server.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <stdexcept>
#include <thread>

#include <sys/socket.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/connection_threads.h"
#include "server/routes.h"

namespace graphrun::server {

using nlohmann::json;

namespace {

// The routes and their methods (add_info_routes, add_completion_routes): a known path asked for with
// another method is a 405 naming the method it takes, not a 404.
struct Route {
    const char* path;
    const char* method;
};
constexpr Route kRoutes[] = {{"/v1/completions", "POST"},
                             {"/v1/chat/completions", "POST"},
                             {"/completions", "POST"},
                             {"/chat/completions", "POST"},
                             {"/v1/embeddings", "POST"},
                             {"/embeddings", "POST"},
                             {"/v1/responses", "POST"},
                             {"/responses", "POST"},
                             {"/tokenize", "POST"},
                             {"/detokenize", "POST"},
                             {"/v1/models", "GET"},
                             {"/health", "GET"},
                             {"/health/ready", "GET"},
                             {"/metrics", "GET"},
                             {"/plan", "GET"},
                             {"/", "GET"}};

const Route* route_of(const std::string& path) {
    for (const Route& r : kRoutes)
        if (path == r.path) return &r;
    return nullptr;
}

// "user:password" from "Basic <base64 of user:password>" (RFC 7617), or "" when the header is not that.
std::string basic_credentials(const std::string& header) {
    static const std::string prefix = "Basic ";
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (header.compare(0, prefix.size(), prefix) != 0) return "";
    std::string text = header.substr(prefix.size());
    while (!text.empty() && text.back() == '=') text.pop_back();
    std::string out;
    uint32_t bits = 0;
    int n_bits = 0;
    for (char c : text) {
        const size_t value = alphabet.find(c);
        if (value == std::string::npos) return "";
        bits = (bits << 6) | uint32_t(value);
        n_bits += 6;
        if (n_bits >= 8) {
            n_bits -= 8;
            out.push_back(char((bits >> n_bits) & 0xff));
        }
    }
    return out;
}

// The key as a Bearer token (what API clients send), or as the password of HTTP Basic authentication
// with any user name: a browser cannot send a Bearer header when it opens the page, so GET / asks
// for Basic credentials, and the browser then sends them with the page's own API calls too.
bool authorized(const httplib::Request& req, const std::string& key) {
    const std::string header = req.get_header_value("Authorization");
    if (header == "Bearer " + key) return true;
    const std::string credentials = basic_credentials(header);
    const size_t colon = credentials.find(':');
    return colon != std::string::npos && credentials.substr(colon + 1) == key;
}

// CORS (the Fetch standard's): an answer to an allowed Origin names it in Access-Control-Allow-Origin
// (the origin itself, also under "*", so a page that sends credentials is served too) with
// Vary: Origin for caches. True when the request's origin is allowed.
bool allow_origin(const httplib::Request& req, httplib::Response& res, const std::vector<std::string>& allowed) {
    const std::string origin = req.get_header_value("Origin");
    if (origin.empty() || allowed.empty()) return false;
    if (std::find(allowed.begin(), allowed.end(), "*") == allowed.end() &&
        std::find(allowed.begin(), allowed.end(), origin) == allowed.end())
        return false;
    if (!res.has_header("Access-Control-Allow-Origin")) {
        res.set_header("Access-Control-Allow-Origin", origin);
        res.set_header("Vary", "Origin");
    }
    return true;
}

// The headers a preflight grants: the two every API call sends, and whatever else the page's
// client asks for (the openai package adds its own X-Stainless-* headers).
std::string allowed_headers(const httplib::Request& req) {
    std::string headers = "Authorization, Content-Type";
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    if (!asked.empty()) headers += ", " + asked;
    return headers;
}

}  // namespace

// cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when Debian built the
// library): a burst of connections past it had their SYNs dropped and waited a second for the
// client's retry. Linux takes a second listen() on the socket as a new backlog. (Outside the anonymous
// namespace: HttpServer::State holds one.)
class HttpServer::Listener : public httplib::Server {
  public:
    void widen_backlog() { ::listen(svr_sock_, kListenBacklog); }
};

struct HttpServer::State {
    ServerContext ctx;
    ServerOptions options;
    Listener http;
    int bound_port = -1;
};

std::string endpoint_label(const std::string& path) {
    const Route* r = route_of(path);
    return r ? r->path : "unknown";
}

void send_error(httplib::Response& res, const ApiError& e, int retry_after_seconds) {
    res.status = e.status();
    if (e.status() == 503) res.set_header("Retry-After", std::to_string(retry_after_seconds));
    res.set_content(api_error_body(e), "application/json");
}

HttpServer::HttpServer(ModelInfo info, Backend& backend, ServerOptions options)
    : state_(new State{ServerContext{std::move(info), backend}, std::move(options), {}, -1}) {
    State& s = *state_;
    ServerContext& ctx = s.ctx;
    ctx.retry_after_seconds = s.options.retry_after_seconds;
    httplib::Server& http = s.http;

    // A thread per connection, so /health, /metrics and "busy" answers never wait behind a
    // completion, an idle keep-alive or a client that sends its headers slowly.
    const size_t max_connections = s.options.max_connections;
    http.new_task_queue = [max_connections] { return new ConnectionThreads(max_connections); };
    http.set_payload_max_length(s.options.max_body_bytes);
    http.set_read_timeout(kSocketTimeoutSeconds);
    http.set_write_timeout(kSocketTimeoutSeconds);
    http.set_keep_alive_timeout(kKeepAliveSeconds);

    const std::string key = s.options.api_key;
    const std::vector<std::string> origins = s.options.cors_origins;
    http.set_pre_routing_handler([&ctx, key, origins, max_connections](const httplib::Request& req,
                                                                       httplib::Response& res) {
        if (ConnectionThreads::over_the_bound()) {
            res.set_header("Connection", "close");
            send_error(res,
                       ApiError(503, "too_many_connections",
                                "the server has " + std::to_string(max_connections) +
                                    " connections open, its bound (--max-connections); retry after a moment"),
                       ctx.retry_after_seconds);
            return httplib::Server::HandlerResponse::Handled;
        }
        const bool cors = allow_origin(req, res, origins);
        // A browser's preflight carries no credentials: granted before the key is asked for.
        if (cors && req.method == "OPTIONS" && req.has_header("Access-Control-Request-Method")) {
            res.status = 204;
            res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            res.set_header("Access-Control-Allow-Headers", allowed_headers(req));
            res.set_header("Access-Control-Max-Age", "600");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (key.empty() || req.path == "/health" || req.path == "/health/ready" || authorized(req, key))
            return httplib::Server::HandlerResponse::Unhandled;
        const bool missing = req.get_header_value("Authorization").empty();
        if (req.path == "/" && req.method == "GET") res.set_header("WWW-Authenticate", "Basic realm=\"graphrun\"");
        send_error(res,
                   ApiError(401, "invalid_api_key",
                            missing ? "this server needs an API key: send 'Authorization: Bearer KEY'"
                                    : "the API key in the Authorization header is not this server's"),
                   ctx.retry_after_seconds);
        return httplib::Server::HandlerResponse::Handled;
    });

    // Answers httplib gives itself (no route, body too large, unreadable request) in OpenAI's shape.
    const size_t limit = s.options.max_body_bytes;
    http.set_error_handler([limit, origins](const httplib::Request& req, httplib::Response& res) {
        allow_origin(req, res, origins);  // a body too large is refused before routing
        if (!res.body.empty()) return;    // a handler's own error answer
        std::string code = "invalid_request", message = "the request could not be read";
        const Route* route = route_of(req.path);
        if (res.status == 404 && route && req.method != route->method) {
            res.status = 405;
            res.set_header("Allow", route->method);
            code = "method_not_allowed";
            message = req.path + " takes " + route->method + ", not " + req.method;
        } else if (res.status == 404) {
            code = "not_found";
            message = "no route " + req.method + " " + req.path +
                      " (POST /v1/completions, /v1/chat/completions, /v1/responses, /v1/embeddings, /tokenize, /detokenize; "
                      "GET /v1/models, /health, /health/ready, /metrics, /plan, /)";
        } else if (res.status == 413) {
            code = "body_too_large";
            message = "the request body is larger than this server's limit of " + std::to_string(limit) + " bytes";
        }
        res.set_content(api_error_body(res.status, code, message), "application/json");
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        res.status = 500;
        res.set_content(api_error_body(500, "internal_error", what), "application/json");
    });
    http.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
        // A stream is counted when it ends (completion_routes.cpp): 200, or cancelled when its client
        // went away; here it would be 200 either way, its header being written first.
        if (res.get_header_value("Content-Type") == "text/event-stream") return;
        ctx.metrics.count_request(endpoint_label(req.path), res.status);
    });

    add_info_routes(http, ctx);
    add_completion_routes(http, ctx);
    add_embedding_routes(http, ctx);
    add_responses_routes(http, ctx);
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
    State& s = *state_;
    s.bound_port = s.options.port == 0 ? s.http.bind_to_any_port(s.options.host)
                                       : (s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1);
    if (s.bound_port >= 0) s.http.widen_backlog();
    if (s.bound_port < 0)
        throw std::runtime_error("[serve] cannot listen on " + s.options.host + ":" + std::to_string(s.options.port) +
                                 " (in use, or not an address of this machine)");
    return s.bound_port;
}

void HttpServer::listen() {
    if (state_->bound_port < 0) throw std::logic_error("[serve] listen() before bind()");
    state_->http.listen_after_bind();
}

void HttpServer::stop() {
    if (state_->http.is_running()) state_->http.stop();
}

int64_t HttpServer::in_flight() const { return state_->ctx.in_flight.load(); }

void HttpServer::drain(std::chrono::milliseconds timeout) {
    ServerContext& ctx = state_->ctx;
    // New completions get 503 from here on. The listening socket stays open until the requests in
    // flight are answered: cpp-httplib ends every chunked stream the moment it is stopped.
    ctx.draining = true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (ctx.in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ctx.jobs.cancel_all(ctx.backend);  // past the deadline: cut off what still runs
    while (ctx.in_flight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop();
}

}  // namespace graphrun::server
