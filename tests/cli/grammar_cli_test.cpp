// tests/cli/grammar_cli_test.cpp — `graphrun --grammar FILE` and `--json-schema FILE`: the output keeps to
// the grammar (greedy and sampled), and a bad file is refused naming the file and what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/text/grammar_match.h"
#include "runtime/text/json_schema.h"
#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

std::string kjv() { return std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf"; }

TEST(GrammarCli, GrammarFileConstrainsTheText) {
    const std::string path = (testing::test_temp_dir() / "yea.gbnf").string();
    testing::write_text(path, "# an answer\nroot ::= (\"yea\" | \"nay\") \", \" [a-z ]{1,12} \".\"\n");
    const Grammar g = grammar_parse(grammar_read_file(path));
    for (const char* temp : {"0", "1"}) {
        const auto r = test::run_graphrun({"-m", kjv(), "-p", "And he said", "-n", "40", "--grammar", path, "--temp", temp,
                                           "--seed", "4"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        ASSERT_EQ(r.out.rfind("And he said", 0), 0u) << r.out;
        std::string answer = r.out.substr(std::string("And he said").size());
        if (!answer.empty() && answer.back() == '\n') answer.pop_back();  // the line the command ends with
        EXPECT_TRUE(grammar_matches(g, answer) || GrammarMatcher(g).accept(answer)) << answer;
    }
}

TEST(GrammarCli, JsonSchemaFileGivesJson) {
    const std::string path = (testing::test_temp_dir() / "schema.json").string();
    testing::write_text(path, R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                                  "additionalProperties": false})");
    const auto r = test::run_graphrun({"-m", kjv(), "-p", "JSON:", "-n", "60", "--json-schema", path, "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string answer = r.out.substr(5);
    if (!answer.empty() && answer.back() == '\n') answer.pop_back();
    const Grammar g = grammar_parse(json_schema_to_gbnf(testing::contents(path)));
    if (grammar_matches(g, answer)) EXPECT_TRUE(nlohmann::json::parse(answer)["n"].is_number_integer()) << answer;
    else EXPECT_TRUE(GrammarMatcher(g).accept(answer)) << answer;  // cut by -n
}

TEST(GrammarCli, BadFilesAreRefusedByName) {
    const std::string bad = (testing::test_temp_dir() / "bad.gbnf").string();
    testing::write_text(bad, "root ::= \"a\" missing\n");
    auto r = test::run_graphrun({"-m", kjv(), "-p", "x", "--grammar", bad});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("--grammar " + bad + ": [grammar] line 1, column 14 (rule 'root'): undefined rule 'missing'"));
    const std::string schema = (testing::test_temp_dir() / "bad.json").string();
    testing::write_text(schema, R"({"type": "string", "format": "email"})");
    r = test::run_graphrun({"-m", kjv(), "-p", "x", "--json-schema", schema});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("unsupported keyword 'format' at #/format"));
    r = test::run_graphrun({"-m", kjv(), "-p", "x", "--json-schema", "/nonexistent/schema.json"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("cannot open '/nonexistent/schema.json'"));
    r = test::run_graphrun({"-m", kjv(), "-p", "x", "--json-schema", schema, "--grammar", bad});
    EXPECT_THAT(r.err, HasSubstr("give either --grammar or --json-schema, not both"));
}

}  // namespace
}  // namespace graphrun
