// engine/generate.cpp — the decode loop.
#include "engine/generate.h"

#include <chrono>

namespace graphrun::graph {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

GenerationStats generate(Session& session, Sampler& sampler, std::span<const int32_t> prompt, int64_t n_predict,
                         const std::function<bool(int32_t token)>& on_token, Profiler* profiler) {
    GenerationStats stats;
    if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty");
    for (int32_t id : prompt) sampler.accept(id);

    if (profiler) profiler->set_section("prompt");
    session.set_timeline(profiler);
    struct StopRecording {
        Session& session;
        ~StopRecording() { session.set_timeline(nullptr); }
    } stop_recording{session};
    auto start = std::chrono::steady_clock::now();
    std::span<const float> logits = session.eval(prompt, Session::Logits::Last);
    stats.prompt_seconds = seconds_since(start);
    stats.prompt_tokens = int64_t(prompt.size());

    if (profiler) profiler->set_section("decode");
    start = std::chrono::steady_clock::now();
    while (n_predict < 0 || stats.generated_tokens < n_predict) {
        const int32_t token = sampler.sample(logits);
        sampler.accept(token);
        ++stats.generated_tokens;
        if (!on_token(token)) break;
        stats.context_full = session.n_past() >= session.n_ctx();
        if (stats.generated_tokens == n_predict || stats.context_full) {
            stats.unevaluated_token = token;
            break;
        }
        logits = session.eval(std::span<const int32_t>(&token, 1));
        ++stats.decode_steps;
    }
    stats.decode_seconds = seconds_since(start);
    return stats;
}

}  // namespace graphrun::graph
