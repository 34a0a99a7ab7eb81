// runtime/aligned_buffer.h — a byte buffer aligned for SIMD: zero-initialised (the plan arena), or left
// uninitialised for a buffer its owner writes whole before reading (a weight repacked at load).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace graphrun {

class AlignedBuffer {
public:
    // The tag of the constructor that leaves the bytes as the allocator gives them.
    struct Uninitialised {};

    AlignedBuffer() = default;
    AlignedBuffer(int64_t bytes, int64_t alignment) : AlignedBuffer(bytes, alignment, Uninitialised{}) {
        std::memset(data_.get(), 0, rounded(bytes, alignment));
    }
    AlignedBuffer(int64_t bytes, int64_t alignment, Uninitialised) : bytes_(bytes) {
        const size_t size = rounded(bytes, alignment);
        void* p = std::aligned_alloc(size_t(alignment), size ? size : size_t(alignment));
        if (!p) throw std::bad_alloc();
        data_.reset(static_cast<uint8_t*>(p));
    }
    uint8_t* data() const { return data_.get(); }
    int64_t size() const { return bytes_; }

private:
    static size_t rounded(int64_t bytes, int64_t alignment) {
        return size_t((bytes + alignment - 1) / alignment * alignment);
    }
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> data_;
    int64_t bytes_ = 0;
};

}  // namespace graphrun
