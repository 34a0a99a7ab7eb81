// tools/lib/bench.cpp — running llama-bench's pp/tg tests on a graphrun session.
#include "tools/lib/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>

namespace graphrun::graph {

std::string BenchTest::name() const {
    std::string s;
    if (n_prompt > 0 && n_gen == 0)
        s = "pp" + std::to_string(n_prompt);
    else if (n_gen > 0 && n_prompt == 0)
        s = "tg" + std::to_string(n_gen);
    else
        s = "pp" + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen);
    if (n_depth > 0) s += " @ d" + std::to_string(n_depth);
    return s;
}

std::vector<BenchTest> bench_tests(const BenchOptions& o) {
    std::vector<int> threads = o.n_threads;
    if (threads.empty()) threads.push_back(int(std::max(1u, std::thread::hardware_concurrency())));
    std::vector<BenchTest> tests;
    for (const std::string& model : o.models)
        for (int64_t ub : o.n_ubatch)
            for (int t : threads)
                for (int64_t d : o.n_depth) {
                    auto add = [&](int64_t p, int64_t n) {
                        if (p > 0 || n > 0) tests.push_back({model, p, n, d, t, ub});
                    };
                    for (int64_t p : o.n_prompt) add(p, 0);
                    for (int64_t n : o.n_gen) add(0, n);
                    for (auto [p, n] : o.n_pg) add(p, n);
                }
    return tests;
}

BenchModelInfo bench_model_info(const Model& model, Session& session) {
    const GgufFile& file = model.file();
    BenchModelInfo info;
    std::map<DType, uint64_t> matrix_bytes;  // the type most matrix bytes have names the file
    for (const GgufTensor& t : file.tensors()) {
        info.size += t.nbytes;
        info.n_params += uint64_t(t.n_elements());
        if (t.ne.size() >= 2) matrix_bytes[t.type] += t.nbytes;
    }
    std::string type = "?";
    if (!matrix_bytes.empty()) {
        type = dtype_name(std::max_element(matrix_bytes.begin(), matrix_bytes.end(), [](auto& a, auto& b) {
                              return a.second < b.second;
                          })->first);
        std::transform(type.begin(), type.end(), type.begin(),
                       [](unsigned char c) { return char(std::toupper(c)); });
    }
    char params[32];
    const double n = double(info.n_params);
    if (n >= 1e9)
        std::snprintf(params, sizeof params, "%.1fB", n / 1e9);
    else if (n >= 1e6)
        std::snprintf(params, sizeof params, "%.1fM", n / 1e6);
    else
        std::snprintf(params, sizeof params, "%.1fK", n / 1e3);
    info.type = file.find_string("general.architecture").value_or("?") + " " + params + " " + type;

    info.decode_weight_bytes = step_weight_bytes(session.plan(1));
    return info;
}

int64_t step_weight_bytes(const Plan& plan) {
    // Every weight a step uses is read in full, except that an embedding reads a row per token.
    std::set<int> full, embedded;
    for (const PlanStep& step : plan.steps)
        for (size_t i = 0; i < step.inputs.size(); ++i)
            if (plan.tensors[step.inputs[i]].kind == PlanTensor::Kind::Weight)
                (std::string_view(step.op->name) == "embedding" ? embedded : full).insert(step.inputs[i]);
    int64_t bytes = 0;
    for (int id : full) bytes += plan.tensors[id].bytes;
    for (int id : embedded)
        if (!full.count(id)) {
            const ops::TensorDesc& d = plan.tensors[id].desc;
            bytes += std::min(plan.n_tokens, d.shape.front()) * row_bytes(d.dtype, d.shape.back());
        }
    return bytes;
}

std::vector<double> BenchResult::samples_ts() const {
    std::vector<double> ts;
    for (int64_t ns : samples_ns) ts.push_back(1e9 * double(test.n_prompt + test.n_gen) / double(ns));
    return ts;
}

namespace {
double mean(const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}
double sample_stddev(const std::vector<double>& v) {
    if (v.size() <= 1) return 0.0;
    const double m = mean(v);
    double sq = 0;
    for (double x : v) sq += (x - m) * (x - m);
    return std::sqrt(sq / double(v.size() - 1));
}
std::vector<double> as_doubles(const std::vector<int64_t>& v) {
    return {v.begin(), v.end()};
}
}  // namespace

