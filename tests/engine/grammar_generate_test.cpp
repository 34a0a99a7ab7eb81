// tests/engine/grammar_generate_test.cpp — constrained decoding end to end: the shipped model and a
// random-weight one generate under JSON schemas (greedy and sampled, several seeds) and every output
// either parses as JSON and validates against its schema, or ended by length as a valid prefix. Then
// batch invariance: a constrained and an unconstrained request sharing batches get the tokens and the
// logits (bit for bit) each gets alone.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/generate.h"
#include "engine/scheduler.h"
#include "runtime/text/grammar_match.h"
#include "runtime/text/json_schema.h"
#include "runtime/text/tokenizer.h"
#include "tests/common/same_bits.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using graph::FinishReason;
using graph::Model;
using graph::Request;
using graph::Scheduler;
using graph::TokenEvent;
using nlohmann::ordered_json;
using testing::same_bits;

std::shared_ptr<const Model> random_model() {
    static const auto model =
        Model::load(testing::random_model_file(testing::spec_of(32, 2, 4, 2, 64, 400, 11), "grammar_random"));
    return model;
}

// A validator for the constructs json_schema.h converts (the test's own reading of JSON Schema).
bool validates(const ordered_json& v, const ordered_json& s, const ordered_json& root) {
    if (s.is_boolean()) return s.get<bool>();
    if (s.contains("$ref")) {
        const std::string ref = s["$ref"];
        const std::string key = ref.rfind("#/$defs/", 0) == 0 ? "$defs" : "definitions";
        return validates(v, root[key][ref.substr(key.size() + 3)], root);
    }
    if (s.contains("const")) return v == s["const"];
    if (s.contains("enum")) return std::find(s["enum"].begin(), s["enum"].end(), v) != s["enum"].end();
    for (const char* k : {"anyOf", "oneOf"})
        if (s.contains(k)) {
            for (const auto& sub : s[k])
                if (validates(v, sub, root)) return true;
            return false;
        }
    if (!s.contains("type")) return true;
    std::vector<std::string> types;
    if (s["type"].is_string()) types.push_back(s["type"]);
    else for (const auto& t : s["type"]) types.push_back(t);
    for (const std::string& t : types) {
        if (t == "null" && v.is_null()) return true;
        if (t == "boolean" && v.is_boolean()) return true;
        if (t == "integer" && v.is_number_integer()) return true;
        if (t == "number" && v.is_number()) return true;
        if (t == "string" && v.is_string()) {
            const std::string str = v;
            int64_t n = 0;
            for (const char c : str) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
            if (s.contains("minLength") && n < s["minLength"].get<int64_t>()) continue;
            if (s.contains("maxLength") && n > s["maxLength"].get<int64_t>()) continue;
            return true;
        }
        if (t == "array" && v.is_array()) {
            if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) continue;
            if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) continue;
            bool all = true;
            for (const auto& item : v) all = all && (!s.contains("items") || validates(item, s["items"], root));
            if (all) return true;
        }
        if (t == "object" && v.is_object()) {
            bool ok = true;
            if (s.contains("required"))
                for (const auto& r : s["required"]) ok = ok && v.contains(r.get<std::string>());
            const bool extra_ok = s.contains("additionalProperties") && s["additionalProperties"] != false;
            for (const auto& [key, value] : v.items()) {
                if (s.contains("properties") && s["properties"].contains(key)) ok = ok && validates(value, s["properties"][key], root);
                else ok = ok && extra_ok;
            }
            if (ok) return true;
        }
    }
    return false;
}

const char* kPersonSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    "ok": {"type": ["boolean", "null"]}}, "required": ["name", "age"], "additionalProperties": false})";
const char* kPointsSchema = R"({"$defs": {"p": {"type": "object", "properties": {"x": {"type": "number"},
    "y": {"const": 1}}, "required": ["x", "y"]}}, "type": "array",
    "items": {"anyOf": [{"$ref": "#/$defs/p"}, {"type": "string", "minLength": 1, "maxLength": 4}]},
    "minItems": 1, "maxItems": 4})";

