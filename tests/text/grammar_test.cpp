// tests/text/grammar_test.cpp — GBNF parsing (and its errors), the matcher on whole strings, the bounds
// against hostile grammars, and the token mask on a small vocabulary held to a brute-force check.
#include "runtime/text/grammar.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "runtime/text/grammar_match.h"
#include "runtime/text/grammar_vocab.h"
#include "runtime/text/sampler.h"

namespace graphrun {
namespace {

bool matches(const std::string& gbnf, const std::string& text) { return grammar_matches(grammar_parse(gbnf), text); }

std::string parse_error(const std::string& gbnf, const GrammarLimits& limits = {}) {
    try {
        grammar_parse(gbnf, limits);
    } catch (const GrammarError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Grammar, LiteralsAlternationAndGroups) {
    const std::string g = "root ::= \"a\" (\"b\" | \"cd\") \"e\"\n";
    EXPECT_TRUE(matches(g, "abe"));
    EXPECT_TRUE(matches(g, "acde"));
    EXPECT_FALSE(matches(g, "ace"));
    EXPECT_FALSE(matches(g, "ab"));   // a prefix is not a match
    EXPECT_FALSE(matches(g, "abee"));
}

// (grammar, text, whether the whole text matches)
struct MatchCase {
    const char* grammar;
    const char* text;
    bool match;
};

TEST(Grammar, RepetitionsClassesEscapesAndAny) {
    const MatchCase cases[] = {
        {"root ::= \"a\"*", "", true},
        {"root ::= \"a\"*", "aaaa", true},
        {"root ::= \"a\"+", "", false},
        {"root ::= \"a\"+", "aaa", true},
        {"root ::= \"a\"? \"b\"", "b", true},
        {"root ::= \"a\"? \"b\"", "ab", true},
        {"root ::= \"a\"? \"b\"", "aab", false},
        {"root ::= [0-9]{2,4}", "1", false},
        {"root ::= [0-9]{2,4}", "12", true},
        {"root ::= [0-9]{2,4}", "1234", true},
        {"root ::= [0-9]{2,4}", "12345", false},
        {"root ::= \"ab\"{3}", "ababab", true},
        {"root ::= \"ab\"{3}", "abab", false},
        {"root ::= \"x\"{2,}", "xxxxxxx", true},
        {"root ::= \"x\"{2,}", "x", false},
        {"root ::= [a-zA-Z_]+", "Hello_world", true},
        {"root ::= [a-z]+", "Hello", false},
        {"root ::= [^\"]+", "no quotes", true},
        {"root ::= [^\"]+", "a\"b", false},
        {"root ::= \"\\n\\t\\\\\\\"\"", "\n\t\\\"", true},
        {"root ::= [\\x41-\\x43]+", "ABC", true},
        {"root ::= \"\\u00e9\" [\\u4e00-\\u9fff]", "é中", true},
        {"root ::= \"\\U0001F600\"", "\xF0\x9F\x98\x80", true},
        {"root ::= . . .", "a中b", true},
        {"root ::= . .", "a", false},
        {"root ::= [\\]\\-]+", "]-]", true},
    };
    for (const MatchCase& c : cases) EXPECT_EQ(matches(c.grammar, c.text), c.match) << c.grammar << " on '" << c.text << "'";
}

TEST(Grammar, RulesCommentsAndMultiLineBodies) {
    const std::string g =
        "# a comment line\n"
        "root ::= item (\",\" ws item)*   # trailing comment\n"
        "item ::=\n"
        "    [0-9]+\n"
        "  | \"x\"\n"
        "ws ::= \" \"?\n";
    EXPECT_TRUE(matches(g, "1, 2,x,34"));
    EXPECT_FALSE(matches(g, "1,,2"));
}

TEST(Grammar, ErrorsNameTheLineColumnAndRule) {
    EXPECT_EQ(parse_error("root ::= thing\n"), "[grammar] line 1, column 10 (rule 'root'): undefined rule 'thing'");
    EXPECT_EQ(parse_error("root ::= a\na ::= \"x\n"), "[grammar] line 2, column 7 (rule 'a'): unterminated string");
    EXPECT_EQ(parse_error("root ::= [a-z\n"),
              "[grammar] line 1, column 10 (rule 'root'): unterminated character class");
    EXPECT_EQ(parse_error("root ::= \"a\"{3,1}"),
              "[grammar] line 1, column 10 (rule 'root'): bad repetition bounds {3,1}: the maximum is below the minimum");
    EXPECT_EQ(parse_error("item ::= \"a\"\n"), "[grammar] no rule named 'root' (the start rule)");
    EXPECT_NE(parse_error("root ::= root \"a\" | \"b\"").find("rule 'root' is left-recursive (root -> root"),
              std::string::npos);
    // Left recursion through rules that can match nothing, and through a group.
    EXPECT_NE(parse_error("root ::= e\ne ::= opt e \"+\" | \"1\"\nopt ::= \"-\"?").find("left-recursive"), std::string::npos);
    EXPECT_NE(parse_error("root ::= (\"a\"?)* \"b\"").find("left-recursive"), std::string::npos);
    EXPECT_NE(parse_error("root ::= \"a\"\nroot ::= \"b\"").find("rule 'root' is defined twice"), std::string::npos);
    EXPECT_NE(parse_error("root ::= (\"a\" | \"b\"").find("'(' is never closed"), std::string::npos);
    EXPECT_NE(parse_error("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
    EXPECT_NE(parse_error("root ::= [z-a]").find("ends below its start"), std::string::npos);
    EXPECT_NE(parse_error("root ::= \"a\"{99999}").find("more than 10000 repetitions"), std::string::npos);
    EXPECT_NE(parse_error("root = \"a\"").find("expected '::='"), std::string::npos);
    EXPECT_NE(parse_error("root ::= \"a\" )").find("unexpected ')'"), std::string::npos);
}

TEST(Grammar, HostileGrammarsHitBoundsNotTheMachine) {
    GrammarLimits small;
    small.max_symbols = 1000;
    EXPECT_NE(parse_error("root ::= \"a\"{600} \"b\"{600}", small).find("more than 1000 symbols"), std::string::npos);
    small = {};
    small.max_text = 10;
    EXPECT_NE(parse_error("root ::= \"aaaaaaaaaaaaaa\"", small).find("bytes, more than the 10 allowed"), std::string::npos);
    // An exponentially ambiguous grammar: every 'a' doubles the stacks (each waits for "b" or "c").
    const Grammar g = grammar_parse("root ::= x\nx ::= \"a\" x \"b\" | \"a\" x \"c\" | \"d\"");
    GrammarMatcher m(g);
    EXPECT_THROW(m.accept(std::string(40, 'a')), GrammarError);
    // Deep nesting stops at max_depth: the path is refused, nothing crashes.
    const Grammar nest = grammar_parse("root ::= \"(\" root \")\" | \"x\"");
    EXPECT_TRUE(grammar_matches(nest, "((x))"));
    EXPECT_FALSE(grammar_matches(nest, std::string(2000, '(')));
    // A long chain of rules calling rules before any character.
    std::string chain = "root ::= r0\n";
    for (int i = 0; i < 5000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
    chain += "r5000 ::= \"z\"\n";
    EXPECT_THROW(grammar_matches(grammar_parse(chain), "z"), GrammarError);
}

TEST(Grammar, MatcherTakesCharactersSplitAcrossCalls) {
    const Grammar g = grammar_parse("root ::= \"é\" [a-c]");
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept("\xC3"));  // half of é
    EXPECT_FALSE(m.can_end());
    EXPECT_FALSE(m.accept("\xA8"));  // è: refused, state kept
    EXPECT_TRUE(m.accept("\xA9"));
    EXPECT_FALSE(m.accept("\xC3"));  // a lead byte of nothing [a-c] holds
    EXPECT_TRUE(m.accept("b"));
    EXPECT_TRUE(m.can_end());
}

// The mask against the definition: token t is allowed iff the matcher accepts its bytes.
TEST(GrammarVocabMask, AgreesWithAcceptingEachTokenAlone) {
    std::vector<std::string> bytes = {"", "{", "}", "\"", "a", "ab", "abc", "1", "12", ",", " ", "\": ",
                                      "\xC3", "\xA9", "é", "\xE4\xB8", "\xAD", "x\"", "true", "tr", "", "{\"", "ue", "u", ": "};
    const int32_t eos = 20;
    GrammarVocab vocab(bytes, {eos});
    const Grammar g = grammar_parse(
        "root ::= \"{\" ws (pair (\",\" ws pair)*)? \"}\"\npair ::= \"\\\"\" [a-zé中]* \"\\\": \" ([0-9]+ | \"true\")\n"
        "ws ::= \" \"?");
    GrammarMatcher m(g);
    GrammarMaskScratch scratch;
    std::vector<uint8_t> allowed;
    std::mt19937 rng(7);
    for (int step = 0; step < 40; ++step) {
        vocab.mask(m, allowed, scratch);
        std::vector<int32_t> ok;
        for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
            GrammarMatcher trial = m;
            const bool expect = id == eos ? m.can_end() : !bytes[size_t(id)].empty() && trial.accept(bytes[size_t(id)]);
            EXPECT_EQ(allowed[size_t(id)] != 0, expect) << "token " << id << " at step " << step;
            EXPECT_EQ(vocab.allows(m, id), expect);
            if (expect) ok.push_back(id);
        }
        ASSERT_FALSE(ok.empty());
        const int32_t pick = ok[rng() % ok.size()];
        if (pick == eos) break;
        ASSERT_TRUE(m.accept(bytes[size_t(pick)]));
    }
}

TEST(GrammarSampler, OnlyAllowedTokensAndEndOnlyWhenComplete) {
    const std::vector<std::string> bytes = {"</s>", "a", "b", "ab", "c"};
    auto constraint = std::make_shared<GrammarConstraint>();
    constraint->grammar = std::make_shared<Grammar>(grammar_parse("root ::= \"a\" \"b\"+"));
    constraint->vocab = std::make_shared<GrammarVocab>(std::vector<std::string>{"", "a", "b", "ab", "c"},
                                                       std::vector<int32_t>{0});
    for (const float temp : {0.0f, 1.0f}) {
        SamplerParams p;
        p.temperature = temp;
        p.seed = 3;
        p.grammar = constraint;
        Sampler s(p, 5);
        // The best logit is always the end token, then "c": neither is allowed at first.
        const std::vector<float> logits = {5, 1, 1, 1, 4};
        std::string out;
        for (int i = 0; i < 20; ++i) {
            const int32_t t = s.sample(logits);
            ASSERT_NE(t, 4);
            if (t == 0) break;
            out += bytes[size_t(t)];
        }
        EXPECT_TRUE(grammar_matches(*constraint->grammar, out)) << out;
        EXPECT_TRUE(s.grammar_complete());
        s.reset();
        EXPECT_FALSE(s.grammar_complete());
    }
}

TEST(GrammarSampler, RefusesAVocabularyOfAnotherSize) {
    SamplerParams p;
    auto c = std::make_shared<GrammarConstraint>();
    c->grammar = std::make_shared<Grammar>(grammar_parse("root ::= \"a\""));
    c->vocab = std::make_shared<GrammarVocab>(std::vector<std::string>{"a"}, std::vector<int32_t>{});
    p.grammar = c;
    EXPECT_THROW(Sampler(p, 5), std::invalid_argument);
}

}  // namespace
}  // namespace graphrun
