// engine/trace.cpp — the Profiler's trace: every run, step and range as Chrome trace events
// (the JSON "traceEvents" format that ui.perfetto.dev and chrome://tracing open).
//
// One track per thread: thread 0 (the one that called run) holds a slice per run, inside it one per
// step, inside those its own ranges; helper threads hold their ranges. Times are microseconds from
// the first recorded run.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "engine/profile.h"

namespace graphrun::graph {

namespace {

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace

void Profiler::trace_run(int group, std::span<const Step> steps) {
    trace_runs_.push_back({group, {run_start_ns(), run_end_ns()}});
    const std::span<const StepSpan> spans = step_spans();
    for (size_t i = 0; i < steps.size(); ++i)
        trace_.push_back({group, int32_t(i), -1, 0, 0, 0, spans[i].start_ns, spans[i].end_ns});
    for (int t = 0; t < n_threads(); ++t)
        for (const RangeTiming& r : ranges(t))
            trace_.push_back({group, r.step, t, r.phase, r.begin, r.end, r.start_ns, r.end_ns});
}

void Profiler::write_trace() {
    if (!trace_file_) return;
    std::FILE* f = trace_file_.get();
    const int64_t origin = trace_runs_.empty() ? 0 : trace_runs_.front().second.first;
    auto us = [&](int64_t ns) { return double(ns - origin) / 1e3; };
    bool first = true;
    auto emit = [&](const char* fmt, auto... args) {
        std::fputs(first ? "\n" : ",\n", f);
        first = false;
        std::fprintf(f, fmt, args...);
    };
    int max_thread = 0;
    for (const TraceRange& r : trace_) max_thread = std::max(max_thread, int(r.thread));

    std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    for (int t = 0; t <= max_thread; ++t)
        emit("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"%s %d\"}}", t,
             t == 0 ? "caller thread" : "helper thread", t);
    for (const auto& [group, span] : trace_runs_)
        emit("{\"name\":%s,\"cat\":\"run\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f}",
             json_string(groups_[size_t(group)].section).c_str(), us(span.first),
             double(span.second - span.first) / 1e3);
    for (const TraceRange& r : trace_) {
        const Group& g = groups_[size_t(r.group)];
        const std::string& node = g.nodes[size_t(r.step)];
        if (r.thread < 0)
            emit(
                "{\"name\":%s,\"cat\":%s,\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"step\":%d}}",
                json_string(node).c_str(), json_string(g.kernels[size_t(r.step)]).c_str(), us(r.start_ns),
                double(r.end_ns - r.start_ns) / 1e3, r.step);
        else
            emit(
                "{\"name\":%s,\"cat\":\"range\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"step\":%d,\"phase\":\"%s\",\"units\":\"%lld-%lld\"}}",
                json_string(node + (r.phase == 0 ? " prepare" : "")).c_str(), r.thread, us(r.start_ns),
                double(r.end_ns - r.start_ns) / 1e3, r.step, r.phase == 0 ? "prepare" : "run",
                (long long)r.begin, (long long)r.end);
    }
    std::fputs("\n]}\n", f);
    const bool write_failed = std::ferror(f) != 0;
    const bool close_failed = std::fclose(trace_file_.release()) != 0;
    if (write_failed || close_failed)
        throw std::runtime_error("--trace: writing '" + trace_path_ + "' failed");
}

}  // namespace graphrun::graph
