// server/reply_text.cpp — see reply_text.h.
#include "server/reply_text.h"

#include <algorithm>

namespace graphrun::server {

ReplyText::ReplyText(const Tokenizer& tokenizer, const ChatTemplate* chat_template, std::vector<std::string> stop)
    : stop_(std::move(stop)) {
    if (chat_template)
        chat_.emplace(tokenizer, *chat_template);
    else
        plain_.emplace(tokenizer);
}

ReplyText::Step ReplyText::push(int32_t token) {
    if (done_) return {"", true};
    bool turn_ended = false;
    if (chat_) {
        const ChatReplyStream::Step step = chat_->push(token);
        pending_ += step.text;
        received_ += step.text.size();
        turn_ended = step.done;
    } else {
        const std::string text = plain_->push(token);
        pending_ += text;
        received_ += text.size();
    }
    // The earliest stop string wins; the text from it on is never shown.
    size_t cut = std::string::npos;
    for (const std::string& s : stop_) cut = std::min(cut, pending_.find(s));
    if (cut != std::string::npos) {
        pending_.resize(cut);
        done_ = true;
        return {release(true), true};
    }
    done_ = turn_ended;
    return {release(turn_ended), turn_ended};
}

std::string ReplyText::finish() {
    if (!done_) {
        pending_ += chat_ ? chat_->finish() : plain_->flush();
        done_ = true;
    }
    return release(true);
}

// All of pending_ but (unless final) its longest tail that begins a stop string.
std::string ReplyText::release(bool final) {
    size_t hold = 0;
    if (!final)
        for (const std::string& s : stop_)
            for (size_t n = std::min(s.size() - 1, pending_.size()); n > hold; --n)
                if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
                    hold = n;
                    break;
                }
    // A held tail may start inside a UTF-8 character only if a stop string does; keep characters whole.
    size_t end = pending_.size() - hold;
    while (end > 0 && end < pending_.size() && (uint8_t(pending_[end]) & 0xC0) == 0x80) --end;
    std::string out = pending_.substr(0, end);
    pending_.erase(0, end);
    shown_ += out;
    return out;
}

}  // namespace graphrun::server
