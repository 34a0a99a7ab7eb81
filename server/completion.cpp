// server/completion.cpp — see completion.h.
#include "server/completion.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "runtime/text/grammar.h"
#include "server/api_error.h"

namespace graphrun::server {

void JobRegistry::add(uint64_t id) {
    std::lock_guard lock(mutex_);
    ids_.insert(id);
}

void JobRegistry::remove(uint64_t id) {
    std::lock_guard lock(mutex_);
    ids_.erase(id);
}

void JobRegistry::cancel_all(Backend& backend) {
    std::lock_guard lock(mutex_);
    for (const uint64_t id : ids_) backend.cancel(id);
}

namespace {

// log softmax of the row at `token`, and the `top` most likely tokens (ties: lower id first).
TokenLogprob logprob_of(std::span<const float> logits, int32_t token, int top) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (const float x : logits) sum += std::exp(double(x) - max);
    const float log_norm = max + float(std::log(sum));
    TokenLogprob out{token, logits[size_t(token)] - log_norm, {}};
    if (top > 0) {
        std::vector<int32_t> ids(logits.size());
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
        const size_t n = std::min(size_t(top), ids.size());
        std::partial_sort(ids.begin(), ids.begin() + long(n), ids.end(), [&](int32_t a, int32_t b) {
            return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
        });
        for (size_t i = 0; i < n; ++i) out.top.emplace_back(ids[i], logits[size_t(ids[i])] - log_norm);
    }
    return out;
}

std::vector<int32_t> prompt_ids(const ModelInfo& info, const CompletionRequest& r) {
    const Tokenizer& tok = info.tokenizer;
    if (r.chat) {
        const std::string text = info.chat_template.apply(r.messages, /*add_generation_prompt=*/true, r.tools);
        return tok.encode(text, tok.add_bos(), /*parse_special=*/true);
    }
    if (!r.prompt_is_ids) return tok.encode(r.prompt, tok.add_bos());
    for (size_t i = 0; i < r.prompt_ids.size(); ++i)
        if (r.prompt_ids[i] >= info.n_vocab)
            throw ApiError(400, "invalid_value",
                           "'prompt[" + std::to_string(i) + "]' is token " + std::to_string(r.prompt_ids[i]) +
                               ", outside the vocabulary of " + std::to_string(info.n_vocab),
                           "prompt[" + std::to_string(i) + "]");
    return r.prompt_ids;
}

}  // namespace

CompletionRequest choice_request(const CompletionRequest& request, int64_t i) {
    CompletionRequest r = request;
    if (r.sampling.seed != kSamplerRandomSeed) r.sampling.seed = (r.sampling.seed + uint64_t(i)) % kSamplerRandomSeed;
    return r;
}

