// runtime/text/grammar_match.cpp — the stack-set matcher of grammar_match.h.
#include "runtime/text/grammar_match.h"

#include <algorithm>
#include <cstring>

namespace graphrun {

namespace {

uint64_t hash_stack(std::span<const uint32_t> s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const uint32_t v : s) h = (h ^ v) * 0x100000001b3ull;
    return h ^ s.size();
}

// Brings st's top to a Chars symbol (or empties it), adding every stack that gives to out.
// st is restored before returning.
void expand(const Grammar& g, std::vector<uint32_t>& st, GrammarStacks& out, GrammarScratch& scratch) {
    if (++scratch.work > g.limits.max_expand)
        throw GrammarError("[grammar] more than " + std::to_string(g.limits.max_expand) +
                           " expansion steps for one character (the grammar is too ambiguous)");
    if (st.size() > g.limits.max_depth) return;  // nesting past the bound: this path is refused
    // Rules that call rules in tail position nest this call without growing st.
    struct Depth {
        size_t& d;
        explicit Depth(size_t& depth) : d(++depth) {}
        ~Depth() { --d; }
    } depth(scratch.depth);
    if (scratch.depth > 4 * g.limits.max_depth)
        throw GrammarError("[grammar] rules nest more than " + std::to_string(4 * g.limits.max_depth) +
                           " deep before matching a character");
    if (st.empty()) {
        out.add(st);
        return;
    }
    const uint32_t pos = st.back();
    const GrammarSym& s = g.syms[pos];
    if (s.kind == GrammarSym::Chars) {
        if (out.size() >= g.limits.max_stacks)
            throw GrammarError("[grammar] more than " + std::to_string(g.limits.max_stacks) +
                               " alternatives alive at once (the grammar is too ambiguous)");
        out.add(st);
        return;
    }
    st.pop_back();
    if (s.kind == GrammarSym::End) {
        expand(g, st, out, scratch);
    } else {
        const bool returns = g.syms[pos + 1].kind != GrammarSym::End;  // else a tail call
        if (returns) st.push_back(pos + 1);
        for (const uint32_t alt : g.alts[s.rule]) {
            st.push_back(alt);
            expand(g, st, out, scratch);
            st.pop_back();
        }
        if (returns) st.pop_back();
    }
    st.push_back(pos);
}

}  // namespace

void GrammarStacks::add(std::span<const uint32_t> stack) {
    const uint64_t h = hash_stack(stack);
    for (size_t i = 0; i < hashes_.size(); ++i) {
        if (hashes_[i] != h) continue;
        const auto other = this->stack(i);
        if (other.size() == stack.size() && std::equal(other.begin(), other.end(), stack.begin())) return;
    }
    data_.insert(data_.end(), stack.begin(), stack.end());
    offsets_.push_back(uint32_t(data_.size()));
    hashes_.push_back(h);
}

bool GrammarStacks::can_end() const {
    for (size_t i = 0; i < size(); ++i)
        if (offsets_[i] == offsets_[i + 1]) return true;
    return false;
}

void grammar_start(const Grammar& g, GrammarStacks& out, GrammarScratch& scratch) {
    out.clear();
    scratch.work = 0;
    for (const uint32_t alt : g.alts[g.root]) {
        scratch.stack.assign(1, alt);
        expand(g, scratch.stack, out, scratch);
    }
}

bool grammar_advance(const Grammar& g, const GrammarStacks& in, uint32_t cp, GrammarStacks& out,
                     GrammarScratch& scratch) {
    out.clear();
    scratch.work = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        const auto st = in.stack(i);
        if (st.empty() || !g.matches(g.syms[st.back()], cp)) continue;
        scratch.stack.assign(st.begin(), st.end());
        ++scratch.stack.back();  // past the symbol matched; an End there pops in expand
        expand(g, scratch.stack, out, scratch);
    }
    return !out.empty();
}

bool grammar_allows_some(const Grammar& g, const GrammarStacks& in, uint32_t lo, uint32_t hi) {
    for (size_t i = 0; i < in.size(); ++i) {
        const auto st = in.stack(i);
        if (!st.empty() && g.matches_some(g.syms[st.back()], lo, hi)) return true;
    }
    return false;
}

int utf8_feed(Utf8Partial& p, uint8_t byte, uint32_t* cp, CodeRange* range) {
    if (p.remaining == 0) {
        if (byte < 0x80) {
            *cp = byte;
            return 1;
        }
        if (byte >= 0xC2 && byte <= 0xDF) p = {uint32_t(byte & 0x1F), 1, 2};
        else if (byte >= 0xE0 && byte <= 0xEF) p = {uint32_t(byte & 0x0F), 2, 3};
        else if (byte >= 0xF0 && byte <= 0xF4) p = {uint32_t(byte & 0x07), 3, 4};
        else return -1;
    } else {
        if ((byte & 0xC0) != 0x80) return -1;
        p.value = (p.value << 6) | (byte & 0x3F);
        --p.remaining;
    }
    const uint32_t min = p.length == 2 ? 0x80 : p.length == 3 ? 0x800 : 0x10000;
    const unsigned shift = 6u * p.remaining;
    uint32_t lo = std::max(p.value << shift, min);
    const uint32_t hi = std::min((p.value << shift) | ((1u << shift) - 1), 0x10FFFFu);
    if (p.remaining == 0) {
        const uint32_t v = p.value;
        p = {};
        if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return -1;
        *cp = v;
        return 1;
    }
    if (lo > hi) return -1;
    if (lo >= 0xD800 && hi <= 0xDFFF) return -1;
    range->lo = lo;
    range->hi = hi;
    return 0;
}

GrammarMatcher::GrammarMatcher(const Grammar& g) : g_(&g) { reset(); }

void GrammarMatcher::reset() {
    partial_ = {};
    grammar_start(*g_, stacks_, scratch_);
}

bool GrammarMatcher::accept(std::string_view bytes) {
    GrammarStacks cur = stacks_;
    Utf8Partial partial = partial_;
    for (const char c : bytes) {
        uint32_t cp = 0;
        CodeRange range{};
        const int r = utf8_feed(partial, static_cast<uint8_t>(c), &cp, &range);
        if (r < 0) return false;
        if (r == 0) {
            if (!grammar_allows_some(*g_, cur, range.lo, range.hi)) return false;
            continue;
        }
        if (!grammar_advance(*g_, cur, cp, next_, scratch_)) return false;
        std::swap(cur, next_);
    }
    stacks_ = std::move(cur);
    partial_ = partial;
    return true;
}

bool grammar_matches(const Grammar& g, std::string_view text) {
    GrammarMatcher m(g);
    return m.accept(text) && m.can_end();
}

}  // namespace graphrun
