// server/completion_routes.cpp — POST /v1/completions and /v1/chat/completions, whole or streamed.
//
// A stream is server-sent events: "data: {chunk}\n\n" per piece of text (whole UTF-8 characters),
// finish_reason null until the last chunk, an extra usage chunk with stream_options.include_usage,
// then "data: [DONE]\n\n". While no token comes (a long prompt, a full queue) a comment line
// ": keep-alive" goes out every second, so a client that went away is noticed: a failed write
// ends the stream and cancels the job, whose sequence and KV blocks are free before the next pass.
#include <algorithm>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_request.h"
#include "server/api_response.h"
#include "server/routes.h"

namespace graphrun::server {

using nlohmann::json;

namespace {

bool send_event(httplib::DataSink& sink, const std::string& data) {
    const std::string line = "data: " + data + "\n\n";
    return sink.write(line.data(), line.size());
}

using Runs = std::vector<std::shared_ptr<CompletionRun>>;

int64_t completion_tokens(const Runs& runs) {
    int64_t n = 0;
    for (const auto& run : runs) n += run->completion_tokens();
    return n;
}

// A choice's logprobs object for `tokens` (generated), after its echoed prompt's when it has one.
json choice_logprobs(const ServerContext& ctx, const CompletionRun& run, const std::vector<TokenLogprob>& tokens,
                     size_t text_offset) {
    const CompletionRequest& r = run.request();
    if (!r.logprobs) return nullptr;
    return logprobs_json(ctx.info.tokenizer, tokens, r.chat, text_offset);
}

json echo_logprobs(const ServerContext& ctx, const CompletionRun& run) {
    if (!run.request().logprobs) return nullptr;
    return echo_logprobs_json(ctx.info.tokenizer, run.prompt(), run.prompt_logprobs(), run.echo_text());
}

// Every choice's whole text; the runs go on side by side in the backend while one is read.
void answer_whole(ServerContext& ctx, const Runs& runs, const AnswerHeader& h, httplib::Response& res) {
    json choices = json::array();
    for (size_t i = 0; i < runs.size(); ++i) {
        CompletionRun& run = *runs[i];
        std::string text;
        std::vector<TokenLogprob> logprobs;
        const char* finish = nullptr;
        std::vector<ChatToolCall> calls;
        while (true) {
            std::optional<CompletionRun::Piece> piece = run.next(kHeartbeat);
            if (!piece) continue;
            text += piece->text;
            logprobs.insert(logprobs.end(), piece->logprobs.begin(), piece->logprobs.end());
            if (piece->last) {
                finish = piece->finish_reason;
                calls = std::move(piece->tool_calls);
                break;
            }
        }
        json lp = choice_logprobs(ctx, run, logprobs, run.echo_text().size());
        if (run.request().echo && !lp.is_null()) lp = concat_logprobs(echo_logprobs(ctx, run), lp);
        choices.push_back(choice_json(h, int64_t(i), run.echo_text() + text, finish, lp));
        add_tool_calls(choices.back(), h, int64_t(i), calls);
    }
    res.set_content(dump(answer_json(h, std::move(choices), runs[0]->prompt_tokens(), completion_tokens(runs))),
                    "application/json");
}

// What a stream has sent of one choice.
struct StreamedChoice {
    bool first = true;   // nothing sent yet (chat: the role comes first)
    bool echoed = false;
    bool done = false;
    size_t offset = 0;   // text sent so far, for text_offset
};

void answer_stream(ServerContext& ctx, Runs runs, const AnswerHeader& h, std::shared_ptr<InFlight> in_flight,
                   const std::string& endpoint, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    // One choice waits a heartbeat for its tokens; n choices are read in turns of 20 ms each.
    const std::chrono::milliseconds wait = runs.size() == 1 ? kHeartbeat : std::chrono::milliseconds(20);
    auto provider = [&ctx, runs, h, in_flight, wait, state = std::vector<StreamedChoice>(runs.size()),
                     quiet_since = std::chrono::steady_clock::now()](size_t, httplib::DataSink& sink) mutable {
        const CompletionRequest& r = runs[0]->request();
        bool sent = false;
        for (size_t i = 0; i < runs.size(); ++i) {
            StreamedChoice& c = state[i];
            if (c.done) continue;
            CompletionRun& run = *runs[i];
            std::optional<CompletionRun::Piece> piece = run.next(wait);
            if (!piece) continue;
            sent = true;
            auto chunk = [&](const std::string& text, const char* finish, const json& lp) {
                json j = chunk_json(h, text, finish, lp, c.first, int64_t(i));
                c.first = false;
                if (r.include_usage) j["usage"] = nullptr;
                return send_event(sink, dump(j));
            };
            if (h.chat && c.first && !chunk("", nullptr, nullptr)) return false;  // the role comes first
            if (r.echo && !c.echoed && run.echo_ready()) {
                c.echoed = true;
                c.offset = run.echo_text().size();
                if (!chunk(run.echo_text(), nullptr, echo_logprobs(ctx, run))) return false;
            }
            if (!piece->text.empty() || !piece->logprobs.empty()) {
                const json lp = choice_logprobs(ctx, run, piece->logprobs, c.offset);
                c.offset += piece->text.size();
                if (!chunk(piece->text, nullptr, lp)) return false;
            }
            if (!piece->last) continue;
            c.done = true;
            if (!piece->tool_calls.empty()) {
                json j = tool_calls_chunk_json(h, int64_t(i), piece->tool_calls);
                if (r.include_usage) j["usage"] = nullptr;
                if (!send_event(sink, dump(j))) return false;
            }
            if (!chunk("", piece->finish_reason, nullptr)) return false;
        }
        const auto now = std::chrono::steady_clock::now();
        if (sent) quiet_since = now;
        if (std::all_of(state.begin(), state.end(), [](const StreamedChoice& c) { return c.done; })) {
            if (r.include_usage &&
                !send_event(sink, dump(usage_chunk_json(h, runs[0]->prompt_tokens(), completion_tokens(runs)))))
                return false;
            if (!send_event(sink, "[DONE]")) return false;
            sink.done();
            return true;
        }
        if (now - quiet_since >= kHeartbeat) {
            quiet_since = now;
            static const char kKeepAlive[] = ": keep-alive\n\n";
            return sink.write(kKeepAlive, sizeof kKeepAlive - 1);
        }
        return true;
    };
    // A connection that broke mid-stream: the jobs end now, not at max_tokens, and the request is
    // counted as cancelled (its tokens are counted when the runs go: CompletionRun's destructor).
    auto released = [&ctx, runs, endpoint](bool success) {
        if (!success)
            for (const auto& run : runs) run->cancel();
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
        // n choices are n jobs over the same prompt: the scheduler evaluates one prompt at a time, so
        // each after the first takes the first one's full blocks from the prefix cache.
        Runs runs;
        for (int64_t i = 0; i < request.n; ++i)
            runs.push_back(std::make_shared<CompletionRun>(ctx.info, ctx.backend, ctx.metrics, ctx.jobs,
                                                           choice_request(request, i)));
        char id[32];
        std::snprintf(id, sizeof id, "%s-%016llx", chat ? "chatcmpl" : "cmpl",
                      (unsigned long long)ctx.next_answer.fetch_add(1));
        const AnswerHeader h{id, int64_t(std::time(nullptr)), ctx.info.id, chat};
        if (stream)
            answer_stream(ctx, std::move(runs), h, std::move(in_flight), endpoint_label(req.path), res);
        else
            answer_whole(ctx, runs, h, res);
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
