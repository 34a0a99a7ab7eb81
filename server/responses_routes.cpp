// server/responses_routes.cpp — POST /v1/responses (OpenAI's Responses API, stateless), whole or
// streamed, over the chat completion path: the body becomes a chat completion (responses_request.h),
// a CompletionRun answers it, and this file writes the answer as a Response object.
//
// A Response's output is a list of items: a message (role assistant, one output_text part) when the
// reply said something or called nothing, then a function_call item per tool call. status is
// "completed", or "incomplete" with incomplete_details.reason "max_output_tokens" when the reply was
// cut (max_output_tokens or the end of the context). usage counts input, output and total tokens.
//
// Streamed, each event is "event: TYPE\ndata: {...}\n\n" with a sequence_number counting from 0:
//   response.created, response.in_progress                  (the response, status in_progress)
//   response.output_item.added, response.content_part.added  (when the message's first text comes)
//   response.output_text.delta ...                           (whole UTF-8 characters, as chat's)
//   response.output_text.done, response.content_part.done, response.output_item.done
//   per call: response.output_item.added, response.function_call_arguments.delta (the arguments
//     whole: a call is read once the reply ends), .done, response.output_item.done
//   response.completed or response.incomplete                (the whole response, with usage)
// with ": keep-alive" comments while no token comes, as chat's streams (completion_routes.cpp).
#include <cmath>
#include <cstdio>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_response.h"
#include "server/responses_request.h"
#include "server/routes.h"

