// engine/scheduler.cpp — admission, the step builder, sampling and the callbacks.
#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "runtime/checked_math.h"
#include "runtime/text/vocab_match.h"

namespace graphrun::graph {

namespace {

double steady_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TokenEvent cancelled_event(RequestId id, const RequestTiming* timing) {
    TokenEvent e;
    e.request = id;
    e.finish = FinishReason::Cancelled;
    e.timing = timing;
    return e;
}

}  // namespace

const char* policy_name(Policy policy) {
    return policy == Policy::Static ? "static" : "continuous";
}

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::None:
            return "none";
        case FinishReason::Stop:
            return "stop";
        case FinishReason::Length:
            return "length";
        case FinishReason::ContextFull:
            return "context_full";
        case FinishReason::Cancelled:
            return "cancelled";
    }
    return "?";
}

struct Scheduler::Queued {
    RequestId id = 0;
    Request request;
    TokenCallback on_token;
    double submitted = 0;
};

struct Scheduler::Running {
    RequestId id = 0;
    Request request;
    TokenCallback on_token;
    Sampler sampler;
    SeqId seq = -1;
    bool prompt_started = false;
    size_t fed = 0;        // prompt positions the sequence holds (evaluated or reused)
    int32_t pending = -1;  // the last sampled token, fed at the next step
    int64_t reserve = 0;   // blocks admitted for this request
    RequestTiming timing;
    FinishReason finished = FinishReason::None;
    bool in_flight = false;  // has tokens in a pass submitted and not yet collected
    // Speculative decoding: the proposer and history (null when the request does not speculate), the
    // positions the sequence held before its turn in the pass, and the row of that turn to sample next
    // (rows past a rejected guess are never sampled).
    std::unique_ptr<SequenceSpeculation> spec;
    int64_t turn_start = 0;
    int64_t next_row = 0;

    Running(Queued&& q, int32_t n_vocab)
        : id(q.id),
          request(std::move(q.request)),
          on_token(std::move(q.on_token)),
          sampler(request.sampling, n_vocab) {
        timing.submitted = q.submitted;
        timing.prompt_tokens = int64_t(request.prompt.size());
        for (int32_t t : request.prompt) sampler.accept(t);  // repetition penalties see the prompt
    }
    bool decoding() const { return fed == request.prompt.size() && pending >= 0; }
};

Scheduler::Scheduler(std::shared_ptr<const Model> model, SchedulerOptions options)
    : options_(options),
      engine_(std::move(model), {.n_ctx = options.n_ctx,
                                 .n_seq = options.parallel,
                                 .kv_blocks = options.kv_blocks,
                                 .n_threads = options.n_threads,
                                 .max_batch = options.step_tokens,
                                 .prefix_cache = options.prefix_cache}),
      start_time_(steady_seconds()) {
    if (options_.parallel < 1 || options_.parallel > kMaxSequences)
        throw std::invalid_argument("--parallel " + std::to_string(options_.parallel) + " is outside 1 .. " +
                                    std::to_string(kMaxSequences));
    if (options_.step_tokens < options_.parallel)
        throw std::invalid_argument("step_tokens " + std::to_string(options_.step_tokens) +
                                    " must be at least --parallel " + std::to_string(options_.parallel) +
                                    " (every decoding sequence gets a token per step)");
    if (options_.max_queue < 0) throw std::invalid_argument("max_queue must not be negative");
    validate_speculation(options_.speculation);
    if (options_.draft_model) {
        // Guesses are the draft's token ids, fed to this model as they are.
        require_same_vocabulary(engine_.model().file(), options_.draft_model->file());
        draft_engine_ = std::make_unique<Engine>(
            options_.draft_model, EngineOptions{.n_ctx = engine_.n_ctx(),
                                                .n_seq = options_.parallel,
                                                .n_threads = options_.n_threads});
        if (draft_engine_->n_vocab() != engine_.n_vocab())
            throw std::invalid_argument("the draft model's logits are " + std::to_string(draft_engine_->n_vocab()) +
                                        " wide, the model's " + std::to_string(engine_.n_vocab()));
    } else if (options_.speculation.mode == SpecMode::Draft) {
        throw std::invalid_argument("--spec draft needs the draft model: give --model-draft FILE");
    }
    metrics_.kv_blocks_total = engine_.pool().n_blocks();
}