CompletionRun::CompletionRun(const ModelInfo& info, Backend& backend, ServerMetrics& metrics, JobRegistry& jobs,
                             CompletionRequest request)
    : backend_(backend),
      metrics_(metrics),
      jobs_(jobs),
      request_(std::move(request)),
      arrival_(std::chrono::steady_clock::now()) {
    for (const LogitBias& b : request_.sampling.logit_bias)
        if (b.token >= info.n_vocab)
            throw ApiError(400, "invalid_value",
                           "'logit_bias' names token " + std::to_string(b.token) + ", outside the vocabulary of " +
                               std::to_string(info.n_vocab),
                           "logit_bias");
    prompt_ = prompt_ids(info, request_);
    const int64_t n_ctx = backend.n_ctx();
    const char* prompt_field = request_.chat ? "messages" : "prompt";
    if (prompt_.empty()) throw ApiError(400, "invalid_value", "'prompt' is empty", prompt_field);
    // The prompt alone (max_tokens 0) may fill the context; a generation needs a position more.
    if (int64_t(prompt_.size()) + (request_.max_tokens == 0 ? 0 : 1) > n_ctx)
        throw ApiError(400, "context_length_exceeded",
                       "the prompt is " + std::to_string(prompt_.size()) + " tokens long; the context holds " +
                           std::to_string(n_ctx) + " (--ctx-size), with room for at least one generated token",
                       prompt_field);

    const ChatTemplate* chat = request_.chat ? &info.chat_template : nullptr;
    Job job;
    job.prompt = prompt_;
    job.sampling = request_.sampling;
    job.speculation = request_.speculation;
    job.max_tokens = request_.max_tokens >= 0 ? request_.max_tokens : n_ctx - int64_t(prompt_.size());
    if (request_.echo) echo_text_ = request_.prompt_is_ids ? info.tokenizer.decode(prompt_) : request_.prompt;
    // max_tokens 0 asks for the prompt alone, which the backend runs as a request for its rows.
    job.prompt_logits = (request_.echo && request_.logprobs) || job.max_tokens == 0;
    const size_t max_calls = request_.parallel_tool_calls ? kMaxParallelToolCalls : 1;
    std::shared_ptr<const Grammar> grammar = request_.grammar;
    if (chat && !request_.tools.empty()) {
        tool_calls_.emplace(chat->format(), request_.tools, max_calls);
        if (request_.tool_required) {
            try {
                grammar = std::make_shared<const Grammar>(
                    grammar_parse(tool_call_gbnf(chat->format(), request_.tools, max_calls)));
            } catch (const std::invalid_argument& e) {  // JsonSchemaError, GrammarError
                throw ApiError(400, "invalid_value", std::string("the tools' call grammar is refused: ") + e.what(), "tools");
            }
        }
    }
    // The plain template ends a reply at a newline, which a grammar's value may hold (JSON's
    // whitespace): there the grammar ends the reply, with an end-of-generation token it allows only
    // once the value is complete, so a value cut at a newline is never answered as finished.
    const bool grammar_ends_reply = grammar && chat && chat->reply_must_say_something();
    text_.emplace(info.tokenizer, grammar_ends_reply ? nullptr : chat, request_.stop);
    if (grammar) {
        auto constraint = std::make_shared<GrammarConstraint>();
        constraint->grammar = grammar;
        constraint->vocab = info.grammar_vocab ? info.grammar_vocab : GrammarVocab::from_tokenizer(info.tokenizer);
        job.sampling.grammar = constraint;
    }
    if (!chat || grammar_ends_reply) {
        const auto eog = info.tokenizer.end_of_generation();
        job.stop_ids.assign(eog.begin(), eog.end());
    } else if (!chat->reply_must_say_something()) {
        job.stop_ids = ChatReplyStream(info.tokenizer, *chat).end_tokens();
    }  // plain: the end of turn is a newline, which only ends a reply that said something (ReplyText)

    const bool want = request_.logprobs;
    const int top = request_.top_logprobs;
    // Row p of the prompt gives the log-probability of prompt token p + 1 (echo).
    std::vector<int32_t> scored = request_.echo && request_.logprobs ? prompt_ : std::vector<int32_t>();
    auto on_event = [channel = channel_, want, top, scored = std::move(scored)](const JobEvent& e) {
        Event ev{e.token, e.prompt_position, e.finish, std::chrono::steady_clock::now(), {}};
        if (e.prompt_position >= 0 && size_t(e.prompt_position) + 1 < scored.size())
            ev.logprob = logprob_of(e.logits, scored[size_t(e.prompt_position) + 1], top);
        else if (want && e.token >= 0 && !e.logits.empty())
            ev.logprob = logprob_of(e.logits, e.token, top);
        {
            std::lock_guard lock(channel->mutex);
            channel->events.push_back(std::move(ev));
        }
        channel->ready.notify_all();
    };
    try {
        job_ = backend.submit(std::move(job), std::move(on_event));
    } catch (const BackendBusy& e) {
        // The backend's words say what is full ("the queue is full (3 requests waiting, 4 running)").
        throw ApiError(503, "server_busy", std::string("every sequence is busy: ") + e.what() + "; retry after a moment");
    } catch (const JobRefused& e) {
        throw ApiError(400, "invalid_value", e.what(), e.param());
    } catch (const std::invalid_argument& e) {  // sampler_validate
        throw ApiError(400, "invalid_value", e.what());
    }
    jobs_.add(job_);
}

