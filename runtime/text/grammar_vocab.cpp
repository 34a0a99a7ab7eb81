// runtime/text/grammar_vocab.cpp — the token trie and the mask walk of grammar_vocab.h.
#include "runtime/text/grammar_vocab.h"

#include <algorithm>
#include <numeric>

#include "runtime/text/tokenizer.h"

namespace graphrun {

GrammarVocab::GrammarVocab(const std::vector<std::string>& bytes, std::vector<int32_t> end_tokens)
    : bytes_(bytes), end_tokens_(std::move(end_tokens)) {
    std::sort(end_tokens_.begin(), end_tokens_.end());
    std::vector<int32_t> ids;
    for (size_t i = 0; i < bytes_.size(); ++i)
        if (!bytes_[i].empty() && bytes_[i].size() <= kMaxTokenBytes && !is_end(int32_t(i))) ids.push_back(int32_t(i));
    std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
        return bytes_[size_t(a)] != bytes_[size_t(b)] ? bytes_[size_t(a)] < bytes_[size_t(b)] : a < b;
    });
    for (const int32_t id : ids) max_len_ = std::max(max_len_, bytes_[size_t(id)].size());
    nodes_.reserve(ids.size() * 2 + 1);
    build(ids, 0);
}

bool GrammarVocab::is_end(int32_t id) const { return std::binary_search(end_tokens_.begin(), end_tokens_.end(), id); }

// ids: sorted by bytes, all sharing their first `depth` bytes. Tokens exactly `depth` long sort first.
uint32_t GrammarVocab::build(std::span<const int32_t> ids, size_t depth) {
    const uint32_t self = uint32_t(nodes_.size());
    nodes_.emplace_back();
    size_t i = 0;
    nodes_[self].tokens_begin = uint32_t(node_tokens_.size());
    while (i < ids.size() && bytes_[size_t(ids[i])].size() == depth) node_tokens_.push_back(ids[i++]);
    nodes_[self].tokens_count = uint32_t(node_tokens_.size()) - nodes_[self].tokens_begin;
    // Group the rest by the byte at `depth`: one child each, their edges contiguous.
    std::vector<std::pair<size_t, size_t>> groups;
    while (i < ids.size()) {
        const char b = bytes_[size_t(ids[i])][depth];
        size_t j = i;
        while (j < ids.size() && bytes_[size_t(ids[j])][depth] == b) ++j;
        groups.emplace_back(i, j);
        i = j;
    }
    const uint32_t edges_begin = uint32_t(edges_.size());
    nodes_[self].edges_begin = edges_begin;
    nodes_[self].edges_count = uint32_t(groups.size());
    edges_.resize(edges_.size() + groups.size());
    for (size_t k = 0; k < groups.size(); ++k) {
        const auto [a, b] = groups[k];
        const auto byte = static_cast<uint8_t>(bytes_[size_t(ids[a])][depth]);
        const uint32_t child = build(ids.subspan(a, b - a), depth + 1);
        edges_[edges_begin + k] = Edge{byte, child};
    }
    return self;
}

std::shared_ptr<const GrammarVocab> GrammarVocab::from_tokenizer(const Tokenizer& tokenizer) {
    std::vector<std::string> bytes(size_t(tokenizer.n_vocab()));
    for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
        if (!tokenizer.is_control(id)) bytes[size_t(id)] = tokenizer.token_to_piece(id, false);
    const auto eog = tokenizer.end_of_generation();
    return std::make_shared<const GrammarVocab>(bytes, std::vector<int32_t>(eog.begin(), eog.end()));
}

void GrammarVocab::walk(uint32_t node, const GrammarStacks& st, Utf8Partial partial, size_t level,
                        const Grammar& g, std::vector<uint8_t>& allowed, GrammarMaskScratch& s) const {
    const Node& n = nodes_[node];
    for (uint32_t t = 0; t < n.tokens_count; ++t) allowed[size_t(node_tokens_[n.tokens_begin + t])] = 1;
    for (uint32_t e = 0; e < n.edges_count; ++e) {
        const Edge& edge = edges_[n.edges_begin + e];
        Utf8Partial p = partial;
        uint32_t cp = 0;
        CodeRange range{};
        const int r = utf8_feed(p, edge.byte, &cp, &range);
        if (r < 0) continue;
        if (r == 0) {
            if (grammar_allows_some(g, st, range.lo, range.hi)) walk(edge.node, st, p, level, g, allowed, s);
            continue;
        }
        GrammarStacks& next = s.levels[level + 1];
        if (grammar_advance(g, st, cp, next, s.scratch)) walk(edge.node, next, p, level + 1, g, allowed, s);
    }
}

void GrammarVocab::mask(const GrammarMatcher& m, std::vector<uint8_t>& allowed, GrammarMaskScratch& scratch) const {
    allowed.assign(bytes_.size(), 0);
    if (m.dead()) return;
    // One stack set per character matched along a path: at most one per byte of the longest token.
    if (scratch.levels.size() < max_len_ + 2) scratch.levels.resize(max_len_ + 2);
    walk(0, m.stacks(), m.partial(), 0, m.grammar(), allowed, scratch);
    if (m.can_end())
        for (const int32_t id : end_tokens_)
            if (size_t(id) < allowed.size()) allowed[size_t(id)] = 1;
}

bool GrammarVocab::allows(const GrammarMatcher& m, int32_t id) const {
    if (id < 0 || size_t(id) >= bytes_.size()) return false;
    if (is_end(id)) return m.can_end();
    const std::string& b = bytes_[size_t(id)];
    if (b.empty() || b.size() > kMaxTokenBytes) return false;
    GrammarMatcher trial = m;
    return trial.accept(b);
}

}  // namespace graphrun
