// tests/text/json_schema_test.cpp — each JSON-schema construct converted to GBNF, then held to texts it
// must accept and texts it must refuse; unsupported keywords refused by name and path.
#include "runtime/text/json_schema.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/text/grammar.h"
#include "runtime/text/grammar_match.h"

namespace graphrun {
namespace {

struct Schema {
    Grammar g;
    explicit Schema(const std::string& schema) : g(grammar_parse(json_schema_to_gbnf(schema))) {}
    bool ok(const std::string& text) const { return grammar_matches(g, text); }
};

std::string schema_error(const std::string& schema) {
    try {
        json_schema_to_gbnf(schema);
    } catch (const JsonSchemaError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(JsonSchema, Primitives) {
    const Schema s(R"({"type": "string"})");
    EXPECT_TRUE(s.ok(R"("hi \"there\" \u00e9 é")"));
    EXPECT_FALSE(s.ok(R"("unterminated)"));
    EXPECT_FALSE(s.ok("\"raw\nnewline\""));
    const Schema n(R"({"type": "number"})");
    for (const char* t : {"0", "-1.5", "3e10", "12.25E-3"}) EXPECT_TRUE(n.ok(t)) << t;
    for (const char* t : {"01", "1.", "+1", "\"1\""}) EXPECT_FALSE(n.ok(t)) << t;
    const Schema i(R"({"type": "integer"})");
    EXPECT_TRUE(i.ok("-42"));
    EXPECT_FALSE(i.ok("4.2"));
    EXPECT_FALSE(i.ok(std::string(17, '9')));  // digits are bounded
    EXPECT_TRUE(Schema(R"({"type": "boolean"})").ok("false"));
    EXPECT_TRUE(Schema(R"({"type": "null"})").ok("null"));
    EXPECT_FALSE(Schema(R"({"type": "null"})").ok("nul"));
}

TEST(JsonSchema, ObjectsKeepDeclaredOrderAndRequiredProperties) {
    const Schema s(R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                      "tag": {"type": "string"}}, "required": ["name", "tag"], "additionalProperties": false})");
    EXPECT_TRUE(s.ok(R"({"name": "a", "age": 3, "tag": "x"})"));
    EXPECT_TRUE(s.ok(R"({"name":"a","tag":"x"})"));
    EXPECT_TRUE(s.ok("{\n  \"name\": \"a\",\n  \"tag\": \"x\"\n}"));
    EXPECT_FALSE(s.ok(R"({"name": "a"})"));                         // tag is required
    EXPECT_FALSE(s.ok(R"({"tag": "x", "name": "a"})"));             // declared order
    EXPECT_FALSE(s.ok(R"({"name": "a", "tag": "x", "other": 1})"));  // no extra keys
    EXPECT_FALSE(s.ok(R"({"name": "a", "age": "3", "tag": "x"})"));
    EXPECT_FALSE(s.ok(R"({"name": "a",, "tag": "x"})"));
    const Schema optional(R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})");
    for (const char* t : {"{}", R"({"a": 1})", R"({"b": 2})", R"({"a": 1, "b": 2})"}) EXPECT_TRUE(optional.ok(t)) << t;
    EXPECT_FALSE(optional.ok(R"({, "b": 2})"));
    EXPECT_FALSE(optional.ok(R"({"a": 1,})"));
}

TEST(JsonSchema, AdditionalPropertiesTrueOrASchema) {
    const Schema any(R"({"properties": {"a": {"type": "integer"}}, "additionalProperties": true})");
    EXPECT_TRUE(any.ok(R"({"a": 1, "x": [1, {"y": null}]})"));
    EXPECT_TRUE(any.ok(R"({"x": "y"})"));
    const Schema typed(R"({"type": "object", "additionalProperties": {"type": "boolean"}})");
    EXPECT_TRUE(typed.ok(R"({"p": true, "q": false})"));
    EXPECT_FALSE(typed.ok(R"({"p": 1})"));
}

TEST(JsonSchema, ArraysWithBounds) {
    const Schema s(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
    EXPECT_FALSE(s.ok("[1]"));
    EXPECT_TRUE(s.ok("[1, 2]"));
    EXPECT_TRUE(s.ok("[1,2,3]"));
    EXPECT_FALSE(s.ok("[1, 2, 3, 4]"));
    EXPECT_FALSE(s.ok("[1, \"2\"]"));
    const Schema open(R"({"type": "array"})");
    EXPECT_TRUE(open.ok("[]"));
    EXPECT_TRUE(open.ok("[1, \"a\", [], {}]"));
    EXPECT_TRUE(Schema(R"({"type": "array", "maxItems": 0})").ok("[ ]"));
}

TEST(JsonSchema, StringLengths) {
    const Schema s(R"({"type": "string", "minLength": 2, "maxLength": 3})");
    EXPECT_FALSE(s.ok(R"("a")"));
    EXPECT_TRUE(s.ok(R"("ab")"));
    EXPECT_TRUE(s.ok(R"("a\nb")"));  // an escape is one character
    EXPECT_FALSE(s.ok(R"("abcd")"));
}

// zod's z.number().int() sends the safe-integer bounds; bounds keep every integer made within them.
TEST(JsonSchema, IntegerBoundsLimitTheDigits) {
    const Schema safe(R"({"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991})");
    EXPECT_TRUE(safe.ok("0"));
    EXPECT_TRUE(safe.ok("-42"));
    EXPECT_TRUE(safe.ok("999999999999999"));     // 15 digits
    EXPECT_FALSE(safe.ok("9999999999999999"));   // 16 digits could pass 2^53 - 1
    EXPECT_FALSE(safe.ok("1.5"));
    const Schema small(R"({"type": "integer", "minimum": 0, "maximum": 150})");
    EXPECT_TRUE(small.ok("0"));
    EXPECT_TRUE(small.ok("99"));
    EXPECT_FALSE(small.ok("100"));  // within 150, but three digits could reach 999
    EXPECT_FALSE(small.ok("-1"));
    EXPECT_TRUE(Schema(R"({"type": "integer", "maximum": 0})").ok("0"));
    EXPECT_FALSE(Schema(R"({"type": "integer", "maximum": 0})").ok("5"));
    EXPECT_TRUE(Schema(R"({"type": "integer", "minimum": -9})").ok("-9"));
    EXPECT_FALSE(Schema(R"({"type": "integer", "minimum": -9})").ok("-10"));
    EXPECT_TRUE(Schema(R"({"type": "integer", "minimum": -9})").ok("1234"));
    EXPECT_FALSE(Schema(R"({"type": "integer", "minimum": -5})").ok("-1"));  // no negative digit count fits
    EXPECT_TRUE(Schema(R"({"type": "integer", "minimum": -5})").ok("7"));
}

TEST(JsonSchema, EnumConstAnyOfOneOfAndTypeArrays) {
    const Schema e(R"({"enum": ["red", "green", 3, null]})");
    for (const char* t : {"\"red\"", "\"green\"", "3", "null"}) EXPECT_TRUE(e.ok(t)) << t;
    EXPECT_FALSE(e.ok("\"blue\""));
    EXPECT_TRUE(Schema(R"({"const": {"k": [1, "v"]}})").ok(R"({"k":[1,"v"]})"));
    const Schema a(R"({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]})");
    EXPECT_TRUE(a.ok("7"));
    EXPECT_TRUE(a.ok("[\"x\"]"));
    EXPECT_FALSE(a.ok("[7]"));
    EXPECT_TRUE(Schema(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})").ok("null"));
    const Schema t(R"({"type": ["string", "null"], "maxLength": 1})");
    EXPECT_TRUE(t.ok("null"));
    EXPECT_TRUE(t.ok("\"a\""));
    EXPECT_FALSE(t.ok("\"ab\""));
}

TEST(JsonSchema, NestedObjectsAndRefs) {
    const Schema s(R"({"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                      "required": ["x", "y"]}},
                      "type": "object", "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}},
                      "required": ["from", "to"]})");
    EXPECT_TRUE(s.ok(R"({"from": {"x": 1, "y": 2}, "to": {"x": 3.5, "y": -1}})"));
    EXPECT_FALSE(s.ok(R"({"from": {"x": 1}, "to": {"x": 3.5, "y": -1}})"));
    // A recursive definition (a tree), through "definitions".
    const Schema tree(R"({"definitions": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                         "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}, "required": ["v"]}},
                         "$ref": "#/definitions/node"})");
    EXPECT_TRUE(tree.ok(R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"));
    EXPECT_FALSE(tree.ok(R"({"v": 1, "kids": [{"w": 2}]})"));
}

TEST(JsonSchema, AnnotationsAreAcceptedAnyValueForEmptySchema) {
    const Schema s(R"({"title": "T", "description": "d", "$schema": "x", "type": "object",
                      "properties": {"a": {"description": "anything"}}, "required": ["a"]})");
    EXPECT_TRUE(s.ok(R"({"a": [true, {"b": null}]})"));
    EXPECT_TRUE(Schema("true").ok("\"x\""));
}

