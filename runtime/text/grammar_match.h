// runtime/text/grammar_match.h — the pushdown matcher over a Grammar (grammar.h), one code point at
// a time, and the UTF-8 decoding that lets it take bytes.
//
// A match in progress is a set of stacks. A stack holds positions in Grammar::syms, bottom first: the
// top is the Chars symbol to match next, each position below it the place to go on from when the
// rule above it ends. An empty stack is a complete match. A Rule symbol is expanded when it reaches
// the top (one stack per alternative); a Rule last in its alternative pushes no return position (a
// tail call), so x* and other right recursion keep the stack flat.
//
// Bounds (GrammarLimits): a stack deeper than max_depth is a path refused (it stops nesting, the
// match stays valid); more than max_stacks stacks, or more than max_expand expansion steps for one
// code point, throw GrammarError (an ambiguity no fair grammar has).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/text/grammar.h"

namespace graphrun {

// A set of stacks in one flat buffer: stack i is data[offsets[i] .. offsets[i + 1]).
class GrammarStacks {
  public:
    size_t size() const { return hashes_.size(); }
    bool empty() const { return hashes_.empty(); }
    std::span<const uint32_t> stack(size_t i) const {
        return {data_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
    }
    void clear() {
        data_.clear();
        offsets_.assign(1, 0);
        hashes_.clear();
    }
    // Adds a copy of `stack` unless an equal one is there already.
    void add(std::span<const uint32_t> stack);
    // Whether some stack is empty: the input so far is a complete match.
    bool can_end() const;

  private:
    std::vector<uint32_t> data_;
    std::vector<uint32_t> offsets_{0};
    std::vector<uint64_t> hashes_;
};

// Reused storage for the matcher's expansions (no allocation per code point once warm).
struct GrammarScratch {
    std::vector<uint32_t> stack;
    size_t work = 0;
    size_t depth = 0;  // expansion calls in progress
};

// The stacks before any input: root's alternatives, expanded.
void grammar_start(const Grammar& g, GrammarStacks& out, GrammarScratch& scratch);

// out = the stacks after code point cp. Returns false (out empty) when cp is refused.
bool grammar_advance(const Grammar& g, const GrammarStacks& in, uint32_t cp, GrammarStacks& out,
                     GrammarScratch& scratch);

// Whether a code point in [lo, hi] could come next (a character whose first bytes are known).
bool grammar_allows_some(const Grammar& g, const GrammarStacks& in, uint32_t lo, uint32_t hi);

// A UTF-8 character split across tokens: the bits so far and how many continuation bytes are due.
struct Utf8Partial {
    uint32_t value = 0;
    uint8_t remaining = 0;  // 0: between characters
    uint8_t length = 0;     // the character's length in bytes
};

// Feeds one byte. Returns 1 with *cp set when a character is complete, 0 when more bytes are due
// (then [lo, hi] of *range are the code points still possible), -1 for a byte that cannot come here
// (a stray continuation byte, an invalid lead byte, an overlong or out-of-range character).
int utf8_feed(Utf8Partial& p, uint8_t byte, uint32_t* cp, CodeRange* range);

// A whole match: the stacks and a partial character. Accepting text (a token's bytes) is all or
// nothing: on refusal the state is unchanged.
class GrammarMatcher {
  public:
    explicit GrammarMatcher(const Grammar& g);
    void reset();
    bool accept(std::string_view bytes);
    bool can_end() const { return partial_.remaining == 0 && stacks_.can_end(); }
    bool dead() const { return stacks_.empty(); }
    const GrammarStacks& stacks() const { return stacks_; }
    const Utf8Partial& partial() const { return partial_; }
    const Grammar& grammar() const { return *g_; }

  private:
    const Grammar* g_;
    GrammarStacks stacks_, next_;
    Utf8Partial partial_;
    GrammarScratch scratch_;
};

// Whether the whole of text matches the grammar from its start rule (tests, validation).
bool grammar_matches(const Grammar& g, std::string_view text);

}  // namespace graphrun
