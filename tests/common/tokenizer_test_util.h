// tests/common/tokenizer_test_util.h — small vocabularies written with GgufWriter for the tokenizer tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/tokenizer_internal.h"

namespace graphrun::tokenizer_test {

inline const std::string kShared = GRAPHRUN_SOURCE_DIR "/../shared";

inline std::string temp_vocab_path() {
    static std::atomic<int> counter{0};
    return ::testing::TempDir() + "graphrun_tok_" + std::to_string(::getpid()) + "_" +
           std::to_string(counter++) + ".gguf";
}

// Writes `w` to a temporary file and opens it (the file is mapped, so it can be removed at once).
inline std::shared_ptr<const GgufFile> open_written(const GgufWriter& w) {
    const std::string path = temp_vocab_path();
    w.write(path);
    auto file = GgufFile::open(path);
    std::remove(path.c_str());
    return file;
}

// Writes `w` to a temporary file, opens it and loads its tokenizer.
inline Tokenizer load(const GgufWriter& w) {
    const std::string path = temp_vocab_path();
    w.write(path);
    const auto file = GgufFile::open(path);
    std::remove(path.c_str());
    return Tokenizer::from_gguf(*file);
}

// The TokenizerError message loading `w` gives, with the temporary path replaced by "<file>".
inline std::string load_error(const GgufWriter& w) {
    const std::string path = temp_vocab_path();
    w.write(path);
    const auto file = GgufFile::open(path);
    std::remove(path.c_str());
    try {
        Tokenizer::from_gguf(*file);
    } catch (const TokenizerError& e) {
        std::string msg = e.what();
        if (msg.rfind(path, 0) == 0) msg = "<file>" + msg.substr(path.size());
        return msg;
    }
    return "<no TokenizerError>";
}

// Text in GPT-2's byte alphabet, as gpt2 vocabularies store their tokens.
inline std::string gpt2_text(std::string_view raw) {
    std::string out;
    for (const char c : raw)
        tokenizer_detail::append_utf8(out, tokenizer_detail::gpt2_byte_to_cpt(uint8_t(c)));
    return out;
}

// A gpt2 vocabulary: the 256 byte symbols (id = byte value), then one token per merge result in
// merge order, then `extra` tokens with their types. Merges are given in raw text ("a b").
struct BpeVocab {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<std::string> merges;

    explicit BpeVocab(const std::vector<std::pair<std::string, std::string>>& raw_merges,
                      const std::vector<std::pair<std::string, int32_t>>& extra = {}) {
        for (int b = 0; b < 256; ++b) {
            tokens.push_back(gpt2_text(std::string(1, char(b))));
            types.push_back(1);
        }
        for (const auto& [left, right] : raw_merges) {
            merges.push_back(gpt2_text(left) + " " + gpt2_text(right));
            tokens.push_back(gpt2_text(left + right));
            types.push_back(1);
        }
        for (const auto& [text, type] : extra) {
            tokens.push_back(text);
            types.push_back(type);
        }
    }

    GgufWriter writer(const std::string& pre = "gpt-2") const {
        GgufWriter w;
        w.set_string("tokenizer.ggml.model", "gpt2");
        if (!pre.empty()) w.set_string("tokenizer.ggml.pre", pre);
        w.set_strings("tokenizer.ggml.tokens", tokens);
        w.set_i32s("tokenizer.ggml.token_type", types);
        w.set_strings("tokenizer.ggml.merges", merges);
        return w;
    }

    // Id of a token given in raw text.
    int32_t id(const std::string& raw) const {
        const std::string t = gpt2_text(raw);
        for (size_t i = 0; i < tokens.size(); ++i)
            if (tokens[i] == t) return int32_t(i);
        ADD_FAILURE() << "no token for '" << raw << "'";
        return -1;
    }
};

}  // namespace graphrun::tokenizer_test
