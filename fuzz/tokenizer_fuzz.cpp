// fuzz/tokenizer_fuzz.cpp — the tokenizers on arbitrary text and arbitrary ids.
//
// Two vocabularies: SentencePiece from the model graphrun ships (models/kjv-q8_0.gguf, a real
// SentencePiece vocabulary with byte fallback) and a byte-level BPE one built here (the 256 byte
// symbols, a few hundred merges of common English pairs, control and user-defined tokens).
// The first input byte picks the vocabulary and the options; the rest is the text. Checked:
//   - every id encode gives is inside the vocabulary;
//   - decode and TokenTextStream accept the ids, and the stream's text is valid UTF-8 (its promise);
//   - ids read from the input bytes (some outside the vocabulary) decode or throw TokenizerError.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/tokenizer_internal.h"

namespace {

using namespace graphrun;

Tokenizer spm_tokenizer() {
    const auto file = GgufFile::open(std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf");
    return Tokenizer::from_gguf(*file);
}

std::string gpt2_text(std::string_view raw) {
    std::string out;
    for (const char c : raw) tokenizer_detail::append_utf8(out, tokenizer_detail::gpt2_byte_to_cpt(uint8_t(c)));
    return out;
}

Tokenizer bpe_tokenizer() {
    std::vector<std::string> tokens, merges;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(gpt2_text(std::string(1, char(b))));
        types.push_back(1);
    }
    // Merges of common pairs, then pairs of those: "th", "he", ..., "the", " the", ...
    const char* pairs[][2] = {{"t", "h"}, {"h", "e"}, {"i", "n"}, {"e", "r"}, {"a", "n"}, {" ", "t"},
                              {"th", "e"}, {" t", "he"}, {"o", "n"}, {"e", "n"}, {"in", "g"}, {" ", "a"},
                              {"r", "e"}, {"a", "t"}, {" ", "s"}, {"o", "u"}, {"e", "s"}, {" a", "nd"},
                              {"n", "d"}, {" ", "w"}, {"é", "e"}, {"\xc3", "\xa9"}, {" ", "\xe2\x80"}};
    std::vector<std::string> have(tokens.begin(), tokens.end());
    for (const auto& p : pairs) {
        const std::string merged = gpt2_text(std::string(p[0]) + p[1]);
        bool known = false;
        for (const std::string& t : tokens) known |= t == merged;
        if (known) continue;
        merges.push_back(gpt2_text(p[0]) + " " + gpt2_text(p[1]));
        tokens.push_back(merged);
        types.push_back(1);
    }
    for (const auto& [text, type] : std::vector<std::pair<std::string, int32_t>>{
             {"<|endoftext|>", 3}, {"<|user|>", 4}, {"<pad>", 5}}) {
        tokens.push_back(text);
        types.push_back(type);
    }
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-2");
    w.set_strings("tokenizer.ggml.tokens", tokens);
    w.set_i32s("tokenizer.ggml.token_type", types);
    w.set_strings("tokenizer.ggml.merges", merges);
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(tokens.size() - 3));
    const std::string path =
        (std::filesystem::temp_directory_path() / ("graphrun_tok_fuzz_" + std::to_string(::getpid()) + ".gguf")).string();
    w.write(path);
    const auto file = GgufFile::open(path);
    std::filesystem::remove(path);
    return Tokenizer::from_gguf(*file);
}

bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = uint8_t(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        uint32_t cp = n == 1 ? c : c & (0x7f >> n);
        for (size_t k = 1; k < n; ++k) {
            const auto cc = uint8_t(s[i + k]);
            if ((cc & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3f);
        }
        const uint32_t min_for_length[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_for_length[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += n;
    }
    return true;
}

void check(const Tokenizer& tokenizer, uint8_t options, std::string_view text) {
    const bool add_bos = (options & 2) && tokenizer.bos() >= 0, parse_special = options & 4, special = options & 8;
    const std::vector<int32_t> ids = tokenizer.encode(text, add_bos, parse_special);
    for (int32_t id : ids)
        if (id < 0 || id >= tokenizer.n_vocab()) std::abort();
    (void)tokenizer.decode(ids, special);
    TokenTextStream stream(tokenizer, special);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    if (!valid_utf8(streamed)) {
        std::fprintf(stderr, "TokenTextStream gave invalid UTF-8\n");
        std::abort();
    }

    // The text's bytes as ids (4 bytes each), in and out of the vocabulary.
    std::vector<int32_t> raw(text.size() / 4);
    if (!raw.empty()) std::memcpy(raw.data(), text.data(), raw.size() * 4);
    for (int32_t& id : raw) id = (id & 0x40000000) ? id : int32_t(uint32_t(id) % uint32_t(tokenizer.n_vocab()));
    try {
        (void)tokenizer.decode(raw, special);
    } catch (const TokenizerError&) {
    }
    TokenTextStream raw_stream(tokenizer, special);
    std::string raw_text;
    try {
        for (int32_t id : raw) raw_text += raw_stream.push(id);
    } catch (const TokenizerError&) {
    }
    raw_text += raw_stream.flush();
    if (!valid_utf8(raw_text)) {
        std::fprintf(stderr, "TokenTextStream gave invalid UTF-8 for raw ids\n");
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const Tokenizer spm = spm_tokenizer();
    static const Tokenizer bpe = bpe_tokenizer();
    if (size == 0) return 0;
    const uint8_t options = data[0];
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        check(options & 1 ? bpe : spm, options, text);
    } catch (const TokenizerError&) {
    } catch (const std::exception& e) {
        fuzz::undocumented(e);
    }
    return 0;
}
