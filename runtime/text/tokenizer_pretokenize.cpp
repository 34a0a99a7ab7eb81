// runtime/text/tokenizer_pretokenize.cpp — the BPE pre-tokenizers: a text split into words before
// merging (tokenizer.ggml.pre), written as llama.cpp's hand-made matchers do them so the words,
// and so the ids, match llama.cpp's.
//
// Each matcher walks code points, trying the alternatives of its regex in order at every position;
// a position that no alternative matches becomes a one-character word. Character classes are
// Unicode general categories (ICU), \s is the White_Space property.
#include "runtime/text/tokenizer_internal.h"

namespace graphrun::tokenizer_detail {

namespace {

// A word as a range of code points [begin, end) of the whole text.
struct Span {
    size_t begin, end;
};

// Tests on the code point at p, all false outside [begin, end) so that runs stop at a span's edge.
class SpanView {
  public:
    SpanView(const std::vector<uint32_t>& cpts, Span span) : cpts_(cpts), span_(span) {}
    bool in(size_t p) const { return p >= span_.begin && p < span_.end; }
    uint32_t at(size_t p) const { return in(p) ? cpts_[p] : kNone; }
    bool letter(size_t p) const { return in(p) && is_letter(cpts_[p]); }
    bool number(size_t p) const { return in(p) && is_number(cpts_[p]); }
    bool space(size_t p) const { return in(p) && is_whitespace(cpts_[p]); }
    bool newline(size_t p) const { return at(p) == '\r' || at(p) == '\n'; }
    // [^\s\p{L}\p{N}]: anything else
    bool other(size_t p) const { return in(p) && !space(p) && !letter(p) && !number(p); }

    static constexpr uint32_t kNone = 0xFFFFFFFF;

  private:
    const std::vector<uint32_t>& cpts_;
    Span span_;
};

// The length of a contraction at p ('s 't 'm 'd 're 've 'll), 0 if there is none. Llama 3 and Qwen2
// match case-insensitively ((?i:...)); llama.cpp lowers with its own table, in which only ASCII
// capitals lower to these letters, so ASCII folding is the same.
size_t contraction_length(const SpanView& v, size_t p, bool any_case) {
    if (v.at(p) != '\'') return 0;
    const auto lower = [&](size_t q) {
        const uint32_t c = v.at(q);
        return any_case && c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
    };
    const uint32_t c1 = lower(p + 1);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    const uint32_t c2 = lower(p + 2);
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
    return 0;
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
void split_gpt2(const std::vector<uint32_t>& cpts, Span span, std::vector<Span>& words) {
    const SpanView v(cpts, span);
    size_t pos = span.begin;
    const auto emit = [&](size_t stop) {
        words.push_back({pos, stop});
        pos = stop;
    };
    while (pos < span.end) {
        if (const size_t n = contraction_length(v, pos, /*any_case=*/false)) {
            emit(pos + n);
            continue;
        }
        // An optional single space, then a run of one class.
        const size_t first = v.at(pos) == ' ' ? pos + 1 : pos;
        if (v.letter(first) || v.number(first) || v.other(first)) {
            size_t stop = first;
            if (v.letter(first)) {
                while (v.letter(stop)) ++stop;
            } else if (v.number(first)) {
                while (v.number(stop)) ++stop;
            } else {
                while (v.other(stop)) ++stop;
            }
            emit(stop);
            continue;
        }
        size_t n_space = 0;
        while (v.space(pos + n_space)) ++n_space;
        if (n_space > 1 && v.in(pos + n_space)) {
            emit(pos + n_space - 1);  // \s+(?!\S): leave the last space to prefix the next word
        } else if (n_space > 0) {
            emit(pos + n_space);
        } else {
            emit(pos + 1);
        }
    }
}

// Llama 3 (max_digits 3) and Qwen2 (max_digits 1):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,max_digits}
//   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
void split_llama3(const std::vector<uint32_t>& cpts, Span span, size_t max_digits, std::vector<Span>& words) {
    const SpanView v(cpts, span);
    size_t pos = span.begin;
    const auto emit = [&](size_t stop) {
        words.push_back({pos, stop});
        pos = stop;
    };
    while (pos < span.end) {
        if (const size_t n = contraction_length(v, pos, /*any_case=*/true)) {
            emit(pos + n);
            continue;
        }
        // One character that is no newline, letter or number may lead a run of letters:
        // " word", "(word", "\tword".
        if (!v.newline(pos) && !v.number(pos) && (v.letter(pos) || v.letter(pos + 1))) {
            size_t stop = pos + 1;
            while (v.letter(stop)) ++stop;
            emit(stop);
            continue;
        }
        if (v.number(pos)) {  // digits in groups of max_digits from the left: 12345 -> 123 45
            size_t stop = pos;
            while (v.number(stop) && stop - pos < max_digits) ++stop;
            emit(stop);
            continue;
        }
        // An optional space, a run of other characters, then any newlines.
        const size_t first = v.at(pos) == ' ' ? pos + 1 : pos;
        if (v.other(first) || (first > pos && !v.in(first))) {
            size_t stop = first;
            while (v.other(stop)) ++stop;
            while (v.newline(stop)) ++stop;
            emit(stop);
            continue;
        }
        // Whitespace: through its last newline if it has one, else as GPT-2 splits it.
        size_t n_space = 0, after_newline = 0;
        for (; v.space(pos + n_space); ++n_space) {
            if (v.newline(pos + n_space)) after_newline = pos + n_space + 1;
        }
        if (after_newline > 0) {
            emit(after_newline);
        } else if (n_space > 1 && v.in(pos + n_space)) {
            emit(pos + n_space - 1);
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

// \p{N} as llama.cpp's collapsed regexes see it: whitespace is looked at first.
bool number_not_space(uint32_t c) {
    return is_number(c) && !is_whitespace(c);
}

std::vector<Span> gpt2_words(const std::vector<uint32_t>& cpts, const std::vector<Span>& spans) {
    std::vector<Span> words;
    for (const Span span : spans) split_gpt2(cpts, span, words);
    return words;
}

}  // namespace

std::vector<std::string> bpe_pretokenize(std::string_view text, PreTokenizer pre) {
    const std::vector<uint32_t> cpts = decode_utf8_lossy(text);
    std::vector<Span> words;
    if (!cpts.empty()) words.push_back({0, cpts.size()});

    switch (pre) {
        case PreTokenizer::Default:
            // Punctuation runs, then GPT-2, then number runs, then groups of three ASCII digits.
            words = split_runs(cpts, words, default_punct);
            words = gpt2_words(cpts, words);
            words = split_runs(cpts, words, number_not_space);
            words = split_runs(cpts, words, ascii_digit, 3);
            break;
        case PreTokenizer::Gpt2:
            words = gpt2_words(cpts, words);
            break;
        case PreTokenizer::Smollm:
            // Every number character on its own, then GPT-2 on the rest.
            words = gpt2_words(cpts, split_runs(cpts, words, number_not_space, 1));
            break;
        case PreTokenizer::Llama3:
        case PreTokenizer::Qwen2: {
            std::vector<Span> spans;
            spans.swap(words);
            for (const Span span : spans)
                split_llama3(cpts, span, pre == PreTokenizer::Llama3 ? 3 : 1, words);
            break;
        }
    }

    std::vector<std::string> out;
    out.reserve(words.size());
    for (const Span w : words) {
        std::string& s = out.emplace_back();
        for (size_t i = w.begin; i < w.end; ++i) append_utf8(s, cpts[i]);
    }
    return out;
}

}  // namespace graphrun::tokenizer_detail
