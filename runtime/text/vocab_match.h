// runtime/text/vocab_match.h — whether two GGUF files carry the same vocabulary, as speculative decoding
// with a draft model needs: the draft's token ids are fed to the target as they are.
//
//   require_same_vocabulary(*target->file(), *draft->file());   // throws VocabMismatch naming both files
//
// The same vocabulary means: the same tokenizer kind (tokenizer.ggml.model), the same number of tokens,
// the same text for every id, and the same BOS, EOS and end-of-generation ids.
#pragma once

#include <stdexcept>

namespace graphrun {

class GgufFile;

class VocabMismatch : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Throws VocabMismatch "<file>: its vocabulary is not the one of <reference>: <the first difference>",
// "there" being the reference and "here" the file: "2048 tokens there and 320 here", "token 17 is 'x' there
// and 'y' here", "EOS is 2 there and 5 here". A file whose vocabulary cannot be loaded throws TokenizerError
// from Tokenizer::from_gguf.
void require_same_vocabulary(const GgufFile& reference, const GgufFile& file);

}  // namespace graphrun
