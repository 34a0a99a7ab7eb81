// server/metrics.cpp — see metrics.h.
#include "server/metrics.h"

#include <cstdio>

namespace graphrun::server {

namespace {
std::string number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    return buf;
}
}  // namespace

void Histogram::observe(double seconds) {
    for (size_t i = 0; i < kBounds.size(); ++i)
        if (seconds <= kBounds[i]) {
            ++buckets_[i];
            break;
        }
    ++count_;  // above the last bound: counted only in +Inf
    sum_ += seconds;
}

std::string Histogram::render(const std::string& name) const {
    std::string out;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kBounds.size(); ++i) {
        cumulative += buckets_[i];
        out += name + "_bucket{le=\"" + number(kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
    out += name + "_sum " + number(sum_) + "\n";
    out += name + "_count " + std::to_string(count_) + "\n";
    return out;
}

void ServerMetrics::count_request(const std::string& endpoint, int status) {
    count_request(endpoint, std::to_string(status));
}

void ServerMetrics::count_request(const std::string& endpoint, const std::string& status) {
    std::lock_guard lock(mutex_);
    ++requests_[{endpoint, status}];
}

void ServerMetrics::count_tokens(int64_t prompt, int64_t generated) {
    std::lock_guard lock(mutex_);
    prompt_tokens_ += uint64_t(prompt);
    generated_tokens_ += uint64_t(generated);
}

void ServerMetrics::observe_first_token(double seconds) {
    std::lock_guard lock(mutex_);
    first_token_.observe(seconds);
}

void ServerMetrics::observe_token(double seconds) {
    std::lock_guard lock(mutex_);
    per_token_.observe(seconds);
}

std::string ServerMetrics::render(const BackendMetrics& b) const {
    std::lock_guard lock(mutex_);
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    };
    metric("graphrun_requests_total", "counter", "HTTP requests answered, by endpoint and status (or cancelled).");
    for (const auto& [key, n] : requests_)
        out += "graphrun_requests_total{endpoint=\"" + key.first + "\",status=\"" + key.second + "\"} " +
               std::to_string(n) + "\n";
    metric("graphrun_prompt_tokens_total", "counter", "Prompt tokens of the completions answered.");
    out += "graphrun_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
    metric("graphrun_prompt_tokens_cached_total", "counter",
           "Prompt positions taken from the prefix cache instead of evaluated.");
    out += "graphrun_prompt_tokens_cached_total " + std::to_string(b.prompt_tokens_cached) + "\n";
    metric("graphrun_generated_tokens_total", "counter", "Tokens generated.");
    out += "graphrun_generated_tokens_total " + std::to_string(generated_tokens_) + "\n";
    metric("graphrun_queue_depth", "gauge", "Requests waiting for a sequence.");
    out += "graphrun_queue_depth " + std::to_string(b.queued) + "\n";
    metric("graphrun_active_sequences", "gauge", "Requests holding a sequence.");
    out += "graphrun_active_sequences " + std::to_string(b.active) + "\n";
    metric("graphrun_kv_blocks_in_use", "gauge", "KV cache blocks held by sequences.");
    out += "graphrun_kv_blocks_in_use " + std::to_string(b.kv_blocks_in_use) + "\n";
    metric("graphrun_kv_blocks_total", "gauge", "KV cache blocks in the pool.");
    out += "graphrun_kv_blocks_total " + std::to_string(b.kv_blocks_total) + "\n";
    metric("graphrun_forward_passes_total", "counter", "Forward passes run.");
    out += "graphrun_forward_passes_total " + std::to_string(b.steps) + "\n";
    metric("graphrun_batch_occupancy", "gauge", "Sequences in the last forward pass over --parallel.");
    out += "graphrun_batch_occupancy " + number(b.occupancy_last) + "\n";
    metric("graphrun_batch_occupancy_mean", "gauge", "The mean of graphrun_batch_occupancy over all passes.");
    out += "graphrun_batch_occupancy_mean " + number(b.occupancy_mean) + "\n";
    metric("graphrun_draft_tokens_proposed_total", "counter",
           "Speculative decoding: tokens guessed by the proposers, each evaluated in a pass.");
    out += "graphrun_draft_tokens_proposed_total " + std::to_string(b.draft_proposed) + "\n";
    metric("graphrun_draft_tokens_accepted_total", "counter",
           "Speculative decoding: guessed tokens kept (the ones plain decoding samples).");
    out += "graphrun_draft_tokens_accepted_total " + std::to_string(b.draft_accepted) + "\n";
    metric("graphrun_draft_acceptance_rate", "gauge",
           "graphrun_draft_tokens_accepted_total over graphrun_draft_tokens_proposed_total (0 before any guess).");
    out += "graphrun_draft_acceptance_rate " +
           number(b.draft_proposed > 0 ? double(b.draft_accepted) / double(b.draft_proposed) : 0.0) + "\n";
    metric("graphrun_tokens_per_pass", "gauge",
           "Tokens a decoding sequence gets per forward pass it is in, the mean so far (1 without speculation).");
    out += "graphrun_tokens_per_pass " +
           number(b.decode_turns > 0 ? double(b.decode_tokens) / double(b.decode_turns) : 0.0) + "\n";
    metric("graphrun_time_to_first_token_seconds", "histogram", "From a request's arrival to its first token.");
    out += first_token_.render("graphrun_time_to_first_token_seconds");
    metric("graphrun_time_per_output_token_seconds", "histogram", "Between two generated tokens of a request.");
    out += per_token_.render("graphrun_time_per_output_token_seconds");
    return out;
}

}  // namespace graphrun::server
