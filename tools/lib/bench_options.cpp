// tools/lib/bench_options.cpp — `graphrun bench`'s command line, spelled as llama-bench's.
#include <algorithm>
#include <stdexcept>

#include "tools/lib/bench.h"

namespace graphrun::graph {

namespace {

[[noreturn]] void fail(const std::string& option, const std::string& what) {
    throw std::runtime_error("bench: " + option + ": " + what + " (see graphrun bench --help)");
}

int64_t parse_number(const std::string& text, const std::string& option) {
    size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (text.empty() || used != text.size() || text[0] == '+' || text[0] == ' ')
        fail(option, "'" + text + "' is not a whole number");
    return v;
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t end = text.find(sep, start);
        parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return parts;
        start = end + 1;
    }
}

}  // namespace

std::vector<int64_t> parse_bench_list(const std::string& text, const std::string& option, int64_t min_value) {
    std::vector<int64_t> values;
    for (const std::string& item : split(text, ',')) {
        // first[-last[+step | *mult]]
        const size_t dash = item.find('-', 1);
        const int64_t first = parse_number(item.substr(0, dash), option);
        int64_t last = first, step = 1;
        char op = '+';
        if (dash != std::string::npos) {
            const std::string rest = item.substr(dash + 1);
            const size_t at = rest.find_first_of("+*");
            last = parse_number(rest.substr(0, at), option);
            if (at != std::string::npos) {
                op = rest[at];
                step = parse_number(rest.substr(at + 1), option);
            }
            if (last < first) fail(option, "range '" + item + "' ends before it starts");
            if ((op == '+' && step < 1) || (op == '*' && (step < 2 || first < 1)))
                fail(option, "range '" + item + "' never advances");
        }
        for (int64_t v = first;;) {
            if (v < min_value)
                fail(option, "'" + std::to_string(v) + "' is less than " + std::to_string(min_value));
            values.push_back(v);
            if (values.size() > 4096) fail(option, "'" + text + "' lists more than 4096 values");
            if (op == '+' ? v > last - step : v > last / step) break;  // the next one would pass `last`
            v = op == '+' ? v + step : v * step;
        }
    }
    return values;
}

std::string bench_usage() {
    return R"(graphrun bench: prompt processing (pp) and generation (tg) tokens/s, as llama-bench measures them
usage: graphrun bench -m MODEL.gguf [options]

  -m,  --model FILE         model file(s) (default: the shipped models/kjv-q8_0.gguf)
  -p,  --n-prompt N         pp test: evaluate N tokens in batches of -ub (default: 512)
  -n,  --n-gen N            tg test: evaluate N tokens one at a time (default: 128)
  -pg  PP,TG                pp then tg, timed as one test
  -d,  --n-depth N          run the tests after N tokens are already in the KV cache (default: 0)
  -ub, --ubatch-size N      tokens per evaluated batch of a prompt (default: 512)
  -t,  --threads N          threads (default: every core)
  -r,  --repetitions N      timed runs per test (default: 5)
  -o,  --output FORMAT      md, json or csv on stdout (default: md); json/csv: nothing else on stdout
       --no-warmup          skip the warm-up run before each test
       --progress           say on stderr which test and run is running
       --graph FILE         graph definition (default: models/llama.json)
       --bandwidth-mib N    buffer for the read bandwidth measured per thread count (default: 1024;
                            0: do not measure)
       --profile            time per op kind and per graph node of the timed runs, on stderr
       --trace FILE.json    Chrome/Perfetto trace of every step of the timed runs on every thread
  -h,  --help               this text

Each of -m -p -n -pg -d -ub -t takes a comma list (-t 1,2), a range (first-last, first-last+step,
first-last*mult: -p 128-512*2) or may be given several times; every combination is run.
The markdown table adds "weights GB/s" (tg: weight bytes one token reads x tokens/s) and "read GB/s"
(a 4-stream read of a large buffer on the same threads, best of 5 passes, measured before the tests).
)";
}

BenchOptions parse_bench_options(const std::vector<std::string>& args) {
    BenchOptions o;
    bool set_p = false, set_n = false, set_d = false, set_ub = false, set_m = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> const std::string& {
            if (i + 1 >= args.size()) fail(a, "needs a value");
            return args[++i];
        };
        auto append = [&](std::vector<int64_t>& list, bool& given, int64_t min_value) {
            const std::vector<int64_t> v = parse_bench_list(value(), a, min_value);
            if (!given) list.clear();
            given = true;
            list.insert(list.end(), v.begin(), v.end());
        };
        if (a == "-h" || a == "--help") {
            o.help = true;
        } else if (a == "-m" || a == "--model") {
            if (!set_m) o.models.clear();
            set_m = true;
            for (const std::string& m : split(value(), ',')) {
                if (m.empty()) fail(a, "an empty file name");
                o.models.push_back(m);
            }
        } else if (a == "-p" || a == "--n-prompt") {
            append(o.n_prompt, set_p, 0);
        } else if (a == "-n" || a == "--n-gen") {
            append(o.n_gen, set_n, 0);
        } else if (a == "-d" || a == "--n-depth") {
            append(o.n_depth, set_d, 0);
        } else if (a == "-ub" || a == "--ubatch-size") {
            append(o.n_ubatch, set_ub, 1);
            o.ubatch_given = true;
        } else if (a == "-t" || a == "--threads") {
            for (int64_t t : parse_bench_list(value(), a, 1)) {
                if (t > 1024) fail(a, "'" + std::to_string(t) + "' threads is more than 1024");
                o.n_threads.push_back(int(t));
            }
        } else if (a == "-pg") {
            const std::string& v = value();
            const std::vector<std::string> parts = split(v, ',');
            if (parts.size() != 2) fail(a, "'" + v + "' is not PP,TG (two numbers)");
            const int64_t p = parse_number(parts[0], a), n = parse_number(parts[1], a);
            if (p < 0 || n < 0) fail(a, "'" + v + "' has a negative count");
            o.n_pg.emplace_back(p, n);
        } else if (a == "-r" || a == "--repetitions") {
            const int64_t r = parse_number(value(), a);
            if (r < 1 || r > 100000) fail(a, "'" + std::to_string(r) + "' is not between 1 and 100000");
            o.repetitions = int(r);
        } else if (a == "-o" || a == "--output") {
            o.output = value();
            if (o.output != "md" && o.output != "json" && o.output != "csv")
                fail(a, "'" + o.output + "' is not md, json or csv");
        } else if (a == "--no-warmup") {
            o.warmup = false;
        } else if (a == "--progress") {
            o.progress = true;
        } else if (a == "--graph") {
            o.graph_path = value();
        } else if (a == "--bandwidth-mib") {
            o.bandwidth_mib = parse_number(value(), a);
            if (o.bandwidth_mib < 0 || o.bandwidth_mib > (int64_t(1) << 20))
                fail(a, "'" + std::to_string(o.bandwidth_mib) + "' is not between 0 and 1048576");
        } else if (a == "--profile") {
            o.profile = true;
        } else if (a == "--trace") {
            o.trace_path = value();
        } else {
            fail(a, a.rfind('-', 0) == 0 ? "unknown option" : "unexpected argument");
        }
    }
    if (o.models.empty()) o.models.push_back(default_model_path());
    return o;
}

}  // namespace graphrun::graph
