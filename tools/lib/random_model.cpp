// tools/lib/random_model.cpp — writes random-weight Llama-family models with llama.cpp's names and layout.
//
// Weight scales are chosen so a forward pass stays O(1) and greedy decoding is decisive:
//   matrices         N(0, 1/sqrt(fan_in))   fan_in = ne[0], the row length each output sums over
//   token_embd       N(0, 1)                rows enter RMSNorm, only their direction matters
//   output.weight    N(0, 3/sqrt(n_embd))   logits with std ~3 rarely sit on near-ties
//   norm weights     1 + N(0, 0.05)         F32, near 1 so no channel is silenced (qwen3's Q/K norms too)
//   qwen2 biases     N(0, 0.5)              F32, as converted Qwen2 files keep them
// A tied model (no output.weight) reads its logits through token_embd, and a row that is large next to
// what the layers add predicts its own token forever (the residual stream keeps its direction). So tied:
//   token_embd       N(0, 0.3/sqrt(n_embd)) rows of norm ~0.3, small beside the layers' O(1) elements
//   output_norm      10 * (1 + N(0, 0.05))  gives the logits back their std ~3
#include "tools/lib/random_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <set>
#include <stdexcept>

#include "runtime/fp16.h"
#include "runtime/gguf.h"
#include "runtime/output_file.h"

namespace graphrun::graph {

namespace {

constexpr int64_t kFirstNormalToken = 3 + 256;     // <unk> <s> </s> <0x00>..<0xFF>
constexpr int64_t kMaxWeights = int64_t(1) << 31;  // a sanity bound: the writer holds it all in memory
constexpr int64_t kMaxDim = int64_t(1) << 24;      // keeps every product of two dims far from overflow
constexpr double kOutputGain = 3.0;
constexpr double kTiedEmbeddingNorm = 0.3;

// llama.cpp's token types.
constexpr int32_t kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeByte = 6;

// Normal draws that are the same on every platform (std::normal_distribution is not).
class NormalSource {
  public:
    explicit NormalSource(uint64_t seed) : rng_(seed) {}
    double next() {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        const double u1 = 1.0 - uniform();  // (0, 1]: log(u1) is finite
        const double u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(u1));
        spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
        has_spare_ = true;
        return r * std::cos(2.0 * std::numbers::pi * u2);
    }

  private:
    double uniform() { return double(rng_() >> 11) * 0x1.0p-53; }  // [0, 1) with 53 random bits
    std::mt19937_64 rng_;
    bool has_spare_ = false;
    double spare_ = 0;
};

void require_range(const char* field, int64_t value) {
    if (value < 1 || value > kMaxDim)
        throw std::invalid_argument(std::string(field) + " = " + std::to_string(value) +
                                    " must be between 1 and " + std::to_string(kMaxDim));
}

// The normal pieces in the order they get ids: the most useful for English text first.
const std::vector<std::string>& seed_pieces() {
    static const std::vector<std::string> pieces = [] {
        std::vector<std::string> p = {"▁"};
        for (char c = 'a'; c <= 'z'; ++c) p.push_back(std::string(1, c));
        for (char c = 'a'; c <= 'z'; ++c) p.push_back("▁" + std::string(1, c));
        for (const char* s : {".", ",", "!", "?", "'", "\"", "-", ":", ";"}) p.push_back(s);
        for (char c = 'A'; c <= 'Z'; ++c) p.push_back(std::string(1, c));
        for (char c = '0'; c <= '9'; ++c) p.push_back(std::string(1, c));
        for (const char* s :
             {"th",    "he",     "in",      "er",    "an",    "re",    "on",    "at",     "en",
              "nd",    "ed",     "es",      "or",    "ing",   "▁the",  "▁and",  "▁was",   "▁to",
              "▁he",   "▁she",   "▁it",     "▁in",   "▁of",   "▁day",  "▁one",  "▁upon",  "▁time",
              "▁once", "▁there", "▁little", "▁girl", "▁boy",  "▁play", "▁big",  "▁happy", "▁said",
              "▁saw",  "▁her",   "▁his",    "▁with", "▁they", "▁you",  "▁on",   "▁for",   "▁that",
              "▁had",  "▁is",    "▁not",    "▁were", "▁Once", "▁The",  "▁Lily", "▁Tom"})
            p.push_back(s);
        return p;
    }();
    return pieces;
}

std::vector<float> normal_values(NormalSource& rng, int64_t n, double mean, double stddev) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = float(mean + stddev * rng.next());
    return v;
}

