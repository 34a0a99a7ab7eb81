// tools/lib/perplexity.cpp — llama-perplexity's perplexity and KL divergence (see perplexity.h).
//
// Per scored position the arithmetic is llama.cpp's (float logits, expf, a double sum of the
// exponentials), so the figures compare; positions are processed in parallel but their sums are
// taken in position order, so a run gives the same figures on any number of threads.
#include "tools/lib/perplexity.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "graph/limits.h"
#include "runtime/output_file.h"
#include "runtime/text/tokenizer.h"

namespace graphrun::graph {

namespace {

int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

struct Softmax {
    float max_logit;
    int argmax;
    double sum_exp;
};

Softmax softmax_of(const float* logits, int64_t n_vocab) {
    Softmax s{logits[0], 0, 0.0};
    for (int64_t i = 1; i < n_vocab; ++i)
        if (logits[i] > s.max_logit) {
            s.max_logit = logits[i];
            s.argmax = int(i);
        }
    for (int64_t i = 0; i < n_vocab; ++i) s.sum_exp += std::exp(logits[i] - s.max_logit);
    return s;
}

// -log p(tok), and the base file's codes for the row when `codes` is given: the log-probs of the top
// 16 nats of logits in 65535 steps (llama.cpp's format).
double nll_and_codes(const float* logits, int64_t n_vocab, int32_t tok, uint16_t* codes) {
    const Softmax s = softmax_of(logits, n_vocab);
    if (!codes) return -(double(logits[tok] - s.max_logit) - std::log(s.sum_exp));
    float min_logit = logits[0];
    for (int64_t i = 1; i < n_vocab; ++i) min_logit = std::min(min_logit, logits[i]);
    min_logit = std::max(min_logit, s.max_logit - 16);
    const float log_sum_exp = float(std::log(s.sum_exp));
    const float min_log_prob = min_logit - s.max_logit - log_sum_exp;
    const float scale = (s.max_logit - min_logit) / 65535.f;
    std::memcpy(codes, &scale, sizeof scale);
    std::memcpy(codes + 2, &min_log_prob, sizeof min_log_prob);
    uint16_t* q = codes + 4;
    std::memset(q, 0, size_t(kld_codes_per_position(n_vocab) - 4) * sizeof(uint16_t));
    if (scale != 0) {
        const float inv_scale = 1 / scale;
        for (int64_t i = 0; i < n_vocab; ++i)
            q[i] = logits[i] > min_logit ? uint16_t(nearest_int(inv_scale * (logits[i] - min_logit))) : 0;
    }
    return s.max_logit + log_sum_exp - logits[tok];
}

// What one scored position adds to the KL statistics (llama.cpp's log_softmax against a base row).
struct KlPosition {
    float nll, nll_base;
    double kld;
    float p_diff;
    bool same_top;
};

KlPosition compare_with_base(const float* logits, int64_t n_vocab, int32_t tok, const uint16_t* base) {
    const Softmax s = softmax_of(logits, n_vocab);
    const float log_sum_exp = float(std::log(s.sum_exp));
    float scale, min_log_prob;
    std::memcpy(&scale, base, sizeof scale);
    std::memcpy(&min_log_prob, base + 2, sizeof min_log_prob);
    const uint16_t* q = base + 4;
    KlPosition r{};
    r.nll = s.max_logit + log_sum_exp - logits[tok];
    r.nll_base = -(scale * float(q[tok]) + min_log_prob);
    const float log_norm = s.max_logit + log_sum_exp;
    double sum = 0;
    int argmax_base = -1;
    float best = 0;
    for (int64_t i = 0; i < n_vocab; ++i) {
        const float p_log_base = scale * float(q[i]) + min_log_prob;
        if (i == 0 || p_log_base > best) {
            best = p_log_base;
            argmax_base = int(i);
        }
        if (p_log_base > -16.f) sum += std::exp(p_log_base) * (p_log_base - logits[i] + log_norm);
    }
    r.kld = sum;
    r.same_top = s.argmax == argmax_base;
    r.p_diff = std::exp(-r.nll) - std::exp(-r.nll_base);
    return r;
}

// (mean, standard error of the mean) from a sum and a sum of squares; llama.cpp's rule.
std::pair<double, double> mean_and_error(double sum, double sum2, int64_t count) {
    if (count < 1) return {0., 0.};
    const double f = sum / double(count);
    double df = sum2 / double(count) - f * f;
    df = df > 0 && count > 10 ? std::sqrt(df / double(count - 1)) : 0.;
    return {f, df};
}

double covariance(double suma, double sumb, double sumab, int64_t count) {
    if (count < 10) return 0.0;
    const double n = double(count);
    return (sumab / n - (suma / n) * (sumb / n)) / (n - 1);
}

// llama.cpp's percentile (in float, as it computes it): linear between the two nearest sorted values.
float percentile(const std::vector<float>& sorted, float fraction) {
    if (fraction <= 0) return sorted.front();
    if (fraction >= 1) return sorted.back();
    float p = fraction * float(sorted.size() - 1);
    const size_t ip = size_t(p);
    p -= float(ip);
    return (1 - p) * sorted[ip] + p * sorted[std::min(ip + 1, sorted.size() - 1)];
}

float median(const std::vector<float>& sorted) {
    const size_t n = sorted.size();
    return n % 2 == 0 ? 0.5f * (sorted[n / 2] + sorted[n / 2 - 1]) : sorted[n / 2];
}

void check_chunk_length(int64_t n_ctx) {
    if (n_ctx < 4 || n_ctx > kMaxContext)
        throw PerplexityError("perplexity: a chunk of " + std::to_string(n_ctx) +
                              " tokens (-c) is outside 4.." + std::to_string(kMaxContext));
}

// Evaluates chunks one by one from an empty cache, first token -> BOS, and hands each chunk's
// logits (n_ctx, n_vocab) to `scored`.
class ChunkRunner {
  public:
    ChunkRunner(std::shared_ptr<const Model> model, int64_t n_ctx, int n_threads)
        : session_(model, {.n_ctx = n_ctx, .n_threads = n_threads, .max_batch = std::min(n_ctx, kMaxBatch)}),
          n_ctx_(n_ctx) {
        const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
        bos_ = tokenizer.add_bos() ? tokenizer.bos() : -1;
    }
    int64_t n_vocab() const { return session_.n_vocab(); }

