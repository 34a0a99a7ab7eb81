// tools/cmd_inspect.cpp — `graphrun inspect FILE`: what is in a GGUF file, for a person to read.
// Prints the header facts, every metadata key (arrays summarised, long strings shortened) and a
// tensor table with shapes outermost-first, as graphrun writes them: (n_vocab, n_embd).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "runtime/gguf.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

constexpr size_t kMaxStringChars = 60;  // longer strings are cut (at a UTF-8 boundary)
constexpr size_t kArrayPreview = 6;     // elements shown of each array

std::string human_bytes(uint64_t n) {
    char buf[64];
    if (n < 1024) return std::to_string(n) + " B";
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = double(n) / 1024;
    int u = 0;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        ++u;
    }
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
    return buf;
}

// Quoted, with control bytes escaped and long strings shortened, so one value stays on one line.
std::string quote(const std::string& s) {
    std::string out = "\"";
    size_t shown = 0;
    for (size_t k = 0; k < s.size(); ++k) {
        const auto c = static_cast<unsigned char>(s[k]);
        const bool continuation = (c & 0xC0) == 0x80;
        if (!continuation && shown == kMaxStringChars) {
            return out + "\"… (" + std::to_string(s.size()) + " bytes)";
        }
        if (!continuation) ++shown;
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

std::string scalar(const GgufValue& v) {
    char buf[64];
    switch (v.type) {
        case GgufType::U8:
        case GgufType::U16:
        case GgufType::U32:
        case GgufType::U64:
            return std::to_string(v.u);
        case GgufType::I8:
        case GgufType::I16:
        case GgufType::I32:
        case GgufType::I64:
            return std::to_string(v.i);
        case GgufType::F32:
        case GgufType::F64:
            std::snprintf(buf, sizeof buf, "%g", v.f);
            return buf;
        case GgufType::BOOL:
            return v.u ? "true" : "false";
        case GgufType::STRING:
            return quote(v.s);
        case GgufType::ARRAY:
            break;
    }
    return "?";
}

std::string type_label(const GgufValue& v) {
    if (v.type != GgufType::ARRAY) return gguf_type_name(v.type);
    return std::string("array of ") + gguf_type_name(v.elem_type) + " [" + std::to_string(v.array.size()) +
           "]";
}

std::string value_text(const GgufValue& v) {
    if (v.type != GgufType::ARRAY) return scalar(v);
    std::string out;
    const size_t n = std::min(v.array.size(), kArrayPreview);
    for (size_t k = 0; k < n; ++k) {
        const GgufValue& e = v.array[k];
        out += (k ? ", " : "") + (e.type == GgufType::ARRAY ? "[" + type_label(e) + "]" : scalar(e));
    }
    if (v.array.size() > n) out += ", …";
    return out;
}

std::string shape_text(const GgufTensor& t) {
    std::string out = "(";
    const std::vector<int64_t> shape = t.shape();
    for (size_t d = 0; d < shape.size(); ++d) out += (d ? ", " : "") + std::to_string(shape[d]);
    return out + ")";
}

// One line per tensor type in the file: how many tensors, weights and bytes, and the bits per weight
// its block layout costs (e.g. a Q4_K_M file is mostly q4_k at 4.5 with some q6_k at 6.5625).
void print_type_summary(const GgufFile& f) {
    struct Totals {
        size_t tensors = 0;
        int64_t elements = 0;
        uint64_t bytes = 0;
    };
    std::map<uint32_t, Totals> by_type;  // by ggml id: the order ggml lists its types in
    for (const GgufTensor& t : f.tensors()) {
        Totals& s = by_type[dtype_traits(t.type).ggml_type];
        ++s.tensors;
        s.elements += t.n_elements();
        s.bytes += t.nbytes;
    }
    std::printf("\ntensor types (%zu)\n", by_type.size());
    for (const auto& [id, s] : by_type) {
        const DType type = *dtype_from_ggml(id);
        const DTypeTraits& tr = dtype_traits(type);
        std::printf("  %-8s %4zu tensors  %12lld weights  %12llu bytes (%s)  %7.4f bits/weight  "
                    "(blocks of %lld in %lld bytes)\n",
                    tr.name, s.tensors, (long long)s.elements, (unsigned long long)s.bytes,
                    human_bytes(s.bytes).c_str(), dtype_bits_per_weight(type), (long long)tr.block_size,
                    (long long)tr.block_bytes);
    }
}

void run_inspect(const std::string& path) {
    const auto f = GgufFile::open(path);
    std::printf("file         %s\n", f->path().c_str());
    std::printf("version      GGUF v%u\n", f->version());
    std::printf("size         %llu bytes (%s)\n", (unsigned long long)f->file_size(),
                human_bytes(f->file_size()).c_str());
    std::printf("alignment    %llu\n", (unsigned long long)f->alignment());
    std::printf("tensor data  %llu bytes (%s) in %zu tensors, from byte %llu\n",
                (unsigned long long)f->tensor_bytes(), human_bytes(f->tensor_bytes()).c_str(),
                f->tensors().size(), (unsigned long long)f->data_offset());

    size_t key_width = 3, type_width = 4;
    for (const auto& [key, value] : f->metadata()) {
        key_width = std::max(key_width, key.size());
        type_width = std::max(type_width, type_label(value).size());
    }
    std::printf("\nmetadata (%zu keys)\n", f->metadata().size());
    for (const auto& [key, value] : f->metadata())
        std::printf("  %-*s  %-*s  %s\n", int(key_width), key.c_str(), int(type_width),
                    type_label(value).c_str(), value_text(value).c_str());

    print_type_summary(*f);

    size_t name_width = 4, shape_width = 5, dtype_width = 4;
    for (const GgufTensor& t : f->tensors()) {
        name_width = std::max(name_width, t.name.size());
        shape_width = std::max(shape_width, shape_text(t).size());
        dtype_width = std::max(dtype_width, std::strlen(dtype_name(t.type)));
    }
    std::printf("\ntensors (%zu)\n", f->tensors().size());
    std::printf("  %-*s  %-*s  %-*s  %12s  %12s\n", int(name_width), "name", int(dtype_width), "type",
                int(shape_width), "shape", "bytes", "offset");
    for (const GgufTensor& t : f->tensors())
        std::printf("  %-*s  %-*s  %-*s  %12llu  %12llu\n", int(name_width), t.name.c_str(), int(dtype_width),
                    dtype_name(t.type), int(shape_width), shape_text(t).c_str(), (unsigned long long)t.nbytes,
                    (unsigned long long)t.offset);
}

}  // namespace

void register_inspect(CLI::App& app) {
    auto path = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("inspect", "Show a GGUF file's header, metadata and tensors");
    cmd->add_option("file", *path, "The .gguf file")->required();
    cmd->callback([path] { run_inspect(*path); });
}

}  // namespace graphrun::tools
