// tests/cli/conversation_test.cpp — `graphrun --conversation` end to end on stories260K and the
// shipped KJV model (neither has a chat template, so the plain fallback is used): replies say
// something and stop at the end of the turn, the KV cache carried across turns gives the same
// reply as evaluating the whole conversation afresh, and bad options are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/gguf.h"
#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

const std::string kKjvModel = GRAPHRUN_SOURCE_DIR "/models/kjv-q8_0.gguf";

// `graphrun ARGS` with `input` on stdin.
test::ProcessResult converse(const std::vector<std::string>& args, const std::string& input) {
    static int counter = 0;
    const std::string path = (testing::test_temp_dir() / ("stdin" + std::to_string(counter++))).string();
    std::ofstream(path, std::ios::binary) << input;
    std::string cmd = "'" + std::string(GRAPHRUN_BINARY) + "'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    return test::run_process({"sh", "-c", cmd + " < '" + path + "'"});
}

// What follows "graphrun: turn N: " on each stderr line that has it (string parsing rather than
// std::regex: GCC 12 warns inside <regex> under the sanitizers, and the suite builds with -Werror).
std::vector<std::string> turn_lines(const std::string& err, int turn) {
    const std::string prefix = "graphrun: turn " + std::to_string(turn) + ": ";
    std::vector<std::string> out;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);)
        if (const size_t at = line.find(prefix); at != std::string::npos) out.push_back(line.substr(at + prefix.size()));
    return out;
}

// "kept 12 cached tokens, ..." -> 12 and the rest after ", "; -1 when the line does not start so.
int64_t strip_kept(std::string& rest) {
    const std::string kept = "kept ", tail = " cached tokens";
    if (rest.rfind(kept, 0) != 0) return -1;
    size_t end = kept.size();
    while (end < rest.size() && std::isdigit(static_cast<unsigned char>(rest[end]))) ++end;
    if (end == kept.size() || rest.compare(end, tail.size(), tail) != 0) return -1;
    const int64_t n = std::stoll(rest.substr(kept.size(), end - kept.size()));
    rest = rest.substr(std::min(rest.size(), end + tail.size() + 2));  // past ", "
    return n;
}

// The ids --verbose-prompt printed for turn `turn`: "context" (the KV cache after the prompt) or "reply".
std::vector<int32_t> logged_ids(const std::string& err, int turn, const std::string& what) {
    for (std::string rest : turn_lines(err, turn)) {
        strip_kept(rest);
        const std::string open = what + " [";
        if (rest.rfind(open, 0) != 0 || rest.empty() || rest.back() != ']') continue;
        std::string ids = rest.substr(open.size(), rest.size() - open.size() - 1);
        if (ids.find_first_not_of("0123456789, ") != std::string::npos) continue;
        std::replace(ids.begin(), ids.end(), ',', ' ');
        return test::parse_ids(ids);
    }
    ADD_FAILURE() << "no '" << what << "' line for turn " << turn << " in:\n" << err;
    return {};
}