    std::span<const float> eval(const int32_t* tokens) {
        chunk_.assign(tokens, tokens + n_ctx_);
        if (bos_ >= 0) chunk_[0] = bos_;
        session_.reset();
        return session_.eval(chunk_);
    }

  private:
    Session session_;
    int64_t n_ctx_;
    int32_t bos_ = -1;
    std::vector<int32_t> chunk_;
};

}  // namespace

PerplexityRun perplexity(std::shared_ptr<const Model> model, const std::vector<int32_t>& tokens,
                         const PerplexityOptions& options, const ChunkProgress& progress) {
    const int64_t n_ctx = options.n_ctx;
    check_chunk_length(n_ctx);
    if (int64_t(tokens.size()) < 2 * n_ctx)
        throw PerplexityError("perplexity: the text is " + std::to_string(tokens.size()) +
                              " tokens; a context of " + std::to_string(n_ctx) + " needs at least " +
                              std::to_string(2 * n_ctx) + " (lower -c)");
    PerplexityRun run;
    run.n_ctx = n_ctx;
    run.n_chunks = int64_t(tokens.size()) / n_ctx;
    if (options.max_chunks >= 0) run.n_chunks = std::min(run.n_chunks, options.max_chunks);
    ChunkRunner runner(model, n_ctx, options.n_threads);
    const int64_t n_vocab = runner.n_vocab(), first = n_ctx / 2, scored = n_ctx - 1 - first;
    const int64_t nv = kld_codes_per_position(n_vocab);

    std::unique_ptr<OutputFile> base;
    std::vector<uint16_t> codes;
    if (!options.save_base.empty()) {
        try {
            base = std::make_unique<OutputFile>(options.save_base);
        } catch (const OutputError& e) {
            throw PerplexityError(std::string("perplexity: --kl-divergence-base: ") + e.what());
        }
        KldFileHeader header{{}, uint32_t(n_ctx), int32_t(n_vocab), int32_t(run.n_chunks)};
        std::memcpy(header.magic, kKldMagic, sizeof header.magic);
        base->write(&header, sizeof header);
        base->write(tokens.data(), size_t(run.n_chunks * n_ctx) * sizeof(int32_t));
        codes.resize(size_t(scored * nv));
    }

    double nll = 0, nll2 = 0;
    std::vector<double> position_nll(static_cast<size_t>(scored));
    for (int64_t c = 0; c < run.n_chunks; ++c) {
        const int32_t* chunk = tokens.data() + c * n_ctx;
        const std::span<const float> logits = runner.eval(chunk);
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, scored), [&](const tbb::blocked_range<int64_t>& r) {
            for (int64_t j = r.begin(); j < r.end(); ++j)
                position_nll[size_t(j)] =
                    nll_and_codes(logits.data() + (first + j) * n_vocab, n_vocab, chunk[first + j + 1],
                                  base ? codes.data() + j * nv : nullptr);
        });
        for (double v : position_nll) {
            nll += v;
            nll2 += v * v;
        }
        if (base) base->write(codes.data(), codes.size() * sizeof(uint16_t));
        run.count += scored;
        run.running_ppl.push_back(std::exp(nll / double(run.count)));
        if (progress) progress(c + 1, run.n_chunks, run.running_ppl.back());
    }
    const double mean = nll / double(run.count);
    run.ppl = std::exp(mean);
    const double var = nll2 / double(run.count) - mean * mean;
    run.ppl_error = var > 0 ? std::sqrt(var / double(run.count - 1)) * run.ppl : 0.0;
    if (base) base->commit();
    return run;
}

