// runtime/text/tokenizer_internal.h — what runtime/text/tokenizer*.cpp share; not part of the public API
// (tests include it to check the pre-tokenizer and UTF-8 helpers directly).
//
// A vocabulary is loaded once (tokenizer.cpp), validated, and then only read: the two encoders
// (tokenizer_spm.cpp, tokenizer_bpe.cpp) and the Unicode helpers (tokenizer_unicode.cpp) take it
// by const reference, so one Tokenizer can be used from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphrun::tokenizer_detail {

// tokenizer.ggml.token_type values, as llama.cpp's converters write them.
enum class TokenType : uint8_t {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6
};

enum class VocabModel { Spm, Bpe };  // tokenizer.ggml.model "llama" / "gpt2"

// How a BPE vocabulary splits text into words before merging (tokenizer.ggml.pre), as llama.cpp
// applies each name (tokenizer_pretokenize.cpp has the matchers):
//   Default ("default" or no key): punctuation runs [\p{P}$+<=>^~|]+ split off first, then the GPT-2
//            split, then runs of \p{N}, then groups of three ASCII digits, each step splitting the
//            pieces of the step before.
//   Gpt2 ("gpt-2"): 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Llama3 ("llama-bpe", "llama3", "llama-v3"): (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+
//            |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ ; whole words that are
//            tokens skip the merges (ignore_merges), BOS is added by default.
//   Qwen2 ("qwen2", "deepseek-r1-qwen"): Llama3's regex with single digits \p{N}.
//   Smollm ("smollm"): every \p{N} character alone, then the GPT-2 split.
enum class PreTokenizer { Default, Gpt2, Llama3, Qwen2, Smollm };

// Lets maps keyed by std::string be searched with a std::string_view without a copy.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct PairHash {
    size_t operator()(const std::pair<std::string, std::string>& p) const {
        const size_t a = std::hash<std::string>{}(p.first), b = std::hash<std::string>{}(p.second);
        return a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    }
};

struct Vocab {
    std::string path;  // the file it came from, for error messages
    VocabModel model = VocabModel::Spm;
    PreTokenizer pre = PreTokenizer::Default;
    bool ignore_merges = false;  // BPE: a word that is a token as a whole is emitted as that token
    bool clean_spaces = false;   // BPE: decode() removes spaces before punctuation, as llama.cpp does

    std::vector<std::string> text;  // id -> token text as stored (SPM: spaces as U+2581; BPE: GPT-2 alphabet)
    std::vector<float> score;       // id -> SPM merge priority (higher merges first)
    std::vector<TokenType> type;    // id -> type
    std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> id_of;  // text -> id (unique)
    std::array<int32_t, 256> byte_token{};  // byte -> its <0xNN> byte token, -1 if none

    // BPE only: merge rank of (left, right), lower merges first.
    std::unordered_map<std::pair<std::string, std::string>, int32_t, PairHash> merge_rank;

    int32_t bos = -1, eos = -1, unk = -1, eot = -1, eom = -1;
    // Every token that ends generation (llama.cpp's EOG set): EOS, EOT, EOM, the FIM pad/repo/file
    // separator tokens, and the tokens with well-known end-of-turn texts. Ascending ids.
    std::vector<int32_t> end_of_generation;
    bool add_bos = false;
    bool add_space_prefix = false;  // SPM: prefix a space to text at the start and after special tokens

    // id -> the bytes the token decodes to; control and unknown tokens hold their text here, which
    // token_to_piece returns only when asked for specials.
    std::vector<std::string> piece;

    // Tokens matched verbatim in the text before the encoder runs (llama.cpp's "special token cache"):
    // user-defined tokens always; control and unknown tokens only when parsing specials. Longest first.
    std::vector<int32_t> special_tokens;

    // Token id of `text` if plain text may produce it (normal, user-defined, and for SPM merges
    // also unused), else -1. Control, unknown and byte tokens never come out of plain text this way.
    int32_t mergeable(std::string_view piece) const;
    // Token for one raw byte when no piece covers it (SPM byte fallback); throws if there is none.
    int32_t byte_fallback(uint8_t byte) const;
};

// The bytes token `id` decodes to (Vocab::piece is filled with this at load).
std::string decode_piece(const Vocab& vocab, int32_t id);

// Encoders: append the ids of one run of plain text (no special tokens in it) to `out`.
void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);
void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

// ---- Unicode (tokenizer_unicode.cpp) ----

// Byte length of the UTF-8 character starting with `lead`, judged by its high nibble only, as
// SentencePiece and llama.cpp split SPM text: 0x0-0xB -> 1, 0xC-0xD -> 2, 0xE -> 3, 0xF -> 4.
inline size_t utf8_len_from_lead(uint8_t lead) {
    static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLen[lead >> 4];
}

// Code points of `text`; each byte that does not start a well-formed sequence becomes U+FFFD and
// decoding resumes at the next byte (llama.cpp's rule). Well-formed is strict UTF-8: overlong forms
// (C0 AF is not '/'), surrogates (ED A0 80) and values past U+10FFFF are ill-formed, one U+FFFD per
// byte. llama.cpp's decoder accepts the first two and fails on the third; on all other input the
// two agree.
std::vector<uint32_t> decode_utf8_lossy(std::string_view text);
void append_utf8(std::string& out, uint32_t cpt);

// Unicode general categories and the White_Space property (ICU data).
bool is_letter(uint32_t cpt);       // \p{L}
bool is_number(uint32_t cpt);       // \p{N}
bool is_punctuation(uint32_t cpt);  // \p{P}
bool is_whitespace(uint32_t cpt);   // \s: the White_Space property

// GPT-2's reversible byte <-> printable code point map: printable Latin-1 bytes map to themselves,
// the other 68 bytes to U+0100.. in byte order.
uint32_t gpt2_byte_to_cpt(uint8_t byte);
int gpt2_cpt_to_byte(uint32_t cpt);  // -1 for code points outside the map

// The BPE pre-tokenizer: `text` split into words (raw UTF-8, before the byte map). Invalid UTF-8
// bytes come out as U+FFFD, as llama.cpp does.
std::vector<std::string> bpe_pretokenize(std::string_view text, PreTokenizer pre);

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF) at bytes[pos]: the length
// of a well-formed character there, 0 if the bytes run out in the middle of one that could still
// be completed, or -1 if the byte at `pos` cannot start one.
int utf8_sequence_length(std::string_view bytes, size_t pos);

}  // namespace graphrun::tokenizer_detail
