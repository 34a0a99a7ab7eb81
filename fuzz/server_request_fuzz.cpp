// fuzz/server_request_fuzz.cpp — request bodies as the HTTP server's routes read them.
//
// The input is a request body. It goes through what each route does with one before any model
// runs: parse_json_object, then parse_completion_request (completions and chat),
// parse_embedding_request (its text inputs tokenized), parse_tokenize_request and
// parse_detokenize_request; an accepted completion is then started as the route starts it
// (CompletionRun: the prompt tokenized, or chat messages rendered by a chat template and tokenized;
// the context checked; stop strings and logprobs set up) on a backend here that checks the job it
// is given and answers by echoing the prompt back as the generated tokens, through ReplyText's stop
// strings and the answer's JSON. The vocabulary is the shipped model's (models/kjv-q8_0.gguf,
// SentencePiece); the chat template is one of every format, picked by the
// input's length. Checked, as the contract the routes rely on:
//   - the only exceptions are the ones the routes answer with 400 (ApiError, TokenizerError,
//     ChatTemplateError), each with a message; anything else would be a 500;
//   - an accepted request's fields are inside the ranges api_request.h documents;
//   - the job reaching the backend is one the scheduler would run (engine/scheduler.cpp refuses the
//     rest with its own words, not the API's): a prompt of ids in the vocabulary that leaves room in
//     the context (or fills it, for the prompt alone), max_tokens in 1 .. kMaxPredict (0 only with
//     prompt_logits), sampling a Sampler accepts.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_util.h"
#include "graph/limits.h"
#include "runtime/gguf.h"
#include "runtime/text/sampler.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/embedding_request.h"
#include "server/completion.h"

namespace {

using namespace graphrun;
using namespace graphrun::server;

constexpr int64_t kContext = 96;     // small, so that "does not fit the context" is reachable
constexpr int64_t kMaxEchoed = 12;   // generated tokens per job

[[noreturn]] void broken(const std::string& what) {
    std::fprintf(stderr, "graphrun fuzz: %s\n", what.c_str());
    std::abort();
}

// What graph::Scheduler::submit refuses, as a failure here: the API layer must have refused it first.
class EchoBackend final : public Backend {
  public:
    explicit EchoBackend(int32_t n_vocab) : n_vocab_(n_vocab), logits_(size_t(n_vocab)) {
        for (size_t i = 0; i < logits_.size(); ++i) logits_[i] = float(int(i % 13) - 6);
    }

    uint64_t submit(Job job, JobCallback on_event) override {
        if (job.prompt.empty()) broken("an empty prompt reached the backend");
        for (const int32_t id : job.prompt)
            if (id < 0 || id >= n_vocab_) broken("prompt id " + std::to_string(id) + " reached the backend");
        if (int64_t(job.prompt.size()) + (job.max_tokens == 0 ? 0 : 1) > kContext)
            broken("a prompt that fills the context reached the backend");
        if (job.max_tokens < (job.prompt_logits ? 0 : 1) || job.max_tokens > graph::kMaxPredict)
            broken("max_tokens " + std::to_string(job.max_tokens) + " reached the backend");
        try {
            Sampler sampler(job.sampling, n_vocab_);
        } catch (const std::invalid_argument& e) {
            broken(std::string("the sampler refused a parsed request: ") + e.what());
        }
        for (size_t p = 0; job.prompt_logits && p < job.prompt.size(); ++p)
            on_event({.logits = logits_, .prompt_position = int64_t(p)});
        // The prompt comes back as the reply (so stop strings can match it), then the end.
        const int64_t n = std::min<int64_t>({job.max_tokens, kMaxEchoed, int64_t(job.prompt.size())});
        for (int64_t i = 0; i < n; ++i) on_event({job.prompt[size_t(i)], logits_, Finish::None});
        on_event({-1, {}, n == job.max_tokens ? Finish::Length : Finish::Stop});
        return ++next_id_;
    }
    bool cancel(uint64_t) override { return false; }
    BackendMetrics metrics() const override { return {}; }
    int64_t n_ctx() const override { return kContext; }
    int64_t parallel() const override { return 1; }
    int64_t max_queue() const override { return 0; }

