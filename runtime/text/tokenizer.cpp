// runtime/text/tokenizer.cpp — loading and validating a GGUF file's vocabulary (tokenizer.ggml.*).
//
// Defaults follow llama.cpp: "llama" vocabularies have BOS 1, EOS 2, UNK 0, add BOS and prefix a
// space; "gpt2" ones have BOS = EOS = 11 and add neither, except that the Llama 3 pre-tokenizer adds
// BOS (tokenizer.ggml.add_bos_token decides in every case). A default id outside the vocabulary is
// dropped quietly; an id the file states outside it is refused. Everything the encoders index is
// checked here, so they never look past an array's end.
#include "runtime/text/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>

#include "runtime/gguf.h"
#include "runtime/text/tokenizer_internal.h"

namespace graphrun {

using tokenizer_detail::PreTokenizer;
using tokenizer_detail::TokenType;
using tokenizer_detail::Vocab;
using tokenizer_detail::VocabModel;

namespace {

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";

// The tokenizer.ggml.pre names graphrun implements, with what llama.cpp sets for each
// (llama-vocab.cpp): the pre-tokenizer and whether detokenizing cleans up spaces.
struct PreTokenizerName {
    const char* name;
    PreTokenizer pre;
    bool clean_spaces;
};
constexpr PreTokenizerName kPreTokenizers[] = {
    {"default", PreTokenizer::Default, true}, {"gpt-2", PreTokenizer::Gpt2, true},
    {"gpt2", PreTokenizer::Gpt2, true},       {"llama-bpe", PreTokenizer::Llama3, true},
    {"llama3", PreTokenizer::Llama3, true},   {"llama-v3", PreTokenizer::Llama3, true},
    {"qwen2", PreTokenizer::Qwen2, false},    {"deepseek-r1-qwen", PreTokenizer::Qwen2, false},
    {"smollm", PreTokenizer::Smollm, false},
};

// "key[i]", built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string temporaries.
std::string element(const char* key, size_t i) {
    std::string s(key);
    s += '[';
    s += std::to_string(i);
    s += ']';
    return s;
}

class Loader {
  public:
    explicit Loader(const GgufFile& file) : file_(file) {}

    [[noreturn]] void fail(std::string_view key, const std::string& what) const {
        throw TokenizerError(file_.path() + ": " + std::string(key) + " " + what);
    }

    std::string type_of(const GgufValue& v) const {
        if (v.type == GgufType::ARRAY) return std::string("array of ") + gguf_type_name(v.elem_type);
        return gguf_type_name(v.type);
    }

    // The array at `key` if present (nullptr if absent), with one of the accepted element types.
    const GgufValue* array(std::string_view key, std::initializer_list<GgufType> elem_types) const {
        const GgufValue* v = file_.find(key);
        if (!v) return nullptr;
        const bool ok = v->type == GgufType::ARRAY &&
                        std::find(elem_types.begin(), elem_types.end(), v->elem_type) != elem_types.end();
        if (!ok)
            fail(key,
                 "has type " + type_of(*v) + ", expected array of " + gguf_type_name(*elem_types.begin()));
        return v;
    }

    std::optional<std::string> string(std::string_view key) const {
        const GgufValue* v = file_.find(key);
        if (!v) return std::nullopt;
        if (v->type != GgufType::STRING) fail(key, "has type " + type_of(*v) + ", expected string");
        return v->s;
    }

    std::optional<bool> boolean(std::string_view key) const {
        const GgufValue* v = file_.find(key);
        if (!v) return std::nullopt;
        if (v->type != GgufType::BOOL) fail(key, "has type " + type_of(*v) + ", expected bool");
        return v->u != 0;
    }

    // A token id: absent, or -1 / 0xFFFFFFFF ("none", as converters write it), keeps `id`;
    // anything else must be a valid id.
    void token_id(std::string_view key, int32_t n_vocab, int32_t& id) const {
        const GgufValue* v = file_.find(key);
        if (!v) return;
        if (!v->is_integer()) fail(key, "has type " + type_of(*v) + ", expected an integer token id");
        const bool is_signed = v->type == GgufType::I8 || v->type == GgufType::I16 ||
                               v->type == GgufType::I32 || v->type == GgufType::I64;
        if ((is_signed && v->i == -1) || (!is_signed && v->u == 0xFFFFFFFFu)) return;
        const bool in_range = is_signed ? (v->i >= 0 && v->i < n_vocab) : v->u < uint64_t(n_vocab);
        if (!in_range) {
            fail(key, "= " + (is_signed ? std::to_string(v->i) : std::to_string(v->u)) +
                          " is not a token id: the vocabulary has " + std::to_string(n_vocab) + " tokens");
        }
        id = is_signed ? int32_t(v->i) : int32_t(v->u);
    }

