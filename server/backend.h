// server/backend.h — what the HTTP server runs requests on: token ids in, sampled tokens out.
//
//   uint64_t id = backend.submit({.prompt = ids, .max_tokens = 64, .stop_ids = eog},
//                                [](const JobEvent& e) { ... });   // from any thread
//   backend.cancel(id);                                             // a client went away
//
// The server needs no more of an engine than this, so its HTTP layer is tested the same way on any
// backend. The one `graphrun serve` runs is the continuous scheduler (server/scheduler_backend.h):
// up to --parallel sequences share every forward pass, beyond them a bounded queue waits.
// Callbacks run on the backend's own thread, between forward passes: they must be short.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/text/sampler.h"

namespace graphrun::server {

enum class Finish {
    None,       // still running
    Stop,       // sampled a stop id
    Length,     // max_tokens generated, or the context is full
    Cancelled,  // cancel() was called
};

// A request's speculative decoding (the body's "speculative.*" fields, docs/server.md): each field
// unset is the server's (--spec, --draft-max, --draft-min, --lookup-ngram).
struct JobSpeculation {
    std::optional<std::string> type;  // "off", "lookup" or "draft"
    std::optional<int64_t> n_min, n_max, ngram;
    bool empty() const { return !type && !n_min && !n_max && !ngram; }
};

struct Job {
    std::vector<int32_t> prompt{};    // token ids, BOS included when the model wants one
    SamplerParams sampling{};         // temperature 0: greedy
    int64_t max_tokens = 16;          // >= 1; 0 with prompt_logits: the prompt's rows, nothing generated
    std::vector<int32_t> stop_ids{};  // generation ends when one is sampled (the event carries it)
    bool prompt_logits = false;       // an event per prompt position first (echo's log-probabilities)
    JobSpeculation speculation{};
};

struct JobEvent {
    int32_t token = -1;               // the sampled token; -1 on a last event without one
    std::span<const float> logits{};  // the row it was sampled from (n_vocab), valid during the call
    Finish finish = Finish::None;     // set on the job's last event
    int64_t prompt_position = -1;     // >= 0: `logits` is this prompt position's row (prompt_logits)
};
using JobCallback = std::function<void(const JobEvent&)>;

// submit() refuses a job that can never run; the message names the field (an HTTP 400).
class JobRefused : public std::invalid_argument {
  public:
    explicit JobRefused(const std::string& message, std::string param = {})
        : std::invalid_argument(message), param_(std::move(param)) {}
    const std::string& param() const { return param_; }  // the request field at fault, when one is

  private:
    std::string param_;
};
// submit() refuses a job because every sequence is busy and the queue is full (an HTTP 503).
class BackendBusy : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct BackendMetrics {
    int64_t queued = 0;  // waiting for a sequence
    int64_t active = 0;  // holding a sequence
    int64_t kv_blocks_total = 0;
    int64_t kv_blocks_in_use = 0;
    int64_t steps = 0;          // forward passes run
    int64_t prompt_tokens_cached = 0;  // prompt positions taken from the prefix cache, not evaluated
    double occupancy_last = 0;  // sequences in the last pass / parallel
    double occupancy_mean = 0;
    int64_t draft_proposed = 0;  // speculative decoding: tokens guessed, and of those kept
    int64_t draft_accepted = 0;
    int64_t decode_turns = 0;   // a decoding sequence's turns in passes, and the tokens they sampled
    int64_t decode_tokens = 0;
};

class Backend {
  public:
    virtual ~Backend() = default;
    // Throws JobRefused or BackendBusy; otherwise `on_event` sees every token and then a last event.
    virtual uint64_t submit(Job job, JobCallback on_event) = 0;
    // Ends a job before its next forward pass (its callback gets Finish::Cancelled); false when the
    // id is no longer known.
    virtual bool cancel(uint64_t id) = 0;
    virtual BackendMetrics metrics() const = 0;
    virtual int64_t n_ctx() const = 0;     // positions per sequence
    virtual int64_t parallel() const = 0;  // sequences at once
    virtual int64_t max_queue() const = 0;
    // /v1/embeddings: each text's pooled, L2-normalised final hidden state (engine/embedding.h), n_embd()
    // floats, in order. Throws JobRefused when this backend or model serves none (the reason is
    // embeddings_refused()) or for a text it cannot take (empty, a token outside the vocabulary, more
    // tokens than n_ctx()). Safe from any thread; one call at a time, on an engine of its own.
    virtual std::vector<std::vector<float>> embed(std::span<const std::vector<int32_t>> texts) {
        (void)texts;
        throw JobRefused(embeddings_refused());
    }
    virtual int64_t n_embd() const { return 0; }  // 0: no embeddings
    // Why embed() refuses every text ("" when n_embd() > 0).
    virtual std::string embeddings_refused() const { return "this backend serves no embeddings"; }
};

}  // namespace graphrun::server
