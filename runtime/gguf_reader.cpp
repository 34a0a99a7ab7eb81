// runtime/gguf_reader.cpp — maps a GGUF v2/v3 file read-only and validates all of it at open.
//
// The order of checks follows the file: header, key/value pairs, tensor infos, then the data
// section. Counts and lengths from the file are compared with the bytes left before anything is
// allocated, so a hostile count (2^60 keys, a 2^60-byte string) is an error, not an allocation.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>

#include "runtime/gguf.h"
#include "runtime/gguf_cursor.h"

namespace graphrun {

namespace {

// Nested arrays are legal GGUF, but nothing real nests deeply; the bound keeps recursion shallow.
constexpr int kMaxArrayDepth = 8;
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // empty key, type, smallest value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, n_dims, ne[0], type, offset

bool valid_type(uint32_t type) {
    return type <= static_cast<uint32_t>(GgufType::F64);
}

// The fewest bytes one value of `type` can take, to bound array counts before allocating.
uint64_t min_value_bytes(GgufType type) {
    switch (type) {
        case GgufType::U8:
        case GgufType::I8:
        case GgufType::BOOL:
            return 1;
        case GgufType::U16:
        case GgufType::I16:
            return 2;
        case GgufType::U32:
        case GgufType::I32:
        case GgufType::F32:
            return 4;
        case GgufType::STRING:
        case GgufType::U64:
        case GgufType::I64:
        case GgufType::F64:
            return 8;
        case GgufType::ARRAY:
            return 4 + 8;
    }
    return 1;
}

std::string quoted(const std::string& name) {
    return "'" + name + "'";
}

}  // namespace

class GgufReader {
  public:
    GgufReader(GgufFile& file) : f_(file), c_(file.path_, file.map_, file.size_) {}

    void parse() {
        read_header();
        for (uint64_t k = 0; k < n_kv_; ++k) read_kv(k);
        std::vector<uint64_t> offset_at;  // where each tensor's offset field is, for error messages
        for (uint64_t t = 0; t < n_tensors_; ++t) offset_at.push_back(read_tensor_info(t));
        place_tensor_data(offset_at);
    }

  private:
    void read_header() {
        if (c_.size() < 4 || std::memcmp(f_.map_, "GGUF", 4) != 0)
            c_.fail("not a GGUF file (it does not start with the magic \"GGUF\")", 0);
        c_.read<uint32_t>();
        f_.version_ = c_.read<uint32_t>();
        if (f_.version_ != 2 && f_.version_ != 3) {
            const bool swapped = f_.version_ == 0x02000000u || f_.version_ == 0x03000000u;
            c_.fail("GGUF version " + std::to_string(f_.version_) + " is not supported (only 2 and 3)" +
                        (swapped ? "; the file looks big-endian" : ""),
                    4);
        }
        n_tensors_ = c_.read<uint64_t>();
        n_kv_ = c_.read<uint64_t>();
        if (n_kv_ > c_.remaining() / kMinKvBytes)
            c_.fail("n_kv = " + std::to_string(n_kv_) + " key/value pairs cannot fit in the " +
                        std::to_string(c_.remaining()) + " bytes left",
                    16);
        if (n_tensors_ > c_.remaining() / kMinTensorInfoBytes)
            c_.fail("n_tensors = " + std::to_string(n_tensors_) + " tensor infos cannot fit in the " +
                        std::to_string(c_.remaining()) + " bytes left",
                    8);
    }

    void read_kv(uint64_t index) {
        const uint64_t key_at = c_.pos();
        c_.set_item("the key of pair " + std::to_string(index));
        std::string key = c_.read_string();
        const std::string item = "key " + quoted(key);
        c_.set_item(item);
        if (f_.kv_index_.count(key)) c_.fail("duplicate " + item, key_at);
        const uint64_t type_at = c_.pos();
        const uint32_t type = c_.read<uint32_t>();
        if (!valid_type(type)) c_.fail(item + " has unknown value type " + std::to_string(type), type_at);
        const uint64_t value_at = c_.pos();
        GgufValue value = read_value(static_cast<GgufType>(type), 0, item);
        if (key == "general.alignment") check_alignment(value, value_at);
        f_.kv_index_.emplace(key, f_.kv_.size());
        f_.kv_.emplace_back(std::move(key), std::move(value));
    }