CompletionRun::~CompletionRun() {
    if (finished_ || !job_) return;
    backend_.cancel(job_);
    jobs_.remove(job_);
    // Its client went away: the tokens generated still count, those read and those not read yet
    // (past a stop string, none are counted, as in next()).
    int64_t unread = 0;
    {
        std::lock_guard lock(channel_->mutex);
        for (const Event& ev : channel_->events)
            if (ev.token >= 0 && !text_done_) ++unread;
    }
    metrics_.count_tokens(prompt_tokens(), completion_tokens_ + unread);
}

void CompletionRun::cancel() {
    if (!finished_) backend_.cancel(job_);
}

std::optional<CompletionRun::Piece> CompletionRun::next(std::chrono::milliseconds wait) {
    std::deque<Event> events;
    {
        std::unique_lock lock(channel_->mutex);
        if (!channel_->ready.wait_for(lock, wait, [&] { return !channel_->events.empty(); })) return std::nullopt;
        events.swap(channel_->events);
    }
    Piece piece;
    for (Event& ev : events) {
        if (finished_) break;
        if (ev.prompt_position >= 0) {
            if (request_.logprobs && size_t(ev.prompt_position) + 1 < prompt_.size())
                prompt_logprobs_.push_back(std::move(ev.logprob));
            ++prompt_rows_;
            continue;
        }
        if (ev.token >= 0 && !text_done_) {
            ++completion_tokens_;
            if (completion_tokens_ == 1)
                metrics_.observe_first_token(std::chrono::duration<double>(ev.at - arrival_).count());
            else
                metrics_.observe_token(std::chrono::duration<double>(ev.at - last_token_).count());
            last_token_ = ev.at;
            if (request_.logprobs) held_logprobs_.emplace_back(text_->received(), std::move(ev.logprob));
            if (ev.finish != Finish::Stop) {  // a stop id is not part of the text
                ReplyText::Step step = text_->push(ev.token);
                piece.text += step.text;
                if (step.done) {
                    text_done_ = true;
                    finish_reason_ = "stop";
                    backend_.cancel(job_);  // its sequence is free before the next forward pass
                }
            }
        }
        if (ev.finish == Finish::None) continue;
        finished_ = true;
        jobs_.remove(job_);
        metrics_.count_tokens(prompt_tokens(), completion_tokens_);
        if (!text_done_) {
            piece.text += text_->finish();
            // Cancelled from outside (a drain's deadline): the answer was cut off, as by a length limit.
            finish_reason_ = ev.finish == Finish::Stop ? "stop" : "length";
        }
        piece.last = true;
        piece.finish_reason = finish_reason_;
    }
    if (tool_calls_) {
        piece.text = tool_calls_->push(piece.text);
        if (piece.last) {
            ToolCallReply reply = tool_calls_->finish();
            piece.text += reply.content;
            piece.tool_calls = std::move(reply.calls);
            // A reply cut off keeps "length" with the calls it completed: more may have followed.
            if (!piece.tool_calls.empty() && std::string_view(piece.finish_reason) == "stop")
                piece.finish_reason = "tool_calls";
        }
    }
    // The tokens whose text has begun to be shown; at the end, all of them but those a stop string or
    // the end of the turn left out (text " unto" from tokens " unto", " him" with stop " him": " unto").
    // Tokens that add no text (a stop id at the end of a completion) go with the last piece.
    const size_t shown = text_->shown().size();
    while (!held_logprobs_.empty() &&
           (held_logprobs_.front().first < shown || (finished_ && !text_done_))) {
        piece.logprobs.push_back(std::move(held_logprobs_.front().second));
        held_logprobs_.pop_front();
    }
    if (finished_) held_logprobs_.clear();
    return piece;
}

}  // namespace graphrun::server
