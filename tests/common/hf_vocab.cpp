// tests/common/hf_vocab.cpp — see hf_vocab.h.
#include "tests/common/hf_vocab.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "runtime/gguf.h"

namespace graphrun::test {

namespace {

using nlohmann::json;

json read_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw HfVocabError(path + ": cannot read");
    try {
        return json::parse(in);
    } catch (const json::exception& e) {
        throw HfVocabError(path + ": not JSON: " + e.what());
    }
}

// tokenizer.ggml.token_type values.
enum : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5 };

struct AddedToken {
    std::string content;
    bool special = false;
};

// The converter's does_token_look_special: added tokens some models forget to mark special.
bool looks_special(const std::string& t) {
    const auto wrapped = [&](std::string_view open, std::string_view close) {
        return t.size() >= open.size() + close.size() && t.compare(0, open.size(), open) == 0 &&
               t.compare(t.size() - close.size(), close.size(), close) == 0;
    };
    return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
           wrapped("<｜", "｜>") || wrapped("<unused", ">");
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
        s.replace(pos, from.size(), to);
    return s;
}

// tokenizer_config.json's "<typ>_token": a string or {"content": ...}; empty when absent or null.
std::string config_token(const json& config, const std::string& typ) {
    const auto it = config.find(typ + "_token");
    if (it == config.end()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        return (*it)["content"].get<std::string>();
    return "";
}

}  // namespace

void write_hf_vocab_gguf(const std::string& dir, const std::string& out, const HfVocabOptions& options) {
    const std::string tokenizer_path = dir + "/tokenizer.json", config_path = dir + "/tokenizer_config.json";
    const json tokenizer = read_json(tokenizer_path);
    const json config = read_json(config_path);
    const json& model = tokenizer.at("model");
    if (model.value("type", "") != "BPE") throw HfVocabError(tokenizer_path + ": model.type is not BPE");
    if (tokenizer.contains("normalizer") && !tokenizer["normalizer"].is_null() &&
        tokenizer["normalizer"].value("type", "") != "NFC") {
        // The converter writes lowercase / strip-accents flags for such normalizers; NFC it ignores.
        throw HfVocabError(tokenizer_path + ": normalizer " + tokenizer["normalizer"].dump() +
                           " is not handled");
    }

    // id -> text and type, model.vocab first, then added_tokens (which win, as in the converter).
    std::map<int64_t, std::string> text_of;
    for (const auto& [text, id] : model.at("vocab").items()) text_of[id.get<int64_t>()] = text;
    std::map<int64_t, AddedToken> added;
    std::map<std::string, int64_t> added_id;  // content -> first id, for the special token names
    for (const json& a : tokenizer.at("added_tokens")) {
        const int64_t id = a.at("id").get<int64_t>();
        added[id] = {a.at("content").get<std::string>(), a.value("special", false)};
        added_id.emplace(added[id].content, id);
    }
    int64_t n_vocab = options.vocab_size;
    if (n_vocab == 0) {
        if (!text_of.empty()) n_vocab = text_of.rbegin()->first + 1;
        if (!added.empty()) n_vocab = std::max(n_vocab, added.rbegin()->first + 1);
    }

    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int64_t id = 0; id < n_vocab; ++id) {
        if (const auto a = added.find(id); a != added.end()) {
            // (The converter first re-encodes non-normalized added tokens through the tokenizer;
            // for an added token that gives back its own text, as for every one of these.)
            const bool control = a->second.special || looks_special(a->second.content);
            tokens.push_back(control ? a->second.content : replace_all(a->second.content, "\u2581", " "));
            types.push_back(control ? kControl : kUserDefined);
        } else if (const auto t = text_of.find(id); t != text_of.end()) {
            tokens.push_back(t->second);
            types.push_back(kNormal);
        } else {
            tokens.push_back("[PAD" + std::to_string(id) + "]");
            types.push_back(kUnused);
        }
    }

    std::vector<std::string> merges;
    for (const json& m : model.at("merges")) {
        if (m.is_string()) {
            merges.push_back(m.get<std::string>());
        } else if (m.is_array() && m.size() == 2) {  // transformers >= 4.45: a pair, spaces allowed
            merges.push_back(replace_all(m[0].get<std::string>(), " ", "\u0120") + " " +
                             replace_all(m[1].get<std::string>(), " ", "\u0120"));
        } else {
            throw HfVocabError(tokenizer_path + ": merge " + m.dump() + " is neither a string nor a pair");
        }
    }

    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", options.name);
    // The hyperparameters llama.cpp reads before it loads a vocabulary; no tensors follow.
    w.set_u32("llama.context_length", 4096);
    w.set_u32("llama.embedding_length", 64);
    w.set_u32("llama.block_count", 1);
    w.set_u32("llama.feed_forward_length", 128);
    w.set_u32("llama.attention.head_count", 1);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", options.pre);
    w.set_strings("tokenizer.ggml.tokens", tokens);
    w.set_i32s("tokenizer.ggml.token_type", types);
    w.set_strings("tokenizer.ggml.merges", merges);

    // What a TemplateProcessing post-processor adds around a single sequence says whether BOS and
    // EOS are added; only the plain case ($A with one special token before and/or after) is read.
    std::map<std::string, bool> add_token;
    const json& post = tokenizer.contains("post_processor") ? tokenizer["post_processor"] : json();
    std::vector<json> processors;
    if (post.is_object())
        processors = post.contains("processors") ? post["processors"].get<std::vector<json>>()
                                                 : std::vector<json>{post};
    for (const json& p : processors) {
        const std::string type = p.value("type", "");
        if (type == "ByteLevel") continue;
        if (type != "TemplateProcessing")
            throw HfVocabError(tokenizer_path + ": post-processor " + type + " is not handled");
        const json& single = p.at("single");
        const auto special_at = [&](size_t i) {
            return single[i].contains("SpecialToken") ? single[i]["SpecialToken"].value("id", "") : "";
        };
        if (single.size() > 1) {
            if (const std::string first = special_at(0); !first.empty())
                add_token["bos"] = first == config_token(config, "bos");
            if (const std::string last = special_at(single.size() - 1); !last.empty())
                add_token["eos"] = last == config_token(config, "eos");
        }
    }

    // gguf-py's key for each special token type (it has none for cls, which it skips).
    static const std::map<std::string, std::string> kIdKeys = {
        {"bos", "bos_token_id"},       {"eos", "eos_token_id"},     {"unk", "unknown_token_id"},
        {"sep", "seperator_token_id"}, {"pad", "padding_token_id"}, {"mask", "mask_token_id"}};
    for (const auto& [typ, key] : kIdKeys) {
        if (const auto flag = config.find("add_" + typ + "_token");
            flag != config.end() && flag->is_boolean())
            add_token[typ] = flag->get<bool>();
        const std::string content = config_token(config, typ);
        const auto id = added_id.find(content);
        if (content.empty() || id == added_id.end()) continue;  // only added tokens are looked at
        w.set_u32("tokenizer.ggml." + key, uint32_t(id->second));
    }
    // gguf-py writes add_bos, add_eos and add_sep only.
    for (const auto& [typ, value] : add_token)
        if (typ == "bos" || typ == "eos" || typ == "sep")
            w.set_bool("tokenizer.ggml.add_" + typ + "_token", value);

    if (const auto tmpl = config.find("chat_template"); tmpl != config.end() && !tmpl->is_null()) {
        if (!tmpl->is_string()) throw HfVocabError(config_path + ": chat_template is not a string");
        w.set_string("tokenizer.chat_template", tmpl->get<std::string>());
    }
    w.write(out);
}

}  // namespace graphrun::test
