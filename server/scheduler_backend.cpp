// server/scheduler_backend.cpp — see scheduler_backend.h.
#include "server/scheduler_backend.h"

#include "server/backend_embedder.h"

namespace graphrun::server {

namespace {

Finish finish_of(graph::FinishReason reason) {
    switch (reason) {
        case graph::FinishReason::None: return Finish::None;
        case graph::FinishReason::Stop: return Finish::Stop;
        case graph::FinishReason::Length:
        case graph::FinishReason::ContextFull: return Finish::Length;  // OpenAI calls both "length"
        case graph::FinishReason::Cancelled: return Finish::Cancelled;
    }
    return Finish::Cancelled;
}

class SchedulerBackend final : public Backend {
  public:
    SchedulerBackend(std::shared_ptr<const graph::Model> model, graph::SchedulerOptions options)
        : scheduler_(model, options), embedder_(model, scheduler_.n_ctx(), options.n_threads) {
        scheduler_.start();
    }
    ~SchedulerBackend() override { scheduler_.stop(); }

    uint64_t submit(Job job, JobCallback on_event) override {
        graph::Request request{.prompt = std::move(job.prompt),
                               .sampling = job.sampling,
                               .max_tokens = job.max_tokens,
                               .stop_ids = std::move(job.stop_ids),
                               .prompt_logits = job.prompt_logits};
        if (!job.speculation.empty()) request.speculation = speculation_of(job.speculation);
        try {
            return scheduler_.submit(std::move(request), [on_event = std::move(on_event)](const graph::TokenEvent& e) {
                on_event({.token = e.token,
                          .logits = e.logits,
                          .finish = finish_of(e.finish),
                          .prompt_position = e.prompt_position});
            });
        } catch (const graph::QueueFull& e) {
            throw BackendBusy(e.what());
        } catch (const graph::RequestRefused& e) {
            throw JobRefused(e.what());
        }
    }
    bool cancel(uint64_t id) override { return scheduler_.cancel(id); }

    BackendMetrics metrics() const override {
        const graph::SchedulerMetrics m = scheduler_.metrics();
        return {.queued = m.queued,
                .active = m.active,
                .kv_blocks_total = m.kv_blocks_total,
                .kv_blocks_in_use = m.kv_blocks_in_use,
                .steps = m.steps,
                .prompt_tokens_cached = m.prompt_tokens_reused,
                .occupancy_last = m.occupancy_last,
                .occupancy_mean = m.occupancy_mean,
                .draft_proposed = m.draft_proposed,
                .draft_accepted = m.draft_accepted,
                .decode_turns = m.decode_turns,
                .decode_tokens = m.decode_tokens};
    }
    int64_t n_ctx() const override { return scheduler_.n_ctx(); }
    int64_t parallel() const override { return scheduler_.options().parallel; }
    std::vector<std::vector<float>> embed(std::span<const std::vector<int32_t>> texts) override {
        return embedder_.embed(texts);
    }
    int64_t n_embd() const override { return embedder_.n_embd(); }
    std::string embeddings_refused() const override { return embedder_.refused(); }
    int64_t max_queue() const override { return scheduler_.options().max_queue; }

  private:
    // The server's speculation with the request's fields over it; JobRefused naming the field when
    // they do not go together or with what the server loaded.
    graph::Speculation speculation_of(const JobSpeculation& fields) const {
        graph::Speculation s = scheduler_.options().speculation;
        if (fields.type)
            s.mode = *fields.type == "lookup" ? graph::SpecMode::Lookup
                     : *fields.type == "draft" ? graph::SpecMode::Draft
                                               : graph::SpecMode::Off;
        if (fields.n_max) s.draft_max = *fields.n_max;
        if (fields.n_min) s.draft_min = *fields.n_min;
        if (fields.ngram) s.ngram = *fields.ngram;
        const char* tuned = fields.n_max ? "speculative.n_max" : fields.n_min ? "speculative.n_min"
                            : fields.ngram ? "speculative.ngram" : nullptr;
        if (tuned && s.mode == graph::SpecMode::Off)
            throw JobRefused(std::string("'") + tuned + "' tunes speculative decoding, which is off for this request "
                             "(set 'speculative.type', or start the server with --spec)", tuned);
        if (fields.ngram && s.mode != graph::SpecMode::Lookup)
            throw JobRefused("'speculative.ngram' tunes \"lookup\", and this request's speculative.type is \"" +
                                 std::string(graph::spec_mode_name(s.mode)) + "\"",
                             "speculative.ngram");
        if (s.mode == graph::SpecMode::Draft && !scheduler_.options().draft_model)
            throw JobRefused("'speculative.type' is \"draft\" but the server has no draft model (start it with "
                             "--spec draft --model-draft FILE)", "speculative.type");
        if (s.draft_min > s.draft_max)
            throw JobRefused("speculative decoding's n_min " + std::to_string(s.draft_min) + " is more than its n_max " +
                                 std::to_string(s.draft_max),
                             fields.n_min ? "speculative.n_min" : "speculative.n_max");
        return s;
    }

    graph::Scheduler scheduler_;
    BackendEmbedder embedder_;
};

}  // namespace

std::unique_ptr<Backend> make_scheduler_backend(std::shared_ptr<const graph::Model> model,
                                                graph::SchedulerOptions options) {
    return std::make_unique<SchedulerBackend>(std::move(model), options);
}

}  // namespace graphrun::server
