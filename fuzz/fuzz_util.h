// fuzz/fuzz_util.h — what the libFuzzer targets share: inputs as files, and the rule that only the
// documented error types may escape a parser (anything else, a bad_alloc included, is a finding).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

namespace graphrun::fuzz {

// An in-memory file (memfd) with a path, for the readers that open files by name.
class MemoryFile {
  public:
    MemoryFile() : fd_(::memfd_create("graphrun-fuzz", MFD_CLOEXEC)) {
        if (fd_ < 0) std::abort();
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    ~MemoryFile() { ::close(fd_); }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;

    // Replaces the contents; the path then opens to exactly these bytes.
    const std::string& hold(const uint8_t* data, size_t size) {
        if (::ftruncate(fd_, 0) != 0) std::abort();
        for (size_t done = 0; done < size;) {
            const ssize_t n = ::pwrite(fd_, data + done, size - done, off_t(done));
            if (n <= 0) std::abort();
            done += size_t(n);
        }
        return path_;
    }

  private:
    int fd_;
    std::string path_;
};

// An exception that no parser documents: report it the way libFuzzer reports a crash.
[[noreturn]] inline void undocumented(const std::exception& e) {
    std::fprintf(stderr, "graphrun fuzz: undocumented exception %s: %s\n", typeid(e).name(), e.what());
    std::abort();
}

}  // namespace graphrun::fuzz
