// tools/cmd_batched.cpp — `graphrun batched`: several sequences decoded in one forward pass each step.
//
//   graphrun batched -m MODEL -p "Once upon a time" --parallel 4 -n 32    four continuations of one prompt
//   graphrun batched -m MODEL -f prompts.txt -n 32                         one sequence per line
//   graphrun batched -m MODEL -p TEXT --spec lookup      speculative decoding, the same texts (spec_options.h)
//
// Like llama.cpp's llama-batched, but -n is the tokens generated per sequence (as in graphrun's other
// commands). Every sequence is a request to the continuous scheduler (engine/scheduler.h); the prompt's
// full blocks are evaluated once and shared by the others through the prefix cache. With --seed S
// sequence I samples with seed S + I; with --temp 0 each sequence is the single-sequence greedy text.
// stdout: "sequence I:" and its text (prompt included) for each, in order; timings go to stderr.
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "runtime/bounded_read.h"
#include "runtime/text/tokenizer.h"
#include "tools/commands.h"
#include "tools/option_checks.h"
#include "tools/spec_options.h"

namespace graphrun::tools {

namespace {

struct BatchedOptions : SpecOptions {  // spec, draft_model_path, lookup
    std::string graph_path, model_path, prompt, prompt_file;
    int64_t parallel = 0;  // 0: 4 with -p, the number of lines with -f
    int64_t n_predict = 32;
    int threads = 0;
    int64_t ctx = 0;
    bool special = false;
    SamplerParams sampling;
    bool seed_given = false;
};

std::vector<std::string> prompts_of(const BatchedOptions& opt) {
    if (!opt.prompt_file.empty()) {
        if (!opt.prompt.empty()) throw std::runtime_error("give either -p or -f, not both");
        std::vector<std::string> lines;
        std::stringstream text(
            read_bounded_file(opt.prompt_file, graph::kMaxPromptFileBytes, "a prompt file"));
        for (std::string line; std::getline(text, line);)
            if (!line.empty()) lines.push_back(line);
        if (lines.empty())
            throw std::runtime_error("-f " + opt.prompt_file + ": no non-empty line to continue");
        if (opt.parallel > 0 && opt.parallel < int64_t(lines.size()))
            throw std::runtime_error("-f " + opt.prompt_file + " has " + std::to_string(lines.size()) +
                                     " lines, more than --parallel " + std::to_string(opt.parallel));
        return lines;
    }
    if (opt.prompt.empty())
        throw std::runtime_error("nothing to continue: give a prompt with -p TEXT or -f FILE");
    return std::vector<std::string>(size_t(opt.parallel > 0 ? opt.parallel : 4), opt.prompt);
}

void run_batched(BatchedOptions opt) {
    if (opt.model_path.empty()) opt.model_path = graph::default_model_path();
    const std::vector<std::string> prompts = prompts_of(opt);
    auto model = graph::Model::load(opt.model_path, opt.graph_path, process_pipeline());
    const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
    const int64_t n = int64_t(prompts.size());
    std::shared_ptr<const graph::Model> draft = load_draft_model(opt, *model);
    graph::Scheduler scheduler(model, {.policy = graph::Policy::Continuous,
                                       .parallel = n,
                                       .max_queue = n,
                                       .n_ctx = opt.ctx,
                                       .step_tokens = std::max<int64_t>(256, n),
                                       .n_threads = opt.threads,
                                       .speculation = speculation_of(opt),
                                       .draft_model = draft});
    if (tokenizer.n_vocab() < scheduler.n_vocab())
        throw std::runtime_error(opt.model_path + ": the vocabulary has " +
                                 std::to_string(tokenizer.n_vocab()) + " tokens but the logits are " +
                                 std::to_string(scheduler.n_vocab()) + " wide");
    std::vector<int32_t> stop_ids;
    for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
        if (tokenizer.is_end_of_generation(id)) stop_ids.push_back(id);

    struct Output {
        std::string text;
        std::unique_ptr<TokenTextStream> stream;
        graph::FinishReason finish = graph::FinishReason::None;
    };
    std::vector<Output> outputs(prompts.size());
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < prompts.size(); ++i) {
        graph::Request request;
        request.prompt = tokenizer.encode(prompts[i], tokenizer.add_bos());
        request.sampling = opt.sampling;
        if (opt.seed_given) request.sampling.seed = opt.sampling.seed + i;
        request.max_tokens = opt.n_predict;
        request.stop_ids = stop_ids;
        outputs[i].text = prompts[i];
        outputs[i].stream = std::make_unique<TokenTextStream>(tokenizer, opt.special);
        Output& out = outputs[i];
        scheduler.submit(std::move(request), [&out, &tokenizer, &opt](const graph::TokenEvent& e) {
            if (e.token >= 0 && !(e.finish == graph::FinishReason::Stop && !opt.special))
                out.text += out.stream->push(e.token);
            if (e.finish != graph::FinishReason::None) {
                out.text += out.stream->flush();
                out.finish = e.finish;
            }
            (void)tokenizer;
        });
    }
    scheduler.run_until_idle();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < outputs.size(); ++i)
        std::printf("sequence %zu:\n%s\n\n", i, outputs[i].text.c_str());
    std::fflush(stdout);

