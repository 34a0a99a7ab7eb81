// runtime/gguf_cursor.h — bounds-checked little-endian reads over a mapped GGUF file.
// Reader internals, not a public interface: every read checks the bytes exist first, so a
// truncated or hostile file ends in a GgufError that says where, never in a read past the mapping.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "runtime/gguf.h"

namespace graphrun {

static_assert(std::endian::native == std::endian::little,
              "GGUF is little-endian; so is every host we run on");

class GgufCursor {
  public:
    GgufCursor(const std::string& path, const uint8_t* data, uint64_t size)
        : path_(path), data_(data), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t size() const { return size_; }
    uint64_t remaining() const { return size_ - pos_; }

    // What is being read, for truncation errors: "the header", "key 'general.name'", "tensor 'x'".
    void set_item(std::string item) { item_ = std::move(item); }
    const std::string& item() const { return item_; }

    // "<path>: <what> at byte <at>"
    [[noreturn]] void fail(const std::string& what, uint64_t at) const {
        throw GgufError(path_ + ": " + what + " at byte " + std::to_string(at));
    }

    void need(uint64_t n) const {
        if (n > remaining())
            fail("file ends inside " + item_ + " (" + std::to_string(n) + " bytes needed, " +
                     std::to_string(remaining()) + " left)",
                 pos_);
    }

    template <class T>
    T read() {
        static_assert(std::is_trivially_copyable_v<T>);
        need(sizeof(T));
        T value;
        std::memcpy(&value, data_ + pos_, sizeof value);
        pos_ += sizeof value;
        return value;
    }

    // { u64 length | bytes }: the length is checked against the bytes left before allocating.
    std::string read_string() {
        const uint64_t at = pos_;
        const uint64_t length = read<uint64_t>();
        if (length > remaining())
            fail("string of " + std::to_string(length) + " bytes in " + item_ +
                     " runs past the end of the file (" + std::to_string(remaining()) + " bytes left)",
                 at);
        std::string s(reinterpret_cast<const char*>(data_ + pos_), length);
        pos_ += length;
        return s;
    }

  private:
    const std::string& path_;
    const uint8_t* data_;
    uint64_t size_;
    uint64_t pos_ = 0;
    std::string item_ = "the header";
};

}  // namespace graphrun
