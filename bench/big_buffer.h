// bench/big_buffer.h — page-aligned buffers far larger than the last-level cache, for benchmarks
// that must measure DRAM, not cache. Plain 4 KiB pages (no huge-page advice), like the weights a
// model maps from its GGUF file, and every page touched before timing starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace graphrun::bench {

// At least this many bytes of distinct weight copies are cycled through in the matmul benchmarks;
// lscpu reports a 300 MiB L3 on the development machine, so 1.25 GiB is over 4x larger.
constexpr int64_t kBeyondCacheBytes = int64_t(1280) << 20;

class BigBuffer {
  public:
    BigBuffer() = default;
    explicit BigBuffer(int64_t bytes) : bytes_(bytes) {
        const size_t rounded = size_t((bytes + 4095) / 4096 * 4096);
        void* p = std::aligned_alloc(4096, rounded);
        if (!p) throw std::bad_alloc();
        std::memset(p, 1, rounded);  // fault every page in now, not in the timed loop
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

}  // namespace graphrun::bench
