// runtime/text/tokenizer_bpe.cpp — byte-level BPE ("gpt2" vocabularies): merges, following
// llama.cpp's implementation so the ids match it.
//
// 1. The pre-tokenizer splits the text into words (tokenizer_pretokenize.cpp); merges never cross words.
// 2. Each word's bytes are mapped to GPT-2's printable alphabet, one symbol per mapped character.
// 3. With ignore_merges (Llama 3), a word that is a token as a whole is that token, merges or not.
// 4. Adjacent pairs listed in tokenizer.ggml.merges merge, lowest rank first, ties to the left.
// 5. Each final symbol is emitted as its token.
#include <queue>

#include "runtime/text/tokenizer_internal.h"

namespace graphrun::tokenizer_detail {

namespace {

struct Bigram {
    int left, right;
    std::string text;  // the merged text, to recognise stale entries
    int32_t rank;
};

struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

struct Symbol {
    int prev, next;
    size_t start, n;
};

void bpe_encode_word(const Vocab& vocab, const std::string& word, std::vector<int32_t>& out) {
    if (vocab.ignore_merges) {
        const auto whole = vocab.id_of.find(word);
        if (whole != vocab.id_of.end()) {
            out.push_back(whole->second);
            return;
        }
    }
    std::vector<Symbol> symbols;
    for (size_t offs = 0; offs < word.size();) {
        const size_t n = std::min(utf8_len_from_lead(uint8_t(word[offs])), word.size() - offs);
        const int index = int(symbols.size());
        symbols.push_back({index - 1, offs + n == word.size() ? -1 : index + 1, offs, n});
        offs += n;
    }
    const auto text_of = [&](int i) { return word.substr(symbols[i].start, symbols[i].n); };

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    const auto add_bigram = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const auto rank = vocab.merge_rank.find({text_of(left), text_of(right)});
        if (rank == vocab.merge_rank.end()) return;
        queue.push({left, right, text_of(left) + text_of(right), rank->second});
    };
    for (int i = 1; i < int(symbols.size()); ++i) add_bigram(i - 1, i);

    while (!queue.empty()) {
        const Bigram bigram = queue.top();
        queue.pop();
        Symbol& left = symbols[bigram.left];
        Symbol& right = symbols[bigram.right];
        if (left.n == 0 || right.n == 0 || text_of(bigram.left) + text_of(bigram.right) != bigram.text)
            continue;
        left.n += right.n;
        right.n = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = bigram.left;
        add_bigram(left.prev, bigram.left);
        add_bigram(bigram.left, left.next);
    }

    // Like llama.cpp, a symbol is looked up by its text whatever the token's type.
    for (int i = 0; !symbols.empty() && i != -1; i = symbols[i].next) {
        const std::string piece = text_of(i);
        const auto id = vocab.id_of.find(piece);
        if (id != vocab.id_of.end()) {
            out.push_back(id->second);
            continue;
        }
        // A piece the merges built but the vocabulary lacks (an inconsistent vocabulary): llama.cpp
        // looks each of its bytes up as a one-byte token and drops the bytes that have none.
        for (const char c : piece) {
            const auto byte_id = vocab.id_of.find(std::string_view(&c, 1));
            if (byte_id != vocab.id_of.end()) out.push_back(byte_id->second);
        }
    }
}

}  // namespace

void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    for (const std::string& word : bpe_pretokenize(text, vocab.pre)) {
        std::string mapped;
        for (const char c : word) append_utf8(mapped, gpt2_byte_to_cpt(uint8_t(c)));
        bpe_encode_word(vocab, mapped, out);
    }
}

}  // namespace graphrun::tokenizer_detail