std::shared_ptr<const GrammarConstraint> constraint(const std::string& gbnf, const Tokenizer& tokenizer) {
    auto c = std::make_shared<GrammarConstraint>();
    c->grammar = std::make_shared<const Grammar>(grammar_parse(gbnf));
    c->vocab = GrammarVocab::from_tokenizer(tokenizer);
    return c;
}

struct GrammarOutcome {
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> logits;
    FinishReason finish = FinishReason::None;
};

// Runs the requests together in one scheduler (parallel = their number).
std::vector<GrammarOutcome> run_together(const std::shared_ptr<const Model>& model,
                                         const std::vector<Request>& requests) {
    Scheduler scheduler(model, {.parallel = int64_t(requests.size()), .n_ctx = 256, .step_tokens = 16, .n_threads = 1});
    std::vector<GrammarOutcome> runs(requests.size());
    for (size_t i = 0; i < requests.size(); ++i)
        scheduler.submit(requests[i], [&runs, i](const TokenEvent& e) {
            if (e.token >= 0) {
                runs[i].tokens.push_back(e.token);
                runs[i].logits.emplace_back(e.logits.begin(), e.logits.end());
            }
            if (e.finish != FinishReason::None) runs[i].finish = e.finish;
        });
    scheduler.run_until_idle();
    return runs;
}

void check_outputs_validate(const std::shared_ptr<const Model>& model, const std::string& label) {
    const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
    struct Case {
        std::string name, schema;
    };
    const std::vector<Case> cases = {{"person", kPersonSchema}, {"points", kPointsSchema}, {"json_object", ""}};
    int complete = 0, total = 0;
    for (const Case& c : cases) {
        const std::string gbnf = c.schema.empty() ? json_object_gbnf() : json_schema_to_gbnf(c.schema);
        const auto grammar = constraint(gbnf, tokenizer);
        const ordered_json schema = c.schema.empty() ? ordered_json{{"type", "object"}, {"additionalProperties", true}}
                                                     : ordered_json::parse(c.schema);
        std::vector<Request> requests;
        for (uint64_t seed = 1; seed <= 4; ++seed) {
            Request r;
            r.prompt = tokenizer.encode("The answer, as JSON:", tokenizer.add_bos());
            r.sampling.temperature = seed == 1 ? 0.0f : 1.3f;
            r.sampling.top_k = 0;
            r.sampling.top_p = 1.0f;
            r.sampling.min_p = 0.0f;
            r.sampling.seed = seed;
            r.sampling.grammar = grammar;
            r.max_tokens = 160;
            const auto eog = tokenizer.end_of_generation();
            r.stop_ids.assign(eog.begin(), eog.end());
            requests.push_back(r);
        }
        const std::vector<GrammarOutcome> runs = run_together(model, requests);
        for (size_t i = 0; i < runs.size(); ++i) {
            const GrammarOutcome& run = runs[i];
            std::vector<int32_t> text_ids = run.tokens;
            if (run.finish == FinishReason::Stop) text_ids.pop_back();  // the end token
            const std::string text = tokenizer.decode(text_ids);
            const std::string where = label + " " + c.name + " seed " + std::to_string(i + 1) + ": " + text;
            ++total;
            if (run.finish == FinishReason::Length) {
                GrammarMatcher m(*grammar->grammar);
                std::string bytes;
                for (const int32_t t : text_ids) bytes += grammar->vocab->bytes(t);
                EXPECT_TRUE(m.accept(bytes)) << "a length-cut output is not a valid prefix: " << where;
                continue;
            }
            ASSERT_EQ(run.finish, FinishReason::Stop) << where;
            ++complete;
            EXPECT_TRUE(grammar_matches(*grammar->grammar, text)) << where;
            ordered_json value;
            ASSERT_NO_THROW(value = ordered_json::parse(text)) << where;
            EXPECT_TRUE(validates(value, schema, schema)) << where;
        }
    }
    std::printf("%s: %d of %d outputs complete, the rest cut by max_tokens\n", label.c_str(), complete, total);
}

