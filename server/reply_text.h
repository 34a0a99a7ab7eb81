// server/reply_text.h — generated tokens as the text a client is shown, piece by piece.
//
//   ReplyText text(tokenizer, &chat_template, {"\n\n"});   // nullptr: a completion, no template
//   for (token : tokens) { auto step = text.push(token); send(step.text); if (step.done) break; }
//   send(text.finish());                                   // generation ended for another reason
//
// Every piece is whole UTF-8 characters (a character split over byte tokens waits for its last
// byte). A chat reply ends at the template's end of turn (runtime/text/chat_template.h). A stop
// string ends the text before it; text that could be the beginning of a stop string is held back
// until the next tokens show that it is not, so no client ever sees part of a stop string.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/text/chat_template.h"
#include "runtime/text/tokenizer.h"

namespace graphrun::server {

class ReplyText {
  public:
    ReplyText(const Tokenizer& tokenizer, const ChatTemplate* chat_template, std::vector<std::string> stop);

    struct Step {
        std::string text;   // what this token adds to the shown text
        bool done = false;  // a stop string or the end of the turn was reached
    };
    Step push(int32_t token);
    std::string finish();  // what is held back, when generation stopped for another reason

    const std::string& shown() const { return shown_; }  // the text shown so far
    // Bytes of text the tokens pushed so far gave, before any cut at a stop string: where the text of
    // the next token will begin. A token whose text begins at or past the final shown().size() is
    // no part of the answer (it carried a stop string or the end of the turn).
    size_t received() const { return received_; }

  private:
    std::string release(bool final);
    std::optional<ChatReplyStream> chat_;
    std::optional<TokenTextStream> plain_;
    std::vector<std::string> stop_;
    std::string pending_;  // text not shown yet (a possible stop string's beginning)
    std::string shown_;
    size_t received_ = 0;
    bool done_ = false;
};

}  // namespace graphrun::server
