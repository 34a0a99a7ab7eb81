// server/completion.h — one completion request, from its checked fields to the pieces of its answer.
//
//   CompletionRun run(info, backend, jobs, request);         // tokenizes, checks, submits
//   while (auto piece = run.next(1s)) { send(piece->text); if (piece->last) break; }
//
// The prompt is the text (BOS first when the tokenizer asks for it, as in the CLI) or, for chat, the
// messages rendered by the model's chat template (runtime/text/chat_template.h). The job stops at the
// end-of-generation tokens (chat: the template's end of turn), at a stop string, at max_tokens or at
// the end of the context; a stop found in the text cancels the job at once, so its sequence is free
// before the next forward pass. With tools (chat), the reply's calls are read out of its text at the
// end (runtime/text/tool_calls.h); tool_choice "required" or a named function constrains the reply to
// calls by a grammar. Destroying an unfinished run cancels its job (a client went away).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/text/tool_calls.h"
#include "server/api_request.h"
#include "server/backend.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/reply_text.h"

namespace graphrun::server {

// The jobs of requests in flight, so a drain can cancel what is still running at its deadline.
class JobRegistry {
  public:
    void add(uint64_t id);
    void remove(uint64_t id);
    void cancel_all(Backend& backend);

  private:
    std::mutex mutex_;
    std::set<uint64_t> ids_;
};

struct TokenLogprob {
    int32_t token = 0;
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;  // the most likely tokens and their log-probabilities
};

// The request of choice `i` of an `n` > 1 request: its seed is the request's + i (wrapping to 0
// before 2^32 - 1, the random seed's mark), so choice i gives what a request alone with that seed
// gives; a random seed stays random for each.
CompletionRequest choice_request(const CompletionRequest& request, int64_t i);

class CompletionRun {
  public:
    // Throws ApiError: 400 for a prompt that is empty or does not fit the context, 503 when busy.
    CompletionRun(const ModelInfo& info, Backend& backend, ServerMetrics& metrics, JobRegistry& jobs,
                  CompletionRequest request);
    ~CompletionRun();
    CompletionRun(const CompletionRun&) = delete;
    CompletionRun& operator=(const CompletionRun&) = delete;

    struct Piece {
        std::string text;  // whole UTF-8 characters
        std::vector<TokenLogprob> logprobs;  // the tokens this piece covers (when logprobs were asked for)
        bool last = false;
        const char* finish_reason = nullptr;  // on the last piece: "stop", "length" or "tool_calls"
        std::vector<ChatToolCall> tool_calls;  // on the last piece: the calls read from the reply (tools)
    };
    // What the tokens that came since the last call add; nullopt when none came within `wait`.
    std::optional<Piece> next(std::chrono::milliseconds wait);
    void cancel();

    const CompletionRequest& request() const { return request_; }
    int64_t prompt_tokens() const { return int64_t(prompt_.size()); }
    const std::vector<int32_t>& prompt() const { return prompt_; }
    // echo: the prompt's text (the prompt string as sent, or the token ids' text), and with logprobs
    // each prompt token's log-probability from the positions before it (the first has none: entry i
    // is prompt token i + 1), complete once echo_ready().
    const std::string& echo_text() const { return echo_text_; }
    const std::vector<TokenLogprob>& prompt_logprobs() const { return prompt_logprobs_; }
    bool echo_ready() const { return !request_.logprobs || prompt_rows_ == prompt_.size(); }
    int64_t completion_tokens() const { return completion_tokens_; }
    bool finished() const { return finished_; }

  private:
    struct Event {
        int32_t token;
        int64_t prompt_position;  // >= 0: `logprob` is the next prompt token's (echo)
        Finish finish;
        std::chrono::steady_clock::time_point at;
        TokenLogprob logprob;
    };
    struct Channel {
        std::mutex mutex;
        std::condition_variable ready;
        std::deque<Event> events;
    };

    Backend& backend_;
    ServerMetrics& metrics_;
    JobRegistry& jobs_;
    CompletionRequest request_;
    std::vector<int32_t> prompt_;
    std::string echo_text_;
    std::vector<TokenLogprob> prompt_logprobs_;
    size_t prompt_rows_ = 0;  // prompt positions whose row came
    std::shared_ptr<Channel> channel_ = std::make_shared<Channel>();
    std::optional<ReplyText> text_;
    std::optional<ToolCallStream> tool_calls_;  // chat with tools: the reply's calls held out of its text
    // Log-probabilities of tokens whose text is not shown yet (a possible stop string's beginning),
    // with where their text begins (ReplyText::received()): released with the text, or dropped when
    // a stop string or the end of the turn cuts it off.
    std::deque<std::pair<size_t, TokenLogprob>> held_logprobs_;
    uint64_t job_ = 0;
    bool finished_ = false;    // the last event came
    bool text_done_ = false;   // a stop string or end of turn ended the text (the job was cancelled)
    const char* finish_reason_ = nullptr;
    int64_t completion_tokens_ = 0;
    std::chrono::steady_clock::time_point arrival_, last_token_;
};

}  // namespace graphrun::server
