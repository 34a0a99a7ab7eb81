// tools/cmd_quantize.cpp — `graphrun quantize IN.gguf OUT.gguf q8_0|q4_0`: a model's weight
// matrices in Q8_0 or Q4_0, as llama-quantize writes them (see graph/quantize_model.h for the rule).
//
// stderr: progress (one line redrawn with \r on a terminal, else one line per tensor) and every
// tensor that stayed unquantized, by name, with the reason. stdout: the summary.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/quantize_model.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

struct QuantizeOptions {
    std::string in, out, type;
};

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "(";
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + ")";
}

DType parse_type(std::string name) {
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    const std::optional<DType> type = dtype_from_name(name);
    if (!type || (*type != DType::Q8_0 && *type != DType::Q4_0))
        throw std::runtime_error("quantize: unknown type '" + name + "', expected q8_0 or q4_0");
    return *type;
}

void run_quantize(const QuantizeOptions& o) {
    const DType type = parse_type(o.type);
    const bool tty = ::isatty(::fileno(stderr)) != 0;
    const auto start = std::chrono::steady_clock::now();
    auto progress = [tty](size_t done, size_t total, const std::string& tensor) {
        const int percent = int(100 * done / std::max<size_t>(total, 1));
        if (tty) {  // \x1b[K clears what a longer previous name left on the line
            std::fprintf(stderr, "\rquantize [%3d%%] %zu/%zu %s\x1b[K", percent, done, total, tensor.c_str());
            if (done == total) std::fputc('\n', stderr);
        } else {
            std::fprintf(stderr, "quantize [%3d%%] %zu/%zu %s\n", percent, done, total, tensor.c_str());
        }
        std::fflush(stderr);
    };
    const graph::QuantizeReport r = graph::quantize_model(o.in, o.out, type, progress);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    for (const graph::QuantizedTensor& t : r.tensors) {
        if (t.action == graph::TensorAction::Unblockable)
            std::fprintf(stderr, "quantize: kept %s %s %s unquantized: %s\n", t.name.c_str(),
                         dtype_name(t.from), shape_text(t.shape).c_str(), t.why.c_str());
        else if (t.action == graph::TensorAction::Quantized && t.from != DType::F32 && t.from != DType::F16)
            std::fprintf(stderr,
                         "quantize: note: %s was %s; dequantized and quantized again, errors add up\n",
                         t.name.c_str(), dtype_name(t.from));
    }

    const char* name = dtype_name(type);
    std::printf("wrote %s: %s (llama.cpp file type %u) in %.2f s\n", o.out.c_str(), name,
                type == DType::Q8_0 ? graph::kLlamaFtypeMostlyQ8_0 : graph::kLlamaFtypeMostlyQ4_0, seconds);
    std::printf(
        "  tensors  %zu quantized to %s, %zu already %s, %zu kept as they were (1-D), %zu kept unquantized "
        "(rows not a multiple of 32)\n",
        r.count(graph::TensorAction::Quantized), name, r.count(graph::TensorAction::Copied), name,
        r.count(graph::TensorAction::Kept), r.count(graph::TensorAction::Unblockable));
    std::printf("  weights  %llu -> %llu bytes (%.2fx smaller)\n", (unsigned long long)r.bytes_in,
                (unsigned long long)r.bytes_out,
                double(r.bytes_in) / double(std::max<uint64_t>(r.bytes_out, 1)));
    std::printf("  file     %llu -> %llu bytes\n", (unsigned long long)r.file_bytes_in,
                (unsigned long long)r.file_bytes_out);
}

}  // namespace

void register_quantize(CLI::App& app) {
    auto options = std::make_shared<QuantizeOptions>();
    CLI::App* cmd = app.add_subcommand(
        "quantize",
        "Write a copy of a GGUF model with its weight matrices in Q8_0 or Q4_0 (like llama-quantize)");
    cmd->add_option("in", options->in, "Input .gguf (F32, F16, Q8_0 or Q4_0 tensors)")->required();
    cmd->add_option("out", options->out, "Output .gguf")->required();
    cmd->add_option("type", options->type, "q8_0 or q4_0")->required();
    cmd->callback([options] { run_quantize(*options); });
}

}  // namespace graphrun::tools
