// tests/common/server_test_util.h — a real `graphrun serve` HTTP server in the test process, on a free
// loopback port, over the shipped KJV model, and a client for it.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "graph/data_files.h"
#include "graph/plan.h"
#include "engine/session.h"
#include "server/http_server.h"
#include "server/scheduler_backend.h"
#include "server/serial_backend.h"
#include "tests/common/test_models.h"  // kjv_model()

namespace graphrun::testing {


struct BackendSpec {
    int64_t parallel = 4;
    int64_t queue = 16;
    int64_t n_ctx = 256;
    graph::Speculation speculation{};               // the requests' default (serve --spec)
    std::shared_ptr<const graph::Model> draft_model{};  // serve --model-draft
};

inline std::unique_ptr<server::Backend> make_test_backend(std::shared_ptr<const graph::Model> model,
                                                          const BackendSpec& spec) {
    return server::make_scheduler_backend(std::move(model), {.policy = graph::Policy::Continuous,
                                                             .parallel = spec.parallel,
                                                             .max_queue = spec.queue,
                                                             .n_ctx = spec.n_ctx,
                                                             .n_threads = 1,
                                                             .speculation = spec.speculation,
                                                             .draft_model = spec.draft_model});
}

inline server::ModelInfo model_info(const graph::Model& model, int64_t n_ctx) {
    server::ModelInfo info{.id = "kjv-q8_0.gguf",
                           .tokenizer = Tokenizer::from_gguf(model.file()),
                           .chat_template = ChatTemplate::from_gguf(model.file()),
                           .plan_text = server::served_plan_text(model.graph(), n_ctx),
                           .n_vocab = 0};
    info.n_vocab = info.tokenizer.n_vocab();
    return info;
}

class TestServer {
  public:
    // model: the shipped KJV model when null.
    explicit TestServer(BackendSpec spec = {}, server::ServerOptions options = {},
                        std::shared_ptr<const graph::Model> model = nullptr) {
        if (!model) model = kjv_model();
        backend_ = make_test_backend(model, spec);
        options.host = "127.0.0.1";
        options.port = 0;
        http_ = std::make_unique<server::HttpServer>(model_info(*model, backend_->n_ctx()), *backend_, options);
        port_ = http_->bind();
        thread_ = std::thread([this] { http_->listen(); });
    }
    ~TestServer() {
        http_->stop();
        join();
    }
    int port() const { return port_; }
    server::HttpServer& http() { return *http_; }
    server::Backend& backend() { return *backend_; }
    void join() {  // after drain(): listen() has returned
        if (thread_.joinable()) thread_.join();
    }
    httplib::Client client() const {
        httplib::Client c("127.0.0.1", port_);
        c.set_read_timeout(60);
        return c;
    }

  private:
    std::unique_ptr<server::Backend> backend_;
    std::unique_ptr<server::HttpServer> http_;
    std::thread thread_;
    int port_ = 0;
};

// POSTs `body` and hands each received part of the answer to on_data (false: hang up).
template <class OnData>
httplib::Result post_streaming(httplib::Client& client, const std::string& path, const std::string& body,
                               OnData on_data) {
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [on_data](const char* data, size_t n, uint64_t, uint64_t) mutable {
        return on_data(std::string(data, n));
    };
    return client.send(req);
}

// POSTs `body`, expects `expect_status` and gives the answer's JSON.
inline nlohmann::json post_json(httplib::Client& c, const std::string& path, const nlohmann::json& body,
                                int expect_status) {
    auto r = c.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    EXPECT_EQ(r->status, expect_status) << path << ": " << r->body;
    return nlohmann::json::parse(r->body);
}

// The "data: ..." payloads of an event stream, in order.
inline std::vector<std::string> sse_data(const std::string& stream) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < stream.size()) {
        const size_t end = stream.find("\n\n", pos);
        EXPECT_NE(end, std::string::npos) << "an event without its blank line: " << stream.substr(pos);
        if (end == std::string::npos) break;
        const std::string event = stream.substr(pos, end - pos);
        pos = end + 2;
        if (event.rfind(": ", 0) == 0) continue;  // keep-alive comment
        EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
        out.push_back(event.substr(6));
    }
    return out;
}

// POSTs `body` with "stream": true and gives the stream's "data: ..." payloads, [DONE] included.
inline std::vector<std::string> stream_data(httplib::Client& c, const std::string& path, nlohmann::json body) {
    body["stream"] = true;
    std::string raw;
    const httplib::Result r = post_streaming(c, path, body.dump(), [&](const std::string& d) {
        raw += d;
        return true;
    });
    EXPECT_TRUE(r && r->status == 200) << path << ": " << (r ? r->body : "no answer");
    return sse_data(raw);
}

// Each bad request gets its 4xx in OpenAI's shape, with a message naming what was wrong; `param`
// is the field it names (null when none is given here).
inline void expect_error(const httplib::Result& r, int status, const std::string& code, const std::string& message_part,
                  const std::string& param = {}) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    const nlohmann::json e = nlohmann::json::parse(r->body);
    ASSERT_TRUE(e.contains("error")) << r->body;
    EXPECT_EQ(e["error"]["code"], code) << r->body;
    EXPECT_TRUE(e["error"]["type"].is_string());
    EXPECT_TRUE(e["error"].contains("param")) << r->body;
    if (param.empty())
        EXPECT_TRUE(e["error"]["param"].is_null()) << r->body;
    else
        EXPECT_EQ(e["error"]["param"], param) << r->body;
    EXPECT_NE(e["error"]["message"].get<std::string>().find(message_part), std::string::npos) << r->body;
}

}  // namespace graphrun::testing