    GgufValue read_value(GgufType type, int depth, const std::string& item) {
        GgufValue v;
        v.type = type;
        switch (type) {
            case GgufType::U8:
                v.u = c_.read<uint8_t>();
                break;
            case GgufType::U16:
                v.u = c_.read<uint16_t>();
                break;
            case GgufType::U32:
                v.u = c_.read<uint32_t>();
                break;
            case GgufType::U64:
                v.u = c_.read<uint64_t>();
                break;
            case GgufType::I8:
                v.i = c_.read<int8_t>();
                break;
            case GgufType::I16:
                v.i = c_.read<int16_t>();
                break;
            case GgufType::I32:
                v.i = c_.read<int32_t>();
                break;
            case GgufType::I64:
                v.i = c_.read<int64_t>();
                break;
            case GgufType::F32:
                v.f = c_.read<float>();
                break;
            case GgufType::F64:
                v.f = c_.read<double>();
                break;
            case GgufType::BOOL: {
                const uint64_t at = c_.pos();
                v.u = c_.read<uint8_t>();
                if (v.u > 1)
                    c_.fail(item + " has a bool byte " + std::to_string(v.u) + ", expected 0 or 1", at);
                break;
            }
            case GgufType::STRING:
                v.s = c_.read_string();
                break;
            case GgufType::ARRAY:
                read_array(v, depth, item);
                break;
        }
        return v;
    }

    void read_array(GgufValue& v, int depth, const std::string& item) {
        const uint64_t at = c_.pos();
        if (depth >= kMaxArrayDepth)
            c_.fail(item + " nests arrays deeper than " + std::to_string(kMaxArrayDepth) + " levels", at);
        const uint32_t elem_type = c_.read<uint32_t>();
        if (!valid_type(elem_type))
            c_.fail(item + " is an array of unknown type " + std::to_string(elem_type), at);
        v.elem_type = static_cast<GgufType>(elem_type);
        const uint64_t count = c_.read<uint64_t>();
        if (count > c_.remaining() / min_value_bytes(v.elem_type))
            c_.fail(item + " is an array of " + std::to_string(count) + " " + gguf_type_name(v.elem_type) +
                        " values, which cannot fit in the " + std::to_string(c_.remaining()) + " bytes left",
                    at + 4);
        v.array.reserve(count);
        for (uint64_t k = 0; k < count; ++k) v.array.push_back(read_value(v.elem_type, depth + 1, item));
    }

    // GGUF stores general.alignment as a u32; the data section and every tensor align to it.
    void check_alignment(const GgufValue& value, uint64_t at) {
        if (value.type != GgufType::U32)
            c_.fail("key 'general.alignment' has type " + std::string(gguf_type_name(value.type)) +
                        ", expected u32",
                    at);
        // GGUF requires a multiple of 8 and ggml a power of two; below 8, f32 and f16 rows would
        // start at addresses the kernels' loads do not expect.
        if (value.u < 8 || (value.u & (value.u - 1)) != 0)
            c_.fail("key 'general.alignment' is " + std::to_string(value.u) +
                        ", expected a power of two of at least 8 (GGUF requires a multiple of 8)",
                    at);
        f_.alignment_ = value.u;
    }

