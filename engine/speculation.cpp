// engine/speculation.cpp — a request's proposer and history in the Scheduler.
#include "engine/speculation.h"

#include <stdexcept>

#include "engine/draft_model.h"
#include "engine/prompt_lookup.h"

namespace graphrun::graph {

const char* spec_mode_name(SpecMode mode) {
    switch (mode) {
        case SpecMode::Off: return "off";
        case SpecMode::Lookup: return "lookup";
        case SpecMode::Draft: return "draft";
    }
    return "?";
}

void validate_speculation(const Speculation& s) {
    if (s.mode == SpecMode::Off) return;
    DraftLength check(s.draft_min, s.draft_max);  // throws naming --draft-min / --draft-max
    (void)check;
    if (s.mode == SpecMode::Lookup) PromptLookup lookup({.ngram = s.ngram, .draft_min = s.draft_min,
                                                         .draft_max = s.draft_max});
}

SequenceSpeculation::SequenceSpeculation(const Speculation& s, Engine* draft_engine,
                                         std::span<const int32_t> prompt)
    : history_(prompt.begin(), prompt.end()) {
    if (s.mode == SpecMode::Lookup)
        proposer_ = std::make_unique<PromptLookup>(
            PromptLookupOptions{.ngram = s.ngram, .draft_min = s.draft_min, .draft_max = s.draft_max});
    else if (s.mode == SpecMode::Draft) {
        if (!draft_engine) throw std::logic_error("speculation: a draft request without a draft engine");
        proposer_ = std::make_unique<DraftModel>(
            *draft_engine, DraftModelOptions{.draft_min = s.draft_min, .draft_max = s.draft_max});
    } else
        throw std::logic_error("speculation: a request that does not speculate has no SequenceSpeculation");
}

SequenceSpeculation::~SequenceSpeculation() = default;

std::span<const int32_t> SequenceSpeculation::propose(int64_t room, const Sampler& sampler) {
    draft_.clear();
    if (room <= 0) return draft_;
    proposer_->propose(history_, room, draft_);
    if (int64_t(draft_.size()) > room) draft_.resize(size_t(room));
    draft_.resize(sampler.grammar_allowed_prefix(draft_));
    return draft_;
}

void SequenceSpeculation::verified(int64_t accepted) {
    if (!draft_.empty()) proposer_->observe(int64_t(draft_.size()), accepted);
    draft_.clear();
}

}  // namespace graphrun::graph
