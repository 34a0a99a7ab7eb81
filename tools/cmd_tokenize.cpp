// tools/cmd_tokenize.cpp — `graphrun tokenize -m MODEL.gguf (-p TEXT | -f FILE | --stdin)`: the ids a
// model's tokenizer gives, on one line as llama.cpp's `llama-tokenize --ids` prints them:
// [1, 403, 407, 261, 378]. The text is taken byte for byte (a file's final newline included).
// BOS is added when the model asks for it (tokenizer.ggml.add_bos_token) unless --no-bos.
// --show-pieces adds one line per token: its id and the text it stands for.
#include <cstdio>
#include <memory>
#include <string>

#include "graph/limits.h"
#include "runtime/bounded_read.h"
#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

struct TokenizeOptions {
    std::string model;
    std::string prompt, file;
    bool prompt_given = false;  // -p was given (possibly as "")
    bool from_stdin = false;
    bool no_bos = false;
    bool show_pieces = false;
    bool parse_special = false;
};

// The piece quoted on one line: control bytes escaped, so a newline token reads '\n'.
std::string quoted_piece(const std::string& piece) {
    std::string out = "'";
    for (const char ch : piece) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\'' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += ch;  // UTF-8 passes through; a lone byte of a split character stays a raw byte
        }
    }
    return out + "'";
}

// The text of -f FILE or --stdin, read as prompt files are (runtime/bounded_read.h): a FIFO never
// hangs in open(), directories and block devices are refused, at most kMaxPromptFileBytes are read.
// `prefix` goes before the reader's "<path>: <reason>": "-f " or "--stdin: ".
std::string read_text(const std::string& prefix, const std::string& path) {
    try {
        return read_bounded_file(path, graph::kMaxPromptFileBytes, "text to tokenize");
    } catch (const FileReadError& e) {
        throw std::runtime_error(prefix + e.what());
    }
}

void run_tokenize(const TokenizeOptions& opt) {
    const int sources = int(opt.prompt_given) + int(!opt.file.empty()) + int(opt.from_stdin);
    if (sources != 1) throw std::runtime_error("tokenize: give the text once: -p TEXT, -f FILE or --stdin");
    const std::string text = !opt.file.empty() ? read_text("-f ", opt.file)
                             : opt.from_stdin  ? read_text("--stdin: ", "/dev/stdin")
                                               : opt.prompt;
    const auto file = GgufFile::open(opt.model);
    const Tokenizer tokenizer = Tokenizer::from_gguf(*file);
    const std::vector<int32_t> ids =
        tokenizer.encode(text, tokenizer.add_bos() && !opt.no_bos, opt.parse_special);

    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) line += ", ";
        line += std::to_string(ids[i]);
    }
    std::printf("%s]\n", line.c_str());
    if (opt.show_pieces) {
        for (const int32_t id : ids)
            std::printf("%6d -> %s\n", id, quoted_piece(tokenizer.token_to_piece(id, true)).c_str());
    }
}

}  // namespace

void register_tokenize(CLI::App& app) {
    auto opt = std::make_shared<TokenizeOptions>();
    CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text under a model's tokenizer");
    cmd->add_option("-m,--model", opt->model, "The .gguf model (or vocabulary-only) file")->required();
    cmd->add_option("-p,--prompt", opt->prompt, "The text to tokenize");
    cmd->add_option("-f,--file", opt->file, "Read the text from a file (at most 16 MiB)");
    cmd->add_flag("--stdin", opt->from_stdin, "Read the text from standard input (at most 16 MiB)");
    cmd->add_flag("--no-bos", opt->no_bos, "Do not add BOS even if the model asks for it");
    cmd->add_flag("--show-pieces", opt->show_pieces, "Also print each token's id and text, one per line");
    cmd->add_flag("--parse-special", opt->parse_special,
                  "Turn control-token texts such as <s> into their ids");
    cmd->callback([opt, cmd] {
        TokenizeOptions o = *opt;
        o.prompt_given = cmd->count("--prompt") > 0;
        run_tokenize(o);
    });
}

}  // namespace graphrun::tools