    // Returns where the tensor's offset field is, so later data-section errors can point at it.
    uint64_t read_tensor_info(uint64_t index) {
        const uint64_t name_at = c_.pos();
        c_.set_item("the name of tensor " + std::to_string(index));
        GgufTensor t;
        t.name = c_.read_string();
        const std::string item = "tensor " + quoted(t.name);
        c_.set_item(item);
        if (f_.tensor_index_.count(t.name)) c_.fail("duplicate " + item, name_at);

        const uint64_t dims_at = c_.pos();
        const uint32_t n_dims = c_.read<uint32_t>();
        if (n_dims < 1 || n_dims > 4)
            c_.fail(item + " has n_dims " + std::to_string(n_dims) + ", expected 1 to 4", dims_at);
        int64_t n_elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t ne_at = c_.pos();
            const uint64_t ne = c_.read<uint64_t>();
            if (ne == 0 || ne > uint64_t(std::numeric_limits<int64_t>::max()))
                c_.fail(item + " has ne[" + std::to_string(d) + "] = " + std::to_string(ne) +
                            ", expected at least 1",
                        ne_at);
            if (__builtin_mul_overflow(n_elements, int64_t(ne), &n_elements))
                c_.fail(item + " has more elements than fit in an int64", ne_at);
            t.ne.push_back(int64_t(ne));
        }

        const uint64_t type_at = c_.pos();
        const uint32_t ggml_type = c_.read<uint32_t>();
        // Any type whose block layout is known is read; whether it can run is the planner's question.
        const std::optional<DType> type = dtype_from_ggml(ggml_type);
        if (!type)
            c_.fail(item + " has type " + ggml_type_name(ggml_type) + " (ggml type id " +
                        std::to_string(ggml_type) + "), whose block layout graphrun does not know",
                    type_at);
        t.type = *type;
        const DTypeTraits& traits = dtype_traits(t.type);
        if (t.ne[0] % traits.block_size != 0)
            c_.fail(item + " has rows of " + std::to_string(t.ne[0]) + " elements, not a multiple of the " +
                        ggml_type_name(ggml_type) + " block size " + std::to_string(traits.block_size),
                    dims_at + 4);
        if (__builtin_mul_overflow(uint64_t(n_elements / traits.block_size), uint64_t(traits.block_bytes),
                                   &t.nbytes))
            c_.fail(item + " has more bytes than fit in a uint64", dims_at);

        const uint64_t offset_at = c_.pos();
        t.offset = c_.read<uint64_t>();
        if (t.offset % f_.alignment_ != 0)
            c_.fail(item + " has offset " + std::to_string(t.offset) + ", not a multiple of the alignment " +
                        std::to_string(f_.alignment_),
                    offset_at);
        f_.tensor_index_.emplace(t.name, f_.tensors_.size());
        f_.tensors_.push_back(std::move(t));
        return offset_at;
    }

    // The data section starts at the next aligned byte after the tensor infos; every tensor must
    // lie inside the file and no two may share bytes.
    void place_tensor_data(const std::vector<uint64_t>& offset_at) {
        const uint64_t end_of_infos = c_.pos();
        f_.data_offset_ = (end_of_infos + f_.alignment_ - 1) / f_.alignment_ * f_.alignment_;
        if (f_.tensors_.empty()) return;
        if (f_.data_offset_ > c_.size())
            c_.fail("the tensor data section would start at byte " + std::to_string(f_.data_offset_) +
                        ", past the end of the file (" + std::to_string(c_.size()) + " bytes)",
                    end_of_infos);
        const uint64_t data_bytes = c_.size() - f_.data_offset_;
        for (size_t k = 0; k < f_.tensors_.size(); ++k) {
            GgufTensor& t = f_.tensors_[k];
            if (t.offset > data_bytes || t.nbytes > data_bytes - t.offset)
                c_.fail("tensor " + quoted(t.name) + " needs " + std::to_string(t.nbytes) +
                            " bytes at data offset " + std::to_string(t.offset) +
                            ", but the data section (from byte " + std::to_string(f_.data_offset_) +
                            ") has only " + std::to_string(data_bytes) + " bytes",
                        offset_at[k]);
            t.data = f_.map_ + f_.data_offset_ + t.offset;
        }
        std::vector<size_t> order(f_.tensors_.size());
        std::iota(order.begin(), order.end(), size_t{0});
        std::sort(order.begin(), order.end(),
                  [&](size_t a, size_t b) { return f_.tensors_[a].offset < f_.tensors_[b].offset; });
        for (size_t k = 1; k < order.size(); ++k) {
            const GgufTensor& prev = f_.tensors_[order[k - 1]];
            const GgufTensor& cur = f_.tensors_[order[k]];
            if (prev.offset + prev.nbytes > cur.offset)
                c_.fail("tensor " + quoted(cur.name) + " overlaps tensor " + quoted(prev.name) +
                            " (offsets " + std::to_string(prev.offset) + " + " + std::to_string(prev.nbytes) +
                            " bytes > " + std::to_string(cur.offset) + ")",
                        offset_at[order[k]]);
        }
    }

