// runtime/text/sampler.cpp — the sampling stages and the chain (see sampler.h for the semantics).
#include "runtime/text/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace graphrun {

namespace {

// Descending logit, ties by ascending id: a total order, so partial_sort and sort give the same
// prefix on every platform (std::sort alone leaves equal logits in unspecified order).
bool higher(const TokenCandidate& a, const TokenCandidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

std::string fmt(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);  // "0.500000" -> "0.5"
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

[[noreturn]] void bad_param(const std::string& field, const std::string& value, const std::string& expected) {
    throw std::invalid_argument("[sampler] " + field + " is " + value + ", expected " + expected);
}

// Probabilities in the candidates' current order (no sort): dist needs no order, and skipping the
// sort keeps a temperature-only chain O(n_vocab) per token.
void softmax_in_place(Candidates& c) {
    float max_logit = -std::numeric_limits<float>::infinity();
    for (const TokenCandidate& t : c.data) max_logit = std::max(max_logit, t.logit);
    if (!(max_logit > -std::numeric_limits<float>::infinity()))
        throw std::invalid_argument("[sampler] every candidate logit is -inf; nothing can be sampled");
    if (max_logit == std::numeric_limits<float>::infinity()) {
        // Logits that overflowed (a tiny temperature divides them): exp(l - max) would be NaN for
        // them; the limit of the softmax is an even split among the infinite ones.
        const auto n_top = std::count_if(c.data.begin(), c.data.end(),
                                         [&](const TokenCandidate& t) { return t.logit == max_logit; });
        for (TokenCandidate& t : c.data) t.p = t.logit == max_logit ? 1.0f / static_cast<float>(n_top) : 0.0f;
        return;
    }
    float sum = 0.0f;
    for (TokenCandidate& t : c.data) {
        t.p = std::exp(t.logit - max_logit);
        sum += t.p;
    }
    for (TokenCandidate& t : c.data) t.p /= sum;
}

}  // namespace

Candidates Candidates::from_logits(std::span<const float> logits) {
    Candidates c;
    c.assign(logits);
    return c;
}

void Candidates::assign(std::span<const float> logits) {
    data.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) data[i] = {static_cast<int32_t>(i), logits[i], 0.0f};
    sorted = false;
}

void sampler_softmax(Candidates& c) {
    if (c.data.empty()) return;
    if (!c.sorted) {
        std::sort(c.data.begin(), c.data.end(), higher);
        c.sorted = true;
    }
    softmax_in_place(c);
}

void sampler_penalties(Candidates& c, std::span<const int32_t> recent, float repeat, float frequency,
                       float presence) {
    if (recent.empty() || (repeat == 1.0f && frequency == 0.0f && presence == 0.0f)) return;
    std::unordered_map<int32_t, int32_t> counts;
    for (int32_t id : recent) ++counts[id];

    auto penalise = [&](TokenCandidate& t, int32_t count) {
        // Dividing a negative logit would raise it, so negative ones are multiplied instead.
        if (t.logit <= 0.0f)
            t.logit *= repeat;
        else
            t.logit /= repeat;
        t.logit -= static_cast<float>(count) * frequency + (count > 0 ? 1.0f : 0.0f) * presence;
    };

    // A fresh full-vocabulary array has data[id].id == id: touch only the penalised entries.
    const bool identity = std::all_of(counts.begin(), counts.end(), [&](const auto& kv) {
        return kv.first >= 0 && static_cast<size_t>(kv.first) < c.data.size() &&
               c.data[kv.first].id == kv.first;
    });
    if (identity) {
        for (const auto& [id, count] : counts) penalise(c.data[id], count);
    } else {
        for (TokenCandidate& t : c.data)
            if (auto it = counts.find(t.id); it != counts.end()) penalise(t, it->second);
    }
    c.sorted = false;  // logits changed, any previous order may be wrong now
}

void sampler_top_k(Candidates& c, int32_t k, size_t min_keep) {
    if (k <= 0) return;
    const size_t keep = std::min(c.data.size(), std::max(static_cast<size_t>(k), min_keep));
    if (!c.sorted) {
        std::partial_sort(c.data.begin(), c.data.begin() + static_cast<ptrdiff_t>(keep), c.data.end(),
                          higher);
        c.sorted = true;  // the kept prefix is in order, and it is all that remains
    }
    c.data.resize(keep);
}

