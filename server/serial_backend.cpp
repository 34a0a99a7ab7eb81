// server/serial_backend.cpp — see serial_backend.h.
#include "server/serial_backend.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "server/backend_embedder.h"

namespace graphrun::server {

namespace {

class SerialBackend final : public Backend {
  public:
    SerialBackend(std::shared_ptr<const graph::Model> model, SerialBackendOptions options)
        : options_(options),
          session_(model, {.n_ctx = options.n_ctx, .n_threads = options.n_threads}),
          embedder_(model, session_.n_ctx(), options.n_threads),
          thread_([this] { run(); }) {}

    ~SerialBackend() override {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

    uint64_t submit(Job job, JobCallback on_event) override {
        if (job.prompt.empty()) throw JobRefused("'prompt' is empty");
        for (const int32_t id : job.prompt)
            if (id < 0 || id >= session_.n_vocab())
                throw JobRefused("prompt token " + std::to_string(id) + " is outside the vocabulary of " +
                                 std::to_string(session_.n_vocab()));
        if (int64_t(job.prompt.size()) >= session_.n_ctx())
            throw JobRefused("the prompt has " + std::to_string(job.prompt.size()) +
                             " tokens, the context holds " + std::to_string(session_.n_ctx()) +
                             " (with room for one generated token)");
        if (job.max_tokens < (job.prompt_logits ? 0 : 1))
            throw JobRefused("'max_tokens' must be at least 1 (0 only for the prompt's logits)");
        sampler_validate(job.sampling);
        if (!job.speculation.empty() && job.speculation.type != "off")
            throw JobRefused("'speculative.*' fields ask for speculative decoding, which this backend (one job at "
                             "a time) does not do", "speculative.type");
        std::lock_guard lock(mutex_);
        // One job runs, max_queue wait (a job waits in queue_ until the thread takes it, too).
        if (int64_t(queue_.size()) + (running_ ? 1 : 0) >= options_.max_queue + 1)
            throw BackendBusy("the queue holds " + std::to_string(queue_.size()) + " requests");
        const uint64_t id = next_id_++;
        queue_.push_back({id, std::move(job), std::move(on_event)});
        wake_.notify_all();
        return id;
    }

    bool cancel(uint64_t id) override {
        std::lock_guard lock(mutex_);
        if (id == running_) return cancel_running_ = true;
        auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.id == id; });
        if (it == queue_.end()) return false;
        it->cancelled = true;
        return true;
    }

    BackendMetrics metrics() const override {
        std::lock_guard lock(mutex_);
        BackendMetrics m;
        m.queued = int64_t(queue_.size());
        m.active = running_ ? 1 : 0;
        m.steps = steps_;
        m.occupancy_last = m.active;
        m.occupancy_mean = steps_ ? 1.0 : 0.0;
        return m;
    }
    int64_t n_ctx() const override { return session_.n_ctx(); }
    int64_t parallel() const override { return 1; }
    std::vector<std::vector<float>> embed(std::span<const std::vector<int32_t>> texts) override {
        return embedder_.embed(texts);
    }
    int64_t n_embd() const override { return embedder_.n_embd(); }
    std::string embeddings_refused() const override { return embedder_.refused(); }
    int64_t max_queue() const override { return options_.max_queue; }

  private:
    struct Queued {
        uint64_t id;
        Job job;
        JobCallback on_event;
        bool cancelled = false;
    };

    void run() {
        while (true) {
            Queued q;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                if (stopping_) break;
                q = std::move(queue_.front());
                queue_.pop_front();
                running_ = q.cancelled ? 0 : q.id;
                cancel_running_ = false;
            }
            if (q.cancelled)
                q.on_event({.finish = Finish::Cancelled});
            else
                try {
                    run_job(q);
                } catch (const std::exception&) {  // a NaN row, say: this job ends, the others go on
                    q.on_event({.finish = Finish::Cancelled});
                }
            std::lock_guard lock(mutex_);
            running_ = 0;
        }
        // Jobs still queued at shutdown end as cancelled, so no caller waits forever.
        for (Queued& q : queue_) q.on_event({.finish = Finish::Cancelled});
    }

    bool cancel_requested() {
        std::lock_guard lock(mutex_);
        ++steps_;
        return cancel_running_ || stopping_;
    }

    void run_job(Queued& q) {
        session_.reset();
        Sampler sampler(q.job.sampling, int32_t(session_.n_vocab()));
        for (const int32_t id : q.job.prompt) sampler.accept(id);
        const size_t n_vocab = size_t(session_.n_vocab());
        std::span<const float> logits = session_.eval(q.job.prompt);
        for (size_t p = 0; q.job.prompt_logits && p < q.job.prompt.size(); ++p)
            q.on_event({.logits = logits.subspan(p * n_vocab, n_vocab), .prompt_position = int64_t(p)});
        logits = logits.subspan(logits.size() - n_vocab);
        if (q.job.max_tokens == 0) return q.on_event({.finish = Finish::Length});
        for (int64_t n = 0;; ++n) {
            if (cancel_requested()) return q.on_event({.finish = Finish::Cancelled});
            const int32_t token = sampler.sample(logits);
            sampler.accept(token);
            Finish finish = Finish::None;
            if (std::find(q.job.stop_ids.begin(), q.job.stop_ids.end(), token) != q.job.stop_ids.end())
                finish = Finish::Stop;
            else if (n + 1 >= q.job.max_tokens || session_.n_past() >= session_.n_ctx())
                finish = Finish::Length;
            q.on_event({.token = token, .logits = logits, .finish = finish});
            if (finish != Finish::None) return;
            logits = session_.eval(std::span<const int32_t>(&token, 1));
        }
    }

    SerialBackendOptions options_;
    graph::Session session_;
    BackendEmbedder embedder_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Queued> queue_;
    uint64_t next_id_ = 1, running_ = 0;
    bool cancel_running_ = false, stopping_ = false;
    int64_t steps_ = 0;
    std::thread thread_;  // last: it starts once everything above is made
};

}  // namespace

std::unique_ptr<Backend> make_serial_backend(std::shared_ptr<const graph::Model> model,
                                             SerialBackendOptions options) {
    return std::make_unique<SerialBackend>(std::move(model), options);
}

}  // namespace graphrun::server
