// graph/graph.cpp — reading a graph file and binding it to a model's metadata and weights.
#include "graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "graph/data_files.h"
#include "ops/op_table.h"
#include "graph/limits.h"
#include "runtime/bounded_read.h"

namespace graphrun::graph {

using Json = nlohmann::ordered_json;

namespace {

// The JSON library and the binder recurse once per level of nesting, so a hostile file of 70,000
// nested arrays would overflow the stack: the depth is measured on the text before parsing.
void check_nesting(const std::string& text, const std::string& path) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (size_t at = 0; at < text.size(); ++at) {
        const char c = text[at];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxGraphDepth)
                throw GraphError(path + ": arrays and objects nest deeper than " + std::to_string(kMaxGraphDepth) +
                                 " levels at byte " + std::to_string(at) + " (graph/limits.h)");
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
}

Json parse_graph_json(const std::string& text, const std::string& path) {
    check_nesting(text, path);
    try {
        return Json::parse(text);
    } catch (const Json::parse_error& e) {
        throw GraphError(path + ": not valid JSON: " + e.what());
    }
}

// A JSON value for an error message, cut short: a hostile node can be megabytes long.
std::string excerpt(const Json& value) {
    std::string text = value.dump();
    return text.size() <= 120 ? text : text.substr(0, 120) + "...";
}

}  // namespace

GraphFile graph_file_from_string(std::string json_text, std::string name) {
    GraphFile file;
    file.path = std::move(name);
    const Json root = parse_graph_json(json_text, file.path);
    if (!root.is_object()) throw GraphError(file.path + ": the top level must be a JSON object");
    for (const char* field : {"architecture", "nodes", "outputs"})
        if (!root.contains(field)) throw GraphError(file.path + ": missing top-level field '" + field + "'");
    if (!root["architecture"].is_string())
        throw GraphError(file.path + ": field 'architecture' must be a string");
    file.architecture = root["architecture"].get<std::string>();
    file.json_text = std::move(json_text);
    return file;
}

GraphFile load_graph_file(const std::string& path) {
    try {
        return graph_file_from_string(read_bounded_file(path, kMaxGraphFileBytes, "a graph file"), path);
    } catch (const FileReadError& e) {
        throw GraphError(std::string(e.what()) + " (graph file)");
    }
}

std::string default_graph_path() { return find_data_file("models/llama.json"); }
std::string default_model_path() { return find_data_file("models/kjv-q8_0.gguf"); }

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

class Binder {
  public:
    Binder(const GraphFile& file, const GgufFile& model) : file_(file), model_(model) {
        graph_.source = file.path;
    }

    Graph bind() {
        const Json root = parse_graph_json(file_.json_text, file_.path);
        const std::string model_arch = model_.find_string("general.architecture").value_or("(none)");
        if (model_arch != file_.architecture)
            fail("architecture",
                 "the model is '" + model_arch + "' but this graph runs '" + file_.architecture + "' models");
        if (root.contains("symbols")) bind_symbols(root.at("symbols"));
        if (root.contains("inputs")) bind_inputs(root.at("inputs"));
        if (!root.at("nodes").is_array()) fail("nodes", "must be an array");
        bind_nodes(root.at("nodes"), "");
        bind_outputs(root.at("outputs"));
        return std::move(graph_);
    }