    const graph::SchedulerMetrics m = scheduler.metrics();
    std::fprintf(
        stderr,
        "graphrun: %lld sequences, %lld prompt tokens evaluated (%lld more found in the prefix cache), "
        "%lld generated in %.2f s: %.1f tok/s over %lld forward passes (%d threads)\n",
        (long long)n, (long long)m.prompt_tokens, (long long)m.prompt_tokens_reused,
        (long long)m.generated_tokens, seconds, double(m.generated_tokens + m.prompt_tokens) / seconds,
        (long long)m.steps, scheduler.n_threads());
    if (opt.spec != "off") {
        const double rate = m.draft_proposed > 0 ? double(m.draft_accepted) / double(m.draft_proposed) : 0.0;
        const double per_turn = m.decode_turns > 0 ? double(m.decode_tokens) / double(m.decode_turns) : 0.0;
        std::fprintf(stderr,
                     "graphrun: speculative (%s): %lld tokens proposed, %lld accepted (%.1f%%), %lld sequence "
                     "turns for %lld tokens: %.2f tokens per pass per sequence\n",
                     opt.spec.c_str(), (long long)m.draft_proposed, (long long)m.draft_accepted, 100.0 * rate,
                     (long long)m.decode_turns, (long long)m.decode_tokens, per_turn);
    }
    for (size_t i = 0; i < outputs.size(); ++i)
        if (outputs[i].finish == graph::FinishReason::ContextFull)
            std::fprintf(stderr,
                         "graphrun: sequence %zu stopped at the end of the context (%lld positions)\n", i,
                         (long long)scheduler.n_ctx());
}

}  // namespace

void register_batched(CLI::App& app) {
    auto opt = std::make_shared<BatchedOptions>();
    CLI::App* cmd =
        app.add_subcommand("batched", "decode several sequences at once, one forward pass per step");
    SamplerParams& s = opt->sampling;
    cmd->add_option("--graph", opt->graph_path, "graph (JSON); default: models/<general.architecture>.json");
    cmd->add_option("-m,--model", opt->model_path, "model file (GGUF); default: models/kjv-q8_0.gguf");
    cmd->add_option("-p,--prompt", opt->prompt, "the prompt every sequence continues");
    cmd->add_option("-f,--file", opt->prompt_file, "one prompt per line, a sequence each");
    cmd->add_option("--parallel,--np", opt->parallel, "sequences (default: 4 with -p, the lines of -f)")
        ->check(whole_number_in(1, graph::kMaxSequences, "the sequence ceiling"));
    cmd->add_option("-n,--n-predict", opt->n_predict, "tokens to generate per sequence")
        ->check(whole_number_in(1, graph::kMaxPredict))
        ->capture_default_str();
    const int max_threads = tbb::info::default_concurrency();
    cmd->add_option("-t,--threads", opt->threads, "threads (0: every core)")
        ->check(whole_number_in(0, max_threads, "the threads this machine runs"));
    cmd->add_option("-c,--ctx-size", opt->ctx, "positions per sequence (0: the model's, at most 2048)")
        ->check(whole_number_in(0, graph::kMaxContext, "the context ceiling"));
    cmd->add_flag("--special", opt->special, "print special tokens too");
    cmd->add_option("--temp", s.temperature, "temperature (0: greedy)")->capture_default_str();
    cmd->add_option("--top-k", s.top_k, "keep the k most likely tokens (0: off)")
        ->check(whole_number_in(0, INT32_MAX))
        ->capture_default_str();
    cmd->add_option("--top-p", s.top_p, "keep the smallest set with this probability (1: off)")
        ->capture_default_str();
    cmd->add_option("--min-p", s.min_p, "drop tokens below this fraction of the best one (0: off)")
        ->capture_default_str();
    cmd->add_option("--seed", s.seed, "sequence I samples with seed SEED + I (default: random)");
    add_spec_options(*cmd, *opt);
    cmd->callback([cmd, opt] {
        BatchedOptions o = *opt;
        check_spec_options(*cmd, o);
        o.seed_given = cmd->count("--seed") > 0;
        run_batched(std::move(o));
    });
}

}  // namespace graphrun::tools