namespace {

// What a base file's header says.
struct BaseHeader {
    int64_t n_ctx = 0;
    int32_t n_vocab = 0, n_chunks = 0;
};

PerplexityError base_file_error(const std::string& path, const std::string& what) {
    return PerplexityError("kl-divergence: " + path + ": " + what);
}

BaseHeader read_base_header(std::ifstream& in, const std::string& path) {
    KldFileHeader header{};
    constexpr size_t kFieldsAt = offsetof(KldFileHeader, n_ctx);
    if (!in.read(header.magic, kFieldsAt) || std::memcmp(header.magic, kKldMagic, kFieldsAt) != 0)
        throw base_file_error(path, "not a log-probability file (it does not start with \"_logits_\")");
    if (!in.read(reinterpret_cast<char*>(&header) + kFieldsAt, sizeof header - kFieldsAt))
        throw base_file_error(path, "truncated header (n_ctx, n_vocab, n_chunk at bytes " +
                                        std::to_string(kFieldsAt) + ".." + std::to_string(sizeof header - 1) + ")");
    BaseHeader h;
    h.n_ctx = int64_t(header.n_ctx);
    h.n_vocab = header.n_vocab;
    h.n_chunks = header.n_chunks;
    check_chunk_length(h.n_ctx);
    if (h.n_chunks < 1)
        throw base_file_error(path, "n_chunk is " + std::to_string(h.n_chunks) + " at byte " +
                                        std::to_string(offsetof(KldFileHeader, n_chunks)) + ", expected at least 1");
    return h;
}

// The base file's tokens, once its size is the one the header implies (checked before anything
// large is allocated) and every token is inside the vocabulary.
std::vector<int32_t> read_base_tokens(std::ifstream& in, const std::string& path, const BaseHeader& h) {
    const int64_t n_ctx = h.n_ctx, n_chunks = h.n_chunks, n_vocab = h.n_vocab;
    in.seekg(0, std::ios::end);
    const uint64_t file_size = uint64_t(in.tellg());
    const uint64_t want = kld_file_bytes(n_ctx, n_vocab, n_chunks);
    if (file_size != want)
        throw base_file_error(path, std::to_string(file_size) + " bytes, but its header (n_ctx " +
                                        std::to_string(n_ctx) + ", n_vocab " + std::to_string(n_vocab) +
                                        ", " + std::to_string(n_chunks) + " chunks) says " +
                                        std::to_string(want));
    in.seekg(sizeof(KldFileHeader));
    std::vector<int32_t> tokens(size_t(n_chunks) * size_t(n_ctx));
    in.read(reinterpret_cast<char*>(tokens.data()), std::streamsize(tokens.size() * 4));
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            throw base_file_error(path, "token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                                            ", outside the vocabulary");
    return tokens;
}

// The sums the KL statistics are taken from, position by position in order; float products summed in
// double, as llama.cpp does.
struct KlSums {
    double nll = 0, nll2 = 0, base = 0, base2 = 0, cross = 0, kld = 0, kld2 = 0;
    double pd = 0, pd2 = 0, pd4 = 0;
    int64_t same_top = 0;
    std::vector<float> klds, p_diffs;

    void add(const KlPosition& p) {
        nll += p.nll;
        nll2 += p.nll * p.nll;
        base += p.nll_base;
        base2 += p.nll_base * p.nll_base;
        cross += p.nll * p.nll_base;
        kld += p.kld;
        kld2 += p.kld * p.kld;
        pd += p.p_diff;
        const double p_diff2 = p.p_diff * p.p_diff;
        pd2 += p_diff2;
        pd4 += p_diff2 * p_diff2;
        same_top += p.same_top;
        klds.push_back(float(p.kld));
        p_diffs.push_back(p.p_diff);
    }
};

// The figures llama-perplexity prints from the sums of r.count positions (sorts the KLD and
// probability-difference lists for the percentiles).
void summarize(KlSums& s, KlDivergence& r) {
    const int64_t n = r.count;
    const auto log_ppl = mean_and_error(s.nll, s.nll2, n);
    const auto log_ppl_base = mean_and_error(s.base, s.base2, n);
    r.ppl = std::exp(log_ppl.first);
    r.ppl_error = r.ppl * log_ppl.second;
    r.ppl_base = std::exp(log_ppl_base.first);
    r.ppl_base_error = r.ppl_base * log_ppl_base.second;
    const double cov = covariance(s.nll, s.base, s.cross, n);
    r.log_ppl_correlation = cov / (log_ppl.second * log_ppl_base.second);
    r.log_ppl_ratio = log_ppl.first - log_ppl_base.first;
    r.log_ppl_ratio_error = std::sqrt(
        std::max(0.0, log_ppl.second * log_ppl.second + log_ppl_base.second * log_ppl_base.second - 2 * cov));
    const auto kld = mean_and_error(s.kld, s.kld2, n);
    r.kld_mean = kld.first;
    r.kld_error = kld.second;
    std::vector<float>& klds = s.klds;
    std::vector<float>& p_diffs = s.p_diffs;
    std::sort(klds.begin(), klds.end());
    std::sort(p_diffs.begin(), p_diffs.end());
    r.kld_max = klds.back();
    r.kld_99_9 = percentile(klds, 0.999f);
    r.kld_99 = percentile(klds, 0.99f);
    r.kld_95 = percentile(klds, 0.95f);
    r.kld_90 = percentile(klds, 0.90f);
    r.kld_median = median(klds);
    r.kld_10 = percentile(klds, 0.10f);
    r.kld_5 = percentile(klds, 0.05f);
    r.kld_1 = percentile(klds, 0.01f);
    r.kld_0_1 = percentile(klds, 0.001f);
    r.kld_min = klds.front();
    const auto pd = mean_and_error(s.pd, s.pd2, n);
    r.p_diff_mean = pd.first;
    r.p_diff_error = pd.second;
    const auto pd_mse = mean_and_error(s.pd2, s.pd4, n);
    r.p_diff_rms = std::sqrt(pd_mse.first);
    r.p_diff_rms_error = r.p_diff_rms > 0 ? 0.5 / r.p_diff_rms * pd_mse.second : 0.0;
    r.p_diff_max = p_diffs.back();
    r.p_diff_99 = percentile(p_diffs, 0.99f);
    r.p_diff_median = median(p_diffs);
    r.p_diff_1 = percentile(p_diffs, 0.01f);
    r.p_diff_min = p_diffs.front();
    r.same_top = double(s.same_top) / double(n);
    r.same_top_error = n > 1 ? std::sqrt(r.same_top * (1 - r.same_top) / double(n - 1)) : 0.0;
}

}  // namespace

KlDivergence kl_divergence(std::shared_ptr<const Model> model, const std::string& base_path,
                           const PerplexityOptions& options, const ChunkProgress& progress) {
    std::ifstream in(base_path, std::ios::binary);
    if (!in) throw PerplexityError("kl-divergence: cannot open " + base_path);
    const BaseHeader header = read_base_header(in, base_path);
    const int64_t n_ctx = header.n_ctx;
    ChunkRunner runner(model, n_ctx, options.n_threads);
    const int64_t n_vocab = runner.n_vocab();
    if (header.n_vocab != n_vocab)
        throw base_file_error(base_path, "saved with a vocabulary of " + std::to_string(header.n_vocab) +
                                             " tokens, the model has " + std::to_string(n_vocab));
    const int64_t first = n_ctx / 2, scored = n_ctx - 1 - first, nv = kld_codes_per_position(n_vocab);
    const std::vector<int32_t> tokens = read_base_tokens(in, base_path, header);

    int64_t chunks = header.n_chunks;
    if (options.max_chunks >= 0) chunks = std::min(chunks, options.max_chunks);
    KlDivergence r;
    r.n_ctx = n_ctx;
    r.n_chunks = chunks;
    KlSums sums;
    std::vector<uint16_t> codes(size_t(scored * nv));
    std::vector<KlPosition> positions(static_cast<size_t>(scored));
    for (int64_t c = 0; c < chunks; ++c) {
        in.read(reinterpret_cast<char*>(codes.data()), std::streamsize(codes.size() * 2));
        const int32_t* chunk = tokens.data() + c * n_ctx;
        const std::span<const float> logits = runner.eval(chunk);
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, scored), [&](const tbb::blocked_range<int64_t>& rg) {
            for (int64_t j = rg.begin(); j < rg.end(); ++j)
                positions[size_t(j)] = compare_with_base(logits.data() + (first + j) * n_vocab, n_vocab,
                                                         chunk[first + j + 1], codes.data() + j * nv);
        });
        for (const KlPosition& p : positions) sums.add(p);
        r.count += scored;
        if (progress) progress(c + 1, chunks, std::exp(sums.nll / double(r.count)));
    }
    summarize(sums, r);
    return r;
}

}  // namespace graphrun::graph
