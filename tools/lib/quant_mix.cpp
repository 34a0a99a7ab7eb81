// tools/lib/quant_mix.cpp — llama-quantize's per-tensor type choice (see quant_mix.h for the rules).
#include "tools/lib/quant_mix.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <stdexcept>

#include "ops/quant/traits.h"

namespace graphrun::graph {

namespace {

// llama.cpp's llama_ftype values (llama.h).
constexpr QuantMix kMixes[] = {
    {"q8_0", 7, DType::Q8_0},    {"q4_0", 2, DType::Q4_0},      {"q4_1", 3, DType::Q4_1},
    {"q5_0", 8, DType::Q5_0},    {"q5_1", 9, DType::Q5_1},      {"q4_k_s", 14, DType::Q4_K},
    {"q4_k_m", 15, DType::Q4_K}, {"q5_k_s", 16, DType::Q5_K},   {"q5_k_m", 17, DType::Q5_K},
    {"q6_k", 18, DType::Q6_K},   {"iq4_xs", 30, DType::IQ4_XS},
};

enum class Category { Output, TokenEmbd, AttnV, AttnK, AttnQ, AttnOutput, FfnUp, FfnGate, FfnDown, Other };

bool contains(const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
}
bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// llama.cpp's tensor categories, tested in its order (attn_qkv and attn_kv_b count as attn_v).
Category category_of(const std::string& name) {
    if (name == "output.weight") return Category::Output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
    if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") ||
        contains(name, "attn_v.weight"))
        return Category::AttnV;
    if (contains(name, "attn_k.weight")) return Category::AttnK;
    if (contains(name, "attn_q.weight")) return Category::AttnQ;
    if (contains(name, "attn_output.weight")) return Category::AttnOutput;
    if (contains(name, "ffn_up")) return Category::FfnUp;
    if (contains(name, "ffn_gate")) return Category::FfnGate;
    if (contains(name, "ffn_down")) return Category::FfnDown;
    return Category::Other;
}

// Weight matrices only, as llama-quantize decides (the rules that can apply to the models graphrun
// reads; the long list of other architectures' small tensors is theirs).
bool is_quantizable(const GgufTensor& t) {
    if (t.ne.size() < 2 || !ends_with(t.name, "weight")) return false;
    if (contains(t.name, "_norm.weight") || contains(t.name, "ffn_gate_inp.weight")) return false;
    return t.name != "position_embd.weight" && t.name != "token_types.weight";
}

int layer_of(const std::string& name) {
    int layer = -1;
    std::sscanf(name.c_str(), "blk.%d.", &layer);
    return layer;
}

// More bits for the first and last eighth of the layers and every third one between.
bool use_more_bits(int64_t i, int64_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

int64_t index_in(const std::vector<std::string>& order, const std::string& name) {
    return std::find(order.begin(), order.end(), name) - order.begin();
}

}  // namespace

std::span<const QuantMix> quant_mixes() {
    return kMixes;
}

const QuantMix* find_quant_mix(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (lower == "q4_k") lower = "q4_k_m";
    if (lower == "q5_k") lower = "q5_k_m";
    for (const QuantMix& m : kMixes)
        if (lower == m.name) return &m;
    return nullptr;
}

std::string quant_mix_names() {
    std::string s;
    for (const QuantMix& m : kMixes) s += (s.empty() ? "" : ", ") + std::string(m.name);
    return s;
}

TensorTypeChooser::TensorTypeChooser(const GgufFile& file, const QuantMix& mix, QuantMixOptions options)
    : mix_(mix), options_(options) {
    arch_ = file.find_string("general.architecture").value_or("");
    if (file.find_int(arch_ + ".expert_count").value_or(0) > 1)
        throw std::invalid_argument(
            "quantize: " + file.path() +
            " is a mixture-of-experts model; graphrun quantize chooses types for dense "
            "models only (use llama-quantize)");
    n_head_ = file.find_int(arch_ + ".attention.head_count").value_or(0);
    n_head_kv_ = file.find_int(arch_ + ".attention.head_count_kv").value_or(n_head_);
    int64_t max_layer = -1;
    std::vector<std::string> names;
    for (const GgufTensor& t : file.tensors()) {
        names.push_back(t.name);
        max_layer = std::max<int64_t>(max_layer, layer_of(t.name));
        if (t.name == "output.weight") tied_embeddings_ = false;
    }
    n_layer_ = file.find_int(arch_ + ".block_count").value_or(max_layer + 1);
    // llama.cpp visits tensors ordered by layer, then name, and counts attn_v and ffn_down as it goes.
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        const int la = layer_of(a), lb = layer_of(b);
        return la != lb ? la < lb : a < b;
    });
    for (const std::string& name : names) {
        const GgufTensor* t = file.find_tensor(name);
        if (!is_quantizable(*t)) continue;
        if (category_of(t->name) == Category::AttnV) attn_v_order_.push_back(t->name);
        if (category_of(t->name) == Category::FfnDown) ffn_down_order_.push_back(t->name);
    }
}

TensorChoice TensorTypeChooser::choose(const GgufTensor& t) const {
    if (!is_quantizable(t)) return {false, t.type, "", false};
    const Category cat = category_of(t.name);
    if (options_.token_embedding_type && cat == Category::TokenEmbd)
        return {true, *options_.token_embedding_type, "--token-embedding-type", false};
    if (options_.output_tensor_type && cat == Category::Output)
        return {true, *options_.output_tensor_type, "--output-tensor-type", false};
    return choose_matrix(t);
}

