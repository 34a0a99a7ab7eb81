// runtime/text/tokenizer_spm.cpp — SentencePiece BPE encoding ("llama" vocabularies), as llama.cpp does it.
//
// The text (spaces already escaped as "▁") starts as one symbol per UTF-8 character. Every adjacent
// pair whose concatenation is a vocabulary piece goes into a queue ordered by that piece's score,
// highest first, ties to the leftmost pair. Popping a pair merges it (unless one side has changed
// since, which makes the entry stale) and queues the new symbol's pairs with its neighbours. When
// nothing more merges, each symbol is emitted as its piece; a symbol that is no emittable piece
// is split back into the two halves it was merged from, down to single characters, and characters
// no piece covers become byte tokens <0xNN>.
#include <queue>
#include <unordered_map>

#include "runtime/text/tokenizer_internal.h"

namespace graphrun::tokenizer_detail {

namespace {

struct SpmSymbol {
    int prev, next;  // neighbours in the current segmentation, -1 at the ends
    size_t start;    // bytes [start, start + n) of the text; n == 0 once merged into its left neighbour
    size_t n;
};

struct SpmBigram {
    int left, right;  // symbol indices
    float score;
    size_t size;  // bytes of the merged piece, to recognise stale entries
};

struct SpmBigramOrder {
    // std::priority_queue pops the largest: higher score first, then the smaller left index.
    bool operator()(const SpmBigram& a, const SpmBigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

class SpmSession {
  public:
    SpmSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

    void encode(std::vector<int32_t>& out) {
        for (size_t offs = 0; offs < text_.size();) {
            const size_t n = std::min(utf8_len_from_lead(uint8_t(text_[offs])), text_.size() - offs);
            const int index = int(symbols_.size());
            symbols_.push_back({index - 1, offs + n == text_.size() ? -1 : index + 1, offs, n});
            offs += n;
        }
        for (int i = 1; i < int(symbols_.size()); ++i) try_add_bigram(i - 1, i);

        while (!queue_.empty()) {
            const SpmBigram bigram = queue_.top();
            queue_.pop();
            SpmSymbol& left = symbols_[bigram.left];
            SpmSymbol& right = symbols_[bigram.right];
            if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;  // stale

            left.n += right.n;
            right.n = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[right.next].prev = bigram.left;
            try_add_bigram(left.prev, bigram.left);
            try_add_bigram(bigram.left, left.next);
        }

        if (symbols_.empty()) return;
        for (int i = 0; i != -1; i = symbols_[i].next) resegment(piece(symbols_[i]), out);
    }

  private:
    std::string_view piece(const SpmSymbol& s) const { return text_.substr(s.start, s.n); }

    void try_add_bigram(int left, int right) {
        if (left < 0 || right < 0) return;
        const std::string_view merged =
            text_.substr(symbols_[left].start, symbols_[left].n + symbols_[right].n);
        const int32_t id = vocab_.mergeable(merged);
        if (id < 0) return;
        queue_.push({left, right, vocab_.score[id], merged.size()});
        // The halves as they are now, for resegment: a later pair with the same text overwrites
        // this one, as in SentencePiece (both splits give the same text).
        rev_merge_[merged] = {piece(symbols_[left]), piece(symbols_[right])};
    }

    void resegment(std::string_view text, std::vector<int32_t>& out) const {
        const int32_t id = vocab_.mergeable(text);
        // Unused pieces may be stepping stones of a merge but are never emitted (SentencePiece).
        if (id >= 0 && vocab_.type[id] != TokenType::Unused) {
            out.push_back(id);
            return;
        }
        const auto halves = rev_merge_.find(text);
        if (halves != rev_merge_.end()) {
            resegment(halves->second.first, out);
            resegment(halves->second.second, out);
            return;
        }
        for (const char c : text) out.push_back(vocab_.byte_fallback(uint8_t(c)));
    }

    const Vocab& vocab_;
    std::string_view text_;
    std::vector<SpmSymbol> symbols_;
    std::priority_queue<SpmBigram, std::vector<SpmBigram>, SpmBigramOrder> queue_;
    std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> rev_merge_;
};

}  // namespace

void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    SpmSession(vocab, text).encode(out);
}

}  // namespace graphrun::tokenizer_detail
