// tests/text/chat_template_test.cpp — chat template detection (llama.cpp's markers and order), each
// family's rendering, and where ChatReplyStream ends a reply. tests/parity/chat_template_jinja_test.cpp
// holds the renderings of the real Llama 3 and Qwen3 templates to a Jinja engine.
#include "runtime/text/chat_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/common/tokenizer_test_util.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;
using tokenizer_test::BpeVocab;
using Merges = std::vector<std::pair<std::string, std::string>>;

std::string detected(std::string_view source) {
    return ChatTemplate::detect(source).name();
}

std::string detect_error(std::string_view source) {
    try {
        ChatTemplate::detect(source);
    } catch (const ChatTemplateError& e) {
        return e.what();
    }
    return "<no ChatTemplateError>";
}

TEST(ChatTemplateDetect, FamiliesByLlamaCppsMarkers) {
    EXPECT_EQ(detected("{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n'}}{% endfor %}"),
              "chatml");
    EXPECT_EQ(detected("{{ '<|start_header_id|>' + role + '<|end_header_id|>\\n\\n' }}"), "llama3");
    EXPECT_EQ(detected("{{ bos_token }}[INST] {{ content }} [/INST]"), "llama2");
    EXPECT_EQ(detected("[INST] <<SYS>>\\n{{ system }}\\n<</SYS>>"), "llama2-sys");
    EXPECT_EQ(detected("{{ bos_token + '[INST] ' + content }} <<SYS>>"), "llama2-sys-bos");
    EXPECT_EQ(detected("[INST] {{ content.strip() }}"), "llama2-sys-strip");
    EXPECT_EQ(detected("<|user|>\\n{{ content }}<|endoftext|>"), "zephyr");
    EXPECT_EQ(detected("<|user|>{{ c }}<|end|><|assistant|>"), "phi3");
    EXPECT_EQ(detected("<start_of_turn>user\\n{{ c }}<end_of_turn>"), "gemma");
    // Names are accepted as templates, as llama.cpp accepts them.
    for (const std::string& name : ChatTemplate::names()) EXPECT_EQ(detected(name), name);
}

TEST(ChatTemplateDetect, OrderDecidesOverlappingMarkers) {
    // <|im_start|> is looked for first, so a template with both is ChatML.
    EXPECT_EQ(detected("<|im_start|> <|start_header_id|><|end_header_id|>"), "chatml");
    // [INST] comes before <start_of_turn>, <|assistant|><|end|> before <|user|><|endoftext|>.
    EXPECT_EQ(detected("[INST] <start_of_turn>"), "llama2");
    EXPECT_EQ(detected("<|assistant|><|end|><|user|><|endoftext|>"), "phi3");
}

TEST(ChatTemplateDetect, OtherFamiliesAreNamedAndRefused) {
    EXPECT_THAT(detect_error("<|im_start|>{{ role }}<|im_sep|>"),
                HasSubstr("is a 'phi4' template (as llama.cpp detects it), which graphrun does not render"));
    EXPECT_THAT(detect_error("[SYSTEM_PROMPT] [INST]"), HasSubstr("'mistral-v7'"));
    EXPECT_THAT(detect_error("<|user|>{{c}}<|assistant|></s>"), HasSubstr("'falcon3'"));
    EXPECT_THAT(detect_error("USER: {{c}} ASSISTANT: "), HasSubstr("'vicuna'"));
    const std::string unknown = detect_error("{% for m in messages %}{{ m.content }}{% endfor %}");
    EXPECT_THAT(unknown,
                HasSubstr("is not a template of a family llama.cpp's detection knows (it begins '{% for m"));
    EXPECT_THAT(unknown,
                HasSubstr("choose a format with --chat-template: chatml, llama3, llama2, llama2-sys, "
                          "llama2-sys-bos, llama2-sys-strip, zephyr, phi3, gemma, plain"));
    EXPECT_THROW(ChatTemplate::named("vicuna"), ChatTemplateError);
}

