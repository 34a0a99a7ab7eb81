// server/embedding_request.cpp — see embedding_request.h.
#include "server/embedding_request.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "server/api_request.h"
#include "server/request_fields.h"

namespace graphrun::server {

using nlohmann::json;
using namespace request_fields;

namespace {

// One token id: an integer (3.0 is one to JavaScript clients) in [0, 2^31).
int32_t token_id(const json& v, const std::string& at) {
    if (!v.is_number() || (v.is_number_float() && v.get<double>() != std::floor(v.get<double>())))
        wrong_type(at, "a token id (an integer)", v);
    const double x = v.get<double>();
    if (!(x >= 0 && x <= double(std::numeric_limits<int32_t>::max())))
        bad(at, "'" + at + "' is " + v.dump() + ", not a token id");
    return int32_t(x);
}

EmbeddingInput ids_input(const json& array, const std::string& at) {
    EmbeddingInput in{.param = at, .is_ids = true};
    if (array.empty()) bad(at, "'" + at + "' is an empty array of token ids: there is nothing to embed");
    for (size_t j = 0; j < array.size(); ++j)
        in.ids.push_back(token_id(array[j], at + "[" + std::to_string(j) + "]"));
    return in;
}

EmbeddingInput text_input(const json& v, const std::string& at) {
    if (v.get_ref<const std::string&>().empty()) bad(at, "'" + at + "' is empty: there is nothing to embed");
    return {.param = at, .text = v.get<std::string>()};
}

// A string, or an array of strings, of token ids, or of arrays of token ids (its first entry says
// which; every other must be the same kind).
std::vector<EmbeddingInput> get_inputs(const json& body) {
    const json* v = field(body, "input");
    if (!v)
        bad("input", "'input' is required: a string, an array of strings or of token ids", "missing_field");
    if (v->is_string()) return {text_input(*v, "input")};
    if (!v->is_array())
        wrong_type("input",
                   "a string, an array of strings, an array of token ids or an array of arrays of them", *v);
    if (v->empty()) bad("input", "'input' is an empty array: there is nothing to embed");
    const json& first = (*v)[0];
    if (first.is_number()) return {ids_input(*v, "input")};
    if (v->size() > kMaxEmbeddingInputs)
        bad("input", "'input' holds " + std::to_string(v->size()) + " inputs, at most " +
                         std::to_string(kMaxEmbeddingInputs));
    std::vector<EmbeddingInput> inputs;
    for (size_t i = 0; i < v->size(); ++i) {
        const json& e = (*v)[i];
        const std::string at = "input[" + std::to_string(i) + "]";
        if (first.is_string()) {
            if (!e.is_string()) wrong_type(at, "a string, as input[0] is", e);
            inputs.push_back(text_input(e, at));
        } else if (first.is_array()) {
            if (!e.is_array()) wrong_type(at, "an array of token ids, as input[0] is", e);
            inputs.push_back(ids_input(e, at));
        } else {
            wrong_type(at, "a string, a token id or an array of token ids", e);
        }
    }
    return inputs;
}

}  // namespace

EmbeddingRequest parse_embedding_request(const std::string& body) {
    return parse_embedding_request(parse_json_object(body));
}

EmbeddingRequest parse_embedding_request(const json& body) {
    EmbeddingRequest r;
    for (const auto& [key, value] : body.items()) {
        if (value.is_null() || key == "input") continue;
        if (key == "model") {
            if (!value.is_string()) wrong_type("model", "a string", value);
            r.model = value.get<std::string>();
        } else if (key == "encoding_format") {
            const std::string format = value.is_string() ? value.get<std::string>() : "";
            if (format != "float" && format != "base64")
                bad("encoding_format",
                    "'encoding_format' must be \"float\" or \"base64\", got " + value.dump());
            r.base64 = format == "base64";
        } else if (key == "user") {  // an identifier for OpenAI's abuse monitoring
            if (!value.is_string()) wrong_type("user", "a string", value);
        } else if (key == "dimensions") {
            unsupported("dimensions", "asks for a shorter embedding than the model's (n_embd, /v1/models)");
        } else {
            unknown_field(key, "of /v1/embeddings");
        }
    }
    r.inputs = get_inputs(body);
    return r;
}

}  // namespace graphrun::server