void add_weight(GgufWriter& w, const std::string& name, DType type, std::vector<int64_t> ne,
                const std::vector<float>& values) {
    if (type == DType::F32) {
        w.add_tensor(name, type, std::move(ne), values.data(), values.size() * sizeof(float));
        return;
    }
    std::vector<uint16_t> half(values.size());
    for (size_t k = 0; k < values.size(); ++k) half[k] = f32_to_fp16(values[k]);
    w.add_tensor(name, type, std::move(ne), half.data(), half.size() * sizeof(uint16_t));
}

}  // namespace

const std::vector<std::string>& random_model_architectures() {
    static const std::vector<std::string> archs = {"llama", "qwen2", "qwen3"};
    return archs;
}

std::vector<float> llama3_rope_factors(int64_t head_dim, double rope_base) {
    constexpr double kFactor = 8, kLowFreqFactor = 1, kHighFreqFactor = 4, kOldContext = 8192;
    const double low_freq_wavelen = kOldContext / kLowFreqFactor, high_freq_wavelen = kOldContext / kHighFreqFactor;
    std::vector<float> factors;
    for (int64_t i = 0; i < head_dim; i += 2) {
        const double freq = 1.0 / std::pow(rope_base, double(i) / double(head_dim));
        const double wavelen = 2 * std::numbers::pi / freq;
        if (wavelen < high_freq_wavelen) {
            factors.push_back(1.0f);
        } else if (wavelen > low_freq_wavelen) {
            factors.push_back(float(kFactor));
        } else {
            const double smooth = (kOldContext / wavelen - kLowFreqFactor) / (kHighFreqFactor - kLowFreqFactor);
            factors.push_back(float(1 / ((1 - smooth) / kFactor + smooth)));
        }
    }
    return factors;
}

void validate_random_llama(const RandomLlamaSpec& s) {
    const auto& archs = random_model_architectures();
    if (std::find(archs.begin(), archs.end(), s.arch) == archs.end())
        throw std::invalid_argument("arch '" + s.arch + "' is not one of llama, qwen2, qwen3");
    require_range("n_embd", s.n_embd);
    require_range("n_layers", s.n_layers);
    require_range("n_heads", s.n_heads);
    require_range("n_kv_heads", s.n_kv_heads);
    require_range("n_ff", s.n_ff);
    require_range("n_vocab", s.n_vocab);
    require_range("n_ctx", s.n_ctx);
    if (s.key_length != 0) require_range("key_length", s.key_length);
    if (s.key_length == 0 && s.n_embd % s.n_heads != 0)
        throw std::invalid_argument("n_embd = " + std::to_string(s.n_embd) +
                                    " is not divisible by n_heads = " + std::to_string(s.n_heads) +
                                    " (or give the head size, key_length)");
    if (s.n_heads % s.n_kv_heads != 0)
        throw std::invalid_argument("n_heads = " + std::to_string(s.n_heads) +
                                    " is not divisible by n_kv_heads = " + std::to_string(s.n_kv_heads));
    if (s.head_dim() % 2 != 0)
        throw std::invalid_argument(std::string(s.key_length > 0 ? "head_dim = key_length = "
                                                                 : "head_dim = n_embd / n_heads = ") +
                                    std::to_string(s.head_dim()) +
                                    " must be even (RoPE rotates pairs of dimensions)");
    if (s.rope_freqs && s.arch != "llama")
        throw std::invalid_argument("rope_freqs.weight is a Llama 3.1 tensor; llama.cpp's " + s.arch +
                                    " graph has no place for it");
    if (!(s.rope_base >= 0.0f) || s.rope_base > 1e12f)
        throw std::invalid_argument("rope_base = " + std::to_string(s.rope_base) + " must be in 0 .. 1e12");
    if (s.n_vocab < kFirstNormalToken)
        throw std::invalid_argument("n_vocab = " + std::to_string(s.n_vocab) + " must be at least " +
                                    std::to_string(kFirstNormalToken) +
                                    " (3 control tokens and 256 byte tokens)");
    if (s.type != DType::F32 && s.type != DType::F16)
        throw std::invalid_argument(std::string("type ") + dtype_name(s.type) +
                                    " is not supported (f32 or f16)");
    const int64_t q_dim = s.n_heads * s.head_dim(), kv_dim = s.n_kv_heads * s.head_dim();
    if (q_dim > kMaxDim || kv_dim > kMaxDim)
        throw std::invalid_argument("n_heads * head_dim = " + std::to_string(q_dim) + " must be at most " +
                                    std::to_string(kMaxDim));
    const int64_t per_layer = 2 * s.n_embd + 2 * s.n_embd * q_dim + 2 * s.n_embd * kv_dim +
                              3 * s.n_embd * s.n_ff + q_dim + 2 * kv_dim + 2 * s.head_dim();
    const int64_t total = 2 * s.n_embd * s.n_vocab + s.n_embd + s.n_layers * per_layer;
    if (per_layer > kMaxWeights || total > kMaxWeights)
        throw std::invalid_argument("the model would have more than " + std::to_string(kMaxWeights) +
                                    " weights");
}