Scheduler::~Scheduler() {
    stop();
}

double Scheduler::now() const {
    return steady_seconds() - start_time_;
}

// The blocks the longest sequence this request can grow to may take: its positions (the prompt and
// every generated token but the last, at most the context) and one for copying a shared block.
int64_t Scheduler::blocks_for(const Request& request) const {
    const int64_t positions =
        std::min<int64_t>(engine_.n_ctx(), int64_t(request.prompt.size()) + request.max_tokens);
    return ceil_div(positions, kKvBlockSize) + 1;
}

RequestId Scheduler::submit(Request request, TokenCallback on_token) {
    const int64_t n_prompt = int64_t(request.prompt.size());
    if (n_prompt == 0) throw RequestRefused("prompt: empty (at least one token is needed)");
    for (size_t i = 0; i < request.prompt.size(); ++i)
        if (request.prompt[i] < 0 || request.prompt[i] >= engine_.n_vocab())
            throw RequestRefused("prompt: token " + std::to_string(i) + " has id " +
                                 std::to_string(request.prompt[i]) + ", outside the vocabulary of " +
                                 std::to_string(engine_.n_vocab()));
    if (n_prompt > engine_.n_ctx())
        throw RequestRefused("prompt: " + std::to_string(n_prompt) + " tokens do not fit in the context of " +
                             std::to_string(engine_.n_ctx()) + " positions");
    // A request for its prompt's rows may generate nothing; any other must generate something.
    const int64_t min_tokens = request.prompt_logits ? 0 : 1;
    if (request.max_tokens < min_tokens || request.max_tokens > kMaxContext)
        throw RequestRefused("max_tokens: " + std::to_string(request.max_tokens) + " is outside " +
                             std::to_string(min_tokens) + " .. " +
                             std::to_string(kMaxContext));
    try {
        sampler_validate(request.sampling);
    } catch (const std::invalid_argument& e) {
        throw RequestRefused(std::string("sampling: ") + e.what());
    }
    if (request.speculation) {
        try {
            validate_speculation(*request.speculation);
        } catch (const std::invalid_argument& e) {
            throw RequestRefused(std::string("speculation: ") + e.what());
        }
        if (request.speculation->mode == SpecMode::Draft && !draft_engine_)
            throw RequestRefused("speculation: draft needs a draft model, and none was loaded (--model-draft)");
    }
    const int64_t blocks = blocks_for(request);
    if (blocks > engine_.pool().n_blocks())
        throw RequestRefused("the request may need " + std::to_string(blocks) + " KV blocks, the pool has " +
                             std::to_string(engine_.pool().n_blocks()));
    std::lock_guard lock(mutex_);
    // A request that a free sequence will take at the next step is not waiting, so --queue 0 still
    // runs `parallel` requests at once; a finished request's sequence is free before it is retired.
    const int64_t busy = std::count_if(running_.begin(), running_.end(),
                                       [](const auto& r) { return r->finished == FinishReason::None; });
    const int64_t free_sequences = std::max<int64_t>(0, options_.parallel - busy);
    if (int64_t(queue_.size()) >= options_.max_queue + free_sequences)
        throw QueueFull("the queue is full (" + std::to_string(queue_.size()) + " requests waiting, " +
                        std::to_string(busy) + " running)");
    auto q = std::make_unique<Queued>();
    q->id = next_id_++;
    q->request = std::move(request);
    q->on_token = std::move(on_token);
    q->submitted = now();
    const RequestId id = q->id;
    queue_.push_back(std::move(q));
    metrics_.queued = int64_t(queue_.size());
    wake_.notify_all();
    return id;
}

bool Scheduler::cancel(RequestId id) {
    std::unique_ptr<Queued> removed;
    {
        std::lock_guard lock(mutex_);
        auto it = std::find_if(queue_.begin(), queue_.end(), [&](const auto& q) { return q->id == id; });
        if (it != queue_.end()) {
            removed = std::move(*it);
            queue_.erase(it);
            metrics_.queued = int64_t(queue_.size());
            ++metrics_.finished;
            ++metrics_.cancelled;
        } else {
            const bool running = std::any_of(running_.begin(), running_.end(), [&](const auto& r) {
                return r->id == id && r->finished == FinishReason::None;
            });
            if (!running) return false;
            cancels_.push_back(id);
            wake_.notify_all();
            return true;
        }
    }
    RequestTiming timing;
    timing.submitted = removed->submitted;
    timing.finished = now();
    timing.prompt_tokens = int64_t(removed->request.prompt.size());
    if (removed->on_token) removed->on_token(cancelled_event(id, &timing));
    return true;
}