namespace graphrun::server {

using nlohmann::json;

namespace {

struct ResponseHead {
    std::string id;  // resp_<16 hex digits>; its items are msg_..., fc_..._i, their calls call_..._i
    std::string serial;
    int64_t created = 0;
    std::string model;
    json echoed;  // ResponsesRequest::echoed
};

json usage_of(const CompletionRun& run) {
    return {{"input_tokens", run.prompt_tokens()},
            {"output_tokens", run.completion_tokens()},
            {"total_tokens", run.prompt_tokens() + run.completion_tokens()}};
}

json response_json(const ResponseHead& h, const char* status, json output, json usage) {
    json r = {{"id", h.id},
              {"object", "response"},
              {"created_at", h.created},
              {"status", status},
              {"background", false},
              {"error", nullptr},
              {"incomplete_details", nullptr},
              {"model", h.model},
              {"output", std::move(output)},
              {"previous_response_id", nullptr},
              {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
              {"store", false},
              {"truncation", "disabled"},
              {"usage", std::move(usage)}};
    r.update(h.echoed);
    if (std::string_view(status) == "incomplete") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    if (std::string_view(status) != "in_progress") r["completed_at"] = int64_t(std::time(nullptr));
    return r;
}

// `base` with the fields of `more` added.
json with(json base, const json& more) {
    base.update(more);
    return base;
}

json text_part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

std::string message_id(const ResponseHead& h) { return "msg_" + h.serial; }

json message_item(const ResponseHead& h, const char* status, const std::string* text) {
    return {{"type", "message"},
            {"id", message_id(h)},
            {"status", status},
            {"role", "assistant"},
            {"content", text ? json::array({text_part(*text)}) : json::array()}};
}

json call_item(const ResponseHead& h, size_t i, const ChatToolCall& call, const char* status, bool with_arguments) {
    const std::string n = h.serial + "_" + std::to_string(i);
    return {{"type", "function_call"},
            {"id", "fc_" + n},
            {"call_id", "call_" + n},
            {"name", call.name},
            {"arguments", with_arguments ? call.arguments : std::string()},
            {"status", status}};
}

// "completed" or "incomplete", from the run's finish_reason ("stop", "tool_calls" or "length").
const char* status_of(const char* finish_reason) {
    return std::string_view(finish_reason) == "length" ? "incomplete" : "completed";
}

// The output items of a reply: the message (when it said something or called nothing), then the calls.
json output_items(const ResponseHead& h, const std::string& text, const std::vector<ChatToolCall>& calls,
                  const char* status) {
    json output = json::array();
    if (!text.empty() || calls.empty()) output.push_back(message_item(h, status, &text));
    for (size_t i = 0; i < calls.size(); ++i) output.push_back(call_item(h, i, calls[i], "completed", true));
    return output;
}

void answer_whole(CompletionRun& run, const ResponseHead& h, httplib::Response& res) {
    std::string text;
    const char* finish = nullptr;
    std::vector<ChatToolCall> calls;
    while (!finish) {
        std::optional<CompletionRun::Piece> piece = run.next(kHeartbeat);
        if (!piece) continue;
        text += piece->text;
        if (piece->last) {
            finish = piece->finish_reason;
            calls = std::move(piece->tool_calls);
        }
    }
    const char* status = status_of(finish);
    res.set_content(dump(response_json(h, status, output_items(h, text, calls, status), usage_of(run))),
                    "application/json");
}

// What a stream has sent.
struct StreamState {
    int64_t sequence = 0;
    bool started = false;
    bool message_open = false;  // output_item.added and content_part.added went out for the message
    std::string text;
    std::chrono::steady_clock::time_point quiet_since = std::chrono::steady_clock::now();
};

void answer_stream(ServerContext& ctx, std::shared_ptr<CompletionRun> run, const ResponseHead& h,
                   std::shared_ptr<InFlight> in_flight, const std::string& endpoint, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto provider = [run, h, in_flight, s = StreamState{}](size_t, httplib::DataSink& sink) mutable {
        auto emit = [&](const char* type, json event) {
            event["type"] = type;
            event["sequence_number"] = s.sequence++;
            const std::string line = std::string("event: ") + type + "\ndata: " + dump(event) + "\n\n";
            return sink.write(line.data(), line.size());
        };
        const json text_at = {{"item_id", message_id(h)}, {"output_index", 0}, {"content_index", 0}};
        auto open_message = [&] {
            s.message_open = true;
            return emit("response.output_item.added", {{"output_index", 0}, {"item", message_item(h, "in_progress", nullptr)}}) &&
                   emit("response.content_part.added", with(text_at, {{"part", text_part("")}}));
        };
        if (!s.started) {
            s.started = true;
            const json created = response_json(h, "in_progress", json::array(), nullptr);
            return emit("response.created", {{"response", created}}) &&
                   emit("response.in_progress", {{"response", created}});
        }
        std::optional<CompletionRun::Piece> piece = run->next(kHeartbeat);
        const auto now = std::chrono::steady_clock::now();
        if (!piece) {
            if (now - s.quiet_since < kHeartbeat) return true;
            s.quiet_since = now;
            static const char kKeepAlive[] = ": keep-alive\n\n";
            return sink.write(kKeepAlive, sizeof kKeepAlive - 1);
        }
        s.quiet_since = now;
        if (!piece->text.empty()) {
            if (!s.message_open && !open_message()) return false;
            s.text += piece->text;
            if (!emit("response.output_text.delta",
                      with(text_at, {{"delta", piece->text}, {"logprobs", json::array()}})))
                return false;
        }
        if (!piece->last) return true;
        const char* status = status_of(piece->finish_reason);
        const std::vector<ChatToolCall>& calls = piece->tool_calls;
        size_t index = 0;  // of the next output item
        if (s.message_open || calls.empty()) {
            if (!s.message_open && !open_message()) return false;
            if (!emit("response.output_text.done", with(text_at, {{"text", s.text}, {"logprobs", json::array()}})) ||
                !emit("response.content_part.done", with(text_at, {{"part", text_part(s.text)}})) ||
                !emit("response.output_item.done", {{"output_index", 0}, {"item", message_item(h, status, &s.text)}}))
                return false;
            index = 1;
        }
        for (size_t i = 0; i < calls.size(); ++i, ++index) {
            const json done = call_item(h, i, calls[i], "completed", true);
            const json at = {{"item_id", done["id"]}, {"output_index", index}};
            if (!emit("response.output_item.added",
                      {{"output_index", index}, {"item", call_item(h, i, calls[i], "in_progress", false)}}) ||
                !emit("response.function_call_arguments.delta", with(at, {{"delta", calls[i].arguments}})) ||
                !emit("response.function_call_arguments.done",
                      with(at, {{"name", calls[i].name}, {"arguments", calls[i].arguments}})) ||
                !emit("response.output_item.done", {{"output_index", index}, {"item", done}}))
                return false;
        }
        const json response = response_json(h, status, output_items(h, s.text, calls, status), usage_of(*run));
        if (!emit(std::string_view(status) == "completed" ? "response.completed" : "response.incomplete",
                  {{"response", response}}))
            return false;
        sink.done();
        return true;
    };
    // A client that went away: the job ends now and the request is counted as cancelled.
    auto released = [&ctx, run, endpoint](bool success) {
        if (!success) run->cancel();
        ctx.metrics.count_request(endpoint, success ? "200" : "cancelled");
    };
    res.set_chunked_content_provider("text/event-stream", std::move(provider), std::move(released));
}

void handle_responses(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    auto in_flight = std::make_shared<InFlight>(ctx.in_flight);
    try {
        if (ctx.draining) throw ApiError(503, "shutting_down", "the server is shutting down");
        ResponsesRequest request = parse_responses_request(req.body);
        const bool stream = request.chat.stream;
        auto run = std::make_shared<CompletionRun>(ctx.info, ctx.backend, ctx.metrics, ctx.jobs, std::move(request.chat));
        char serial[24];
        std::snprintf(serial, sizeof serial, "%016llx", (unsigned long long)ctx.next_answer.fetch_add(1));
        const ResponseHead h{std::string("resp_") + serial, serial, int64_t(std::time(nullptr)), ctx.info.id,
                             std::move(request.echoed)};
        if (stream)
            answer_stream(ctx, std::move(run), h, std::move(in_flight), endpoint_label(req.path), res);
        else
            answer_whole(*run, h, res);
    } catch (const ApiError& e) {  // CompletionRun's about the prompt name chat's messages
        send_error(res, e.param() == "messages" ? ApiError(e.status(), e.code(), e.what(), "input") : e,
                   ctx.retry_after_seconds);
    } catch (const TokenizerError& e) {  // the text of the input
        send_error(res, ApiError(400, "invalid_value", e.what(), "input"), ctx.retry_after_seconds);
    } catch (const ChatTemplateError& e) {
        send_error(res, ApiError(400, "invalid_value", e.what(), "input"), ctx.retry_after_seconds);
    }
}

}  // namespace

void add_responses_routes(httplib::Server& http, ServerContext& ctx) {
    for (const char* path : {"/v1/responses", "/responses"})
        http.Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) { handle_responses(ctx, req, res); });
}

}  // namespace graphrun::server
