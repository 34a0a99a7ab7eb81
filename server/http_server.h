// server/http_server.h — `graphrun serve`: an OpenAI-compatible HTTP server over a Backend.
//
//   HttpServer server(info, backend, {.host = "127.0.0.1", .port = 0});
//   int port = server.bind();        // 0 picks a free port
//   std::thread t([&] { server.listen(); });
//   ...
//   server.drain(std::chrono::seconds(30));   // SIGTERM: stop accepting, finish in-flight requests
//
// Endpoints (docs/server.md has the fields):
//   POST /v1/completions, /v1/chat/completions   with and without "stream": true (server-sent events)
//   GET  /v1/models, /health, /metrics (Prometheus text), /plan (the execution plan, text), / (the page)
//   POST /tokenize, /detokenize                  as llama-server has them
// Every error is OpenAI's {"error": {"message", "type", "param", "code"}}: malformed JSON, bad and
// unknown fields 400 (param names the field),
// a missing or wrong API key 401, an unknown route 404, a body over the limit 413, a full queue 503
// with Retry-After. cpp-httplib (Debian's libcpp-httplib-dev) does the HTTP.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/text/chat_template.h"
#include "runtime/text/tokenizer.h"
#include "server/backend.h"

namespace graphrun::server {

// What the endpoints say about the loaded model.
struct ModelInfo {
    std::string id;  // answered as "model" whatever name a request gives (llama-server does the same)
    Tokenizer tokenizer;
    ChatTemplate chat_template;
    std::string plan_text;  // GET /plan
    int64_t n_vocab = 0;
    // The token trie constrained requests are matched against (runtime/text/grammar_vocab.h); null:
    // made from the tokenizer per constrained request.
    std::shared_ptr<const GrammarVocab> grammar_vocab{};
};

// GET /plan's text: the plan of `graphrun --dump-plan` for one token, with the graph file named by
// its file name only (its folder on the host is no client's business).
std::string served_plan_text(const graph::Graph& graph, int64_t n_ctx);

// The documented body limit (docs/server.md): larger bodies are refused with 413 before being read.
inline constexpr size_t kDefaultMaxBodyBytes = size_t(8) << 20;

inline constexpr size_t kDefaultMaxConnections = 256;
// How long one read or write on a connection may wait before the connection is dropped (headers and
// bodies alike); a keep-alive connection is closed after kKeepAliveSeconds without a request.
inline constexpr int kSocketTimeoutSeconds = 5;
inline constexpr int kKeepAliveSeconds = 5;
// Connections the kernel holds before they are accepted (capped by net.core.somaxconn).
inline constexpr int kListenBacklog = 512;

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;          // 0: any free port (bind() says which)
    std::string api_key{};    // non-empty: "Authorization: Bearer KEY" on every endpoint but /health and /
    size_t max_body_bytes = kDefaultMaxBodyBytes;
    int retry_after_seconds = 1;  // the Retry-After of a 503
    // Origins a browser page may call from (--cors-origins): "https://app.example", or "*" for any.
    // Empty: no CORS headers at all, and a preflight is not granted.
    std::vector<std::string> cors_origins{};
    // Connections served at once, each on a thread of its own (server/connection_threads.h); past
    // them a connection is answered 503 too_many_connections and closed.
    size_t max_connections = kDefaultMaxConnections;
};

class HttpServer {
  public:
    HttpServer(ModelInfo info, Backend& backend, ServerOptions options);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds the listening socket; returns the port. Throws std::runtime_error naming host and port.
    int bind();
    // Serves until stop() or drain(); bind() first.
    void listen();
    // Refuses new completions with 503, waits up to `timeout` for the ones in flight to finish,
    // cancels those still running, then stops listening and makes listen() return.
    void drain(std::chrono::milliseconds timeout);
    void stop();
    int64_t in_flight() const;

  private:
    class Listener;  // the httplib::Server it listens with
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace graphrun::server
