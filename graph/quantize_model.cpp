// graph/quantize_model.cpp — rewrites a GGUF model with its weight matrices in Q8_0 or Q4_0.
//
// The output is streamed: every tensor's output type and size are known from its name and shape
// alone, so the header (metadata, tensor infos with offsets) is written first and then each tensor
// is converted into one buffer and appended. runtime's GgufWriter keeps every tensor in memory until
// write(), which a model bigger than RAM cannot afford, hence this small writer of its own.
#include "graph/quantize_model.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "ops/quant.h"
#include "runtime/gguf.h"

namespace graphrun::graph {

namespace {

constexpr int64_t kElementsPerTask = 1 << 16;  // rows are grouped so a task converts ~64K weights

uint64_t align_up(uint64_t n, uint64_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What `type` does to this tensor; see the header for the rule.
QuantizedTensor plan_tensor(const GgufTensor& t, DType type) {
    QuantizedTensor q{t.name, t.shape(), t.type, t.type, TensorAction::Kept, "", t.nbytes, t.nbytes};
    const int64_t block = dtype_traits(type).block_size;
    if (t.ne.size() < 2) {
        q.why = "1-D";  // norm weights: tiny, and rmsnorm reads them as they are
    } else if (!ends_with(t.name, "weight") || ends_with(t.name, "_norm.weight")) {
        q.why = "not a weight matrix";
    } else if (t.ne[0] % block != 0) {
        q.action = TensorAction::Unblockable;
        q.why = "rows of " + std::to_string(t.ne[0]) + " elements are not a multiple of the " +
                dtype_name(type) + " block size " + std::to_string(block);
    } else if (t.type == type) {
        q.action = TensorAction::Copied;
    } else {
        q.action = TensorAction::Quantized;
        q.to = type;
        q.bytes_out = uint64_t(row_bytes(type, t.ne[0])) * uint64_t(t.n_elements() / t.ne[0]);
    }
    return q;
}

// ---- the output file ----

// Appends bytes to a file opened beside the destination; rename() puts it in place only once all
// of it is written, so a failure never leaves a half-written model under the real name.
class OutputFile {
  public:
    explicit OutputFile(std::string path)
        : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
        file_ = std::fopen(tmp_.c_str(), "wb");
        if (!file_) throw GgufError(path_ + ": cannot create " + tmp_ + ": " + std::strerror(errno));
    }
    ~OutputFile() {
        if (file_) std::fclose(file_);
        if (!committed_) std::remove(tmp_.c_str());
    }
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(const void* p, size_t n) {
        if (n && std::fwrite(p, 1, n, file_) != n) fail();
        written_ += n;
    }
    void zeros(size_t n) {
        static const uint8_t kZeros[256] = {};
        for (size_t left = n; left > 0;) {
            const size_t k = std::min(left, sizeof kZeros);
            write(kZeros, k);
            left -= k;
        }
    }
    template <class T>
    void put(T v) {
        write(&v, sizeof v);
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        write(s.data(), s.size());
    }
    uint64_t written() const { return written_; }

    void commit() {
        std::FILE* f = file_;
        file_ = nullptr;
        if (std::fclose(f) != 0) fail();
        if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail();
        committed_ = true;
    }

  private:
    [[noreturn]] void fail() { throw GgufError(path_ + ": write failed: " + std::strerror(errno)); }
    std::string path_, tmp_;
    std::FILE* file_ = nullptr;
    uint64_t written_ = 0;
    bool committed_ = false;
};

// One metadata value, exactly as GGUF stores it (values come from a file that passed GgufFile's
// checks, so they fit their declared types).
void put_value(OutputFile& out, const GgufValue& v) {
    switch (v.type) {
        case GgufType::U8:
            out.put(uint8_t(v.u));
            return;
        case GgufType::I8:
            out.put(int8_t(v.i));
            return;
        case GgufType::U16:
            out.put(uint16_t(v.u));
            return;
        case GgufType::I16:
            out.put(int16_t(v.i));
            return;
        case GgufType::U32:
            out.put(uint32_t(v.u));
            return;
        case GgufType::I32:
            out.put(int32_t(v.i));
            return;
        case GgufType::U64:
            out.put(uint64_t(v.u));
            return;
        case GgufType::I64:
            out.put(int64_t(v.i));
            return;
        case GgufType::F32:
            out.put(float(v.f));
            return;
        case GgufType::F64:
            out.put(double(v.f));
            return;
        case GgufType::BOOL:
            out.put(uint8_t(v.u != 0));
            return;
        case GgufType::STRING:
            out.put_string(v.s);
            return;
        case GgufType::ARRAY:
            out.put(uint32_t(v.elem_type));
            out.put(uint64_t(v.array.size()));
            for (const GgufValue& e : v.array) put_value(out, e);
            return;
    }
}

// The input's metadata with llama-quantize's two changes, each replacing the key in place if present.
std::vector<std::pair<std::string, GgufValue>> output_metadata(const GgufFile& file, DType type) {
    std::vector<std::pair<std::string, GgufValue>> kv = file.metadata();
    auto set = [&kv](const std::string& key, GgufValue value) {
        for (auto& [k, v] : kv)
            if (k == key) {
                v = std::move(value);
                return;
            }
        kv.emplace_back(key, std::move(value));
    };
    set("general.quantization_version", GgufValue::make_u32(kGgmlQuantizationVersion));
    set("general.file_type",
        GgufValue::make_u32(type == DType::Q8_0 ? kLlamaFtypeMostlyQ8_0 : kLlamaFtypeMostlyQ4_0));
    return kv;
}

// ---- conversion ----

// t (n_rows, row_length) any supported type -> out (n_rows, row_length) `type`, row by row in parallel.
void convert_tensor(const GgufTensor& t, DType type, std::vector<uint8_t>& out) {
    const int64_t n = t.ne[0], n_rows = t.n_elements() / n;
    const int64_t in_row = row_bytes(t.type, n), out_row = row_bytes(type, n);
    const ops::QuantTraits* from = ops::quant_traits(t.type);
    const ops::QuantTraits* to = ops::quant_traits(type);
    if (!from || !to)
        throw std::logic_error("quantize: no traits for " + std::string(dtype_name(t.type)) + " -> " +
                               dtype_name(type));
    out.resize(size_t(out_row * n_rows));
    const int64_t grain = std::max<int64_t>(1, kElementsPerTask / n);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n_rows, grain),
                      [&](const tbb::blocked_range<int64_t>& r) {
                          std::vector<float> row(t.type == DType::F32 ? 0 : size_t(n));
                          for (int64_t i = r.begin(); i < r.end(); ++i) {
                              const uint8_t* src = t.data + i * in_row;
                              const float* x = reinterpret_cast<const float*>(src);
                              if (t.type != DType::F32) {
                                  from->dequantize_row(src, row.data(), n);
                                  x = row.data();
                              }
                              to->quantize_row(x, out.data() + i * out_row, n);
                          }
                      });
}

}  // namespace

