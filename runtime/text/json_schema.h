// runtime/text/json_schema.h — JSON Schema -> GBNF (grammar.h), for structured output.
//
// What is covered, and how (docs/grammars.md has the table):
//   type: object, array, string, number, integer, boolean, null, or an array of them (["string","null"])
//   object: properties (emitted in the order declared), required, additionalProperties: false or
//           absent = only the listed properties; true or a schema = other keys may follow them
//   array: items, minItems, maxItems;  string: minLength, maxLength
//   enum, const, anyOf, oneOf (as anyOf: exclusivity is not checked), $ref to #/$defs/... or
//   #/definitions/... (recursion allowed), the empty schema / true (any JSON value)
//   annotations are accepted without effect: title, description, default, examples, $schema, $id,
//   $comment, deprecated, readOnly, writeOnly, and $defs/definitions themselves
// Any other keyword (pattern, format, minimum, allOf, ...) is refused with a JsonSchemaError naming it
// and its JSON-pointer path ("#/properties/age/minimum"): never silently ignored.
//
// Whitespace between tokens is bounded (at most kJsonWsMax characters in a row), and numbers have at
// most 16 digits before and after the point, so a model cannot loop forever on spaces or digits.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace graphrun {

inline constexpr int kJsonWsMax = 16;
// Schemas nest at most this deep (objects and arrays of the schema text).
inline constexpr int kJsonSchemaMaxDepth = 64;

class JsonSchemaError : public std::invalid_argument {
  public:
    JsonSchemaError(const std::string& path, const std::string& what)
        : std::invalid_argument("[json_schema] " + what + " at " + path), path_(path) {}
    const std::string& path() const { return path_; }  // "#/properties/age"

  private:
    std::string path_;
};

// The GBNF of a schema given as JSON text. Throws JsonSchemaError (a malformed or unsupported schema).
std::string json_schema_to_gbnf(std::string_view schema_json);

// The rules of a schema as part of a larger grammar (several schemas in one, as tool calls have):
// `name ::= ...` and its helper rules, named name-r1, name-r2, ...; they use the shared rules of
// json_primitives_gbnf() (ws, json-string, json-value, ...), which the caller adds once.
std::string json_schema_rules_gbnf(std::string_view schema_json, const std::string& name);
// Those shared rules. `compact`: ws is at most one space (no newline: a call stays on one line).
std::string json_primitives_gbnf(bool compact);

// The GBNF of any JSON object (OpenAI's response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace graphrun
