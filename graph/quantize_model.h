// graph/quantize_model.h — `graphrun quantize`: a GGUF model with its weight matrices in Q8_0 or Q4_0.
//
//   auto report = quantize_model("model-f32.gguf", "model-q4_0.gguf", DType::Q4_0);
//   // report.tensors says, per tensor, what it became and why; the file runs in graphrun and llama.cpp
//
// Which tensors change (llama-quantize's rule, restricted to the two types graphrun runs):
//   - a tensor of 2 or more dims whose name ends in "weight" and is not a "_norm.weight" becomes `type`,
//     token_embd.weight and output.weight included (llama.cpp stores output.weight of a Q4_0 model
//     as Q6_K, which graphrun cannot run, so graphrun uses the requested type there too);
//   - a matrix whose row length (ne[0]) is not a multiple of 32 cannot be blocked: it is copied
//     unchanged in its own type (F32 stays F32, F16 stays F16) and the report says why
//     (llama-quantize refuses such a model instead);
//   - 1-D tensors (norm weights) are copied unchanged;
//   - a tensor already in `type` is copied byte for byte; one in the other quantized type is
//     dequantized and quantized again (llama-quantize needs --allow-requantize for that).
// Metadata is copied in order; general.file_type becomes llama.cpp's ftype (MOSTLY_Q8_0 = 7,
// MOSTLY_Q4_0 = 2) and general.quantization_version 2, as llama-quantize writes them.
//
// Non-finite weights: a NaN or Inf anywhere in the input (or a Q8_0/Q4_0 block whose scale is one),
// and a block whose weights are too large for an fp16 scale, stop the run with a GgufError naming
// the tensor and the element; the output is then not written (runtime/finite_check.h).
//
// Memory: the input is memory-mapped and one output tensor is held at a time; the file is written
// beside `out` and renamed into place when complete, then read back through GgufFile's checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace graphrun::graph {

// llama.cpp's llama_ftype values for the file types graphrun writes.
constexpr uint32_t kLlamaFtypeMostlyQ4_0 = 2;
constexpr uint32_t kLlamaFtypeMostlyQ8_0 = 7;
constexpr uint32_t kGgmlQuantizationVersion = 2;

enum class TensorAction {
    Quantized,    // converted to the requested type (from F32, F16 or the other quantized type)
    Copied,       // already the requested type: bytes copied
    Kept,         // left in its own type: a 1-D tensor (norm weights) or not a weight matrix
    Unblockable,  // a weight matrix left in its own type: its rows are not a multiple of 32
};

struct QuantizedTensor {
    std::string name;
    std::vector<int64_t> shape;  // outermost first, (n_rows, row_length) for a matrix
    DType from = DType::F32, to = DType::F32;
    TensorAction action = TensorAction::Kept;
    std::string why;  // for Kept and Unblockable: the reason, e.g. "rows of 172 elements are not ..."
    uint64_t bytes_in = 0, bytes_out = 0;
};

struct QuantizeReport {
    DType type = DType::Q8_0;
    std::vector<QuantizedTensor> tensors;  // in file order
    uint64_t bytes_in = 0, bytes_out = 0;  // tensor data, without header and padding
    uint64_t file_bytes_in = 0, file_bytes_out = 0;

    size_t count(TensorAction action) const;
};

// Reads `in` (F32, F16, Q8_0, Q4_0 tensors), writes `out` with weight matrices in `type`
// (Q8_0 or Q4_0). `progress` is called as each tensor is converted, just before its bytes are
// written: done = tensors converted so far (1..total), tensor = the name just converted. Throws std::invalid_argument for a bad type or
// out == in, GgufError for an unreadable input, non-finite weights, an output path that may not be
// written (checked before any work: runtime/output_file.h) or a failed write (naming the file).
QuantizeReport quantize_model(
    const std::string& in, const std::string& out, DType type,
    const std::function<void(size_t done, size_t total, const std::string& tensor)>& progress = {});

}  // namespace graphrun::graph
