// tools/cmd_serve.cpp — `graphrun serve`: the OpenAI-compatible HTTP server (server/http_server.h).
//
//   graphrun serve -m MODEL.gguf [--host 127.0.0.1] [--port 8080] [--parallel N] [--queue N]
//                  [--ctx-size N] [--api-key KEY] [--cors-origins LIST]
//                  [--spec lookup|draft [--model-draft S.gguf] ...]   requests' default (spec_options.h)
//
// SIGTERM or SIGINT drains: no new connections, in-flight requests finish (at most --drain-timeout
// seconds, then they are cut off), exit 0. docs/server.md says how to point clients at it.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <tbb/info.h>

#include "graph/graph.h"
#include "graph/limits.h"
#include "engine/session.h"
#include "server/http_server.h"
#include "server/scheduler_backend.h"
#include "tools/commands.h"
#include "tools/option_checks.h"
#include "tools/spec_options.h"

namespace graphrun::tools {

namespace {

struct ServeOptions : SpecOptions {  // spec, draft_model_path, lookup
    std::string model_path, graph_path, chat_template;
    server::ServerOptions http;
    int64_t parallel = 4, queue = -1, ctx = 0;
    int threads = 0;
    double drain_timeout = 30;
};

void run_serve(ServeOptions opt) {
    if (opt.model_path.empty()) opt.model_path = graph::default_model_path();
    if (opt.queue < 0) opt.queue = 4 * opt.parallel;
    // Signals go to the one thread that waits for them, not to whichever thread runs; blocked before
    // any thread starts, so every thread inherits the mask. A peer that hangs up is a failed write.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    auto model = graph::Model::load(opt.model_path, opt.graph_path, process_pipeline());
    std::unique_ptr<server::Backend> backend = server::make_scheduler_backend(
        model, {.policy = graph::Policy::Continuous,
                .parallel = opt.parallel,
                .max_queue = opt.queue,
                .n_ctx = opt.ctx,
                .n_threads = opt.threads,
                .speculation = speculation_of(opt),
                .draft_model = load_draft_model(opt, *model)});
    server::ModelInfo info{
        .id = std::filesystem::path(opt.model_path).filename().string(),
        .tokenizer = Tokenizer::from_gguf(model->file()),
        .chat_template = opt.chat_template.empty() ? ChatTemplate::from_gguf(model->file())
                                                   : ChatTemplate::named(opt.chat_template),
        .plan_text = server::served_plan_text(model->graph(), backend->n_ctx()),
        .n_vocab = 0,
    };
    info.n_vocab = info.tokenizer.n_vocab();
    info.grammar_vocab = GrammarVocab::from_tokenizer(info.tokenizer);  // once, for every constrained request
    const std::string chat_format = info.chat_template.name();
    server::HttpServer http(std::move(info), *backend, opt.http);
    const int port = http.bind();
    std::fprintf(stderr,
                 "graphrun serve: %s on http://%s:%d (%lld sequences, queue %lld, context %lld, chat format %s)\n",
                 opt.model_path.c_str(), opt.http.host.c_str(), port, (long long)backend->parallel(),
                 (long long)backend->max_queue(), (long long)backend->n_ctx(), chat_format.c_str());

    std::atomic<bool> listening = true;
    std::thread waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        if (!listening) return;  // woken by the pthread_kill below: listen() ended on its own
        std::fprintf(stderr, "graphrun serve: %s: draining %lld requests in flight\n",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT", (long long)http.in_flight());
        http.drain(std::chrono::milliseconds(int64_t(opt.drain_timeout * 1000)));
    });
    http.listen();  // returns once drain() stopped it and the requests in flight ended
    listening = false;
    pthread_kill(waiter.native_handle(), SIGTERM);  // blocked there, so only wakes a waiter still in sigwait
    waiter.join();
    std::fprintf(stderr, "graphrun serve: stopped\n");
}

}  // namespace

void register_serve(CLI::App& app) {
    auto opt = std::make_shared<ServeOptions>();
    CLI::App* cmd = app.add_subcommand("serve", "an OpenAI-compatible HTTP server (docs/server.md)");
    cmd->add_option("-m,--model", opt->model_path, "model file (GGUF); default: models/kjv-q8_0.gguf of the data folder");
    cmd->add_option("--graph", opt->graph_path, "graph definition (JSON); default: the model architecture's");
    cmd->add_option("--host", opt->http.host, "address to listen on")->capture_default_str();
    cmd->add_option("--port", opt->http.port, "port (0: any free one, printed at start)")
        ->check(whole_number_in(0, 65535))
        ->capture_default_str();
    cmd->add_option("--parallel", opt->parallel, "sequences sharing each forward pass")
        ->check(whole_number_in(1, 256))
        ->capture_default_str();
    cmd->add_option("--queue", opt->queue, "requests waiting at most, beyond them 503 (default: 4x --parallel)")
        ->check(whole_number_in(0, 1 << 16));
    cmd->add_option("-c,--ctx-size", opt->ctx, "positions per sequence (0: the model's, at most 2048)")
        ->check(whole_number_in(0, graph::kMaxContext, "the context ceiling"));
    cmd->add_option("-t,--threads", opt->threads, "threads (0: every core)")
        ->check(whole_number_in(0, tbb::info::default_concurrency(), "the threads this machine runs"));
    cmd->add_option("--api-key", opt->http.api_key, "require 'Authorization: Bearer KEY' (all but /health and /)");
    cmd->add_option("--max-connections", opt->http.max_connections,
                    "connections served at once, a thread each; past them 503 too_many_connections")
        ->check(whole_number_in(1, 1 << 16))
        ->capture_default_str();
    cmd->add_option("--cors-origins", opt->http.cors_origins,
                    "origins browser pages may call from, comma-separated, or * (default: none)")
        ->delimiter(',');
    cmd->add_option("--chat-template", opt->chat_template, "the chat format instead of the model's")
        ->check(CLI::IsMember(ChatTemplate::names()));
    cmd->add_option("--drain-timeout", opt->drain_timeout, "seconds SIGTERM waits for requests in flight")
        ->check(CLI::Range(0.0, 3600.0))
        ->capture_default_str();
    add_spec_options(*cmd, *opt);
    cmd->callback([cmd, opt] {
        check_spec_options(*cmd, *opt);
        run_serve(*opt);
    });
}

}  // namespace graphrun::tools