int64_t kept_tokens(const std::string& err, int turn) {
    for (std::string rest : turn_lines(err, turn))
        if (const int64_t n = strip_kept(rest); n >= 0) return n;
    return -1;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

TEST(Conversation, CacheAcrossTurnsEqualsRecomputingTheConversation) {
    REQUIRE_STORIES();
    const auto r = converse(
        {"-m", testing::stories_model(), "--conversation", "--temp", "0", "-n", "80", "--verbose-prompt"},
        "Tell me a story.\nWhat happened next?\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("conversation in the 'plain' chat format (the model has no chat template)"));
    const std::vector<int32_t> context1 = logged_ids(r.err, 1, "context"),
                               reply1 = logged_ids(r.err, 1, "reply");
    const std::vector<int32_t> context2 = logged_ids(r.err, 2, "context"),
                               reply2 = logged_ids(r.err, 2, "reply");
    ASSERT_FALSE(reply1.empty());
    ASSERT_FALSE(reply2.empty());

    // Turn 2 kept turn 1's prompt and reply in the cache (the reply's last token, which ended the
    // turn, is evaluated with turn 2's text) and evaluated only the new text.
    EXPECT_EQ(context1.front(), 1) << "BOS first";
    const int64_t kept = kept_tokens(r.err, 2);
    EXPECT_EQ(kept, int64_t(context1.size() + reply1.size() - 1));
    ASSERT_GT(context2.size(), size_t(kept));
    std::vector<int32_t> turn1 = context1;
    turn1.insert(turn1.end(), reply1.begin(), reply1.end() - 1);
    EXPECT_EQ(std::vector<int32_t>(context2.begin(), context2.begin() + kept), turn1);

    // The same context evaluated from scratch gives the same greedy reply.
    const auto fresh = test::run_graphrun({"-m", testing::stories_model(), "--tokens",
                                           test::join_ids(context2), "-n", std::to_string(reply2.size())});
    ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
    EXPECT_EQ(test::parse_ids(fresh.out), reply2);
}

// Llama 3's format trims each message, so a reply that ends in a space is rendered without it:
// the cache is rewound to where the rendering and what was generated part, and turn 2 still
// equals evaluating its context from scratch. (stories260K's greedy 5-token reply here ends in
// the token for a lone space.)
TEST(Conversation, RewindsWhereTheRenderedHistoryDiffers) {
    REQUIRE_STORIES();
    const auto r = converse({"-m", testing::stories_model(), "--conversation", "--chat-template", "llama3",
                             "--temp", "0", "-n", "5", "--verbose-prompt"},
                            "Tell me a story.\nWhat happened next?\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<int32_t> context1 = logged_ids(r.err, 1, "context"),
                               reply1 = logged_ids(r.err, 1, "reply");
    const std::vector<int32_t> context2 = logged_ids(r.err, 2, "context"),
                               reply2 = logged_ids(r.err, 2, "reply");
    ASSERT_EQ(reply1.size(), 5u) << "the reply ran to -n, so every token of it was evaluated";
    const int64_t kept = kept_tokens(r.err, 2);
    EXPECT_GE(kept, int64_t(context1.size()));
    EXPECT_LT(kept, int64_t(context1.size() + reply1.size())) << "no rewind: the reply rendered as generated";
    std::vector<int32_t> turn1 = context1;
    turn1.insert(turn1.end(), reply1.begin(), reply1.end());
    EXPECT_EQ(std::vector<int32_t>(context2.begin(), context2.begin() + kept),
              std::vector<int32_t>(turn1.begin(), turn1.begin() + kept));
    const auto fresh = test::run_graphrun({"-m", testing::stories_model(), "--tokens",
                                           test::join_ids(context2), "-n", std::to_string(reply2.size())});
    ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
    EXPECT_EQ(test::parse_ids(fresh.out), reply2);
}

// Without a chat template, a reply is one line that says something; stories260K's first reply
// ends at a newline it generates (well before -n).
TEST(Conversation, PlainFallbackRepliesAreNonEmptyLines) {
    REQUIRE_STORIES();
    for (const std::string& model : {testing::stories_model(), kKjvModel}) {
        for (const char* seed : {"1", "2", "3"}) {
            const auto r = converse({"-m", model, "--conversation", "--seed", seed, "-n", "48", "--system",
                                     "A friendly talk.", "--verbose-prompt"},
                                    "Hello, who are you?\nTell me more.\n");
            ASSERT_EQ(r.exit_code, 0) << r.err;
            const std::vector<std::string> replies = lines(r.out);
            ASSERT_EQ(replies.size(), 2u) << model << " seed " << seed << ":\n" << r.out;
            for (const std::string& reply : replies)
                EXPECT_NE(reply.find_first_not_of(" \t"), std::string::npos) << model << " seed " << seed;
        }
    }
    const auto greedy =
        converse({"-m", testing::stories_model(), "--conversation", "--temp", "0", "--verbose-prompt"},
                 "Tell me a story.\n");
    const std::vector<int32_t> reply = logged_ids(greedy.err, 1, "reply");
    EXPECT_LT(reply.size(), 128u) << "ended before -n";
    EXPECT_EQ(reply.back(), 13) << "at the newline token <0x0A>";
}

// A model file's own template is used (here ChatML put into a copy of stories260K, whose vocabulary
// has no <|im_end|> token, so the reply ends at that text), and one graphrun cannot render is refused.
TEST(Conversation, UsesTheFilesTemplateAndRefusesOnesItCannotRender) {
    REQUIRE_STORIES();
    const auto with_template = [](const std::string& name, const std::string& source) {
        auto file = GgufFile::open(testing::stories_model());
        GgufWriter w;
        for (const auto& [key, value] : file->metadata()) w.set(key, value);
        w.set_string("tokenizer.chat_template", source);
        for (const GgufTensor& t : file->tensors()) w.add_tensor(t.name, t.type, t.ne, t.data, t.nbytes);
        const std::string path = (testing::test_temp_dir() / (name + ".gguf")).string();
        w.write(path);
        return path;
    };
    const std::string chatml =
        with_template("chatml", "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}");
    const auto r = converse({"-m", chatml, "--conversation", "--temp", "0", "-n", "8"}, "Hi\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("conversation in the 'chatml' chat format"));

    const std::string phi4 = with_template("phi4", "<|im_start|>{{ role }}<|im_sep|>");
    const auto refused = converse({"-m", phi4, "--conversation"}, "Hi\n");
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_THAT(refused.err, HasSubstr("tokenizer.chat_template is a 'phi4' template"));
    EXPECT_THAT(refused.err, HasSubstr("--chat-template"));
    // --chat-template overrides it.
    const auto chosen =
        converse({"-m", phi4, "--conversation", "--chat-template", "plain", "-n", "4"}, "Hi\n");
    EXPECT_EQ(chosen.exit_code, 0) << chosen.err;
}

TEST(Conversation, BadOptionsAreRefused) {
    REQUIRE_STORIES();
    const auto tokens = converse({"-m", testing::stories_model(), "--conversation", "--tokens", "1,2"}, "");
    EXPECT_NE(tokens.exit_code, 0);
    EXPECT_THAT(tokens.err, HasSubstr("--conversation takes text, not --tokens"));
    const auto both = converse({"-m", testing::stories_model(), "--conversation", "-i"}, "");
    EXPECT_NE(both.exit_code, 0);
    EXPECT_THAT(both.err, HasSubstr("either --conversation or -i"));
    const auto unknown =
        converse({"-m", testing::stories_model(), "--conversation", "--chat-template", "vicuna"}, "");
    EXPECT_NE(unknown.exit_code, 0);
    EXPECT_THAT(unknown.err, AllOf(HasSubstr("--chat-template"), HasSubstr("vicuna")));
    // A message that cannot fit the context is dropped with a notice, and the conversation goes on.
    const auto small =
        converse({"-m", testing::stories_model(), "--conversation", "-c", "32", "--temp", "0", "-n", "4"},
                 "one two three four five six seven eight nine ten eleven twelve\nHi\n");
    EXPECT_EQ(small.exit_code, 0) << small.err;
    EXPECT_THAT(small.err,
                HasSubstr("does not fit the context of 32 tokens on its own (raise -c); it was dropped"));
    EXPECT_EQ(lines(small.out).size(), 1u) << small.out;
}

}  // namespace
}  // namespace graphrun
