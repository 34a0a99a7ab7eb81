// tests/docs/docs_test.cpp — docs that tests keep true: what README.md and docs/ say about the op table,
// the runnable types, the source tree and the plan dump is compared with what the code has and prints,
// so a change that makes a doc stale fails here, naming the doc and what to write.
//
//   DocsOpTable     every op-table row and every runnable weight type is in README.md's op/type table
//                   and docs/architecture.md's op table
//   DocsPaths       every source path written in backticks in README.md, models/README.md and docs/*.md
//                   exists
//   DocsGoldenPlan  the plan of models/kjv-q8_0.gguf equals tests/docs/golden/kjv-q8_0.plan.txt (SIMD
//                   level names normalised), graphrun --dump-plan prints it, and docs/architecture.md's
//                   plan excerpt is cut from it. GRAPHRUN_UPDATE_GOLDEN=1 rewrites the golden file and
//                   the excerpt.
//   DocsWorkedExample  docs/adding-an-op.md's GeGLU plan excerpt and the arena sizes it quotes are what
//                   graphrun prints for that graph on the teaching-size model
// (The include-direction test of the layering is tests/layering_test.sh, CTest `Layering`.)
// GCC 12 reports false -Wmaybe-uninitialized inside libstdc++'s <regex> (std::function moves in
// _NFA::_M_insert_*) when it inlines them under -fsanitize=address; the state at the header lines is
// what counts, so it is set before any include.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/model.h"
#include "graph/plan.h"
#include "ops/op_table.h"
#include "ops/quant/traits.h"
#include "runtime/dtype.h"

namespace graphrun {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = GRAPHRUN_SOURCE_DIR;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string join_lines(const std::vector<std::string>& lines, size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) out += lines[i] + "\n";
    return out;
}

// The lines of a markdown section: from the heading `heading` (exactly, e.g. "## Ops and weight types")
// to the next heading of the same or a higher level. Empty when the heading is missing.
std::vector<std::string> section(const std::string& markdown, const std::string& heading) {
    const std::vector<std::string> lines = lines_of(markdown);
    const size_t level = heading.find_first_not_of('#');
    std::vector<std::string> out;
    bool inside = false, fenced = false;
    for (const std::string& line : lines) {
        if (line.rfind("```", 0) == 0) fenced = !fenced;
        if (!fenced && line.rfind("#", 0) == 0) {
            const size_t line_level = line.find_first_not_of('#');
            if (inside && line_level <= level) break;
            if (line == heading) {
                inside = true;
                continue;
            }
        }
        if (inside) out.push_back(line);
    }
    return out;
}

// The table lines (starting '|') of a section.
std::vector<std::string> table_lines(const std::vector<std::string>& lines) {
    std::vector<std::string> out;
    for (const std::string& l : lines)
        if (l.rfind("|", 0) == 0) out.push_back(l);
    return out;
}

bool has_code(const std::string& line, const std::string& word) {
    return line.find("`" + word + "`") != std::string::npos;
}

bool any_line_has(const std::vector<std::string>& lines, const std::string& word) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return has_code(l, word); });
}

// The weight types a matmul runs: f32 and f16 (matmul_f32), and each type whose traits name a matmul row.
struct RunnableType {
    std::string dtype;         // "q4_k"
    std::string kernel;        // "matmul_q4_k"
    std::string vec_dot_type;  // "Q8_K": what activations are quantized to; empty for the float types
};
std::string upper(std::string s) {
    for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
    return s;
}
std::vector<RunnableType> runnable_types() {
    std::vector<RunnableType> types = {{"f32", "matmul_f32", ""}, {"f16", "matmul_f32", ""}};
    for (const DTypeTraits& t : dtype_table()) {
        const ops::QuantTraits* traits = ops::quant_traits(t.type);
        if (traits && traits->vec_dot && traits->matmul_kernel)
            types.push_back({t.name, traits->matmul_kernel, upper(dtype_name(traits->vec_dot_type))});
    }
    return types;
}

// ---- the op table and the types in the docs --------------------------------------------------------

constexpr const char* kReadmeTable = "## Ops and weight types";
constexpr const char* kArchitectureTable = "## ops/: the kernels";

