// runtime/text/vocab_match.cpp — the first difference between two vocabularies, in words.
#include "runtime/text/vocab_match.h"

#include <algorithm>
#include <span>
#include <string>

#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"

namespace graphrun {

namespace {

std::string id_or_none(int32_t id) {
    return id < 0 ? "none" : std::to_string(id);
}

std::string id_list(std::span<const int32_t> ids) {
    std::string out;
    for (int32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
    return out.empty() ? "none" : out;
}

// The first difference of `here` from `there`, "" when there is none.
std::string first_difference(const GgufFile& there_file, const Tokenizer& there, const GgufFile& here_file,
                             const Tokenizer& here) {
    const std::string there_kind = there_file.find_string("tokenizer.ggml.model").value_or("?");
    const std::string here_kind = here_file.find_string("tokenizer.ggml.model").value_or("?");
    if (there_kind != here_kind) return "a " + there_kind + " tokenizer there and " + here_kind + " here";
    if (there.n_vocab() != here.n_vocab())
        return std::to_string(there.n_vocab()) + " tokens there and " + std::to_string(here.n_vocab()) +
               " here";
    for (int32_t id = 0; id < there.n_vocab(); ++id)
        if (there.token_text(id) != here.token_text(id))
            return "token " + std::to_string(id) + " is '" + there.token_text(id) + "' there and '" +
                   here.token_text(id) + "' here";
    if (there.bos() != here.bos())
        return "BOS is " + id_or_none(there.bos()) + " there and " + id_or_none(here.bos()) + " here";
    if (there.eos() != here.eos())
        return "EOS is " + id_or_none(there.eos()) + " there and " + id_or_none(here.eos()) + " here";
    const auto a = there.end_of_generation(), b = here.end_of_generation();
    if (!std::equal(a.begin(), a.end(), b.begin(), b.end()))
        return "the end-of-generation tokens are " + id_list(a) + " there and " + id_list(b) + " here";
    return "";
}

}  // namespace

void require_same_vocabulary(const GgufFile& reference, const GgufFile& file) {
    const std::string difference =
        first_difference(reference, Tokenizer::from_gguf(reference), file, Tokenizer::from_gguf(file));
    if (!difference.empty())
        throw VocabMismatch(file.path() + ": its vocabulary is not the one of " + reference.path() + ": " +
                            difference);
}

}  // namespace graphrun
