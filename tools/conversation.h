// tools/conversation.h — `graphrun --conversation`: chat turns over one KV cache.
//
// Each user line becomes a message; the whole conversation is rendered by the chat template
// (runtime/text/chat_template.h), and only the text after what the cache already holds is
// tokenized (specials parsed) and evaluated. The reply streams until the template's end of turn
// (or an end-of-generation token, or -n tokens) and joins the conversation. Should the template
// render the history differently from what was generated (Llama 3 trims replies), the cache is
// rewound to where the two part, so the cache always holds the rendered conversation.
#pragma once

#include <cstdint>
#include <istream>
#include <string>

#include "engine/session.h"
#include "runtime/text/sampler.h"

namespace graphrun::tools {

struct ConversationOptions {
    std::string system;           // --system: the system message ("" for none)
    std::string chat_template;    // --chat-template NAME; "" takes the model's (plain if it has none)
    std::string first_message;    // -p / -f: the first user message, before any read from `in`
    int64_t n_predict = -1;       // tokens per reply at most; < 0: until the end of turn or a full context
    bool verbose_prompt = false;  // stderr: each turn's context and reply token ids
    SamplerParams sampling;
};

// Reads user lines from `in` until it ends (prompting with "> " on stderr), replies on stdout.
void run_conversation(graph::Session& session, const ConversationOptions& options, std::istream& in);

}  // namespace graphrun::tools