TEST(GrammarGenerate, ShippedModelOutputsValidateAgainstTheirSchemas) {
    check_outputs_validate(testing::kjv_model(), "kjv-q8_0");
}

TEST(GrammarGenerate, RandomModelOutputsValidateAgainstTheirSchemas) {
    check_outputs_validate(random_model(), "random");
}

// The decode loop of the command line (generate) under a grammar, greedy: a complete match or a cut.
TEST(GrammarGenerate, GenerateLoopKeepsToTheGrammar) {
    const Tokenizer tokenizer = Tokenizer::from_gguf(testing::kjv_model()->file());
    const auto grammar = constraint("root ::= \"In the \" [a-z ]{1,30} \".\"", tokenizer);
    graph::Session session(testing::kjv_model(), {.n_ctx = 128, .n_threads = 1});
    SamplerParams p;
    p.temperature = 0.0f;
    p.grammar = grammar;
    Sampler sampler(p, int32_t(session.n_vocab()));
    std::vector<int32_t> out;
    const auto prompt = tokenizer.encode("And God said,", tokenizer.add_bos());
    graph::generate(session, sampler, prompt, 64, [&](int32_t t) {
        if (tokenizer.is_end_of_generation(t)) return false;
        out.push_back(t);
        return true;
    });
    const std::string text = tokenizer.decode(out);
    EXPECT_TRUE(grammar_matches(*grammar->grammar, text)) << text;
}

TEST(GrammarGenerate, ConstrainedAndUnconstrainedShareBatchesWithoutChangingBits) {
    for (const auto& model : {testing::kjv_model(), random_model()}) {
        const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
        Request constrained;
        constrained.prompt = tokenizer.encode("Give me JSON:", tokenizer.add_bos());
        constrained.sampling.temperature = 0.9f;
        constrained.sampling.seed = 5;
        constrained.sampling.grammar = constraint(json_schema_to_gbnf(kPersonSchema), tokenizer);
        constrained.max_tokens = 40;
        Request plain;
        plain.prompt = tokenizer.encode("In the beginning", tokenizer.add_bos());
        plain.sampling.temperature = 0.9f;
        plain.sampling.seed = 6;
        plain.max_tokens = 40;
        const GrammarOutcome constrained_alone = run_together(model, {constrained})[0];
        const GrammarOutcome plain_alone = run_together(model, {plain})[0];
        const std::vector<GrammarOutcome> both = run_together(model, {constrained, plain});
        EXPECT_EQ(both[0].tokens, constrained_alone.tokens);
        EXPECT_EQ(both[1].tokens, plain_alone.tokens);
        ASSERT_EQ(both[0].logits.size(), constrained_alone.logits.size());
        ASSERT_EQ(both[1].logits.size(), plain_alone.logits.size());
        for (size_t i = 0; i < both[0].logits.size(); ++i)
            EXPECT_TRUE(same_bits(both[0].logits[i], constrained_alone.logits[i])) << "constrained row " << i;
        for (size_t i = 0; i < both[1].logits.size(); ++i)
            EXPECT_TRUE(same_bits(both[1].logits[i], plain_alone.logits[i])) << "unconstrained row " << i;
        // The constrained output is inside the grammar; the other is not held to it.
        GrammarMatcher m(*constrained.sampling.grammar->grammar);
        std::string bytes;
        for (const int32_t t : both[0].tokens) bytes += constrained.sampling.grammar->vocab->bytes(t);
        EXPECT_TRUE(m.accept(bytes));
    }
}

}  // namespace
}  // namespace graphrun
