// runtime/text/grammar.h — GBNF grammars (llama.cpp's format), parsed into a flat table of symbols
// that the pushdown matcher (grammar_match.h) walks one code point at a time.
//
//   root   ::= "{" ws pair ("," ws pair)* "}"     # rules: name ::= alternatives
//   pair   ::= [a-z]+ ws ":" ws ( "true" | "false" )
//   ws     ::= [ \t\n]{0,4}
//
// Alternation |, sequences, grouping ( ), repetition * + ? {m} {m,} {m,n}, literals "..." and
// classes [a-z] [^...] with the escapes \n \r \t \\ \" \' \[ \] \- \xHH \uHHHH \UHHHHHHHH, `.` (any
// code point), comments from # to the end of the line; `root` is the start rule. A rule may go on
// over several lines: it ends where the next `name ::=` begins.
//
// The table: every alternative of every rule is a run of symbols in `syms` closed by an End symbol;
// a Rule symbol refers to another rule, a Chars symbol matches one code point against its ranges.
// Groups and repetitions become rules of their own (named after the rule they appear in:
// `object-2`), always right-recursive (x* is `r ::= x r | ` ), so a match never needs an unbounded
// stack for a repetition. Grammars are checked at parse time: every rule referenced is defined, no
// rule reaches itself before consuming a code point (left recursion, also through rules that can
// match nothing), repetition bounds are m <= n <= GrammarLimits::max_repeat, and the table stays
// under max_symbols. Errors are GrammarError, naming the line, the column and the rule.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace graphrun {

class GrammarError : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};

// Bounds that keep a hostile grammar (or a hostile output under a fair one) from hanging the engine
// or taking its memory. Parse-time bounds throw GrammarError; the matcher's bounds are in
// grammar_match.h.
struct GrammarLimits {
    size_t max_text = size_t(1) << 20;     // bytes of grammar text
    size_t max_symbols = size_t(1) << 20;  // symbols in the table, after repetitions are unrolled
    size_t max_rules = size_t(1) << 16;
    uint32_t max_repeat = 10000;  // the largest m or n of {m,n}
    size_t max_stacks = 4096;     // matcher: alternatives alive at once (an ambiguous grammar)
    size_t max_depth = 512;       // matcher: a stack deeper than this is a path refused (nesting)
    size_t max_expand = size_t(1) << 18;  // matcher: expansion steps for one code point
};

struct GrammarSym {
    enum Kind : uint8_t { End, Rule, Chars };
    Kind kind = End;
    bool negated = false;      // Chars: matches what the ranges do not ([^...], and `.` with none)
    uint32_t rule = 0;         // Rule: the rule referred to
    uint32_t ranges_begin = 0;  // Chars: ranges[ranges_begin .. ranges_begin + ranges_count)
    uint32_t ranges_count = 0;
};

struct CodeRange {
    uint32_t lo, hi;  // inclusive
};

struct Grammar {
    std::vector<GrammarSym> syms;              // every alternative, each closed by an End
    std::vector<CodeRange> ranges;             // the Chars symbols' ranges
    std::vector<std::vector<uint32_t>> alts;   // rule -> the index in syms where each alternative starts
    std::vector<std::string> rule_names;       // rule -> its name (generated ones: "object-2")
    uint32_t root = 0;
    GrammarLimits limits{};

    // Whether Chars symbol s matches code point cp.
    bool matches(const GrammarSym& s, uint32_t cp) const {
        bool in = false;
        for (uint32_t i = 0; i < s.ranges_count && !in; ++i) {
            const CodeRange& r = ranges[s.ranges_begin + i];
            in = cp >= r.lo && cp <= r.hi;
        }
        return in != s.negated;
    }
    // Whether Chars symbol s matches some code point in [lo, hi] (a character still incomplete).
    bool matches_some(const GrammarSym& s, uint32_t lo, uint32_t hi) const;
};

// Parses GBNF text; throws GrammarError "line L, column C (rule 'name'): what is wrong".
Grammar grammar_parse(std::string_view text, const GrammarLimits& limits = {});

// The text of a grammar file, or GrammarError naming the file (missing, unreadable, too large).
std::string grammar_read_file(const std::string& path, size_t max_bytes = size_t(1) << 20);

}  // namespace graphrun
