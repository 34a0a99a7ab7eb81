// tools/lib/quant_mix.h — which type each tensor gets in a quantized file: llama-quantize's choices.
//
//   const QuantMix* mix = find_quant_mix("q4_k_m");
//   TensorTypeChooser chooser(file, *mix, options);
//   TensorChoice c = chooser.choose(tensor);  // c.type, and c.why when it is not the mix's base type
//
// A mix is a llama.cpp file type (llama_ftype): a base type for the weight matrices, plus per-tensor
// exceptions (the rules of llama.cpp's llama_tensor_get_type, for dense models):
//   - which tensors are quantized: 2-D+ tensors whose name ends in "weight", except "*_norm.weight",
//     the MoE router "ffn_gate_inp.weight" and position / token-type embeddings;
//   - output.weight (and token_embd.weight when the model has no output.weight: tied embeddings) is
//     Q6_K in every mix but Q8_0's, or Q8_0 when its rows are not whole blocks of the base type;
//   - q4_k_m / q5_k_m: attn_v and ffn_down get Q6_K in the first and last eighth of the layers and in
//     every third layer between (use_more_bits); q4_k_s: attn_v of the first 4 layers and ffn_down of
//     the first eighth get Q5_K; iq4_xs: attn_v gets Q5_K when 4+ query heads share a KV head, and
//     ffn_down of the first eighth Q5_K; Llama-2-70B-like models (80 layers, GQA) get Q5_K attn_v;
//   - rows that are not whole blocks of the chosen type fall back (Q4_K -> Q5_0, Q5_K -> Q5_1,
//     Q6_K -> Q8_0, IQ4_XS -> IQ4_NL, then F16 if still not whole blocks of 32), as llama.cpp does.
//     Where llama.cpp has no fallback (the 32-blocks) it refuses the model; graphrun keeps such a
//     matrix in its own type instead and says so.
// Options: `pure` gives every quantized matrix the base type (fallbacks still apply);
// output_tensor_type / token_embedding_type force those two tensors' types.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/gguf.h"

namespace graphrun::graph {

struct QuantMix {
    const char* name;      // "q4_k_m", as the CLI spells it
    uint32_t llama_ftype;  // general.file_type llama.cpp writes for it (LLAMA_FTYPE_MOSTLY_Q4_K_M = 15)
    DType base;            // the type of the matrices without an exception
};

std::span<const QuantMix> quant_mixes();
// Case-insensitive; "q4_k" and "q5_k" are llama-quantize's aliases of q4_k_m and q5_k_m.
const QuantMix* find_quant_mix(std::string_view name);
std::string quant_mix_names();  // "q8_0, q4_0, ..." for messages

struct QuantMixOptions {
    bool pure = false;
    std::optional<DType> output_tensor_type{};
    std::optional<DType> token_embedding_type{};
};

struct TensorChoice {
    bool quantize = false;  // false: the tensor is not a weight matrix; it keeps its type
    DType type = DType::F32;
    std::string why;           // why the type is not the mix's base type (empty when it is, or not quantized)
    bool unblockable = false;  // a matrix llama.cpp would refuse: kept in its own type (type = its type)
};

// A mix's rules applied to one file: the type each of its tensors gets (it plans nothing).
class TensorTypeChooser {
  public:
    // Reads the counts the rules need from `file` (layers, attn_v tensors, heads, tied embeddings).
    // Throws std::invalid_argument for a model the rules do not cover (mixture-of-experts).
    TensorTypeChooser(const GgufFile& file, const QuantMix& mix, QuantMixOptions options);
    TensorChoice choose(const GgufTensor& t) const;

  private:
    TensorChoice choose_matrix(const GgufTensor& t) const;
    // The mix's rules by category (not under --pure), each changing c from the mix's base type.
    void choose_output(const GgufTensor& t, TensorChoice& c) const;
    void choose_attn_v(const GgufTensor& t, TensorChoice& c) const;
    void choose_ffn_down(const GgufTensor& t, TensorChoice& c) const;
    const QuantMix& mix_;
    QuantMixOptions options_;
    std::string arch_;
    int64_t n_layer_ = 0, n_head_ = 0, n_head_kv_ = 0;
    bool tied_embeddings_ = true;
    std::vector<std::string> attn_v_order_, ffn_down_order_;  // in llama.cpp's (layer, name) order
};

}  // namespace graphrun::graph
