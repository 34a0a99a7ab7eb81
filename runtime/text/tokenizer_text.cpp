// runtime/text/tokenizer_text.cpp — text <-> ids: special-token partitioning, encode, decode, streaming.
#include "runtime/text/tokenizer.h"
#include "runtime/text/tokenizer_internal.h"

namespace graphrun {

using tokenizer_detail::TokenType;
using tokenizer_detail::Vocab;
using tokenizer_detail::VocabModel;

namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581 "▁"
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";   // U+FFFD

// A run of the input: plain text [begin, begin + size), or one special token (token >= 0).
struct Fragment {
    int32_t token;
    size_t begin, size;
};

// Cuts the texts of special tokens out of `text`, longest token first, as llama.cpp does:
// user-defined tokens always, control and unknown tokens only with parse_special.
std::vector<Fragment> partition(const Vocab& vocab, std::string_view text, bool parse_special) {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({-1, 0, text.size()});
    for (const int32_t id : vocab.special_tokens) {
        if (!parse_special && vocab.type[id] != TokenType::UserDefined) continue;
        const std::string& token = vocab.text[id];
        if (text.find(token) == std::string_view::npos) continue;

        std::vector<Fragment> next;
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            const size_t end = f.begin + f.size;
            size_t pos = f.begin;
            for (size_t match; (match = text.substr(0, end).find(token, pos)) != std::string_view::npos;) {
                if (match > pos) next.push_back({-1, pos, match - pos});
                next.push_back({id, match, token.size()});
                pos = match + token.size();
            }
            if (pos < end) next.push_back({-1, pos, end - pos});
        }
        fragments = std::move(next);
    }
    return fragments;
}

std::string escape_spaces(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 2);
    for (const char c : text) {
        if (c == ' ')
            out += kEscapedSpace;
        else
            out += c;
    }
    return out;
}

}  // namespace

namespace tokenizer_detail {

std::string decode_piece(const Vocab& vocab, int32_t id) {
    const std::string& text = vocab.text[id];
    switch (vocab.type[id]) {
        case TokenType::Control:
        case TokenType::Unknown:
        case TokenType::UserDefined:
            return text;
        case TokenType::Unused:
            return "";
        case TokenType::Byte:
            return std::string(1, char(std::stoi(text.substr(3, 2), nullptr, 16)));  // checked "<0xNN>"
        case TokenType::Normal:
            break;
    }
    std::string out;
    if (vocab.model == VocabModel::Spm) {
        for (size_t i = 0; i < text.size();) {
            if (text.compare(i, kEscapedSpace.size(), kEscapedSpace) == 0) {
                out += ' ';
                i += kEscapedSpace.size();
            } else {
                out += text[i++];
            }
        }
        return out;
    }
    // GPT-2 alphabet back to bytes; a character outside it is shown, as llama.cpp shows it (bytes
    // that are not UTF-8 show as U+FFFD, so that no token turns overlong or stray bytes into text).
    const std::vector<uint32_t> cpts = decode_utf8_lossy(text);
    for (const uint32_t cpt : cpts) {
        const int byte = gpt2_cpt_to_byte(cpt);
        if (byte >= 0) {
            out += char(byte);
            continue;
        }
        std::string utf8;
        append_utf8(utf8, cpt);
        out += "[UNK_BYTE_0x";
        static constexpr char kHex[] = "0123456789abcdef";
        for (const char c : utf8) {
            out += kHex[uint8_t(c) >> 4];
            out += kHex[uint8_t(c) & 15];
        }
        for (const uint32_t c : cpts) append_utf8(out, c);
        out += "]";
    }
    return out;
}

}  // namespace tokenizer_detail

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    const Vocab& vocab = *vocab_;
    std::vector<int32_t> out;
    if (add_bos) {
        if (vocab.bos < 0)
            throw TokenizerError(vocab.path + ": cannot add BOS: the vocabulary has no BOS token");
        out.push_back(vocab.bos);
    }
    // SentencePiece prefixes a space to the text and, in llama.cpp, to every run after a special token.
    bool after_special = true;
    for (const Fragment& f : partition(vocab, text, parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            after_special = true;
            continue;
        }
        const std::string_view run = text.substr(f.begin, f.size);
        if (vocab.model == VocabModel::Spm) {
            std::string prefixed(vocab.add_space_prefix && after_special ? " " : "");
            prefixed += run;
            tokenizer_detail::spm_encode(vocab, escape_spaces(prefixed), out);
        } else {
            tokenizer_detail::bpe_encode(vocab, run, out);
        }
        after_special = false;
    }
    return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
    if (id < 0 || id >= n_vocab())
        throw TokenizerError(vocab_->path + ": token id " + std::to_string(id) +
                             " is outside the vocabulary of " + std::to_string(n_vocab()));
    const TokenType t = vocab_->type[id];
    if (!special && (t == TokenType::Control || t == TokenType::Unknown)) return "";
    return vocab_->piece[id];
}

