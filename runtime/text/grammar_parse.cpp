// runtime/text/grammar_parse.cpp — GBNF text -> Grammar (grammar.h): a recursive-descent parser that
// builds each rule's alternatives, unrolls repetitions into right-recursive rules, then checks that
// every rule is defined, none is left-recursive, and flattens the rules into the symbol table.
#include "runtime/text/grammar.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace graphrun {

bool Grammar::matches_some(const GrammarSym& s, uint32_t lo, uint32_t hi) const {
    // Some cp in [lo, hi] is inside a range (plain) or outside all of them (negated).
    if (!s.negated) {
        for (uint32_t i = 0; i < s.ranges_count; ++i) {
            const CodeRange& r = ranges[s.ranges_begin + i];
            if (r.lo <= hi && r.hi >= lo) return true;
        }
        return false;
    }
    // Negated: false only when the ranges cover all of [lo, hi]; walk lo upwards through them.
    uint32_t next = lo;
    bool moved = true;
    while (moved) {
        moved = false;
        for (uint32_t i = 0; i < s.ranges_count; ++i) {
            const CodeRange& r = ranges[s.ranges_begin + i];
            if (r.lo <= next && r.hi >= next) {
                if (r.hi >= hi) return false;
                next = r.hi + 1;
                moved = true;
            }
        }
    }
    return true;
}

namespace {

using Seq = std::vector<GrammarSym>;
using Alts = std::vector<Seq>;

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
  public:
    Parser(std::string_view src, const GrammarLimits& limits) : src_(src), limits_(limits) {}

