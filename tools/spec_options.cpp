// tools/spec_options.cpp — see spec_options.h.
#include "tools/spec_options.h"

#include "runtime/text/vocab_match.h"
#include "tools/option_checks.h"

namespace graphrun::tools {

void add_spec_options(CLI::App& app, SpecOptions& opt) {
    app.add_option("--spec", opt.spec,
                   "speculative decoding, the same tokens as without: off, lookup (guesses from n-grams "
                   "of the prompt and output) or draft (guesses of the smaller model --model-draft)")
        ->check(CLI::Validator(
            [](std::string& name) -> std::string {
                if (name == "off" || name == "lookup" || name == "draft") return "";
                return "'" + name + "' is not a proposer: give off, lookup or draft";
            },
            "off|lookup|draft"))
        ->capture_default_str();
    app.add_option("--model-draft", opt.draft_model_path,
                   "--spec draft: the draft model (GGUF), smaller, with the vocabulary of -m (also -md, as "
                   "in llama.cpp)");
    app.add_option("--draft-max", opt.lookup.draft_max, "--spec: tokens proposed per pass at most")
        ->check(whole_number_in(1, graph::kMaxDraftTokens))
        ->capture_default_str();
    app.add_option("--draft-min", opt.lookup.draft_min,
                   "--spec: tokens proposed per pass at least (a shorter guess is not made)")
        ->check(whole_number_in(1, graph::kMaxDraftTokens))
        ->capture_default_str();
    app.add_option("--lookup-ngram", opt.lookup.ngram, "--spec lookup: the longest run of last tokens looked up")
        ->check(whole_number_in(1, graph::kMaxLookupNgram))
        ->capture_default_str();
}

void check_spec_options(const CLI::App& app, const SpecOptions& o) {
    for (const char* name : {"--draft-max", "--draft-min"})
        if (app.count(name) > 0 && o.spec == "off")
            throw std::runtime_error(std::string(name) +
                                     " tunes speculative decoding: give --spec lookup or --spec draft too");
    if (app.count("--lookup-ngram") > 0 && o.spec != "lookup")
        throw std::runtime_error(o.spec == "draft" ? "--lookup-ngram tunes --spec lookup, not --spec draft"
                                                   : "--lookup-ngram tunes --spec lookup: give --spec lookup too");
    if (o.spec == "draft" && o.draft_model_path.empty())
        throw std::runtime_error("--spec draft needs the draft model: give --model-draft FILE");
    if (o.spec != "draft" && !o.draft_model_path.empty())
        throw std::runtime_error("--model-draft is the draft model of --spec draft: give --spec draft too");
}

graph::Speculation speculation_of(const SpecOptions& opt) {
    const graph::SpecMode mode = opt.spec == "lookup"  ? graph::SpecMode::Lookup
                                 : opt.spec == "draft" ? graph::SpecMode::Draft
                                                       : graph::SpecMode::Off;
    return {.mode = mode,
            .draft_min = opt.lookup.draft_min,
            .draft_max = opt.lookup.draft_max,
            .ngram = opt.lookup.ngram};
}

std::shared_ptr<const graph::Model> load_draft_model(const SpecOptions& opt, const graph::Model& target) {
    if (opt.spec != "draft") return nullptr;
    auto draft = graph::Model::load(opt.draft_model_path);
    try {
        require_same_vocabulary(target.file(), draft->file());
    } catch (const std::runtime_error& e) {  // VocabMismatch, TokenizerError
        throw std::runtime_error(std::string("--model-draft ") + e.what());
    }
    return draft;
}

}  // namespace graphrun::tools
