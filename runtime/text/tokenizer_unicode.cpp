// runtime/text/tokenizer_unicode.cpp — UTF-8, Unicode categories (ICU) and GPT-2's byte alphabet.
#include <unicode/uchar.h>

#include <array>

#include "runtime/text/tokenizer_internal.h"

namespace graphrun::tokenizer_detail {

std::vector<uint32_t> decode_utf8_lossy(std::string_view text) {
    std::vector<uint32_t> cpts;
    cpts.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const int n = utf8_sequence_length(text, i);
        if (n <= 0) {  // ill-formed here, or cut off by the end of the text
            cpts.push_back(0xFFFD);
            ++i;
            continue;
        }
        const auto cont = [&](int k) { return uint32_t(uint8_t(text[i + size_t(k)]) & 0x3F); };
        const uint32_t lead = uint8_t(text[i]);
        switch (n) {
            case 1:
                cpts.push_back(lead);
                break;
            case 2:
                cpts.push_back((lead & 0x1F) << 6 | cont(1));
                break;
            case 3:
                cpts.push_back((lead & 0x0F) << 12 | cont(1) << 6 | cont(2));
                break;
            default:
                cpts.push_back((lead & 0x07) << 18 | cont(1) << 12 | cont(2) << 6 | cont(3));
                break;
        }
        i += size_t(n);
    }
    return cpts;
}

void append_utf8(std::string& out, uint32_t cpt) {
    if (cpt <= 0x7F) {
        out += char(cpt);
    } else if (cpt <= 0x7FF) {
        out += char(0xC0 | (cpt >> 6));
        out += char(0x80 | (cpt & 0x3F));
    } else if (cpt <= 0xFFFF) {
        out += char(0xE0 | (cpt >> 12));
        out += char(0x80 | ((cpt >> 6) & 0x3F));
        out += char(0x80 | (cpt & 0x3F));
    } else {
        out += char(0xF0 | (cpt >> 18));
        out += char(0x80 | ((cpt >> 12) & 0x3F));
        out += char(0x80 | ((cpt >> 6) & 0x3F));
        out += char(0x80 | (cpt & 0x3F));
    }
}

bool is_letter(uint32_t cpt) {
    switch (u_charType(UChar32(cpt))) {
        case U_UPPERCASE_LETTER:
        case U_LOWERCASE_LETTER:
        case U_TITLECASE_LETTER:
        case U_MODIFIER_LETTER:
        case U_OTHER_LETTER:
            return true;
        default:
            return false;
    }
}

bool is_number(uint32_t cpt) {
    switch (u_charType(UChar32(cpt))) {
        case U_DECIMAL_DIGIT_NUMBER:
        case U_LETTER_NUMBER:
        case U_OTHER_NUMBER:
            return true;
        default:
            return false;
    }
}

bool is_punctuation(uint32_t cpt) {
    switch (u_charType(UChar32(cpt))) {
        case U_CONNECTOR_PUNCTUATION:
        case U_DASH_PUNCTUATION:
        case U_START_PUNCTUATION:
        case U_END_PUNCTUATION:
        case U_INITIAL_PUNCTUATION:
        case U_FINAL_PUNCTUATION:
        case U_OTHER_PUNCTUATION:
            return true;
        default:
            return false;
    }
}

bool is_whitespace(uint32_t cpt) {
    return u_isUWhiteSpace(UChar32(cpt));
}

namespace {

struct Gpt2ByteMap {
    std::array<uint32_t, 256> to_cpt{};
    std::array<int16_t, 324> to_byte{};  // code points 0..323 cover the whole map

    Gpt2ByteMap() {
        to_byte.fill(-1);
        const auto printable = [](int b) {
            return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        };
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            to_cpt[b] = printable(b) ? uint32_t(b) : next++;
            to_byte[to_cpt[b]] = int16_t(b);
        }
    }
};

const Gpt2ByteMap& gpt2_map() {
    static const Gpt2ByteMap map;
    return map;
}

}  // namespace

uint32_t gpt2_byte_to_cpt(uint8_t byte) {
    return gpt2_map().to_cpt[byte];
}

int gpt2_cpt_to_byte(uint32_t cpt) {
    const auto& map = gpt2_map();
    return cpt < map.to_byte.size() ? map.to_byte[cpt] : -1;
}

int utf8_sequence_length(std::string_view bytes, size_t pos) {
    const uint8_t b = uint8_t(bytes[pos]);
    if (b < 0x80) return 1;
    int n = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0) lo = 0xA0;  // no overlongs
        if (b == 0xED) hi = 0x9F;  // no surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0) lo = 0x90;  // no overlongs
        if (b == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
    } else {
        return -1;
    }
    for (int k = 1; k < n; ++k) {
        if (pos + k >= bytes.size()) return 0;
        const uint8_t c = uint8_t(bytes[pos + k]);
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return -1;
    }
    return n;
}

}  // namespace graphrun::tokenizer_detail
