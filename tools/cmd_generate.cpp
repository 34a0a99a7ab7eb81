// tools/cmd_generate.cpp — the default command: plan a graph on a model and generate.
//
//   graphrun -m MODEL.gguf -p "Once upon a time" -n 128      text in, streamed text out
//   graphrun -m MODEL.gguf -i                                 raw continuation of typed text, one KV cache
//                                                             (/reset starts over; a full context goes on
//                                                             from its last half)
//   graphrun -m MODEL.gguf --conversation [--system TEXT]     chat turns in the model's chat template
//   graphrun -m MODEL.gguf --tokens 1,403,407 -n 16           token ids in, greedy ids out
//   graphrun -m MODEL.gguf --dump-plan[=json] [--batch N]     the execution plan
//   graphrun -m MODEL.gguf -p TEXT --spec lookup              speculative decoding, the same tokens
//                                                             (engine/generate.h), fewer passes
//   graphrun -m MODEL.gguf -p TEXT --spec draft --model-draft S.gguf  the same, guessed by a smaller model
//                                                             of the same vocabulary
// stdout carries only the text (or the ids); logs and timings go to stderr, so output can be piped.
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "engine/draft_model.h"
#include "engine/generate.h"
#include "engine/prompt_lookup.h"
#include "graph/limits.h"
#include "graph/stages.h"
#include "runtime/bounded_read.h"
#include "runtime/finite_check.h"
#include "runtime/text/chat_template.h"
#include "runtime/text/json_schema.h"
#include "runtime/text/tokenizer.h"
#include "tools/commands.h"
#include "tools/conversation.h"
#include "tools/option_checks.h"
#include "tools/spec_options.h"

