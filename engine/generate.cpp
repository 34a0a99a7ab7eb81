// engine/generate.cpp — the decode loop, plain or speculative (one loop: without a proposer every draft
// is empty and each pass is the one fed-back token).
#include "engine/generate.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace graphrun::graph {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Forgets the positions of guesses past `held` (none in plain decoding: then nothing is done).
void drop_guesses(Session& session, int64_t held) {
    if (session.n_past() > held) session.truncate(held);
}
}  // namespace

GenerationStats generate(Session& session, Sampler& sampler, std::span<const int32_t> prompt,
                         int64_t n_predict, const std::function<bool(int32_t token)>& on_token,
                         Profiler* profiler, DraftProposer* proposer) {
    GenerationStats stats;
    if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty");
    for (int32_t id : prompt) sampler.accept(id);

    if (profiler) profiler->set_section("prompt");
    session.set_timeline(profiler);
    struct StopRecording {
        Session& session;
        ~StopRecording() { session.set_timeline(nullptr); }
    } stop_recording{session};
    auto start = std::chrono::steady_clock::now();
    // logits (1 + draft.size(), n_vocab): the row after the last fed-back token, then one after each guess.
    std::span<const float> logits = session.eval(prompt, Session::Logits::Last);
    stats.prompt_seconds = seconds_since(start);
    stats.prompt_tokens = int64_t(prompt.size());

    if (profiler) profiler->set_section("decode");
    start = std::chrono::steady_clock::now();
    const size_t n_vocab = size_t(session.n_vocab());
    std::vector<int32_t> history;  // what the proposer looks at: the prompt, then every generated token
    if (proposer) history.assign(prompt.begin(), prompt.end());
    std::vector<int32_t> draft;  // the guesses evaluated after the last fed-back token
    std::vector<int32_t> batch;  // (1 + draft.size()): the token fed back, then the guesses
    size_t row = 0;              // the row of `logits` the next token is sampled from
    while (n_predict < 0 || stats.generated_tokens < n_predict) {
        const int32_t token = sampler.sample(logits.subspan(row * n_vocab, n_vocab));
        sampler.accept(token);
        ++stats.generated_tokens;
        if (proposer) history.push_back(token);
        // The positions plain decoding holds now: every token before this one. Guesses past the row
        // sampled are in the cache too, and leave it whenever the loop does not go on to them.
        const int64_t held = session.n_past() - int64_t(draft.size() - row);
        const bool guessed = row < draft.size() && token == draft[row];
        if (!on_token(token)) {
            drop_guesses(session, held);
            break;
        }
        stats.context_full = held >= session.n_ctx();
        if (stats.generated_tokens == n_predict || stats.context_full) {
            drop_guesses(session, held);
            stats.unevaluated_token = token;
            break;
        }
        ++stats.decode_steps;
        if (guessed) {  // evaluated already, at the next position: its logits are the next row
            ++row;
            ++stats.draft_accepted;
            continue;
        }
        if (!draft.empty()) proposer->observe(int64_t(draft.size()), int64_t(row));
        drop_guesses(session, held);
        batch.assign(1, token);
        draft.clear();
        if (proposer) {
            // Room for guesses: the context past this token, the batch, and the tokens still to come
            // after this one (a guess beyond the last of them could never be used).
            int64_t room = std::min(session.n_ctx() - held - 1, session.engine().max_batch() - 1);
            if (n_predict >= 0) room = std::min(room, n_predict - stats.generated_tokens - 1);
            if (room > 0) {
                proposer->propose(history, room, draft);
                if (int64_t(draft.size()) > room) draft.resize(size_t(room));
            }
            batch.insert(batch.end(), draft.begin(), draft.end());
            stats.draft_proposed += int64_t(draft.size());
        }
        logits = session.eval(batch);
        row = 0;
        ++stats.decode_passes;
    }
    stats.decode_seconds = seconds_since(start);
    return stats;
}

}  // namespace graphrun::graph