// Under the lock: queued requests become running while the policy lets them and the pool can hold
// their worst case next to everyone else's.
void Scheduler::admit() {
    if (options_.policy == Policy::Static && !running_.empty()) return;  // the batch runs to its end
    int64_t outstanding = 0;
    for (const auto& r : running_)
        outstanding += std::max<int64_t>(
            0, r->reserve - (r->seq >= 0 ? int64_t(engine_.block_table(r->seq).size()) : 0));
    while (!queue_.empty() && int64_t(running_.size()) < options_.parallel) {
        const int64_t need = blocks_for(queue_.front()->request);
        if (engine_.pool().n_available() - outstanding < need) break;  // waits for blocks to come back
        auto r = std::make_unique<Running>(std::move(*queue_.front()), int32_t(engine_.n_vocab()));
        queue_.pop_front();
        r->reserve = need;
        const Speculation& spec = r->request.speculation.value_or(options_.speculation);
        if (spec.mode != SpecMode::Off)
            r->spec = std::make_unique<SequenceSpeculation>(spec, draft_engine_.get(), r->request.prompt);
        r->timing.started = now();
        outstanding += need;
        running_.push_back(std::move(r));
    }
    metrics_.queued = int64_t(queue_.size());
}

// Under the lock: ends the request, gives its blocks back and queues its last callback.
void Scheduler::finish(Running& r, FinishReason reason, std::vector<std::function<void()>>& calls) {
    r.finished = reason;
    r.timing.finished = now();
    if (r.seq >= 0) engine_.remove_sequence(r.seq);
    r.seq = -1;
    ++metrics_.finished;
    if (reason == FinishReason::Cancelled) {
        ++metrics_.cancelled;
        Running* p = &r;
        calls.push_back([p] {
            if (p->on_token) p->on_token(cancelled_event(p->id, &p->timing));
        });
    }
}

// A step's batch: the tokens of one forward pass and the request each row of logits is for.
struct Scheduler::StepBatch {
    std::vector<BatchToken> tokens;
    std::vector<Running*> owners;  // the request of each row of logits
    std::vector<int64_t> prompt_positions;  // per row: the prompt position it is for (prompt_logits), or -1
    std::vector<Running*> members;  // every request with a token in the batch (in flight until collected)
    std::vector<int64_t> turn_rows;  // per row of a decoding turn: 0 for the fed token, j after guess j; -1
    int64_t sequences = 0;         // sequences with a token in the batch
};

// Under the lock: cancelled requests end before the batch is built; one with a pass in flight ends
// once that pass is collected (its sequence is still being computed on the other ranks).
void Scheduler::apply_cancels(std::vector<std::function<void()>>& calls) {
    std::vector<RequestId> later;
    for (RequestId id : cancels_)
        for (auto& r : running_)
            if (r->id == id && r->finished == FinishReason::None) {
                if (r->in_flight)
                    later.push_back(id);
                else
                    finish(*r, FinishReason::Cancelled, calls);
            }
    cancels_ = std::move(later);
}

// Under the lock: finished requests leave the running set (kept alive in `retired` until their
// callbacks ran) and the metrics follow.
void Scheduler::retire_finished(std::vector<std::unique_ptr<Running>>& retired) {
    for (auto& r : running_)
        if (r->finished != FinishReason::None && !r->in_flight) retired.push_back(std::move(r));
    std::erase(running_, nullptr);
    metrics_.active = int64_t(running_.size());
    metrics_.kv_blocks_in_use = engine_.pool().n_in_use();
    metrics_.kv_blocks_cached = engine_.pool().n_cached();
    metrics_.kv_blocks_peak = std::max(metrics_.kv_blocks_peak, metrics_.kv_blocks_in_use);
}

