// fuzz/gguf_fuzz.cpp — the GGUF reader on arbitrary bytes, and everything that trusts what it accepts.
//
// An accepted file is then used the way graphrun uses one: every tensor's bytes are read (the
// non-finite scan touches each of them, so a tensor the reader placed outside the mapping faults),
// the metadata accessors run over every key, the tokenizer loads its vocabulary (and encodes and
// decodes a line with it), and a small file is written back with GgufWriter and read again, which
// must give the same keys and tensors. Only GgufError and TokenizerError may escape.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "fuzz/fuzz_util.h"
#include "runtime/finite_check.h"
#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"

namespace {

using namespace graphrun;

void use_tokenizer(const GgufFile& file) {
    try {
        const Tokenizer tokenizer = Tokenizer::from_gguf(file);
        const std::vector<int32_t> ids = tokenizer.encode("Hello world, <s> 123 héllo\n", tokenizer.bos() >= 0, true);
        for (int32_t id : ids)
            if (id < 0 || id >= tokenizer.n_vocab()) std::abort();
        (void)tokenizer.decode(ids, true);
    } catch (const TokenizerError&) {
    }
}

// Writes what was read and reads it again: the same keys, in order, and the same tensor bytes.
void round_trip(const GgufFile& file) {
    // tmpfs when there is one: the writer fsyncs, which on a disk would cost more than the rest.
    static const std::string path =
        ((std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                    : std::filesystem::temp_directory_path()) /
         ("graphrun_gguf_fuzz_" + std::to_string(::getpid()) + ".gguf"))
            .string();
    GgufWriter writer;
    for (const auto& [key, value] : file.metadata()) writer.set(key, value);
    for (const GgufTensor& t : file.tensors()) writer.add_tensor(t.name, t.type, t.ne, t.data, t.nbytes);
    writer.write(path);
    const auto again = GgufFile::open(path);
    std::filesystem::remove(path);
    if (again->metadata().size() != file.metadata().size() || again->tensors().size() != file.tensors().size())
        std::abort();
    for (size_t k = 0; k < file.metadata().size(); ++k)
        if (again->metadata()[k].first != file.metadata()[k].first) std::abort();
    for (size_t k = 0; k < file.tensors().size(); ++k) {
        const GgufTensor &a = file.tensors()[k], &b = again->tensors()[k];
        if (a.name != b.name || a.type != b.type || a.ne != b.ne || a.nbytes != b.nbytes ||
            std::memcmp(a.data, b.data, a.nbytes) != 0)
            std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static fuzz::MemoryFile input;
    try {
        const auto file = GgufFile::open(input.hold(data, size));
        for (const GgufTensor& t : file->tensors()) (void)find_non_finite(t.type, t.data, t.n_elements());
        for (const auto& [key, value] : file->metadata()) {
            (void)file->find(key);
            if (value.type == GgufType::STRING) (void)file->get_string(key);
            if (value.is_integer()) (void)file->get_int(key);
            if (value.is_float() || value.is_integer()) (void)file->get_float(key);
        }
        use_tokenizer(*file);
        if (size <= 1 << 16) round_trip(*file);
    } catch (const GgufError&) {
    } catch (const std::exception& e) {
        fuzz::undocumented(e);
    }
    return 0;
}