void sampler_top_p(Candidates& c, float p, size_t min_keep) {
    if (p >= 1.0f || c.data.empty()) return;
    softmax_in_place(c);
    const size_t n = c.data.size();
    // The nucleus is usually a small head of the vocabulary: sort a growing prefix (64, 128, ...)
    // until it holds probability mass >= p, instead of sorting all n_vocab entries every token.
    size_t sorted_end = c.sorted ? n : 0;
    size_t want = std::min(n, std::max<size_t>(64, min_keep));
    float cumulative = 0.0f;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
        if (i == sorted_end) {
            // [0, i) already holds the i highest, so only the rest needs partial sorting.
            auto first = c.data.begin() + static_cast<ptrdiff_t>(i);
            std::partial_sort(first, c.data.begin() + static_cast<ptrdiff_t>(want), c.data.end(), higher);
            sorted_end = want;
            want = std::min(n, want * 2);
        }
        cumulative += c.data[i].p;
        if (cumulative >= p && i + 1 >= min_keep) {
            keep = i + 1;
            break;
        }
    }
    c.data.resize(keep);
    c.sorted = true;  // what is left is the sorted prefix
}

void sampler_min_p(Candidates& c, float p, size_t min_keep) {
    if (p <= 0.0f || c.data.empty()) return;
    float max_logit = -std::numeric_limits<float>::infinity();
    for (const TokenCandidate& t : c.data) max_logit = std::max(max_logit, t.logit);
    // p_i >= p * p_max  <=>  exp(l_i - l_max) >= p  <=>  l_i >= l_max + log(p): no softmax needed.
    const float min_logit = max_logit + std::log(p);
    const size_t passing = static_cast<size_t>(std::count_if(
        c.data.begin(), c.data.end(), [&](const TokenCandidate& t) { return t.logit >= min_logit; }));
    if (passing >= min_keep) {
        // stable: an already sorted array stays sorted
        auto end = std::stable_partition(c.data.begin(), c.data.end(),
                                         [&](const TokenCandidate& t) { return t.logit >= min_logit; });
        c.data.erase(end, c.data.end());
    } else {
        sampler_top_k(c, static_cast<int32_t>(std::min(min_keep, c.data.size())), min_keep);
    }
}

void sampler_temperature(Candidates& c, float t) {
    if (c.data.empty()) return;
    if (t <= 0.0f) {
        const int32_t best = sampler_greedy(c);
        auto it =
            std::find_if(c.data.begin(), c.data.end(), [&](const TokenCandidate& x) { return x.id == best; });
        const TokenCandidate kept = *it;
        c.data.assign(1, kept);
        c.sorted = true;
        return;
    }
    for (TokenCandidate& x : c.data) x.logit /= t;  // order is unchanged by a positive scale
}

int32_t sampler_greedy(const Candidates& c) {
    if (c.data.empty()) throw std::invalid_argument("[sampler] greedy: no candidates to choose from");
    const TokenCandidate* best = &c.data[0];
    for (const TokenCandidate& t : c.data)
        if (higher(t, *best)) best = &t;
    return best->id;
}

int32_t sampler_dist(Candidates& c, std::mt19937& rng) {
    if (c.data.empty()) throw std::invalid_argument("[sampler] dist: no candidates to choose from");
    softmax_in_place(c);
    // The uniform is built from one raw mt19937 output rather than std::uniform_real_distribution,
    // whose algorithm differs between standard libraries: the same seed then gives the same
    // tokens everywhere.
    const double u = static_cast<double>(rng()) * 0x1p-32;  // [0, 1)
    double total = 0.0;
    for (const TokenCandidate& t : c.data) total += t.p;
    const double target = u * total;
    double cumulative = 0.0;
    int32_t last_nonzero = c.data[0].id;
    for (const TokenCandidate& t : c.data) {
        if (t.p <= 0.0f) continue;
        cumulative += t.p;
        last_nonzero = t.id;
        if (cumulative > target) return t.id;
    }
    return last_nonzero;  // rounding left target at the very top of the range
}

