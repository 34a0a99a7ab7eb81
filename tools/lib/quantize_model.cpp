// tools/lib/quantize_model.cpp — rewrites a GGUF model with its weight matrices quantized by a mix.
//
// The output is streamed: every tensor's output type and size are known from its name and shape
// alone, so GgufWriter writes the header first and then asks for each tensor in turn, which is
// converted (or copied) into one reusable buffer; a model bigger than RAM never has to fit in it.
#include "tools/lib/quantize_model.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "tools/lib/quant_mix.h"
#include "ops/quant/traits.h"
#include "runtime/finite_check.h"
#include "runtime/gguf.h"
#include "runtime/output_file.h"

namespace graphrun::graph {

namespace {

constexpr int64_t kElementsPerTask = 1 << 16;  // rows are grouped so a task converts ~64K weights

// What the mix does to this tensor; see the header for the rule.
QuantizedTensor quantized_tensor_for(const GgufTensor& t, const TensorTypeChooser& chooser) {
    QuantizedTensor q{t.name, t.shape(), t.type, t.type, TensorAction::Kept, "", t.nbytes, t.nbytes};
    const TensorChoice c = chooser.choose(t);
    q.why = c.why;
    if (!c.quantize) {
        q.why = t.ne.size() < 2 ? "1-D" : "not a weight matrix";  // norm weights are read as they are
    } else if (c.unblockable) {
        q.action = TensorAction::Unblockable;
    } else if (c.type == t.type) {
        q.action = TensorAction::Copied;
    } else {
        if (t.ne[0] % dtype_traits(c.type).block_size != 0)
            throw std::invalid_argument("quantize: tensor '" + t.name + "' has rows of " +
                                        std::to_string(t.ne[0]) + " elements, not whole " +
                                        dtype_name(c.type) + " blocks of " +
                                        std::to_string(dtype_traits(c.type).block_size) + " (" + c.why + ")");
        const ops::QuantTraits* to = ops::quant_traits(c.type);
        if (!to || !to->quantize_row)
            throw std::invalid_argument("quantize: tensor '" + t.name + "' would be " + dtype_name(c.type) +
                                        " (" + (c.why.empty() ? "the mix's type" : c.why) +
                                        "), which graphrun does not write");
        q.action = TensorAction::Quantized;
        q.to = c.type;
        q.bytes_out = uint64_t(row_bytes(c.type, t.ne[0])) * uint64_t(t.n_elements() / t.ne[0]);
    }
    return q;
}

// "element 17 (row 0, column 17)": where a value sits in a tensor whose rows are ne[0] long.
std::string element_place(const GgufTensor& t, int64_t index) {
    return "element " + std::to_string(index) + " (row " + std::to_string(index / t.ne[0]) + ", column " +
           std::to_string(index % t.ne[0]) + ")";
}

// A NaN or Inf weight would come out of quantization as a finite code (the F32 model stops on
// NaN logits; the quantized copy would print tokens), so the input is refused, naming the value.
void refuse_non_finite_input(const std::string& in, const GgufTensor& t) {
    const std::optional<NonFiniteValue> bad = find_non_finite(t.type, t.data, t.n_elements());
    if (!bad) return;
    const bool block = dtype_traits(t.type).block_size > 1;
    throw GgufError(in + ": tensor '" + t.name + "' " +
                    (block ? "has a block whose scale is " + non_finite_name(bad->value) + " at "
                           : "has " + non_finite_name(bad->value) + " at ") +
                    element_place(t, bad->index) +
                    "; graphrun does not quantize non-finite weights (the quantized file would hide them)");
}

// Finite inputs can still give an infinite scale: Q8_0's d = max|x| / 127 is stored as fp16
// (at most 65504), so a block with a weight beyond ~8.3e6 cannot be represented.
void refuse_overflowed_scales(const std::string& in, const GgufTensor& t, DType type,
                              const std::vector<uint8_t>& out) {
    const std::optional<NonFiniteValue> bad = find_non_finite(type, out.data(), t.n_elements());
    if (!bad) return;
    throw GgufError(in + ": tensor '" + t.name + "': the block at " + element_place(t, bad->index) +
                    " has weights too large for " + dtype_name(type) +
                    " (its fp16 scale overflows); graphrun does not write infinite scales");
}

// ---- conversion ----

// t (n_rows, row_length) any supported type -> out (n_rows, row_length) `type`, row by row in parallel.
void convert_tensor(const GgufTensor& t, DType type, std::vector<uint8_t>& out) {
    const int64_t n = t.ne[0], n_rows = t.n_elements() / n;
    const int64_t in_row = row_bytes(t.type, n), out_row = row_bytes(type, n);
    const ops::QuantTraits* from = ops::quant_traits(t.type);
    const ops::QuantTraits* to = ops::quant_traits(type);
    if (!from || !from->dequantize_row)
        throw GgufError("quantize: tensor '" + t.name + "' is " + dtype_name(t.type) +
                        ", which graphrun cannot decode to quantize again");
    if (!to || !to->quantize_row)
        throw std::logic_error(std::string("quantize: no quantizer for ") + dtype_name(type));
    out.resize(size_t(out_row * n_rows));
    const int64_t grain = std::max<int64_t>(1, kElementsPerTask / n);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n_rows, grain),
                      [&](const tbb::blocked_range<int64_t>& r) {
                          std::vector<float> row(t.type == DType::F32 ? 0 : size_t(n));
                          for (int64_t i = r.begin(); i < r.end(); ++i) {
                              const uint8_t* src = t.data + i * in_row;
                              const float* x = reinterpret_cast<const float*>(src);
                              if (t.type != DType::F32) {
                                  from->dequantize_row(src, row.data(), n);
                                  x = row.data();
                              }
                              to->quantize_row(x, out.data() + i * out_row, n);
                          }
                      });
}

}  // namespace

