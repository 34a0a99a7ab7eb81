// runtime/bounded_read.cpp — see bounded_read.h.
#include "runtime/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace graphrun {

std::string read_bounded_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
    auto fail = [&](const std::string& why) -> FileReadError { return FileReadError(path + ": " + why); };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO's open() would wait
    if (fd < 0) throw fail(std::string("cannot open: ") + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};

    struct stat st {};
    if (::fstat(fd, &st) != 0) throw fail(std::string("cannot stat: ") + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw fail("is a directory");
    if (S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
        throw fail(std::string("is a ") + (S_ISBLK(st.st_mode) ? "block device" : "socket") + ", not a " + what);
    const std::string too_big = "is larger than " + std::to_string(max_bytes) + " bytes, the limit for " + what;
    if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes) throw fail(too_big);
    // Reads block again from here on: a pipe's writer is waited for, as `cat` would.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);

    std::string text;
    char buffer[65536];
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw fail(std::string("read failed: ") + std::strerror(errno));
        if (n == 0) break;
        if (uint64_t(n) > max_bytes - text.size()) throw fail(too_big);
        text.append(buffer, size_t(n));
    }
    return text;
}

}  // namespace graphrun
