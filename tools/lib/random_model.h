// tools/lib/random_model.h — random-weight models of the Llama family in GGUF that llama.cpp loads too.
//
//   RandomLlamaSpec spec;                   // the "teaching size": 16 wide, 2 layers, 320 tokens
//   spec.type = DType::F16;
//   write_random_llama(spec, "tiny.gguf");  // what `graphrun make-model tiny.gguf --type f16` writes
//   spec.arch = "qwen3";                    // `make-model --arch qwen3`: QK-norm, own head size
//
// The file has llama.cpp's key and tensor names for its architecture (llama, qwen2 with Q/K/V biases,
// qwen3 with per-head Q/K norms and attention.key_length) and a SentencePiece-style vocabulary (<unk>,
// <s>, </s>, 256 byte tokens, then "▁" and letter pieces), so the same file runs in graphrun and in
// llama.cpp and greedy outputs can be compared. Weights are deterministic in the seed on every platform
// (mt19937_64 with our own Box-Muller, not std::normal_distribution).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace graphrun::graph {

struct RandomLlamaSpec {
    std::string arch = "llama";  // llama, qwen2 or qwen3: the metadata prefix and the tensors written
    int64_t n_embd = 16;
    int64_t n_layers = 2;
    int64_t n_heads = 4;
    int64_t n_kv_heads = 2;
    int64_t n_ff = 48;
    int64_t n_vocab = 320;  // at least 259: 3 control tokens and 256 byte tokens come first
    int64_t n_ctx = 256;
    uint64_t seed = 42;
    DType type = DType::F32;  // of the matrices: F32 or F16 (norm weights are always F32)
    std::string name = "graphrun random llama";
    int64_t key_length = 0;    // head size; 0: n_embd / n_heads. Written as <arch>.attention.key_length
                               // (and value_length) when set, and always for qwen3, as its converter does
    bool tied_output = false;  // no output.weight: the logits reuse token_embd (SmolLM2, small Qwen2.5)
    bool rope_freqs = false;   // llama only: Llama 3.1's rope_freqs.weight (llama3_rope_factors)
    float rope_base = 0.0f;    // 0: the family's usual theta base (llama 10000, qwen2/qwen3 1000000)
    int64_t pooling_type = -1;  // >= 0: written as <arch>.pooling_type (llama.cpp's: 1 mean, 2 cls, 3 last)

    int64_t head_dim() const { return key_length > 0 ? key_length : n_embd / n_heads; }
};

// The architectures write_random_llama knows: "llama", "qwen2", "qwen3".
const std::vector<std::string>& random_model_architectures();

// Llama 3.1's RoPE frequency factors for a head of head_dim, as llama.cpp's converter computes them from
// rope_scaling {factor 8, low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192}:
// 1 for pairs whose wavelength is under 8192/4 positions, 8 over 8192, a smooth ramp between.
std::vector<float> llama3_rope_factors(int64_t head_dim, double rope_base);

// Throws std::invalid_argument naming the field and the rule it breaks
// (e.g. "n_embd = 30 is not divisible by n_heads = 4").
void validate_random_llama(const RandomLlamaSpec& spec);

// The vocabulary: ids 0..2 are <unk> <s> </s>, 3..258 are <0x00>..<0xFF>, then unique
// normal pieces ("▁", letters, "▁" + letter, punctuation, common words, then letter strings).
std::vector<std::string> random_llama_vocab(int64_t n_vocab);

// Validates, builds the vocabulary and tensors, and writes the GGUF file (throws GgufError on I/O).
void write_random_llama(const RandomLlamaSpec& spec, const std::string& path);

}  // namespace graphrun::graph
