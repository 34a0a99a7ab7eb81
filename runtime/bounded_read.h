// runtime/bounded_read.h — reading a whole small file (a graph definition, a prompt) safely.
//
// Paths come from users and sometimes from strangers, so: opening never waits (a FIFO nobody
// writes to reads as empty instead of hanging in open()), a directory, block device or socket is
// refused, and at most `max_bytes` are read, so /dev/zero or a runaway pipe is an error, not an
// exhausted memory. Regular files, FIFOs, pipes and terminals (e.g. -f /dev/stdin) are read.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace graphrun {

class FileReadError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The file's bytes; throws FileReadError("<path>: <reason>"), e.g. "<path>: is more than 16777216
// bytes (the limit for <what>)".
std::string read_bounded_file(const std::string& path, uint64_t max_bytes, const std::string& what);

}  // namespace graphrun