    void load_tokens(Vocab& vocab) const {
        const GgufValue* tokens = array(kTokens, {GgufType::STRING});
        if (!tokens) fail(kTokens, "is missing: the file has tokenizer.ggml.model but no vocabulary");
        const auto& list = tokens->array;
        if (list.empty()) fail(kTokens, "is empty");
        if (list.size() > size_t(std::numeric_limits<int32_t>::max() / 2))
            fail(kTokens, "has too many tokens");
        const size_t n = list.size();

        vocab.text.resize(n);
        vocab.score.assign(n, 0.0f);
        vocab.type.assign(n, TokenType::Normal);
        for (size_t i = 0; i < n; ++i) {
            // llama.cpp renames empty tokens the same way, so matching on text stays well-defined.
            vocab.text[i] = list[i].s.empty() ? "[EMPTY_" + std::to_string(i) + "]" : list[i].s;
            const auto [it, fresh] = vocab.id_of.emplace(vocab.text[i], int32_t(i));
            if (!fresh) {
                fail(kTokens, "holds '" + vocab.text[i] + "' twice, at ids " + std::to_string(it->second) +
                                  " and " + std::to_string(i));
            }
        }

        // The scores are what the SentencePiece merges run on, so "llama" vocabularies need them.
        const GgufValue* scores = array(kScores, {GgufType::F32, GgufType::I32});
        if (!scores && vocab.model == VocabModel::Spm)
            fail(kScores, "is missing (a 'llama' vocabulary needs it)");
        if (scores) {
            if (scores->array.size() != n) fail(kScores, length_mismatch(scores->array.size(), n));
            for (size_t i = 0; i < n; ++i) {
                const GgufValue& s = scores->array[i];
                const double value = scores->elem_type == GgufType::F32 ? s.f : double(s.i);
                if (!std::isfinite(value)) fail(element(kScores, i), "is not a finite number");
                vocab.score[i] = float(value);
            }
        }

        const GgufValue* types = array(kTypes, {GgufType::I32});
        if (types) {
            if (types->array.size() != n) fail(kTypes, length_mismatch(types->array.size(), n));
            for (size_t i = 0; i < n; ++i) {
                const int64_t t = types->array[i].i;
                if (t < 1 || t > 6) {
                    fail(element(kTypes, i),
                         "= " + std::to_string(t) +
                             " is not a token type (1 normal, 2 unknown, 3 control, 4 user-defined, "
                             "5 unused, 6 byte)");
                }
                vocab.type[i] = TokenType(t);
            }
        }
    }

    std::string length_mismatch(size_t got, size_t n) const {
        return "has " + std::to_string(got) + " elements but " + kTokens + " has " + std::to_string(n);
    }

    // Byte tokens must read exactly "<0xNN>", and each byte value may appear once.
    void load_byte_tokens(Vocab& vocab) const {
        vocab.byte_token.fill(-1);
        const auto hex = [](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            return -1;
        };
        for (size_t i = 0; i < vocab.text.size(); ++i) {
            if (vocab.type[i] != TokenType::Byte) continue;
            const std::string& t = vocab.text[i];
            const bool shape = t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
                               hex(t[3]) >= 0 && hex(t[4]) >= 0;
            if (!shape) {
                fail(kTypes, "marks token " + std::to_string(i) + " '" + t +
                                 "' as a byte token, but byte tokens must read <0xNN> with two hex digits");
            }
            const int byte = hex(t[3]) * 16 + hex(t[4]);
            if (vocab.byte_token[byte] >= 0) {
                fail(kTypes, "has two byte tokens for byte " + t.substr(1, 4) + ": ids " +
                                 std::to_string(vocab.byte_token[byte]) + " and " + std::to_string(i));
            }
            vocab.byte_token[byte] = int32_t(i);
        }
    }

    void load_bpe(Vocab& vocab) const {
        const std::string pre = string(kPre).value_or("default");
        const PreTokenizerName* known = nullptr;
        for (const PreTokenizerName& p : kPreTokenizers)
            if (pre == p.name) known = &p;
        if (!known) {
            std::string names;
            for (const PreTokenizerName& p : kPreTokenizers)
                names += std::string(names.empty() ? "" : ", ") + p.name;
            fail(kPre, "is '" + pre + "', a pre-tokenizer graphrun does not implement; it knows " + names);
        }
        vocab.pre = known->pre;
        vocab.ignore_merges = known->pre == PreTokenizer::Llama3;
        vocab.clean_spaces = known->clean_spaces;

        const GgufValue* merges = array(kMerges, {GgufType::STRING});
        if (!merges) fail(kMerges, "is missing (a 'gpt2' vocabulary needs it)");
        for (size_t i = 0; i < merges->array.size(); ++i) {
            const std::string& m = merges->array[i].s;
            // "left right"; the search starts at 1 so that a left half may itself be a space.
            const size_t space = m.find(' ', 1);
            if (space == std::string::npos || space + 1 == m.size()) {
                fail(element(kMerges, i), "= '" + m + "' is not two pieces separated by a space");
            }
            // A repeated pair keeps its first (best) rank, as in llama.cpp.
            vocab.merge_rank.emplace(std::make_pair(m.substr(0, space), m.substr(space + 1)), int32_t(i));
        }
    }

