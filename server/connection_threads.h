// server/connection_threads.h — the HTTP server's connections, a thread each, up to a bound.
//
//   http.new_task_queue = [] { return new ConnectionThreads(256); };
//   if (ConnectionThreads::over_the_bound()) { /* answer 503 and close */ }
//
// cpp-httplib hands its task queue one task per accepted connection. Its own ThreadPool has a fixed
// number of threads, so connections that hold one (an idle keep-alive, a client that sends a header
// line every few seconds) made every other request, /health too, wait for a free thread. Here each
// connection gets a thread of its own at once, up to `max_connections`; the next `refusal_threads`
// connections get one too, flagged over_the_bound() so the server answers them 503 and closes (the
// task cannot be refused before it runs: it holds the socket); past those, connections wait for a
// thread as in a pool.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include <httplib.h>

namespace graphrun::server {

class ConnectionThreads final : public httplib::TaskQueue {
  public:
    explicit ConnectionThreads(size_t max_connections, size_t refusal_threads = 16);
    ~ConnectionThreads() override;
    ConnectionThreads(const ConnectionThreads&) = delete;
    ConnectionThreads& operator=(const ConnectionThreads&) = delete;

    void enqueue(std::function<void()> connection) override;
    // Waits for every connection's thread to end (cpp-httplib calls it when listening stops).
    void shutdown() override;

    // True on the thread of a connection past the bound, for as long as it runs.
    static bool over_the_bound();

    struct State;

  private:
    std::shared_ptr<State> state_;  // shared with the threads, which outlive nothing but it
};

}  // namespace graphrun::server