size_t QuantizeReport::count(TensorAction action) const {
    return size_t(std::count_if(tensors.begin(), tensors.end(),
                                [action](const QuantizedTensor& t) { return t.action == action; }));
}

QuantizeReport quantize_model(const std::string& in, const std::string& out, DType type,
                              const std::function<void(size_t, size_t, const std::string&)>& progress) {
    if (type != DType::Q8_0 && type != DType::Q4_0)
        throw std::invalid_argument(std::string("quantize: type ") + dtype_name(type) +
                                    " is not a quantized type graphrun writes (q8_0, q4_0)");
    std::error_code ec;
    if (std::filesystem::equivalent(in, out, ec))
        throw std::invalid_argument("quantize: the output " + out + " is the input file; write a new file");

    const auto file = GgufFile::open(in);
    QuantizeReport report;
    report.type = type;
    report.file_bytes_in = file->file_size();
    for (const GgufTensor& t : file->tensors()) {
        report.tensors.push_back(plan_tensor(t, type));
        report.bytes_in += report.tensors.back().bytes_in;
        report.bytes_out += report.tensors.back().bytes_out;
    }

    // Header: magic, version, counts, metadata, tensor infos with offsets, padding.
    const uint64_t alignment = file->alignment();  // general.alignment, if any, is copied with the metadata
    const auto metadata = output_metadata(*file, type);
    OutputFile o(out);
    o.put<uint32_t>(0x46554747);  // "GGUF" read as a little-endian u32
    o.put<uint32_t>(3);
    o.put<uint64_t>(report.tensors.size());
    o.put<uint64_t>(metadata.size());
    for (const auto& [key, value] : metadata) {
        o.put_string(key);
        o.put(uint32_t(value.type));
        put_value(o, value);
    }
    uint64_t offset = 0;
    for (size_t k = 0; k < report.tensors.size(); ++k) {
        const GgufTensor& t = file->tensors()[k];
        o.put_string(t.name);
        o.put(uint32_t(t.ne.size()));
        for (int64_t d : t.ne) o.put(uint64_t(d));
        o.put(dtype_traits(report.tensors[k].to).ggml_type);
        o.put(offset);
        offset = align_up(offset + report.tensors[k].bytes_out, alignment);
    }
    o.zeros(align_up(o.written(), alignment) - o.written());

    // Data: one tensor at a time, each padded to the alignment as ggml pads them.
    std::vector<uint8_t> converted;
    for (size_t k = 0; k < report.tensors.size(); ++k) {
        const GgufTensor& t = file->tensors()[k];
        const QuantizedTensor& q = report.tensors[k];
        if (q.action == TensorAction::Quantized) {
            convert_tensor(t, type, converted);
            o.write(converted.data(), converted.size());
        } else {
            o.write(t.data, t.nbytes);
        }
        o.zeros(align_up(q.bytes_out, alignment) - q.bytes_out);
        if (progress) progress(k + 1, report.tensors.size(), t.name);
    }
    o.commit();

    // What we wrote must pass our own loader's checks.
    report.file_bytes_out = GgufFile::open(out)->file_size();
    return report;
}

}  // namespace graphrun::graph
