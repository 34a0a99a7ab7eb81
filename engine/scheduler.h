// engine/scheduler.h — requests in, tokens out: the batch API over one engine.
//
//   Scheduler scheduler(model, {.policy = Policy::Continuous, .parallel = 8});
//   scheduler.start();                                    // an engine thread of its own
//   RequestId id = scheduler.submit({.prompt = ids, .max_tokens = 64, .stop_ids = {eos}},
//                                   [](const TokenEvent& e) { ... });   // from any thread
//   scheduler.cancel(id);                                 // from any thread
//   SchedulerMetrics m = scheduler.metrics();             // queue depth, KV blocks in use, ...
//
// Each step is one forward pass over up to `step_tokens` tokens: one token of every sequence that is
// decoding, then a chunk of the prompt being evaluated (one prompt at a time, so the next prompt can
// share the blocks of the one before; chunked, so decoding sequences never wait for a long prompt).
// The two policies differ in who may start:
//   continuous  after every step finished requests leave and waiting ones join (iteration-level)
//   static      a batch of up to `parallel` requests starts together; no one joins until all of them
//               have finished (a finished request leaves the batch, its place stays empty)
//
// Over a pipeline of N ranks (engine/pipeline.h) up to N passes are in flight: a step submits its
// batch and collects the oldest pass only once N are out, so while the last rank finishes one group
// of sequences rank 0 computes the next group's. A request with a pass in flight sits out the
// batches built meanwhile (its next token needs that pass's logits), so the decoding requests take
// turns in N groups of about equal size. That pays only when a group is big enough for its pass to
// cost well under a full one (the weights are read once per pass, whatever its tokens): with fewer
// than N x pipeline_group_min decoding requests they stay one group, decoded one pass at a time
// (prompt chunks still overlap them). Each request's sampler sees its own rows in its own order:
// tokens and bits are one process's.
//
// Speculative decoding (engine/speculation.h): a decoding request that speculates joins a pass with its
// token and the guesses of its proposer (prompt lookup, or a draft sequence on the scheduler's draft
// model), [t, d1 .. dk], within step_tokens, its context, and the tokens it may still generate. Its
// rows are sampled in order by its own sampler, each as plain decoding samples it, until a guess is
// not the token sampled; the rest are dropped from its KV cache. Stop ids, max_tokens, the context and
// the grammar act at every token as they do without guesses, so the tokens, their rows' bits and
// the seeded draws are plain decoding's, for either policy. A grammar request's guesses stop before
// the first token its grammar refuses. Over a pipeline a request's guesses go in its pass
// and it sits out until that pass is collected, as any request does.
//
// Admission reserves, for each request, the KV blocks its longest possible sequence could take
// (prompt + max_tokens, at most the context), so a running request never finds the pool empty; a
// request whose need is more than the whole pool is refused at submit, one that fits later waits.
// Prefix sharing (EngineOptions::prefix_cache) lets a prompt skip the cached blocks of a prompt that
// started the same way, evaluated earlier or still running.
//
// Threads: submit, cancel, metrics and the queries are safe from any thread. step() runs on one
// thread at a time (start() gives it one of its own). Callbacks run on the stepping thread, between
// forward passes, with no lock held, so they may call submit or cancel; keep them short.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/speculation.h"
#include "runtime/text/sampler.h"

namespace graphrun::graph {

using RequestId = uint64_t;

enum class Policy { Static, Continuous };
const char* policy_name(Policy policy);  // "static", "continuous"

enum class FinishReason {
    None,         // still running
    Stop,         // sampled one of the stop ids (the event carries it)
    Length,       // max_tokens generated
    ContextFull,  // the sequence reached the context length; OpenAI calls this "length" too
    Cancelled,    // cancel() was called
};
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "context_full", "cancelled"

struct Request {
    std::vector<int32_t> prompt{};    // token ids, BOS included if the model wants one
    SamplerParams sampling{};         // temperature 0: greedy; the seed makes sampling reproducible
    int64_t max_tokens = 16;          // tokens to generate at most, >= 1 (0 with prompt_logits: the prompt only)
    std::vector<int32_t> stop_ids{};  // generation ends when one is sampled (end-of-generation tokens)
    // Every prompt position's row of logits goes to the callback (an event with prompt_position set),
    // before any generated token: a prompt's log-probabilities (the server's `echo`). The prompt is
    // then evaluated whole, without taking blocks from the prefix cache.
    bool prompt_logits = false;
    // Speculative decoding for this request; unset: the scheduler's (SchedulerOptions::speculation).
    // SpecMode::Draft needs the scheduler's draft model.
    std::optional<Speculation> speculation{};
};

// Times on std::chrono::steady_clock, in seconds since the scheduler was made.
struct RequestTiming {
    double submitted = 0, started = 0, first_token = 0, finished = 0;
    int64_t prompt_tokens = 0;  // the prompt's length
    int64_t prompt_reused = 0;  // positions found in the prefix cache, not evaluated
    int64_t generated = 0;      // tokens sampled
};

struct TokenEvent {
    RequestId request = 0;
    int32_t token = -1;                        // the sampled token; -1 on an event without one (cancelled)
    int64_t index = 0;                         // 0 for the first generated token
    int64_t prompt_position = -1;              // >= 0: the logits of this prompt position (token -1)
    std::span<const float> logits{};           // the row it was sampled from (n_vocab), valid during the call
    FinishReason finish = FinishReason::None;  // set on the request's last event
    const RequestTiming* timing = nullptr;     // on the last event
};
using TokenCallback = std::function<void(const TokenEvent&)>;

// submit() refuses a request that can never run (the text says why, naming the field).
class RequestRefused : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};
// submit() refuses a request because the queue is full (retry later: an HTTP server answers 503).
class QueueFull : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct SchedulerOptions {
    Policy policy = Policy::Continuous;
    int64_t parallel = 4;      // sequences in a batch at most
    int64_t max_queue = 16;    // requests waiting beyond the free sequences; submit past that throws QueueFull
    int64_t n_ctx = 0;         // positions per sequence; 0: the model's, at most 2048
    int64_t kv_blocks = 0;     // 0: enough for `parallel` full contexts
    int64_t step_tokens = 64;  // tokens per forward pass at most (decode tokens + a prompt chunk)
    int n_threads = 0;
    bool prefix_cache = true;
    // Over a pipeline: the fewest decoding requests in a group that takes turns with the others (see
    // above); fewer than ranks x this, and all of them decode in one pass at a time.
    int64_t pipeline_group_min = 4;
    Speculation speculation{};  // the requests' unless they say otherwise; off by default
    // The draft model of SpecMode::Draft (its vocabulary the model's: checked by the constructor), run
    // on an engine of its own with a sequence per speculating request.
    std::shared_ptr<const Model> draft_model{};
};

