// tools/cmd_quantize.cpp — `graphrun quantize IN.gguf OUT.gguf TYPE [--pure] [--output-tensor-type T]
// [--token-embedding-type T]`: a model's weight matrices quantized as llama-quantize does it, TYPE a
// mix (q4_k_m, q5_k_m, q6_k, q4_k_s, q5_0, q4_1, q8_0, ...; tools/lib/quant_mix.h has the rules).
//
// stderr: progress (one line redrawn with \r on a terminal, else one line per tensor) and every
// tensor that stayed unquantized, by name, with the reason. stdout: the summary.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/lib/quant_mix.h"
#include "tools/lib/quantize_model.h"
#include "ops/quant/traits.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

struct QuantizeCliOptions {
    std::string in, out, type, output_tensor_type, token_embedding_type;
    bool pure = false;
};

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "(";
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + ")";
}

// A forced tensor type: any type graphrun can write (f32, f16 and the quantized types it runs).
std::optional<DType> parse_tensor_type(std::string name, const char* option) {
    if (name.empty()) return std::nullopt;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    const std::optional<DType> type = dtype_from_name(name);
    const std::span<const DType> writes = ops::runnable_weight_types();
    if (!type || std::find(writes.begin(), writes.end(), *type) == writes.end())
        throw std::runtime_error(std::string("quantize: ") + option + " '" + name +
                                 "' is not a type graphrun writes (" + ops::runnable_weight_type_names() + ")");
    return type;
}

void run_quantize(const QuantizeCliOptions& o) {
    if (!graph::find_quant_mix(o.type))
        throw std::runtime_error("quantize: unknown type '" + o.type + "', expected one of " +
                                 graph::quant_mix_names());
    graph::QuantizeOptions options{
        .mix = o.type,
        .pure = o.pure,
        .output_tensor_type = parse_tensor_type(o.output_tensor_type, "--output-tensor-type"),
        .token_embedding_type = parse_tensor_type(o.token_embedding_type, "--token-embedding-type")};
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
    const graph::QuantizeReport r = graph::quantize_model(o.in, o.out, options, progress);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    // stderr: every tensor that did not simply become the base type, and why.
    std::map<DType, std::pair<size_t, uint64_t>> by_type;  // tensors and bytes per output type
    for (const graph::QuantizedTensor& t : r.tensors) {
        if (t.action == graph::TensorAction::Unblockable)
            std::fprintf(stderr, "quantize: kept %s %s %s unquantized: %s\n", t.name.c_str(),
                         dtype_name(t.from), shape_text(t.shape).c_str(), t.why.c_str());
        else if ((t.action == graph::TensorAction::Quantized || t.action == graph::TensorAction::Copied) &&
                 !t.why.empty())
            std::fprintf(stderr, "quantize: %s -> %s: %s\n", t.name.c_str(), dtype_name(t.to), t.why.c_str());
        if (t.action == graph::TensorAction::Quantized && t.from != DType::F32 && t.from != DType::F16)
            std::fprintf(stderr,
                         "quantize: note: %s was %s; dequantized and quantized again, errors add up\n",
                         t.name.c_str(), dtype_name(t.from));
        if (t.action == graph::TensorAction::Quantized || t.action == graph::TensorAction::Copied) {
            ++by_type[t.to].first;
            by_type[t.to].second += t.bytes_out;
        }
    }

    std::printf("wrote %s: %s%s (llama.cpp file type %u) in %.2f s\n", o.out.c_str(), r.mix.c_str(),
                o.pure ? ", pure" : "", r.llama_ftype, seconds);
    std::string types;
    for (const auto& [type, n] : by_type)
        types += (types.empty() ? "" : ", ") + std::to_string(n.first) + " " + dtype_name(type);
    std::printf(
        "  tensors  %s; %zu kept as they were (1-D), %zu kept unquantized (rows not a multiple of 32)\n",
        types.empty() ? "none quantized" : types.c_str(), r.count(graph::TensorAction::Kept),
        r.count(graph::TensorAction::Unblockable));
    std::printf("  weights  %llu -> %llu bytes (%.2fx smaller)\n", (unsigned long long)r.bytes_in,
                (unsigned long long)r.bytes_out,
                double(r.bytes_in) / double(std::max<uint64_t>(r.bytes_out, 1)));
    std::printf("  file     %llu -> %llu bytes\n", (unsigned long long)r.file_bytes_in,
                (unsigned long long)r.file_bytes_out);
}

}  // namespace

void register_quantize(CLI::App& app) {
    auto options = std::make_shared<QuantizeCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "quantize",
        "Write a copy of a GGUF model with its weight matrices quantized, as llama-quantize does");
    cmd->add_option("in", options->in, "Input .gguf (F32, F16 or quantized tensors)")->required();
    cmd->add_option("out", options->out, "Output .gguf")->required();
    cmd->add_option("type", options->type,
                    "The mix: " + graph::quant_mix_names() + " (q4_k, q5_k: the _m mixes)")
        ->required();
    cmd->add_flag("--pure", options->pure,
                  "Every weight matrix in the mix's base type (no per-tensor exceptions)");
    cmd->add_option("--output-tensor-type", options->output_tensor_type,
                    "Type of output.weight (e.g. q8_0, f16)");
    cmd->add_option("--token-embedding-type", options->token_embedding_type, "Type of token_embd.weight");
    cmd->callback([options] { run_quantize(*options); });
}

}  // namespace graphrun::tools
