// runtime/text/chat_template.cpp — recognising and rendering chat templates; see chat_template.h.
#include "runtime/text/chat_template.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "runtime/gguf.h"
#include "runtime/text/tool_calls.h"

namespace graphrun {

namespace {

constexpr const char* kTemplateKey = "tokenizer.chat_template";

struct FormatInfo {
    ChatFormat format;
    const char* name;         // llama.cpp's name for the family ("plain" is graphrun's)
    const char* end_of_turn;  // the text that closes an assistant turn
};

constexpr FormatInfo kFormats[] = {
    {ChatFormat::ChatMl, "chatml", "<|im_end|>"},
    {ChatFormat::Llama3, "llama3", "<|eot_id|>"},
    {ChatFormat::Llama2, "llama2", "</s>"},
    {ChatFormat::Llama2Sys, "llama2-sys", "</s>"},
    {ChatFormat::Llama2SysBos, "llama2-sys-bos", "</s>"},
    {ChatFormat::Llama2SysStrip, "llama2-sys-strip", "</s>"},
    {ChatFormat::Zephyr, "zephyr", "<|endoftext|>"},
    {ChatFormat::Phi3, "phi3", "<|end|>"},
    {ChatFormat::Gemma, "gemma", "<end_of_turn>"},
    {ChatFormat::Plain, "plain", "\n"},
};

size_t index_of(ChatFormat f) {
    return size_t(std::find_if(std::begin(kFormats), std::end(kFormats),
                               [f](const FormatInfo& i) { return i.format == f; }) -
                  std::begin(kFormats));
}

// What llama.cpp's detection makes of a template: a family graphrun renders, or the llama.cpp name
// of one it does not ("" when llama.cpp finds none of the families checked here).
struct Detected {
    std::optional<ChatFormat> format;
    std::string other;
};

// llm_chat_detect_template's checks, in its order, up to Llama 3: the families before Llama 3 in
// that order are tested too, because their markers decide which family a template is.
Detected detect_family(std::string_view t) {
    const auto has = [&](std::string_view s) { return t.find(s) != std::string_view::npos; };
    const auto is = [](ChatFormat f) { return Detected{f, ""}; };
    const auto unsupported = [](const char* name) { return Detected{std::nullopt, name}; };
    if (has("<|im_start|>")) {
        if (has("<|im_sep|>")) return unsupported("phi4");
        if (has("<end_of_utterance>")) return unsupported("smolvlm");
        return is(ChatFormat::ChatMl);
    }
    if (t.substr(0, 7) == "mistral" || has("[INST]")) {
        if (has("[SYSTEM_PROMPT]")) return unsupported("mistral-v7");
        if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]"))
            return unsupported(has(" [INST]")      ? "mistral-v1"
                               : has("\"[INST]\"") ? "mistral-v3-tekken"
                                                   : "mistral-v3");
        if (has("content.strip()")) return is(ChatFormat::Llama2SysStrip);
        if (has("bos_token + '[INST]")) return is(ChatFormat::Llama2SysBos);
        if (has("<<SYS>>")) return is(ChatFormat::Llama2Sys);
        return is(ChatFormat::Llama2);
    }
    if (has("<|assistant|>") && has("<|end|>")) return is(ChatFormat::Phi3);
    if (has("[gMASK]<sop>")) return unsupported("chatglm4");
    if (has("<|assistant|>") && has("<|user|>")) {
        if (has("<|tool_declare|>")) return unsupported("exaone-moe");
        return unsupported(has("</s>") ? "falcon3" : "glmedge");
    }
    if (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>")) return unsupported("glmedge");
    if (has("<|user|>") && has("<|endoftext|>")) return is(ChatFormat::Zephyr);
    if (has("bos_token + message['role']")) return unsupported("monarch");
    if (has("<start_of_turn>")) return is(ChatFormat::Gemma);
    if (has("'\\n\\nAssistant: ' + eos_token")) return unsupported("orion");
    if (has("GPT4 Correct ")) return unsupported("openchat");
    if (has("USER: ") && has("ASSISTANT: ")) return unsupported(has("SYSTEM: ") ? "vicuna-orca" : "vicuna");
    if (has("### Instruction:") && has("<|EOT|>")) return unsupported("deepseek");
    if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return unsupported("command-r");
    if (has("<|start_header_id|>") && has("<|end_header_id|>")) return is(ChatFormat::Llama3);
    return {};
}

std::string supported_names() {
    std::string s;
    for (const FormatInfo& f : kFormats) s += std::string(s.empty() ? "" : ", ") + f.name;
    return s;
}

// Leading and trailing ASCII whitespace removed, as llama.cpp's trim().
std::string trim(std::string_view s) {
    const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return std::string(s);
}

void render_llama2(std::ostringstream& out, std::span<const ChatMessage> messages, ChatFormat f) {
    const bool system_supported = f != ChatFormat::Llama2;
    const bool bos_inside_history = f == ChatFormat::Llama2SysBos;
    const bool strip = f == ChatFormat::Llama2SysStrip;
    bool inside_turn = true;  // the first [INST] is written here; BOS comes from the tokenizer
    out << "[INST] ";
    for (const ChatMessage& m : messages) {
        const std::string content = strip ? trim(m.content) : m.content;
        if (!inside_turn) {
            inside_turn = true;
            out << (bos_inside_history ? "<s>[INST] " : "[INST] ");
        }
        if (m.role == "system") {
            if (system_supported)
                out << "<<SYS>>\n" << content << "\n<</SYS>>\n\n";
            else
                out << content << "\n";  // kept, as the start of the first user message
        } else if (m.role == "user") {
            out << content << " [/INST]";
        } else {
            out << content << "</s>";
            inside_turn = false;
        }
    }
}

void render_gemma(std::ostringstream& out, std::span<const ChatMessage> messages,
                  bool add_generation_prompt) {
    std::string system;  // Gemma has no system turn: it goes in front of the next user message
    for (const ChatMessage& m : messages) {
        if (m.role == "system") {
            system += trim(m.content);
            continue;
        }
        const std::string role = m.role == "assistant" ? "model" : m.role;
        out << "<start_of_turn>" << role << "\n";
        if (!system.empty() && role != "model") {
            out << system << "\n\n";
            system.clear();
        }
        out << trim(m.content) << "<end_of_turn>\n";
    }
    if (add_generation_prompt) out << "<start_of_turn>model\n";
}

void render_plain(std::ostringstream& out, std::span<const ChatMessage> messages,
                  bool add_generation_prompt) {
    for (const ChatMessage& m : messages) {
        if (m.role == "system") {
            out << trim(m.content) << "\n\n";
        } else {
            const std::string role = m.role == "user" ? "User" : m.role == "assistant" ? "Assistant" : m.role;
            out << role << ": " << trim(m.content) << "\n";
        }
    }
    // No space after the colon: the reply's first token brings its own (" Once", "Ġthe").
    if (add_generation_prompt) out << "Assistant:";
}

}  // namespace

ChatTemplate ChatTemplate::from_gguf(const GgufFile& file) {
    const GgufValue* v = file.find(kTemplateKey);
    if (!v) return ChatTemplate(ChatFormat::Plain);
    if (v->type != GgufType::STRING)
        throw ChatTemplateError(file.path() + ": " + kTemplateKey + " has type " + gguf_type_name(v->type) +
                                ", expected string");
    try {
        return detect(v->s);
    } catch (const ChatTemplateError& e) {
        throw ChatTemplateError(file.path() + ": " + kTemplateKey + " " + e.what());
    }
}

ChatTemplate ChatTemplate::detect(std::string_view source) {
    for (const FormatInfo& f : kFormats)
        if (source == f.name) return ChatTemplate(f.format);
    const Detected d = detect_family(source);
    if (d.format) return ChatTemplate(*d.format);
    const std::string start(source.substr(0, 60));
    throw ChatTemplateError(
        (d.other.empty()
             ? "is not a template of a family llama.cpp's detection knows"
             : "is a '" + d.other + "' template (as llama.cpp detects it), which graphrun does not render") +
        " (it begins '" + start + (source.size() > 60 ? "...'" : "'") +
        "); choose a format with --chat-template: " + supported_names());
}

ChatTemplate ChatTemplate::named(std::string_view name) {
    for (const FormatInfo& f : kFormats)
        if (name == f.name) return ChatTemplate(f.format);
    throw ChatTemplateError("'" + std::string(name) + "' is not a chat format graphrun renders; it renders " +
                            supported_names());
}

const std::vector<std::string>& ChatTemplate::names() {
    static const std::vector<std::string> all = [] {
        std::vector<std::string> v;
        for (const FormatInfo& f : kFormats) v.push_back(f.name);
        return v;
    }();
    return all;
}

const std::string& ChatTemplate::name() const {
    return names()[index_of(format_)];
}

const std::string& ChatTemplate::end_of_turn() const {
    static const std::vector<std::string> texts = [] {
        std::vector<std::string> v;
        for (const FormatInfo& f : kFormats) v.push_back(f.end_of_turn);
        return v;
    }();
    return texts[index_of(format_)];
}

std::string ChatTemplate::apply(std::span<const ChatMessage> in, bool add_generation_prompt,
                                std::span<const ChatTool> tools) const {
    // Tools, calls and results become the turns of the family's tool format first.
    const bool any_tool = !tools.empty() || std::any_of(in.begin(), in.end(), [](const ChatMessage& m) {
        return m.role == "tool" || !m.tool_calls.empty();
    });
    const std::vector<ChatMessage> rewritten = any_tool ? tool_turns(format_, in, tools) : std::vector<ChatMessage>();
    const std::span<const ChatMessage> messages = any_tool ? std::span<const ChatMessage>(rewritten) : in;
    std::ostringstream out;
    switch (format_) {
        case ChatFormat::ChatMl:
            for (const ChatMessage& m : messages)
                out << "<|im_start|>" << m.role << "\n" << m.content << "<|im_end|>\n";
            if (add_generation_prompt) out << "<|im_start|>assistant\n";
            break;
        case ChatFormat::Llama3:
            for (const ChatMessage& m : messages)
                out << "<|start_header_id|>" << m.role << "<|end_header_id|>\n\n"
                    << trim(m.content) << "<|eot_id|>";
            if (add_generation_prompt) out << "<|start_header_id|>assistant<|end_header_id|>\n\n";
            break;
        case ChatFormat::Llama2:
        case ChatFormat::Llama2Sys:
        case ChatFormat::Llama2SysBos:
        case ChatFormat::Llama2SysStrip:
            render_llama2(out, messages, format_);  // ends after [/INST] with or without the prompt
            break;
        case ChatFormat::Zephyr:
            for (const ChatMessage& m : messages)
                out << "<|" << m.role << "|>\n" << m.content << "<|endoftext|>\n";
            if (add_generation_prompt) out << "<|assistant|>\n";
            break;
        case ChatFormat::Phi3:
            for (const ChatMessage& m : messages) out << "<|" << m.role << "|>\n" << m.content << "<|end|>\n";
            if (add_generation_prompt) out << "<|assistant|>\n";
            break;
        case ChatFormat::Gemma:
            render_gemma(out, messages, add_generation_prompt);
            break;
        case ChatFormat::Plain:
            render_plain(out, messages, add_generation_prompt);
            break;
    }
    return out.str();
}

// ---- ChatReplyStream ----

ChatReplyStream::ChatReplyStream(const Tokenizer& tokenizer, const ChatTemplate& chat_template)
    : template_(chat_template), text_(tokenizer) {
    const auto eog = tokenizer.end_of_generation();
    end_tokens_.assign(eog.begin(), eog.end());
    // The end-of-turn text as one token, if the vocabulary has it (parsed as a special token).
    const std::string& eot = chat_template.end_of_turn();
    const std::vector<int32_t> ids = tokenizer.encode(eot, /*add_bos=*/false, /*parse_special=*/true);
    if (ids.size() == 1 && tokenizer.token_text(ids[0]) == eot) {
        end_tokens_.push_back(ids[0]);
    } else {
        end_text_ = eot;
    }
    std::sort(end_tokens_.begin(), end_tokens_.end());
    end_tokens_.erase(std::unique(end_tokens_.begin(), end_tokens_.end()), end_tokens_.end());
}

bool ChatReplyStream::may_end() const {
    if (!template_.reply_must_say_something()) return true;
    return std::any_of(reply_.begin(), reply_.end(),
                       [](char c) { return c != ' ' && (c < '\t' || c > '\r'); });
}

ChatReplyStream::Step ChatReplyStream::push(int32_t id) {
    if (std::binary_search(end_tokens_.begin(), end_tokens_.end(), id) && may_end()) {
        reply_ += text_.flush();
        return {release(true), true};
    }
    reply_ += text_.push(id);
    if (!end_text_.empty()) {
        // The end text counts only after the reply has said something (for plain, a leading
        // newline is part of the reply, which the template trims).
        size_t from = shown_;
        if (template_.reply_must_say_something()) {
            const size_t first = reply_.find_first_not_of(" \t\n\v\f\r");
            from = std::max(from, first == std::string::npos ? reply_.size() : first);
        }
        const size_t at = reply_.find(end_text_, from);
        if (at != std::string::npos) {
            reply_.resize(at);
            return {release(true), true};
        }
    }
    return {release(false), false};
}

std::string ChatReplyStream::finish() {
    reply_ += text_.flush();
    return release(true);
}

// The part of the reply not shown yet, less (unless final) a tail that could begin the end text.
std::string ChatReplyStream::release(bool final) {
    size_t end = reply_.size();
    if (!final && !end_text_.empty()) {
        for (size_t keep = std::min(end_text_.size() - 1, end - shown_); keep > 0; --keep) {
            if (reply_.compare(end - keep, keep, end_text_, 0, keep) == 0) {
                end -= keep;
                break;
            }
        }
    }
    std::string out = reply_.substr(shown_, end - shown_);
    shown_ = end;
    return out;
}

}  // namespace graphrun