TEST(DocsOpTable, EveryRowIsInTheReadmeAndArchitectureTables) {
    const std::vector<std::string> readme =
        table_lines(section(read_text(kSource / "README.md"), kReadmeTable));
    const std::vector<std::string> arch =
        table_lines(section(read_text(kSource / "docs/architecture.md"), kArchitectureTable));
    ASSERT_FALSE(readme.empty()) << "README.md has no table under '" << kReadmeTable << "'";
    ASSERT_FALSE(arch.empty()) << "docs/architecture.md has no table under '" << kArchitectureTable << "'";
    ASSERT_GE(ops::op_table().size(), 20u);  // the rows are there to be checked
    for (const ops::OpDef* row : ops::op_table()) {
        EXPECT_TRUE(any_line_has(readme, row->name))
            << "op-table row '" << row->name << "' is not in README.md's table under '" << kReadmeTable
            << "': add a line naming `" << row->name << "`";
        EXPECT_TRUE(any_line_has(arch, row->name))
            << "op-table row '" << row->name << "' is not in docs/architecture.md's table under '"
            << kArchitectureTable << "': add it (inputs -> output, work units)";
    }
}

TEST(DocsOpTable, EveryRunnableTypeIsOnItsMatmulRowInTheReadme) {
    const std::vector<std::string> readme =
        table_lines(section(read_text(kSource / "README.md"), kReadmeTable));
    ASSERT_FALSE(readme.empty()) << "README.md has no table under '" << kReadmeTable << "'";
    const std::vector<RunnableType> types = runnable_types();
    ASSERT_GE(types.size(), 4u);
    for (const RunnableType& t : types) {
        const bool together = std::any_of(readme.begin(), readme.end(), [&](const std::string& l) {
            return has_code(l, t.kernel) && has_code(l, t.dtype);
        });
        EXPECT_TRUE(together) << "weight type '" << t.dtype << "' runs through '" << t.kernel
                              << "', but no line of README.md's table under '" << kReadmeTable << "' names `"
                              << t.kernel << "` and `" << t.dtype << "` together";
        // A quantized row's line says what x is quantized to ("x quantized to Q8_K"): the traits'
        // vec_dot_type.
        if (t.vec_dot_type.empty()) continue;
        const bool says_activation = std::any_of(readme.begin(), readme.end(), [&](const std::string& l) {
            return has_code(l, t.kernel) && l.find("quantized to " + t.vec_dot_type) != std::string::npos;
        });
        EXPECT_TRUE(says_activation) << "README.md's line for `" << t.kernel
                                     << "` should say 'x quantized to " << t.vec_dot_type
                                     << "' (the vec_dot_type of " << t.dtype << "'s traits)";
    }
}

TEST(DocsOpTable, TablesNameNoRowTheOpTableLacks) {
    // A row renamed or removed leaves its old name in the first column of a table: that fails too.
    std::set<std::string> rows;
    for (const ops::OpDef* row : ops::op_table()) rows.insert(row->name);
    const std::regex code("`([a-z0-9_]+)`");
    for (const auto& [doc, heading] : {std::pair<std::string, std::string>{"README.md", kReadmeTable},
                                       {"docs/architecture.md", kArchitectureTable}}) {
        for (const std::string& l : table_lines(section(read_text(kSource / doc), heading))) {
            const std::string first_cell = l.substr(0, l.find('|', 1));
            for (std::sregex_iterator m(first_cell.begin(), first_cell.end(), code), end; m != end; ++m)
                EXPECT_TRUE(rows.count((*m)[1])) << doc << "'s table under '" << heading << "' names `"
                                                 << (*m)[1] << "`, which is no op-table row: " << l;
        }
    }
}

// ---- paths in the docs ---------------------------------------------------------------------------