TEST(ChatTemplateDetect, FromTheFilesKey) {
    GgufWriter w = BpeVocab(Merges{}).writer();
    EXPECT_EQ(ChatTemplate::from_gguf(*tokenizer_test::open_written(w)).name(), "plain") << "no template";
    w.set_string("tokenizer.chat_template", "<|im_start|>");
    EXPECT_EQ(ChatTemplate::from_gguf(*tokenizer_test::open_written(w)).name(), "chatml");
    w.set_u32("tokenizer.chat_template", 7);
    try {
        ChatTemplate::from_gguf(*tokenizer_test::open_written(w));
        ADD_FAILURE() << "a template of type u32 was taken";
    } catch (const ChatTemplateError& e) {
        EXPECT_THAT(e.what(), HasSubstr(": tokenizer.chat_template has type u32, expected string"));
    }
}

const std::vector<ChatMessage> kConversation = {
    {"system", "You are kind."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "How are you?"}};

std::string render(const char* name, bool add_generation_prompt = true) {
    return ChatTemplate::named(name).apply(kConversation, add_generation_prompt);
}

TEST(ChatTemplateApply, EachFamilyAsLlamaCppFormatsIt) {
    EXPECT_EQ(render("chatml"),
              "<|im_start|>system\nYou are kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n"
              "<|im_start|>assistant\n");
    EXPECT_EQ(render("chatml", false),
              "<|im_start|>system\nYou are kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n");
    EXPECT_EQ(render("llama3"),
              "<|start_header_id|>system<|end_header_id|>\n\nYou are kind.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(render("llama2"), "[INST] You are kind.\nHi [/INST]Hello!</s>[INST] How are you? [/INST]");
    EXPECT_EQ(render("llama2-sys"),
              "[INST] <<SYS>>\nYou are kind.\n<</SYS>>\n\nHi [/INST]Hello!</s>[INST] How are you? [/INST]");
    EXPECT_EQ(
        render("llama2-sys-bos"),
        "[INST] <<SYS>>\nYou are kind.\n<</SYS>>\n\nHi [/INST]Hello!</s><s>[INST] How are you? [/INST]");
    EXPECT_EQ(render("zephyr"),
              "<|system|>\nYou are "
              "kind.<|endoftext|>\n<|user|>\nHi<|endoftext|>\n<|assistant|>\nHello!<|endoftext|>\n"
              "<|user|>\nHow are you?<|endoftext|>\n<|assistant|>\n");
    EXPECT_EQ(render("phi3"),
              "<|system|>\nYou are kind.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n"
              "<|user|>\nHow are you?<|end|>\n<|assistant|>\n");
    EXPECT_EQ(
        render("gemma"),
        "<start_of_turn>user\nYou are kind.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
        "<start_of_turn>user\nHow are you?<end_of_turn>\n<start_of_turn>model\n");
    EXPECT_EQ(render("plain"),
              "You are kind.\n\nUser: Hi\nAssistant: Hello!\nUser: How are you?\nAssistant:");
}

TEST(ChatTemplateApply, TrimmingFamiliesTrimAndOthersDoNot) {
    const std::vector<ChatMessage> spaced = {{"user", "  Hi\n"}};
    EXPECT_EQ(ChatTemplate::named("llama3").apply(spaced, false),
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
    EXPECT_EQ(ChatTemplate::named("chatml").apply(spaced, false), "<|im_start|>user\n  Hi\n<|im_end|>\n");
    EXPECT_EQ(ChatTemplate::named("llama2-sys-strip").apply(spaced, false), "[INST] Hi [/INST]");
    EXPECT_EQ(ChatTemplate::named("plain").apply(spaced, true), "User: Hi\nAssistant:");
}

// A vocabulary with ChatML's and GPT-2's end tokens.
const BpeVocab& chat_vocab() {
    static const BpeVocab v(Merges{{"H", "i"}}, {{"<|im_end|>", 3}, {"<|endoftext|>", 3}});
    return v;
}

std::string stream_text(ChatReplyStream& s, const std::vector<int32_t>& ids, bool* done = nullptr) {
    std::string out;
    for (const int32_t id : ids) {
        const ChatReplyStream::Step step = s.push(id);
        out += step.text;
        if (step.done) {
            if (done) *done = true;
            return out;
        }
    }
    if (done) *done = false;
    return out;
}

TEST(ChatReplyStream, EndsAtTheEndOfTurnToken) {
    const Tokenizer tok = tokenizer_test::load(chat_vocab().writer());
    ChatReplyStream s(tok, ChatTemplate::named("chatml"));
    EXPECT_TRUE(
        std::binary_search(s.end_tokens().begin(), s.end_tokens().end(), chat_vocab().id("<|im_end|>")));
    bool done = false;
    std::vector<int32_t> ids = tok.encode("Hi there", false);
    ids.push_back(chat_vocab().id("<|im_end|>"));
    ids.push_back('x');  // never reached
    EXPECT_EQ(stream_text(s, ids, &done), "Hi there");
    EXPECT_TRUE(done);
    EXPECT_EQ(s.reply(), "Hi there");
    // Any end-of-generation token ends the turn too.
    ChatReplyStream t(tok, ChatTemplate::named("chatml"));
    EXPECT_EQ(stream_text(t, {'a', chat_vocab().id("<|endoftext|>")}, &done), "a");
    EXPECT_TRUE(done);
}

TEST(ChatReplyStream, EndTextWithoutATokenIsCutOffAndHeldBackUntilKnown) {
    const Tokenizer tok = tokenizer_test::load(BpeVocab(Merges{}).writer());  // no <|im_end|> token
    ChatReplyStream s(tok, ChatTemplate::named("chatml"));
    EXPECT_EQ(s.push('a').text, "a");
    EXPECT_EQ(s.push('<').text, "") << "could begin <|im_end|>";
    EXPECT_EQ(s.push('b').text, "<b") << "it did not";
    bool done = false;
    EXPECT_EQ(stream_text(s, tok.encode("<|im_x <|im_end|> rest", false), &done), "<|im_x ");
    EXPECT_TRUE(done);
    EXPECT_EQ(s.reply(), "a<b<|im_x ");
    // Stopped for another reason, the held-back text comes out.
    ChatReplyStream t(tok, ChatTemplate::named("chatml"));
    EXPECT_EQ(stream_text(t, tok.encode("ok <|im", false)), "ok ");
    EXPECT_EQ(t.finish(), "<|im");
}

TEST(ChatReplyStream, PlainRepliesSaySomethingFirst) {
    const Tokenizer tok = tokenizer_test::load(chat_vocab().writer());
    ChatReplyStream s(tok, ChatTemplate::named("plain"));
    EXPECT_FALSE(s.may_end());
    const int32_t eog = chat_vocab().id("<|endoftext|>");
    EXPECT_FALSE(s.push(eog).done) << "an end token while the reply is blank does not end it";
    const ChatReplyStream::Step newline = s.push('\n');
    EXPECT_FALSE(newline.done) << "nor does a newline";
    EXPECT_EQ(newline.text, "\n");
    EXPECT_FALSE(s.may_end());
    bool done = false;
    EXPECT_EQ(stream_text(s, tok.encode(" Hi.\nUser: more", false), &done), " Hi.");
    EXPECT_TRUE(done);
    EXPECT_EQ(s.reply(), "\n Hi.");
    ChatReplyStream t(tok, ChatTemplate::named("plain"));
    t.push('x');
    EXPECT_TRUE(t.may_end());
    EXPECT_TRUE(t.push(eog).done);
}

}  // namespace
}  // namespace graphrun
