// tools/lib/bench_report.h — `graphrun bench` results in llama-bench's output formats.
//
//   md    llama-bench's markdown table (model, size, params, backend, threads, test, t/s), plus
//         "weights GB/s" (tg: the bandwidth decoding implies) and "read GB/s" (measured, same run)
//   json  an array of objects with llama-bench's field names (n_prompt, n_gen, n_depth, n_threads,
//         avg_ts, stddev_ts, samples_ts, model_size, model_n_params, ...), plus weights_gbps and
//         read_bandwidth_gbps (null where they do not apply or were not measured)
//   csv   the same fields but the samples, one quoted value each, as llama-bench writes them
// Rows are printed as tests finish; the JSON array is closed by footer().
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "tools/lib/bench.h"

namespace graphrun::graph {

class BenchPrinter {
  public:
    virtual ~BenchPrinter() = default;
    virtual void header() {}
    virtual void row(const BenchResult& result) = 0;
    virtual void footer() {}
};

// format: "md", "json" or "csv" (parse_bench_options checked it).
std::unique_ptr<BenchPrinter> make_bench_printer(const std::string& format, std::FILE* out,
                                                 const BenchOptions& options);

// "AMD EPYC (family 25, model 1)": /proc/cpuinfo's model name, family and model ("unknown CPU").
std::string cpu_description();

}  // namespace graphrun::graph
