// tests/common/quantize_test_util.h — temporary model files and greedy/teacher-forced runs for the
// quantize tests.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/session.h"
#include "runtime/gguf.h"
#include "tests/common/test_models.h"

namespace graphrun::testing {

// A path in test_temp_dir(), unique to this test process; the file is removed when this goes away.
struct TempFile {
    explicit TempFile(const std::string& name)
        : path((test_temp_dir() / (name + ".gguf")).string()) {
        std::filesystem::remove(path);
    }
    ~TempFile() { std::filesystem::remove(path); }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    std::string path;
};

inline int32_t argmax(std::span<const float> row) {
    return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
}

// Greedy decoding of n tokens after `prompt`; logit_rows (if given) gets the row each token was
// picked from.
inline std::vector<int32_t> greedy_ids(const std::string& model_path, const std::vector<int32_t>& prompt,
                                       int n, std::vector<std::vector<float>>* logit_rows = nullptr) {
    graph::Session session(graph::Model::load(model_path), {.n_ctx = int64_t(prompt.size()) + n});
    std::span<const float> logits = session.eval(prompt);
    std::span<const float> row = logits.subspan(logits.size() - size_t(session.n_vocab()));
    std::vector<int32_t> ids;
    for (int k = 0; k < n; ++k) {
        if (logit_rows) logit_rows->emplace_back(row.begin(), row.end());
        ids.push_back(argmax(row));
        if (k + 1 < n) row = session.eval(std::span<const int32_t>(&ids.back(), 1));
    }
    return ids;
}

// The logits (tokens.size(), n_vocab) of one batch: position t predicts token t + 1.
inline std::vector<float> batch_logits(const std::string& model_path, const std::vector<int32_t>& tokens,
                                       int64_t* n_vocab = nullptr) {
    graph::Session session(graph::Model::load(model_path), {.n_ctx = int64_t(tokens.size())});
    std::span<const float> logits = session.eval(tokens);
    if (n_vocab) *n_vocab = session.n_vocab();
    return {logits.begin(), logits.end()};
}

// Two metadata values are equal in type and content (arrays element by element).
inline bool same_value(const GgufValue& a, const GgufValue& b) {
    if (a.type != b.type) return false;
    switch (a.type) {
        case GgufType::STRING:
            return a.s == b.s;
        case GgufType::F32:
        case GgufType::F64:
            return a.f == b.f;
        case GgufType::ARRAY:
            if (a.elem_type != b.elem_type || a.array.size() != b.array.size()) return false;
            for (size_t k = 0; k < a.array.size(); ++k)
                if (!same_value(a.array[k], b.array[k])) return false;
            return true;
        default:
            return a.i == b.i && a.u == b.u;
    }
}

inline std::map<std::string, const GgufValue*> metadata_map(const GgufFile& f) {
    std::map<std::string, const GgufValue*> m;
    for (const auto& [key, value] : f.metadata()) m[key] = &value;
    return m;
}

}  // namespace graphrun::testing