struct SchedulerMetrics {
    int64_t queued = 0;  // waiting to start
    int64_t active = 0;  // holding a sequence (prompt or decoding)
    int64_t kv_blocks_total = 0;
    int64_t kv_blocks_in_use = 0;      // held by sequences
    int64_t kv_blocks_cached = 0;      // kept for their prefix, free to be evicted
    int64_t kv_blocks_peak = 0;        // most ever in use at once
    int64_t steps = 0;                 // forward passes run
    int64_t passes_in_flight_peak = 0;  // most passes in flight at once (over a pipeline: up to its ranks)
    double occupancy_last = 0;         // sequences in the last pass / parallel
    double occupancy_mean = 0;         // the mean over all passes
    int64_t prompt_tokens = 0;         // prompt tokens evaluated
    int64_t prompt_tokens_reused = 0;  // prompt positions taken from the prefix cache instead
    int64_t generated_tokens = 0;
    // Speculative decoding: tokens guessed (each evaluated in a pass), and of those, the ones kept.
    int64_t draft_proposed = 0;
    int64_t draft_accepted = 0;
    // Decoding: a request's turn in a pass (its token and its guesses), and the tokens sampled in those
    // turns; their ratio is the tokens per pass per sequence (1 without speculation).
    int64_t decode_turns = 0;
    int64_t decode_tokens = 0;
    int64_t finished = 0;  // requests ended (any reason, cancellations included)
    int64_t cancelled = 0;
};

class Scheduler {
  public:
    // Throws std::invalid_argument for options out of range, and VocabMismatch (runtime/text/
    // vocab_match.h) when the draft model's vocabulary is not the model's.
    Scheduler(std::shared_ptr<const Model> model, SchedulerOptions options = {});
    ~Scheduler();  // stops the engine thread; unfinished requests are cancelled
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Queues a request; `on_token` gets every token and then the last event. Throws RequestRefused
    // (empty prompt, a token outside the vocabulary, a prompt longer than the context, max_tokens < 1 (0 with prompt_logits),
    // more KV blocks than the pool has) or QueueFull.
    RequestId submit(Request request, TokenCallback on_token);
    // Ends a request: a queued one at once, a running one before the next forward pass (its blocks go
    // back to the pool then; a request that speculates may have had more than one token sampled by
    // the pass before, and their events come first). Its callback gets a last event with FinishReason::Cancelled. false when
    // the id is not (or no longer) known.
    bool cancel(RequestId id);

    // One forward pass (with admission before it and the callbacks after; over a pipeline, a pass
    // submitted and the oldest one collected once enough are in flight). false when there was
    // nothing to do. Call from one thread at a time, and not while start() runs.
    bool step();
    // Steps until every submitted request has finished.
    void run_until_idle();
    // A thread of its own that steps while there is work and sleeps when there is none.
    void start();
    void stop();  // joins the thread; requests not finished stay (step() or start() again)

    SchedulerMetrics metrics() const;
    bool idle() const;
    const SchedulerOptions& options() const { return options_; }
    int64_t n_ctx() const { return engine_.n_ctx(); }
    int64_t n_vocab() const { return engine_.n_vocab(); }
    int n_threads() const { return engine_.n_threads(); }
    const Model& model() const { return engine_.model(); }
    // Seconds since the scheduler was made, the clock of RequestTiming.
    double now() const;

  private:
    struct Running;
    struct StepBatch;
    int64_t blocks_for(const Request& request) const;
    void admit();
    void finish(Running& r, FinishReason reason, std::vector<std::function<void()>>& calls);
    // The phases of step(), in order.
    void apply_cancels(std::vector<std::function<void()>>& calls);
    void retire_finished(std::vector<std::unique_ptr<Running>>& retired);
    void propose_drafts();
    StepBatch build_batch();
    void sample_and_finish(const StepBatch& batch, std::span<const float> rows,
                           std::vector<std::function<void()>>& calls);
    void thread_main();

    SchedulerOptions options_;
    Engine engine_;
    std::unique_ptr<Engine> draft_engine_;  // the draft model's, when SchedulerOptions::draft_model
    const double start_time_;

    mutable std::mutex mutex_;  // guards everything below, never held while the engine runs
    std::condition_variable wake_;
    struct Queued;
    std::deque<std::unique_ptr<Queued>> queue_;
    std::vector<std::unique_ptr<Running>> running_;
    std::vector<RequestId> cancels_;
    std::deque<std::unique_ptr<StepBatch>> in_flight_;  // submitted to the engine, not yet collected
    RequestId next_id_ = 1;
    SchedulerMetrics metrics_;
    double occupancy_sum_ = 0;

    std::thread thread_;
    bool stopping_ = false;
};

}  // namespace graphrun::graph
