// runtime/text/tokenizer_bpe.cpp — byte-level BPE ("gpt2" vocabularies): pre-tokenizer and merges,
// following llama.cpp's implementation so the ids match it.
//
// 1. The pre-tokenizer splits the text into words (see PreTokenizer); merges never cross words.
// 2. Each word's bytes are mapped to GPT-2's printable alphabet, one symbol per mapped character.
// 3. Adjacent pairs listed in tokenizer.ggml.merges merge, lowest rank first, ties to the left.
// 4. Each final symbol is emitted as its token.
#include <queue>

#include "runtime/text/tokenizer_internal.h"

namespace graphrun::tokenizer_detail {

namespace {

// A word as a range of code points [begin, end) of the whole text.
struct Span {
    size_t begin, end;
};

// The GPT-2 regex on one span, written out as llama.cpp's hand-made matcher does it:
//   's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
void split_gpt2(const std::vector<uint32_t>& cpts, Span span, std::vector<Span>& words) {
    const size_t end = span.end;
    // Outside the span every test is false, so runs stop at its edge.
    const auto in = [&](size_t p) { return p < end; };
    const auto letter = [&](size_t p) { return in(p) && is_letter(cpts[p]); };
    const auto number = [&](size_t p) { return in(p) && is_number(cpts[p]); };
    const auto space = [&](size_t p) { return in(p) && is_whitespace(cpts[p]); };
    const auto other = [&](size_t p) {
        return in(p) && !is_whitespace(cpts[p]) && !is_letter(cpts[p]) && !is_number(cpts[p]);
    };

    size_t pos = span.begin;
    const auto emit = [&](size_t stop) {
        words.push_back({pos, stop});
        pos = stop;
    };
    while (pos < end) {
        const uint32_t c = cpts[pos];
        if (c == '\'' && in(pos + 1)) {
            const uint32_t n1 = cpts[pos + 1];
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                emit(pos + 2);
                continue;
            }
            if (in(pos + 2)) {
                const uint32_t n2 = cpts[pos + 2];
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    emit(pos + 3);
                    continue;
                }
            }
        }
        // An optional single space, then a run of one class.
        const size_t first = c == ' ' ? pos + 1 : pos;
        if (letter(first) || number(first) || other(first)) {
            size_t stop = first;
            if (letter(first)) {
                while (letter(stop)) ++stop;
            } else if (number(first)) {
                while (number(stop)) ++stop;
            } else {
                while (other(stop)) ++stop;
            }
            emit(stop);
            continue;
        }
        size_t n_space = 0;
        while (space(pos + n_space)) ++n_space;
        if (n_space > 1 && in(pos + n_space)) {
            emit(pos + n_space - 1);  // \s+(?!\S): leave the last space to prefix the next word
        } else if (n_space > 0) {
            emit(pos + n_space);
        } else {
            emit(pos + 1);
        }
    }
}

// Splits every span by a class of characters: each maximal run of `in_class` code points
// (or, with run_length > 0, each group of exactly that many) becomes a word, and so does each gap
// between them — like iterating a std::regex over the span and keeping the unmatched text.
template <typename InClass>
std::vector<Span> split_runs(const std::vector<uint32_t>& cpts, const std::vector<Span>& spans,
                             InClass in_class, size_t run_length = 0) {
    std::vector<Span> words;
    for (const Span span : spans) {
        size_t gap = span.begin, pos = span.begin;
        while (pos < span.end) {
            size_t stop = pos;
            while (stop < span.end && in_class(cpts[stop]) && (run_length == 0 || stop - pos < run_length))
                ++stop;
            const bool match = stop > pos && (run_length == 0 || stop - pos == run_length);
            if (!match) {
                ++pos;
                continue;
            }
            if (pos > gap) words.push_back({gap, pos});
            words.push_back({pos, stop});
            gap = pos = stop;
        }
        if (span.end > gap) words.push_back({gap, span.end});
    }
    return words;
}

// [\p{P}\$\+<=>\^~\|]: llama.cpp's collapsed form of this class takes ASCII punctuation and the
// listed symbols (every printable ASCII non-alphanumeric except '`'), and non-ASCII \p{P}.
bool default_punct(uint32_t c) {
    if (c < 0x80) {
        static constexpr std::string_view kAscii = "!\"#$%&'()*+,-./:;<=>?@[\\]^_{|}~";
        return kAscii.find(char(c)) != std::string_view::npos;
    }
    return is_punctuation(c) && !is_whitespace(c);
}

bool ascii_digit(uint32_t c) {
    return c >= '0' && c <= '9';
}

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

    for (int i = 0; !symbols.empty() && i != -1; i = symbols[i].next) {
        const std::string piece = text_of(i);
        const int32_t id = vocab.mergeable(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // A piece the merges built but the vocabulary lacks (an inconsistent vocabulary): llama.cpp
        // looks each of its bytes up as a one-byte token and drops the bytes that have none.
        for (const char c : piece) {
            const int32_t byte_id = vocab.mergeable(std::string_view(&c, 1));
            if (byte_id >= 0) out.push_back(byte_id);
        }
    }
}

}  // namespace

std::vector<std::string> bpe_pretokenize(std::string_view text, PreTokenizer pre) {
    const std::vector<uint32_t> cpts = decode_utf8_lossy(text);
    std::vector<Span> spans;
    if (!cpts.empty()) spans.push_back({0, cpts.size()});

    if (pre == PreTokenizer::Default) spans = split_runs(cpts, spans, default_punct);
    std::vector<Span> words;
    for (const Span span : spans) split_gpt2(cpts, span, words);
    if (pre == PreTokenizer::Default) {
        words = split_runs(cpts, words, [](uint32_t c) { return is_number(c) && !is_whitespace(c); });
        words = split_runs(cpts, words, ascii_digit, 3);
    }

    std::vector<std::string> out;
    out.reserve(words.size());
    for (const Span w : words) {
        std::string& s = out.emplace_back();
        for (size_t i = w.begin; i < w.end; ++i) append_utf8(s, cpts[i]);
    }
    return out;
}

void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    for (const std::string& word : bpe_pretokenize(text, vocab.pre)) {
        std::string mapped;
        for (const char c : word) append_utf8(mapped, gpt2_byte_to_cpt(uint8_t(c)));
        bpe_encode_word(vocab, mapped, out);
    }
}

}  // namespace graphrun::tokenizer_detail
