// runtime/text/tool_calls.h — tool calling in each chat family's own format: the tools and the calls
// and results of a conversation written into its turns, the calls read back out of a reply, and the
// grammar that holds a reply to calls of the given functions (tool_choice "required" or a name).
//
//   chatml (Qwen2, Qwen3, Hermes): tools as <tools> JSON in the system turn; a call is
//       <tool_call>\n{"name": N, "arguments": {..}}\n</tool_call>; results are a user turn of
//       <tool_response>\n..\n</tool_response> blocks
//   llama3 (3.1, 3.2): "Environment: ipython" in the system turn, the tools in the first user turn;
//       a call is {"name": N, "parameters": {..}}, one object a line; each result an ipython turn
//   any other (generic): one tool a line in the system turn; a call is
//       <tool_call>{"name": N, "arguments": {..}}</tool_call> on one line (the plain template ends
//       a reply at "\n"); results are a user turn of <tool_response>..</tool_response>
//
// The texts are those of Qwen2.5's and Llama 3.1's Jinja templates (tools as their tojson writes
// them); the generic one is graphrun's. A call is read back only when it is well formed: valid JSON,
// a function of the request's tools, arguments an object. Anything else stays text of the reply.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/chat_template.h"

namespace graphrun {

enum class ToolCallStyle { Hermes, Llama3, OneLine };
ToolCallStyle tool_call_style(ChatFormat format);

// The conversation with its tools, tool calls and tool results written as plain turns of the
// family (roles system, user, assistant; llama3: ipython too). ChatTemplate::apply calls this.
std::vector<ChatMessage> tool_turns(ChatFormat format, std::span<const ChatMessage> messages,
                                    std::span<const ChatTool> tools);

// The calls of a reply (at most max_calls, in order; ids empty, arguments compact JSON text) and the
// text before the first of them. No well-formed call: content is the whole reply.
struct ToolCallReply {
    std::string content;
    std::vector<ChatToolCall> calls;
};
ToolCallReply parse_tool_calls(ChatFormat format, std::string_view reply, std::span<const ChatTool> tools,
                               size_t max_calls);

// GBNF for a reply of 1 to max_calls calls, each of one of `tools`, whose arguments keep to that
// function's parameter schema (json_schema.h), written in the family's format with compact
// whitespace. Throws JsonSchemaError for a schema the converter refuses.
std::string tool_call_gbnf(ChatFormat format, std::span<const ChatTool> tools, size_t max_calls);

// A reply as it streams: the text that can be shown now (not a call, nor the start of one), and at
// the end the calls and the rest of the text.
class ToolCallStream {
  public:
    ToolCallStream(ChatFormat format, std::vector<ChatTool> tools, size_t max_calls)
        : format_(format), tools_(std::move(tools)), max_calls_(max_calls) {}
    std::string push(std::string_view text);  // what may be shown of the reply now
    // The reply ended: its calls, and as content the text not shown yet that is no part of them.
    ToolCallReply finish();

  private:
    ChatFormat format_;
    std::vector<ChatTool> tools_;
    size_t max_calls_;
    std::string reply_;
    size_t shown_ = 0;
    bool holding_ = false;  // a call (or what may begin one) has started: nothing more is shown
};

}  // namespace graphrun
