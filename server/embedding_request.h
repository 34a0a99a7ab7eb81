// server/embedding_request.h — the body of POST /v1/embeddings, checked.
//
// OpenAI's fields: `input` a string, an array of strings, an array of token ids or an array of
// arrays of token ids; `model` (any name: the loaded model answers); `encoding_format` "float" or
// "base64" (the floats' little-endian bytes); `user` accepted without effect. `dimensions` (a
// shorter vector) is refused, and any other field is unknown and refused: nothing is ignored
// silently (docs/server.md). Token ids are held to the vocabulary, and every input to the context,
// by the route, which knows them. Like api_request.h, this throws nothing but ApiError.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace graphrun::server {

inline constexpr size_t kMaxEmbeddingInputs = 2048;  // entries of `input` at most (OpenAI's limit)

struct EmbeddingInput {
    std::string param{};  // the field as errors name it: "input", "input[2]"
    std::string text{};
    std::vector<int32_t> ids{};  // when is_ids: the tokens as given, no BOS added
    bool is_ids = false;
};

struct EmbeddingRequest {
    std::string model;
    std::vector<EmbeddingInput> inputs;  // at least one, none empty
    bool base64 = false;                 // encoding_format "base64"
};

EmbeddingRequest parse_embedding_request(const std::string& body);
EmbeddingRequest parse_embedding_request(const nlohmann::json& body);

}  // namespace graphrun::server
