// tools/lib/bench_report.cpp — markdown, JSON and CSV printers for `graphrun bench`.
#include "tools/lib/bench_report.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace graphrun::graph {

std::string cpu_description() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, name, family, model;
    auto value = [&] {
        return line.substr(line.find(':') + 2 <= line.size() ? line.find(':') + 2 : line.size());
    };
    while (std::getline(in, line) && (name.empty() || family.empty() || model.empty())) {
        if (line.rfind("model name", 0) == 0)
            name = value();
        else if (line.rfind("cpu family", 0) == 0)
            family = value();
        else if (line.rfind("model", 0) == 0 && line.find(':') != std::string::npos &&
                 line.substr(0, line.find(':')).find_last_not_of(" \t") == 4)
            model = value();
    }
    if (name.empty()) return "unknown CPU";
    if (!family.empty() && !model.empty()) name += " (family " + family + ", model " + model + ")";
    return name;
}

namespace {

std::string format(const char* fmt, auto... args) {
    char buf[256];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

// The fields of llama-bench's JSON and CSV that mean something for graphrun, in its order, then
// graphrun's two bandwidths.
nlohmann::ordered_json fields_of(const BenchResult& r, const std::string& cpu) {
    nlohmann::ordered_json j;
    j["cpu_info"] = cpu;
    j["backends"] = "CPU";
    j["model_filename"] = r.test.model_path;
    j["model_type"] = r.model.type;
    j["model_size"] = r.model.size;
    j["model_n_params"] = r.model.n_params;
    j["n_ubatch"] = r.test.n_ubatch;
    j["n_threads"] = r.test.n_threads;
    j["type_k"] = "f16";  // graphrun's KV cache is f16, as llama.cpp's default
    j["type_v"] = "f16";
    j["n_prompt"] = r.test.n_prompt;
    j["n_gen"] = r.test.n_gen;
    j["n_depth"] = r.test.n_depth;
    j["test_time"] = r.test_time;
    j["avg_ns"] = r.avg_ns();
    j["stddev_ns"] = r.stddev_ns();
    j["avg_ts"] = r.avg_ts();
    j["stddev_ts"] = r.stddev_ts();
    j["weights_gbps"] = r.weights_gbps() > 0 ? nlohmann::ordered_json(r.weights_gbps()) : nullptr;
    j["read_bandwidth_gbps"] = r.read_gbps > 0 ? nlohmann::ordered_json(r.read_gbps) : nullptr;
    return j;
}

class JsonPrinter : public BenchPrinter {
  public:
    explicit JsonPrinter(std::FILE* out) : out_(out) {}
    void header() override { std::fputs("[", out_); }
    void row(const BenchResult& r) override {
        nlohmann::ordered_json j = fields_of(r, cpu_);
        j["samples_ns"] = r.samples_ns;
        j["samples_ts"] = r.samples_ts();
        std::fprintf(out_, "%s\n%s", first_ ? "" : ",", j.dump(2).c_str());
        std::fflush(out_);
        first_ = false;
    }
    void footer() override { std::fputs("\n]\n", out_); }

  private:
    std::FILE* out_;
    std::string cpu_ = cpu_description();
    bool first_ = true;
};

class CsvPrinter : public BenchPrinter {
  public:
    explicit CsvPrinter(std::FILE* out) : out_(out) {}
    void row(const BenchResult& r) override {
        const nlohmann::ordered_json j = fields_of(r, cpu_);
        if (first_) {
            std::string names;
            for (const auto& [key, v] : j.items()) names += (names.empty() ? "" : ",") + key;
            std::fprintf(out_, "%s\n", names.c_str());
            first_ = false;
        }
        std::string line;
        for (const auto& [key, v] : j.items()) {
            const std::string text = v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
            std::string quoted = "\"";
            for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
            line += (line.empty() ? "" : ",") + quoted + "\"";
        }
        std::fprintf(out_, "%s\n", line.c_str());
        std::fflush(out_);
    }

  private:
    std::FILE* out_;
    std::string cpu_ = cpu_description();
    bool first_ = true;
};

class MarkdownPrinter : public BenchPrinter {
  public:
    MarkdownPrinter(std::FILE* out, const BenchOptions& o) : out_(out) {
        // llama-bench's widths: negative = left-aligned (text), positive = right-aligned.
        columns_ = {{"model", -30}, {"size", 10}, {"params", 10}, {"backend", -10}, {"threads", 7}};
        if (o.ubatch_given) columns_.push_back({"n_ubatch", 8});
        columns_.insert(columns_.end(), {{"test", 15}, {"t/s", 20}, {"weights GB/s", 12}, {"read GB/s", 10}});
    }
    void header() override {
        std::string names = "|", rules = "|";
        for (const auto& [name, width] : columns_) {
            names += format(" %*s |", width, name.c_str());
            rules += " " + std::string(size_t(std::abs(width) - 1), '-') + (width > 0 ? ":" : "-") + " |";
        }
        std::fprintf(out_, "%s\n%s\n", names.c_str(), rules.c_str());
    }
    void row(const BenchResult& r) override {
        std::string line = "|";
        for (const auto& [name, width] : columns_) {
            std::string v;
            int w = width;
            if (name == "model")
                v = r.model.type;
            else if (name == "size")
                v = r.model.size < (uint64_t(1) << 30)
                        ? format("%.2f MiB", double(r.model.size) / 1048576.0)
                        : format("%.2f GiB", double(r.model.size) / 1073741824.0);
            else if (name == "params")
                v = r.model.n_params < 1000000000 ? format("%.2f M", double(r.model.n_params) / 1e6)
                                                  : format("%.2f B", double(r.model.n_params) / 1e9);
            else if (name == "backend")
                v = "CPU";
            else if (name == "threads")
                v = std::to_string(r.test.n_threads);
            else if (name == "n_ubatch")
                v = std::to_string(r.test.n_ubatch);
            else if (name == "test")
                v = r.test.name();
            else if (name == "t/s") {
                v = format("%.2f ± %.2f", r.avg_ts(), r.stddev_ts());
                w += 1;  // '±' is two bytes
            } else if (name == "weights GB/s")
                v = r.weights_gbps() > 0 ? format("%.2f", r.weights_gbps()) : "-";
            else if (name == "read GB/s")
                v = r.read_gbps > 0 ? format("%.2f", r.read_gbps) : "-";
            line += format(" %*s |", w, v.c_str());
        }
        std::fprintf(out_, "%s\n", line.c_str());
        std::fflush(out_);
    }
    void footer() override {
        std::fprintf(out_, "\ngraphrun bench on %s, %u cores\n", cpu_description().c_str(),
                     std::thread::hardware_concurrency());
    }

  private:
    std::FILE* out_;
    std::vector<std::pair<std::string, int>> columns_;
};

}  // namespace

std::unique_ptr<BenchPrinter> make_bench_printer(const std::string& format, std::FILE* out,
                                                 const BenchOptions& options) {
    if (format == "json") return std::make_unique<JsonPrinter>(out);
    if (format == "csv") return std::make_unique<CsvPrinter>(out);
    return std::make_unique<MarkdownPrinter>(out, options);
}

}  // namespace graphrun::graph
