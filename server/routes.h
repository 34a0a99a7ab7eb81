// server/routes.h — what the routes of http_server.cpp share, and the functions that add them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

#include "server/api_error.h"
#include "server/completion.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace httplib {
class Server;
struct Response;
}  // namespace httplib

namespace graphrun::server {

struct ServerContext {
    ModelInfo info;
    Backend& backend;
    ServerMetrics metrics{};
    JobRegistry jobs{};
    std::atomic<bool> draining = false;
    std::atomic<int64_t> in_flight = 0;      // completions and embeddings being answered
    std::atomic<uint64_t> next_answer = 1;   // for answer ids
    int64_t created = int64_t(std::time(nullptr));
    int retry_after_seconds = 1;
};

// Counts a request in flight (a completion, an embedding) from its start to the end of its answer (a
// stream outlives the handler): a drain waits for them.
class InFlight {
  public:
    explicit InFlight(std::atomic<int64_t>& n) : n_(n) { ++n_; }
    ~InFlight() { --n_; }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

  private:
    std::atomic<int64_t>& n_;
};

// How long a streamed answer may stay silent: past it a heartbeat (an SSE comment) goes out, so a
// client's and a proxy's idle timeouts do not close a slow generation, and a gone client is noticed.
inline constexpr std::chrono::milliseconds kHeartbeat{1000};

// The label /metrics counts a request under: its route, or "unknown" (so the label set stays small).
std::string endpoint_label(const std::string& path);

// An ApiError as the answer (with Retry-After on a 503).
void send_error(httplib::Response& res, const ApiError& e, int retry_after_seconds);

// GET /, /health, /v1/models, /metrics, /plan; POST /tokenize, /detokenize.
void add_info_routes(httplib::Server& http, ServerContext& ctx);
// POST /v1/completions, /v1/chat/completions.
void add_completion_routes(httplib::Server& http, ServerContext& ctx);
// POST /v1/embeddings.
void add_embedding_routes(httplib::Server& http, ServerContext& ctx);
// POST /v1/responses (responses_routes.cpp).
void add_responses_routes(httplib::Server& http, ServerContext& ctx);

// The page GET / serves (server/page.html, built into the binary).
extern const char* const kPageHtml;

}  // namespace graphrun::server
