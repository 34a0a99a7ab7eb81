// runtime/text/tokenizer.h — the tokenizer a Llama GGUF file carries, giving llama.cpp's token ids.
//
// Two vocabulary models (tokenizer.ggml.model):
//   "llama": SentencePiece BPE. Spaces are escaped as U+2581 "▁", a space is prefixed to the text
//            (tokenizer.ggml.add_space_prefix, default true), then adjacent pieces are merged by
//            score, highest first; characters no piece covers fall back to <0xNN> byte tokens.
//   "gpt2":  byte-level BPE. Text is split into words by the pre-tokenizer (tokenizer.ggml.pre:
//            "default" (or absent), "gpt-2", "llama-bpe" (Llama 3), "qwen2", "smollm"; see
//            tokenizer_internal.h and docs/tokenizers.md), bytes are mapped to GPT-2's printable
//            alphabet, and pairs merge by rank in tokenizer.ggml.merges.
// Control and unknown tokens never come out of plain text; with parse_special, the texts of control
// tokens in the input (e.g. "<s>", "<|im_start|>") become those tokens. User-defined tokens are
// always matched verbatim, as in llama.cpp. Tokens llama.cpp recognises by their text (end of turn,
// fill-in-the-middle) are control tokens whatever the file says, as there.
//
// Loading validates everything (files come from strangers): a bad vocabulary throws TokenizerError
// "<path>: <key> ...". A loaded Tokenizer is immutable and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace graphrun {

class GgufFile;
namespace tokenizer_detail {
struct Vocab;
}

class TokenizerError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class Tokenizer {
  public:
    static Tokenizer from_gguf(const GgufFile& file);

    // add_bos prepends BOS (throws if the vocabulary has none); callers usually pass add_bos().
    // parse_special turns control-token texts in `text` into those tokens.
    std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = false) const;

    // The bytes a token stands for: byte tokens give their byte, "▁" gives a space (SPM), GPT-2
    // alphabet characters give their bytes (BPE). Control and unknown tokens give "" unless
    // `special`, then their text. Throws TokenizerError for an id outside [0, n_vocab).
    std::string token_to_piece(int32_t id, bool special = false) const;

    // Concatenated pieces. When the vocabulary prefixes a space (SPM), one leading space is removed
    // from the first token after an optional leading BOS, so for a text x (parse_special off):
    //   decode(encode(x, false)) == x   and   decode(encode(x, true)) == x
    //   decode(encode(x, true), /*special=*/true) == "<s>" + x   (the BOS text, then x)
    // provided the vocabulary has a "▁" piece (else the prefixed space comes back as U+2581), x
    // holds no "▁" of its own (pieces turn every "▁" into a space) and no user-defined token text
    // (the text after one gets a space prefix of its own). Byte fallback makes any bytes encodable.
    // llama.cpp's detokenizer differs in one detail: it keeps that space when a BOS comes first.
    // BPE vocabularies prefix nothing and strip nothing: decode(encode(x, false)) == x for valid
    // UTF-8 x when all 256 byte symbols are in the vocabulary (llama.cpp drops bytes that have none,
    // and reads invalid UTF-8 as U+FFFD), except that the pre-tokenizers for which llama.cpp cleans
    // up spaces (default, gpt-2, llama-bpe) remove them as it does: " ?", " !", " .", " ," lose the
    // space, " ' " loses both, " 's", " 'm", " 're", " 've" lose theirs. token_to_piece and
    // TokenTextStream never clean up (llama.cpp's streaming does not either).
    std::string decode(std::span<const int32_t> ids, bool special = false) const;

    int32_t n_vocab() const;
    int32_t bos() const;   // -1 when the vocabulary has none
    int32_t eos() const;   // -1 when the vocabulary has none
    bool add_bos() const;  // whether the model expects BOS first (tokenizer.ggml.add_bos_token)
    // EOS, EOT, EOM and the other tokens llama.cpp's EOG set holds (e.g. both <|endoftext|> and
    // <|im_end|> for Qwen); ascending ids.
    bool is_end_of_generation(int32_t id) const;
    std::span<const int32_t> end_of_generation() const;
    const std::string& token_text(int32_t id) const;  // the vocabulary's raw text for id
    // Token types as the encoder uses them (after the types llama.cpp overrides by token text).
    bool is_control(int32_t id) const;       // control: plain text never gives it, decodes to ""
    bool is_user_defined(int32_t id) const;  // user-defined: matched verbatim even in plain text

  private:
    explicit Tokenizer(std::shared_ptr<const tokenizer_detail::Vocab> vocab) : vocab_(std::move(vocab)) {}
    std::shared_ptr<const tokenizer_detail::Vocab> vocab_;
};

// Turns a stream of generated ids into text that is always valid UTF-8: a character whose bytes
// are split across tokens (byte-fallback tokens) is held back until it is whole. Bytes that can
// never form a character come out as U+FFFD.
class TokenTextStream {
  public:
    explicit TokenTextStream(const Tokenizer& tokenizer, bool special = false)
        : tokenizer_(tokenizer), special_(special) {}
    std::string push(int32_t id);  // the whole characters that this token completes
    std::string flush();           // what is left (an unfinished character becomes U+FFFD)

  private:
    std::string drain(bool final);
    const Tokenizer& tokenizer_;
    bool special_;
    std::string pending_;
};

}  // namespace graphrun
