// runtime/text/json_schema.cpp — the schema walk of json_schema.h: each schema becomes a rule whose
// body is built from the shared primitives below; every keyword read is marked, and one left unread
// (and not an annotation) is refused by name.
#include "runtime/text/json_schema.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/json_depth.h"

namespace graphrun {

namespace {

using json = nlohmann::ordered_json;  // keeps properties in the order declared

// The primitives every converted grammar shares: bounded whitespace, JSON strings, numbers, values.
std::string primitives(bool compact = false) {
    const std::string ws = std::to_string(kJsonWsMax);
    return (compact ? std::string("ws ::= \" \"?\n") : "ws ::= [ \\t\\n\\r]{0," + ws + "}\n") +
           "json-char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
           "json-string ::= \"\\\"\" json-char* \"\\\"\"\n"
           "json-int ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15})\n"
           "json-number ::= json-int (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?\n"
           "json-boolean ::= \"true\" | \"false\"\n"
           "json-null ::= \"null\"\n"
           "json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null\n"
           "json-object ::= \"{\" ws (json-string ws \":\" ws json-value ws (\",\" ws json-string ws \":\" ws json-value ws)*)? \"}\"\n"
           "json-array ::= \"[\" ws (json-value ws (\",\" ws json-value ws)*)? \"]\"\n";
}

// A GBNF literal for bytes s: quotes and backslashes escaped, control characters as \xHH.
std::string literal(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        const auto b = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (b < 0x20) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[b >> 4];
            out += hex[b & 15];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

const std::set<std::string>& annotations() {
    static const std::set<std::string> a{"title", "description", "default", "examples", "$schema", "$id",
                                         "$comment", "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};
    return a;
}

std::string pointer_token(const std::string& key) {
    std::string out;
    for (const char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

class Converter {
  public:
    // Rules are named prefix + "r1", "r2", ...
    Converter(const json& root, std::string prefix) : root_(root), prefix_(std::move(prefix)) {}

    // `name ::= ...` and the rules it uses, without the primitives.
    std::string rules(const std::string& name) {
        const std::string top = visit(root_, "#");
        std::string out = name + " ::= " + top + "\n";
        for (const auto& [rule, body] : rules_) out += rule + " ::= " + body + "\n";
        return out;
    }

  private:
    // Marks the keywords of one schema object as they are read; check() refuses the rest.
    struct Keys {
        const json& schema;
        const std::string& path;
        std::set<std::string> used{};
        const json* get(const std::string& key) {
            const auto it = schema.find(key);
            if (it == schema.end()) return nullptr;
            used.insert(key);
            return &*it;
        }
        void check() const {
            for (const auto& [key, value] : schema.items())
                if (!used.count(key) && !annotations().count(key))
                    throw JsonSchemaError(path + "/" + pointer_token(key), "unsupported keyword '" + key + "'");
        }
    };

    std::string new_rule(const std::string& path, std::string body) {
        std::string name = prefix_ + "r" + std::to_string(rules_.size() + 1);
        (void)path;
        rules_.emplace_back(name, std::move(body));
        return name;
    }

    static int64_t count(const json* v, const std::string& path, const char* key) {
        if (!v) return -1;
        if (!v->is_number_integer() || v->get<int64_t>() < 0)
            throw JsonSchemaError(path + "/" + key, std::string("'") + key + "' must be an integer >= 0");
        if (v->get<int64_t>() > 10000)
            throw JsonSchemaError(path + "/" + key, std::string("'") + key + "' is above the 10000 supported");
        return v->get<int64_t>();
    }

    // A rule name (or a primitive's) for the schema at `path`.
    std::string visit(const json& schema, const std::string& path) {
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) throw JsonSchemaError(path, "the schema 'false' matches nothing");
            return "json-value";
        }
        if (!schema.is_object()) throw JsonSchemaError(path, "a schema must be an object or a boolean");
        Keys keys{schema, path};
        std::string result = visit_keys(keys);
        keys.check();
        return result;
    }

    std::string visit_keys(Keys& k) {
        const std::string& path = k.path;
        if (const json* ref = k.get("$ref")) return visit_ref(*ref, path + "/$ref");
        if (const json* c = k.get("const")) {
            k.get("type");
            return new_rule(path, literal(c->dump()));
        }
        if (const json* e = k.get("enum")) {
            k.get("type");
            if (!e->is_array() || e->empty()) throw JsonSchemaError(path + "/enum", "'enum' must be a non-empty array");
            std::string body;
            for (const json& v : *e) body += (body.empty() ? "" : " | ") + literal(v.dump());
            return new_rule(path, body);
        }
        for (const char* key : {"anyOf", "oneOf"})
            if (const json* any = k.get(key)) {
                if (!any->is_array() || any->empty())
                    throw JsonSchemaError(path + "/" + key, std::string("'") + key + "' must be a non-empty array");
                std::string body;
                for (size_t i = 0; i < any->size(); ++i)
                    body += (i ? " | " : "") + visit((*any)[i], path + "/" + key + "/" + std::to_string(i));
                return new_rule(path, body);
            }
        std::vector<std::string> types;
        if (const json* t = k.get("type")) {
            if (t->is_string()) types.push_back(t->get<std::string>());
            else if (t->is_array() && !t->empty())
                for (const json& one : *t) {
                    if (!one.is_string()) throw JsonSchemaError(path + "/type", "'type' must hold type names");
                    types.push_back(one.get<std::string>());
                }
            else throw JsonSchemaError(path + "/type", "'type' must be a type name or a non-empty array of them");
        } else if (k.schema.contains("properties") || k.schema.contains("additionalProperties") ||
                   k.schema.contains("required")) {
            types.push_back("object");
        } else if (k.schema.contains("items") || k.schema.contains("minItems") || k.schema.contains("maxItems")) {
            types.push_back("array");
        } else if (k.schema.contains("minLength") || k.schema.contains("maxLength")) {
            types.push_back("string");
        } else {
            return "json-value";
        }
        std::string body;
        for (const std::string& t : types) body += (body.empty() ? "" : " | ") + visit_type(k, t);
        return types.size() == 1 ? body : new_rule(path, body);
    }

    std::string visit_type(Keys& k, const std::string& type) {
        const std::string& path = k.path;
        if (type == "object") return visit_object(k);
        if (type == "array") return visit_array(k);
        if (type == "string") {
            const int64_t min = count(k.get("minLength"), path, "minLength");
            const int64_t max = count(k.get("maxLength"), path, "maxLength");
            if (min < 0 && max < 0) return "json-string";
            if (max >= 0 && max < std::max<int64_t>(min, 0))
                throw JsonSchemaError(path + "/maxLength", "'maxLength' is below 'minLength'");
            const std::string rep = "{" + std::to_string(std::max<int64_t>(min, 0)) + "," +
                                    (max >= 0 ? std::to_string(max) : "") + "}";
            return new_rule(path, "\"\\\"\" json-char" + rep + " \"\\\"\"");
        }
        if (type == "number") return "json-number";
        if (type == "integer") return visit_integer(k);
        if (type == "boolean") return "json-boolean";
        if (type == "null") return "json-null";
        throw JsonSchemaError(path + "/type", "unknown type '" + type + "'");
    }

    // Integer "minimum"/"maximum" (zod's z.number().int() sends +-(2^53 - 1)) bound the digit count: each side
    // allows the most digits d whose 10^d - 1 still lies within its bound, so every integer the grammar makes is
    // in range, though not every integer in range can be made (maximum 50 allows 0..9). A minimum above 0 or a
    // maximum below 0 (which would exclude 0) is refused.
    std::string visit_integer(Keys& k) {
        const std::string& path = k.path;
        const json* lo = k.get("minimum");
        const json* hi = k.get("maximum");
        if (!lo && !hi) return "json-int";
        for (const auto& [v, key] : {std::pair{lo, "minimum"}, std::pair{hi, "maximum"}})
            if (v && !v->is_number())
                throw JsonSchemaError(path + "/" + key, std::string("'") + key + "' must be a number");
        if (lo && lo->get<double>() > 0)
            throw JsonSchemaError(path + "/minimum", "'minimum' above 0 is not supported (only bounds that allow 0)");
        if (hi && hi->get<double>() < 0)
            throw JsonSchemaError(path + "/maximum", "'maximum' below 0 is not supported (only bounds that allow 0)");
        // The most digits (up to json-int's 16) whose largest number, 10^d - 1, is <= bound.
        const auto digits = [](const json* bound) {
            if (!bound) return 16;
            const double b = std::fabs(bound->get<double>());
            int d = 0;
            for (double top = 9; d < 16 && top <= b; top = top * 10 + 9) ++d;
            return d;
        };
        const auto magnitude = [](int d) { return d == 0 ? std::string() : " | [1-9] [0-9]{0," + std::to_string(d - 1) + "}"; };
        const int pos = digits(hi), neg = digits(lo);
        std::string body = "\"0\"" + magnitude(pos);
        if (neg > 0) body += " | \"-\" [1-9] [0-9]{0," + std::to_string(neg - 1) + "}";
        return new_rule(path, body);
    }

    std::string visit_ref(const json& ref, const std::string& path) {
        if (!ref.is_string()) throw JsonSchemaError(path, "'$ref' must be a string");
        const std::string target = ref.get<std::string>();
        if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
        std::string key;
        for (const char* prefix : {"#/$defs/", "#/definitions/"})
            if (target.rfind(prefix, 0) == 0) {
                key = std::string(prefix).substr(2, std::string(prefix).size() - 3);  // "$defs" / "definitions"
                const std::string name = target.substr(std::string(prefix).size());
                const auto defs = root_.find(key);
                if (defs == root_.end() || !defs->is_object() || !defs->contains(name))
                    throw JsonSchemaError(path, "'$ref' names '" + target + "', which the schema does not define");
                // The rule exists before its body is made, so a recursive reference finds it.
                const std::string rule = prefix_ + "r" + std::to_string(rules_.size() + 1);
                rules_.emplace_back(rule, "");
                const size_t slot = rules_.size() - 1;
                refs_[target] = rule;
                const std::string body = visit((*defs)[name], target);
                rules_[slot].second = body;
                return rule;
            }
        throw JsonSchemaError(path, "'$ref' " + target + " is not supported (only #/$defs/... and #/definitions/...)");
    }

    std::string visit_object(Keys& k) {
        const std::string& path = k.path;
        const json* props = k.get("properties");
        const json* req = k.get("required");
        const json* extra = k.get("additionalProperties");
        if (props && !props->is_object()) throw JsonSchemaError(path + "/properties", "'properties' must be an object");
        std::set<std::string> required;
        if (req) {
            if (!req->is_array()) throw JsonSchemaError(path + "/required", "'required' must be an array of names");
            for (const json& r : *req) {
                if (!r.is_string()) throw JsonSchemaError(path + "/required", "'required' must be an array of names");
                if (!props || !props->contains(r.get<std::string>()))
                    throw JsonSchemaError(path + "/required", "'required' names '" + r.get<std::string>() +
                                                                  "', which is not in 'properties'");
                required.insert(r.get<std::string>());
            }
        }
        // Other keys: their values' rule, or empty when none may appear.
        std::string extra_value;
        if (extra && extra->is_boolean()) extra_value = extra->get<bool>() ? "json-value" : "";
        else if (extra) extra_value = visit(*extra, path + "/additionalProperties");
        struct Prop {
            std::string kv;
            bool required;
        };
        std::vector<Prop> list;
        if (props)
            for (const auto& [name, sub] : props->items()) {
                const std::string value = visit(sub, path + "/properties/" + pointer_token(name));
                list.push_back({new_rule(path, literal(json(name).dump()) + " ws \":\" ws " + value + " ws"),
                                required.count(name) > 0});
            }
        // after[i]: what may follow once some property is written, from property i on;
        // first[i]: what may come when none is written yet.
        const size_t n = list.size();
        std::string extra_kv = extra_value.empty() ? "" : new_rule(path, "json-string ws \":\" ws " + extra_value + " ws");
        std::string after = extra_kv.empty() ? "" : new_rule(path, "(\",\" ws " + extra_kv + ")*");
        std::string first = extra_kv.empty() ? "" : new_rule(path, "(" + extra_kv + " " + after + ")?");
        for (size_t i = n; i-- > 0;) {
            const Prop& p = list[i];
            const std::string next_after = after;
            const std::string once = p.kv + (next_after.empty() ? "" : " " + next_after);
            first = new_rule(path, p.required ? once : once + (first.empty() ? " | " : " | " + first));
            after = new_rule(path, p.required ? "\",\" ws " + once
                                              : "(\",\" ws " + p.kv + ")?" + (next_after.empty() ? "" : " " + next_after));
        }
        return new_rule(path, "\"{\" ws " + (first.empty() ? "" : first + " ") + "\"}\"");
    }

    std::string visit_array(Keys& k) {
        const std::string& path = k.path;
        const json* items = k.get("items");
        const std::string item = items ? visit(*items, path + "/items") : "json-value";
        const int64_t min = std::max<int64_t>(count(k.get("minItems"), path, "minItems"), 0);
        const int64_t max = count(k.get("maxItems"), path, "maxItems");
        if (max >= 0 && max < min) throw JsonSchemaError(path + "/maxItems", "'maxItems' is below 'minItems'");
        if (max == 0) return new_rule(path, "\"[\" ws \"]\"");
        const std::string more = "(\",\" ws " + item + " ws){" + std::to_string(std::max<int64_t>(min - 1, 0)) + "," +
                                 (max >= 0 ? std::to_string(max - 1) : "") + "}";
        const std::string list = item + " ws " + more;
        return new_rule(path, "\"[\" ws " + (min == 0 ? "(" + list + ")?" : list) + " \"]\"");
    }

    const json& root_;
    std::string prefix_;
    std::vector<std::pair<std::string, std::string>> rules_;
    std::map<std::string, std::string> refs_;
};

json parse_schema(std::string_view schema_json) {
    if (graph::json_too_deep_at(schema_json, kJsonSchemaMaxDepth) != std::string_view::npos)
        throw JsonSchemaError("#", "the schema nests deeper than " + std::to_string(kJsonSchemaMaxDepth) + " levels");
    json schema;
    try {
        schema = json::parse(schema_json);
    } catch (const json::parse_error& e) {
        throw JsonSchemaError("#", std::string("the schema is not JSON (") + e.what() + ")");
    }
    return schema;
}

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_json) {
    const json schema = parse_schema(schema_json);
    return Converter(schema, "").rules("root") + primitives();
}

std::string json_schema_rules_gbnf(std::string_view schema_json, const std::string& name) {
    const json schema = parse_schema(schema_json);
    return Converter(schema, name + "-").rules(name);
}

std::string json_primitives_gbnf(bool compact) { return primitives(compact); }

std::string json_object_gbnf() { return "root ::= json-object\n" + primitives(); }

}  // namespace graphrun
