// server/connection_threads.cpp — see connection_threads.h.
#include "server/connection_threads.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

namespace graphrun::server {

namespace {
thread_local bool t_over_the_bound = false;
}  // namespace

struct ConnectionThreads::State {
    size_t max_connections, max_threads;
    std::mutex mutex;
    std::condition_variable idle;
    size_t threads = 0;   // running a connection
    size_t admitted = 0;  // of them, connections within the bound
    std::deque<std::function<void()>> waiting;  // past every thread

    // One thread: its connection, then any that waited for a thread.
    static void run(std::shared_ptr<State> s, std::function<void()> connection) {
        while (connection) {
            bool over;
            {
                std::lock_guard lock(s->mutex);
                over = s->admitted >= s->max_connections;
                if (!over) ++s->admitted;
            }
            t_over_the_bound = over;
            connection();
            t_over_the_bound = false;
            connection = nullptr;
            std::lock_guard lock(s->mutex);
            if (!over) --s->admitted;
            if (!s->waiting.empty()) {
                connection = std::move(s->waiting.front());
                s->waiting.pop_front();
            } else {
                --s->threads;
                s->idle.notify_all();
            }
        }
    }
};

ConnectionThreads::ConnectionThreads(size_t max_connections, size_t refusal_threads)
    : state_(std::make_shared<State>()) {
    state_->max_connections = max_connections;
    state_->max_threads = max_connections + refusal_threads;
}

ConnectionThreads::~ConnectionThreads() { shutdown(); }

void ConnectionThreads::enqueue(std::function<void()> connection) {
    std::lock_guard lock(state_->mutex);
    if (state_->threads >= state_->max_threads) {
        state_->waiting.push_back(std::move(connection));
        return;
    }
    ++state_->threads;
    try {
        // Detached: the state it uses is shared, and shutdown() waits for it to end.
        std::thread(State::run, state_, connection).detach();
    } catch (const std::system_error&) {  // no thread to be had now: it waits for one that ends
        --state_->threads;
        state_->waiting.push_back(std::move(connection));
    }
}

void ConnectionThreads::shutdown() {
    std::unique_lock lock(state_->mutex);
    state_->idle.wait(lock, [&] { return state_->threads == 0 && state_->waiting.empty(); });
}

bool ConnectionThreads::over_the_bound() { return t_over_the_bound; }

}  // namespace graphrun::server
