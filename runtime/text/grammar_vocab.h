// runtime/text/grammar_vocab.h — which tokens keep an output inside a grammar: the vocabulary's bytes
// in a trie, walked with the matcher (grammar_match.h) so a prefix shared by many tokens is matched
// once, and a branch the grammar refuses is cut with every token under it.
//
//   trie of token bytes          under a matcher expecting [0-9] then ","
//   root ─"1"─ n1 (tok "1")       "1" ok -> "1," ok, "12" ok ...; "a" refused: the whole "a..." branch
//        └"a"─ ...                is skipped without a look at its tokens
//
// A token whose bytes end inside a UTF-8 character (byte-fallback tokens, BPE pieces of a character)
// is allowed when some character starting with those bytes could come next; the matcher keeps the
// partial character until the next token completes it. End-of-generation tokens are allowed only
// when the grammar can end there; tokens with no bytes (control, unknown) never are.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/grammar_match.h"

namespace graphrun {

class Tokenizer;

// Reused buffers of one mask computation: one stack set per character matched along a trie path.
struct GrammarMaskScratch {
    std::vector<GrammarStacks> levels;
    GrammarScratch scratch;
};

class GrammarVocab {
  public:
    // bytes[id]: what token id writes ("" for tokens a grammar never allows); end_tokens: the
    // end-of-generation ids. Tokens longer than kMaxTokenBytes are never allowed.
    GrammarVocab(const std::vector<std::string>& bytes, std::vector<int32_t> end_tokens);
    // Pieces as Tokenizer::token_to_piece gives them; control and unknown tokens have no bytes.
    static std::shared_ptr<const GrammarVocab> from_tokenizer(const Tokenizer& tokenizer);

    static constexpr size_t kMaxTokenBytes = 1024;

    int32_t n_vocab() const { return int32_t(bytes_.size()); }
    std::string_view bytes(int32_t id) const { return bytes_[size_t(id)]; }
    bool is_end(int32_t id) const;
    std::span<const int32_t> end_tokens() const { return end_tokens_; }
    size_t trie_nodes() const { return nodes_.size(); }

    // allowed (n_vocab): 1 for each token the matcher accepts now, 0 for the others.
    void mask(const GrammarMatcher& m, std::vector<uint8_t>& allowed, GrammarMaskScratch& scratch) const;
    // Whether the matcher accepts token id now (end tokens: whether it can end).
    bool allows(const GrammarMatcher& m, int32_t id) const;

  private:
    struct Node {
        uint32_t edges_begin = 0, edges_count = 0;    // children, ascending byte
        uint32_t tokens_begin = 0, tokens_count = 0;  // tokens whose bytes end here
    };
    struct Edge {
        uint8_t byte;
        uint32_t node;
    };
    uint32_t build(std::span<const int32_t> ids, size_t depth);
    void walk(uint32_t node, const GrammarStacks& st, Utf8Partial partial, size_t level, const Grammar& g,
              std::vector<uint8_t>& allowed, GrammarMaskScratch& s) const;

    std::vector<std::string> bytes_;
    std::vector<int32_t> end_tokens_;  // ascending
    std::vector<Node> nodes_;          // nodes_[0] is the root
    std::vector<Edge> edges_;
    std::vector<int32_t> node_tokens_;
    size_t max_len_ = 0;
};

// What a sampler needs to constrain a sequence: the grammar and the vocabulary, both shared
// read-only by every sequence that uses them (each sequence keeps its own GrammarMatcher).
struct GrammarConstraint {
    std::shared_ptr<const Grammar> grammar;
    std::shared_ptr<const GrammarVocab> vocab;
};

}  // namespace graphrun
