// server/completion_routes.cpp — POST /v1/completions and /v1/chat/completions, whole or streamed.
//
// A stream is server-sent events: "data: {chunk}\n\n" per piece of text (whole UTF-8 characters),
// finish_reason null until the last chunk, an extra usage chunk with stream_options.include_usage,
// then "data: [DONE]\n\n". While no token comes (a long prompt, a full queue) a comment line
// ": keep-alive" goes out every second, so a client that went away is noticed: a failed write
// ends the stream and cancels the job, whose sequence and KV blocks are free before the next pass.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_request.h"
#include "server/api_response.h"
#include "server/routes.h"

namespace graphrun::server {

using nlohmann::json;

namespace {

constexpr std::chrono::milliseconds kHeartbeat{1000};

// Counts a completion in flight from its start to the end of its answer (a stream outlives the handler).
class InFlight {
  public:
    explicit InFlight(std::atomic<int64_t>& n) : n_(n) { ++n_; }
    ~InFlight() { --n_; }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

  private:
    std::atomic<int64_t>& n_;
};

bool send_event(httplib::DataSink& sink, const std::string& data) {
    const std::string line = "data: " + data + "\n\n";
    return sink.write(line.data(), line.size());
}

void answer_whole(ServerContext& ctx, CompletionRun& run, const AnswerHeader& h, httplib::Response& res) {
    std::string text;
    std::vector<TokenLogprob> logprobs;
    const char* finish = nullptr;
    while (true) {
        std::optional<CompletionRun::Piece> piece = run.next(kHeartbeat);
        if (!piece) continue;
        text += piece->text;
        logprobs.insert(logprobs.end(), piece->logprobs.begin(), piece->logprobs.end());
        if (piece->last) {
            finish = piece->finish_reason;
            break;
        }
    }
    const CompletionRequest& r = run.request();
    const json lp = r.logprobs ? logprobs_json(ctx.info.tokenizer, logprobs, r.chat, 0) : json(nullptr);
    res.set_content(dump(answer_json(h, text, finish, lp, run.prompt_tokens(), run.completion_tokens())),
                    "application/json");
}

void answer_stream(ServerContext& ctx, std::shared_ptr<CompletionRun> run, const AnswerHeader& h,
                   std::shared_ptr<InFlight> in_flight, const std::string& endpoint, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto provider = [&ctx, run, h, in_flight, first = true, offset = size_t(0)](size_t,
                                                                              httplib::DataSink& sink) mutable {
        const CompletionRequest& r = run->request();
        std::optional<CompletionRun::Piece> piece = run->next(kHeartbeat);
        if (!piece) {
            static const char kKeepAlive[] = ": keep-alive\n\n";
            return sink.write(kKeepAlive, sizeof kKeepAlive - 1);
        }
        auto chunk = [&](const std::string& text, const char* finish, const json& lp) {
            json c = chunk_json(h, text, finish, lp, first);
            first = false;
            if (r.include_usage) c["usage"] = nullptr;
            return send_event(sink, dump(c));
        };
        if (h.chat && first && !chunk("", nullptr, nullptr)) return false;  // the role comes first
        if (!piece->text.empty() || !piece->logprobs.empty()) {
            const json lp = r.logprobs ? logprobs_json(ctx.info.tokenizer, piece->logprobs, r.chat, offset) : json(nullptr);
            offset += piece->text.size();
            if (!chunk(piece->text, nullptr, lp)) return false;
        }
        if (!piece->last) return true;
        if (!chunk("", piece->finish_reason, nullptr)) return false;
        if (r.include_usage &&
            !send_event(sink, dump(usage_chunk_json(h, run->prompt_tokens(), run->completion_tokens()))))
            return false;
        if (!send_event(sink, "[DONE]")) return false;
        sink.done();
        return true;
    };
    // A connection that broke mid-stream: the job ends now, not at max_tokens, and the request is
    // counted as cancelled (its tokens are counted when the run goes: CompletionRun's destructor).
    auto released = [&ctx, run, endpoint](bool success) {
        if (!success) run->cancel();
        ctx.metrics.count_request(endpoint, success ? "200" : "cancelled");
    };
    res.set_chunked_content_provider("text/event-stream", std::move(provider), std::move(released));
}

void handle_completion(ServerContext& ctx, bool chat, const httplib::Request& req, httplib::Response& res) {
    auto in_flight = std::make_shared<InFlight>(ctx.in_flight);
    try {
        if (ctx.draining) throw ApiError(503, "shutting_down", "the server is shutting down");
        CompletionRequest request = parse_completion_request(req.body, chat);
        const bool stream = request.stream;
        auto run = std::make_shared<CompletionRun>(ctx.info, ctx.backend, ctx.metrics, ctx.jobs, std::move(request));
        char id[32];
        std::snprintf(id, sizeof id, "%s-%016llx", chat ? "chatcmpl" : "cmpl",
                      (unsigned long long)ctx.next_answer.fetch_add(1));
        const AnswerHeader h{id, int64_t(std::time(nullptr)), ctx.info.id, chat};
        if (stream)
            answer_stream(ctx, std::move(run), h, std::move(in_flight), endpoint_label(req.path), res);
        else
            answer_whole(ctx, *run, h, res);
    } catch (const ApiError& e) {
        send_error(res, e, ctx.retry_after_seconds);
    } catch (const TokenizerError& e) {  // the text of the prompt or of the messages
        send_error(res, ApiError(400, "invalid_value", e.what(), chat ? "messages" : "prompt"), ctx.retry_after_seconds);
    } catch (const ChatTemplateError& e) {
        send_error(res, ApiError(400, "invalid_value", e.what(), "messages"), ctx.retry_after_seconds);
    }
}

}  // namespace

void add_completion_routes(httplib::Server& http, ServerContext& ctx) {
    for (const char* path : {"/v1/completions", "/completions"})  // llama-server answers both
        http.Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) {
            handle_completion(ctx, false, req, res);
        });
    for (const char* path : {"/v1/chat/completions", "/chat/completions"})
        http.Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) {
            handle_completion(ctx, true, req, res);
        });
}

}  // namespace graphrun::server