    void load_special_ids(Vocab& vocab) const {
        const int32_t n = int32_t(vocab.text.size());
        const auto default_id = [n](int32_t id) { return id < n ? id : -1; };
        if (vocab.model == VocabModel::Spm) {
            vocab.bos = default_id(1), vocab.eos = default_id(2), vocab.unk = default_id(0);
        } else {
            vocab.bos = default_id(11), vocab.eos = default_id(11), vocab.unk = -1;
        }
        token_id("tokenizer.ggml.bos_token_id", n, vocab.bos);
        token_id("tokenizer.ggml.eos_token_id", n, vocab.eos);
        token_id("tokenizer.ggml.unknown_token_id", n, vocab.unk);
        token_id("tokenizer.ggml.eot_token_id", n, vocab.eot);
        token_id("tokenizer.ggml.eom_token_id", n, vocab.eom);

        detect_by_text(vocab);

        const bool spm = vocab.model == VocabModel::Spm;
        // llama.cpp turns BOS on for SentencePiece and for the Llama 3 pre-tokenizer; the key decides.
        const bool bos_by_default =
            spm || (vocab.model == VocabModel::Bpe && vocab.pre == PreTokenizer::Llama3);
        vocab.add_bos = boolean("tokenizer.ggml.add_bos_token").value_or(bos_by_default);
        if (vocab.add_bos && vocab.bos < 0)
            fail("tokenizer.ggml.add_bos_token", "is true but the vocabulary has no BOS token");
        // Only SentencePiece prefixes a space; llama.cpp's BPE encoder ignores the key.
        const std::optional<bool> prefix = boolean("tokenizer.ggml.add_space_prefix");
        vocab.add_space_prefix = spm && prefix.value_or(true);
    }