namespace graphrun::tools {

namespace {

struct GenerateOptions : SpecOptions {  // spec, draft_model_path, lookup
    // Empty: the defaults in the data folder (graph/data_files.h); the graph is then the one of the
    // model's general.architecture (graph_path_for).
    std::string graph_path, model_path;
    std::string tokens, prompt, prompt_file;
    bool interactive = false, special = false, check_weights = false;
    bool conversation = false, verbose_prompt = false;
    std::string system, chat_template;
    int64_t n_predict = 128;
    int threads = 0;
    int64_t ctx = 0;
    std::string dump_plan;  // "", "text" or "json"
    int64_t batch = 0;      // batch size of the dumped plan (default: the prompt's length, or 1)
    SamplerParams sampling;
    bool temperature_given = false;
    bool profile = false;
    std::string trace_path;
    std::string grammar_file, json_schema_file;  // constrained decoding (docs/grammars.md)
};

// The grammar of --grammar (GBNF) or --json-schema, parsed before the model loads so a bad file fails
// at once; errors name the file. null when neither is given.
std::shared_ptr<const Grammar> read_grammar_option(const GenerateOptions& opt) {
    if (opt.grammar_file.empty() && opt.json_schema_file.empty()) return nullptr;
    if (!opt.grammar_file.empty() && !opt.json_schema_file.empty())
        throw std::runtime_error("give either --grammar or --json-schema, not both");
    const std::string& path = opt.grammar_file.empty() ? opt.json_schema_file : opt.grammar_file;
    try {
        std::string gbnf = grammar_read_file(path);
        if (!opt.json_schema_file.empty()) gbnf = json_schema_to_gbnf(gbnf);
        return std::make_shared<const Grammar>(grammar_parse(gbnf));
    } catch (const std::invalid_argument& e) {  // GrammarError, JsonSchemaError
        throw std::runtime_error((opt.grammar_file.empty() ? "--json-schema " : "--grammar ") + path + ": " + e.what());
    }
}

std::vector<int32_t> parse_token_list(const std::string& text) {
    std::vector<int32_t> ids;
    std::string item;
    std::stringstream in(text);
    while (std::getline(in, item, ',')) {
        std::stringstream words(item);
        std::string word;
        while (words >> word) {
            size_t used = 0;
            long long id = -1;
            try {
                id = std::stoll(word, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != word.size() || id < 0 || id > INT32_MAX)
                throw std::runtime_error("--tokens: '" + word + "' is not a token id");
            ids.push_back(int32_t(id));
        }
    }
    return ids;
}

std::string read_prompt_file(const std::string& path) {
    try {
        return read_bounded_file(path, graph::kMaxPromptFileBytes, "a prompt file");
    } catch (const FileReadError& e) {
        throw std::runtime_error(std::string("-f: ") + e.what());
    }
}

// --check-weights: every weight the graph reads, scanned for NaN and Inf (runtime/finite_check.h).
void check_weights_are_finite(const graph::Model& model) {
    for (const graph::GraphWeight& w : model.graph().weights) {
        const std::optional<NonFiniteValue> bad = find_non_finite(w.tensor->type, w.tensor->data,
                                                                  w.tensor->n_elements());
        if (bad)
            throw std::runtime_error(model.file().path() + ": --check-weights: tensor '" + w.name + "' has " +
                                     non_finite_name(bad->value) + " at element " + std::to_string(bad->index) +
                                     (dtype_traits(w.tensor->type).block_size > 1 ? " (a block's scale)" : ""));
    }
}

// -c beyond what this machine holds is refused here, by its size, before the allocation is tried.
void check_context_fits(const graph::Model& model, int64_t n_ctx) {
    const graph::Plan plan = graph::make_plan(model.graph(), 1, n_ctx);
    const int64_t bytes = plan.state_bytes, memory = graph::physical_memory_bytes();
    if (memory > 0 && bytes > memory) {
        const int64_t row = plan.tensors[size_t(plan.state_tensors.at(0))].desc.shape[1];
        throw std::runtime_error("-c " + std::to_string(n_ctx) + ": the KV cache would take " + std::to_string(bytes) +
                                 " bytes (" + std::to_string(plan.state_tensors.size() / 2) + " layers x " +
                                 std::to_string(n_ctx) + " positions x " + std::to_string(row) +
                                 " x 2 (k, v) x 2 bytes), more than " + "this machine's " + std::to_string(memory) +
                                 " bytes of memory");
    }
}

// The draft model of --spec draft, checked at load: its vocabulary must be the target's (its ids are
// fed to the target as they are) and its logits as wide. Its KV cache is as long as the target's.
std::unique_ptr<graph::DraftProposer> make_draft_model(const GenerateOptions& opt,
                                                       const graph::Session& target) {
    auto draft = load_draft_model(opt, target.model());
    if (opt.check_weights) check_weights_are_finite(*draft);
    check_context_fits(*draft, target.n_ctx());
    auto proposer = std::make_unique<graph::DraftModel>(
        draft, graph::DraftModelOptions{.draft_min = opt.lookup.draft_min, .draft_max = opt.lookup.draft_max},
        graph::SessionOptions{.n_ctx = target.n_ctx(), .n_threads = target.n_threads()});
    if (proposer->n_vocab() != target.n_vocab())
        throw std::runtime_error("--model-draft " + opt.draft_model_path + ": its logits are " +
                                 std::to_string(proposer->n_vocab()) + " wide, those of " + opt.model_path +
                                 " " + std::to_string(target.n_vocab()));
    return proposer;
}

// The proposer --spec names, or none.
std::unique_ptr<graph::DraftProposer> make_proposer(const GenerateOptions& opt,
                                                    const graph::Session& target) {
    if (opt.spec == "off") return nullptr;
    if (opt.spec == "lookup") return std::make_unique<graph::PromptLookup>(opt.lookup);
    if (opt.spec == "draft") return make_draft_model(opt, target);
    throw std::logic_error("--spec " + opt.spec + " passed the option check");
}

void note_context_full(const graph::Session& session) {
    std::fprintf(stderr, "\ngraphrun: stopped at the end of the context (%lld positions); raise -c for more\n",
                 (long long)session.n_ctx());
}

void report(const graph::Session& session, const graph::GenerationStats& s, int64_t weight_bytes,
            const graph::DraftProposer* proposer, const std::string& spec) {
    std::fprintf(stderr, "\ngraphrun: prompt %lld tokens in %.1f ms (%.1f tok/s)\n", (long long)s.prompt_tokens,
                 s.prompt_seconds * 1e3, double(s.prompt_tokens) / s.prompt_seconds);
    if (s.decode_steps > 0) {
        const double per_token = s.decode_seconds / double(s.decode_steps);
        std::fprintf(stderr,
                     "graphrun: generated %lld tokens: %.2f ms/token, %.1f tok/s, %.2f GB/s of weights read "
                     "(%d threads)\n",
                     (long long)s.generated_tokens, per_token * 1e3, 1.0 / per_token,
                     double(weight_bytes) / per_token / 1e9, session.n_threads());
    }
    if (proposer) {
        const double rate = s.draft_proposed > 0 ? double(s.draft_accepted) / double(s.draft_proposed) : 0.0;
        const double per_pass = s.decode_passes > 0 ? double(s.decode_steps) / double(s.decode_passes) : 0.0;
        std::fprintf(stderr,
                     "graphrun: speculative (%s): %lld tokens proposed, %lld accepted (%.1f%%), "
                     "%lld passes for %lld tokens: %.2f tokens per pass\n",
                     spec.c_str(), (long long)s.draft_proposed, (long long)s.draft_accepted, 100.0 * rate,
                     (long long)s.decode_passes, (long long)s.decode_steps, per_pass);
    }
}

// Token ids in, greedy (unless --temp is given) token ids out, exactly n_predict of them.
void run_token_mode(graph::Session& session, const GenerateOptions& opt, const std::vector<int32_t>& prompt,
                    graph::Profiler* profiler, graph::DraftProposer* proposer) {
    SamplerParams params = opt.sampling;
    if (!opt.temperature_given) params.temperature = 0.0f;
    Sampler sampler(params, int32_t(session.n_vocab()));
    bool first = true;
    auto stats = graph::generate(session, sampler, prompt, opt.n_predict, [&](int32_t token) {
        std::printf(first ? "%d" : " %d", token);
        std::fflush(stdout);
        first = false;
        return true;
    }, profiler, proposer);
    std::printf("\n");
    if (stats.context_full && stats.generated_tokens < opt.n_predict) note_context_full(session);
    report(session, stats, session.plan(1).weight_bytes, proposer, opt.spec);
}

// Interactive turns share one KV cache. `kept` is every token of the sequence so far: those in
// the cache, then (at most one) printed but not yet evaluated; a full context goes on from its
// last half, evaluated again into an emptied cache.
struct RawTurns {
    std::vector<int32_t> kept;
    int32_t bos = -1;                // kept first when the context shifts, as the model saw it first
    bool shift_before_next = false;  // the context filled: the next line goes on from the last half

    // Evaluates what was printed but not evaluated (a reply's last token), so the next turn
    // continues from everything said.
    void catch_up(graph::Session& session) {
        const size_t in_cache = size_t(session.n_past());
        if (kept.size() > in_cache) session.eval(std::span<const int32_t>(kept).subspan(in_cache));
    }

    // Keeps the last positions (at most half the context, and room for `incoming` more tokens).
    // False when even an empty cache cannot take `incoming` tokens.
    bool shift(graph::Session& session, size_t incoming) {
        const int64_t room = session.n_ctx() - 1 - int64_t(incoming);
        if (room < 0) return false;
        const size_t keep = std::min(kept.size(), size_t(std::min<int64_t>(room, session.n_ctx() / 2)));
        const bool keep_bos = keep > 0 && bos >= 0 && kept.front() == bos;
        std::vector<int32_t> next(keep_bos ? 1 : 0, bos);
        next.insert(next.end(), kept.end() - std::ptrdiff_t(keep - (keep_bos ? 1 : 0)), kept.end());
        kept = std::move(next);
        session.reset();
        if (!kept.empty()) session.eval(kept);
        std::fprintf(stderr, "graphrun: going on from the last %zu tokens (type /reset to start over)\n", keep);
        return true;
    }
};

// The model's tokenizer, refused at load when the model has none or a sampled id could be one it
// cannot print (which would fail mid-generation).
Tokenizer text_tokenizer(const graph::Session& session) {
    Tokenizer tokenizer = [&] {
        try {
            return Tokenizer::from_gguf(session.model().file());
        } catch (const TokenizerError& e) {
            throw std::runtime_error(std::string("this model cannot take text prompts: ") + e.what() +
                                     " (use --tokens to give token ids)");
        }
    }();
    if (tokenizer.n_vocab() < session.n_vocab())
        throw std::runtime_error(
            session.model().file().path() + ": the vocabulary has " + std::to_string(tokenizer.n_vocab()) +
            " tokens but the logits are " + std::to_string(session.n_vocab()) +
            " wide (output.weight has more rows than " + "tokenizer.ggml.tokens has entries)");
    return tokenizer;
}

// Makes room for a turn's `ids`: interactive turns go on from the last half of a full context (false
// when the line cannot fit even then: it is skipped), a single prompt must fit as it is.
bool make_room(graph::Session& session, const GenerateOptions& opt, RawTurns& turns,
               const std::vector<int32_t>& ids) {
    if (opt.interactive) {
        const int64_t needed = int64_t(turns.kept.size() + ids.size());
        if (turns.shift_before_next || needed >= session.n_ctx()) {
            if (!turns.shift(session, ids.size())) {
                std::fprintf(stderr,
                             "graphrun: that line has %zu tokens, more than the context of %lld holds; "
                             "type a shorter one (or raise -c)\n",
                             ids.size(), (long long)session.n_ctx());
                return false;
            }
            turns.shift_before_next = false;
        }
        turns.catch_up(session);
        turns.kept.insert(turns.kept.end(), ids.begin(), ids.end());
    } else if (session.n_past() + int64_t(ids.size()) >= session.n_ctx()) {
        throw std::runtime_error("the prompt has " + std::to_string(ids.size()) + " tokens and " +
                                 std::to_string(session.n_past()) + " are in use: more than the context of " +
                                 std::to_string(session.n_ctx()) + " (raise -c)");
    }
    return true;
}

// Generates from `ids`, streaming the text to stdout until an end-of-generation token or n_predict
// tokens, then says why it stopped when the context filled, and the timings.
void stream_reply(graph::Session& session, Sampler& sampler, const Tokenizer& tokenizer,
                  const GenerateOptions& opt, const std::vector<int32_t>& ids, RawTurns& turns,
                  graph::Profiler* profiler, graph::DraftProposer* proposer) {
    sampler.restart_grammar();  // with -i, each reply is one match of --grammar / --json-schema
    TokenTextStream stream(tokenizer, opt.special);
    auto stats = graph::generate(
        session, sampler, ids, opt.n_predict,
        [&](int32_t token) {
            if (tokenizer.is_end_of_generation(token)) return false;
            std::fputs(stream.push(token).c_str(), stdout);
            std::fflush(stdout);
            if (opt.interactive) turns.kept.push_back(token);
            return true;
        },
        profiler, proposer);
    std::fputs(stream.flush().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (stats.context_full && opt.interactive) {
        std::fprintf(stderr,
                     "graphrun: the context (%lld positions) is full; the next line goes on from its "
                     "last half, or type /reset to start over\n",
                     (long long)session.n_ctx());
        turns.shift_before_next = true;
    } else if (stats.context_full && stats.generated_tokens != opt.n_predict) {
        note_context_full(session);
    }
    report(session, stats, session.plan(1).weight_bytes, proposer, opt.spec);
}

// Text in, streamed text out until an end-of-generation token or n_predict tokens; with -i, a turn
// per typed line.
void run_text_mode(graph::Session& session, const GenerateOptions& opt, const std::string& first_prompt,
                   graph::Profiler* profiler, graph::DraftProposer* proposer) {
    const Tokenizer tokenizer = text_tokenizer(session);
    Sampler sampler(opt.sampling, int32_t(session.n_vocab()));
    std::string prompt = first_prompt;
    bool first_turn = true;
    RawTurns turns;
    turns.bos = tokenizer.bos();
    while (true) {
        if (first_turn && prompt.empty() && !opt.interactive)
            throw std::runtime_error(
                "nothing to generate from: give a prompt with -p TEXT, -f FILE or --tokens");
        if (opt.interactive && (!first_turn || prompt.empty())) {
            std::fprintf(stderr, "\n> ");
            if (!std::getline(std::cin, prompt)) break;
            if (prompt.empty()) continue;
            if (prompt == "/reset") {
                session.reset();
                sampler.reset();
                turns = RawTurns{};
                turns.bos = tokenizer.bos();
                first_turn = true;
                std::fprintf(stderr, "graphrun: the context is empty again\n");
                prompt.clear();
                continue;
            }
        }
        const std::vector<int32_t> ids = tokenizer.encode(prompt, turns.kept.empty() && tokenizer.add_bos());
        if (!make_room(session, opt, turns, ids)) continue;
        if (!opt.interactive || first_turn) std::fputs(prompt.c_str(), stdout);
        std::fflush(stdout);
        stream_reply(session, sampler, tokenizer, opt, ids, turns, profiler, proposer);
        first_turn = false;
        if (!opt.interactive) break;
    }
}

void run_generate(GenerateOptions opt) {
    // Looked up only now, so --help and the subcommands work without a data folder.
    if (opt.model_path.empty()) opt.model_path = graph::default_model_path();
    if (!opt.prompt_file.empty()) opt.prompt = read_prompt_file(opt.prompt_file);
    const std::shared_ptr<const Grammar> grammar = read_grammar_option(opt);
    std::optional<graph::Profiler> profiler;  // outlives the session, which points at it while running
    if (opt.profile || !opt.trace_path.empty()) profiler.emplace(opt.profile, opt.trace_path);
    const auto load_start = std::chrono::steady_clock::now();
    auto model = graph::Model::load(opt.model_path, opt.graph_path, process_pipeline());
    if (opt.check_weights) check_weights_are_finite(*model);
    if (opt.ctx > 0) check_context_fits(*model, opt.ctx);
    graph::Session session(model, {.n_ctx = opt.ctx, .n_threads = opt.threads});
    const std::unique_ptr<graph::DraftProposer> proposer = make_proposer(opt, session);
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
    const std::vector<int32_t> prompt_ids = parse_token_list(opt.tokens);
    if (grammar) {
        auto constraint = std::make_shared<GrammarConstraint>();
        constraint->grammar = grammar;
        constraint->vocab = GrammarVocab::from_tokenizer(Tokenizer::from_gguf(model->file()));
        opt.sampling.grammar = constraint;
    }

    if (!opt.dump_plan.empty()) {
        const int64_t batch = opt.batch > 0 ? opt.batch : std::max<int64_t>(1, int64_t(prompt_ids.size()));
        // Planned, not bound: a dump allocates no arena, however large the batch.
        // Over mpirun, every rank's stage in rank order (each a cut of the same whole graph).
        const bool json = opt.dump_plan == "json";
        const auto& ranges = model->stage_ranges();
        std::string out;
        for (int r = 0; r < std::max<int>(1, int(ranges.size())); ++r) {
            const graph::Graph stage =
                ranges.empty() ? model->graph() : graph::cut_stage(model->whole_graph(), ranges, r);
            const graph::Plan plan = graph::make_plan(stage, batch, session.n_ctx());
            if (r > 0) out += json ? "," : "\n";
            out += json ? graph::dump_plan_json(plan, stage) : graph::dump_plan_text(plan, stage);
        }
        if (json && ranges.size() > 1) out = "[" + out + "]\n";
        std::fputs(out.c_str(), stdout);
        return;
    }
    std::fprintf(stderr, "graphrun: %s: load %.1f ms, %d threads, context %lld\n", opt.model_path.c_str(), load_ms,
                 session.n_threads(), (long long)session.n_ctx());
    if (opt.spec == "draft") std::fprintf(stderr, "graphrun: draft model %s\n", opt.draft_model_path.c_str());
    if (opt.conversation) {
        if (!prompt_ids.empty()) throw std::runtime_error("--conversation takes text, not --tokens");
        if (opt.interactive) throw std::runtime_error("give either --conversation or -i, not both");
        if (proposer) throw std::runtime_error("--spec works with -p, -f, --tokens and -i, not --conversation yet");
        session.set_timeline(profiler ? &*profiler : nullptr);  // every turn's runs, as one section
        run_conversation(session,
                         {.system = opt.system,
                          .chat_template = opt.chat_template,
                          .first_message = opt.prompt,
                          .n_predict = opt.n_predict,
                          .verbose_prompt = opt.verbose_prompt,
                          .sampling = opt.sampling},
                         std::cin);
        session.set_timeline(nullptr);
    } else if (!prompt_ids.empty()) {
        if (!opt.prompt.empty()) throw std::runtime_error("give either --tokens or a text prompt, not both");
        run_token_mode(session, opt, prompt_ids, profiler ? &*profiler : nullptr, proposer.get());
    } else {
        run_text_mode(session, opt, opt.prompt, profiler ? &*profiler : nullptr, proposer.get());
    }
    if (profiler) {
        std::fputs(profiler->summary().c_str(), stderr);
        profiler->write_trace();
        if (!opt.trace_path.empty()) std::fprintf(stderr, "graphrun: wrote %s\n", opt.trace_path.c_str());
    }
}

}  // namespace

void register_generate(CLI::App& app) {
    auto opt = std::make_shared<GenerateOptions>();
    SamplerParams& s = opt->sampling;
    app.add_option("--graph", opt->graph_path,
                   "graph definition (JSON); default: models/<architecture>.json of the data folder (see "
                   "--version) for the model's general.architecture (llama, qwen2, qwen3)");
    app.add_option("-m,--model", opt->model_path, "model file (GGUF); default: models/kjv-q8_0.gguf of the data folder");
    app.add_option("-p,--prompt", opt->prompt, "prompt text");
    app.add_option("-f,--file", opt->prompt_file, "read the prompt from a file");
    app.add_option("--tokens", opt->tokens, "prompt as token ids (e.g. 1,403,407); prints ids, greedy unless --temp");
    app.add_flag("-i,--interactive", opt->interactive, "read further prompts from stdin, keeping the KV cache");
    app.add_flag("--conversation", opt->conversation,
                 "chat: each line typed is a user message in the model's chat template, replies stop at the "
                 "end of turn, one KV cache (-p: the first message)");
    app.add_option("--system", opt->system, "--conversation: the system message");
    app.add_option("--chat-template", opt->chat_template, "--conversation: the chat format instead of the model's")
        ->check(CLI::IsMember(ChatTemplate::names()));
    app.add_flag("--verbose-prompt", opt->verbose_prompt, "--conversation: print each turn's token ids on stderr");
    app.add_flag("--special", opt->special, "print special tokens (BOS, EOS, ...) too");
    app.add_flag("--check-weights", opt->check_weights,
                 "scan every weight the graph reads for NaN and Inf at load (reads the whole file)");
    app.add_option("-n,--n-predict", opt->n_predict, "tokens to generate (-1: until EOS or a full context)")
        ->check(whole_number_in(-1, graph::kMaxPredict))
        ->capture_default_str();
    const int max_threads = tbb::info::default_concurrency();
    app.add_option("-t,--threads", opt->threads, "threads (0: every core)")
        ->check(whole_number_in(0, max_threads, "the threads this machine runs"));
    app.add_option("-c,--ctx-size", opt->ctx, "KV cache positions (0: the model's, at most 2048)")
        ->check(whole_number_in(0, graph::kMaxContext, "the context ceiling"));
    app.add_option("--temp", s.temperature, "temperature (0: greedy)")->capture_default_str();
    app.add_option("--top-k", s.top_k, "keep the k most likely tokens (0: off)")
        ->check(whole_number_in(0, INT32_MAX))
        ->capture_default_str();
    app.add_option("--top-p", s.top_p, "keep the smallest set with this probability (1: off)")->capture_default_str();
    app.add_option("--min-p", s.min_p, "drop tokens below this fraction of the best one (0: off)")->capture_default_str();
    app.add_option("--repeat-penalty", s.repeat_penalty, "penalise recent tokens (1: off)")->capture_default_str();
    app.add_option("--repeat-last-n", s.repeat_last_n, "how many recent tokens the penalties see (-1: all)")
        ->check(whole_number_in(-1, kMaxRepeatLastN))
        ->capture_default_str();
    app.add_option("--frequency-penalty", s.frequency_penalty, "subtract count x this")->capture_default_str();
    app.add_option("--presence-penalty", s.presence_penalty, "subtract this once a token appeared")->capture_default_str();
    app.add_option("--seed", s.seed, "random seed (default: random)");
    app.add_option("--dump-plan", opt->dump_plan, "print the execution plan and exit: text (default) or json")
        ->expected(0, 1)
        ->check(CLI::IsMember({"", "text", "json"}));
    app.add_option("--batch", opt->batch, "batch size of the plan --dump-plan prints")
        ->check(whole_number_in(1, graph::kMaxBatch, "the batch ceiling"));
    add_spec_options(app, *opt);
    app.add_option("--grammar", opt->grammar_file,
                   "constrain the output to a GBNF grammar (llama.cpp's format; docs/grammars.md)");
    app.add_option("--json-schema", opt->json_schema_file,
                   "constrain the output to JSON valid under this JSON schema (file; docs/grammars.md)");
    app.add_flag("--profile", opt->profile, "print time per op kind and per graph node (stderr) at the end");
    app.add_option("--trace", opt->trace_path, "write a Chrome/Perfetto trace of every step on every thread (JSON)");
    app.callback([&app, opt] {
        if (!app.get_subcommands().empty()) return;
        GenerateOptions o = *opt;
        if (app.count("--dump-plan") && o.dump_plan.empty()) o.dump_plan = "text";
        o.temperature_given = app.count("--temp") > 0;
        check_spec_options(app, o);
        run_generate(std::move(o));
    });
}

void spell_out_long_aliases(int argc, char** argv) {
    static char model_draft[] = "--model-draft";
    for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
        if (std::strcmp(argv[i], "-md") == 0) argv[i] = model_draft;
}

}  // namespace graphrun::tools