// "graph/quant_mix.{h,cpp}" -> graph/quant_mix.h, graph/quant_mix.cpp
std::vector<std::string> expand_braces(const std::string& path) {
    const size_t open = path.find('{'), close = path.find('}');
    if (open == std::string::npos || close == std::string::npos || close < open) return {path};
    std::vector<std::string> out;
    std::string alternatives = path.substr(open + 1, close - open - 1);
    for (size_t start = 0;;) {
        const size_t comma = alternatives.find(',', start);
        out.push_back(path.substr(0, open) + alternatives.substr(start, comma - start) +
                      path.substr(close + 1));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

bool looks_like_source_path(const std::string& token) {
    if (token.find('/') == std::string::npos) return false;
    if (token.find_first_of("<>*$") != std::string::npos) return false;        // a pattern: ops/<family>.cpp
    if (token.rfind("../", 0) == 0 || token.rfind("/", 0) == 0) return false;  // outside the checkout
    if (token.find("://") != std::string::npos) return false;
    for (const char* ext : {".cpp", ".h", ".json", ".sh", ".md"})
        if (token.size() > std::string(ext).size() && token.ends_with(ext)) return true;
    return false;
}

// Every path-like word of every `inline code` span outside fenced blocks, with its line number.
struct DocPath {
    std::string doc, path;
    int line;
};
std::vector<DocPath> backticked_paths(const fs::path& doc) {
    std::vector<DocPath> out;
    const std::vector<std::string> lines = lines_of(read_text(kSource / doc));
    bool fenced = false;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        if (line.rfind("```", 0) == 0) {
            fenced = !fenced;
            continue;
        }
        if (fenced) continue;
        for (size_t open = line.find('`'); open != std::string::npos;) {
            const size_t close = line.find('`', open + 1);
            if (close == std::string::npos) break;
            std::istringstream words(line.substr(open + 1, close - open - 1));
            for (std::string w; words >> w;) {
                while (!w.empty() && std::string(",;:()'\"").find(w.back()) != std::string::npos)
                    w.pop_back();
                while (!w.empty() && std::string("('\"").find(w.front()) != std::string::npos) w.erase(0, 1);
                for (const std::string& p : expand_braces(w))
                    if (looks_like_source_path(p)) out.push_back({doc.string(), p, int(i + 1)});
            }
            open = line.find('`', close + 1);
        }
    }
    return out;
}

std::vector<fs::path> docs_with_paths() {
    std::vector<fs::path> docs = {"README.md", "models/README.md"};
    for (const auto& entry : fs::directory_iterator(kSource / "docs"))
        if (entry.path().extension() == ".md") docs.push_back(fs::relative(entry.path(), kSource));
    std::sort(docs.begin(), docs.end());
    return docs;
}

TEST(DocsPaths, EveryBacktickedSourcePathExists) {
    size_t checked = 0;
    for (const fs::path& doc : docs_with_paths()) {
        for (const DocPath& p : backticked_paths(doc)) {
            ++checked;
            // From the root of the checkout, or beside the doc (models/README.md: `examples/...`).
            const bool exists =
                fs::exists(kSource / p.path) || fs::exists((kSource / doc).parent_path() / p.path);
            EXPECT_TRUE(exists) << p.doc << ":" << p.line << ": `" << p.path
                                << "` does not exist in the tree (moved or renamed? fix the doc)";
        }
    }
    EXPECT_GT(checked, 50u) << "the scan found almost no paths: is the doc parser broken?";
}

TEST(DocsPaths, TheScanSeesPathsAndSkipsPatterns) {
    EXPECT_TRUE(looks_like_source_path("ops/quant/traits.h"));
    EXPECT_TRUE(looks_like_source_path("tests/layering_test.sh"));
    EXPECT_FALSE(looks_like_source_path("ops/<family>.cpp"));
    EXPECT_FALSE(looks_like_source_path("../shared/models/stories260K.gguf"));
    EXPECT_FALSE(looks_like_source_path("op_table.h"));
    EXPECT_EQ(expand_braces("runtime/dtype.{h,cpp}"),
              (std::vector<std::string>{"runtime/dtype.h", "runtime/dtype.cpp"}));
}

// ---- the golden plan dump ------------------------------------------------------------------------

// The fixed model and shape: the shipped model, a batch of 3 tokens, a context of 64 positions.
constexpr const char* kModel = "models/kjv-q8_0.gguf";
constexpr int64_t kBatch = 3;
constexpr int64_t kContext = 64;
// What docs/architecture.md tells a reader to run; the CLI test runs exactly this.
constexpr const char* kDumpCommand = "graphrun -m models/kjv-q8_0.gguf --dump-plan --batch 3 -c 64";
const fs::path kGolden = "tests/docs/golden/kjv-q8_0.plan.txt";
const fs::path kArchitecture = "docs/architecture.md";
constexpr const char* kUpdateHint =
    "If the change to the plan or its dump is intended, regenerate the golden file and the excerpt in "
    "docs/architecture.md with\n  GRAPHRUN_UPDATE_GOLDEN=1 build/graphrun_tests_docs "
    "--gtest_filter='DocsGoldenPlan.*'\n"
    "then read the diff (git diff tests/docs/golden docs/architecture.md) and fix any prose around the "
    "excerpt.";

bool updating_golden() {
    const char* v = std::getenv("GRAPHRUN_UPDATE_GOLDEN");
    return v && std::string(v) == "1";
}

// The dump with everything that depends on the machine rather than the plan made uniform:
// - the SIMD level names: the dump names the path each kernel takes on this CPU ("matmul_q8_0/avx2+gemm",
//   "kernels run at: avx512 (this CPU: avx512; ...)"), so every level name, with any "+variant" after
//   it, becomes <simd>. Normalising (rather than dumping at a forced scalar level) keeps the golden file
//   the real output of the machine that wrote it, which is what the doc shows;
// - the checkout's absolute path (graph files are named by where they were found);
// - runs of spaces (the columns are padded to the label's length, which the level name changes).
std::string normalise(const std::string& dump) {
    static const std::regex simd(R"(\b(scalar|avx2|avx512)(\+[A-Za-z0-9_]+)*\b)");
    static const std::regex spaces(" +");
    std::string text = dump;
    for (size_t at; (at = text.find(kSource.string() + "/")) != std::string::npos;)
        text.erase(at, kSource.string().size() + 1);
    text = std::regex_replace(text, simd, "<simd>");
    std::string out;
    for (std::string line : lines_of(text)) {
        line = std::regex_replace(line, spaces, " ");
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    return out;
}

std::string dump_in_process() {
    const auto model =
        graph::Model::load((kSource / kModel).string(), (kSource / "models/llama.json").string());
    const graph::Plan plan = graph::make_plan(model->graph(), kBatch, kContext);
    std::string text = graph::dump_plan_text(plan, model->graph());
    // Named relative to the checkout, as graphrun prints it run from there.
    for (size_t at; (at = text.find(kSource.string() + "/")) != std::string::npos;)
        text.erase(at, kSource.string().size() + 1);
    return text;
}

struct ToolRun {
    int status;
    std::string out;
};
// graphrun with `args`, run in the checkout (as the docs' commands are), stdout and stderr together.
ToolRun run_graphrun(const std::string& args) {
#ifndef GRAPHRUN_BINARY
    return {-1, "built without GRAPHRUN_BINARY"};
#else
    const std::string command =
        "cd '" + kSource.string() + "' && '" + std::string(GRAPHRUN_BINARY) + "' " + args + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return {-1, "cannot run " + command};
    std::string out;
    std::array<char, 4096> buf{};
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), pipe)) > 0;) out.append(buf.data(), n);
    return {pclose(pipe), out};