    Grammar run() {
        if (src_.size() > limits_.max_text)
            throw GrammarError("[grammar] the text has " + std::to_string(src_.size()) + " bytes, more than the " +
                               std::to_string(limits_.max_text) + " allowed");
        skip_space();
        while (pos_ < src_.size()) {
            const size_t at = pos_;
            const std::string name = read_name();
            if (name.empty()) fail(at, "expected a rule name, found " + describe(at));
            current_ = name;
            skip_space();
            if (src_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after the rule name '" + name + "'");
            pos_ += 3;
            const uint32_t id = rule_id(name, at);
            if (defined_[id]) fail(at, "rule '" + name + "' is defined twice");
            defined_[id] = true;
            def_at_[id] = at;
            bodies_[id] = parse_alternates(false);
            skip_space();
            if (pos_ < src_.size() && !at_rule_start()) fail(pos_, "unexpected " + describe(pos_));
        }
        for (uint32_t r = 0; r < bodies_.size(); ++r)
            if (!defined_[r]) {
                current_ = use_rule_[r];
                fail(first_use_[r], "undefined rule '" + names_[r] + "'");
            }
        const auto root = ids_.find("root");
        if (root == ids_.end()) throw GrammarError("[grammar] no rule named 'root' (the start rule)");
        check_left_recursion();
        return flatten(root->second);
    }

  private:
    [[noreturn]] void fail(size_t at, const std::string& what) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < src_.size(); ++i) {
            if (src_[i] == '\n') {
                ++line;
                col = 1;
            } else if ((static_cast<unsigned char>(src_[i]) & 0xC0) != 0x80) {
                ++col;
            }
        }
        std::string where = "[grammar] line " + std::to_string(line) + ", column " + std::to_string(col);
        if (!current_.empty()) where += " (rule '" + current_ + "')";
        throw GrammarError(where + ": " + what);
    }

    std::string describe(size_t at) const {
        if (at >= src_.size()) return "the end of the text";
        const char c = src_[at];
        if (c == '\n') return "the end of the line";
        return "'" + std::string(1, c) + "'";
    }

    void skip_space() {
        while (pos_ < src_.size()) {
            const char c = src_[pos_];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                ++pos_;
            } else if (c == '#') {
                while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
            } else {
                break;
            }
        }
    }

    std::string read_name() {
        const size_t start = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        return std::string(src_.substr(start, pos_ - start));
    }

    // Whether a new rule `name ::=` starts at pos_ (the end of the one before).
    bool at_rule_start() const {
        size_t p = pos_;
        while (p < src_.size() && is_name_char(src_[p])) ++p;
        if (p == pos_) return false;
        while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t')) ++p;
        return src_.substr(p, 3) == "::=";
    }

    uint32_t rule_id(const std::string& name, size_t at) {
        const auto it = ids_.find(name);
        if (it != ids_.end()) return it->second;
        return add_rule(name, at, false);
    }

    uint32_t add_rule(const std::string& name, size_t at, bool generated) {
        if (bodies_.size() >= limits_.max_rules)
            fail(at, "more than " + std::to_string(limits_.max_rules) + " rules (with those groups and repetitions make)");
        const uint32_t id = uint32_t(bodies_.size());
        ids_.emplace(name, id);
        names_.push_back(name);
        bodies_.emplace_back();
        defined_.push_back(generated);
        def_at_.push_back(at);
        first_use_.push_back(at);
        use_rule_.push_back(current_);
        return id;
    }

    // A rule of its own for a group or a repetition, named after the rule being parsed.
    uint32_t generated_rule(size_t at, Alts body) {
        std::string name;
        do name = current_ + "-" + std::to_string(++generated_); while (ids_.count(name));
        const uint32_t id = add_rule(name, at, true);
        bodies_[id] = std::move(body);
        return id;
    }

    void count(size_t n, size_t at) {
        symbols_ += n;
        if (symbols_ > limits_.max_symbols)
            fail(at, "the grammar unrolls to more than " + std::to_string(limits_.max_symbols) + " symbols");
    }

    static GrammarSym rule_sym(uint32_t rule) { return GrammarSym{.kind = GrammarSym::Rule, .rule = rule}; }

    GrammarSym chars_sym(const std::vector<CodeRange>& ranges, bool negated) {
        GrammarSym s{.kind = GrammarSym::Chars, .negated = negated};
        s.ranges_begin = uint32_t(ranges_.size());
        s.ranges_count = uint32_t(ranges.size());
        ranges_.insert(ranges_.end(), ranges.begin(), ranges.end());
        return s;
    }

    Alts parse_alternates(bool nested) {
        Alts alts;
        alts.push_back(parse_sequence(nested));
        while (pos_ < src_.size() && src_[pos_] == '|') {
            ++pos_;
            alts.push_back(parse_sequence(nested));
        }
        return alts;
    }

    Seq parse_sequence(bool nested) {
        Seq seq;
        while (true) {
            skip_space();
            if (pos_ >= src_.size() || src_[pos_] == '|' || src_[pos_] == ')') break;
            if (!nested && at_rule_start()) break;
            const size_t at = pos_;
            Seq elem = parse_element();
            skip_space();
            if (pos_ < src_.size() && (src_[pos_] == '*' || src_[pos_] == '+' || src_[pos_] == '?' || src_[pos_] == '{'))
                elem = parse_repetition(at, std::move(elem));
            count(elem.size(), at);
            seq.insert(seq.end(), elem.begin(), elem.end());
        }
        return seq;
    }

    Seq parse_element() {
        const size_t at = pos_;
        const char c = src_[pos_];
        if (c == '"') return parse_literal();
        if (c == '[') return {parse_class()};
        if (c == '.') {
            ++pos_;
            return {chars_sym({}, true)};
        }
        if (c == '(') {
            ++pos_;
            Alts body = parse_alternates(true);
            if (pos_ >= src_.size() || src_[pos_] != ')') fail(at, "'(' is never closed by ')'");
            ++pos_;
            return {rule_sym(generated_rule(at, std::move(body)))};
        }
        if (is_name_char(c)) {
            const std::string name = read_name();
            return {rule_sym(rule_id(name, at))};
        }
        fail(at, "unexpected " + describe(at));
    }

    // One code point of the source: an escape (in literals and classes) or a UTF-8 character.
    uint32_t read_char(size_t opened_at, const char* what) {
        if (pos_ >= src_.size()) fail(opened_at, std::string("unterminated ") + what);
        const auto byte = static_cast<unsigned char>(src_[pos_]);
        if (byte == '\\') return read_escape();
        if (byte < 0x80) {
            ++pos_;
            return byte;
        }
        const int n = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 0;
        if (n == 0 || pos_ + size_t(n) > src_.size()) fail(pos_, "invalid UTF-8");
        uint32_t cp = byte & (0x7F >> n);
        for (int i = 1; i < n; ++i) {
            const auto b = static_cast<unsigned char>(src_[pos_ + size_t(i)]);
            if ((b & 0xC0) != 0x80) fail(pos_, "invalid UTF-8");
            cp = (cp << 6) | (b & 0x3F);
        }
        pos_ += size_t(n);
        return cp;
    }

    uint32_t read_escape() {
        const size_t at = pos_;
        if (pos_ + 1 >= src_.size()) fail(at, "'\\' at the end of the text");
        const char e = src_[pos_ + 1];
        pos_ += 2;
        switch (e) {
            case 'n': return '\n';
            case 'r': return '\r';
            case 't': return '\t';
            case '\\': case '"': case '\'': case '[': case ']': case '-': case '/': case '^': return uint32_t(e);
            case 'x': return read_hex(at, 2);
            case 'u': return read_hex(at, 4);
            case 'U': return read_hex(at, 8);
            default: fail(at, std::string("unknown escape '\\") + e + "'");
        }
    }

    uint32_t read_hex(size_t at, int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i, ++pos_) {
            const char c = pos_ < src_.size() ? src_[pos_] : '\0';
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) fail(at, "the escape needs " + std::to_string(digits) + " hex digits");
            v = v * 16 + uint32_t(d);
        }
        if (v > 0x10FFFF) fail(at, "the escape is past U+10FFFF");
        return v;
    }

    Seq parse_literal() {
        const size_t at = pos_++;
        Seq seq;
        while (true) {
            if (pos_ >= src_.size() || src_[pos_] == '\n') fail(at, "unterminated string");
            if (src_[pos_] == '"') break;
            const uint32_t cp = read_char(at, "string");
            seq.push_back(chars_sym({{cp, cp}}, false));
        }
        ++pos_;
        return seq;
    }

    GrammarSym parse_class() {
        const size_t at = pos_++;
        bool negated = false;
        if (pos_ < src_.size() && src_[pos_] == '^') {
            negated = true;
            ++pos_;
        }
        std::vector<CodeRange> ranges;
        while (true) {
            if (pos_ >= src_.size() || src_[pos_] == '\n') fail(at, "unterminated character class");
            if (src_[pos_] == ']') break;
            const uint32_t lo = read_char(at, "character class");
            uint32_t hi = lo;
            if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
                ++pos_;
                hi = read_char(at, "character class");
                if (hi < lo) fail(at, "the range in the character class ends below its start");
            }
            ranges.push_back({lo, hi});
        }
        ++pos_;
        return chars_sym(ranges, negated);
    }

    uint32_t read_count(size_t at) {
        skip_space();
        if (pos_ >= src_.size() || src_[pos_] < '0' || src_[pos_] > '9') fail(at, "bad repetition bounds: expected a number");
        uint64_t v = 0;
        while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
            v = v * 10 + uint64_t(src_[pos_++] - '0');
            if (v > limits_.max_repeat)
                fail(at, "bad repetition bounds: more than " + std::to_string(limits_.max_repeat) + " repetitions");
        }
        skip_space();
        return uint32_t(v);
    }

    // x* x+ x? x{m} x{m,} x{m,n} over the element just parsed (one symbol, or a literal's several).
    Seq parse_repetition(size_t at, Seq elem) {
        if (elem.size() != 1) elem = {rule_sym(generated_rule(at, {elem}))};
        const GrammarSym x = elem[0];
        const char op = src_[pos_++];
        uint32_t min = 0, max = 0;
        bool unbounded = false;
        if (op == '*') {
            unbounded = true;
        } else if (op == '+') {
            min = 1;
            unbounded = true;
        } else if (op == '?') {
            max = 1;
        } else {
            min = read_count(at);
            if (pos_ < src_.size() && src_[pos_] == ',') {
                ++pos_;
                skip_space();
                if (pos_ < src_.size() && src_[pos_] == '}') unbounded = true;
                else max = read_count(at);
            } else {
                max = min;
            }
            if (pos_ >= src_.size() || src_[pos_] != '}') fail(at, "bad repetition bounds: expected '}'");
            ++pos_;
            if (!unbounded && max < min)
                fail(at, "bad repetition bounds {" + std::to_string(min) + "," + std::to_string(max) +
                             "}: the maximum is below the minimum");
        }
        count(min, at);
        Seq out(min, x);
        if (unbounded) {
            const uint32_t star = generated_rule(at, {});
            bodies_[star] = {{x, rule_sym(star)}, {}};  // star ::= x star |
            out.push_back(rule_sym(star));
        } else if (max > min) {
            // opt_1 ::= x | ;  opt_k ::= x opt_(k-1) | : at most max - min more.
            uint32_t opt = generated_rule(at, {{x}, {}});
            for (uint32_t k = 1; k < max - min; ++k) opt = generated_rule(at, {{x, rule_sym(opt)}, {}});
            count(2 * (max - min), at);
            out.push_back(rule_sym(opt));
        }
        return out;
    }

    void check_left_recursion() {
        const size_t n = bodies_.size();
        std::vector<char> nullable(n, 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (const Seq& alt : bodies_[r]) {
                    const bool all = std::all_of(alt.begin(), alt.end(), [&](const GrammarSym& s) {
                        return s.kind == GrammarSym::Rule && nullable[s.rule];
                    });
                    if (all) {
                        nullable[r] = 1;
                        changed = true;
                        break;
                    }
                }
            }
        }
        // Edges r -> s where s can come first in r (after symbols that may match nothing).
        std::vector<std::vector<uint32_t>> first(n);
        for (size_t r = 0; r < n; ++r)
            for (const Seq& alt : bodies_[r])
                for (const GrammarSym& s : alt) {
                    if (s.kind != GrammarSym::Rule) break;
                    first[r].push_back(s.rule);
                    if (!nullable[s.rule]) break;
                }
        std::vector<char> state(n, 0);  // 0 unseen, 1 on the path, 2 done
        std::vector<uint32_t> path;
        // Iterative DFS: a deep chain of rules must not take the C++ stack.
        for (uint32_t start = 0; start < n; ++start) {
            if (state[start]) continue;
            std::vector<std::pair<uint32_t, size_t>> todo{{start, 0}};
            state[start] = 1;
            path = {start};
            while (!todo.empty()) {
                auto& [r, next] = todo.back();
                if (next == first[r].size()) {
                    state[r] = 2;
                    todo.pop_back();
                    path.pop_back();
                    continue;
                }
                const uint32_t s = first[r][next++];
                if (state[s] == 1) {
                    std::string cycle;
                    const auto from = std::find(path.begin(), path.end(), s);
                    for (auto it = from; it != path.end(); ++it) cycle += names_[*it] + " -> ";
                    cycle += names_[s];
                    current_ = names_[s];
                    fail(def_at_[s], "rule '" + names_[s] + "' is left-recursive (" + cycle +
                                         " before any character is matched)");
                }
                if (state[s] == 0) {
                    state[s] = 1;
                    path.push_back(s);
                    todo.push_back({s, 0});
                }
            }
        }
    }

    Grammar flatten(uint32_t root) {
        Grammar g;
        g.limits = limits_;
        g.root = root;
        g.ranges = std::move(ranges_);
        g.rule_names = names_;
        g.alts.resize(bodies_.size());
        for (size_t r = 0; r < bodies_.size(); ++r)
            for (const Seq& alt : bodies_[r]) {
                g.alts[r].push_back(uint32_t(g.syms.size()));
                g.syms.insert(g.syms.end(), alt.begin(), alt.end());
                g.syms.push_back(GrammarSym{});
            }
        return g;
    }

    std::string_view src_;
    const GrammarLimits& limits_;
    size_t pos_ = 0;
    std::string current_;
    size_t generated_ = 0;
    size_t symbols_ = 0;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<std::string> names_;
    std::vector<Alts> bodies_;
    std::vector<bool> defined_;
    std::vector<size_t> def_at_, first_use_;
    std::vector<std::string> use_rule_;
    std::vector<CodeRange> ranges_;
};

}  // namespace

Grammar grammar_parse(std::string_view text, const GrammarLimits& limits) { return Parser(text, limits).run(); }

std::string grammar_read_file(const std::string& path, size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw GrammarError("[grammar] cannot open '" + path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw GrammarError("[grammar] cannot read '" + path + "'");
    std::string s = std::move(text).str();
    if (s.size() > max_bytes)
        throw GrammarError("[grammar] '" + path + "' has " + std::to_string(s.size()) + " bytes, more than the " +
                           std::to_string(max_bytes) + " allowed");
    return s;
}

}  // namespace graphrun