size_t QuantizeReport::count(TensorAction action) const {
    return size_t(std::count_if(tensors.begin(), tensors.end(),
                                [action](const QuantizedTensor& t) { return t.action == action; }));
}

QuantizeReport quantize_model(const std::string& in, const std::string& out, DType type,
                              const std::function<void(size_t, size_t, const std::string&)>& progress) {
    const QuantMix* mix = find_quant_mix(dtype_name(type));
    if (!mix)
        throw std::invalid_argument(std::string("quantize: type ") + dtype_name(type) +
                                    " is not a mix graphrun writes (" + quant_mix_names() + ")");
    return quantize_model(in, out, QuantizeOptions{.mix = mix->name}, progress);
}

QuantizeReport quantize_model(const std::string& in, const std::string& out, const QuantizeOptions& options,
                              const std::function<void(size_t, size_t, const std::string&)>& progress) {
    const QuantMix* mix = find_quant_mix(options.mix);
    if (!mix)
        throw std::invalid_argument("quantize: unknown type '" + options.mix + "', expected one of " +
                                    quant_mix_names());
    std::error_code ec;
    if (std::filesystem::equivalent(in, out, ec))
        throw std::invalid_argument("quantize: the output " + out + " is the input file; write a new file");

    const auto file = GgufFile::open(in);
    try {
        check_output_path(out);  // before any work: a path we may not replace fails now, not at the end
    } catch (const OutputError& e) {
        throw GgufError(e.what());
    }
    const TensorTypeChooser chooser(*file, *mix,
                                    {options.pure, options.output_tensor_type, options.token_embedding_type});
    QuantizeReport report;
    report.mix = mix->name;
    report.llama_ftype = mix->llama_ftype;
    report.type = mix->base;
    report.file_bytes_in = file->file_size();
    for (const GgufTensor& t : file->tensors()) {
        report.tensors.push_back(quantized_tensor_for(t, chooser));
        report.bytes_in += report.tensors.back().bytes_in;
        report.bytes_out += report.tensors.back().bytes_out;
    }

    // Metadata in order, then llama-quantize's two changes, each replacing its key in place if present
    // (general.alignment, if any, is copied with the rest, so the padding stays the input's).
    GgufWriter writer;
    for (const auto& [key, value] : file->metadata()) writer.set(key, value);
    writer.set_u32("general.quantization_version", kGgmlQuantizationVersion);
    writer.set_u32("general.file_type", mix->llama_ftype);
    for (size_t k = 0; k < report.tensors.size(); ++k) {
        const GgufTensor& t = file->tensors()[k];
        const QuantizedTensor& q = report.tensors[k];
        writer.add_tensor_from(t.name, q.to, t.ne, [&, k](std::vector<uint8_t>& bytes) {
            refuse_non_finite_input(in, t);
            if (q.action == TensorAction::Quantized) {
                convert_tensor(t, q.to, bytes);
                refuse_overflowed_scales(in, t, q.to, bytes);
            } else {
                bytes.assign(t.data, t.data + t.nbytes);
            }
            if (progress) progress(k + 1, report.tensors.size(), t.name);
        });
    }
    writer.write(out);

    // What we wrote must pass our own loader's checks.
    report.file_bytes_out = GgufFile::open(out)->file_size();
    return report;
}

}  // namespace graphrun::graph
