// runtime/text/chat_template.h — chat templates: a conversation of {role, content} messages as the
// text a chat model was trained on, for the CLI's conversation mode and the server.
//
// graphrun runs no Jinja. A model's tokenizer.chat_template is recognised by the markers llama.cpp
// looks for (llm_chat_detect_template, in its order), and the family is rendered the way
// llama.cpp's built-in formats render it:
//   chatml            <|im_start|>{role}\n{content}<|im_end|>\n ...  <|im_start|>assistant\n
//   llama3            <|start_header_id|>{role}<|end_header_id|>\n\n{trim content}<|eot_id|> ...
//                     <|start_header_id|>assistant<|end_header_id|>\n\n   (BOS comes from the tokenizer)
//   llama2 (and -sys, -sys-bos, -sys-strip)   [INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]{reply}</s>
//   zephyr            <|{role}|>\n{content}<|endoftext|>\n ...  <|assistant|>\n
//   phi3              <|{role}|>\n{content}<|end|>\n ...  <|assistant|>\n
//   gemma             <start_of_turn>{user|model}\n{trim content}<end_of_turn>\n ... <start_of_turn>model\n
//                     (a system message is put in front of the first user message)
//   plain             the fallback for models without a template (base models such as the shipped
//                     KJV model and stories260K): "{system}\n\n" then "User: {trim content}\n" and
//                     "Assistant: {trim content}\n" lines, ending "Assistant:". A reply ends at a
//                     newline or end-of-generation token, but only once it has said something.
// See docs/tokenizers.md.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/tokenizer.h"

namespace graphrun {

class GgufFile;

class ChatTemplateError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A call an assistant message made (OpenAI's tool_calls[i]): `arguments` is JSON text, as it came.
struct ChatToolCall {
    std::string id;
    std::string name;
    std::string arguments;
};

// A function the model may call (OpenAI's tools[i].function); `parameters` is its JSON schema as
// text, "" when it takes none.
struct ChatTool {
    std::string name;
    std::string description;
    std::string parameters;
};

struct ChatMessage {
    std::string role;  // "system", "user", "assistant" or "tool" (a tool's result)
    std::string content;
    std::vector<ChatToolCall> tool_calls{};  // assistant: the calls that follow its content
    std::string tool_call_id{};              // tool: the call it answers
};

enum class ChatFormat {
    ChatMl,
    Llama3,
    Llama2,
    Llama2Sys,
    Llama2SysBos,
    Llama2SysStrip,
    Zephyr,
    Phi3,
    Gemma,
    Plain
};

class ChatTemplate {
  public:
    // The file's tokenizer.chat_template, recognised as llama.cpp does; no template gives the plain
    // fallback. A template graphrun cannot render is a ChatTemplateError naming the family llama.cpp
    // sees in it (or saying it sees none) and the names --chat-template takes.
    static ChatTemplate from_gguf(const GgufFile& file);
    // The same for the text of a template, or a name from names().
    static ChatTemplate detect(std::string_view source);
    // A family by its llama.cpp name (chatml, llama3, ...) or "plain"; throws for other names.
    static ChatTemplate named(std::string_view name);
    static const std::vector<std::string>& names();

    ChatFormat format() const { return format_; }
    const std::string& name() const;

    // The conversation as text. With add_generation_prompt the text ends where the assistant's
    // reply begins. Roles other than system/user/assistant/tool are written as given. Tools, tool
    // calls and tool results are written in the family's tool format (runtime/text/tool_calls.h).
    std::string apply(std::span<const ChatMessage> messages, bool add_generation_prompt,
                      std::span<const ChatTool> tools = {}) const;

    // The text that closes the assistant's turn (<|im_end|>, <|eot_id|>, ...; "\n" for plain). A
    // reply stops at the token with this text, or at the text itself when no token has it.
    const std::string& end_of_turn() const;

    // Plain only: the reply may not end before it holds a character other than whitespace.
    bool reply_must_say_something() const { return format_ == ChatFormat::Plain; }

  private:
    explicit ChatTemplate(ChatFormat format) : format_(format) {}
    ChatFormat format_;
};

// Follows one assistant reply token by token: the text to show (whole UTF-8 characters only) and
// where the turn ends — at an end-of-generation token of the vocabulary, at the template's
// end-of-turn token, or at its end-of-turn text when no token has it (the text is cut off, and
// text that could be its beginning is held back until it is known not to be).
class ChatReplyStream {
  public:
    ChatReplyStream(const Tokenizer& tokenizer, const ChatTemplate& chat_template);

    struct Step {
        std::string text;   // what this token adds to the shown reply
        bool done = false;  // the turn ended with this token (which is not part of the reply)
    };
    Step push(int32_t id);
    std::string finish();  // generation stopped for another reason: the text held back

    // The tokens that end the turn, and whether the reply may end now (false only while a plain
    // reply is still blank: the caller keeps these tokens from being sampled).
    const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
    bool may_end() const;
    const std::string& reply() const { return reply_; }  // the reply's text so far, shown or not

  private:
    std::string release(bool final);
    ChatTemplate template_;
    std::vector<int32_t> end_tokens_;  // sorted
    std::string end_text_;             // set when no token has the end-of-turn text
    TokenTextStream text_;
    std::string reply_;  // text of the reply (without the end-of-turn text)
    size_t shown_ = 0;   // bytes of reply_ already returned
};

}  // namespace graphrun