void sampler_logit_bias(Candidates& c, std::span<const LogitBias> biases) {
    for (const LogitBias& b : biases) {
        const size_t i = static_cast<size_t>(b.token);
        if (b.token >= 0 && i < c.data.size() && c.data[i].id == b.token) {
            c.data[i].logit += b.bias;
            continue;
        }
        const auto it = std::find_if(c.data.begin(), c.data.end(), [&](const TokenCandidate& t) { return t.id == b.token; });
        if (it != c.data.end()) it->logit += b.bias;
    }
    if (!biases.empty()) c.sorted = false;
}

void sampler_validate(const SamplerParams& p) {
    if (std::isnan(p.temperature) || p.temperature == std::numeric_limits<float>::infinity())
        bad_param("temperature", fmt(p.temperature), "a finite number (<= 0 means greedy)");
    if (p.top_k < 0) bad_param("top_k", std::to_string(p.top_k), "a value >= 0 (0 disables it)");
    if (!(p.top_p >= 0.0f && p.top_p <= 1.0f))
        bad_param("top_p", fmt(p.top_p), "a value in [0, 1] (1 disables it)");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
        bad_param("min_p", fmt(p.min_p), "a value in [0, 1] (0 disables it)");
    // Penalties beyond kMaxPenalty change no ranking further, but overflow logits to -inf.
    if (!(p.repeat_penalty > 0.0f && p.repeat_penalty <= kMaxPenalty))
        bad_param("repeat_penalty", fmt(p.repeat_penalty),
                  "a value > 0 and at most " + fmt(kMaxPenalty) + " (1 disables it)");
    if (p.repeat_last_n < -1 || p.repeat_last_n > kMaxRepeatLastN)
        bad_param("repeat_last_n", std::to_string(p.repeat_last_n),
                  "a value from -1 to " + std::to_string(kMaxRepeatLastN) +
                      " (0 disables penalties, -1 uses all tokens since reset)");
    if (!(std::fabs(p.frequency_penalty) <= kMaxPenalty))
        bad_param("frequency_penalty", fmt(p.frequency_penalty), "a value from -" + fmt(kMaxPenalty) + " to " + fmt(kMaxPenalty));
    if (!(std::fabs(p.presence_penalty) <= kMaxPenalty))
        bad_param("presence_penalty", fmt(p.presence_penalty), "a value from -" + fmt(kMaxPenalty) + " to " + fmt(kMaxPenalty));
    if (p.seed > 0xFFFFFFFFull)
        bad_param("seed", std::to_string(p.seed), "a 32-bit value (0xFFFFFFFF picks a random seed)");
    for (size_t i = 0; i < p.logit_bias.size(); ++i) {
        const LogitBias& b = p.logit_bias[i];
        const std::string at = "logit_bias[" + std::to_string(i) + "]";
        if (b.token < 0) bad_param(at + ".token", std::to_string(b.token), "a token id (>= 0)");
        if (std::isnan(b.bias) || b.bias == std::numeric_limits<float>::infinity())
            bad_param(at + ".bias", fmt(b.bias), "a finite number or -inf");
    }
}

Sampler::Sampler(SamplerParams params, int32_t n_vocab) : params_(params), n_vocab_(n_vocab) {
    sampler_validate(params_);
    if (n_vocab <= 0) bad_param("n_vocab", std::to_string(n_vocab), "a value > 0");
    for (size_t i = 0; i < params_.logit_bias.size(); ++i)
        if (params_.logit_bias[i].token >= n_vocab)
            bad_param("logit_bias[" + std::to_string(i) + "].token", std::to_string(params_.logit_bias[i].token),
                      "a token id below the vocabulary's " + std::to_string(n_vocab));
    if (params_.grammar) {
        if (!params_.grammar->grammar || !params_.grammar->vocab)
            bad_param("grammar", "incomplete", "a grammar and the vocabulary it is matched against");
        if (params_.grammar->vocab->n_vocab() != n_vocab)
            bad_param("grammar", "a vocabulary of " + std::to_string(params_.grammar->vocab->n_vocab()) + " tokens",
                      "the model's vocabulary of " + std::to_string(n_vocab));
        grammar_.emplace(*params_.grammar->grammar);
    }
    seed_ = params_.seed == kSamplerRandomSeed ? std::random_device{}() : params_.seed;
    rng_.seed(static_cast<std::mt19937::result_type>(seed_));
    if (params_.repeat_last_n > 0) recent_.reserve(static_cast<size_t>(params_.repeat_last_n) + 1);
}

