// tools/lib/quantize_model.h — `graphrun quantize`: a GGUF model with its weight matrices quantized the
// way llama-quantize does it, in any of its mixes graphrun runs (tools/lib/quant_mix.h has the rules).
//
//   auto report = quantize_model("model-f32.gguf", "model-q4_k_m.gguf", {.mix = "q4_k_m"});
//   // report.tensors says, per tensor, what it became and why; the file runs in graphrun and llama.cpp
//
// What each tensor becomes is the mix's choice (TensorTypeChooser): weight matrices get the mix's base
// type or one of its exceptions (output.weight Q6_K; attn_v / ffn_down with more bits in some layers;
// fallbacks for rows that are not whole blocks); 1-D tensors and non-weights are copied unchanged.
// Where graphrun differs from llama-quantize:
//   - a matrix whose rows no 32-block divides, in a mix of 32-blocks, is kept in its own type (F32 stays
//     F32) and reported, where llama-quantize refuses the model;
//   - a tensor already quantized in another type is dequantized and quantized again (llama-quantize
//     needs --allow-requantize); one already in its target type is copied byte for byte;
//   - no importance matrix (the files equal llama-quantize's without one, byte for byte).
// Metadata is copied in order; general.file_type becomes the mix's llama_ftype (MOSTLY_Q4_K_M = 15, ...)
// and general.quantization_version 2, as llama-quantize writes them.
//
// Non-finite weights: a NaN or Inf anywhere in the input (or a block whose scale is one), and a block
// whose weights are too large for an fp16 scale, stop the run with a GgufError naming the tensor and
// the element; the output is then not written (runtime/finite_check.h).
//
// Memory: the input is memory-mapped and one output tensor is held at a time; the file is written
// beside `out` and renamed into place when complete, then read back through GgufFile's checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace graphrun::graph {

constexpr uint32_t kGgmlQuantizationVersion = 2;

enum class TensorAction {
    Quantized,    // converted to its chosen type (from F32, F16 or another quantized type)
    Copied,       // already its chosen type: bytes copied
    Kept,         // left in its own type: a 1-D tensor (norm weights) or not a weight matrix
    Unblockable,  // a weight matrix left in its own type: its rows are not whole blocks of 32
};

struct QuantizedTensor {
    std::string name;
    std::vector<int64_t> shape;  // outermost first, (n_rows, row_length) for a matrix
    DType from = DType::F32, to = DType::F32;
    TensorAction action = TensorAction::Kept;
    // Kept / Unblockable: the reason ("rows of 172 are not whole q4_0 blocks ..."); Quantized / Copied:
    // why `to` is not the mix's base type, empty when it is ("more bits in the first and last layers ...").
    std::string why;
    uint64_t bytes_in = 0, bytes_out = 0;
};

struct QuantizeReport {
    std::string mix;       // "q4_k_m"
    uint32_t llama_ftype;  // what general.file_type now says
    DType type = DType::Q8_0;  // the mix's base type
    std::vector<QuantizedTensor> tensors;  // in file order
    uint64_t bytes_in = 0, bytes_out = 0;  // tensor data, without header and padding
    uint64_t file_bytes_in = 0, file_bytes_out = 0;

    size_t count(TensorAction action) const;
};

struct QuantizeOptions {
    std::string mix = "q8_0";  // tools/lib/quant_mix.h: q8_0 q4_0 q4_1 q5_0 q5_1 q4_k_s q4_k_m q5_k_s q5_k_m q6_k iq4_xs
    bool pure = false;         // every weight matrix in the mix's base type (llama-quantize --pure)
    std::optional<DType> output_tensor_type{};    // --output-tensor-type
    std::optional<DType> token_embedding_type{};  // --token-embedding-type
};

// Reads `in`, writes `out` with its weight matrices quantized as `options` says. `progress` is called
// as each tensor is converted, just before its bytes are written: done = tensors converted so far
// (1..total), tensor = the name just converted. Throws std::invalid_argument for an unknown mix, a
// forced type that cannot hold its tensor, or out == in; GgufError for an unreadable input, a tensor
// type graphrun cannot decode, non-finite weights, an output path that may not be written (checked
// before any work: runtime/output_file.h) or a failed write (naming the file).
QuantizeReport quantize_model(
    const std::string& in, const std::string& out, const QuantizeOptions& options,
    const std::function<void(size_t done, size_t total, const std::string& tensor)>& progress = {});

// The mix named like `type` (Q8_0 -> "q8_0", Q4_0 -> "q4_0", ...; Q4_K and Q5_K need a mix name).
QuantizeReport quantize_model(
    const std::string& in, const std::string& out, DType type,
    const std::function<void(size_t done, size_t total, const std::string& tensor)>& progress = {});

}  // namespace graphrun::graph
