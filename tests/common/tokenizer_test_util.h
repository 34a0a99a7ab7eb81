// tests/common/tokenizer_test_util.h — small vocabularies written with GgufWriter for the tokenizer tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
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

// llama.cpp's tokenizer test vectors (../shared/testdata/tokenizer/), for the tokenizer tests and
// their llama.cpp comparison.
inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct VectorCase {
    std::string text;
    std::vector<int32_t> ids;
};

// llama.cpp's test-tokenizer-0 format: inputs separated by "\n__ggml_vocab_test__\n" (so an
// input loses the newline before its separator), one line of space-separated ids per input.
inline std::vector<VectorCase> read_vectors(const std::string& vocab_path) {
    const std::string inp = read_file(vocab_path + ".inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    for (size_t pos = 0; pos < inp.size();) {
        const size_t next = inp.find(sep, pos);
        if (next == std::string::npos) {
            inputs.push_back(inp.substr(pos));
            break;
        }
        inputs.push_back(inp.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::vector<std::vector<int32_t>> outputs;
    std::istringstream out(read_file(vocab_path + ".out"));
    for (std::string line; std::getline(out, line);) {
        std::istringstream ids(line);
        outputs.emplace_back();
        for (int32_t id; ids >> id;) outputs.back().push_back(id);
    }
    EXPECT_EQ(inputs.size(), outputs.size()) << "inputs and expected-id lines must pair up";
    std::vector<VectorCase> cases;
    for (size_t i = 0; i < std::min(inputs.size(), outputs.size()); ++i)
        cases.push_back({inputs[i], outputs[i]});
    return cases;
}

inline std::shared_ptr<const GgufFile> open_or_null(const std::string& path) {
    if (!std::filesystem::exists(path)) return nullptr;
    return GgufFile::open(path);
}

// Llama 2's SentencePiece vocabulary with llama.cpp's vectors beside it; skips without ../shared.
inline const std::string kLlamaVocab = kShared + "/testdata/tokenizer/ggml-vocab-llama-spm.gguf";

class LlamaSpm : public ::testing::Test {
  protected:
    void SetUp() override {
        file_ = open_or_null(kLlamaVocab);
        if (!file_) GTEST_SKIP() << kLlamaVocab << " is missing (../shared not present)";
        tok_.emplace(Tokenizer::from_gguf(*file_));
        cases_ = read_vectors(kLlamaVocab);
    }
    std::shared_ptr<const GgufFile> file_;
    std::optional<Tokenizer> tok_;
    std::vector<VectorCase> cases_;
};

}  // namespace graphrun::tokenizer_test
