// tools/cmd_perplexity.cpp — `graphrun perplexity -m MODEL -f TEXT [-c N] [--chunks N]
// [--kl-divergence-base FILE [--kl-divergence]]`: perplexity on a text as llama-perplexity computes it,
// and the KL divergence of a (quantized) model against a base model's saved log-probs
// (tools/lib/perplexity.h has the method and the file format, which is llama.cpp's).
//
//   graphrun perplexity -m base.gguf -f text.txt -c 256 --kl-divergence-base base.kld   # PPL, saves
//   graphrun perplexity -m q4_k_m.gguf --kl-divergence-base base.kld --kl-divergence    # KLD vs base
//
// stdout: the running PPL per chunk ("[1]12.3456,[2]..."), then the final estimate or the KLD
// statistics. Errors (too short a text, a bad base file) name what was wrong.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "graph/limits.h"
#include "tools/lib/perplexity.h"
#include "engine/session.h"
#include "runtime/bounded_read.h"
#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

struct PerplexityCliOptions {
    std::string model, file, base;
    int64_t n_ctx = 512, chunks = -1;
    int threads = 0;
    bool kl_divergence = false;
};

void print_running(int64_t done, int64_t, double ppl) {
    std::printf("[%lld]%.4f,", (long long)done, ppl);
    std::fflush(stdout);
}

void run_kl_divergence(const std::shared_ptr<const graph::Model>& model, const PerplexityCliOptions& o) {
    const graph::KlDivergence k =
        graph::kl_divergence(model, o.base, {.max_chunks = o.chunks, .n_threads = o.threads}, print_running);
    std::printf("\n\nkl-divergence: %lld chunks of %lld tokens, %lld scored positions, against %s\n",
                (long long)k.n_chunks, (long long)k.n_ctx, (long long)k.count, o.base.c_str());
    std::printf("Mean PPL(Q)                   : %10.6f ± %10.6f\n", k.ppl, k.ppl_error);
    std::printf("Mean PPL(base)                : %10.6f ± %10.6f\n", k.ppl_base, k.ppl_base_error);
    std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100.0 * k.log_ppl_correlation);
    std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", k.log_ppl_ratio, k.log_ppl_ratio_error);
    std::printf("Mean    KLD: %10.6f ± %10.6f\n", k.kld_mean, k.kld_error);
    std::printf("Maximum KLD: %10.6f\n99.9%%   KLD: %10.6f\n99.0%%   KLD: %10.6f\nMedian  KLD: %10.6f\n",
                k.kld_max, k.kld_99_9, k.kld_99, k.kld_median);
    std::printf("Minimum KLD: %10.6f\n", k.kld_min);
    std::printf("Mean    Δp: %6.3f ± %5.3f %%\n", 100.0 * k.p_diff_mean, 100.0 * k.p_diff_error);
    std::printf("RMS Δp    : %6.3f ± %5.3f %%\n", 100.0 * k.p_diff_rms, 100.0 * k.p_diff_rms_error);
    std::printf("Same top p: %6.3f ± %5.3f %%\n", 100.0 * k.same_top, 100.0 * k.same_top_error);
}

void run_perplexity(const PerplexityCliOptions& o) {
    if (o.kl_divergence && o.base.empty())
        throw std::runtime_error(
            "perplexity: --kl-divergence needs --kl-divergence-base FILE (the base log-probs)");
    if (!o.kl_divergence && o.file.empty())
        throw std::runtime_error("perplexity: give the text with -f FILE");
    const auto model = graph::Model::load(o.model);
    if (o.kl_divergence) return run_kl_divergence(model, o);

    std::string text;
    try {
        text = read_bounded_file(o.file, graph::kMaxPromptFileBytes, "text to score");
    } catch (const FileReadError& e) {
        throw std::runtime_error(std::string("-f ") + e.what());
    }
    const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
    const std::vector<int32_t> tokens = tokenizer.encode(text, tokenizer.add_bos());
    std::fprintf(stderr, "perplexity: %s: %zu tokens, chunks of %lld\n", o.file.c_str(), tokens.size(),
                 (long long)o.n_ctx);
    const graph::PerplexityRun r = graph::perplexity(
        model, tokens,
        {.n_ctx = o.n_ctx, .max_chunks = o.chunks, .n_threads = o.threads, .save_base = o.base},
        print_running);
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f (%lld chunks of %lld, %lld scored tokens)\n", r.ppl,
                r.ppl_error, (long long)r.n_chunks, (long long)r.n_ctx, (long long)r.count);
    if (!o.base.empty()) std::printf("saved the log-probs to %s\n", o.base.c_str());
}

}  // namespace

void register_perplexity(CLI::App& app) {
    auto o = std::make_shared<PerplexityCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "perplexity",
        "Perplexity on a text and KL divergence against a base model, as llama-perplexity computes them");
    cmd->add_option("-m,--model", o->model, "The .gguf model")->required();
    cmd->add_option("-f,--file", o->file, "The text (at most 64 MiB)");
    cmd->add_option("-c,--ctx-size", o->n_ctx, "Tokens per chunk; the second half of each is scored")
        ->check(CLI::Range(int64_t(4), int64_t(1) << 24));
    cmd->add_option("--chunks", o->chunks, "Score at most this many chunks (default: all)")
        ->check(CLI::Range(int64_t(1), int64_t(1) << 31));
    cmd->add_option("-t,--threads", o->threads, "Threads (0: every core)")->check(CLI::Range(0, 4096));
    cmd->add_option("--kl-divergence-base", o->base,
                    "Save the log-probs here (with -f), or read them (with --kl-divergence)");
    cmd->add_flag("--kl-divergence", o->kl_divergence, "Compare with the log-probs in --kl-divergence-base");
    cmd->callback([o] { run_perplexity(*o); });
}

}  // namespace graphrun::tools
