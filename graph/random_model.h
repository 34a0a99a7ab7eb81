// graph/random_model.h — random-weight Llama models in GGUF that llama.cpp loads too.
//
//   RandomLlamaSpec spec;                   // the "teaching size": 16 wide, 2 layers, 320 tokens
//   spec.type = DType::F16;
//   write_random_llama(spec, "tiny.gguf");  // what `graphrun make-model tiny.gguf --type f16` writes
//
// The file has llama.cpp's key and tensor names and a SentencePiece-style vocabulary
// (<unk>, <s>, </s>, 256 byte tokens, then "▁" and letter pieces), so the same file runs in
// graphrun and in llama.cpp and greedy outputs can be compared. Weights are deterministic in the
// seed on every platform (mt19937_64 with our own Box-Muller, not std::normal_distribution).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace graphrun::graph {

struct RandomLlamaSpec {
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

    int64_t head_dim() const { return n_embd / n_heads; }
};

// Throws std::invalid_argument naming the field and the rule it breaks
// (e.g. "n_embd = 30 is not divisible by n_heads = 4").
void validate_random_llama(const RandomLlamaSpec& spec);

// The vocabulary: ids 0..2 are <unk> <s> </s>, 3..258 are <0x00>..<0xFF>, then unique
// normal pieces ("▁", letters, "▁" + letter, punctuation, common words, then letter strings).
std::vector<std::string> random_llama_vocab(int64_t n_vocab);

// Validates, builds the vocabulary and tensors, and writes the GGUF file (throws GgufError on I/O).
void write_random_llama(const RandomLlamaSpec& spec, const std::string& path);

}  // namespace graphrun::graph
