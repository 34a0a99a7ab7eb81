// engine/embedding.cpp — see embedding.h.
#include "engine/embedding.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/checked_math.h"

namespace graphrun::graph {

const char* pooling_name(Pooling pooling) {
    switch (pooling) {
        case Pooling::Mean:
            return "mean";
        case Pooling::First:
            return "cls";
        case Pooling::Last:
            return "last";
    }
    return "?";
}

Pooling pooling_of(const Model& model) {
    const std::string arch = model.file().find_string("general.architecture").value_or("");
    const std::string key = arch + ".pooling_type";
    const std::optional<int64_t> type = model.file().find_int(key);
    if (!type || *type == 1) return Pooling::Mean;
    if (*type == 2) return Pooling::First;
    if (*type == 3) return Pooling::Last;
    throw std::invalid_argument(key + " is " + std::to_string(*type) +
                                ": graphrun pools embeddings by mean (1), cls (2) or last (3)");
}

EmbeddingPool::EmbeddingPool(int64_t n_embd, Pooling pooling)
    : pooling_(pooling), sum_(size_t(n_embd), 0.0) {}

void EmbeddingPool::add(std::span<const float> row) {
    if (row.size() != sum_.size())
        throw std::invalid_argument("[embedding] a row of " + std::to_string(row.size()) +
                                    " floats, expected " + std::to_string(sum_.size()));
    ++n_rows_;
    if (pooling_ == Pooling::Mean)
        for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += row[i];
    else if (pooling_ == Pooling::Last || n_rows_ == 1)
        std::copy(row.begin(), row.end(), sum_.begin());
}

std::vector<float> EmbeddingPool::result() const {
    if (n_rows_ == 0) throw std::invalid_argument("[embedding] no rows to pool");
    std::vector<double> v = sum_;
    if (pooling_ == Pooling::Mean)
        for (double& x : v) x /= double(n_rows_);
    double norm = 0;
    for (const double x : v) norm += x * x;
    norm = std::sqrt(norm);
    std::vector<float> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = float(norm > 0 ? v[i] / norm : 0.0);
    return out;
}

std::vector<float> pool_embedding(std::span<const float> rows, int64_t n_embd, Pooling pooling) {
    EmbeddingPool pool(n_embd, pooling);
    const size_t w = size_t(n_embd);
    for (size_t r = 0; r + w <= rows.size(); r += w) pool.add(rows.subspan(r, w));
    return pool.result();
}

int64_t embedding_width(const Model& model) {
    if (model.graph().embedding_output < 0) return 0;
    const Plan one = make_plan(model.graph(), {.n_tokens = 1, .n_outputs = 1, .embedding = true});
    return one.tensors[size_t(one.embedding_tensor)].desc.shape[1];
}

namespace {

// A KV pool of one full context (as Engine sizes n_ctx) and a block more for each further sequence.
EngineOptions embedder_engine(const Model& model, const EmbedderOptions& o) {
    if (model.graph().embedding_output < 0)
        throw std::invalid_argument(
            model.graph().source +
            ": the graph declares no embedding output (\"outputs\": {\"logits\": ..., "
            "\"embedding\": ...}, docs/graph-format.md)");
    if (o.n_seq < 1) throw std::invalid_argument("n_seq " + std::to_string(o.n_seq) + " is below 1");
    const int64_t trained = model.context_length() > 0 ? model.context_length() : 2048;
    const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(trained, 2048);
    return {.n_ctx = n_ctx,
            .n_seq = o.n_seq,
            .kv_blocks = ceil_div(n_ctx, kKvBlockSize) + o.n_seq - 1,
            .n_threads = o.n_threads,
            .prefix_cache = false};
}

}  // namespace

Embedder::Embedder(std::shared_ptr<const Model> model, EmbedderOptions options)
    : engine_(model, embedder_engine(*model, options)),
      pooling_(options.pooling ? *options.pooling : pooling_of(*model)),
      n_seq_(options.n_seq) {}

void Embedder::check(std::span<const std::vector<int32_t>> texts) const {
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::string text = "text " + std::to_string(i);
        if (texts[i].empty()) throw std::invalid_argument(text + " has no tokens to embed");
        if (int64_t(texts[i].size()) > n_ctx())
            throw std::invalid_argument(text + " has " + std::to_string(texts[i].size()) +
                                        " tokens, more than the context of " + std::to_string(n_ctx()));
        for (size_t j = 0; j < texts[i].size(); ++j)
            if (texts[i][j] < 0 || texts[i][j] >= n_vocab())
                throw std::invalid_argument(text + ": token " + std::to_string(j) + " is " +
                                            std::to_string(texts[i][j]) + ", outside the vocabulary of " +
                                            std::to_string(n_vocab()));
    }
}

std::vector<float> Embedder::embed(std::span<const int32_t> tokens) {
    const std::vector<int32_t> text(tokens.begin(), tokens.end());
    return std::move(embed_all(std::span(&text, 1)).front());
}

std::vector<std::vector<float>> Embedder::embed_all(std::span<const std::vector<int32_t>> texts) {
    check(texts);
    std::lock_guard lock(mutex_);
    const size_t w = size_t(n_embd()), max_batch = size_t(engine_.max_batch());
    std::vector<std::vector<float>> out;
    out.reserve(texts.size());
    // Groups of consecutive texts (n_seq at most, their blocks within the pool; a text alone always
    // fits), their tokens text after text in passes of max_batch: each sequence's tokens stay in
    // order, which is all a pass asks.
    const int64_t pool_blocks = engine_.pool().n_blocks();
    for (size_t first = 0, n = 0; first < texts.size(); first += n) {
        int64_t blocks = 0;
        for (n = 0; first + n < texts.size() && int64_t(n) < n_seq_; ++n) {
            const int64_t b = ceil_div(int64_t(texts[first + n].size()), kKvBlockSize);
            if (n > 0 && blocks + b > pool_blocks) break;
            blocks += b;
        }
        std::vector<EmbeddingPool> pools(n, EmbeddingPool(n_embd(), pooling_));
        std::vector<SeqId> seqs;
        std::vector<size_t> owner;  // the text of each token of batch_
        auto run = [&] {
            const std::span<const float> rows = engine_.embed(batch_);
            for (size_t r = 0; r < batch_.size(); ++r) pools[owner[r]].add(rows.subspan(r * w, w));
            batch_.clear();
            owner.clear();
        };
        try {
            for (size_t i = 0; i < n; ++i) seqs.push_back(engine_.add_sequence());
            batch_.clear();
            for (size_t i = 0; i < n; ++i)
                for (const int32_t token : texts[first + i]) {
                    batch_.push_back({seqs[i], token, true});
                    owner.push_back(i);
                    if (batch_.size() == max_batch) run();
                }
            if (!batch_.empty()) run();
        } catch (...) {
            for (const SeqId seq : seqs) engine_.remove_sequence(seq);
            throw;
        }
        for (const SeqId seq : seqs) engine_.remove_sequence(seq);
        for (const EmbeddingPool& pool : pools) out.push_back(pool.result());
    }
    return out;
}

}  // namespace graphrun::graph