TEST(JsonSchema, UnsupportedKeywordsAreRefusedByNameAndPath) {
    EXPECT_EQ(schema_error(R"({"type": "object", "properties": {"name": {"type": "string", "pattern": "^a"}}})"),
              "[json_schema] unsupported keyword 'pattern' at #/properties/name/pattern");
    EXPECT_EQ(schema_error(R"({"type": "number", "minimum": 0})"), "[json_schema] unsupported keyword 'minimum' at #/minimum");
    EXPECT_NE(schema_error(R"({"type": "integer", "minimum": 1})").find("'minimum' above 0 is not supported"),
              std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "integer", "maximum": -1})").find("at #/maximum"), std::string::npos);
    EXPECT_EQ(schema_error(R"({"allOf": [{"type": "string"}]})"), "[json_schema] unsupported keyword 'allOf' at #/allOf");
    EXPECT_EQ(schema_error(R"({"type": "string", "format": "date-time"})"),
              "[json_schema] unsupported keyword 'format' at #/format");
    EXPECT_NE(schema_error(R"({"$ref": "#/$defs/missing"})").find("does not define"), std::string::npos);
    EXPECT_NE(schema_error(R"({"$ref": "http://x/y"})").find("is not supported"), std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "tuple"})").find("unknown type 'tuple' at #/type"), std::string::npos);
    EXPECT_NE(schema_error(R"({"properties": {"a": {}}, "required": ["b"]})").find("'b', which is not in"), std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "array", "minItems": 3, "maxItems": 1})").find("below 'minItems'"), std::string::npos);
    EXPECT_NE(schema_error("{not json").find("is not JSON"), std::string::npos);
    EXPECT_NE(schema_error(std::string(100, '[')).find("nests deeper than 64"), std::string::npos);
    EXPECT_NE(schema_error("false").find("matches nothing"), std::string::npos);
}

TEST(JsonSchema, JsonObjectGrammar) {
    const Grammar g = grammar_parse(json_object_gbnf());
    EXPECT_TRUE(grammar_matches(g, R"({"a": [1, 2.5, "x", true, null, {"b": {}}]})"));
    EXPECT_FALSE(grammar_matches(g, "[1]"));
    EXPECT_FALSE(grammar_matches(g, R"({"a": 1,})"));
    EXPECT_FALSE(grammar_matches(g, std::string("{") + std::string(kJsonWsMax + 1, ' ') + "}"));  // bounded spaces
}

}  // namespace
}  // namespace graphrun
