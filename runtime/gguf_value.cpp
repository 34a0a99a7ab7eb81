// runtime/gguf_value.cpp — GGUF metadata values: type names, constructors, checked accessors.
#include <array>
#include <limits>

#include "runtime/gguf.h"

namespace graphrun {

namespace {

constexpr std::array<const char*, 13> kTypeNames = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                    "bool", "string", "array", "u64", "i64", "f64"};

// "string", or "array of u32" so a mismatch says what the array held.
std::string describe(const GgufValue& v) {
    if (v.type == GgufType::ARRAY) return std::string("array of ") + gguf_type_name(v.elem_type);
    return gguf_type_name(v.type);
}

[[noreturn]] void mismatch(const GgufValue& v, std::string_view what, const char* expected) {
    throw GgufError(std::string(what) + " has type " + describe(v) + ", expected " + expected);
}

GgufValue make_unsigned(GgufType type, uint64_t v) {
    GgufValue value;
    value.type = type;
    value.u = v;
    return value;
}

GgufValue make_signed(GgufType type, int64_t v) {
    GgufValue value;
    value.type = type;
    value.i = v;
    return value;
}

}  // namespace

const char* gguf_type_name(GgufType type) {
    const auto index = static_cast<uint32_t>(type);
    return index < kTypeNames.size() ? kTypeNames[index] : "unknown";
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufType::U8:
        case GgufType::I8:
        case GgufType::U16:
        case GgufType::I16:
        case GgufType::U32:
        case GgufType::I32:
        case GgufType::U64:
        case GgufType::I64:
            return true;
        default:
            return false;
    }
}

int64_t GgufValue::as_int(std::string_view what) const {
    switch (type) {
        case GgufType::I8:
        case GgufType::I16:
        case GgufType::I32:
        case GgufType::I64:
            return i;
        case GgufType::U8:
        case GgufType::U16:
        case GgufType::U32:
        case GgufType::U64:
        case GgufType::BOOL:
            if (u > uint64_t(std::numeric_limits<int64_t>::max()))
                throw GgufError(std::string(what) + " = " + std::to_string(u) + " does not fit in an int64");
            return int64_t(u);
        default:
            mismatch(*this, what, "an integer");
    }
}

double GgufValue::as_float(std::string_view what) const {
    if (is_float()) return f;
    if (type == GgufType::U8 || type == GgufType::U16 || type == GgufType::U32 || type == GgufType::U64)
        return double(u);
    if (is_integer()) return double(i);
    mismatch(*this, what, "a number");
}

const std::string& GgufValue::as_string(std::string_view what) const {
    if (type != GgufType::STRING) mismatch(*this, what, "a string");
    return s;
}

const std::vector<GgufValue>& GgufValue::as_array(std::string_view what) const {
    if (type != GgufType::ARRAY) mismatch(*this, what, "an array");
    return array;
}

GgufValue GgufValue::make_u8(uint8_t v) {
    return make_unsigned(GgufType::U8, v);
}
GgufValue GgufValue::make_u16(uint16_t v) {
    return make_unsigned(GgufType::U16, v);
}
GgufValue GgufValue::make_u32(uint32_t v) {
    return make_unsigned(GgufType::U32, v);
}
GgufValue GgufValue::make_u64(uint64_t v) {
    return make_unsigned(GgufType::U64, v);
}
GgufValue GgufValue::make_bool(bool v) {
    return make_unsigned(GgufType::BOOL, v ? 1 : 0);
}
GgufValue GgufValue::make_i8(int8_t v) {
    return make_signed(GgufType::I8, v);
}
GgufValue GgufValue::make_i16(int16_t v) {
    return make_signed(GgufType::I16, v);
}
GgufValue GgufValue::make_i32(int32_t v) {
    return make_signed(GgufType::I32, v);
}
GgufValue GgufValue::make_i64(int64_t v) {
    return make_signed(GgufType::I64, v);
}

GgufValue GgufValue::make_f32(float v) {
    GgufValue value;
    value.type = GgufType::F32;
    value.f = v;
    return value;
}

GgufValue GgufValue::make_f64(double v) {
    GgufValue value;
    value.type = GgufType::F64;
    value.f = v;
    return value;
}

GgufValue GgufValue::make_string(std::string v) {
    GgufValue value;
    value.type = GgufType::STRING;
    value.s = std::move(v);
    return value;
}

GgufValue GgufValue::make_array(GgufType elem_type, std::vector<GgufValue> elems) {
    GgufValue value;
    value.type = GgufType::ARRAY;
    value.elem_type = elem_type;
    value.array = std::move(elems);
    return value;
}

int64_t GgufTensor::n_elements() const {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;  // the reader and writer have checked this cannot overflow
    return n;
}

}  // namespace graphrun