// Under the lock: decode tokens first (static: only once every prompt of the batch is in), then one
// prompt's chunk in what is left of step_tokens. Requests with a pass in flight sit this one out.
Scheduler::StepBatch Scheduler::build_batch() {
    StepBatch batch;
    Running* prompt = nullptr;
    for (auto& r : running_)
        if (!r->in_flight && r->fed < r->request.prompt.size()) {
            prompt = r.get();
            break;
        }
    const bool decode_now = options_.policy == Policy::Continuous || prompt == nullptr;
    // Over a pipeline the decoding requests take turns in groups (scheduler.h). A group goes once its
    // requests are back (at least the smallest group's count), never as a few stragglers.
    int64_t n_decoding = 0, n_ready = 0;
    for (auto& r : running_)
        if (r->decoding()) {
            ++n_decoding;
            n_ready += r->in_flight ? 0 : 1;
        }
    const int64_t depth = engine_.pipeline_depth();
    const int64_t groups = depth > 1 && n_decoding >= depth * options_.pipeline_group_min ? depth : 1;
    const int64_t group_max = (n_decoding + groups - 1) / groups;
    int64_t decode_room = decode_now && n_ready >= n_decoding / groups ? group_max : 0;
    int64_t decoding_left = 0;  // decoding requests this pass takes, still to place (a token each)
    for (auto& r : running_)
        decoding_left += !r->in_flight && r->decoding() ? 1 : 0;
    decoding_left = std::min(decoding_left, decode_room);
    for (auto& r : running_)
        if (decode_room > 0 && !r->in_flight && r->decoding()) {
            --decode_room;
            --decoding_left;
            r->turn_start = engine_.length(r->seq);
            r->next_row = 0;
            batch.tokens.push_back({r->seq, r->pending, true});
            batch.owners.push_back(r.get());
            batch.members.push_back(r.get());
            batch.prompt_positions.push_back(-1);
            batch.turn_rows.push_back(0);
            ++batch.sequences;
            ++metrics_.decode_turns;
            if (!r->spec) continue;
            // The guesses follow their token, as far as the pass has room after a token for each of the
            // decoding requests still to come.
            r->spec->keep(size_t(std::max<int64_t>(
                0, options_.step_tokens - int64_t(batch.tokens.size()) - decoding_left)));
            const std::span<const int32_t> guesses = r->spec->draft();
            for (size_t j = 0; j < guesses.size(); ++j) {
                batch.tokens.push_back({r->seq, guesses[j], true});
                batch.owners.push_back(r.get());
                batch.prompt_positions.push_back(-1);
                batch.turn_rows.push_back(int64_t(j) + 1);
            }
            metrics_.draft_proposed += int64_t(guesses.size());
        } else if (r->spec && !r->in_flight) {
            r->spec->keep(0);  // not in this pass: its guesses, if any, were for nothing
        }
    const int64_t budget = options_.step_tokens - int64_t(batch.tokens.size());
    if (prompt && budget > 0) {
        if (!prompt->prompt_started) {
            prompt->prompt_started = true;
            prompt->seq = engine_.add_sequence();
            // Rows of every prompt position are wanted: none may come from the cache.
            if (!prompt->request.prompt_logits)
                prompt->fed = size_t(engine_.reuse_prefix(prompt->seq, prompt->request.prompt));
            prompt->timing.prompt_reused = int64_t(prompt->fed);
            metrics_.prompt_tokens_reused += int64_t(prompt->fed);
        }
        const size_t n = std::min(prompt->request.prompt.size() - prompt->fed, size_t(budget));
        for (size_t i = 0; i < n; ++i) {
            const bool last = prompt->fed + 1 == prompt->request.prompt.size();
            const bool row = last || prompt->request.prompt_logits;
            if (row) {
                batch.owners.push_back(prompt);
                batch.prompt_positions.push_back(prompt->request.prompt_logits ? int64_t(prompt->fed) : -1);
                batch.turn_rows.push_back(-1);
            }
            batch.tokens.push_back({prompt->seq, prompt->request.prompt[prompt->fed++], row});
        }
        metrics_.prompt_tokens += int64_t(n);
        batch.members.push_back(prompt);
        ++batch.sequences;
    }
    for (Running* r : batch.members) r->in_flight = true;
    return batch;
}