  private:
    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw GraphError(file_.path + ": " + where + ": " + what);
    }

    // A name (node id, input, weight, symbol, index, prefix): a string of at most kMaxGraphName bytes,
    // so unrolled names and the work of substituting into them stay bounded.
    std::string name_text(const std::string& where, const Json& value, const char* what) const {
        if (!value.is_string()) fail(where, std::string(what) + " must be a string, got " + excerpt(value));
        std::string text = value.get<std::string>();
        if (text.size() > kMaxGraphName)
            fail(where, std::string(what) + " is " + std::to_string(text.size()) + " bytes long, more than the " +
                            std::to_string(kMaxGraphName) + " graphrun allows (graph/limits.h)");
        return text;
    }

    // --- symbols: sizes and constants from the model's metadata -------------------------------
    void bind_symbols(const Json& symbols) {
        if (!symbols.is_object()) fail("symbols", "must be an object");
        for (const auto& [name, def] : symbols.items()) {
            (void)name_text("symbols", Json(name), "a symbol name");
            graph_.symbols[name] = symbol_value(name, def);
        }
    }

    double symbol_value(const std::string& name, const Json& def) {
        const std::string where = "symbol '" + name + "'";
        if (def.is_number()) return def.get<double>();
        if (!def.is_object()) fail(where, "must be a number or an object with 'key' or 'div'");
        if (def.contains("key")) {
            const std::string key = name_text(where, def.at("key"), "'key'");
            if (const GgufValue* value = model_.find(key)) return value->as_float(key);
            if (def.contains("default")) return operand(where, def.at("default"));
            fail(where, "the model has no metadata key '" + key + "' and the graph gives no default");
        }
        if (def.contains("div")) {
            const Json& args = def.at("div");
            if (!args.is_array() || args.size() != 2) fail(where, "'div' takes two operands");
            const double a = operand(where, args[0]), b = operand(where, args[1]);
            if (!std::isfinite(a) || !std::isfinite(b) || b == 0 || std::fmod(a, b) != 0)
                fail(where, number_text(a) + " is not divisible by " + number_text(b));
            return a / b;
        }
        fail(where, "must have 'key' or 'div'");
    }

    // A number, or the name of a symbol bound earlier (or a repeat index in scope).
    double operand(const std::string& where, const Json& value) const {
        if (value.is_number()) return value.get<double>();
        if (value.is_string()) {
            const std::string name = name_text(where, value, "a symbol name");
            if (auto it = indices_.find(name); it != indices_.end()) return double(it->second);
            if (auto it = graph_.symbols.find(name); it != graph_.symbols.end()) return it->second;
            fail(where, "'" + name + "' is not a bound symbol");
        }
        fail(where, "expected a number or a symbol name, got " + excerpt(value));
    }

    // --- inputs and outputs ----------------------------------------------------------------------
    void bind_inputs(const Json& inputs) {
        if (!inputs.is_array()) fail("inputs", "must be an array of names");
        for (const Json& input : inputs) {
            const std::string name = name_text("inputs", input, "an input name");
            if (scope_.count(name)) fail("inputs", "'" + name + "' is listed twice");
            scope_[name] = {ValueRef::Kind::Input, int(graph_.inputs.size())};
            graph_.inputs.push_back({name});
        }
    }

    void bind_outputs(const Json& outputs) {
        if (!outputs.is_array() || outputs.empty()) fail("outputs", "must be a non-empty array of node ids");
        for (const Json& output : outputs) {
            const std::string name = name_text("outputs", output, "an output name");
            auto it = scope_.find(name);
            if (it == scope_.end() || it->second.kind != ValueRef::Kind::Node)
                fail("outputs", "'" + name + "' is not a node");
            graph_.outputs.push_back(it->second);
        }
    }

    // --- nodes and repeat blocks -----------------------------------------------------------------
    void bind_nodes(const Json& nodes, const std::string& prefix) {
        std::set<std::string> defined_here;
        for (const Json& node : nodes) {
            if (!node.is_object()) fail("nodes", "each entry must be an object, got " + excerpt(node));
            if (node.contains("repeat")) {
                bind_repeat(node, prefix);
                continue;
            }
            if (!node.contains("id")) fail("nodes", "a node has no string 'id': " + excerpt(node));
            const std::string id = name_text("nodes", node.at("id"), "a node's 'id'");
            if (!defined_here.insert(id).second)
                fail("node '" + prefix + id + "'", "id '" + id + "' is defined twice in the same block");
            bind_node(node, prefix + id, id);
        }
    }

    void bind_repeat(const Json& block, const std::string& outer_prefix) {
        const std::string where = "repeat block";
        // The count is checked as a number before it becomes an integer (a cast of 1e300 is undefined).
        const double count_value = operand(where, block.at("repeat"));
        if (!std::isfinite(count_value) || count_value < 0 || count_value > double(kMaxRepeatCount))
            fail(where, "repeat count " + number_text(count_value) + " is outside 0 .. " +
                            std::to_string(kMaxRepeatCount) + " (graph/limits.h)");
        if (count_value != std::floor(count_value))
            fail(where, "repeat count must be a whole number, got " + number_text(count_value));
        const int64_t count = int64_t(count_value);
        const std::string index = block.contains("index") ? name_text(where, block.at("index"), "'index'") : "i";
        const std::string prefix_pattern =
            block.contains("prefix") ? name_text(where, block.at("prefix"), "'prefix'") : "{" + index + "}.";
        if (!block.contains("nodes") || !block.at("nodes").is_array()) fail(where, "needs a 'nodes' array");
        if (indices_.count(index)) fail(where, "index '" + index + "' is already the index of an enclosing block");

        // Names the body defines stay visible only inside it, except ones that existed before
        // (the loop-carried values, like the residual stream "x"), which keep their last binding.
        // The names added since `mark` are exactly the ones to drop afterwards (no copy of the scope).
        const size_t mark = added_names_.size();
        for (int64_t i = 0; i < count; ++i) {
            if (++repeat_iterations_ > kMaxRepeatIterations)
                fail(where, "repeat blocks run more than " + std::to_string(kMaxRepeatIterations) +
                                " iterations in all (graph/limits.h)");
            indices_[index] = i;
            const std::string prefix =
                outer_prefix + replace_all(prefix_pattern, "{" + index + "}", std::to_string(i));
            if (prefix.size() > kMaxGraphName)
                fail(where, "the prefix grows to " + std::to_string(prefix.size()) + " bytes, more than the " +
                                std::to_string(kMaxGraphName) + " graphrun allows (graph/limits.h)");
            bind_nodes(block.at("nodes"), prefix);
        }
        indices_.erase(index);
        for (; added_names_.size() > mark; added_names_.pop_back()) scope_.erase(added_names_.back());
    }

    void bind_node(const Json& node, const std::string& name, const std::string& id) {
        const std::string where = "node '" + name + "'";
        GraphNode out;
        out.name = name;
        if (name.size() > kMaxGraphName)
            fail(where, "the node's name is " + std::to_string(name.size()) + " bytes long, more than the " +
                            std::to_string(kMaxGraphName) + " graphrun allows (graph/limits.h)");
        if (graph_.nodes.size() >= size_t(kMaxGraphNodes))
            fail(where, "the graph has more than " + std::to_string(kMaxGraphNodes) +
                            " nodes once repeat blocks are unrolled (graph/limits.h)");
        if (!node.contains("op") || !node.at("op").is_string()) fail(where, "missing string field 'op'");
        out.op = name_text(where, node.at("op"), "'op'");
        const ops::OpDef* op = ops::find_graph_op(out.op);
        if (!op) fail(where, "unknown op '" + out.op + "' (known: " + known_ops() + ")");
        if (!node.contains("in") || !node.at("in").is_array()) fail(where, "missing array field 'in'");
        for (const Json& input : node.at("in")) out.inputs.push_back(resolve_input(where, input));

        out.params = op->defaults;
        for (const auto& [key, value] : node.items()) {
            if (key == "id" || key == "op" || key == "in") continue;
            set_attribute(where, *op, out, key, value);
        }
        for (const ops::AttrDecl& decl : op->attrs)
            if (decl.required &&
                std::find(out.attributes.begin(), out.attributes.end(), decl.name) == out.attributes.end())
                fail(where, "op '" + out.op + "' needs attribute '" + decl.name + "' (" + decl.about + ")");
        if (scope_.insert_or_assign(id, ValueRef{ValueRef::Kind::Node, int(graph_.nodes.size())}).second)
            added_names_.push_back(id);
        graph_.nodes.push_back(std::move(out));
    }

    static std::string known_ops() {
        std::string known;
        for (const ops::OpDef* row : ops::op_table())
            if (ops::find_graph_op(row->op_name()) == row)
                known += (known.empty() ? "" : ", ") + std::string(row->op_name());
        return known;
    }

    // Checks `value` against the op's declaration of attribute `key` and sets it in the node's params.
    void set_attribute(const std::string& where, const ops::OpDef& op, GraphNode& node,
                       const std::string& key, const Json& value) {
        const auto decl = std::find_if(op.attrs.begin(), op.attrs.end(),
                                       [&](const ops::AttrDecl& d) { return key == d.name; });
        if (decl == op.attrs.end()) {
            std::string known;
            for (const ops::AttrDecl& d : op.attrs)
                known += (known.empty() ? "" : ", ") + std::string(d.name);
            fail(where, "unknown attribute '" + key + "' (op '" + node.op + "' takes " +
                            (known.empty() ? "none" : known) + ", besides id, op and in)");
        }
        const std::string what = where + " attribute '" + key + "'";
        double v = 0;
        if (decl->kind == ops::AttrKind::Choice) {
            v = choice_index(what, *decl, value);
        } else {
            v = operand(what, value);
            if (!std::isfinite(v) || v < decl->min || v > decl->max)
                fail(what, "is " + number_text(v) + ", outside " + number_text(decl->min) + " .. " +
                               number_text(decl->max) + " (" + decl->about + ")");
            if (decl->kind == ops::AttrKind::Int && v != std::floor(v))
                fail(what, "must be a whole number, got " + number_text(v));
        }
        node.params = decl->set(node.params, v);
        node.attributes.push_back(key);
    }

    // A word of the declaration's choices ("normal|neox") -> its index.
    double choice_index(const std::string& what, const ops::AttrDecl& decl, const Json& value) const {
        const std::string choices = decl.choices;
        if (value.is_string()) {
            const std::string word = value.get<std::string>();
            size_t start = 0;
            for (int index = 0;; ++index) {
                const size_t bar = choices.find('|', start);
                if (choices.substr(start, bar - start) == word) return index;
                if (bar == std::string::npos) break;
                start = bar + 1;
            }
        }
        fail(what, "must be one of " + choices + ", got " + excerpt(value));
    }

    static std::string number_text(double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.10g", v);
        return buf;
    }

    std::string substitute(std::string text) const {
        for (const auto& [index, value] : indices_)
            text = replace_all(text, "{" + index + "}", std::to_string(value));
        return text;
    }

    // A string names a node or graph input in scope, else a weight; {"weight": A, "or": B} falls back.
    ValueRef resolve_input(const std::string& where, const Json& input) {
        if (input.is_string()) {
            const std::string name = substitute(name_text(where, input, "an input name"));
            if (auto it = scope_.find(name); it != scope_.end()) return it->second;
            if (const GgufTensor* tensor = model_.find_tensor(name)) return weight(name, tensor);
            fail(where, "input '" + name + "' is neither a node, a graph input nor a weight in the model");
        }
        if (input.is_object() && input.contains("weight")) {
            const std::string first = substitute(name_text(where, input.at("weight"), "'weight'"));
            if (const GgufTensor* tensor = model_.find_tensor(first)) return weight(first, tensor);
            const std::string second =
                input.contains("or") ? substitute(name_text(where, input.at("or"), "'or'")) : "";
            if (!second.empty())
                if (const GgufTensor* tensor = model_.find_tensor(second)) return weight(second, tensor);
            fail(where,
                 "the model has no weight '" + first + "'" + (second.empty() ? "" : " nor '" + second + "'"));
        }
        fail(where, "each input must be a name or {\"weight\": ..., \"or\": ...}, got " + excerpt(input));
    }

    ValueRef weight(const std::string& name, const GgufTensor* tensor) {
        auto [it, added] = weight_index_.emplace(name, int(graph_.weights.size()));
        if (added) graph_.weights.push_back({name, tensor});
        return {ValueRef::Kind::Weight, it->second};
    }

    const GraphFile& file_;
    const GgufFile& model_;
    Graph graph_;
    std::map<std::string, ValueRef> scope_;
    std::vector<std::string> added_names_;  // names added to scope_, newest last (repeat blocks drop theirs)
    int64_t repeat_iterations_ = 0;
    std::map<std::string, int64_t> indices_;
    std::map<std::string, int> weight_index_;
};

}  // namespace

Graph bind_graph(const GraphFile& file, const GgufFile& model) {
    try {
        return Binder(file, model).bind();
    } catch (const Json::exception& e) {
        // Wrong JSON types deep inside (a number where a string belongs, ...).
        throw GraphError(file.path + ": " + e.what());
    } catch (const GgufError& e) {
        throw GraphError(file.path + ": " + e.what());
    }
}

}  // namespace graphrun::graph
