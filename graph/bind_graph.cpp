// graph/bind_graph.cpp — binding a graph file to a model's metadata and weights: symbols, checks,
// repeated blocks, node inputs and attributes, resolved into a Graph the planner can order.
#include "graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "graph/graph_json.h"
#include "graph/limits.h"
#include "ops/op_table.h"

namespace graphrun::graph {

namespace {

constexpr InputSpec kInputSpecs[] = {
    {"tokens", InputKind::Tokens, "(n_tokens) i32: token ids"},
    {"positions", InputKind::Positions, "(n_tokens) i32: each token's position in its sequence"},
    {"kv_slots", InputKind::KvSlots, "(n_tokens) i32: the KV cache row each token's keys and values go to"},
    {"kv_table", InputKind::KvTable, "(n_tokens, table_width) i32: each token's sequence's KV block table"},
    {"logit_rows", InputKind::LogitRows, "(n_outputs) i32: the batch rows whose logits are read"},
};

}  // namespace

std::span<const InputSpec> graph_input_specs() {
    return kInputSpecs;
}

const GraphInput* Graph::input(InputKind kind) const {
    for (const GraphInput& in : inputs)
        if (in.kind == kind) return &in;
    return nullptr;
}

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
        if (root.contains("checks")) bind_checks(root.at("checks"));
        if (root.contains("inputs")) bind_inputs(root.at("inputs"));
        if (!root.at("nodes").is_array()) fail("nodes", "must be an array");
        bind_nodes(root.at("nodes"), "");
        bind_outputs(root.at("outputs"));
        if (refuses_unread_tensors(root)) refuse_unread_tensors(model_arch);
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
            std::string origin;
            graph_.symbols[name] = symbol_value(name, def, &origin);
            if (!origin.empty()) symbol_origins_[name] = origin;
        }
    }

    // "metadata 'qwen3.attention.key_length'" for a symbol read from the model, else "".
    std::string symbol_origin(const std::string& symbol) const {
        auto it = symbol_origins_.find(symbol);
        return it == symbol_origins_.end() ? "" : it->second;
    }
    // "head_dim = 64 (metadata 'qwen3.attention.key_length')", or "head_dim = 64".
    std::string symbol_text(const std::string& symbol) const {
        const std::string origin = symbol_origin(symbol);
        return symbol + " = " + number_text(graph_.symbols.at(symbol)) + (origin.empty() ? "" : " (" + origin + ")");
    }

    // --- checks: what the graph relies on that the metadata could contradict ---------------------
    //   "checks": [{ "equal": ["n_rot", "head_dim"], "why": "partial rotary is not supported" }]
    // Each operand is a symbol or a number; a failed check names both symbols and their metadata keys.
    void bind_checks(const Json& checks) {
        if (!checks.is_array()) fail("checks", "must be an array");
        for (const Json& check : checks) {
            if (!check.is_object() || !check.contains("equal") || !check.at("equal").is_array() ||
                check.at("equal").size() != 2)
                fail("checks", "each check is {\"equal\": [a, b], \"why\": text}, got " + excerpt(check));
            const Json &a = check.at("equal")[0], &b = check.at("equal")[1];
            const std::string why =
                check.contains("why") ? excerpt_text(check.at("why")) : "the graph needs them equal";
            if (operand("checks", a) != operand("checks", b))
                fail("check", operand_text(a) + " must equal " + operand_text(b) + ": " + why);
        }
    }
    std::string operand_text(const Json& value) const {
        return value.is_string() ? symbol_text(value.get<std::string>()) : number_text(value.get<double>());
    }

    // "unread_tensors": "refuse" (the shipped graphs) or "allow" (the default: graphs for experiments
    // may leave weights unread, say a shared norm).
    bool refuses_unread_tensors(const Json& root) const {
        if (!root.contains("unread_tensors")) return false;
        const Json& value = root.at("unread_tensors");
        if (value != "refuse" && value != "allow")
            fail("unread_tensors", "must be \"refuse\" or \"allow\", got " + excerpt(value));
        return value == "refuse";
    }

    // A tensor of the model that no node reads would be silently ignored (a bias, a frequency table):
    // the file is refused instead, naming the tensor, as llama.cpp refuses tensors it has no place for.
    void refuse_unread_tensors(const std::string& model_arch) const {
        for (const GgufTensor& t : model_.tensors())
            if (!weight_index_.count(t.name))
                fail("tensors", "the model has tensor '" + t.name + "' " + ops::TensorDesc{t.type, t.shape()}.str() +
                                    ", which this graph never reads: a '" + model_arch +
                                    "' model has no such tensor, or it needs another graph (this one says "
                                    "\"unread_tensors\": \"refuse\")");
    }

    // A symbol's value; `origin` gets the metadata key it came from, if any (for messages).
    double symbol_value(const std::string& name, const Json& def, std::string* origin = nullptr) {
        const std::string where = "symbol '" + name + "'";
        if (def.is_number()) return def.get<double>();
        if (!def.is_object()) fail(where, "must be a number or an object with 'key' or 'div'");
        if (def.contains("key")) {
            const std::string key = name_text(where, def.at("key"), "'key'");
            if (const GgufValue* value = model_.find(key)) {
                if (origin) *origin = "metadata '" + key + "'";
                return value->as_float(key);
            }
            if (def.contains("default")) {
                // The default may be a number, an earlier symbol or a definition of its own ({"div": ...}).
                const Json& fallback = def.at("default");
                if (origin) *origin = "default: the model has no '" + key + "'";
                if (!fallback.is_object()) return operand(where, fallback);
                std::string inner;
                const double value = symbol_value(name, fallback, &inner);
                if (origin && !inner.empty()) *origin = inner;
                return value;
            }
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
        if (def.contains("mul")) {
            const Json& args = def["mul"];
            if (!args.is_array() || args.size() != 2) fail(where, "'mul' takes two operands");
            const double product = operand(where, args[0]) * operand(where, args[1]);
            if (!std::isfinite(product)) fail(where, "the product is not a finite number");
            return product;
        }
        fail(where, "must have 'key', 'div' or 'mul'");
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
            const auto spec = std::find_if(std::begin(kInputSpecs), std::end(kInputSpecs),
                                           [&](const InputSpec& s) { return name == s.name; });
            if (spec == std::end(kInputSpecs)) {
                std::string known;
                for (const InputSpec& s : kInputSpecs)
                    known += (known.empty() ? "" : ", ") + std::string(s.name);
                fail("inputs", "'" + name + "' is not an input the session fills (known: " + known + ")");
            }
            scope_[name] = {ValueRef::Kind::Input, int(graph_.inputs.size())};
            graph_.inputs.push_back({name, spec->kind});
        }
    }

    // An array of node ids (the first the logits), or named: {"logits": id, "embedding": id}.
    void bind_outputs(const Json& outputs) {
        if (outputs.is_object()) {
            if (!outputs.contains("logits")) fail("outputs", "names no 'logits' output");
            bind_output("outputs.logits", outputs.at("logits"));
            for (const auto& [key, value] : outputs.items()) {
                if (key == "logits") continue;
                if (key != "embedding")
                    fail("outputs." + key, "is not an output graphrun reads (logits, embedding)");
                graph_.embedding_output = int(graph_.outputs.size());
                bind_output("outputs.embedding", value);
            }
            return;
        }
        if (!outputs.is_array() || outputs.empty())
            fail("outputs", "must be a non-empty array of node ids, or {\"logits\": id, \"embedding\": id}");
        for (const Json& output : outputs) bind_output("outputs", output);
    }

    void bind_output(const std::string& where, const Json& output) {
        const std::string name = name_text(where, output, "an output name");
        auto it = scope_.find(name);
        if (it == scope_.end() || it->second.kind != ValueRef::Kind::Node)
            fail(where, "'" + name + "' is not a node");
        graph_.outputs.push_back(it->second);
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
            if (node.contains("state"))
                bind_state(node, prefix + id, id);
            else
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

    // {"id": "k_cache", "state": "kv_cache", "width": "kv_width"}: a KV cache the session keeps.
    void bind_state(const Json& node, const std::string& name, const std::string& id) {
        const std::string where = "state '" + name + "'";
        for (const auto& [key, value] : node.items())
            if (key != "id" && key != "state" && key != "width")
                fail(where, "unknown field '" + key + "' (a state takes id, state and width)");
        if (!node["state"].is_string() || node["state"].get<std::string>() != "kv_cache")
            fail(where, "'state' must be \"kv_cache\" (the one kind of state), got " + node["state"].dump());
        if (!node.contains("width")) fail(where, "a kv_cache needs 'width' (elements per position)");
        const double width = operand(where + " field 'width'", node["width"]);
        if (!(width >= 1 && width <= double(kMaxStateWidth)) || width != std::floor(width))
            fail(where, "width " + number_text(width) + " is not a whole number in 1 .. " +
                            std::to_string(kMaxStateWidth));
        if (graph_.states.size() >= size_t(kMaxStates))
            fail(where, "is one state more than the " + std::to_string(kMaxStates) + " a graph may declare");
        scope_[id] = {ValueRef::Kind::State, int(graph_.states.size())};
        graph_.states.push_back({name, int64_t(width)});
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
        bool optional_seen = false;
        for (const Json& input : node.at("in")) {
            const bool optional = is_optional(where, input);
            if (optional_seen && !optional) fail(where, "optional inputs must come after all the others");
            optional_seen = optional_seen || optional;
            const std::optional<ValueRef> ref = resolve_input(where, input);
            if (!ref) continue;  // an optional weight the model does not have
            out.inputs.push_back(*ref);
            if (ref->kind == ValueRef::Kind::Weight)
                out.context.push_back("input " + std::to_string(out.inputs.size() - 1) + " is weight '" +
                                      graph_.weights[size_t(ref->index)].name + "'");
        }

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

    // {"weight": ..., "optional": true}: an input the node goes without when the model lacks the weight.
    bool is_optional(const std::string& where, const Json& input) const {
        if (!input.is_object() || !input.contains("optional")) return false;
        if (!input.at("optional").is_boolean())
            fail(where, "'optional' must be true or false, got " + excerpt(input.at("optional")));
        return input.at("optional").get<bool>();
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
        if (value.is_string() && !symbol_origin(value.get<std::string>()).empty()) {
            const std::string symbol = value.get<std::string>();
            node.context.push_back((symbol == key ? "" : key + " is ") + symbol_text(symbol));
        }
    }

    // A word of the declaration's choices ("normal|neox") -> its index.
    double choice_index(const std::string& what, const ops::AttrDecl& decl, const Json& value) const {
        if (value.is_string())
            if (const int index = ops::choice_index(decl.choices, value.get<std::string>()); index >= 0) return index;
        fail(what, "must be one of " + std::string(decl.choices) + ", got " + excerpt(value));
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

    // A string names a node or graph input in scope, else a weight; {"weight": A, "or": B} falls back;
    // {"weight": A, "optional": true} is left out (nullopt) when the model has no A.
    std::optional<ValueRef> resolve_input(const std::string& where, const Json& input) {
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
            if (is_optional(where, input)) return std::nullopt;
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
    std::map<std::string, std::string> symbol_origins_;  // symbol -> "metadata 'llama.block_count'"
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