// Without the lock, on the stepping thread (the only one that touches a running request's proposer,
// its sampler and the engines): the guesses of every request about to decode, each limited by its
// context, the tokens it may still generate, and its share of the pass (a token for every decoding
// request first, the rest split evenly). build_batch() puts them after the requests' tokens.
void Scheduler::propose_drafts() {
    bool prompt_waiting = false;
    int64_t decoding = 0;
    for (auto& r : running_) {
        prompt_waiting = prompt_waiting || r->fed < r->request.prompt.size();
        decoding += r->decoding() && !r->in_flight ? 1 : 0;
    }
    if (decoding == 0 || (options_.policy == Policy::Static && prompt_waiting)) return;
    const int64_t share = (options_.step_tokens - decoding) / decoding;
    for (auto& r : running_) {
        if (!r->spec || !r->decoding() || r->in_flight) continue;  // a pass in flight holds its guesses
        // The fed token takes position length(seq); guess j position length + j, inside the context;
        // a guess is only of use if a token may still come after it.
        const int64_t room = std::min({engine_.n_ctx() - engine_.length(r->seq) - 1,
                                       r->request.max_tokens - r->timing.generated - 1, share});
        try {
            r->spec->propose(room, r->sampler);
        } catch (const KvPoolFull&) {
            r->spec->keep(0);  // the draft model's cache is full for now: this turn goes unguessed
        }
    }
}

// Under the lock, after the forward pass: a token sampled from each row of logits, the requests that
// stop, reach max_tokens or fill the context finished, and each token's callback queued. A decoding
// turn's rows are sampled in order while its guesses are the tokens sampled; then the guesses' positions
// past the last kept token leave the KV cache, and the rows after it are not looked at.
void Scheduler::sample_and_finish(const StepBatch& batch, std::span<const float> rows,
                                  std::vector<std::function<void()>>& calls) {
    const size_t n_vocab = size_t(engine_.n_vocab());
    const double t = now();
    for (Running* r : batch.members) r->in_flight = false;
    for (size_t i = 0; i < batch.owners.size(); ++i) {
        Running& r = *batch.owners[i];
        if (r.finished != FinishReason::None) continue;  // ended at an earlier row of this batch
        const int64_t turn_row = batch.turn_rows[i];
        if (turn_row >= 0 && turn_row != r.next_row) continue;  // past a rejected guess
        const std::span<const float> row = rows.subspan(i * n_vocab, n_vocab);
        if (const int64_t p = batch.prompt_positions[i]; p >= 0) {
            Running* rp = &r;
            calls.push_back([rp, p, row] {
                if (rp->on_token) rp->on_token({.request = rp->id, .prompt_position = p, .logits = row});
            });
            if (size_t(p) + 1 < r.request.prompt.size()) continue;
        }
        if (r.request.max_tokens == 0) {  // the prompt only: no token is sampled
            finish(r, FinishReason::Length, calls);
            Running* rp = &r;
            calls.push_back([rp] {
                if (rp->on_token)
                    rp->on_token({.request = rp->id, .finish = FinishReason::Length, .timing = &rp->timing});
            });
            continue;
        }
        int32_t token = -1;
        try {
            token = r.sampler.sample(row);
        } catch (const std::exception&) {
            // A NaN row, or a grammar that allows no token of the vocabulary (grammar_vocab.h): this
            // request ends as cancelled, the others go on (as in the server's serial backend).
            finish(r, FinishReason::Cancelled, calls);
            continue;
        }
        r.sampler.accept(token);
        const int64_t index = r.timing.generated++;
        if (index == 0) r.timing.first_token = t;
        ++metrics_.generated_tokens;
        if (turn_row >= 0) ++metrics_.decode_tokens;
        if (r.spec) r.spec->sampled(token);
        // The positions plain decoding would hold now: those before this turn, its fed token and the
        // guesses kept before this row (the guesses after it are in the cache too, for now).
        const int64_t held = turn_row >= 0 ? r.turn_start + turn_row + 1 : engine_.length(r.seq);
        FinishReason reason = FinishReason::None;
        if (std::find(r.request.stop_ids.begin(), r.request.stop_ids.end(), token) !=
            r.request.stop_ids.end())
            reason = FinishReason::Stop;
        else if (r.timing.generated >= r.request.max_tokens)
            reason = FinishReason::Length;
        else if (held >= engine_.n_ctx())
            reason = FinishReason::ContextFull;  // no position left to feed the token back
        r.pending = token;
        if (turn_row >= 0 && r.spec) {
            const std::span<const int32_t> guesses = r.spec->draft();
            if (reason == FinishReason::None && size_t(turn_row) < guesses.size() &&
                token == guesses[size_t(turn_row)]) {
                ++r.next_row;  // already fed at the next position: its row holds the next token's logits
                ++metrics_.draft_accepted;
            } else {
                r.spec->verified(turn_row);
                if (reason == FinishReason::None && engine_.length(r.seq) > held) engine_.truncate(r.seq, held);
            }
        }
        if (reason != FinishReason::None) finish(r, reason, calls);
        Running* p = &r;
        calls.push_back([p, token, index, row, reason] {
            if (p->on_token)
                p->on_token({.request = p->id,
                             .token = token,
                             .index = index,
                             .logits = row,
                             .finish = reason,
                             .timing = reason == FinishReason::None ? nullptr : &p->timing});
        });
    }
    ++metrics_.steps;
    metrics_.occupancy_last = double(batch.sequences) / double(options_.parallel);
    occupancy_sum_ += metrics_.occupancy_last;
    metrics_.occupancy_mean = occupancy_sum_ / double(metrics_.steps);
}