namespace {

// llama.cpp's clean_up_tokenization_spaces, three passes over the detokenized bytes.
std::string clean_up_spaces(const std::string& text) {
    // " ?", " !", " .", " ,": the space goes.
    std::string a;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (i > 0 && text[i - 1] == ' ' && (c == '?' || c == '!' || c == '.' || c == ',')) a.pop_back();
        a += c;
    }
    // " ' ": both spaces go, and the character after them no longer counts as preceded by a space.
    std::string b;
    bool after_dropped = false;
    for (size_t i = 0; i < a.size(); ++i) {
        const char c = a[i];
        const bool space_before = i > 0 && a[i - 1] == ' ' && !after_dropped;
        after_dropped = false;
        if (c == '\'' && space_before && i + 1 < a.size() && a[i + 1] == ' ') {
            b.pop_back();
            b += c;
            ++i;  // the space after it
            after_dropped = true;
            continue;
        }
        b += c;
    }
    // " 's", " 'm", " 're", " 've": the space goes (" 't", " 'd", " 'll" keep it, as in llama.cpp).
    std::string out;
    for (size_t i = 0; i < b.size(); ++i) {
        const char c = b[i];
        if (i > 0 && b[i - 1] == ' ' && c == '\'' && i + 1 < b.size()) {
            const char c1 = b[i + 1], c2 = i + 2 < b.size() ? b[i + 2] : '\0';
            if (c1 == 's' || c1 == 'm' || ((c1 == 'r' || c1 == 'v') && c2 == 'e')) out.pop_back();
        }
        out += c;
    }
    return out;
}

}  // namespace

std::string Tokenizer::decode(std::span<const int32_t> ids, bool special) const {
    std::string out;
    bool strip_space = vocab_->add_space_prefix;  // the one encode() put in front of the text
    for (size_t i = 0; i < ids.size(); ++i) {
        std::string piece = token_to_piece(ids[i], special);
        if (strip_space && !(i == 0 && ids[i] == vocab_->bos)) {
            if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);
            strip_space = false;
        }
        out += piece;
    }
    return vocab_->clean_spaces ? clean_up_spaces(out) : out;
}

std::string TokenTextStream::push(int32_t id) {
    pending_ += tokenizer_.token_to_piece(id, special_);
    return drain(false);
}

std::string TokenTextStream::flush() {
    return drain(true);
}

std::string TokenTextStream::drain(bool final) {
    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const int n = tokenizer_detail::utf8_sequence_length(pending_, pos);
        if (n > 0) {
            out.append(pending_, pos, size_t(n));
            pos += size_t(n);
        } else if (n == 0 && !final) {
            break;  // a character whose remaining bytes the next tokens should bring
        } else {
            out += kReplacement;  // a byte no continuation can make valid, or a character cut off at the end
            pos += n == 0 ? pending_.size() - pos : 1;
        }
    }
    pending_.erase(0, pos);
    return out;
}

}  // namespace graphrun
