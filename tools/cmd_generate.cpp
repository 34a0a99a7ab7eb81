// tools/cmd_generate.cpp — the default command: plan a graph on a model and generate.
//
//   graphrun [--graph models/llama.json] -m MODEL.gguf --tokens 1,403,407 -n 16
//   graphrun -m MODEL.gguf --dump-plan[=json] [--batch N]
// Generated token ids go to stdout (nothing else does); logs and timings go to stderr.
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "graph/session.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

struct GenerateOptions {
    std::string graph_path = graph::default_graph_path();
    std::string model_path;
    std::string tokens;
    int n_predict = 16;
    int threads = 0;
    int64_t ctx = 0;
    std::string dump_plan;  // "", "text" or "json"
    int64_t batch = 0;      // batch size of the dumped plan (default: the prompt's length, or 1)
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

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int32_t argmax(std::span<const float> row) {
    int32_t best = 0;  // ties go to the lowest id, as llama.cpp's greedy sampler does
    for (size_t i = 1; i < row.size(); ++i)
        if (row[i] > row[best]) best = int32_t(i);
    return best;
}

void run_generate(const GenerateOptions& opt) {
    if (opt.model_path.empty()) throw std::runtime_error("no model: give one with -m MODEL.gguf (try `graphrun --help`)");
    const auto load_start = std::chrono::steady_clock::now();
    auto model = graph::Model::load(opt.model_path, opt.graph_path);
    graph::Session session(model, {.n_ctx = opt.ctx, .n_threads = opt.threads});
    const double load_s = seconds_since(load_start);
    const std::vector<int32_t> prompt = parse_token_list(opt.tokens);

    if (!opt.dump_plan.empty()) {
        const int64_t batch = opt.batch > 0 ? opt.batch : std::max<int64_t>(1, int64_t(prompt.size()));
        const graph::Plan& plan = session.plan(batch);
        std::fputs((opt.dump_plan == "json" ? graph::dump_plan_json(plan, model->graph())
                                            : graph::dump_plan_text(plan, model->graph())).c_str(), stdout);
        return;
    }
    if (prompt.empty()) throw std::runtime_error("nothing to generate from: give a prompt with --tokens 1,2,3");

    std::fprintf(stderr, "graphrun: %s, %d threads, context %lld, load %.1f ms\n", opt.model_path.c_str(),
                 session.n_threads(), (long long)session.n_ctx(), load_s * 1e3);
    const auto prompt_start = std::chrono::steady_clock::now();
    std::span<const float> logits = session.eval(prompt);
    const double prompt_s = seconds_since(prompt_start);
    int32_t next = argmax(logits.subspan(logits.size() - size_t(session.n_vocab())));

    const auto gen_start = std::chrono::steady_clock::now();
    for (int i = 0; i < opt.n_predict; ++i) {
        std::printf(i ? " %d" : "%d", next);
        std::fflush(stdout);
        if (i + 1 == opt.n_predict) break;
        logits = session.eval(std::span<const int32_t>(&next, 1));
        next = argmax(logits);
    }
    std::printf("\n");
    const double gen_s = seconds_since(gen_start);
    const int decoded = std::max(0, opt.n_predict - 1);
    const double weight_gb = double(session.plan(1).weight_bytes) / 1e9;
    std::fprintf(stderr, "graphrun: prompt %zu tokens in %.1f ms (%.1f tok/s)\n", prompt.size(), prompt_s * 1e3,
                 double(prompt.size()) / prompt_s);
    if (decoded > 0)
        std::fprintf(stderr, "graphrun: generated %d tokens: %.2f ms/token, %.1f tok/s, %.2f GB/s of weights read\n",
                     decoded, gen_s * 1e3 / decoded, decoded / gen_s, weight_gb * decoded / gen_s);
}

}  // namespace

void register_generate(CLI::App& app) {
    auto opt = std::make_shared<GenerateOptions>();
    app.add_option("--graph", opt->graph_path, "graph definition (JSON)")->capture_default_str();
    app.add_option("-m,--model", opt->model_path, "model file (GGUF)");
    app.add_option("--tokens", opt->tokens, "prompt as token ids, e.g. 1,403,407");
    app.add_option("-n,--n-predict", opt->n_predict, "tokens to generate")->capture_default_str()->check(CLI::NonNegativeNumber);
    app.add_option("-t,--threads", opt->threads, "threads (0: every core)")->check(CLI::NonNegativeNumber);
    app.add_option("-c,--ctx-size", opt->ctx, "KV cache positions (0: the model's, at most 2048)")->check(CLI::NonNegativeNumber);
    app.add_option("--dump-plan", opt->dump_plan, "print the execution plan and exit: text (default) or json")
        ->expected(0, 1)
        ->check(CLI::IsMember({"", "text", "json"}));
    app.add_option("--batch", opt->batch, "batch size of the plan --dump-plan prints")->check(CLI::PositiveNumber);
    app.callback([&app, opt] {
        if (app.get_subcommands().empty()) {
            GenerateOptions o = *opt;
            if (app.count("--dump-plan") && o.dump_plan.empty()) o.dump_plan = "text";
            run_generate(o);
        }
    });
}

}  // namespace graphrun::tools
