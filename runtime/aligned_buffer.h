// runtime/aligned_buffer.h — a zero-initialised byte buffer aligned for SIMD (the plan arena).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace graphrun {

class AlignedBuffer {
public:
    AlignedBuffer() = default;
    AlignedBuffer(int64_t bytes, int64_t alignment) : bytes_(bytes) {
        const size_t rounded = size_t((bytes + alignment - 1) / alignment * alignment);
        void* p = std::aligned_alloc(size_t(alignment), rounded ? rounded : size_t(alignment));
        if (!p) throw std::bad_alloc();
        std::memset(p, 0, rounded);
        data_.reset(static_cast<uint8_t*>(p));
    }
    uint8_t* data() const { return data_.get(); }
    int64_t size() const { return bytes_; }

private:
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> data_;
    int64_t bytes_ = 0;
};

}  // namespace graphrun
