// runtime/output_file.h — writing a file the user named, and nothing else.
//
// What graphrun does with an output path OUT (quantize, make-model, any GgufWriter::write):
//   - OUT may be absent, or a regular file the user may write: it is then replaced whole.
//   - Anything else at OUT is refused before any work starts, with the reason: a symbolic link
//     (graphrun never writes through one: give the real path), a directory, a device such as
//     /dev/null, a FIFO, a socket, or a read-only file (graphrun does not replace what the user
//     protected). OUT's folder must exist and be writable.
//   - The bytes go to a new file beside OUT, "OUT.tmp.<pid>", created exclusively (O_EXCL, so
//     never through a link planted under that name), flushed to disk and renamed over OUT only
//     when complete. A replaced file keeps its permission bits. Other hard links to an old OUT
//     keep the old bytes (rename replaces the name, as `mv` would; it does not write into the file).
//   - On every failure, and on SIGINT, SIGTERM or SIGHUP while a file is being written, the
//     temporary file is removed; OUT is then as it was.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace graphrun {

class OutputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Throws OutputError("<path>: <reason>") unless OUT can be created or replaced by the rules above.
// `bytes_needed` > 0 also checks that OUT's file system has that much space free.
void check_output_path(const std::string& path, uint64_t bytes_needed = 0);

// A file being written to a temporary beside `path`; commit() puts it in place.
class OutputFile {
public:
    explicit OutputFile(std::string path, uint64_t bytes_needed = 0);  // checks, then creates the temporary
    ~OutputFile();  // uncommitted: closes and removes the temporary
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(const void* data, size_t n);  // throws OutputError on a short write (disk full, ...)
    void write_zeros(size_t n);
    void commit();  // flush, fsync, check OUT again, rename over it

    const std::string& temp_path() const { return tmp_; }

private:
    [[noreturn]] void fail(const std::string& what, int err) const;
    std::string path_, tmp_;
    std::FILE* file_ = nullptr;
    int slot_ = -1;  // in the signal handler's table of temporaries to remove
    bool committed_ = false;
};

}  // namespace graphrun
