// tests/cli/cli_text_test.cpp — the command line a person uses: text in, text out, like llama.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tools/lib/random_model.h"
#include "tests/common/parity_util.h"
#include "runtime/gguf.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

TEST(CliText, SameSeedSameTextOtherSeedOtherText) {
    REQUIRE_STORIES();
    auto run = [&](const char* seed) {
        test::ProcessResult r = test::run_graphrun({"-m", testing::stories_model(), "-p", "Once upon a time",
                                                    "-n", "60", "--temp", "1.0", "--seed", seed});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r.out;
    };
    const std::string a = run("7");
    EXPECT_EQ(a, run("7"));
    EXPECT_NE(a, run("8"));
}

TEST(CliText, PromptFromFileEqualsPromptFlag) {
    REQUIRE_STORIES();
    const std::string path = (testing::test_temp_dir() / "prompt.txt").string();
    std::ofstream(path) << "The little dog";
    auto a = test::run_graphrun({"-m", testing::stories_model(), "-f", path, "-n", "20", "--temp", "0"});
    auto b = test::run_graphrun(
        {"-m", testing::stories_model(), "-p", "The little dog", "-n", "20", "--temp", "0"});
    EXPECT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
}

// Interactive turns keep the KV cache: the second turn continues the first one's story, so it
// differs from the same line given to a fresh run.
TEST(CliText, InteractiveKeepsTheCacheAcrossTurns) {
    REQUIRE_STORIES();
    const auto dir = testing::test_temp_dir();
    const std::string input = (dir / "graphrun_turns.txt").string(), output = (dir / "graphrun_turns.out").string();
    std::ofstream(input) << "Once upon a time\nShe\n";
    const std::string cmd = std::string(GRAPHRUN_BINARY) + " -m " + testing::stories_model() +
                            " -i -n 12 --temp 0 < " + input + " > " + output + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream in(output);
    std::string turn1, turn2;
    std::getline(in, turn1);
    std::getline(in, turn2);
    EXPECT_THAT(turn1, HasSubstr("Once upon a time, there was"));
    auto fresh = test::run_graphrun({"-m", testing::stories_model(), "-p", "She", "-n", "12", "--temp", "0"});
    ASSERT_FALSE(turn2.empty());
    EXPECT_NE("She" + turn2 + "\n", fresh.out);
}

TEST(CliText, ErrorsSayWhatWasWrong) {
    REQUIRE_STORIES();
    auto too_long = test::run_graphrun(
        {"-m", testing::stories_model(), "-c", "8", "-p", "one two three four five six seven eight nine"});
    EXPECT_NE(too_long.exit_code, 0);
    EXPECT_THAT(too_long.err, AllOf(HasSubstr("context of 8"), HasSubstr("raise -c")));
    EXPECT_TRUE(too_long.out.empty());

    auto missing = test::run_graphrun({"-m", "/nonexistent/model.gguf", "-p", "hi"});
    EXPECT_NE(missing.exit_code, 0);
    EXPECT_THAT(missing.err, HasSubstr("/nonexistent/model.gguf"));

    auto no_prompt = test::run_graphrun({"-m", testing::stories_model()});
    EXPECT_NE(no_prompt.exit_code, 0);
    EXPECT_THAT(no_prompt.err, HasSubstr("nothing to generate from"));
}

TEST(CliText, ModelWithoutVocabularyIsRefusedForText) {
    // A random model with its tokenizer keys removed: token ids still work, text prompts do not.
    const std::string with_vocab = testing::random_model_file(testing::spec_of(16, 1, 4, 2, 48), "cli_vocab");
    auto file = GgufFile::open(with_vocab);
    GgufWriter writer;
    for (const auto& [key, value] : file->metadata())
        if (key.rfind("tokenizer.", 0) != 0) writer.set(key, value);
    for (const GgufTensor& t : file->tensors()) writer.add_tensor(t.name, t.type, t.ne, t.data, t.nbytes);
    const std::string path = (testing::test_temp_dir() / "no_vocab.gguf").string();
    writer.write(path);

    auto text = test::run_graphrun({"-m", path, "-p", "hello"});
    EXPECT_NE(text.exit_code, 0);
    EXPECT_THAT(text.err, HasSubstr("cannot take text prompts"));
    auto ids = test::run_graphrun({"-m", path, "--tokens", "1,2,3", "-n", "4"});
    EXPECT_EQ(ids.exit_code, 0) << ids.err;
}

}  // namespace
}  // namespace graphrun