    GgufFile& f_;
    GgufCursor c_;
    uint64_t n_tensors_ = 0, n_kv_ = 0;
};

std::shared_ptr<const GgufFile> GgufFile::open(const std::string& path) {
    std::shared_ptr<GgufFile> file(new GgufFile());
    file->path_ = path;
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; the file is refused right after.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw GgufError(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const int err = errno;
        ::close(fd);
        throw GgufError(path + ": not a regular file (a model is memory-mapped: give a file, not a " +
                        "FIFO, device or directory)" + (err ? std::string(": ") + std::strerror(err) : ""));
    }
    file->size_ = uint64_t(st.st_size);
    if (file->size_ < 4) {
        ::close(fd);
        throw GgufError(path + ": not a GGUF file (only " + std::to_string(file->size_) +
                        " bytes) at byte 0");
    }
    void* map = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (map == MAP_FAILED)
        throw GgufError(path + ": cannot map " + std::to_string(file->size_) +
                        " bytes: " + std::strerror(err));
    file->map_ = static_cast<const uint8_t*>(map);
    GgufReader(*file).parse();  // on error, `file` unmaps as it goes out of scope
    return file;
}

GgufFile::~GgufFile() {
    if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
}

void GgufFile::release_pages(const GgufTensor& tensor) const {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(tensor.data), end = begin + tensor.nbytes;
    const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
    if (last <= first) return;
    // MADV_DONTNEED on a private read-only file mapping drops our page table entries only; a failure
    // just leaves the pages mapped.
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

uint64_t GgufFile::tensor_bytes() const {
    uint64_t total = 0;
    for (const GgufTensor& t : tensors_) total += t.nbytes;
    return total;
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

// Metadata accessors: errors read "<path>: metadata key 'K' is missing" / "... has type T, expected ...".

namespace {

std::string key_what(const std::string& path, std::string_view key) {
    return path + ": metadata key '" + std::string(key) + "'";
}

const GgufValue& require(const GgufFile& f, std::string_view key) {
    const GgufValue* v = f.find(key);
    if (!v) throw GgufError(key_what(f.path(), key) + " is missing");
    return *v;
}

}  // namespace

int64_t GgufFile::get_int(std::string_view key) const {
    return require(*this, key).as_int(key_what(path_, key));
}

double GgufFile::get_float(std::string_view key) const {
    return require(*this, key).as_float(key_what(path_, key));
}

const std::string& GgufFile::get_string(std::string_view key) const {
    return require(*this, key).as_string(key_what(path_, key));
}

std::optional<int64_t> GgufFile::find_int(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? std::optional(v->as_int(key_what(path_, key))) : std::nullopt;
}

std::optional<double> GgufFile::find_float(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? std::optional(v->as_float(key_what(path_, key))) : std::nullopt;
}

std::optional<std::string> GgufFile::find_string(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? std::optional(v->as_string(key_what(path_, key))) : std::nullopt;
}

const std::vector<GgufValue>* GgufFile::find_array(std::string_view key, GgufType elem_type) const {
    const GgufValue* v = find(key);
    if (!v) return nullptr;
    if (v->type != GgufType::ARRAY || v->elem_type != elem_type)
        throw GgufError(key_what(path_, key) + " has type " +
                        (v->type == GgufType::ARRAY ? "array of " + std::string(gguf_type_name(v->elem_type))
                                                    : std::string(gguf_type_name(v->type))) +
                        ", expected array of " + gguf_type_name(elem_type));
    return &v->array;
}

}  // namespace graphrun