std::vector<std::string> random_llama_vocab(int64_t n_vocab) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    static const char* kHex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    std::set<std::string> seen(tokens.begin(), tokens.end());
    auto add = [&](const std::string& piece) {
        if (int64_t(tokens.size()) < n_vocab && seen.insert(piece).second) tokens.push_back(piece);
    };
    for (const std::string& piece : seed_pieces()) add(piece);
    // Then every lowercase string of length 2, 3, ..., each with and without the word marker.
    for (int length = 2; int64_t(tokens.size()) < n_vocab; ++length) {
        std::string s(size_t(length), 'a');
        while (int64_t(tokens.size()) < n_vocab) {
            add("▁" + s);
            add(s);
            int k = length - 1;  // next string in lexicographic order
            while (k >= 0 && s[size_t(k)] == 'z') s[size_t(k--)] = 'a';
            if (k < 0) break;
            ++s[size_t(k)];
        }
    }
    tokens.resize(size_t(std::min<int64_t>(n_vocab, int64_t(tokens.size()))));
    return tokens;
}

namespace {

// The model's hyperparameters, under the architecture's prefix as llama.cpp's converters write them.
void set_random_llama_metadata(GgufWriter& w, const RandomLlamaSpec& s, float rope_base) {
    const int64_t head_dim = s.head_dim();
    const bool qwen = s.arch == "qwen2" || s.arch == "qwen3";
    const std::string a = s.arch + ".";  // metadata prefix
    w.set_string("general.architecture", s.arch);
    w.set_string("general.name", s.name);
    w.set_u32("general.file_type", s.type == DType::F16 ? 1 : 0);  // llama.cpp: ALL_F32 0, MOSTLY_F16 1
    w.set_u32(a + "context_length", uint32_t(s.n_ctx));
    w.set_u32(a + "embedding_length", uint32_t(s.n_embd));
    w.set_u32(a + "block_count", uint32_t(s.n_layers));
    w.set_u32(a + "feed_forward_length", uint32_t(s.n_ff));
    w.set_u32(a + "attention.head_count", uint32_t(s.n_heads));
    w.set_u32(a + "attention.head_count_kv", uint32_t(s.n_kv_heads));
    if (s.key_length > 0 || s.arch == "qwen3") {
        w.set_u32(a + "attention.key_length", uint32_t(head_dim));
        w.set_u32(a + "attention.value_length", uint32_t(head_dim));
    }
    if (s.arch == "llama") w.set_u32(a + "rope.dimension_count", uint32_t(head_dim));  // as its converter
    w.set_f32(a + "rope.freq_base", rope_base);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", qwen ? 1e-6f : 1e-5f);
    if (s.pooling_type >= 0) w.set_u32(a + "pooling_type", uint32_t(s.pooling_type));
}

// A SentencePiece ("llama") vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then pieces.
void set_random_llama_tokenizer(GgufWriter& w, const RandomLlamaSpec& s) {
    const std::vector<std::string> tokens = random_llama_vocab(s.n_vocab);
    std::vector<float> scores(tokens.size(), 0.0f);
    std::vector<int32_t> types(tokens.size(), kTypeNormal);
    types[0] = kTypeUnknown;
    types[1] = types[2] = kTypeControl;
    for (int64_t id = 3; id < kFirstNormalToken; ++id) types[size_t(id)] = kTypeByte;
    // SentencePiece merges prefer higher scores: earlier (more common) pieces win.
    for (int64_t id = kFirstNormalToken; id < s.n_vocab; ++id)
        scores[size_t(id)] = -float(id - kFirstNormalToken);
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_strings("tokenizer.ggml.tokens", tokens);
    w.set_f32s("tokenizer.ggml.scores", scores);
    w.set_i32s("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
}

// The weights, drawn from `s.seed` in file order: embeddings, each layer's, the output's.
void add_random_llama_weights(GgufWriter& w, const RandomLlamaSpec& s, float rope_base) {
    const int64_t head_dim = s.head_dim(), q_dim = s.n_heads * head_dim, kv_dim = s.n_kv_heads * head_dim;
    NormalSource rng(s.seed);
    const double embd_scale = 1.0 / std::sqrt(double(s.n_embd)), ff_scale = 1.0 / std::sqrt(double(s.n_ff));
    auto matrix = [&](const std::string& name, int64_t ne0, int64_t ne1, double stddev) {
        add_weight(w, name, s.type, {ne0, ne1}, normal_values(rng, ne0 * ne1, 0.0, stddev));
    };
    auto norm = [&](const std::string& name, int64_t n) {
        add_weight(w, name, DType::F32, {n}, normal_values(rng, n, 1.0, 0.05));
    };
    auto bias = [&](const std::string& name, int64_t n) {
        add_weight(w, name, DType::F32, {n}, normal_values(rng, n, 0.0, 0.5));
    };
    // ne in ggml order: ne[0] is the row length, which a matmul sums over (fan_in).
    // token_embd (n_vocab, n_embd)
    matrix("token_embd.weight", s.n_embd, s.n_vocab, s.tied_output ? kTiedEmbeddingNorm * embd_scale : 1.0);
    if (s.rope_freqs) {
        const std::vector<float> factors = llama3_rope_factors(head_dim, rope_base);
        add_weight(w, "rope_freqs.weight", DType::F32, {int64_t(factors.size())}, factors);  // (head_dim / 2)
    }
    for (int64_t layer = 0; layer < s.n_layers; ++layer) {
        const std::string blk = "blk." + std::to_string(layer) + ".";
        norm(blk + "attn_norm.weight", s.n_embd);
        matrix(blk + "attn_q.weight", s.n_embd, q_dim, embd_scale);   // (n_head * head_dim, n_embd)
        matrix(blk + "attn_k.weight", s.n_embd, kv_dim, embd_scale);  // (n_kv * head_dim, n_embd)
        matrix(blk + "attn_v.weight", s.n_embd, kv_dim, embd_scale);  // (n_kv * head_dim, n_embd)
        if (s.arch == "qwen2") {
            bias(blk + "attn_q.bias", q_dim);
            bias(blk + "attn_k.bias", kv_dim);
            bias(blk + "attn_v.bias", kv_dim);
        }
        if (s.arch == "qwen3") {
            norm(blk + "attn_q_norm.weight", head_dim);
            norm(blk + "attn_k_norm.weight", head_dim);
        }
        matrix(blk + "attn_output.weight", q_dim, s.n_embd, 1.0 / std::sqrt(double(q_dim)));  // (n_embd, q)
        norm(blk + "ffn_norm.weight", s.n_embd);
        matrix(blk + "ffn_gate.weight", s.n_embd, s.n_ff, embd_scale);  // (n_ff, n_embd)
        matrix(blk + "ffn_up.weight", s.n_embd, s.n_ff, embd_scale);    // (n_ff, n_embd)
        matrix(blk + "ffn_down.weight", s.n_ff, s.n_embd, ff_scale);    // (n_embd, n_ff)
    }
    if (s.tied_output) {
        const double gain = kOutputGain / kTiedEmbeddingNorm;
        add_weight(w, "output_norm.weight", DType::F32, {s.n_embd}, normal_values(rng, s.n_embd, gain, 0.05 * gain));
    } else {
        norm("output_norm.weight", s.n_embd);
    }
    if (!s.tied_output)
        matrix("output.weight", s.n_embd, s.n_vocab, kOutputGain * embd_scale);  // (n_vocab, n_embd)
}

}  // namespace

void write_random_llama(const RandomLlamaSpec& s, const std::string& path) {
    validate_random_llama(s);
    try {
        check_output_path(path);  // before the weights are drawn: they can take a while
    } catch (const OutputError& e) {
        throw GgufError(e.what());
    }
    const bool qwen = s.arch == "qwen2" || s.arch == "qwen3";
    const float rope_base = s.rope_base > 0 ? s.rope_base : qwen ? 1000000.0f : 10000.0f;
    GgufWriter w;
    set_random_llama_metadata(w, s, rope_base);
    set_random_llama_tokenizer(w, s);
    add_random_llama_weights(w, s, rope_base);
    w.write(path);
}

}  // namespace graphrun::graph
