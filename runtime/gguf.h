// runtime/gguf.h — GGUF model files: a validating, memory-mapped reader and a writer.
//
// File layout (GGUF v2/v3, little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv × { string key | u32 value_type | value }
//   n_tensors × { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
//   padding to `general.alignment` (default 32) | tensor data (each offset aligned)
// Strings are { u64 length | bytes }; arrays are { u32 elem_type | u64 count | elems }.
//
// Everything is checked before it is used: a truncated, hostile or wrong file throws GgufError
// naming the file, what was wrong and where (byte offset, key or tensor). Tensor data is never
// copied: GgufTensor::data points into the mapping, which lives as long as the GgufFile.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/dtype.h"

namespace graphrun {

class GgufError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class GgufType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_type_name(GgufType type);

// One metadata value. Scalars keep their exact type; integers are widened into `i` or `u`.
struct GgufValue {
    GgufType type = GgufType::U32;
    GgufType elem_type = GgufType::U8;  // for ARRAY: the element type
    int64_t i = 0;                      // I8..I64
    uint64_t u = 0;                     // U8..U64, BOOL
    double f = 0;                       // F32, F64
    std::string s;                      // STRING
    std::vector<GgufValue> array;       // ARRAY; elements may themselves be arrays (nesting is bounded)

    bool is_integer() const;
    bool is_float() const { return type == GgufType::F32 || type == GgufType::F64; }
    // Checked accessors: throw GgufError naming `what` (usually the key) on a type mismatch.
    int64_t as_int(std::string_view what) const;     // any integer type (and BOOL)
    double as_float(std::string_view what) const;    // any float or integer type
    const std::string& as_string(std::string_view what) const;
    const std::vector<GgufValue>& as_array(std::string_view what) const;

    static GgufValue make_u8(uint8_t v);
    static GgufValue make_i8(int8_t v);
    static GgufValue make_u16(uint16_t v);
    static GgufValue make_i16(int16_t v);
    static GgufValue make_u32(uint32_t v);
    static GgufValue make_i32(int32_t v);
    static GgufValue make_u64(uint64_t v);
    static GgufValue make_i64(int64_t v);
    static GgufValue make_f32(float v);
    static GgufValue make_f64(double v);
    static GgufValue make_bool(bool v);
    static GgufValue make_string(std::string v);
    static GgufValue make_array(GgufType elem_type, std::vector<GgufValue> elems);
};

struct GgufTensor {
    std::string name;
    DType type = DType::F32;
    std::vector<int64_t> ne;     // ggml order: ne[0] is the row length (innermost), ne[1] rows, ...
    uint64_t offset = 0;         // from the start of the data section
    uint64_t nbytes = 0;
    const uint8_t* data = nullptr;  // into the mapping

    int64_t n_elements() const;
    // Outermost first, as graphrun writes shapes: a ggml ne = [4096, 11008] matrix is (11008, 4096).
    std::vector<int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
};

class GgufFile {
public:
    // Maps and validates the file; throws GgufError("<path>: <what> at byte N ...") on anything wrong.
    static std::shared_ptr<const GgufFile> open(const std::string& path);
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t file_size() const { return size_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }   // where the tensor data section starts
    uint64_t tensor_bytes() const;                          // sum of all tensors' nbytes

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
    const GgufValue* find(std::string_view key) const;
    // Required values: throw GgufError "<path>: metadata key 'K' is missing" or "... has type T, expected ...".
    int64_t get_int(std::string_view key) const;
    double get_float(std::string_view key) const;
    const std::string& get_string(std::string_view key) const;
    // Optional values: nullopt when absent, GgufError when present with the wrong type.
    std::optional<int64_t> find_int(std::string_view key) const;
    std::optional<double> find_float(std::string_view key) const;
    std::optional<std::string> find_string(std::string_view key) const;
    // An array whose elements must all be `elem_type`; nullptr when absent.
    const std::vector<GgufValue>* find_array(std::string_view key, GgufType elem_type) const;

    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(std::string_view name) const;
    // The mapped pages that lie wholly inside the tensor's bytes, given back to the system (a weight
    // repacked at load is read elsewhere). The bytes stay readable: reading them again maps them
    // again from the file.
    void release_pages(const GgufTensor& tensor) const;

private:
    GgufFile() = default;
    std::string path_;
    uint32_t version_ = 0;
    const uint8_t* map_ = nullptr;
    uint64_t size_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> kv_;
    std::vector<GgufTensor> tensors_;
    std::map<std::string, size_t, std::less<>> kv_index_, tensor_index_;
    friend class GgufReader;
};

// Builds a GGUF v3 file and writes it. Keys keep insertion order; setting a key twice replaces it.
// add_tensor copies the data in, so callers may free their buffers; add_tensor_from streams it.
class GgufWriter {
public:
    void set(std::string key, GgufValue value);
    void set_u32(std::string key, uint32_t v) { set(std::move(key), GgufValue::make_u32(v)); }
    void set_f32(std::string key, float v) { set(std::move(key), GgufValue::make_f32(v)); }
    void set_bool(std::string key, bool v) { set(std::move(key), GgufValue::make_bool(v)); }
    void set_string(std::string key, std::string v) { set(std::move(key), GgufValue::make_string(std::move(v))); }
    void set_strings(std::string key, const std::vector<std::string>& v);
    void set_f32s(std::string key, const std::vector<float>& v);
    void set_i32s(std::string key, const std::vector<int32_t>& v);

    // ne in ggml order (ne[0] = row length). nbytes must equal what the type and ne imply.
    void add_tensor(std::string name, DType type, std::vector<int64_t> ne, const void* data, size_t nbytes);
    // Streamed: write() has `produce` fill one reusable buffer just before writing it, so one tensor
    // at a time is in memory; a size other than type and ne imply is a GgufError naming the tensor.
    void add_tensor_from(std::string name, DType type, std::vector<int64_t> ne,
                         std::function<void(std::vector<uint8_t>& bytes)> produce);

    // Writes by runtime/output_file.h's rules: `path` must be absent or a writable regular file
    // (checked before anything is produced); throws GgufError on a bad value or any I/O failure.
    void write(const std::string& path) const;

private:
    struct PendingTensor {
        std::string name;
        DType type;
        std::vector<int64_t> ne;
        uint64_t nbytes;
        std::vector<uint8_t> bytes;                          // empty when streamed
        std::function<void(std::vector<uint8_t>&)> produce;  // set when streamed
    };
    uint64_t check_new_tensor(const std::string& name, DType type, const std::vector<int64_t>& ne) const;
    void write_file(const std::string& path, const std::vector<uint8_t>& head, uint64_t total_bytes,
                    uint64_t alignment) const;
    std::vector<std::pair<std::string, GgufValue>> kv_;
    std::vector<PendingTensor> tensors_;
};

}  // namespace graphrun
