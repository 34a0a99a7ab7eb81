// tools/cmd_generate.cpp — the default command: plan a graph on a model and generate.
//
//   graphrun -m MODEL.gguf -p "Once upon a time" -n 128      text in, streamed text out
//   graphrun -m MODEL.gguf -i                                 chat-like turns over one KV cache
//   graphrun -m MODEL.gguf --tokens 1,403,407 -n 16           token ids in, greedy ids out
//   graphrun -m MODEL.gguf --dump-plan[=json] [--batch N]     the execution plan
// stdout carries only the text (or the ids); logs and timings go to stderr, so output can be piped.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "graph/generate.h"
#include "runtime/text/tokenizer.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

struct GenerateOptions {
    std::string graph_path = graph::default_graph_path();
    std::string model_path = graph::default_model_path();
    std::string tokens, prompt, prompt_file;
    bool interactive = false, special = false;
    int64_t n_predict = 128;
    int threads = 0;
    int64_t ctx = 0;
    std::string dump_plan;  // "", "text" or "json"
    int64_t batch = 0;      // batch size of the dumped plan (default: the prompt's length, or 1)
    SamplerParams sampling;
    bool temperature_given = false;
};

std::vector<int32_t> parse_token_list(const std::string& text) {
    std::vector<int32_t> ids;
    std::string item;
    std::stringstream in(text);
    while (std::getline(in, item, ',')) {
        std::stringstream words(item);
        std::string word;
        while (words >> word) {
            size_t used = 0;
            long long id = -1;
            try {
                id = std::stoll(word, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != word.size() || id < 0 || id > INT32_MAX)
                throw std::runtime_error("--tokens: '" + word + "' is not a token id");
            ids.push_back(int32_t(id));
        }
    }
    return ids;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("-f: cannot read prompt file '" + path + "'");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void report(const graph::Session& session, const graph::GenerationStats& s, int64_t weight_bytes) {
    std::fprintf(stderr, "\ngraphrun: prompt %lld tokens in %.1f ms (%.1f tok/s)\n", (long long)s.prompt_tokens,
                 s.prompt_seconds * 1e3, double(s.prompt_tokens) / s.prompt_seconds);
    if (s.decode_steps > 0) {
        const double per_token = s.decode_seconds / double(s.decode_steps);
        std::fprintf(stderr,
                     "graphrun: generated %lld tokens: %.2f ms/token, %.1f tok/s, %.2f GB/s of weights read "
                     "(%d threads)\n",
                     (long long)s.generated_tokens, per_token * 1e3, 1.0 / per_token,
                     double(weight_bytes) / per_token / 1e9, session.n_threads());
    }
}

// Token ids in, greedy (unless --temp is given) token ids out, exactly n_predict of them.
void run_token_mode(graph::Session& session, const GenerateOptions& opt, const std::vector<int32_t>& prompt) {
    SamplerParams params = opt.sampling;
    if (!opt.temperature_given) params.temperature = 0.0f;
    Sampler sampler(params, int32_t(session.n_vocab()));
    bool first = true;
    auto stats = graph::generate(session, sampler, prompt, opt.n_predict, [&](int32_t token) {
        std::printf(first ? "%d" : " %d", token);
        std::fflush(stdout);
        first = false;
        return true;
    });
    std::printf("\n");
    report(session, stats, session.plan(1).weight_bytes);
}

// Text in, streamed text out until an end-of-generation token or n_predict tokens.
void run_text_mode(graph::Session& session, const GenerateOptions& opt, const std::string& first_prompt) {
    const Tokenizer tokenizer = [&] {
        try {
            return Tokenizer::from_gguf(session.model().file());
        } catch (const TokenizerError& e) {
            throw std::runtime_error(std::string("this model cannot take text prompts: ") + e.what() +
                                     " (use --tokens to give token ids)");
        }
    }();
    Sampler sampler(opt.sampling, int32_t(session.n_vocab()));
    std::string prompt = first_prompt;
    bool first_turn = true;
    while (true) {
        if (first_turn && prompt.empty() && !opt.interactive)
            throw std::runtime_error("nothing to generate from: give a prompt with -p TEXT, -f FILE or --tokens");
        if (opt.interactive && (!first_turn || prompt.empty())) {
            std::fprintf(stderr, "\n> ");
            if (!std::getline(std::cin, prompt)) break;
            if (prompt.empty()) continue;
        }
        const std::vector<int32_t> ids = tokenizer.encode(prompt, first_turn && tokenizer.add_bos());
        if (session.n_past() + int64_t(ids.size()) >= session.n_ctx())
            throw std::runtime_error("the prompt has " + std::to_string(ids.size()) + " tokens and " +
                                     std::to_string(session.n_past()) + " are in use: more than the context of " +
                                     std::to_string(session.n_ctx()) + " (raise -c)");
        if (!opt.interactive || first_turn) std::fputs(prompt.c_str(), stdout);
        std::fflush(stdout);

        TokenTextStream stream(tokenizer, opt.special);
        auto stats = graph::generate(session, sampler, ids, opt.n_predict, [&](int32_t token) {
            if (tokenizer.is_end_of_generation(token)) return false;
            std::fputs(stream.push(token).c_str(), stdout);
            std::fflush(stdout);
            return true;
        });
        std::fputs(stream.flush().c_str(), stdout);
        std::fputs("\n", stdout);
        std::fflush(stdout);
        report(session, stats, session.plan(1).weight_bytes);
        first_turn = false;
        if (!opt.interactive) break;
    }
}

void run_generate(GenerateOptions opt) {
    if (opt.model_path.empty()) throw std::runtime_error("no model: give one with -m MODEL.gguf (try `graphrun --help`)");
    if (!opt.prompt_file.empty()) opt.prompt = read_file(opt.prompt_file);
    const auto load_start = std::chrono::steady_clock::now();
    auto model = graph::Model::load(opt.model_path, opt.graph_path);
    graph::Session session(model, {.n_ctx = opt.ctx, .n_threads = opt.threads});
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
    const std::vector<int32_t> prompt_ids = parse_token_list(opt.tokens);

    if (!opt.dump_plan.empty()) {
        const int64_t batch = opt.batch > 0 ? opt.batch : std::max<int64_t>(1, int64_t(prompt_ids.size()));
        const graph::Plan& plan = session.plan(batch);
        std::fputs((opt.dump_plan == "json" ? graph::dump_plan_json(plan, model->graph())
                                            : graph::dump_plan_text(plan, model->graph())).c_str(), stdout);
        return;
    }
    std::fprintf(stderr, "graphrun: %s: load %.1f ms, %d threads, context %lld\n", opt.model_path.c_str(), load_ms,
                 session.n_threads(), (long long)session.n_ctx());
    if (!prompt_ids.empty()) {
        if (!opt.prompt.empty()) throw std::runtime_error("give either --tokens or a text prompt, not both");
        run_token_mode(session, opt, prompt_ids);
    } else {
        run_text_mode(session, opt, opt.prompt);
    }
}

}  // namespace

void register_generate(CLI::App& app) {
    auto opt = std::make_shared<GenerateOptions>();
    SamplerParams& s = opt->sampling;
    app.add_option("--graph", opt->graph_path, "graph definition (JSON)")->capture_default_str();
    app.add_option("-m,--model", opt->model_path, "model file (GGUF)")->capture_default_str();
    app.add_option("-p,--prompt", opt->prompt, "prompt text");
    app.add_option("-f,--file", opt->prompt_file, "read the prompt from a file");
    app.add_option("--tokens", opt->tokens, "prompt as token ids (e.g. 1,403,407); prints ids, greedy unless --temp");
    app.add_flag("-i,--interactive", opt->interactive, "read further prompts from stdin, keeping the KV cache");
    app.add_flag("--special", opt->special, "print special tokens (BOS, EOS, ...) too");
    app.add_option("-n,--n-predict", opt->n_predict, "tokens to generate (-1: until EOS or a full context)")
        ->capture_default_str();
    app.add_option("-t,--threads", opt->threads, "threads (0: every core)")->check(CLI::NonNegativeNumber);
    app.add_option("-c,--ctx-size", opt->ctx, "KV cache positions (0: the model's, at most 2048)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--temp", s.temperature, "temperature (0: greedy)")->capture_default_str();
    app.add_option("--top-k", s.top_k, "keep the k most likely tokens (0: off)")->capture_default_str();
    app.add_option("--top-p", s.top_p, "keep the smallest set with this probability (1: off)")->capture_default_str();
    app.add_option("--min-p", s.min_p, "drop tokens below this fraction of the best one (0: off)")->capture_default_str();
    app.add_option("--repeat-penalty", s.repeat_penalty, "penalise recent tokens (1: off)")->capture_default_str();
    app.add_option("--repeat-last-n", s.repeat_last_n, "how many recent tokens the penalties see")->capture_default_str();
    app.add_option("--frequency-penalty", s.frequency_penalty, "subtract count x this")->capture_default_str();
    app.add_option("--presence-penalty", s.presence_penalty, "subtract this once a token appeared")->capture_default_str();
    app.add_option("--seed", s.seed, "random seed (default: random)");
    app.add_option("--dump-plan", opt->dump_plan, "print the execution plan and exit: text (default) or json")
        ->expected(0, 1)
        ->check(CLI::IsMember({"", "text", "json"}));
    app.add_option("--batch", opt->batch, "batch size of the plan --dump-plan prints")->check(CLI::PositiveNumber);
    app.callback([&app, opt] {
        if (!app.get_subcommands().empty()) return;
        GenerateOptions o = *opt;
        if (app.count("--dump-plan") && o.dump_plan.empty()) o.dump_plan = "text";
        o.temperature_given = app.count("--temp") > 0;
        run_generate(std::move(o));
    });
}

}  // namespace graphrun::tools
