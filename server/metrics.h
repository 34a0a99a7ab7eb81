// server/metrics.h — the server's counters and latency histograms, and GET /metrics' text.
//
// Prometheus text exposition format (version 0.0.4): requests by endpoint and status (an HTTP
// status, or "cancelled" for a stream its client left before the end), prompt and
// generated tokens, and histograms of time to first token and of time per generated token after
// the first; render() adds the backend's gauges (queue depth, active sequences, KV blocks, batch
// occupancy). Safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "server/backend.h"

namespace graphrun::server {

class Histogram {
  public:
    // Upper bounds in seconds, from 1 ms to 60 s.
    static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                       0.25,  0.5,    1,     2.5,  5,    10,  60};
    void observe(double seconds);
    // Lines for `name`: cumulative _bucket{le=...}, _sum and _count.
    std::string render(const std::string& name) const;

  private:
    std::array<uint64_t, kBounds.size()> buckets_{};  // not cumulative; render() sums
    uint64_t count_ = 0;
    double sum_ = 0;
};

class ServerMetrics {
  public:
    void count_request(const std::string& endpoint, int status);
    // `status` is an HTTP status, or "cancelled": a stream whose client went away before its end.
    void count_request(const std::string& endpoint, const std::string& status);
    void count_tokens(int64_t prompt, int64_t generated);
    void observe_first_token(double seconds);
    void observe_token(double seconds);  // the gap between two generated tokens

    std::string render(const BackendMetrics& backend) const;

  private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, std::string>, uint64_t> requests_;  // (endpoint, status)
    uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
    Histogram first_token_, per_token_;
};

}  // namespace graphrun::server
