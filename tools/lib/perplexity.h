// tools/lib/perplexity.h — perplexity and KL divergence of a model on a text, as llama.cpp's
// llama-perplexity computes them, so that figures compare across the two.
//
//   auto model = Model::load("kjv-q4_k_m.gguf");
//   PerplexityRun run = perplexity(model, tokens, {.n_ctx = 256});       // run.ppl, run.ppl_error
//   perplexity(base, tokens, {.n_ctx = 256, .save_base = "base.kld"});  // also saves log-probs
//   KlDivergence kld = kl_divergence(model, "base.kld", {});             // against those
//
// The method (llama-perplexity's default, without --ppl-stride): the tokens (the whole text,
// tokenized once with BOS when the model asks for one) are cut into chunks of n_ctx; each chunk is
// evaluated alone from an empty KV cache, its first token replaced by BOS, and only the second half
// is scored: the logits at positions n_ctx/2 .. n_ctx-2 predict the next token, so every scored token
// has at least n_ctx/2 tokens of context. PPL = exp(mean negative log-likelihood); its uncertainty is
// PPL * the standard error of that mean.
//
// The base file is llama.cpp's --kl-divergence-base format, byte for byte, so either tool can read the
// other's: "_logits_", u32 n_ctx, i32 n_vocab, i32 n_chunk, i32 tokens[n_chunk * n_ctx], then for
// every scored position nv = 2 * ceil(n_vocab / 2) + 4 u16: a float scale and a float min log-prob
// (4 u16), then each token's log-prob as round((logit - min) / scale) over the top 16 nats.
// KldFileHeader and the kld_* functions below are that layout, for the writer and the reader alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/session.h"

namespace graphrun::graph {

class PerplexityError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct PerplexityOptions {
    int64_t n_ctx = 512;      // chunk length (llama-perplexity's -c)
    int64_t max_chunks = -1;  // at most this many chunks; -1: all
    int n_threads = 0;
    std::string save_base{};  // write the base log-probs here (llama-perplexity --kl-divergence-base)
};

struct PerplexityRun {
    int64_t n_ctx = 0, n_chunks = 0;
    int64_t count = 0;  // scored tokens: n_chunks * (n_ctx - 1 - n_ctx / 2)
    double ppl = 0, ppl_error = 0;
    std::vector<double> running_ppl;  // after each chunk, as llama-perplexity prints "[i]ppl,"
};

// Chunk callback: (chunks done, chunks in all, the running PPL), for progress output.
using ChunkProgress = std::function<void(int64_t done, int64_t total, double ppl)>;

// `tokens` are the whole text's ids (BOS first when the model wants one). Throws PerplexityError when
// they are fewer than 2 * n_ctx, n_ctx is below 4 or above what a plan allows, or the base file cannot
// be written.
PerplexityRun perplexity(std::shared_ptr<const Model> model, const std::vector<int32_t>& tokens,
                         const PerplexityOptions& options, const ChunkProgress& progress = {});

// The base file's first bytes; no padding, so the struct is the 20 bytes as stored.
struct KldFileHeader {
    char magic[8];  // kKldMagic
    uint32_t n_ctx;
    int32_t n_vocab;
    int32_t n_chunks;  // then i32 tokens[n_chunks * n_ctx], then the codes
};
static_assert(sizeof(KldFileHeader) == 20 && offsetof(KldFileHeader, n_ctx) == 8 &&
              offsetof(KldFileHeader, n_chunks) == 16);
inline constexpr char kKldMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

// u16 per scored position in a base file: scale and min log-prob (two floats), the vocabulary
// padded to an even count.
constexpr int64_t kld_codes_per_position(int64_t n_vocab) {
    return 2 * ((n_vocab + 1) / 2) + 4;
}
// A whole base file's bytes: the header, the tokens, the codes of every chunk's scored positions.
constexpr uint64_t kld_file_bytes(int64_t n_ctx, int64_t n_vocab, int64_t n_chunks) {
    const int64_t scored = n_ctx - 1 - n_ctx / 2;
    return sizeof(KldFileHeader) + uint64_t(n_chunks) * uint64_t(n_ctx) * 4 +
           uint64_t(n_chunks) * uint64_t(scored) * uint64_t(kld_codes_per_position(n_vocab)) * 2;
}

// The figures llama-perplexity --kl-divergence prints.
struct KlDivergence {
    int64_t n_ctx = 0, n_chunks = 0, count = 0;
    double ppl = 0, ppl_error = 0;                      // this model
    double ppl_base = 0, ppl_base_error = 0;            // the base, from its saved log-probs
    double log_ppl_ratio = 0, log_ppl_ratio_error = 0;  // mean ln(PPL(Q) / PPL(base))
    double log_ppl_correlation = 0;
    double kld_mean = 0, kld_error = 0;
    double kld_max = 0, kld_99_9 = 0, kld_99 = 0, kld_95 = 0, kld_90 = 0, kld_median = 0;
    double kld_10 = 0, kld_5 = 0, kld_1 = 0, kld_0_1 = 0, kld_min = 0;
    double p_diff_mean = 0, p_diff_error = 0;  // mean of p(token) - p_base(token)
    double p_diff_rms = 0, p_diff_rms_error = 0;
    double p_diff_max = 0, p_diff_99 = 0, p_diff_median = 0, p_diff_1 = 0, p_diff_min = 0;
    double same_top = 0, same_top_error = 0;  // fraction of positions whose argmax is the base's
};

// Evaluates the tokens stored in `base_path` with `model` and compares with the stored log-probs.
// Throws PerplexityError naming the file and the field for a bad or truncated base file, or a
// vocabulary that differs from the model's.
KlDivergence kl_divergence(std::shared_ptr<const Model> model, const std::string& base_path,
                           const PerplexityOptions& options, const ChunkProgress& progress = {});

}  // namespace graphrun::graph