double BenchResult::avg_ts() const {
    return mean(samples_ts());
}
double BenchResult::stddev_ts() const {
    return sample_stddev(samples_ts());
}
int64_t BenchResult::avg_ns() const {
    return int64_t(mean(as_doubles(samples_ns)));
}
int64_t BenchResult::stddev_ns() const {
    return int64_t(sample_stddev(as_doubles(samples_ns)));
}
double BenchResult::weights_gbps() const {
    if (test.n_gen == 0 || test.n_prompt != 0) return 0.0;
    return double(model.decode_weight_bytes) * avg_ts() / 1e9;
}

namespace {

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%FT%TZ", &tm);
    return buf;
}

// Random tokens as llama-bench draws them: the first one of a sequence is BOS when the model adds
// one; the values do not change the work, only that the cache holds real rows.
class TokenSource {
  public:
    explicit TokenSource(const Model& model, int64_t n_vocab) : n_vocab_(int32_t(n_vocab)) {
        const GgufFile& f = model.file();
        const auto bos = f.find_int("tokenizer.ggml.bos_token_id");
        const GgufValue* add = f.find("tokenizer.ggml.add_bos_token");
        if (bos && *bos >= 0 && *bos < n_vocab && !(add && add->type == GgufType::BOOL && add->u == 0))
            bos_ = int32_t(*bos);
    }
    int32_t random() { return std::uniform_int_distribution<int32_t>(0, n_vocab_ - 1)(rng_); }
    std::vector<int32_t> prompt(int64_t n, bool at_start) {
        std::vector<int32_t> ids(static_cast<size_t>(n));
        for (int32_t& id : ids) id = random();
        if (at_start && bos_ >= 0 && n > 0) ids[0] = bos_;
        return ids;
    }
    int32_t first_generated() { return bos_ >= 0 ? bos_ : random(); }

  private:
    int32_t n_vocab_;
    int32_t bos_ = -1;
    std::mt19937 rng_{1234};
};

// A prompt is evaluated for the logits of its last token only, as llama-bench's is (llama_batch_get_one
// leaves the batch's output flags unset, and llama.cpp then outputs the last token alone): the output
// matrix is then one row's work, not n_prompt rows'.
constexpr Session::Logits kLast = Session::Logits::Last;

void generate_tokens(Session& session, TokenSource& tokens, int64_t n) {
    int32_t token = tokens.first_generated();
    for (int64_t i = 0; i < n; ++i) {
        session.eval(std::span<const int32_t>(&token, 1));
        token = tokens.random();
    }
}

}  // namespace

BenchResult run_bench_test(const std::shared_ptr<const Model>& model, const BenchTest& test, int repetitions,
                           bool warmup, Profiler* profiler) {
    SessionOptions options;
    options.n_ctx = std::max<int64_t>(1, test.n_depth + test.n_prompt + test.n_gen);
    options.n_threads = test.n_threads;
    options.max_batch = test.n_ubatch;
    Session session(model, options);
    TokenSource tokens(*model, session.n_vocab());

    BenchResult result;
    result.test = test;
    result.model = bench_model_info(*model, session);
    result.test_time = utc_now();

    if (warmup) {
        if (test.n_prompt > 0) session.eval(tokens.prompt(test.n_prompt, true), kLast);
        session.reset();
        if (test.n_gen > 0) generate_tokens(session, tokens, 1);
        session.reset();
    }
    if (test.n_depth > 0) session.eval(tokens.prompt(test.n_depth, true), kLast);
    const std::vector<int32_t> prompt = tokens.prompt(test.n_prompt, test.n_depth == 0);

    if (profiler) profiler->set_section(test.name() + " t" + std::to_string(test.n_threads));
    for (int r = 0; r < repetitions; ++r) {
        session.truncate(std::min(test.n_depth, session.n_past()));
        session.set_timeline(profiler);
        const auto start = std::chrono::steady_clock::now();
        if (test.n_prompt > 0) session.eval(prompt, kLast);
        if (test.n_gen > 0) generate_tokens(session, tokens, test.n_gen);
        const auto stop = std::chrono::steady_clock::now();
        session.set_timeline(nullptr);  // (the session, and with it the pointer, dies with this function)
        result.samples_ns.push_back(
            std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count());
    }
    return result;
}

}  // namespace graphrun::graph
