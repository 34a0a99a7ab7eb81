// graph/graph.cpp — reading a graph file and binding it to a model's metadata and weights.
#include "graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "graph/data_files.h"
#include "ops/op_table.h"
#include "runtime/bounded_read.h"

namespace graphrun::graph {

using Json = nlohmann::ordered_json;

GraphFile graph_file_from_string(std::string json_text, std::string name) {
    GraphFile file;
    file.path = std::move(name);
    Json root;
    try {
        root = Json::parse(json_text);
    } catch (const Json::parse_error& e) {
        throw GraphError(file.path + ": not valid JSON: " + e.what());
    }
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
        Json root = Json::parse(file_.json_text);
        const std::string model_arch = model_.find_string("general.architecture").value_or("(none)");
        if (model_arch != file_.architecture)
            fail("architecture",
                 "the model is '" + model_arch + "' but this graph runs '" + file_.architecture + "' models");
        if (root.contains("symbols")) bind_symbols(root["symbols"]);
        if (root.contains("inputs")) bind_inputs(root["inputs"]);
        if (!root["nodes"].is_array()) fail("nodes", "must be an array");
        bind_nodes(root["nodes"], "");
        bind_outputs(root["outputs"]);
        return std::move(graph_);
    }

  private:
    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw GraphError(file_.path + ": " + where + ": " + what);
    }

    // --- symbols: sizes and constants from the model's metadata -------------------------------
    void bind_symbols(const Json& symbols) {
        if (!symbols.is_object()) fail("symbols", "must be an object");
        for (const auto& [name, def] : symbols.items()) graph_.symbols[name] = symbol_value(name, def);
    }

    double symbol_value(const std::string& name, const Json& def) {
        const std::string where = "symbol '" + name + "'";
        if (def.is_number()) return def.get<double>();
        if (!def.is_object()) fail(where, "must be a number or an object with 'key' or 'div'");
        if (def.contains("key")) {
            const std::string key = def["key"].get<std::string>();
            if (const GgufValue* value = model_.find(key)) return value->as_float(key);
            if (def.contains("default")) return operand(where, def["default"]);
            fail(where, "the model has no metadata key '" + key + "' and the graph gives no default");
        }
        if (def.contains("div")) {
            const Json& args = def["div"];
            if (!args.is_array() || args.size() != 2) fail(where, "'div' takes two operands");
            const double a = operand(where, args[0]), b = operand(where, args[1]);
            if (b == 0 || std::fmod(a, b) != 0)
                fail(where,
                     std::to_string(int64_t(a)) + " is not divisible by " + std::to_string(int64_t(b)));
            return a / b;
        }
        fail(where, "must have 'key' or 'div'");
    }

    // A number, or the name of a symbol bound earlier (or a repeat index in scope).
    double operand(const std::string& where, const Json& value) const {
        if (value.is_number()) return value.get<double>();
        if (value.is_string()) {
            const std::string name = value.get<std::string>();
            if (auto it = indices_.find(name); it != indices_.end()) return double(it->second);
            if (auto it = graph_.symbols.find(name); it != graph_.symbols.end()) return it->second;
            fail(where, "'" + name + "' is not a bound symbol");
        }
        fail(where, "expected a number or a symbol name, got " + value.dump());
    }

    // --- inputs and outputs ----------------------------------------------------------------------
    void bind_inputs(const Json& inputs) {
        if (!inputs.is_array()) fail("inputs", "must be an array of names");
        for (const Json& input : inputs) {
            const std::string name = input.get<std::string>();
            if (scope_.count(name)) fail("inputs", "'" + name + "' is listed twice");
            scope_[name] = {ValueRef::Kind::Input, int(graph_.inputs.size())};
            graph_.inputs.push_back({name});
        }
    }

    void bind_outputs(const Json& outputs) {
        if (!outputs.is_array() || outputs.empty()) fail("outputs", "must be a non-empty array of node ids");
        for (const Json& output : outputs) {
            const std::string name = output.get<std::string>();
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
            if (!node.is_object()) fail("nodes", "each entry must be an object, got " + node.dump());
            if (node.contains("repeat")) {
                bind_repeat(node, prefix);
                continue;
            }
            if (!node.contains("id") || !node["id"].is_string())
                fail("nodes", "a node has no string 'id': " + node.dump());
            const std::string id = node["id"].get<std::string>();
            if (!defined_here.insert(id).second)
                fail("node '" + prefix + id + "'", "id '" + id + "' is defined twice in the same block");
            bind_node(node, prefix + id, id);
        }
    }

    void bind_repeat(const Json& block, const std::string& outer_prefix) {
        const std::string where = "repeat block";
        const int64_t count = int64_t(operand(where, block["repeat"]));
        const std::string index = block.value("index", std::string("i"));
        const std::string prefix_pattern = block.value("prefix", std::string("{" + index + "}."));
        if (!block.contains("nodes") || !block["nodes"].is_array()) fail(where, "needs a 'nodes' array");
        if (count < 0) fail(where, "repeat count is negative");

        // Names the body defines stay visible only inside it, except ones that existed before
        // (the loop-carried values, like the residual stream "x"), which keep their last binding.
        const std::map<std::string, ValueRef> outer_scope = scope_;
        for (int64_t i = 0; i < count; ++i) {
            indices_[index] = i;
            const std::string prefix =
                outer_prefix + replace_all(prefix_pattern, "{" + index + "}", std::to_string(i));
            bind_nodes(block["nodes"], prefix);
        }
        indices_.erase(index);
        for (auto it = scope_.begin(); it != scope_.end();)
            it = outer_scope.count(it->first) ? std::next(it) : scope_.erase(it);
    }

    void bind_node(const Json& node, const std::string& name, const std::string& id) {
        const std::string where = "node '" + name + "'";
        GraphNode out;
        out.name = name;
        if (!node.contains("op") || !node["op"].is_string()) fail(where, "missing string field 'op'");
        out.op = node["op"].get<std::string>();
        const ops::OpDef* op = ops::find_graph_op(out.op);
        if (!op) fail(where, "unknown op '" + out.op + "' (known: " + known_ops() + ")");
        if (!node.contains("in") || !node["in"].is_array()) fail(where, "missing array field 'in'");
        for (const Json& input : node["in"]) out.inputs.push_back(resolve_input(where, input));

        out.params = op->defaults;
        for (const auto& [key, value] : node.items()) {
            if (key == "id" || key == "op" || key == "in") continue;
            set_attribute(where, *op, out, key, value);
        }
        for (const ops::AttrDecl& decl : op->attrs)
            if (decl.required &&
                std::find(out.attributes.begin(), out.attributes.end(), decl.name) == out.attributes.end())
                fail(where, "op '" + out.op + "' needs attribute '" + decl.name + "' (" + decl.about + ")");
        scope_[id] = {ValueRef::Kind::Node, int(graph_.nodes.size())};
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
        fail(what, "must be one of " + choices + ", got " + value.dump());
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
            const std::string name = substitute(input.get<std::string>());
            if (auto it = scope_.find(name); it != scope_.end()) return it->second;
            if (const GgufTensor* tensor = model_.find_tensor(name)) return weight(name, tensor);
            fail(where, "input '" + name + "' is neither a node, a graph input nor a weight in the model");
        }
        if (input.is_object() && input.contains("weight")) {
            const std::string first = substitute(input["weight"].get<std::string>());
            if (const GgufTensor* tensor = model_.find_tensor(first)) return weight(first, tensor);
            const std::string second = input.contains("or") ? substitute(input["or"].get<std::string>()) : "";
            if (!second.empty())
                if (const GgufTensor* tensor = model_.find_tensor(second)) return weight(second, tensor);
            fail(where,
                 "the model has no weight '" + first + "'" + (second.empty() ? "" : " nor '" + second + "'"));
        }
        fail(where, "each input must be a name or {\"weight\": ..., \"or\": ...}, got " + input.dump());
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