    // What llama.cpp finds by token text because converters do not write it (llama-vocab.cpp):
    // EOT and EOM when no key names them, the fill-in-the-middle tokens, and the set of tokens that
    // end generation. Every token found so is a control token whatever the file says, so that its
    // text in a prompt is plain text unless specials are parsed, and it decodes to "" unless asked.
    void detect_by_text(Vocab& vocab) const {
        const auto find = [&](std::initializer_list<const char*> texts) {
            int32_t id = -1;  // the lowest id among the texts present
            for (const char* t : texts) {
                const auto it = vocab.id_of.find(std::string_view(t));
                if (it != vocab.id_of.end() && (id < 0 || it->second < id)) id = it->second;
            }
            if (id >= 0) vocab.type[id] = TokenType::Control;
            return id;
        };
        if (vocab.eot < 0)
            vocab.eot = find({"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                              "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>",
                              "<end_of_utterance>"});
        if (vocab.eom < 0) vocab.eom = find({"<|eom_id|>"});
        // Fill-in-the-middle: prefix, suffix, middle, then pad, repository and file separator, which
        // also end generation.
        find({"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
              "<|code_prefix|>", "<|prefix|>"});
        find({"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
              "<|code_suffix|>", "<|suffix|>"});
        find({"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
              "<|code_middle|>", "<|middle|>"});
        std::vector<int32_t> eog;
        for (const int32_t id :
             {find({"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}),
              find({"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}),
              find({"<|file_sep|>"}), vocab.eos, vocab.eot, vocab.eom})
            if (id >= 0) eog.push_back(id);

        // Each of these texts, not only the lowest id among them.
        const auto add_each = [&](std::initializer_list<const char*> texts) {
            for (const char* t : texts)
                if (const int32_t id = find({t}); id >= 0) eog.push_back(id);
        };
        // clang-format off
        add_each({"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
                  "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
                  "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                  "<｜end▁of▁sentence｜>", "[e~["});
        // clang-format on
        std::sort(eog.begin(), eog.end());
        eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
        // llama.cpp's two exceptions: with <|return|> and <|call|> (or <|calls|> and <|flush|>),
        // <|end|> ends a message, not generation; with <|tool_response>, </s> is ordinary text.
        const auto has = [&](const char* t) {
            const auto it = vocab.id_of.find(std::string_view(t));
            return it != vocab.id_of.end() && std::binary_search(eog.begin(), eog.end(), it->second);
        };
        const auto demote = [&](const char* t, TokenType type) {
            const int32_t id = vocab.id_of.find(std::string_view(t))->second;
            eog.erase(std::find(eog.begin(), eog.end(), id));
            vocab.type[id] = type;
        };
        if (has("<|end|>") &&
            ((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"))))
            demote("<|end|>", TokenType::UserDefined);
        if (has("</s>") && has("<|tool_response>")) demote("</s>", TokenType::Normal);
        vocab.end_of_generation = std::move(eog);
    }

    const GgufFile& file_;
};

}  // namespace

namespace tokenizer_detail {

int32_t Vocab::mergeable(std::string_view piece) const {
    const auto it = id_of.find(piece);
    if (it == id_of.end()) return -1;
    const TokenType t = type[it->second];
    return t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Unused ? it->second : -1;
}

int32_t Vocab::byte_fallback(uint8_t byte) const {
    if (byte_token[byte] >= 0) return byte_token[byte];
    // Like llama.cpp, a token whose text is the byte itself; then, as SentencePiece without byte
    // fallback does, the unknown token (llama.cpp would throw here).
    const char c = char(byte);
    const int32_t id = mergeable(std::string_view(&c, 1));
    if (id >= 0) return id;
    if (unk >= 0 && type[unk] == TokenType::Unknown) return unk;
    static constexpr char kHex[] = "0123456789ABCDEF";
    throw TokenizerError(path + ": cannot encode byte 0x" + kHex[byte >> 4] + kHex[byte & 15] +
                         ": the vocabulary has no byte token for it and no unknown token");
}

}  // namespace tokenizer_detail

Tokenizer Tokenizer::from_gguf(const GgufFile& file) {
    Loader loader(file);
    auto vocab = std::make_shared<Vocab>();
    vocab->path = file.path();

    const std::optional<std::string> model = loader.string(kModel);
    if (!model) loader.fail(kModel, "is missing: the file carries no tokenizer");
    if (*model == "llama") {
        vocab->model = VocabModel::Spm;
    } else if (*model == "gpt2") {
        vocab->model = VocabModel::Bpe;
    } else {
        loader.fail(kModel, "is '" + *model +
                                "': graphrun supports 'llama' (SentencePiece) and 'gpt2' (byte-level BPE)");
    }

    loader.load_tokens(*vocab);
    loader.load_byte_tokens(*vocab);
    if (vocab->model == VocabModel::Bpe) loader.load_bpe(*vocab);
    loader.load_special_ids(*vocab);

    // Matched verbatim before encoding, longest first so that a token containing another wins.
    for (int32_t id = 0; id < int32_t(vocab->text.size()); ++id) {
        const TokenType t = vocab->type[id];
        if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown)
            vocab->special_tokens.push_back(id);
    }
    std::stable_sort(vocab->special_tokens.begin(), vocab->special_tokens.end(),
                     [&](int32_t a, int32_t b) { return vocab->text[a].size() > vocab->text[b].size(); });
    vocab->piece.reserve(vocab->text.size());
    for (int32_t id = 0; id < int32_t(vocab->text.size()); ++id)
        vocab->piece.push_back(tokenizer_detail::decode_piece(*vocab, id));
    return Tokenizer(std::move(vocab));
}

int32_t Tokenizer::n_vocab() const {
    return int32_t(vocab_->text.size());
}
int32_t Tokenizer::bos() const {
    return vocab_->bos;
}
int32_t Tokenizer::eos() const {
    return vocab_->eos;
}
bool Tokenizer::add_bos() const {
    return vocab_->add_bos;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
    return std::binary_search(vocab_->end_of_generation.begin(), vocab_->end_of_generation.end(), id);
}

std::span<const int32_t> Tokenizer::end_of_generation() const {
    return vocab_->end_of_generation;
}

const std::string& Tokenizer::token_text(int32_t id) const {
    if (id < 0 || id >= n_vocab())
        throw TokenizerError(vocab_->path + ": token id " + std::to_string(id) +
                             " is outside the vocabulary of " + std::to_string(n_vocab()));
    return vocab_->text[id];
}

bool Tokenizer::is_control(int32_t id) const {
    return id >= 0 && id < n_vocab() && vocab_->type[id] == TokenType::Control;
}

bool Tokenizer::is_user_defined(int32_t id) const {
    return id >= 0 && id < n_vocab() && vocab_->type[id] == TokenType::UserDefined;
}

}  // namespace graphrun