namespace {

// c takes `type` for `why`, unless it has that type already (the first reason stands).
void set_type(TensorChoice& c, DType type, std::string why) {
    if (type == c.type) return;
    c.type = type;
    c.why = std::move(why);
}

// Rows that are not whole blocks of c's type take the type's short-row fallback, as llama-quantize does.
TensorChoice fit_rows(const GgufTensor& t, TensorChoice c) {
    const int64_t nx = t.ne[0];
    const int64_t block = dtype_traits(c.type).block_size;
    if (nx % block == 0) return c;
    const std::string rows = "rows of " + std::to_string(nx) + " elements are not a multiple of the " +
                             dtype_name(c.type) + " block size " + std::to_string(block);
    // llama.cpp has no fallback for the 32-blocks and refuses the model; graphrun keeps it.
    const ops::QuantTraits* traits = ops::quant_traits(c.type);
    DType fallback = traits ? traits->short_row_fallback : c.type;
    if (fallback == c.type) return {true, t.type, rows, true};
    if (nx % dtype_traits(fallback).block_size != 0) fallback = DType::F16;
    c.type = fallback;
    c.why = rows + ": " + dtype_name(fallback) + " instead";
    return c;
}

}  // namespace

TensorChoice TensorTypeChooser::choose_matrix(const GgufTensor& t) const {
    TensorChoice c{true, mix_.base, "", false};
    if (!options_.pure) {
        const Category cat = category_of(t.name);
        if (cat == Category::Output || (tied_embeddings_ && cat == Category::TokenEmbd))
            choose_output(t, c);
        else if (cat == Category::AttnV)
            choose_attn_v(t, c);
        else if (cat == Category::FfnDown)
            choose_ffn_down(t, c);
    }
    return fit_rows(t, c);
}

void TensorTypeChooser::choose_output(const GgufTensor& t, TensorChoice& c) const {
    const std::string what =
        category_of(t.name) == Category::Output ? "output.weight" : "tied token embeddings";
    if (options_.output_tensor_type)
        set_type(c, *options_.output_tensor_type, "--output-tensor-type");
    else if (arch_ == "falcon" || t.ne[0] % dtype_traits(c.type).block_size != 0)
        set_type(c, DType::Q8_0, what + " with rows not whole blocks of " + dtype_name(mix_.base) + ": q8_0");
    else if (c.type != DType::Q8_0)
        set_type(c, DType::Q6_K, what + ": q6_k in every mix");
}

void TensorTypeChooser::choose_attn_v(const GgufTensor& t, TensorChoice& c) const {
    const std::string m = mix_.name;
    const int64_t i = index_in(attn_v_order_, t.name), n = int64_t(attn_v_order_.size());
    const std::string at = " (attn_v " + std::to_string(i) + " of " + std::to_string(n) + ")";
    if (m == "iq4_xs" && n_head_kv_ > 0 && n_head_ / n_head_kv_ >= 4)
        set_type(c, DType::Q5_K, "attn_v with 4+ query heads per KV head");
    else if ((m == "q4_k_m" || m == "q5_k_m") && use_more_bits(i, n))
        set_type(c, DType::Q6_K, "more bits in the first and last layers and every third" + at);
    else if (m == "q4_k_s" && i < 4)
        set_type(c, DType::Q5_K, "attn_v of the first 4 layers" + at);
    // Llama-2-70B: 8 query heads share each attn_v, so it is 8x smaller; llama.cpp gives it Q5_K.
    if (arch_ == "llama" && n_layer_ == 80 && n_head_ != n_head_kv_ &&
        (c.type == DType::Q3_K || c.type == DType::Q4_K))
        set_type(c, DType::Q5_K, "attn_v of an 80-layer GQA model (Llama-2-70B)");
}

void TensorTypeChooser::choose_ffn_down(const GgufTensor& t, TensorChoice& c) const {
    const std::string m = mix_.name;
    const bool falcon = arch_ == "falcon";
    const int64_t i = index_in(ffn_down_order_, t.name), n = n_layer_;
    const std::string at = " (ffn_down " + std::to_string(i) + " of " + std::to_string(n) + " layers)";
    if (m == "q4_k_m") {
        if (falcon)
            set_type(c,
                     i < n / 16            ? DType::Q6_K
                     : use_more_bits(i, n) ? DType::Q5_K
                                           : DType::Q4_K,
                     "falcon ffn_down" + at);
        else if (use_more_bits(i, n))
            set_type(c, DType::Q6_K, "more bits in the first and last layers and every third" + at);
    } else if (i < n / 8 && m == "iq4_xs") {
        set_type(c, DType::Q5_K, "ffn_down of the first eighth of the layers" + at);
    } else if (m == "q5_k_m" && use_more_bits(i, n)) {
        set_type(c, DType::Q6_K, "more bits in the first and last layers and every third" + at);
    } else if (m == "q4_k_s" && !falcon && i < n / 8) {
        set_type(c, DType::Q5_K, "ffn_down of the first eighth of the layers" + at);
    }
}

}  // namespace graphrun::graph
