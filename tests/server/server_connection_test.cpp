// tests/server/server_connection_test.cpp — `graphrun serve` in process, as browsers and misbehaving
// clients meet it: CORS preflights and headers, slow and idle connections, the bound on connections.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/common/server_test_util.h"

namespace graphrun {
namespace {

using nlohmann::json;
using testing::expect_error;
using testing::TestServer;

// CORS: for an allowed Origin every answer (errors too) names it, and a preflight is granted with 204
// before any API key is asked for; any other origin, or a server without --cors-origins, gets no
// CORS header and no preflight.
TEST(Server, CorsOriginsGetPreflightAndAllowOriginOnEveryAnswer) {
    TestServer server({}, {.api_key = "sesame", .cors_origins = {"https://app.example", "http://localhost:3000"}});
    auto c = server.client();
    const httplib::Headers preflight = {{"Origin", "https://app.example"},
                                        {"Access-Control-Request-Method", "POST"},
                                        {"Access-Control-Request-Headers", "content-type, x-stainless-os"}};
    auto granted = c.Options("/v1/chat/completions", preflight);
    ASSERT_TRUE(granted);
    EXPECT_EQ(granted->status, 204) << granted->body;
    EXPECT_EQ(granted->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
    EXPECT_EQ(granted->get_header_value("Vary"), "Origin");
    EXPECT_NE(granted->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
    const std::string headers = granted->get_header_value("Access-Control-Allow-Headers");
    for (const char* h : {"Authorization", "Content-Type", "x-stainless-os"})
        EXPECT_NE(headers.find(h), std::string::npos) << h << " in " << headers;

    const httplib::Headers from_app = {{"Origin", "http://localhost:3000"}, {"Authorization", "Bearer sesame"}};
    auto answer = c.Post("/v1/completions", from_app, R"({"prompt": "And", "max_tokens": 2, "temperature": 0})",
                         "application/json");
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 200);
    EXPECT_EQ(answer->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
    std::string raw;
    auto streamed = c.Post("/v1/completions", from_app,
                           R"({"prompt": "And", "max_tokens": 2, "temperature": 0, "stream": true})",
                           "application/json");
    ASSERT_TRUE(streamed);
    EXPECT_EQ(streamed->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
    EXPECT_NE(streamed->body.find("[DONE]"), std::string::npos);
    // Errors too, so the page can read them: no key, no route.
    auto no_key = c.Get("/v1/models", {{"Origin", "https://app.example"}});
    ASSERT_TRUE(no_key);
    EXPECT_EQ(no_key->status, 401);
    EXPECT_EQ(no_key->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
    auto no_route = c.Get("/v9", {{"Origin", "https://app.example"}, {"Authorization", "Bearer sesame"}});
    ASSERT_TRUE(no_route);
    EXPECT_EQ(no_route->status, 404);
    EXPECT_EQ(no_route->get_header_value("Access-Control-Allow-Origin"), "https://app.example");

    // Another origin: no preflight (the key is still asked for), no CORS headers.
    auto stranger = c.Options("/v1/chat/completions", {{"Origin", "https://evil.example"},
                                                       {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(stranger);
    EXPECT_NE(stranger->status, 204);
    EXPECT_FALSE(stranger->has_header("Access-Control-Allow-Origin"));
    auto models = c.Get("/v1/models", {{"Origin", "https://evil.example"}, {"Authorization", "Bearer sesame"}});
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 200);
    EXPECT_FALSE(models->has_header("Access-Control-Allow-Origin"));

    // "*": any origin.
    TestServer any({}, {.cors_origins = {"*"}});
    auto anywhere = any.client().Options("/v1/completions", {{"Origin", "https://x.example"},
                                                             {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(anywhere);
    EXPECT_EQ(anywhere->status, 204);
    EXPECT_EQ(anywhere->get_header_value("Access-Control-Allow-Origin"), "https://x.example");

    // Without --cors-origins: nothing.
    TestServer none;
    auto refused = none.client().Options("/v1/completions", {{"Origin", "https://x.example"},
                                                             {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(refused);
    EXPECT_NE(refused->status, 204);
    EXPECT_FALSE(refused->has_header("Access-Control-Allow-Origin"));
    auto health = none.client().Get("/health", {{"Origin", "https://x.example"}});
    ASSERT_TRUE(health);
    EXPECT_FALSE(health->has_header("Access-Control-Allow-Origin"));
}

// A loopback connection that sends what it is told, when it is told (or nothing: an idle client).
class RawConnection {
  public:
    explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(uint16_t(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    }
    ~RawConnection() {
        if (fd_ >= 0) ::close(fd_);
    }
    RawConnection(const RawConnection&) = delete;
    RawConnection& operator=(const RawConnection&) = delete;
    bool connected() const { return connected_; }
    void send_text(const std::string& text) { (void)::send(fd_, text.data(), text.size(), MSG_NOSIGNAL); }

  private:
    int fd_;
    bool connected_ = false;
};

// The slowest of `n` GETs of /health, each on a connection of its own.
std::chrono::milliseconds slowest_health(TestServer& server, int n, int* status) {
    std::chrono::milliseconds slowest{0};
    for (int i = 0; i < n; ++i) {
        auto c = server.client();
        const auto start = std::chrono::steady_clock::now();
        auto r = c.Get("/health");
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
        *status = r ? r->status : -1;
        if (*status != 200) return took;
        slowest = std::max(slowest, took);
    }
    return slowest;
}

// 32 idle connections and 32 that send a header line every 200 ms held every thread of the old fixed
// pool (parallel + queue + 8 = 28 here), so /health waited seconds for one; each connection has a
// thread of its own now.
TEST(Server, SlowAndIdleClientsCannotStarveHealth) {
    TestServer server;
    std::vector<std::unique_ptr<RawConnection>> idle, slow;
    for (int i = 0; i < 32; ++i) {
        idle.push_back(std::make_unique<RawConnection>(server.port()));
        slow.push_back(std::make_unique<RawConnection>(server.port()));
        ASSERT_TRUE(idle.back()->connected() && slow.back()->connected());
        slow.back()->send_text("POST /v1/completions HTTP/1.1\r\nHost: x\r\n");
    }
    std::atomic<bool> done = false;
    std::thread trickle([&] {
        for (int line = 0; !done; ++line) {
            for (auto& c : slow) c->send_text("X-Slow-" + std::to_string(line) + ": 1\r\n");
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // all 64 accepted and waiting
    int status = 0;
    const std::chrono::milliseconds slowest = slowest_health(server, 5, &status);
    done = true;
    trickle.join();
    EXPECT_EQ(status, 200);
    EXPECT_LT(slowest.count(), 100) << "GET /health with 64 slow and idle connections open";
    idle.clear();
    slow.clear();
}

// Past --max-connections a connection is answered 503 too_many_connections (and closed), not left
// waiting; once the others go, it is served again.
TEST(Server, ConnectionsPastTheBoundAreRefusedClearly) {
    TestServer server({}, {.max_connections = 4});
    {
        std::vector<std::unique_ptr<RawConnection>> idle;
        for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<RawConnection>(server.port()));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        auto refused = server.client().Get("/health");
        expect_error(refused, 503, "too_many_connections", "4 connections open");
        EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
    }
    int status = 0;
    for (int i = 0; i < 200 && status != 200; ++i) {
        if (i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        auto r = server.client().Get("/health");
        status = r ? r->status : -1;
    }
    EXPECT_EQ(status, 200) << "served again once the idle connections closed";
}

}  // namespace
}  // namespace graphrun
