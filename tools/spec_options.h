// tools/spec_options.h — the speculative-decoding options every generating command takes:
//
//   --spec off|lookup|draft  --draft-max N  --draft-min N  --lookup-ngram N  --model-draft FILE (-md)
//
// The single-sequence command (cmd_generate.cpp) makes a proposer of them; `graphrun batched` and
// `graphrun serve` hand them to the Scheduler (engine/scheduler.h) as its requests' speculation and its
// draft model. One place for the flags, their help and their checks, so the three commands agree.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "engine/model.h"
#include "engine/prompt_lookup.h"
#include "engine/speculation.h"

namespace graphrun::tools {

struct SpecOptions {
    std::string spec = "off";      // the proposer: off, lookup or draft
    std::string draft_model_path;  // --model-draft, for --spec draft
    graph::PromptLookupOptions lookup;  // ngram, draft_min and draft_max (the draft model takes the last two)
};

// Adds the five options to `app`, writing into `opt` (which must outlive the parse).
void add_spec_options(CLI::App& app, SpecOptions& opt);
// After parsing: throws std::runtime_error for options that do not go together (a tuning option
// without --spec, --spec draft without --model-draft, ...), naming them.
void check_spec_options(const CLI::App& app, const SpecOptions& opt);
// The Scheduler's speculation of these options.
graph::Speculation speculation_of(const SpecOptions& opt);
// The draft model of --spec draft, loaded and checked against the target: the same vocabulary
// (runtime/text/vocab_match.h), the error naming --model-draft. null without --spec draft.
std::shared_ptr<const graph::Model> load_draft_model(const SpecOptions& opt, const graph::Model& target);

}  // namespace graphrun::tools
