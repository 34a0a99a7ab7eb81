// runtime/read_bandwidth.h — the machine's DRAM read bandwidth, the ceiling for decoding: a decode
// step reads every weight once. `graphrun bench` measures it in the same run as the tokens/s it
// compares with it, and bench/bandwidth_bench.cpp times the same loop under Google Benchmark.
//
// A pass sums a buffer far larger than the last-level cache, each thread one contiguous share of it
// (as the matmuls split weight rows), read as 1 or 4 interleaved sequential streams per thread. One
// stream leaves bandwidth unused: the L2 hardware prefetcher runs several streams at once, and with
// four a core reads ~1.5x faster (11.5 vs 18 GB/s measured on one Sapphire Rapids core). Matmul kernels
// that walk several weight rows at once get the same benefit, so the 4-stream figure is the ceiling
// to compare them with; engines have decoded faster still on some machines, so it is not a bound.
#pragma once

#include <cstdint>

#include "runtime/aligned_buffer.h"

namespace graphrun {

// Sum of the 8-byte words of p[0, n), read as `streams` (1 or 4) interleaved parts of n / streams
// bytes; p 64-byte aligned, n a multiple of 64 * streams. AVX2 loads where the CPU has them.
uint64_t read_bytes_sum(const uint8_t* p, int64_t n, int streams);

class ReadBandwidth {
  public:
    // A page-aligned buffer of `bytes` (rounded down to a multiple of 64 KiB), every page touched
    // now, not while timing. 1 GiB is 4x the 300 MiB L3 of the machines graphrun is measured on.
    explicit ReadBandwidth(int64_t bytes = int64_t(1) << 30);

    // One pass over the whole buffer on n_threads threads; returns its checksum (so the reads
    // cannot be optimised away) and its wall time, from the start of the first thread's share to
    // the end of the last (the thread arena is made before the clock starts).
    uint64_t pass(int n_threads, int streams, double* seconds) const;
    // The best of `passes` passes, in GB/s (1e9 bytes per second).
    double best_gbps(int n_threads, int streams = 4, int passes = 5) const;

    const uint8_t* data() const { return buffer_.data(); }
    int64_t size() const { return bytes_; }

  private:
    int64_t bytes_;
    AlignedBuffer buffer_;
};

}  // namespace graphrun