  private:
    int32_t n_vocab_;
    std::vector<float> logits_;
    uint64_t next_id_ = 0;
};

// One ModelInfo per chat format, over the shipped model's vocabulary.
std::vector<ModelInfo> model_infos() {
    const auto file = GgufFile::open(std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf");
    std::vector<ModelInfo> infos;
    for (const std::string& name : ChatTemplate::names()) {
        ModelInfo info{.id = "fuzz", .tokenizer = Tokenizer::from_gguf(*file),
                       .chat_template = ChatTemplate::named(name), .plan_text = "", .n_vocab = 0};
        info.n_vocab = info.tokenizer.n_vocab();
        infos.push_back(std::move(info));
    }
    return infos;
}

bool in(double x, double lo, double hi) { return x >= lo && x <= hi; }

// The ranges api_request.h and runtime/text/sampler.h give each field.
void check_fields(const CompletionRequest& r, bool chat) {
    const SamplerParams& s = r.sampling;
    const bool ok = r.chat == chat && (chat ? !r.messages.empty() : true) &&
                    (r.max_tokens == -1 || in(double(r.max_tokens), chat ? 1 : 0, double(graph::kMaxPredict))) &&
                    in(double(r.n), 1, double(kMaxChoices)) && (chat ? !r.echo : true) &&
                    in(s.temperature, 0, 2) && in(s.top_p, 0, 1) && in(s.min_p, 0, 1) && s.top_k >= 0 &&
                    in(s.presence_penalty, -2, 2) && in(s.frequency_penalty, -2, 2) &&
                    s.repeat_penalty > 0 && s.repeat_penalty <= kMaxPenalty &&
                    (s.seed == kSamplerRandomSeed || s.seed <= 0xFFFFFFFFu) && r.stop.size() <= kMaxStopStrings &&
                    in(r.top_logprobs, 0, kMaxTopLogprobs) && (r.top_logprobs == 0 || r.logprobs) &&
                    (r.prompt_is_ids || r.prompt_ids.empty());
    if (!ok) broken("a parsed request has a field out of its range");
    for (const std::string& stop : r.stop)
        if (stop.empty()) broken("an empty stop string was accepted");
    for (const ChatMessage& m : r.messages)
        if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
            broken("role '" + m.role + "' accepted");
    for (const ChatTool& t : r.tools)
        if (t.name.empty() || t.name.size() > 64) broken("tool name '" + t.name + "' accepted");
    if (r.tool_required && r.tools.empty()) broken("a required tool call with no tools was accepted");
    for (const int32_t id : r.prompt_ids)
        if (id < 0) broken("a negative prompt id was accepted");
}

// The route's path from a checked request to its answer (completion_routes.cpp), whole and streamed.
void run_completion(const ModelInfo& info, CompletionRequest request) {
    static ServerMetrics metrics;
    static JobRegistry jobs;
    EchoBackend backend(int32_t(info.n_vocab));
    const bool chat = request.chat;
    CompletionRun run(info, backend, metrics, jobs, std::move(request));
    const AnswerHeader h{"cmpl-fuzz", 0, info.id, chat};
    const bool want_logprobs = run.request().logprobs;
    std::string text;
    std::vector<TokenLogprob> logprobs;
    for (int i = 0; i <= kMaxEchoed + 1; ++i) {
        std::optional<CompletionRun::Piece> piece = run.next(std::chrono::milliseconds(0));
        if (!piece) broken("the echo backend's events did not arrive");
        text += piece->text;
        logprobs.insert(logprobs.end(), piece->logprobs.begin(), piece->logprobs.end());
        const nlohmann::json lp =
            want_logprobs ? logprobs_json(info.tokenizer, piece->logprobs, chat, 0) : nlohmann::json(nullptr);
        (void)dump(chunk_json(h, piece->text, piece->finish_reason, lp, i == 0));
        if (piece->last) {
            const nlohmann::json all =
                want_logprobs ? logprobs_json(info.tokenizer, logprobs, chat, 0) : nlohmann::json(nullptr);
            (void)dump(answer_json(h, text, piece->finish_reason, all, run.prompt_tokens(), run.completion_tokens()));
            if (run.request().echo && want_logprobs)
                (void)dump(echo_logprobs_json(info.tokenizer, run.prompt(), run.prompt_logprobs(), run.echo_text()));
            return;
        }
    }
    broken("the answer never ended");
}

// The routes answer these with 400 and the message; anything else escaping is a finding.
template <class Step>
void as_route(Step step) {
    try {
        step();
    } catch (const ApiError& e) {
        if (e.status() != 400 || std::string(e.what()).empty() || e.code().empty())
            broken("an ApiError without a 400, a code and a message: " + std::string(e.what()));
    } catch (const TokenizerError& e) {
        if (std::string(e.what()).empty()) broken("a TokenizerError without a message");
    } catch (const ChatTemplateError& e) {
        if (std::string(e.what()).empty()) broken("a ChatTemplateError without a message");
    } catch (const std::exception& e) {
        fuzz::undocumented(e);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<ModelInfo> infos = model_infos();
    const ModelInfo& info = infos[size % infos.size()];
    const std::string body(reinterpret_cast<const char*>(data), size);
    nlohmann::json parsed;
    bool is_object = false;
    as_route([&] {
        parsed = parse_json_object(body);
        is_object = true;
    });
    if (!is_object) return 0;
    if (!parsed.is_object()) broken("parse_json_object gave a non-object");
    for (const bool chat : {false, true})
        as_route([&] {
            CompletionRequest r = parse_completion_request(parsed, chat);
            check_fields(r, chat);
            run_completion(info, std::move(r));
        });
    as_route([&] {
        const TokenizeRequest r = parse_tokenize_request(parsed);
        const std::vector<int32_t> ids = info.tokenizer.encode(r.content, r.add_special && info.tokenizer.add_bos(), true);
        if (r.with_pieces)
            for (const int32_t id : ids) (void)info.tokenizer.token_to_piece(id, true);
    });
    as_route([&] {
        const EmbeddingRequest r = parse_embedding_request(parsed);
        if (r.inputs.empty() || r.inputs.size() > kMaxEmbeddingInputs)
            broken("an embedding request of " + std::to_string(r.inputs.size()) + " inputs was accepted");
        for (const EmbeddingInput& in : r.inputs) {
            if (in.param.empty() || (in.is_ids ? in.ids.empty() : in.text.empty()))
                broken("an empty embedding input was accepted as " + in.param);
            for (const int32_t id : in.ids)
                if (id < 0) broken("embedding input " + in.param + " has id " + std::to_string(id));
            if (!in.is_ids) (void)info.tokenizer.encode(in.text, info.tokenizer.add_bos());
        }
    });
    as_route([&] {
        const std::vector<int32_t> ids = parse_detokenize_request(parsed, info.n_vocab);
        for (const int32_t id : ids)
            if (id < 0 || id >= info.n_vocab) broken("detokenize accepted id " + std::to_string(id));
        (void)dump(nlohmann::json{{"content", info.tokenizer.decode(ids)}});
    });
    return 0;
}