#endif
}

// The first line where two texts differ, for the failure message.
std::string first_difference(const std::string& want, const std::string& got) {
    const std::vector<std::string> a = lines_of(want), b = lines_of(got);
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const std::string x = i < a.size() ? a[i] : "(end of file)",
                          y = i < b.size() ? b[i] : "(end of file)";
        if (x != y) return "line " + std::to_string(i + 1) + ":\n  golden: " + x + "\n  now:    " + y;
    }
    return "(no difference)";
}

// A plan excerpt in a doc: the fenced block after the line holding the marker.
constexpr const char* kExcerptMarker = "<!-- plan excerpt: ";
struct Excerpt {
    size_t begin = 0, end = 0;                     // the block's lines (fences excluded) in the doc's lines
    std::vector<std::vector<std::string>> chunks;  // separated by lines "..."
};
Excerpt find_excerpt(const std::vector<std::string>& doc, const std::string& doc_name) {
    Excerpt e;
    size_t i = 0;
    while (i < doc.size() && doc[i].find(kExcerptMarker) == std::string::npos) ++i;
    while (i < doc.size() && doc[i].rfind("```", 0) != 0) ++i;
    if (i >= doc.size())
        throw std::runtime_error(doc_name + " has no fenced block after a line '" + kExcerptMarker + "...'");
    e.begin = ++i;
    e.chunks.emplace_back();
    for (; i < doc.size() && doc[i].rfind("```", 0) != 0; ++i) {
        if (doc[i] == "...")
            e.chunks.emplace_back();
        else
            e.chunks.back().push_back(doc[i]);
    }
    e.end = i;
    return e;
}

