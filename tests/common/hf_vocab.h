// tests/common/hf_vocab.h — a Hugging Face byte-level BPE tokenizer (tokenizer.json + tokenizer_config.json)
// turned into a vocabulary-only GGUF file, as llama.cpp's convert_hf_to_gguf.py writes the
// tokenizer of a "gpt2"-vocabulary model (its _set_vocab_gpt2 and gguf-py's SpecialVocab):
//
//   tokenizer.ggml.model       "gpt2"
//   tokenizer.ggml.pre         given by the caller (the converter finds it by hashing a tokenization,
//                              which needs the Python tokenizers library)
//   tokenizer.ggml.tokens      id -> text for ids 0 .. vocab_size-1: model.vocab and added_tokens;
//                              an id neither holds is "[PAD<id>]"
//   tokenizer.ggml.token_type  1 normal (model.vocab), 3 control (added and special, or looking
//                              special: "<|...|>"), 4 user-defined (other added), 5 unused ([PAD])
//   tokenizer.ggml.merges      "left right"; pairs given as arrays have spaces inside written as Ġ
//   tokenizer.ggml.*_token_id  bos, eos, unk, sep, pad, cls, mask: the added token whose content
//                              tokenizer_config.json names
//   tokenizer.ggml.add_*_token what tokenizer_config.json says, and what a TemplateProcessing
//                              post-processor implies for BOS and EOS
//   tokenizer.chat_template    tokenizer_config.json's chat_template
// plus general.architecture "llama" and the few llama.* keys llama.cpp needs to load a vocabulary.
// Anything the converter would do and this does not is refused (HfVocabError), never guessed.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace graphrun::test {

class HfVocabError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct HfVocabOptions {
    std::string pre;         // tokenizer.ggml.pre, e.g. "llama-bpe", "qwen2", "smollm"
    std::string name;        // general.name
    int64_t vocab_size = 0;  // number of ids (config.json's vocab_size); 0: the highest id + 1
};

// Reads dir/tokenizer.json and dir/tokenizer_config.json, writes the GGUF file `out`.
void write_hf_vocab_gguf(const std::string& dir, const std::string& out, const HfVocabOptions& options);

}  // namespace graphrun::test
