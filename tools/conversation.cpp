// tools/conversation.cpp — see conversation.h.
#include "tools/conversation.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "runtime/text/chat_template.h"
#include "runtime/text/tokenizer.h"

namespace graphrun::tools {

namespace {

std::string id_list(std::span<const int32_t> ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

class Conversation {
  public:
    Conversation(graph::Session& session, const Tokenizer& tokenizer, ChatTemplate chat_template,
                 const ConversationOptions& options)
        : session_(session),
          tokenizer_(tokenizer),
          template_(chat_template),
          options_(options),
          sampler_(options.sampling, int32_t(session.n_vocab())) {
        if (!options.system.empty()) messages_.push_back({"system", options.system});
    }

    void turn(const std::string& user_text);

  private:
    // A run of the KV cache: the tokens of one piece of the rendered conversation and its text.
    struct Chunk {
        std::string text;
        std::vector<int32_t> ids;
    };

    bool feed_prompt();
    void reply();
    std::span<const float> eval(const std::vector<int32_t>& ids) {
        const std::span<const float> logits = session_.eval(ids);
        return logits.subspan(logits.size() - size_t(session_.n_vocab()));
    }

    graph::Session& session_;
    const Tokenizer& tokenizer_;
    ChatTemplate template_;
    const ConversationOptions& options_;
    Sampler sampler_;
    std::vector<ChatMessage> messages_;
    std::vector<Chunk> cached_;  // what the KV cache holds, in order (their ids fill n_past)
    std::span<const float> logits_;
    int turn_ = 0;
};

void Conversation::turn(const std::string& user_text) {
    ++turn_;
    messages_.push_back({"user", user_text});
    const size_t first_kept = options_.system.empty() ? 0 : 1;  // the system message stays
    bool fits = feed_prompt();
    if (!fits && messages_.size() > first_kept + 1) {
        std::fprintf(stderr,
                     "graphrun: the conversation no longer fits the context of %lld tokens: "
                     "starting over from this message\n",
                     (long long)session_.n_ctx());
        messages_.erase(messages_.begin() + long(first_kept), messages_.end() - 1);
        cached_.clear();
        session_.reset();
        fits = feed_prompt();
    }
    if (!fits) {
        std::fprintf(stderr,
                     "graphrun: this message does not fit the context of %lld tokens on its own "
                     "(raise -c); it was dropped\n",
                     (long long)session_.n_ctx());
        messages_.pop_back();
        return;
    }
    reply();
}

// Renders the conversation, keeps the cached chunks that still spell its beginning, and evaluates
// the rest. False (and nothing changed) when it does not fit the context with room for a reply.
bool Conversation::feed_prompt() {
    const std::string target = template_.apply(messages_, /*add_generation_prompt=*/true);
    size_t pos = 0, keep = 0;
    int64_t kept_tokens = 0;
    for (; keep < cached_.size() && target.compare(pos, cached_[keep].text.size(), cached_[keep].text) == 0;
         ++keep) {
        pos += cached_[keep].text.size();
        kept_tokens += int64_t(cached_[keep].ids.size());
    }
    std::vector<Chunk> fresh;
    if (kept_tokens == 0 && tokenizer_.add_bos()) fresh.push_back({"", {tokenizer_.bos()}});
    fresh.push_back(
        {target.substr(pos), tokenizer_.encode(target.substr(pos), false, /*parse_special=*/true)});
    if (fresh.back().ids.empty() && kept_tokens > 0) {
        // Nothing new to say (cannot happen with a generation prompt), but logits are needed: the
        // last cached token is evaluated again.
        fresh.insert(fresh.begin(), cached_[keep - 1]);
        kept_tokens -= int64_t(cached_[--keep].ids.size());
    }
    int64_t n_new = 0;
    for (const Chunk& c : fresh) n_new += int64_t(c.ids.size());
    if (n_new == 0) throw std::logic_error("[conversation] the rendered conversation is empty");
    if (kept_tokens + n_new + 1 > session_.n_ctx()) return false;

    session_.truncate(kept_tokens);
    cached_.resize(keep);
    std::vector<int32_t> ids;
    for (Chunk& c : fresh) {
        ids.insert(ids.end(), c.ids.begin(), c.ids.end());
        cached_.push_back(std::move(c));
    }
    for (const int32_t id : ids) sampler_.accept(id);
    logits_ = eval(ids);
    if (options_.verbose_prompt) {
        std::vector<int32_t> context;
        for (const Chunk& c : cached_) context.insert(context.end(), c.ids.begin(), c.ids.end());
        std::fprintf(stderr, "graphrun: turn %d: kept %lld cached tokens, context %s\n", turn_,
                     (long long)kept_tokens, id_list(context).c_str());
    }
    return true;
}

// Samples until the end of the turn. The token that ends it is not evaluated: the next turn's
// rendering brings the end-of-turn text, and it is evaluated then.
void Conversation::reply() {
    ChatReplyStream stream(tokenizer_, template_);
    std::vector<float> masked;
    std::vector<int32_t> sampled;
    bool done = false;
    sampler_.restart_grammar();  // each reply is one match of --grammar / --json-schema
    while (options_.n_predict < 0 || int64_t(sampled.size()) < options_.n_predict) {
        std::span<const float> row = logits_;
        if (!stream.may_end()) {  // a plain reply says something before it may end
            masked.assign(row.begin(), row.end());
            for (const int32_t id : stream.end_tokens())
                masked[size_t(id)] = -std::numeric_limits<float>::infinity();
            row = masked;
        }
        const int32_t id = sampler_.sample(row);
        sampler_.accept(id);
        sampled.push_back(id);
        const ChatReplyStream::Step step = stream.push(id);
        std::fputs(step.text.c_str(), stdout);
        std::fflush(stdout);
        if ((done = step.done)) break;
        if (session_.n_past() >= session_.n_ctx()) {
            std::fprintf(stderr, "\ngraphrun: the context of %lld tokens is full: the reply was cut off\n",
                         (long long)session_.n_ctx());
            break;
        }
        logits_ = eval({id});
        cached_.push_back({tokenizer_.token_to_piece(id), {id}});
    }
    if (!done) std::fputs(stream.finish().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (options_.verbose_prompt)
        std::fprintf(stderr, "graphrun: turn %d: reply %s\n", turn_, id_list(sampled).c_str());
    messages_.push_back({"assistant", stream.reply()});
}

}  // namespace

void run_conversation(graph::Session& session, const ConversationOptions& options, std::istream& in) {
    const Tokenizer tokenizer = [&] {
        try {
            return Tokenizer::from_gguf(session.model().file());
        } catch (const TokenizerError& e) {
            throw std::runtime_error(std::string("--conversation needs the model's tokenizer: ") + e.what());
        }
    }();
    const ChatTemplate chat_template = options.chat_template.empty()
                                           ? ChatTemplate::from_gguf(session.model().file())
                                           : ChatTemplate::named(options.chat_template);
    std::fprintf(stderr, "graphrun: conversation in the '%s' chat format%s; end it with Ctrl-D\n",
                 chat_template.name().c_str(),
                 chat_template.format() == ChatFormat::Plain ? " (the model has no chat template)" : "");
    Conversation conversation(session, tokenizer, chat_template, options);
    if (!options.first_message.empty()) {
        std::fprintf(stderr, "> %s\n", options.first_message.c_str());
        conversation.turn(options.first_message);
    }
    std::string line;
    while (true) {
        std::fputs("> ", stderr);
        std::fflush(stderr);
        if (!std::getline(in, line)) break;
        if (line.empty()) continue;
        conversation.turn(line);
    }
    std::fputs("\n", stderr);
}

}  // namespace graphrun::tools