// Each chunk of the excerpt (the parts between "..." lines) must be a run of consecutive lines of the
// dump, and the chunks must come in the dump's order. Both sides normalised.
void expect_excerpt_of(const fs::path& doc, const std::string& dump, const std::string& what,
                       const std::string& hint) {
    const Excerpt e = find_excerpt(lines_of(read_text(kSource / doc)), doc.string());
    const std::vector<std::string> lines = lines_of(normalise(dump));
    size_t from = 0, shown = 0;
    for (size_t c = 0; c < e.chunks.size(); ++c) {
        const std::vector<std::string> chunk =
            lines_of(normalise(join_lines(e.chunks[c], 0, e.chunks[c].size())));
        ASSERT_FALSE(chunk.empty()) << doc << ": chunk " << c + 1 << " of the plan excerpt is empty";
        shown += chunk.size();
        const auto at = std::search(lines.begin() + long(from), lines.end(), chunk.begin(), chunk.end());
        ASSERT_TRUE(at != lines.end())
            << doc << ": chunk " << c + 1 << " of the plan excerpt (starting '" << e.chunks[c].front()
            << "') is not a run of lines of " << what << " after the previous chunk.\n"
            << hint;
        from = size_t(at - lines.begin()) + chunk.size();
    }
    EXPECT_GE(shown, 5u) << doc << ": the excerpt should show a plan, not a line or two";
}

// Rewrites the excerpt from a new golden text, keeping its shape: the first chunk is the golden's first
// lines and the last chunk its last lines, as many as the doc shows now. Middle chunks cannot be
// placed without a person: the update refuses them.
void update_excerpt(const std::string& golden) {
    std::vector<std::string> doc = lines_of(read_text(kSource / kArchitecture));
    const Excerpt e = find_excerpt(doc, kArchitecture.string());
    ASSERT_LE(e.chunks.size(), 2u) << "the excerpt has middle chunks; edit docs/architecture.md by hand";
    const std::vector<std::string> g = lines_of(golden);
    std::vector<std::string> block(g.begin(), g.begin() + std::min(e.chunks[0].size(), g.size()));
    if (e.chunks.size() == 2) {
        block.push_back("...");
        block.insert(block.end(), g.end() - std::min(e.chunks[1].size(), g.size()), g.end());
    }
    doc.erase(doc.begin() + e.begin, doc.begin() + e.end);
    doc.insert(doc.begin() + e.begin, block.begin(), block.end());
    write_text(kSource / kArchitecture, join_lines(doc, 0, doc.size()));
}

TEST(DocsGoldenPlan, KjvPlanMatchesTheGoldenFile) {
    const std::string now = dump_in_process();
    if (updating_golden()) {
        write_text(kSource / kGolden, now);
        update_excerpt(now);
        GTEST_SKIP() << "GRAPHRUN_UPDATE_GOLDEN=1: rewrote " << kGolden << " and the excerpt in "
                     << kArchitecture;
    }
    ASSERT_TRUE(fs::exists(kSource / kGolden)) << kGolden << " is missing.\n" << kUpdateHint;
    const std::string golden = read_text(kSource / kGolden);
    EXPECT_TRUE(normalise(golden) ==
                normalise(now))  // not EXPECT_EQ: the message shows the first difference only
        << "the plan of " << kModel << " (batch " << kBatch << ", context " << kContext << ") differs from "
        << kGolden << " (compared with SIMD level names, the checkout path and column padding normalised) at "
        << first_difference(normalise(golden), normalise(now)) << "\n"
        << kUpdateHint;
}

TEST(DocsGoldenPlan, NormalisingHidesOnlyTheMachine) {
    EXPECT_EQ(normalise("1     matmul_q8_0/avx2+gemm  out\n"), normalise("1     matmul_q8_0/avx512     out\n"));
    EXPECT_EQ(normalise("kernels run at: avx2 (this CPU: avx512; GRAPHRUN_SIMD=scalar|avx2 caps it)\n"),
              "kernels run at: <simd> (this CPU: <simd>; GRAPHRUN_SIMD=<simd>|<simd> caps it)\n");
    EXPECT_NE(normalise("1 matmul_q8_0/avx2 out\n"), normalise("1 matmul_q4_0/avx2 out\n"));
    EXPECT_NE(normalise("arena peak 4,032 bytes\n"), normalise("arena peak 4,096 bytes\n"));
}