bool Scheduler::step() {
    std::vector<std::function<void()>> calls;
    std::vector<std::unique_ptr<Running>> retired;  // finished: kept alive until their callbacks ran
    std::unique_lock lock(mutex_);
    apply_cancels(calls);
    retire_finished(retired);
    admit();
    // Guesses are made without the lock: a draft model's passes must not hold up submit and cancel.
    // Only this thread changes running_ and what its requests hold.
    lock.unlock();
    propose_drafts();
    lock.lock();
    StepBatch batch = build_batch();
    const bool submitted = !batch.tokens.empty();
    // The forward passes, without the lock: submit, cancel and metrics go on meanwhile. Only this
    // thread touches the engine and the running requests. Over a pipeline, passes stay in flight
    // until there are as many as ranks: rank 0 computes this batch while the others finish the ones
    // before, and the oldest is collected. Otherwise the batch submitted is the one collected.
    std::unique_ptr<StepBatch> collected;
    if (submitted) {
        lock.unlock();
        engine_.submit(batch.tokens);
        lock.lock();
        in_flight_.push_back(std::make_unique<StepBatch>(std::move(batch)));
        metrics_.passes_in_flight_peak = std::max(metrics_.passes_in_flight_peak, int64_t(in_flight_.size()));
    }
    if (!in_flight_.empty() && (!submitted || int64_t(in_flight_.size()) >= engine_.pipeline_depth())) {
        collected = std::move(in_flight_.front());
        in_flight_.pop_front();
        lock.unlock();
        const std::span<const float> rows = engine_.collect();
        lock.lock();
        sample_and_finish(*collected, rows, calls);
    }
    retire_finished(retired);
    // Callbacks without the lock (they may submit or cancel); the engine's rows stay valid until the
    // next collect, which this thread reaches only after they return.
    lock.unlock();
    for (auto& call : calls) call();
    return submitted || collected || !calls.empty();
}

void Scheduler::run_until_idle() {
    while (step() || !idle()) {
    }
}

bool Scheduler::idle() const {
    std::lock_guard lock(mutex_);
    return queue_.empty() && running_.empty() && cancels_.empty();
}

SchedulerMetrics Scheduler::metrics() const {
    std::lock_guard lock(mutex_);
    return metrics_;
}

void Scheduler::thread_main() {
    while (true) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(
                lock, [&] { return stopping_ || !queue_.empty() || !running_.empty() || !cancels_.empty(); });
            if (stopping_) return;
        }
        if (!step()) {
            // Queued work that cannot start (its blocks are not free yet) waits for the next change.
            std::unique_lock lock(mutex_);
            wake_.wait_for(lock, std::chrono::milliseconds(20));
        }
    }
}

void Scheduler::start() {
    std::lock_guard lock(mutex_);
    if (thread_.joinable()) return;
    stopping_ = false;
    thread_ = std::thread([this] { thread_main(); });
}

void Scheduler::stop() {
    {
        std::lock_guard lock(mutex_);
        if (!thread_.joinable()) return;
        stopping_ = true;
        wake_.notify_all();
    }
    thread_.join();
}

}  // namespace graphrun::graph
