// runtime/gguf_writer.cpp — writes GGUF v3 files that llama.cpp and GgufFile both accept.
//
// Layout: header, key/value pairs in insertion order, tensor infos, zero padding to the
// alignment, then each tensor's bytes padded to the alignment (as ggml pads them). Tensor sizes
// follow from type and shape, so the offsets are known before any streamed tensor is produced.
// The file goes through OutputFile (runtime/output_file.h): the path is checked before the first
// byte, the bytes are written beside it and renamed into place, so a failed or interrupted write
// never leaves a half-written model under the real name, and nothing but a regular file is replaced.
#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/checked_math.h"
#include "runtime/gguf.h"
#include "runtime/output_file.h"

namespace graphrun {

namespace {

constexpr uint64_t kDefaultAlignment = 32;

uint64_t align_up(uint64_t n, uint64_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

// Serialises into memory; values are checked against their declared type on the way.
class ByteSink {
  public:
    template <class T>
    void put(T v) {
        put_raw(&v, sizeof v);
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        put_raw(s.data(), s.size());
    }
    void put_raw(const void* p, size_t n) {
        const size_t at = bytes.size();
        bytes.resize(at + n);
        if (n) std::memcpy(bytes.data() + at, p, n);
    }
    void pad_to(uint64_t alignment) { bytes.resize(align_up(bytes.size(), alignment), 0); }

    std::vector<uint8_t> bytes;
};

template <class T>
T checked_unsigned(const GgufValue& v, const std::string& key) {
    if (v.u > std::numeric_limits<T>::max())
        throw GgufError("key '" + key + "': value " + std::to_string(v.u) + " does not fit in " +
                        gguf_type_name(v.type));
    return T(v.u);
}

template <class T>
T checked_signed(const GgufValue& v, const std::string& key) {
    if (v.i < std::numeric_limits<T>::min() || v.i > std::numeric_limits<T>::max())
        throw GgufError("key '" + key + "': value " + std::to_string(v.i) + " does not fit in " +
                        gguf_type_name(v.type));
    return T(v.i);
}

void put_value(ByteSink& out, const GgufValue& v, const std::string& key) {
    switch (v.type) {
        case GgufType::U8:
            out.put(checked_unsigned<uint8_t>(v, key));
            return;
        case GgufType::U16:
            out.put(checked_unsigned<uint16_t>(v, key));
            return;
        case GgufType::U32:
            out.put(checked_unsigned<uint32_t>(v, key));
            return;
        case GgufType::U64:
            out.put(v.u);
            return;
        case GgufType::I8:
            out.put(checked_signed<int8_t>(v, key));
            return;
        case GgufType::I16:
            out.put(checked_signed<int16_t>(v, key));
            return;
        case GgufType::I32:
            out.put(checked_signed<int32_t>(v, key));
            return;
        case GgufType::I64:
            out.put(v.i);
            return;
        case GgufType::F32:
            out.put(float(v.f));
            return;
        case GgufType::F64:
            out.put(v.f);
            return;
        case GgufType::BOOL:
            out.put(uint8_t(v.u != 0));
            return;
        case GgufType::STRING:
            out.put_string(v.s);
            return;
        case GgufType::ARRAY:
            out.put(static_cast<uint32_t>(v.elem_type));
            out.put<uint64_t>(v.array.size());
            for (size_t k = 0; k < v.array.size(); ++k) {
                if (v.array[k].type != v.elem_type)
                    throw GgufError("key '" + key + "': array element " + std::to_string(k) + " has type " +
                                    gguf_type_name(v.array[k].type) + ", the array holds " +
                                    gguf_type_name(v.elem_type));
                put_value(out, v.array[k], key);
            }
            return;
    }
    throw GgufError("key '" + key + "': unknown value type " + std::to_string(uint32_t(v.type)));
}

std::string ne_string(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t d = 0; d < ne.size(); ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
    return s + "]";
}

}  // namespace

void GgufWriter::set(std::string key, GgufValue value) {
    for (auto& [k, v] : kv_)
        if (k == key) {
            v = std::move(value);
            return;
        }
    kv_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::set_strings(std::string key, const std::vector<std::string>& v) {
    std::vector<GgufValue> elems;
    elems.reserve(v.size());
    for (const std::string& s : v) elems.push_back(GgufValue::make_string(s));
    set(std::move(key), GgufValue::make_array(GgufType::STRING, std::move(elems)));
}

void GgufWriter::set_f32s(std::string key, const std::vector<float>& v) {
    std::vector<GgufValue> elems;
    elems.reserve(v.size());
    for (float x : v) elems.push_back(GgufValue::make_f32(x));
    set(std::move(key), GgufValue::make_array(GgufType::F32, std::move(elems)));
}

void GgufWriter::set_i32s(std::string key, const std::vector<int32_t>& v) {
    std::vector<GgufValue> elems;
    elems.reserve(v.size());
    for (int32_t x : v) elems.push_back(GgufValue::make_i32(x));
    set(std::move(key), GgufValue::make_array(GgufType::I32, std::move(elems)));
}

// The checks every tensor passes when added; returns the byte size its type and ne imply.
uint64_t GgufWriter::check_new_tensor(const std::string& name, DType type,
                                      const std::vector<int64_t>& ne) const {
    const std::string what = "GGUF tensor '" + name + "'";
    for (const PendingTensor& t : tensors_)
        if (t.name == name) throw GgufError(what + " is added twice");
    if (ne.empty() || ne.size() > 4)
        throw GgufError(what + " has " + std::to_string(ne.size()) + " dimensions, expected 1 to 4");
    const DTypeTraits& traits = dtype_traits(type);
    int64_t n = 1;
    for (int64_t d : ne)
        if (d < 1 || __builtin_mul_overflow(n, d, &n))
            throw GgufError(what + " has a bad shape ne " + ne_string(ne));
    if (ne[0] % traits.block_size != 0)
        throw GgufError(what + " has rows of " + std::to_string(ne[0]) + " elements, not a multiple of the " +
                        traits.name + " block size " + std::to_string(traits.block_size));
    return uint64_t(n / traits.block_size) * uint64_t(traits.block_bytes);
}

void GgufWriter::add_tensor(std::string name, DType type, std::vector<int64_t> ne, const void* data,
                            size_t nbytes) {
    const uint64_t expected = check_new_tensor(name, type, ne);
    if (nbytes != expected)
        throw GgufError("GGUF tensor '" + name + "' is given " + std::to_string(nbytes) + " bytes, but " +
                        dtype_traits(type).name + " ne " + ne_string(ne) + " needs " +
                        std::to_string(expected));
    const auto* p = static_cast<const uint8_t*>(data);
    tensors_.push_back(
        {std::move(name), type, std::move(ne), expected, std::vector<uint8_t>(p, p + nbytes), {}});
}

void GgufWriter::add_tensor_from(std::string name, DType type, std::vector<int64_t> ne,
                                 std::function<void(std::vector<uint8_t>& bytes)> produce) {
    const uint64_t expected = check_new_tensor(name, type, ne);
    if (!produce) throw GgufError("GGUF tensor '" + name + "' has no producer");
    tensors_.push_back({std::move(name), type, std::move(ne), expected, {}, std::move(produce)});
}

void GgufWriter::write(const std::string& path) const {
    uint64_t alignment = kDefaultAlignment;
    for (const auto& [key, value] : kv_)
        if (key == "general.alignment") {
            if (value.type != GgufType::U32 || value.u < 8 || (value.u & (value.u - 1)) != 0)
                throw GgufError(path + ": general.alignment must be a u32 power of two, at least 8 (GGUF "
                                       "requires a multiple of 8)");
            alignment = value.u;
        }

    ByteSink head;
    head.put<uint32_t>(0x46554747);  // "GGUF" read as a little-endian u32
    head.put<uint32_t>(3);
    head.put<uint64_t>(tensors_.size());
    head.put<uint64_t>(kv_.size());
    for (const auto& [key, value] : kv_) {
        head.put_string(key);
        head.put(static_cast<uint32_t>(value.type));
        try {
            put_value(head, value, key);
        } catch (const GgufError& e) {
            throw GgufError(path + ": " + e.what());
        }
    }
    uint64_t offset = 0;  // every tensor's nbytes was checked to fit when added; their sum is checked here
    for (const PendingTensor& t : tensors_) {
        head.put_string(t.name);
        head.put<uint32_t>(uint32_t(t.ne.size()));
        for (int64_t d : t.ne) head.put<uint64_t>(uint64_t(d));
        head.put<uint32_t>(dtype_traits(t.type).ggml_type);
        head.put<uint64_t>(offset);
        offset = uint64_t(checked_align_up(checked_add(int64_t(offset), int64_t(t.nbytes), "GGUF tensor data"),
                                           int64_t(alignment), "GGUF tensor data"));
    }
    head.pad_to(alignment);

    // The header is complete (and every value checked) before the file is created; then each
    // tensor, stored or produced now, is followed by zeros up to the next aligned offset.
    try {
        write_file(path, head.bytes, head.bytes.size() + offset, alignment);
    } catch (const OutputError& e) {
        throw GgufError(e.what());  // the header promises GgufError; the text names the path
    }
}

void GgufWriter::write_file(const std::string& path, const std::vector<uint8_t>& head, uint64_t total_bytes,
                            uint64_t alignment) const {
    OutputFile out(path, total_bytes);
    out.write(head.data(), head.size());
    std::vector<uint8_t> produced;
    for (const PendingTensor& t : tensors_) {
        const std::vector<uint8_t>* bytes = &t.bytes;
        if (t.produce) {
            produced.clear();
            t.produce(produced);
            if (produced.size() != t.nbytes)
                throw GgufError(path + ": GGUF tensor '" + t.name + "': its producer gave " +
                                std::to_string(produced.size()) + " bytes, but " + dtype_traits(t.type).name +
                                " ne " + ne_string(t.ne) + " needs " + std::to_string(t.nbytes));
            bytes = &produced;
        }
        out.write(bytes->data(), bytes->size());
        out.write_zeros(align_up(t.nbytes, alignment) - t.nbytes);
    }
    out.commit();
}

}  // namespace graphrun