TEST(DocsGoldenPlan, GraphrunDumpPlanPrintsTheGoldenFile) {
    // The command the doc gives, run from the checkout (the build tree's data folder is the checkout).
    const ToolRun run = run_graphrun(std::string(kDumpCommand).substr(std::string("graphrun ").size()));
    ASSERT_EQ(run.status, 0) << kDumpCommand << "\n" << run.out;
    ASSERT_TRUE(fs::exists(kSource / kGolden)) << kGolden << " is missing.\n" << kUpdateHint;
    const std::string golden = read_text(kSource / kGolden);
    EXPECT_TRUE(normalise(golden) == normalise(run.out))
        << "`" << kDumpCommand << "` no longer prints " << kGolden << ": "
        << first_difference(normalise(golden), normalise(run.out)) << "\n"
        << kUpdateHint;
}

TEST(DocsGoldenPlan, ArchitectureExcerptIsCutFromTheGoldenFile) {
    EXPECT_NE(read_text(kSource / kArchitecture).find(kDumpCommand), std::string::npos)
        << kArchitecture << " should give the command that prints the golden plan: `" << kDumpCommand << "`";
    ASSERT_TRUE(fs::exists(kSource / kGolden)) << kGolden << " is missing.\n" << kUpdateHint;
    expect_excerpt_of(kArchitecture, read_text(kSource / kGolden), kGolden.string(), kUpdateHint);
}

// ---- the worked example of docs/adding-an-op.md ----------------------------------------------------

// "arena peak       1,984 bytes (naive sum of intermediates 10,472 bytes, ..." -> {"1,984", "10,472"}
std::pair<std::string, std::string> arena_and_naive(const std::string& dump) {
    static const std::regex totals(
        R"(arena peak +([0-9,]+) bytes \(naive sum of intermediates ([0-9,]+) bytes)");
    std::smatch m;
    if (!std::regex_search(dump, m, totals)) return {"?", "?"};
    return {m[1], m[2]};
}

TEST(DocsWorkedExample, GegluPlanExcerptAndSizesAreWhatGraphrunPrints) {
    const fs::path doc = "docs/adding-an-op.md";
    const fs::path dir = fs::temp_directory_path() / ("graphrun_docs_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string model = (dir / "teaching.gguf").string();
    const ToolRun made = run_graphrun("make-model '" + model + "'");
    ASSERT_EQ(made.status, 0) << made.out;
    const ToolRun geglu =
        run_graphrun("--graph models/examples/llama-geglu.json -m '" + model + "' --dump-plan --batch 3");
    const ToolRun llama = run_graphrun("--graph models/llama.json -m '" + model + "' --dump-plan --batch 3");
    fs::remove_all(dir);
    ASSERT_EQ(geglu.status, 0) << geglu.out;
    ASSERT_EQ(llama.status, 0) << llama.out;
    const std::string hint = "Run the two commands of section 6 of " + doc.string() +
                             " and paste what they print (the header, the gelu/mul steps with the two "
                             "matmuls before them, the totals).";
    expect_excerpt_of(doc, geglu.out, "the dump of models/examples/llama-geglu.json", hint);
    // "the arena peak stays what it was with `swiglu` (A bytes) ... (from N1 to N2 bytes)"
    const auto [arena_swiglu, naive_swiglu] = arena_and_naive(llama.out);
    const auto [arena_geglu, naive_geglu] = arena_and_naive(geglu.out);
    const std::string text = read_text(kSource / doc);
    EXPECT_EQ(arena_swiglu, arena_geglu) << doc << " says the arena peak stays what it was with swiglu";
    EXPECT_NE(text.find("(" + arena_swiglu + " bytes)"), std::string::npos)
        << doc << " should give the arena peak with swiglu as (" << arena_swiglu << " bytes)";
    EXPECT_NE(text.find("from " + naive_swiglu + " to " + naive_geglu + " bytes"), std::string::npos)
        << doc << " should say the naive sum grew from " << naive_swiglu << " to " << naive_geglu << " bytes";
}

}  // namespace
}  // namespace graphrun