int32_t Sampler::sample(std::span<const float> logits) {
    if (logits.size() != static_cast<size_t>(n_vocab_))
        throw std::invalid_argument("[sampler] logits have " + std::to_string(logits.size()) +
                                    " entries, the vocabulary has " + std::to_string(n_vocab_));
    for (size_t i = 0; i < logits.size(); ++i)
        if (std::isnan(logits[i]))
            throw std::invalid_argument("[sampler] logit of token " + std::to_string(i) + " is NaN");

    candidates_.assign(logits);
    const bool greedy = params_.temperature <= 0.0f;
    // Greedy needs the mask only when the best token is refused: masking removes candidates, so an
    // allowed argmax (ties: lowest id) is the masked argmax too.
    if (grammar_ && !greedy) apply_grammar_mask();
    sampler_logit_bias(candidates_, params_.logit_bias);
    if (params_.repeat_last_n != 0)
        sampler_penalties(candidates_, recent_, params_.repeat_penalty, params_.frequency_penalty,
                          params_.presence_penalty);
    if (greedy) {
        const int32_t best = sampler_greedy(candidates_);
        if (!grammar_ || params_.grammar->vocab->allows(*grammar_, best)) return commit_grammar(best);
        apply_grammar_mask();
        return commit_grammar(sampler_greedy(candidates_));
    }

    sampler_top_k(candidates_, params_.top_k);
    sampler_top_p(candidates_, params_.top_p);
    sampler_min_p(candidates_, params_.min_p);
    sampler_temperature(candidates_, params_.temperature);
    return commit_grammar(sampler_dist(candidates_, rng_));
}

// Candidates are still one per token in id order (from_logits, before any stage that reorders).
void Sampler::apply_grammar_mask() {
    params_.grammar->vocab->mask(*grammar_, allowed_, mask_scratch_);
    bool any = false;
    for (TokenCandidate& t : candidates_.data) {
        if (allowed_[size_t(t.id)]) any = true;
        else t.logit = -std::numeric_limits<float>::infinity();
    }
    if (!any)
        throw GrammarError("[sampler] the grammar allows no token of the vocabulary here (it can neither go on "
                           "with one nor end)");
    candidates_.sorted = false;
}

int32_t Sampler::commit_grammar(int32_t token) {
    if (!grammar_ || params_.grammar->vocab->is_end(token)) return token;
    if (!grammar_->accept(params_.grammar->vocab->bytes(token)))
        throw GrammarError("[sampler] token " + std::to_string(token) + " was sampled but the grammar refuses it");
    return token;
}

size_t Sampler::grammar_allowed_prefix(std::span<const int32_t> tokens) const {
    if (!grammar_) return tokens.size();
    const GrammarVocab& vocab = *params_.grammar->vocab;
    GrammarMatcher match = *grammar_;  // a copy to walk ahead on
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < 0 || tokens[i] >= n_vocab_ || !vocab.allows(match, tokens[i])) return i;
        if (vocab.is_end(tokens[i])) return i + 1;
        match.accept(vocab.bytes(tokens[i]));
    }
    return tokens.size();
}

void Sampler::accept(int32_t token) {
    if (token < 0 || token >= n_vocab_)
        throw std::invalid_argument("[sampler] accepted token " + std::to_string(token) +
                                    " is outside the vocabulary [0, " + std::to_string(n_vocab_) + ")");
    if (params_.repeat_last_n == 0) return;
    recent_.push_back(token);
    if (params_.repeat_last_n > 0 && recent_.size() > static_cast<size_t>(params_.repeat_last_n))
        recent_.erase(recent_.begin());  // n is small (64 by default): a shift beats a ring here
}

void Sampler::reset() {
    recent_.clear();
    if (grammar_) grammar_->reset();
    rng_.seed(static_cast<std::mt19937::result_type>(seed_));
}

}  // namespace graphrun
